#!/usr/bin/env bats
# Stateful models: Triton's sequence batcher (SPEC.md section 12).  The
# models of sequence_repo.py add each input to the state they carry, so
# every sequence's OUTPUT is the running sum of its own inputs, and they
# echo their control inputs as CTRL = [START, END, READY, CORRID].
# (sequences.bats is about ONNX sequence *tensors*, another thing.)

load helpers

make_shared_repo() {
	REPO=$(mktemp -d "${BATS_RUN_TMPDIR:-/tmp}/repo.XXXXXX")
	"$PY" "$TOP/tests/e2e/sequence_repo.py" "$REPO" || return 1
}
use_shared_mount own --threads=2

# step DIR ID FLAGS X Y: one request of sequence ID in request directory
# DIR (FLAGS: "s" start, "e" end, "se" both, "-" neither); prints OUTPUT
# and CTRL as "x y | start end ready corrid".
step() {
	local dir=$1 id=$2 flags=$3
	echo "$id" >"$dir/.sequence_id"
	if [[ $flags == *s* ]]; then echo 1; else echo 0; fi >"$dir/.sequence_start"
	if [[ $flags == *e* ]]; then echo 1; else echo 0; fi >"$dir/.sequence_end"
	printf '%s %s\n' "$4" "$5" >"$dir/INPUT.txt"
	echo "$(cat "$dir/OUTPUT.txt") | $(cat "$dir/CTRL.txt")"
}

@test "the config loads; control and state tensors are not the client's" {
	[ "$(cut -d' ' -f1 "$MNT/acc/status")" = READY ]
	run "$PY" -c "
import json, sys
c = json.load(open(sys.argv[1]))
assert [i['name'] for i in c['input']] == ['INPUT'], c['input']
assert [o['name'] for o in c['output']] == ['OUTPUT', 'CTRL'], c['output']
sb = c['sequence_batching']
assert 'direct' in sb and sb['max_sequence_idle_microseconds'] == 60000000, sb
assert [k['name'] for k in sb['control_input']] == ['START', 'END', 'READY', 'CORRID']
assert sb['state'][0]['input_name'] == 'STATE_IN', sb
print('ok')" "$MNT/acc/config.json"
	[ "$output" = ok ]
	run cat "$MNT/acc_old/config.json"
	[[ "$output" == *'"max_candidate_sequences": 3'* ]]
	# 0 (or absent): Triton's default, one second.
	run cat "$MNT/acc_reload/config.json"
	[[ "$output" == *'"max_sequence_idle_microseconds": 1000000'* ]]
	[ ! -e "$MNT/acc/requests/x/STATE_IN.txt" ]
}

@test "two interleaved sequences through request directories: each its own running sum" {
	a=$(new_request acc)
	b=$(new_request acc)
	[ "$(step "$a" 11 s 1 2)" = "1 2 | 1 0 1 11" ]
	[ "$(step "$b" 12 s 100 200)" = "100 200 | 1 0 1 12" ]
	[ "$(step "$a" 11 - 1 2)" = "2 4 | 0 0 1 11" ]
	[ "$(step "$b" 12 - 100 200)" = "200 400 | 0 0 1 12" ]
	[ "$(step "$a" 11 e 10 10)" = "12 14 | 0 1 1 11" ]
	[ "$(step "$b" 12 - 1 1)" = "201 401 | 0 0 1 12" ]
	# A new request directory joins sequence 12 by its id.
	c=$(new_request acc)
	[ "$(step "$c" 12 e 1 1)" = "202 402 | 0 1 1 12" ]
	# A START begins again from the initial state (zeros).
	[ "$(step "$a" 11 se 5 5)" = "5 5 | 1 1 1 11" ]
}

@test "string sequence ids and the infer file's sequence parameters" {
	run "$PY" - "$MNT/acc_old/infer" <<'EOF'
import json, os, sys
def infer(seq, x, **flags):
    fd = os.open(sys.argv[1], os.O_RDWR)
    params = {"sequence_id": seq}
    params.update(flags)
    os.write(fd, json.dumps({"inputs": [{"name": "INPUT", "shape": [1, 2], "datatype": "FP32",
                                          "data": x}], "parameters": params}).encode())
    r = json.loads(os.read(fd, 1 << 20))
    os.close(fd)
    if "error" in r:
        return r["error"]
    return [t["data"] for t in r["outputs"]]
assert infer(21, [1, 1], sequence_start=True) == [[1, 1], [1, 0, 1, 21]]
assert infer(22, [5, 5], sequence_start=True) == [[5, 5], [1, 0, 1, 22]]
assert infer(21, [1, 1]) == [[2, 2], [0, 0, 1, 21]]
assert infer(22, [5, 5], sequence_end=True) == [[10, 10], [0, 1, 1, 22]]
assert infer("21", [1, 1], sequence_end=True) == [[3, 3], [0, 1, 1, 21]], "a string of digits is the number"
e = infer(22, [1, 1])
assert "sequence 22 has ended" in e, e
e = infer(23, [1, 1])
assert "sequence 23 is not started" in e and "sequence_start" in e, e
e = infer("abc", [1, 1], sequence_start=True)
assert "sequence id 'abc' is a string" in e and "CORRID" in e, e
print("ok")
EOF
	echo "$output"
	[ "${lines[-1]}" = ok ]
}

@test "a request without a sequence id, or with a bad one, is refused at the write" {
	r=$(new_request acc)
	run py_errno "with open('$r/INPUT.txt', 'w') as f: f.write('1 2')"
	[ "$output" = EINVAL ]
	grep -q "uses sequence batching: a request needs a sequence id" "$r/error"
	run py_errno "with open('$r/.sequence_id', 'w') as f: f.write('0')"
	[ "$output" = EINVAL ]
	run py_errno "with open('$r/.sequence_start', 'w') as f: f.write('yes')"
	[ "$output" = EINVAL ]
	grep -q "'.sequence_start': 'yes' is not 1, 0, true or false" "$r/error"
	# Removing the file takes the id away again.
	echo 31 >"$r/.sequence_id"
	echo 1 >"$r/.sequence_start"
	echo 1 2 >"$r/INPUT.txt"
	[ "$(cat "$r/OUTPUT.txt")" = "1 2" ]
	rm "$r/.sequence_id"
	run py_errno "with open('$r/INPUT.txt', 'w') as f: f.write('1 2')"
	[ "$output" = EINVAL ]
}

@test "a request of a sequence that was never started fails as a failed run, saying why" {
	r=$(new_request acc)
	echo 41 >"$r/.sequence_id"
	echo 1 2 >"$r/INPUT.txt"
	run cat "$r/OUTPUT.txt"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Input/output error"* ]]
	grep -q "sequence 41 is not started: its first request needs sequence_start" "$r/error"
	[[ "$(cat "$r/status")" == FAILED* ]]
}

@test "oldest: more sequences than candidates wait for a slot, then run" {
	for id in 51 52 53; do
		r=$(new_request acc_old "o$id")
		[ "$(step "$r" $id s $id 0)" = "$id 0 | 1 0 1 $id" ]
	done
	# Three candidates hold the three slots: sequence 54 waits.
	d=$(new_request acc_old o54)
	echo 54 >"$d/.sequence_id"
	echo 1 >"$d/.sequence_start"
	echo 54 0 >"$d/INPUT.txt"
	[ "$(cut -d' ' -f1 "$d/status")" = QUEUED ]
	# Sequence 51 ends: its slot goes to 54.
	[ "$(step "$MNT/acc_old/requests/o51" 51 e 1 0)" = "52 0 | 0 1 1 51" ]
	wait_until 10 grep -q DONE "$d/status"
	[ "$(cat "$d/OUTPUT.txt")" = "54 0" ]
	for id in 52 53 54; do
		[ "$(step "$MNT/acc_old/requests/o$id" $id e 1 1)" = "$((id + 1)) 1 | 0 1 1 $id" ]
	done
}

@test "many sequences at once, in parallel: each gets its own sums, in order" {
	for model in acc acc_old; do
		pids=()
		for id in 61 62 63 64 65 66; do
			(
				r=$(new_request $model "p$id") || exit 1
				sum=0
				for k in 1 2 3 4 5; do
					flags=-
					[ $k = 1 ] && flags=s
					[ $k = 5 ] && flags=e
					sum=$((sum + k * id))
					got=$(step "$r" $id $flags $((k * id)) $k) || exit 1
					[[ "$got" == "$sum $((k * (k + 1) / 2)) |"* ]] || { echo "$model $id step $k: $got" >&2; exit 1; }
				done
			) &
			pids+=($!)
		done
		for p in "${pids[@]}"; do
			wait "$p"
		done
	done
}

@test "a sequence idle past max_sequence_idle_microseconds is freed; its next request says so" {
	r=$(new_request acc_idle)
	[ "$(step "$r" 71 s 1 1)" = "1 1 | 1 0 1 71" ]
	wait_until 10 grep -q "model 'acc_idle' version 1: sequence 71 idled more than 300000 µs: freed" "$DAEMON_LOG"
	echo 0 >"$r/.sequence_start"
	echo 1 1 >"$r/INPUT.txt"
	run cat "$r/OUTPUT.txt"
	[ "$status" -ne 0 ]
	grep -q "sequence 71 was freed after idling more than 300000 µs (max_sequence_idle_microseconds)" "$r/error"
	# Started again, it begins from the initial state.
	[ "$(step "$r" 71 se 2 2)" = "2 2 | 1 1 1 71" ]
}

@test "modelfs run refuses a stateful model, saying to mount it" {
	echo 1 2 >"$BATS_TEST_TMPDIR/in.txt"
	run "$MODELFS" run "$REPO/acc" INPUT="$BATS_TEST_TMPDIR/in.txt" --out="$BATS_TEST_TMPDIR/out"
	[ "$status" -eq 1 ]
	[[ "$output" == *"stateful (sequence_batching)"*"mount the repository"* ]]
}

@test "hot reload: a request directory keeps its sequence on its version; the new version does not know it" {
	# acc_reload frees a sequence idle for 1 s: a loaded machine may pass
	# that between two steps here, so give it a minute.
	sed -i 's/max_sequence_idle_microseconds: 0/max_sequence_idle_microseconds: 60000000/' "$REPO/acc_reload/config.pbtxt"
	wait_until 30 grep -q '"max_sequence_idle_microseconds": 60000000' "$MNT/acc_reload/config.json"
	a=$(new_request acc_reload)
	[ "$(step "$a" 81 s 1 1)" = "1 1 | 1 0 1 81" ]
	cp -r "$REPO/acc_reload/1" "$REPO/acc_reload/2"
	wait_until 30 grep -q "^READY 2" "$MNT/acc_reload/status"
	# The directory was made on version 1: its sequence goes on there.
	[ "$(step "$a" 81 - 1 1)" = "2 2 | 0 0 1 81" ]
	# A new directory goes to version 2, where sequence 81 never started.
	b=$(new_request acc_reload)
	echo 81 >"$b/.sequence_id"
	echo 1 1 >"$b/INPUT.txt"
	run cat "$b/OUTPUT.txt"
	[ "$status" -ne 0 ]
	grep -q "model 'acc_reload' version 2: sequence 81 is not started" "$b/error"
	[ "$(step "$a" 81 e 1 1)" = "3 3 | 0 1 1 81" ]
}

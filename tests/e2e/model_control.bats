#!/usr/bin/env bats
# Model control modes (issue 13; SPEC.md sections 1, 3 and 8;
# docs/RELOAD.md): --model-control=poll|none|explicit, --load-model,
# loading and unloading through MOUNT/MODEL/control, and .index.json.

load helpers
use_add_sub_repo_per_test

state_is() { [ "$(index_state "$1")" = "$2" ]; }

second_add_sub() {
	cp -r "$REPO/add_sub" "$REPO/$1"
	sed -i "s/name: \"add_sub\"/name: \"$1\"/" "$REPO/$1/config.pbtxt"
}

@test "explicit: every model listed UNAVAILABLE, not loaded; no request until loaded" {
	second_add_sub other
	mount_repo "$REPO" --model-control=explicit
	ls "$MNT" | grep -qx add_sub
	ls "$MNT" | grep -qx other
	[ "$(index_state add_sub)" = "UNAVAILABLE|not loaded" ]
	[ "$(index_state other)" = "UNAVAILABLE|not loaded" ]
	grep -q '^UNAVAILABLE.*not loaded' "$MNT/add_sub/status"
	ls "$MNT/add_sub" | grep -qx control
	[ "$(stat -c %a "$MNT/add_sub/control")" = 200 ]
	[ "$(py_errno "os.mkdir('$MNT/add_sub/requests/r1')")" = EAGAIN ]
}

@test "explicit: echo load returns once READY; unload; load again" {
	mount_repo "$REPO" --model-control=explicit
	echo load > "$MNT/add_sub/control"
	# The very next line uses it: the write returned after the load.
	add_sub_answers add_sub
	[ "$(index_state add_sub | cut -d'|' -f1)" = READY ]
	grep -q '^READY' "$MNT/add_sub/status"
	# load on a loaded model: nothing changed on the disk, nothing reloads
	echo load > "$MNT/add_sub/control"
	add_sub_answers add_sub
	[ "$(grep -c 'add_sub.*READY on' "$DAEMON_LOG")" = 1 ]
	# ...and what changed is reloaded
	touch "$REPO/add_sub/1/model.onnx"
	echo load > "$MNT/add_sub/control"
	[ "$(grep -c 'add_sub.*READY on' "$DAEMON_LOG")" = 2 ]
	printf unload > "$MNT/add_sub/control"
	[ "$(index_state add_sub)" = "UNAVAILABLE|unloaded" ]
	[ "$(py_errno "os.mkdir('$MNT/add_sub/requests/r2')")" = EAGAIN ]
	# unloading what is not loaded succeeds
	echo unload > "$MNT/add_sub/control"
	echo load > "$MNT/add_sub/control"
	add_sub_answers add_sub
}

@test "explicit: requests in flight finish across unload and reload; new ones get EAGAIN" {
	rm -rf "$REPO"
	REPO=$(make_test_repo)
	mount_repo "$REPO" --model-control=explicit --load-model=slow
	slow_input "$T/x.npy"
	mkdir "$MNT/slow/requests/a" "$MNT/slow/requests/b" "$MNT/slow/requests/later"
	cp "$T/x.npy" "$MNT/slow/requests/a/x.npy"      # running
	cp "$T/x.npy" "$MNT/slow/requests/b/x.npy"      # queued behind it
	echo unload > "$MNT/slow/control"
	[ "$(index_state slow)" = "UNAVAILABLE|unloaded" ]
	[ "$(py_errno "os.mkdir('$MNT/slow/requests/new')")" = EAGAIN ]
	# a request made before the unload still runs, inputs written after it
	cp "$T/x.npy" "$MNT/slow/requests/later/x.npy"
	cmp "$MNT/slow/requests/a/y.npy" "$T/x.npy"
	cmp "$MNT/slow/requests/b/y.npy" "$T/x.npy"
	cmp "$MNT/slow/requests/later/y.npy" "$T/x.npy"
	# reload with a request in flight on the old load
	echo load > "$MNT/slow/control"
	mkdir "$MNT/slow/requests/c" "$MNT/slow/requests/d"
	cp "$T/x.npy" "$MNT/slow/requests/c/x.npy"
	touch "$REPO/slow/1/model.onnx"
	echo load > "$MNT/slow/control"
	cp "$T/x.npy" "$MNT/slow/requests/d/x.npy"
	cmp "$MNT/slow/requests/c/y.npy" "$T/x.npy"
	cmp "$MNT/slow/requests/d/y.npy" "$T/x.npy"
	grep -q '^READY' "$MNT/slow/status"
}

@test "explicit: loads in progress do not hold the mount (more of them than FUSE threads)" {
	rm -rf "$REPO"
	REPO=$(make_test_repo)
	cat >> "$REPO/slow/config.pbtxt" <<'EOF'
model_warmup { name: "w" count: 3
  inputs { key: "x" value { data_type: TYPE_FP32 dims: [256, 1024] zero_data: true } } }
EOF
	local i pids=()
	for i in $(seq 1 10); do
		cp -r "$REPO/slow" "$REPO/slow$i"
	done
	mount_repo "$REPO" --model-control=explicit --load-model=add_sub
	for i in $(seq 1 10); do
		echo load > "$MNT/slow$i/control" &
		pids+=($!)
	done
	sleep 0.5
	# ten writes wait for their loads, one after the other; the eight
	# FUSE threads still answer everyone else at once
	timeout 2 cat "$MNT/add_sub/status" | grep -q '^READY'
	req=$(new_request add_sub)
	seq 16 > "$req/INPUT0.txt"
	seq 16 > "$req/INPUT1.txt"
	[ "$(timeout 2 cat "$req/OUTPUT0.txt")" = "$(seq -s ' ' 2 2 32)" ]
	[ "$(index_state slow10 | cut -d'|' -f1)" != READY ]
	for i in "${pids[@]}"; do wait "$i"; done
	for i in $(seq 1 10); do [ "$(index_state slow$i | cut -d'|' -f1)" = READY ]; done
}

@test "explicit: stopping with loads queued answers them and exits cleanly" {
	rm -rf "$REPO"
	REPO=$(make_test_repo)
	cat >> "$REPO/slow/config.pbtxt" <<'EOF'
model_warmup { name: "w" count: 5
  inputs { key: "x" value { data_type: TYPE_FP32 dims: [256, 1024] zero_data: true } } }
EOF
	local i pids=() failed=0
	for i in 1 2 3 4; do cp -r "$REPO/slow" "$REPO/slow$i"; done
	mount_repo "$REPO" --model-control=explicit
	for i in 1 2 3 4; do
		(echo load > "$MNT/slow$i/control") 2>"$T/err$i" &
		pids+=($!)
	done
	sleep 0.3
	kill -TERM "$DAEMON_PID"
	for i in "${pids[@]}"; do wait "$i" || failed=$((failed + 1)); done
	# the load running finishes; the ones still queued are refused
	[ "$failed" -ge 1 ]
	grep -q "Cannot send after transport endpoint shutdown" "$T"/err*
	daemon_finished_cleanly
	DAEMON_PID=
}

@test "explicit: --load-model loads only the models it names" {
	second_add_sub other
	mount_repo "$REPO" --model-control=explicit --load-model=other -o load_model=add_sub
	add_sub_answers add_sub
	add_sub_answers other
	unmount_repo
	mount_repo "$REPO" -o model_control=explicit,load_model=other
	add_sub_answers other
	[ "$(index_state add_sub)" = "UNAVAILABLE|not loaded" ]
}

@test "explicit: a bad command, a failing load and another user's write fail with their errno" {
	mkdir -p "$REPO/broken/1"
	echo "not onnx" > "$REPO/broken/1/model.onnx"
	mount_repo "$REPO" --model-control=explicit -o allow_other
	run bash -c "echo reload-please > '$MNT/add_sub/control'"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Invalid argument"* ]]
	grep -q "unknown command 'reload-please'" "$DAEMON_LOG"
	run bash -c "echo load > '$MNT/broken/control'"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Input/output error"* ]]
	[ "$(index_state broken | cut -d'|' -f1)" = UNAVAILABLE ]
	index_state broken | grep -q 'model.onnx'
	grep -q 'model.onnx' "$MNT/broken/status"
	# reading it is refused; another user may not load or unload
	[ "$(py_errno "open('$MNT/add_sub/control').read()")" = EACCES ]
	if [ "$(id -u)" = 0 ]; then
		chmod 755 "$(dirname "$MNT")"
		run setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "echo load > '$MNT/add_sub/control'"
		[ "$status" -ne 0 ]
		[[ "$output" == *"Permission denied"* ]]
		[ "$(index_state add_sub)" = "UNAVAILABLE|not loaded" ]
	fi
	# a model removed from the repository cannot be loaded
	rm -rf "$REPO/add_sub"
	[ "$(py_errno "with open('$MNT/add_sub/control', 'w') as f: f.write('load')")" = ENOENT ]
}

# add_sub_ensemble NAME STEP: REPO/NAME, an ensemble of one step, model
# STEP, with add_sub's inputs and output OUTPUT0.
add_sub_ensemble() {
	mkdir -p "$REPO/$1/1"
	cat > "$REPO/$1/config.pbtxt" <<EOF
platform: "ensemble"
input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ 16 ] },
        { name: "INPUT1", data_type: TYPE_FP32, dims: [ 16 ] } ]
output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ 16 ] } ]
ensemble_scheduling { step [
  { model_name: "$2" input_map { key: "INPUT0" value: "INPUT0" } input_map { key: "INPUT1" value: "INPUT1" }
    output_map { key: "OUTPUT0" value: "OUTPUT0" } }
] }
EOF
}

# load_fails MODEL REASON: echo load into MODEL's control fails with EIO;
# MODEL is UNAVAILABLE with REASON in .index.json and status.
load_fails() {
	run bash -c "echo load > '$MNT/$1/control'"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Input/output error"* ]]
	[ "$(index_state "$1")" = "UNAVAILABLE|$2" ]
	[ "$(cat "$MNT/$1/status")" = "UNAVAILABLE 1 - $2" ]
	[ "$(py_errno "os.mkdir('$MNT/$1/requests/r')")" = EAGAIN ]
}

@test "explicit: loading an ensemble that cannot serve (itself, a step not loaded) is EIO; a nested one serves" {
	add_sub_ensemble selfie selfie
	add_sub_ensemble inner add_sub
	add_sub_ensemble outer inner
	mount_repo "$REPO" --model-control=explicit
	load_fails selfie "circular dependency between ensembles selfie -> selfie"
	grep -q "model 'selfie': control: model 'selfie': load failed: circular dependency between ensembles selfie -> selfie" "$DAEMON_LOG"
	load_fails inner "step 0 (model 'add_sub'): it has no READY version: not loaded"
	# Its step loaded first, it loads and serves; so does the ensemble
	# over it (Triton's nested ensembles).
	echo load > "$MNT/add_sub/control"
	echo load > "$MNT/inner/control"
	add_sub_answers inner
	echo load > "$MNT/outer/control"
	add_sub_answers outer
	# A failed load left nothing loaded: loading its step again does not
	# bring the circular one back.
	echo unload > "$MNT/add_sub/control"
	echo load > "$MNT/add_sub/control"
	[ "$(index_state selfie)" = "UNAVAILABLE|circular dependency between ensembles selfie -> selfie" ]
	add_sub_answers inner
}

# control_write BYTES: one write() of the Python bytes literal BYTES on
# one open() of add_sub's control file; prints the errno name or OK.
control_write() {
	py_errno "fd = os.open('$MNT/add_sub/control', os.O_WRONLY); os.write(fd, $1)"
}

@test "explicit: control takes one word per open(); more, a NUL, blanks: EINVAL, nothing done" {
	mount_repo "$REPO" --model-control=explicit --load-model=add_sub
	# A shell's printf writes each line on its own: the second write on
	# the same open() is refused, so the unload does not happen.
	run bash -c "printf 'load\nunload' > '$MNT/add_sub/control'"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Invalid argument"* ]]
	[ "$(index_state add_sub | cut -d'|' -f1)" = READY ]
	grep -q "model 'add_sub': control: 'unload' came after another write on the same open(): one command per open()" "$DAEMON_LOG"
	# Two words in one write, a NUL byte, blanks, two newlines: the
	# message quotes what was written, escaped.
	[ "$(control_write "b'unload\\nload'")" = EINVAL ]
	grep -qF "control: unknown command 'unload\nload'" "$DAEMON_LOG"
	[ "$(control_write "b'unload\\0garbage'")" = EINVAL ]
	grep -qF "control: unknown command 'unload\x00garbage'" "$DAEMON_LOG"
	for bytes in "b' unload'" "b'unload '" "b'unload\\n\\n'" "b'unload\\r\\n'"; do
		[ "$(control_write "$bytes")" = EINVAL ]
	done
	[ "$(index_state add_sub | cut -d'|' -f1)" = READY ]
	# One word on an open() of its own: done.
	[ "$(control_write "b'unload'")" = OK ]
	[ "$(index_state add_sub)" = "UNAVAILABLE|unloaded" ]
}

@test "explicit: no watching; SIGHUP lists new models, not loaded" {
	mount_repo "$REPO" --model-control=explicit --load-model=add_sub
	second_add_sub other
	sleep 0.6
	[ -z "$(index_state other)" ]
	kill -HUP "$DAEMON_PID"
	wait_until 5 state_is other "UNAVAILABLE|not loaded"
	add_sub_answers add_sub
	echo load > "$MNT/other/control"
	add_sub_answers other
}

@test "none: every model loaded at start, no watching, SIGHUP rescans, no control file" {
	mount_repo "$REPO" --model-control=none --reload-quiet-ms=50
	add_sub_answers add_sub
	[ ! -e "$MNT/add_sub/control" ]
	second_add_sub other
	sleep 0.6
	[ ! -e "$MNT/other" ]
	kill -HUP "$DAEMON_PID"
	wait_until 5 test -e "$MNT/other/status"
	wait_until 5 grep -q '^READY' "$MNT/other/status"
	add_sub_answers other
}

@test "poll: the default, and as named, follows the repository" {
	mount_repo "$REPO" --model-control=poll --reload-quiet-ms=50
	[ ! -e "$MNT/add_sub/control" ]
	run bash -c "echo load > '$MNT/add_sub/control'"
	[ "$status" -ne 0 ]
	second_add_sub other
	wait_until 5 grep -q '^READY' "$MNT/other/status"
	add_sub_answers other
	unmount_repo
	mount_repo "$REPO" --model-control=poll --poll-secs=1 --reload-quiet-ms=50
	second_add_sub third
	wait_until 5 grep -q '^READY' "$MNT/third/status"
}

@test ".index.json: every repository model with name, version, state and reason" {
	mkdir -p "$REPO/broken/1"
	echo "not onnx" > "$REPO/broken/1/model.onnx"
	mount_repo "$REPO"
	"$PY" - "$MNT/.index.json" <<'EOF'
import json, sys
idx = json.load(open(sys.argv[1]))
by = {e["name"]: e for e in idx}
assert sorted(by) == ["add_sub", "broken"], idx
assert all(sorted(e) == ["name", "reason", "state", "version"] for e in idx), idx
assert by["add_sub"]["version"] == "1" and by["add_sub"]["state"] == "READY", idx
assert by["broken"]["state"] == "UNAVAILABLE" and "model.onnx" in by["broken"]["reason"], idx
EOF
}

@test "option errors: --load-model without explicit, --poll-secs outside poll, unknown model" {
	run "$MODELFS" -f --load-model=add_sub "$REPO" "$T"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--load-model needs --model-control=explicit"* ]]
	run "$MODELFS" -f --model-control=none --poll-secs=5 "$REPO" "$T"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--poll-secs needs --model-control=poll"* ]]
	run "$MODELFS" -f --model-control=sometimes "$REPO" "$T"
	[ "$status" -eq 2 ]
	[[ "$output" == *"expected none, poll or explicit"* ]]
	mkdir "$T/mnt"
	run "$MODELFS" -f --model-control=explicit --load-model=nosuch "$REPO" "$T/mnt"
	[ "$status" -ne 0 ]
	[[ "$output" == *"--load-model=nosuch: no model 'nosuch'"* ]]
	! mountpoint -q "$T/mnt"
}

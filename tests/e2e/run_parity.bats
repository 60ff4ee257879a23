#!/usr/bin/env bats
# `modelfs run` is built on the daemon's command line and load path
# (issue 34): what the daemon checks, run checks, with the same words;
# the daemon's options that apply to one run work in it; the others are
# refused by name.  Each test compares run with a real mount of the same
# repository.

load helpers
use_add_sub_repo_per_test

S="$EXAMPLES/add_sub/samples"

# run_add_sub [OPTIONS...]: modelfs run on REPO/add_sub with the sample
# inputs, outputs into $T/out.
run_add_sub() {
	run "$MODELFS" run "$@" "$REPO/add_sub" INPUT0="$S/INPUT0.npy" INPUT1="$S/INPUT1.npy" --out "$T/out"
}

# status_reason MODEL: the reason in MNT/MODEL/status (its fourth field on).
status_reason() {
	cut -d' ' -f4- "$MNT/$1/status"
}

@test "run --log-level debug: the daemon's debug lines on stderr, and the right outputs" {
	run_add_sub --log-level debug
	[ "$status" -eq 0 ]
	cmp "$T/out/OUTPUT0.npy" "$S/expected/OUTPUT0.npy"
	[[ "$output" == *" modelfs debug: model 'add_sub' version 1: running on cpu"* ]]
	[[ "$output" == *" modelfs info: model 'add_sub' version 1: READY on cpu"* ]]
	# --log-level=LEVEL too; warn shows nothing on a run that goes well
	run_add_sub --log-level=warn
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	# the daemon's check of the value, with its words
	run_add_sub --log-level loud
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "modelfs run: --log-level: expected error, warn, info or debug, got 'loud'" ]
}

@test "run: a batch past max_batch_size is refused with the daemon's message" {
	# add_sub's graph fixes the first dim at 16: with max_batch_size 8 and
	# no dims after the batch dim, every request carries a batch of 16.
	sed -i 's/max_batch_size: 0/max_batch_size: 8/; s/dims: \[ 16 \]/dims: [ ]/' "$REPO/add_sub/config.pbtxt"
	mount_repo "$REPO"
	grep -q '^READY' "$MNT/add_sub/status"
	req=$(new_request add_sub)
	run cp "$S/INPUT0.npy" "$req/INPUT0.npy"
	[ "$status" -ne 0 ]
	daemon_says=$(sed "s/^'INPUT0.npy': //" "$req/error")
	[ "$daemon_says" = "input 'INPUT0': batch of 16 exceeds max_batch_size 8" ]
	run_add_sub
	[ "$status" -eq 1 ]
	[ "$output" = "modelfs run: add_sub: $S/INPUT0.npy: $daemon_says" ]
	[ ! -e "$T/out/OUTPUT0.npy" ]
}

@test "run: a config the daemon refuses at load is refused with its status reason" {
	# max_batch_size 32, but the graph fixes the batch dim at 16
	sed -i 's/max_batch_size: 0/max_batch_size: 32/; s/dims: \[ 16 \]/dims: [ ]/' "$REPO/add_sub/config.pbtxt"
	mount_repo "$REPO"
	grep -q '^UNAVAILABLE' "$MNT/add_sub/status"
	reason=$(status_reason add_sub)
	[[ "$reason" == "model 'add_sub' version 1: "*"max_batch_size 32"*"16"* ]]
	run_add_sub
	[ "$status" -eq 1 ]
	[ "$output" = "modelfs run: add_sub: ${reason#model \'add_sub\' }" ]
}

@test "run: a directory the daemon does not serve as a model is not run either" {
	cp -r "$REPO/add_sub" "$REPO/add sub"
	mount_repo "$REPO"
	grep -q '^READY' "$MNT/add_sub/status"
	[ ! -e "$MNT/add sub" ]
	run "$MODELFS" run "$REPO/add sub" INPUT0="$S/INPUT0.npy" INPUT1="$S/INPUT1.npy" --out "$T/out"
	[ "$status" -eq 1 ]
	[ "$output" = "modelfs run: add sub: 'add sub' is not a model name ([A-Za-z0-9._-], not starting with '.')" ]
	[ ! -e "$T/out" ]
}

@test "run: the daemon's options with its checks and words; daemon-only ones refused by name" {
	for opt in "--threads 0" "--device gpu" "--max-request-bytes 0" "--backend-dir /nonexistent"; do
		# shellcheck disable=SC2086
		run "$MODELFS" $opt "$REPO" "$T"
		[ "$status" -eq 2 ]
		daemon_says=${lines[0]#modelfs: }
		# shellcheck disable=SC2086
		run_add_sub $opt
		[ "$status" -eq 2 ]
		[ "${lines[0]}" = "modelfs run: $daemon_says" ]
	done
	run_add_sub -f
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "modelfs run: -f is an option of the daemon only: "* ]]
	run_add_sub -o allow_other
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "modelfs run: -o: mount options are the daemon's only: "* ]]
	for opt in --poll-secs=5 --model-control=none --load-model=add_sub --reload-quiet-ms=9 \
		   --max-memory=1G --request-ttl-secs=9 --max-requests=9; do
		run_add_sub "$opt"
		[ "$status" -eq 2 ]
		[[ "${lines[0]}" == "modelfs run: ${opt%%=*} is an option of the daemon only: "* ]]
	done
	[ ! -e "$T/out" ]
}

@test "run: --max-request-bytes and --max-json-bytes bound the inputs as in the daemon" {
	run_add_sub --max-request-bytes 100
	[ "$status" -eq 1 ]
	[[ "$output" == "modelfs run: add_sub: '$S/INPUT"?".npy' refused: the request would pass --max-request-bytes=100" ]]
	run_add_sub --max-request-bytes 1K --threads 1 --device cpu
	[ "$status" -eq 0 ]
	printf '%s' '[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]' > "$T/a.json"
	run "$MODELFS" run --max-json-bytes 20 "$REPO/add_sub" INPUT0="$T/a.json" INPUT1="$S/INPUT1.npy" --out "$T/out"
	[ "$status" -eq 1 ]
	[ "$output" = "modelfs run: add_sub: '$T/a.json' refused: JSON text past --max-json-bytes=20" ]
}

#!/usr/bin/env bats
# The user scripts in examples/ work as written against a mount.

load helpers

use_shared_mount examples

@test "examples/add_sub.sh" {
	run sh "$EXAMPLES/add_sub.sh" "$MNT"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "INPUT0 + INPUT1 = 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26" ]
	[ "${lines[1]}" = "INPUT0 - INPUT1 = -9 -8 -7 -6 -5 -4 -3 -2 -1 0 1 2 3 4 5 6" ]
	[ -z "$(ls "$MNT/add_sub/requests")" ]
}

@test "examples/classify.sh, with .npy and with .txt" {
	run sh "$EXAMPLES/classify.sh" "$MNT"
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^class\ [0-9]\ \(p\ =\ 0\.[0-9]+\)$ ]]
	want=$("$PY" -c "
import numpy as np; p = np.load('$EXAMPLES/mlp/samples/expected/probabilities.npy'); print(int(p.argmax()))")
	[[ "$output" == "class $want "* ]]
	run sh "$EXAMPLES/classify.sh" "$MNT" "$EXAMPLES/mlp/samples/input.txt"
	[ "$status" -eq 0 ]
	[[ "$output" == "class $want "* ]]
}

@test "examples/classify_pipeline.sh: the ensemble names the class from labels.txt" {
	# Its first step is the example custom backend (examples/backends/preprocess.c).
	[[ "$(cat "$MNT/pipeline_preprocess/status")" == "READY 1 cpu backend 'preprocess'"* ]]
	want=$("$PY" -c "
import numpy as np; p = np.load('$EXAMPLES/pipeline/samples/expected/probabilities.npy'); print(int(p.argmax()))")
	label=$(sed -n "$((want + 1))p" "$EXAMPLES/pipeline/labels.txt")
	for img in "$EXAMPLES/pipeline/samples/pixels.npy" "$EXAMPLES/pipeline/samples/pixels.txt"; do
		run sh "$EXAMPLES/classify_pipeline.sh" "$MNT" "$img"
		echo "$output"
		[ "$status" -eq 0 ]
		[[ "$output" =~ ^$label\ \(class\ $want,\ p\ =\ 0\.[0-9]+\)$ ]]
	done
	[ -z "$(ls "$MNT/pipeline/requests")" ]
}

@test "examples/reuse_loop.sh" {
	run sh "$EXAMPLES/reuse_loop.sh" "$MNT" 5
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 5 ]
	[ "${lines[4]}" = "run 5: 6 8 10 12 14 16 18 20 22 24 26 28 30 32 34 36" ]
}

@test "examples/infer.sh" {
	run bash "$EXAMPLES/infer.sh" "$MNT"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 3 ]
	[[ "${lines[2]}" == *'"id":"req3"'* ]]
	[[ "${lines[2]}" == *'"data":[4,6,8,'* ]]
}

@test "examples/stream_chunks.sh: the running mean of a signal fed chunk by chunk" {
	run sh "$EXAMPLES/stream_chunks.sh" "$MNT"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 4 ]
	[ "${lines[0]}" = "after chunk 1: mean 8.5" ]
	[ "${lines[3]}" = "after chunk 4: mean 32.5" ]
	seq 0.5 0.5 24 > "$BATS_TEST_TMPDIR/signal.txt"
	run sh "$EXAMPLES/stream_chunks.sh" "$MNT" "$BATS_TEST_TMPDIR/signal.txt"
	[ "$status" -eq 0 ]
	[ "${lines[2]}" = "after chunk 3: mean 12.25" ]
	[ -z "$(ls "$MNT/running_mean/requests")" ]
}

@test "examples/generate.sh streams the ids of a decoder (tests/models/kv_decoder.py)" {
	# A second mount of its own: a tiny decoder exported at test time.
	local outer_mnt=$MNT outer_pid=$DAEMON_PID outer_log=$DAEMON_LOG
	mkdir -p "$T/repo/gen/1"
	"$PY" "$TOP/tests/models/kv_decoder.py" "$T/repo/gen/1" 2>/dev/null
	mount_repo "$T/repo"
	run sh "$EXAMPLES/generate.sh" "$MNT" gen "1 2 3" 7
	want=$("$PY" "$TOP/tests/models/kv_decoder.py" x --greedy "1 2 3" 7)
	left=$(ls "$MNT/gen/requests")
	unmount_repo
	MNT=$outer_mnt DAEMON_PID=$outer_pid DAEMON_LOG=$outer_log
	[ "$status" -eq 0 ]
	[ "$(echo $output)" = "$want" ]
	[ -z "$left" ]
}

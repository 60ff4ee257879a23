#!/usr/bin/env bats
# KIND_AUTO's engine choice kept on disk (SPEC.md section 9): the first
# mount serves on the CPU at once, then times the engines (OpenCL stopped
# as soon as it is clearly slower) and stores the choice under
# --cache-dir; a second mount and `modelfs
# run` reuse it without timing again (status, stats.json and the log say
# "cached"); a corrupt entry is ignored with a warning and rewritten.
# Needs an OpenCL device (PoCL's CPU device here and in CI).

load helpers

setup() {
	T="$BATS_TEST_TMPDIR"
	REPO="$T/repo"
	mkdir -p "$REPO/mlp/1"
	cp "$EXAMPLES/mlp/1/model.onnx" "$REPO/mlp/1/"
	echo 'name: "mlp"' > "$REPO/mlp/config.pbtxt"
	CACHE="$T/cache"
	# the compiled OpenCL programs stay where every other test keeps them
	export MODELFS_CACHE_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/modelfs/opencl"
}

teardown() {
	unmount_repo
}

need_opencl() {
	if grep -q "no OpenCL engine" "$MNT/mlp/status"; then
		skip "no OpenCL device: nothing to choose between"
	fi
	wait_timed mlp
}

# The trial's winner depends on the machine and its load (PoCL beat the
# CPU on the mlp once under a loaded test run): the tests check that a
# choice was made, timed and stored, not which engine won.
TIMED='^READY 1 (cpu|opencl) auto: cpu [0-9.]+ ms'

device_field() { # field
	"$PY" -c "import json; print(json.load(open('$MNT/mlp/stats.json'))['model_stats'][0]['device']['$1'])"
}

@test "first mount serves on the CPU at once, then times and stores the choice; a second mount reuses it" {
	mount_repo "$REPO" --cache-dir "$CACHE"
	# READY before any trial: the engines are timed after the loads
	grep -q "READY on cpu .*auto: cpu until timed" "$DAEMON_LOG"
	need_opencl
	grep -q "model 'mlp' version 1: timing the engines (KIND_AUTO)" "$DAEMON_LOG"
	run cat "$MNT/mlp/status"
	echo "$output"
	[[ "$output" =~ $TIMED ]]
	[[ "$output" != *cached* ]]
	[ "$(device_field cached)" = False ]
	ls "$CACHE"/routes/*.route
	[ "$(ls "$CACHE"/routes | wc -l)" -eq 1 ]
	# written by rename: no temporary file left
	! ls "$CACHE"/routes/*.tmp 2>/dev/null
	grep -qE '^device (cpu|opencl)$' "$CACHE"/routes/*.route
	first=$(cat "$MNT/mlp/status")
	unmount_repo

	mount_repo "$REPO" --cache-dir "$CACHE"
	run cat "$MNT/mlp/status"
	echo "$output"
	[[ "$output" == *"[cached: not timed again]" ]]
	# the stored trial's figures, not new ones
	[ "$output" = "$first [cached: not timed again]" ]
	[ "$(device_field cached)" = True ]
	grep -qE "model 'mlp' version 1: READY on (cpu|opencl) .*\[cached: not timed again\]" "$DAEMON_LOG"
	! grep -q "timing the engines" "$DAEMON_LOG"
}

@test "a choice stored by another modelfs build is not reused: timed again" {
	mount_repo "$REPO" --cache-dir "$CACHE"
	need_opencl
	unmount_repo
	entry=$(ls "$CACHE"/routes/*.route)
	grep -q '^key .* build=[0-9a-f]' "$entry"
	# the same entry as an older build wrote it: its own key and file name
	sed 's/ build=[^ ]*$/ build=0000older/' "$entry" > "$CACHE/routes/older"
	rm "$entry"
	mv "$CACHE/routes/older" "$entry"
	mount_repo "$REPO" --cache-dir "$CACHE"
	need_opencl
	run cat "$MNT/mlp/status"
	[[ "$output" != *cached* ]]
	grep -q "timing the engines" "$DAEMON_LOG"
}

@test "modelfs run takes the same path: it stores the choice, and reuses it" {
	"$PY" -c "import numpy as np; np.save('$T/x.npy', np.full((1, 784), 0.5, np.float32))"
	run "$MODELFS" run --cache-dir "$CACHE" --log-level info "$REPO/mlp" input="$T/x.npy" --out "$T/out1"
	echo "$output"
	[[ "$output" == *"no OpenCL engine"* ]] && skip "no OpenCL device"
	[ "$status" -eq 0 ]
	[[ "$output" == *"READY on cpu"*"auto: cpu "* ]]
	[[ "$output" != *"cached"* ]]
	[ "$(ls "$CACHE"/routes | wc -l)" -eq 1 ]
	run "$MODELFS" run --cache-dir "$CACHE" --log-level info "$REPO/mlp" input="$T/x.npy" --out "$T/out2"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"READY on cpu"*"[cached: not timed again]"* ]]
	# The same answer: within rounding, as each run times its own GEMM
	# paths (oneDNN or OpenBLAS), whose sums round differently.
	"$PY" -c "import numpy as np; a = np.load('$T/out1/probabilities.npy'); b = np.load('$T/out2/probabilities.npy'); assert np.allclose(a, b, rtol=1e-5, atol=1e-6), abs(a - b).max()"
	# and the daemon reuses what run stored
	mount_repo "$REPO" --cache-dir "$CACHE"
	grep -q "cached: not timed again" "$MNT/mlp/status"
}

@test "a corrupt entry is ignored with a warning, timed again and rewritten" {
	mount_repo "$REPO" --cache-dir "$CACHE"
	need_opencl
	unmount_repo
	entry=$(ls "$CACHE"/routes/*.route)
	printf 'modelfs-engine-choice 1\nkey model=\0garbage' > "$entry"
	mount_repo "$REPO" --cache-dir "$CACHE"
	need_opencl
	run cat "$MNT/mlp/status"
	echo "$output"
	[[ "$output" =~ $TIMED ]]
	[[ "$output" != *cached* ]]
	grep -q "engine-choice cache $entry: ignored (.*); timing the engines again" "$DAEMON_LOG"
	# rewritten whole: the next mount reuses it
	grep -qE '^device (cpu|opencl)$' "$entry"
	unmount_repo
	mount_repo "$REPO" --cache-dir "$CACHE"
	grep -q "cached: not timed again" "$MNT/mlp/status"
}

@test "another model file (new bytes) is timed again, beside the first entry" {
	mount_repo "$REPO" --cache-dir "$CACHE"
	need_opencl
	unmount_repo
	cp "$EXAMPLES/cnn/1/model.onnx" "$REPO/mlp/1/model.onnx"
	rm -f "$REPO/mlp/config.pbtxt"
	mount_repo "$REPO" --cache-dir "$CACHE"
	need_opencl
	run cat "$MNT/mlp/status"
	echo "$output"
	[[ "$output" =~ $TIMED ]]
	[[ "$output" != *cached* ]]
	[ "$(ls "$CACHE"/routes | wc -l)" -eq 2 ]
}

@test "--cache-dir in -o form and in --help" {
	"$MODELFS" --help | grep -q -- "--cache-dir=DIR"
	"$MODELFS" run --help | grep -q -- "--cache-dir=DIR"
	mount_repo "$REPO" -o cache_dir="$CACHE"
	need_opencl
	[ "$(ls "$CACHE"/routes | wc -l)" -eq 1 ]
}

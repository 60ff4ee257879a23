#!/usr/bin/env bats
# model_warmup (issue 13; SPEC.md section 9, docs/CONFIG.md): samples
# from zero_data, random_data and a file in the version's warmup/
# folder; READY only after they ran; a failing or invalid sample fails
# the version's load with the reason in status; the device router times
# the engines on the sample.

load helpers
use_add_sub_repo_per_test

# warm_add_sub INPUT0_SOURCE INPUT1_SOURCE [DIMS] [EXTRA]: add_sub's
# config with one sample "s" (sources: zero_data: true, ...).
warm_add_sub() {
	local dims=${3:-16}
	cat >> "$REPO/add_sub/config.pbtxt" <<EOF
model_warmup [ {
  name: "s"
  count: 2
  inputs { key: "INPUT0" value { data_type: TYPE_FP32 dims: [ $dims ] $1 } }
  inputs { key: "INPUT1" value { data_type: TYPE_FP32 dims: [ $dims ] $2 } }
  ${4:-}
} ]
EOF
}

# The warm-up's log line comes before the READY line.
warmed_before_ready() {
	local w r
	w=$(grep -n "add_sub' version 1: warm-up: 1 sample(s) ran on 1 instance(s)" "$DAEMON_LOG" | head -1 | cut -d: -f1)
	r=$(grep -n "add_sub' version 1: READY" "$DAEMON_LOG" | head -1 | cut -d: -f1)
	[ -n "$w" ] && [ -n "$r" ] && [ "$w" -lt "$r" ]
}

@test "zero_data: the sample runs before the version is READY" {
	warm_add_sub "zero_data: true" "zero_data: true"
	mount_repo "$REPO"
	grep -q '^READY' "$MNT/add_sub/status"
	warmed_before_ready
	add_sub_answers
	# config.json shows the samples in effect
	"$PY" -c '
import json, sys
w = json.load(open(sys.argv[1]))["model_warmup"]
assert w == [{"name": "s", "batch_size": 1, "count": 2, "inputs": {
    "INPUT0": {"data_type": "TYPE_FP32", "dims": [16], "zero_data": True},
    "INPUT1": {"data_type": "TYPE_FP32", "dims": [16], "zero_data": True}}}], w' "$MNT/add_sub/config.json"
}

@test "random_data and input_data_file: READY after the samples ran" {
	mkdir -p "$REPO/add_sub/1/warmup"
	"$PY" -c "import numpy as np; np.arange(16, dtype='<f4').tofile('$REPO/add_sub/1/warmup/in1.raw')"
	warm_add_sub "random_data: true" 'input_data_file: "in1.raw"'
	mount_repo "$REPO"
	grep -q '^READY' "$MNT/add_sub/status"
	warmed_before_ready
	add_sub_answers
}

@test "a slow warm-up: LOADING while it runs, READY after; explicit load returns after it" {
	rm -rf "$REPO"
	REPO=$(make_test_repo)
	cat >> "$REPO/slow/config.pbtxt" <<'EOF'
model_warmup { name: "long" count: 15 batch_size: 1
  inputs { key: "x" value { data_type: TYPE_FP32 dims: [256, 1024] random_data: true } } }
EOF
	mount_repo "$REPO" --model-control=explicit
	echo load > "$MNT/slow/control" &
	local loader=$!
	wait_until 10 grep -q '"state": "LOADING"' "$MNT/.index.json"
	[ "$(py_errno "os.mkdir('$MNT/slow/requests/early')")" = EAGAIN ]
	wait "$loader"
	# the write returned: the samples ran, and it is READY now
	grep -q "slow' version 1: warm-up: 1 sample(s) ran on 1 instance(s)" "$DAEMON_LOG"
	grep -q '^READY' "$MNT/slow/status"
}

@test "a failing warm-up fails the load, its reason in status and .index.json" {
	rm -rf "$REPO"
	REPO=$(make_test_repo)
	# varlen's a + b: lengths 3 and 4 do not broadcast, at run time
	cat > "$REPO/varlen/config.pbtxt" <<'EOF'
max_batch_size: 0
model_warmup { name: "mismatch"
  inputs { key: "a" value { data_type: TYPE_FP32 dims: 3 zero_data: true } }
  inputs { key: "b" value { data_type: TYPE_FP32 dims: 4 zero_data: true } } }
EOF
	mount_repo "$REPO"
	index_state varlen | grep -q "^UNAVAILABLE|.*warm-up sample 'mismatch'"
	grep -q "UNAVAILABLE.*warm-up sample 'mismatch'" "$MNT/varlen/status"
	[ "$(py_errno "os.mkdir('$MNT/varlen/requests/r')")" = EAGAIN ]
	# fixing the sample (hot reload) makes it load
	sed -i 's/dims: 4/dims: 3/' "$REPO/varlen/config.pbtxt"
	wait_until 10 grep -q '^READY' "$MNT/varlen/status"
}

# bad_sample DESCRIPTION: add_sub must be UNAVAILABLE with that reason.
unavailable_because() {
	wait_until 10 grep -q '^UNAVAILABLE' "$MNT/add_sub/status"
	grep -qF -- "$1" "$MNT/add_sub/status" || { cat "$MNT/add_sub/status"; return 1; }
	index_state add_sub | grep -qF -- "$1"
}

@test "invalid samples are load errors naming the sample, the input and the file" {
	mkdir -p "$REPO/add_sub/1/warmup"
	head -c 60 /dev/zero > "$REPO/add_sub/1/warmup/short.raw"
	warm_add_sub "zero_data: true" 'input_data_file: "short.raw"'
	mount_repo "$REPO" --reload-quiet-ms=50
	unavailable_because "model 'add_sub' version 1: warm-up sample 's': input 'INPUT1': input_data_file '$REPO/add_sub/1/warmup/short.raw' holds 60 bytes, the sample needs 64 (TYPE_FP32, batch 1)"
	unmount_repo

	add_sub_repo "$T/r2" && REPO="$T/r2/"
	REPO="$T/r2"
	warm_add_sub "zero_data: true" 'input_data_file: "missing.raw"'
	mount_repo "$REPO"
	unavailable_because "warm-up sample 's': input 'INPUT1': input_data_file '$REPO/add_sub/1/warmup/missing.raw': "
	grep -q "missing.raw'.*No such file" "$MNT/add_sub/status"
	unmount_repo

	REPO="$T/r3" && add_sub_repo "$REPO"
	warm_add_sub "zero_data: true" "zero_data: true" 16 'inputs { key: "INPUT9" value { data_type: TYPE_FP32 dims: 1 zero_data: true } }'
	mount_repo "$REPO"
	unavailable_because "warm-up sample 's': the model has no input 'INPUT9' (inputs: INPUT0, INPUT1)"
	unmount_repo

	REPO="$T/r4" && add_sub_repo "$REPO"
	warm_add_sub "zero_data: true" "zero_data: true" "4, 4"
	mount_repo "$REPO"
	unavailable_because "warm-up sample 's': input 'INPUT0' has dims [4, 4], the model's are [16]"
	unmount_repo

	REPO="$T/r5" && add_sub_repo "$REPO"
	cat >> "$REPO/add_sub/config.pbtxt" <<'EOF'
model_warmup { name: "half"
  inputs { key: "INPUT0" value { data_type: TYPE_FP32 dims: 16 zero_data: true } } }
EOF
	mount_repo "$REPO"
	unavailable_because "warm-up sample 'half': input 'INPUT1' is missing"
}

@test "the router times the engines on the sample; one a made-up input cannot feed" {
	rm -rf "$REPO"
	mkdir -p "$REPO/reshape/1/warmup"
	"$PY" - "$REPO/reshape" <<'EOF'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper
d = sys.argv[1]
g = helper.make_graph([helper.make_node("Reshape", ["x", "shape"], ["y"])], "reshape",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
     helper.make_tensor_value_info("shape", TensorProto.INT64, [3])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2, 1])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), d + "/1/model.onnx")
np.array([3, 2, 1], dtype="<i8").tofile(d + "/1/warmup/shape.raw")
EOF
	mount_repo "$REPO" --reload-quiet-ms=50
	# made-up inputs (a shape of zeros: "copy dim" for a third dim x
	# lacks) cannot run: loaded untimed
	grep -q "not timed" "$MNT/reshape/status"
	cat > "$REPO/reshape/config.pbtxt" <<'EOF'
model_warmup { name: "real_shape"
  inputs { key: "x" value { data_type: TYPE_FP32 dims: [2, 3] random_data: true } }
  inputs { key: "shape" value { data_type: TYPE_INT64 dims: 3 input_data_file: "shape.raw" } } }
EOF
	# KIND_AUTO times the engines after the load (device_router.h)
	wait_until 120 grep -q "on warm-up sample 'real_shape'\|no OpenCL engine" "$MNT/reshape/status"
	grep -q '^READY' "$MNT/reshape/status"
	if grep -q "no OpenCL engine" "$MNT/reshape/status"; then
		skip "no OpenCL device: nothing to time against"
	fi
	# both timed, or OpenCL stopped once clearly slower (device_router.h)
	grep -qE "auto: cpu [0-9.]* ms(, opencl [0-9.]* ms)? on warm-up sample 'real_shape'" "$MNT/reshape/status"
}

@test "modelfs run runs the warm-up too: a failing sample fails it" {
	warm_add_sub "zero_data: true" "zero_data: true" "4, 4"
	run "$MODELFS" run "$REPO/add_sub" INPUT0="$EXAMPLES/add_sub/samples/INPUT0.npy" \
		INPUT1="$EXAMPLES/add_sub/samples/INPUT1.npy" --out "$T/out"
	[ "$status" -ne 0 ]
	[[ "$output" == *"warm-up sample 's': input 'INPUT0' has dims [4, 4]"* ]]
}

#!/usr/bin/env bats
# Models with control flow (If, Loop, Scan: bodies that read the
# enclosing graph's values) served through the mount: requests written
# and read the way a script does, outputs compared with the ONNX backend
# test data; where they run (the CPU, the reason in status) and what a
# bad request does.

load helpers

CASES=/usr/share/libonnx-testdata/data/node

# MODEL dir from backend test case CASE, with instance_group KIND or none.
case_model() { # repo name case kind
	mkdir -p "$1/$2/1"
	cp "$CASES/$3/model.onnx" "$1/$2/1/model.onnx"
	{
		echo "name: \"$2\""
		if [ -n "$4" ]; then echo "instance_group [ { count: 1, kind: $4 } ]"; fi
	} > "$1/$2/config.pbtxt"
}

setup_file() {
	REPO="$BATS_FILE_TMPDIR/repo"
	case_model "$REPO" loop test_loop11 ""
	case_model "$REPO" loop_gpu test_loop11 KIND_GPU
	case_model "$REPO" if test_if ""
	case_model "$REPO" scan test_scan9_sum ""
	# a while loop: i += step until i >= 100; the warm-up's made-up
	# step of 0 would never end it
	mkdir -p "$REPO/while/1"
	"$PY" - "$REPO/while/1/model.onnx" <<'PYEOF'
import sys
import onnx
from onnx import helper as h, TensorProto as T
body = h.make_graph([
    h.make_node("Add", ["i", "step"], ["i2"]),
    h.make_node("Less", ["i2", "hundred"], ["more"]),
], "body",
    [h.make_tensor_value_info("n", T.INT64, []), h.make_tensor_value_info("c", T.BOOL, []),
     h.make_tensor_value_info("i", T.INT64, [])],
    [h.make_tensor_value_info("more", T.BOOL, []), h.make_tensor_value_info("i2", T.INT64, [])])
g = h.make_graph([h.make_node("Loop", ["", "", "start"], ["end"], body=body)], "while",
                 [h.make_tensor_value_info("start", T.INT64, []),
                  h.make_tensor_value_info("step", T.INT64, [])],
                 [h.make_tensor_value_info("end", T.INT64, [])],
                 [h.make_tensor("hundred", T.INT64, [], [100])])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), sys.argv[1])
PYEOF
	mount_repo "$REPO"
	export MNT DAEMON_PID DAEMON_LOG REPO
}

teardown_file() {
	unmount_repo
}

# One request on MODEL with the inputs of CASE's test_data_set_0, each
# written as NAME.npy; every output read back as .npy and compared.
run_case() { # model case
	local req
	req=$(new_request "$1") || return 1
	"$PY" - "$CASES/$2" "$req" <<'PYEOF'
import glob, os, sys
import numpy as np, onnx
from onnx import numpy_helper
case, req = sys.argv[1], sys.argv[2]
m = onnx.load(os.path.join(case, "model.onnx"))
data = os.path.join(case, "test_data_set_0")
for k, vi in enumerate(m.graph.input):
    t = onnx.TensorProto()
    t.ParseFromString(open(os.path.join(data, "input_%d.pb" % k), "rb").read())
    np.save(os.path.join(req, vi.name + ".npy"), numpy_helper.to_array(t))
for k, vo in enumerate(m.graph.output):
    t = onnx.TensorProto()
    t.ParseFromString(open(os.path.join(data, "output_%d.pb" % k), "rb").read())
    want = numpy_helper.to_array(t)
    got = np.load(os.path.join(req, vo.name + ".npy"))
    assert got.shape == want.shape, (vo.name, got.shape, want.shape)
    assert np.allclose(got, want, rtol=1e-5, atol=1e-6), (vo.name, got, want)
print("ok")
PYEOF
}

@test "Loop with carried values and scan outputs: outputs match the backend data" {
	run run_case loop test_loop11
	echo "$output"
	[ "$output" = ok ]
}

@test "If reading its branches' values: outputs match the backend data" {
	run run_case if test_if
	echo "$output"
	[ "$output" = ok ]
}

@test "Scan: outputs match the backend data, twice on one instance" {
	run run_case scan test_scan9_sum
	[ "$output" = ok ]
	run run_case scan test_scan9_sum
	echo "$output"
	[ "$output" = ok ]
}

@test "control flow runs on the CPU: KIND_AUTO says why, KIND_GPU is UNAVAILABLE in words" {
	wait_timed loop
	run cat "$MNT/loop/status"
	echo "$output"
	[[ "$output" == "READY 1 cpu auto: cpu "*"(opencl failed: "*"cannot run Loop"* ]]
	run cat "$MNT/loop_gpu/status"
	echo "$output"
	[[ "$output" == "UNAVAILABLE 1 - "*"cannot run Loop"* ]]
}

@test "a Loop request whose trip count is not one int64 fails with EINVAL at close, in words" {
	local req
	req=$(new_request loop)
	run py_errno "
import io, numpy as np
b = io.BytesIO(); np.save(b, np.array([1, 2], dtype=np.int64))
f = os.open('$req/trip_count.npy', os.O_WRONLY | os.O_CREAT)
os.write(f, b.getvalue()); os.close(f)"
	echo "$output"
	[ "$output" = EINVAL ]
	grep -q "input 'trip_count': expected INT64 \[\], got INT64 \[2\]" "$req/error"
	# the instance still serves
	run run_case loop test_loop11
	[ "$output" = ok ]
}

@test "a while loop that made-up inputs never end: the warm-up gives up, the model loads and serves" {
	wait_timed while
	run cat "$MNT/while/status"
	echo "$output"
	[[ "$output" == "READY 1 cpu auto: cpu, not timed"*"Loop"*"more than 10000 iterations"* ]]
	local req
	req=$(new_request while)
	"$PY" -c "
import numpy as np
for n, v in (('start', np.array(3)), ('step', np.array(10))):
    np.save('$req/' + n + '.npy', v)"
	run "$PY" -c "import numpy as np; print(int(np.load('$req/end.npy')))"
	echo "$output"
	[ "$output" = 103 ]
}

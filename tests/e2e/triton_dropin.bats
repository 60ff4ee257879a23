#!/usr/bin/env bats
# Triton repositories as people have them (SPEC.md section 2, issue 29):
# Triton's quickstart densenet_onnx config, unchanged (format: FORMAT_NCHW,
# reshape, label_filename), over a small model of densenet's inputs and
# outputs, answering with its labels; the format rule; Triton's ONNX
# Runtime auto-complete (max_batch_size 4, dynamic batching, two CPU
# instances) and --backend-config's default-max-batch-size, as an option,
# as -o and for `modelfs run`.

load helpers

# densenet_onnx: data_0 [1,3,224,224] -> fc6_1 [1,1000,1,1]: the mean of
# each channel through a 1x1 convolution whose class k weighs the first
# channel by k (1000 - k for the second): a bright first channel makes
# class 999 the top, a bright second channel class 0.
densenet_model() {
	"$PY" - "$1" <<'PYEOF'
import sys, numpy as np, onnx
from onnx import TensorProto, helper, numpy_helper as nh
w = np.zeros((1000, 3, 1, 1), np.float32)
w[:, 0, 0, 0] = np.arange(1000) / 1000.0
w[:, 1, 0, 0] = (1000 - np.arange(1000)) / 1000.0
g = helper.make_graph(
    [helper.make_node("GlobalAveragePool", ["data_0"], ["m"]),
     helper.make_node("Conv", ["m", "w"], ["fc6_1"])], "densenet_like",
    [helper.make_tensor_value_info("data_0", TensorProto.FLOAT, [1, 3, 224, 224])],
    [helper.make_tensor_value_info("fc6_1", TensorProto.FLOAT, [1, 1000, 1, 1])],
    [nh.from_array(w, "w")])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
PYEOF
}

make_shared_repo() {
	REPO=$(mktemp -d "${BATS_RUN_TMPDIR:-/tmp}/repo.XXXXXX")
	mkdir -p "$REPO/densenet_onnx/1"
	densenet_model "$REPO/densenet_onnx/1/model.onnx"
	seq 0 999 | sed 's/^/label_/' > "$REPO/densenet_onnx/densenet_labels.txt"
	# Triton's docs/examples/model_repository/densenet_onnx/config.pbtxt
	cat > "$REPO/densenet_onnx/config.pbtxt" <<'EOF'
name: "densenet_onnx"
platform: "onnxruntime_onnx"
max_batch_size : 0
input [
  {
    name: "data_0"
    data_type: TYPE_FP32
    format: FORMAT_NCHW
    dims: [ 3, 224, 224 ]
    reshape { shape: [ 1, 3, 224, 224 ] }
  }
]
output [
  {
    name: "fc6_1"
    data_type: TYPE_FP32
    dims: [ 1000 ]
    reshape { shape: [ 1, 1000, 1, 1 ] }
    label_filename: "densenet_labels.txt"
  }
]
EOF
	# The same model, its image input given 2 dims: Triton's rule refuses it.
	mkdir -p "$REPO/flat_image/1"
	cp "$REPO/densenet_onnx/1/model.onnx" "$REPO/flat_image/1/"
	sed -e 's/densenet_onnx/flat_image/' -e 's/dims: \[ 3, 224, 224 \]/dims: [ 3, 50176 ]/' \
		"$REPO/densenet_onnx/config.pbtxt" > "$REPO/flat_image/config.pbtxt"
	# add_sub_auto, no config: INPUT0/INPUT1 [N,16] -> sum, difference:
	# every first dim variable, so it can batch.
	mkdir -p "$REPO/add_sub_auto/1" "$REPO/add_sub_cpu/1"
	"$PY" - "$REPO/add_sub_auto/1/model.onnx" <<'PYEOF'
import sys, onnx
from onnx import TensorProto as T, helper as h
io = lambda n: h.make_tensor_value_info(n, T.FLOAT, ["N", 16])
g = h.make_graph([h.make_node("Add", ["INPUT0", "INPUT1"], ["OUTPUT0"]),
                  h.make_node("Sub", ["INPUT0", "INPUT1"], ["OUTPUT1"])], "add_sub",
                 [io("INPUT0"), io("INPUT1")], [io("OUTPUT0"), io("OUTPUT1")])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), sys.argv[1])
PYEOF
	cp "$REPO/add_sub_auto/1/model.onnx" "$REPO/add_sub_cpu/1/"
	printf 'instance_group [ { kind: KIND_CPU } ]\n' > "$REPO/add_sub_cpu/config.pbtxt"
	# Triton's qa/L0_initializer_as_input: OUTPUT = INPUT + INITIALIZER,
	# INITIALIZER a [5,5] initializer of ones that the graph also lists
	# among its inputs; its config (Triton's) makes it an optional input.
	mkdir -p "$REPO/add_with_initializer/1" "$REPO/initializer_required/1"
	"$PY" - "$REPO/add_with_initializer/1/model.onnx" <<'PYEOF'
import sys, numpy as np, onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh
io = lambda n: h.make_tensor_value_info(n, T.FLOAT, [5, 5])
g = h.make_graph([h.make_node("Add", ["INPUT", "INITIALIZER"], ["OUTPUT"])], "init_input",
                 [io("INPUT"), io("INITIALIZER")], [io("OUTPUT")],
                 [nh.from_array(np.ones((5, 5), np.float32), "INITIALIZER")])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), sys.argv[1])
PYEOF
	cat > "$REPO/add_with_initializer/config.pbtxt" <<'EOF'
platform: "onnxruntime_onnx"
max_batch_size: 0
input [
  {
    name: "INPUT"
    data_type: TYPE_FP32
    dims: [5, 5]
  },
  {
    name: "INITIALIZER"
    data_type: TYPE_FP32
    dims: [5, 5]
    optional: true
  }
]
output [
  {
    name: "OUTPUT"
    data_type: TYPE_FP32
    dims: [ 5, 5]
  }
]
EOF
	# The same without optional: true, which Triton refuses.
	cp "$REPO/add_with_initializer/1/model.onnx" "$REPO/initializer_required/1/"
	grep -v 'optional: true' "$REPO/add_with_initializer/config.pbtxt" \
		> "$REPO/initializer_required/config.pbtxt"
}
use_shared_mount own

# image C: a [3,224,224] .npy, channel C bright (1), the others 0.
image() {
	"$PY" -c "import numpy as np; a = np.zeros((3,224,224), np.float32); a[$1] = 1; np.save('$2', a)"
}

@test "Triton's densenet_onnx config loads unchanged and answers with its labels" {
	grep -q '^READY' "$MNT/densenet_onnx/status"
	run "$PY" -c "import json; c = json.load(open('$MNT/densenet_onnx/config.json')); i = c['input'][0]
print(i['format'], i['dims'], c['output'][0]['label_filename'])"
	[ "$output" = "FORMAT_NCHW [3, 224, 224] densenet_labels.txt" ]
	run "$PY" -c "import json; i = json.load(open('$MNT/densenet_onnx/metadata.json'))['inputs'][0]
print(i['format'], i['shape'])"
	[ "$output" = "FORMAT_NCHW [3, 224, 224]" ]
	req=$(new_request densenet_onnx)
	image 0 "$T/red.npy"
	cp "$T/red.npy" "$req/data_0.npy"
	[ "$(awk '{ print $2, $3 }' "$req/fc6_1.top2.txt")" = "$(printf '999 label_999\n998 label_998')" ]
	rm -r "$req"
	req=$(new_request densenet_onnx)
	image 1 "$T/green.npy"
	cp "$T/green.npy" "$req/data_0.npy"
	[ "$(awk '{ print $3 }' "$req/fc6_1.top1.txt")" = label_0 ]
	rm -r "$req"
}

@test "an image format needs 3 dims after the batch dim (Triton's rule and words)" {
	grep -q '^UNAVAILABLE' "$MNT/flat_image/status"
	grep -qF "input 'data_0': model input NHWC/NCHW require 3 dims (format FORMAT_NCHW, dims [3,50176])" \
		"$MNT/flat_image/status"
}

@test "auto-complete as Triton's ONNX Runtime backend: max_batch_size 4, dynamic batching, two CPU instances" {
	run "$PY" -c "import json; c = json.load(open('$MNT/add_sub_auto/config.json'))
print(c['max_batch_size'], 'dynamic_batching' in c, c['input'][0]['dims'], c['instance_group'][0]['count'])"
	[ "$output" = "4 True [16] 1" ]
	run "$PY" -c "import json; c = json.load(open('$MNT/add_sub_cpu/config.json'))
print(c['instance_group'][0]['kind'], c['instance_group'][0]['count'])"
	[ "$output" = "KIND_CPU 2" ]
	# A batch of 4 is served, 5 is past max_batch_size.
	req=$(new_request add_sub_auto)
	"$PY" -c "import numpy as np; np.save('$T/x4.npy', np.ones((4,16), np.float32)); np.save('$T/x5.npy', np.ones((5,16), np.float32))"
	cp "$T/x4.npy" "$req/INPUT0.npy"
	cp "$T/x4.npy" "$req/INPUT1.npy"
	"$PY" -c "import numpy as np; assert (np.load('$req/OUTPUT0.npy') == 2).all()"
	rm -r "$req"
	req=$(new_request add_sub_auto)
	! cp "$T/x5.npy" "$req/INPUT0.npy" 2>/dev/null
	grep -q "batch of 5 exceeds max_batch_size 4" "$req/error"
	rm -r "$req"
}

# The option, in each of its forms: the daemon's flag, -o, modelfs run.
@test "--backend-config=onnxruntime,default-max-batch-size=N: the daemon, -o and modelfs run" {
	local mnt2="$T/mnt2" out
	mkdir "$mnt2"
	"$MODELFS" -f --backend-config=onnxruntime,default-max-batch-size=0 "$REPO" "$mnt2" 2>"$T/d1.log" 3>&- &
	local pid=$!
	wait_until 15 mountpoint -q "$mnt2"
	MNT=$mnt2 wait_loaded 60
	run "$PY" -c "import json; print(json.load(open('$mnt2/add_sub_auto/config.json'))['max_batch_size'])"
	fusermount3 -u "$mnt2"
	wait "$pid"
	[ "$output" = 0 ]
	"$MODELFS" -f -o backend_config=default-max-batch-size=8 "$REPO" "$mnt2" 2>"$T/d2.log" 3>&- &
	pid=$!
	wait_until 15 mountpoint -q "$mnt2"
	MNT=$mnt2 wait_loaded 60
	run "$PY" -c "import json; print(json.load(open('$mnt2/add_sub_auto/config.json'))['max_batch_size'])"
	fusermount3 -u "$mnt2"
	wait "$pid"
	[ "$output" = 8 ]
	# modelfs run: a batch of 5 is refused at 4, served at 8.
	"$PY" -c "import numpy as np; np.save('$T/x5.npy', np.ones((5,16), np.float32))"
	run "$MODELFS" run "$REPO/add_sub_auto" INPUT0="$T/x5.npy" INPUT1="$T/x5.npy" --out "$T/o"
	[ "$status" -eq 1 ]
	[[ "$output" == *"batch of 5 exceeds max_batch_size 4"* ]]
	"$MODELFS" run --backend-config=onnxruntime,default-max-batch-size=8 "$REPO/add_sub_auto" \
		INPUT0="$T/x5.npy" INPUT1="$T/x5.npy" --out "$T/o"
	[ -f "$T/o/OUTPUT0.npy" ]
	run "$MODELFS" run --backend-config=tensorflow,default-max-batch-size=8 "$REPO/add_sub_auto"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--backend-config: expected [onnxruntime,]default-max-batch-size=N"* ]]
}

# infer MODEL JSON: the response of one KServe v2 request through infer.
infer() {
	exec 7<>"$MNT/$1/infer"
	printf '%s' "$2" >&7
	cat <&7
	exec 7>&-
}

# KServe v2 JSON of a [5,5] FP32 input NAME, every element V.
fill55() { printf '{"name":"%s","shape":[5,5],"datatype":"FP32","data":[%s]}' "$1" "$(yes "$2" | head -25 | paste -sd,)"; }

@test "Triton's L0_initializer_as_input: fed, the initializer is overridden; left out, its stored value is used" {
	grep -q '^READY' "$MNT/add_with_initializer/status"
	run "$PY" -c "import json; c = json.load(open('$MNT/add_with_initializer/config.json'))
print([(i['name'], i['optional'], i['dims']) for i in c['input']])"
	[ "$output" = "[('INPUT', False, [5, 5]), ('INITIALIZER', True, [5, 5])]" ]
	"$PY" -c "import numpy as np; np.save('$T/three.npy', np.full((5,5), 3, np.float32)); np.save('$T/two.npy', np.full((5,5), 2, np.float32))"
	# A request directory: the required input alone runs with the stored ones.
	req=$(new_request add_with_initializer)
	cp "$T/three.npy" "$req/INPUT.npy"
	"$PY" -c "import numpy as np; o = np.load('$req/OUTPUT.npy'); assert o.shape == (5,5) and (o == 4).all(), o"
	rm -r "$req"
	# The optional one first, then the required one: the fed value counts.
	req=$(new_request add_with_initializer)
	cp "$T/two.npy" "$req/INITIALIZER.npy"
	cp "$T/three.npy" "$req/INPUT.npy"
	"$PY" -c "import numpy as np; o = np.load('$req/OUTPUT.npy'); assert (o == 5).all(), o"
	rm -r "$req"
	# infer, as Triton's test does it: without, then with the initializer.
	resp=$(infer add_with_initializer "{\"inputs\":[$(fill55 INPUT 0)]}")
	"$PY" -c "import json,sys; o = json.loads(sys.argv[1])['outputs'][0]; assert o['data'] == [1.0]*25, o" "$resp"
	resp=$(infer add_with_initializer "{\"inputs\":[$(fill55 INPUT 0),$(fill55 INITIALIZER 0)]}")
	"$PY" -c "import json,sys; o = json.loads(sys.argv[1])['outputs'][0]; assert o['data'] == [0.0]*25, o" "$resp"
	# A wrong shape for it is refused as for any input.
	resp=$(infer add_with_initializer "{\"inputs\":[$(fill55 INPUT 0),{\"name\":\"INITIALIZER\",\"shape\":[3],\"datatype\":\"FP32\",\"data\":[1,2,3]}]}")
	[[ "$resp" == *INITIALIZER* ]]
	[[ "$resp" == *error* ]]
	# modelfs run leaves it out the same way.
	"$MODELFS" run "$REPO/add_with_initializer" INPUT="$T/three.npy" --out "$T/o"
	"$PY" -c "import numpy as np; assert (np.load('$T/o/OUTPUT.npy') == 4).all()"
}

@test "an initializer listed as an input without optional: true is refused (Triton's rule)" {
	grep -q '^UNAVAILABLE' "$MNT/initializer_required/status"
	grep -qF "input 'INITIALIZER' is an initializer of the graph: it may be an input only with optional: true" \
		"$MNT/initializer_required/status"
}

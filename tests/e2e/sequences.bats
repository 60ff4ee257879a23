#!/usr/bin/env bats
# Sequences and optionals through the mount and `modelfs run` (SPEC.md
# section 6, "Sequences and optionals"): ONNX backend test models and one
# built here with a required and an optional input.

load helpers

D=/usr/share/libonnx-testdata/data

make_shared_repo() {
	REPO=$(mktemp -d "${BATS_RUN_TMPDIR:-/tmp}/seqrepo.XXXXXX")
	local m
	for m in node/test_identity_sequence node/test_sequence_insert_at_front \
		 simple/test_sequence_model6; do
		mkdir -p "$REPO/${m##*/test_}/1"
		cp "$D/$m/model.onnx" "$REPO/${m##*/test_}/1/model.onnx"
	done
	# has = OptionalHasElement(o); y = Identity(x): x required, o optional
	mkdir -p "$REPO/opt/1"
	"$PY" - "$REPO/opt/1/model.onnx" <<'PYEOF'
import sys
from onnx import TensorProto, helper, save
opt = helper.make_tensor_type_proto(TensorProto.FLOAT, None)
graph = helper.make_graph(
    [helper.make_node("OptionalHasElement", ["o"], ["has"]),
     helper.make_node("Identity", ["x"], ["y"])], "g",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
     helper.make_value_info("o", helper.make_optional_type_proto(opt))],
    [helper.make_tensor_value_info("has", TensorProto.BOOL, []),
     helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), sys.argv[1])
PYEOF
}
use_shared_mount own

# same_value KIND GOT WANT: the two .pb files hold the same value
same_value() {
	"$PY" - "$@" <<'PYEOF'
import sys
import numpy as np
import onnx
from onnx import numpy_helper
kind, got, want = sys.argv[1:4]
def read(path):
    msg = {"seq": onnx.SequenceProto, "tensor": onnx.TensorProto}[kind]()
    msg.ParseFromString(open(path, "rb").read())
    return numpy_helper.to_list(msg) if kind == "seq" else [numpy_helper.to_array(msg)]
g, w = read(got), read(want)
assert len(g) == len(w), (len(g), len(w))
for a, b in zip(g, w):
    assert a.dtype == b.dtype and a.shape == b.shape and np.allclose(a, b), (a, b)
print("same")
PYEOF
}

@test "a sequence input and output through a request directory (.pb)" {
	req=$(new_request identity_sequence)
	cp "$D/node/test_identity_sequence/test_data_set_0/input_0.pb" "$req/x.pb"
	cat "$req/y.pb" > "$T/y.pb"
	run same_value seq "$T/y.pb" "$D/node/test_identity_sequence/test_data_set_0/output_0.pb"
	[ "$output" = same ]
	run cat "$req/y.npy"
	[ "$status" -ne 0 ]
	grep -q "'y' is a sequence(.*): its file is y.pb" "$req/error"
	# a sequence has no .npy form: the open fails, error says what to write
	req=$(new_request identity_sequence)
	run bash -c "echo x > '$req/x.npy'"
	[ "$status" -ne 0 ]
	[[ "$output" == *"No such file or directory"* ]]
	grep -q "'x' is a sequence(.*): its file is x.pb (an ONNX SequenceProto)" "$req/error"
	# status: the CPU engine, and why
	grep -q "sequences and optionals run on the CPU engine only" "$MNT/identity_sequence/status"
}

@test "sequence operators with tensor inputs and outputs, and a sequence plus tensors" {
	req=$(new_request sequence_model6)
	cp "$D/simple/test_sequence_model6/test_data_set_0/input_0.pb" "$req/X.pb"
	cat "$req/$(ls "$req" | grep -v '^X\|error\|status\|trace' | head -1)" > "$T/out.pb"
	run same_value tensor "$T/out.pb" "$D/simple/test_sequence_model6/test_data_set_0/output_0.pb"
	[ "$output" = same ]
	req=$(new_request sequence_insert_at_front)
	for k in 0 1 2; do
		name=$(cd "$D/node/test_sequence_insert_at_front" && "$PY" -c "import onnx; print(onnx.load('model.onnx').graph.input[$k].name)")
		cp "$D/node/test_sequence_insert_at_front/test_data_set_0/input_$k.pb" "$req/$name.pb"
	done
	out=$("$PY" -c "import onnx; print(onnx.load('$D/node/test_sequence_insert_at_front/model.onnx').graph.output[0].name)")
	cat "$req/$out.pb" > "$T/s.pb"
	run same_value seq "$T/s.pb" "$D/node/test_sequence_insert_at_front/test_data_set_0/output_0.pb"
	[ "$output" = same ]
}

@test "an optional input left absent, given empty, given a value; through infer too" {
	printf '1 2' > "$T/x.txt"
	req=$(new_request opt)
	cp "$T/x.txt" "$req/x.txt"            # o left out: runs without it
	[ "$(cat "$req/has.txt")" = 0 ]
	[ "$(cat "$req/y.txt")" = "1 2" ]
	: > "$req/o.txt"                       # an empty file: no value
	cp "$T/x.txt" "$req/x.txt"
	[ "$(cat "$req/has.txt")" = 0 ]
	echo 5 > "$req/o.txt"                  # its value
	cp "$T/x.txt" "$req/x.txt"
	[ "$(cat "$req/has.txt")" = 1 ]
	for o in '' ',{"name":"o","shape":[1],"datatype":"FP32","data":[5]}'; do
		exec 7<>"$MNT/opt/infer"
		printf '{"inputs":[{"name":"x","shape":[2],"datatype":"FP32","data":[1,2]}%s]}' "$o" >&7
		resp=$(cat <&7)
		exec 7>&-
		run "$PY" -c "
import json, sys; r = json.loads(sys.argv[1]); o = {t['name']: t for t in r['outputs']}
assert o['has']['data'] == [bool(sys.argv[2])], r
print('ok')" "$resp" "$o"
		[ "$output" = ok ]
	done
	# a sequence in the infer file is refused in words
	exec 7<>"$MNT/identity_sequence/infer"
	printf '{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]}]}' >&7
	resp=$(cat <&7 || true)
	exec 7>&-
	[[ "$resp" == *"input 'x' is a sequence: the infer file carries tensors only"* ]]
}

@test "modelfs run passes the sequence and optional backend cases" {
	run "$PY" "$TOP/tests/e2e/run_backend_cases.py" "$MODELFS" "$D" \
		"$TOP/tests/e2e/sequence-cases.txt"
	[ "$status" -eq 0 ]
	[[ "$output" == *"32 passed, 0 failed"* ]]
}

@test "modelfs run: a sequence input as a directory of tensor files, the output as one" {
	mkdir -p "$T/repo" "$T/seq"
	cp -r "$REPO/identity_sequence" "$T/repo/"
	printf '1 2 3' > "$T/seq/0.txt"
	printf '4' > "$T/seq/1.txt"
	run "$MODELFS" run "$T/repo/identity_sequence" x="$T/seq" --out "$T/out"
	[ "$status" -eq 0 ]
	[ "$(cat "$T/out/y/0.txt")" = "1 2 3" ]
	[ "$(cat "$T/out/y/1.txt")" = "4" ]
	[ ! -e "$T/out/y/2.txt" ]
	printf '5' > "$T/seq/3.txt"            # a gap: 2 is missing
	run "$MODELFS" run "$T/repo/identity_sequence" x="$T/seq" --out "$T/out"
	[ "$status" -eq 1 ]
	[[ "$output" == *"tensor 2 is missing (2.EXT)"* ]]
}

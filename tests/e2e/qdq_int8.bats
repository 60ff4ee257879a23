#!/usr/bin/env bats
# A static-QDQ INT8 model (tests/models/make_qdq_small.py: the form ONNX
# Runtime's quantize_static writes) through a real mount: the engine runs
# it on its integer kernels (exec/graph/rewrite_qdq.c) and the answer is
# ONNX Runtime 1.30's output on the same model and input
# (tests/models/qdq_small_ort.npy) within an int8 tolerance: 0.05 absolute
# on logits of about +-1.3, i.e. about two steps (0.01) of the last
# quantized activation carried through the final Gemm's weights (the
# integer kernels and ONNX Runtime round a requantization differently
# only where a value falls on a .5 boundary), and the same arg-max.

load helpers

make_shared_repo() {
	REPO=$(mktemp -d "${BATS_RUN_TMPDIR:-/tmp}/repo.XXXXXX")
	"$PY" "$TOP/tests/models/make_qdq_small.py" "$REPO"
}

use_shared_mount own

@test "QDQ INT8 model: output within int8 tolerance of ONNX Runtime's" {
	req=$(new_request qdq_small)
	cp "$REPO/input.npy" "$req/x.npy"
	run "$PY" - "$req/y.npy" "$TOP/tests/models/qdq_small_ort.npy" <<'PYEOF'
import sys
import numpy as np
got, want = np.load(sys.argv[1]), np.load(sys.argv[2])
assert got.shape == want.shape == (1, 10), (got.shape, want.shape)
d = float(np.abs(got - want).max())
assert d <= 0.05, "max abs difference %g" % d
assert got.argmax() == want.argmax()
print("ok %g" % d)
PYEOF
	echo "$output"
	[[ "$output" == "ok "* ]]
	[ "$(cat "$req/status")" = "DONE" ]
}

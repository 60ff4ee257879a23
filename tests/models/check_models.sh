#!/bin/sh
# check_models.sh - `modelfs run` against PyTorch on real models.
#
# Usage: check_models.sh [MODEL... | all]
#   no argument: the quick set that `make check-models` and `make test`
#   run: ResNet-18, MobileNetV2, the 4-layer encoder (opset 13), and the
#   BERT-like and GPT-2-like models at opset 17 (masks, LayerNormalization;
#   cheap to export).  ResNet-50 and the other opset variants cost ~3 min
#   of export on two cores: docs/PERFORMANCE.md has the measurements;
#   all: every model of export_models.py at opsets 13 and 17 (ResNet-18/50,
#   MobileNetV2, encoder, BERT-like with attention mask, GPT-2-like decoder;
#   `make check-models-all`), and the control-flow exports of
#   torch.jit.script: greedy (a GPT-2-like greedy decoder, a Loop over
#   tokens) and branch (an If).
#
# For each model, run the reference input through `modelfs run` and
# compare every output with PyTorch's: max|diff| <= 1e-3 * max|ref|
# (1e-2 for <model>_fp16: weights, input and every intermediate value are
# rounded to FP16 by modelfs, ~5e-4 relative each, while the reference
# keeps FP32 activations; see export_models.py).
# The transformers must also run with their LayerNorm, GELU, attention
# and linear layers rewritten (LayerNormalization, Attention and Dense
# nodes; no ReduceMean, Sqrt, Pow, Erf, Tanh or Softmax left):
# MFS_PROFILE's per-operator lines say.
# Prints one line per model and exits non-zero if any model fails.  A model
# is exported first when it is missing or older than the export script
# (each has its own stamp, so the quick set never waits for the large ones).
#
# Environment: MODELFS (default ./modelfs), MODELS_DIR (default
# build/models), PYTHON (default /usr/bin/python3, which has torch).
MODELFS=${MODELFS:-./modelfs}
DIR=${MODELS_DIR:-build/models}
PY=${PYTHON:-/usr/bin/python3}
HERE=$(dirname "$0")
QUICK="resnet18 mobilenet_v2 encoder bert_op17 gpt2_op17 resnet18_fp16"
BASE="resnet18 mobilenet_v2 encoder resnet50 bert gpt2"

if [ $# -eq 0 ]; then
	MODELS=$QUICK
elif [ "$*" = all ]; then
	MODELS="$BASE $(for m in $BASE; do printf '%s_op17 ' "$m"; done)greedy branch"
else
	MODELS="$*"
fi

stale=
for m in $MODELS; do
	if [ ! -f "$DIR/$m/ref/stamp" ] || [ "$HERE/export_models.py" -nt "$DIR/$m/ref/stamp" ]; then
		stale="$stale $m"
	fi
done
if [ -n "$stale" ]; then
	echo "exporting$stale into $DIR ..."
	mkdir -p "$DIR"
	t0=$(date +%s)
	for m in $stale; do rm -rf "${DIR:?}/$m"; done
	# shellcheck disable=SC2086
	"$PY" "$HERE/export_models.py" "$DIR" $stale >"$DIR.export.log" 2>&1 ||
		{ cat "$DIR.export.log"; echo "check-models: export failed"; exit 1; }
	grep -E '^[a-z0-9_]+ +[0-9.]+ s' "$DIR.export.log"
	for m in $stale; do touch "$DIR/$m/ref/stamp"; done
	echo "export took $(( $(date +%s) - t0 )) s"
fi

failed=0
for m in $MODELS; do
	out=$(mktemp -d)
	set --
	for f in "$DIR/$m/ref/inputs/"*.npy; do
		set -- "$@" "$(basename "$f" .npy)=$f"
	done
	t0=$(date +%s.%N)
	# An empty --cache-dir: KIND_AUTO times the engines (more than one
	# run, so MFS_PROFILE reports) instead of reusing a stored choice.
	if ! msg=$(MFS_PROFILE=1 "$MODELFS" run --cache-dir "$out/cache" --log-level info \
			"$DIR/$m" "$@" --out "$out" 2>&1); then
		printf '%-17s FAIL: modelfs run: %s\n' "$m" "$(printf '%s' "$msg" | tail -1)"
		failed=$((failed + 1))
		rm -rf "$out"
		continue
	fi
	t1=$(date +%s.%N)
	# The transformer rewrites (exec/graph/rewrite_*.c) must fire on the real
	# exports at every opset: the profile lists the operators that ran.
	case ${MFS_FUSE:-1}:$m in 0:*) ;; *:encoder*|*:bert*|*:gpt2*)
		ops=$(printf '%s\n' "$msg" | sed -n "s/.*profile '[^']*': \([A-Za-z]*\) .* nodes .*/\1/p")
		left=$(printf '%s\n' "$ops" | grep -xE 'ReduceMean|Sqrt|Pow|Erf|Tanh|Softmax' | tr '\n' ' ')
		for want in Dense LayerNormalization Attention; do
			printf '%s\n' "$ops" | grep -qx "$want" || left="$left(no $want) "
		done
		if [ -n "$left" ]; then
			printf '%-17s FAIL: not rewritten: %s\n' "$m" "$left"
			failed=$((failed + 1))
		fi
	esac
	"$PY" - "$m" "$DIR/$m/ref/expected" "$out" "$t0" "$t1" <<'PYEOF' || failed=$((failed + 1))
import os, sys
import numpy as np
model, ref_dir, out_dir, t0, t1 = sys.argv[1:]
ok = True
for f in sorted(os.listdir(ref_dir)):
    ref = np.load(os.path.join(ref_dir, f))
    path = os.path.join(out_dir, f)
    if not os.path.exists(path):
        print("%-17s FAIL: no output %s" % (model, f))
        ok = False
        continue
    got = np.load(path)
    if got.shape != ref.shape or got.dtype != ref.dtype:
        print("%-17s FAIL: %s is %s %s, expected %s %s"
              % (model, f, got.dtype, got.shape, ref.dtype, ref.shape))
        ok = False
        continue
    diff = float(np.max(np.abs(got.astype(np.float64) - ref))) if ref.size else 0.0
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    tol = 1e-2 if model.endswith("_fp16") else 1e-3
    # A reference that is all (near) zero proves nothing: fail it.
    good = bool(np.isfinite(diff)) and diff <= tol * scale and scale > 1e-2
    ok = ok and good
    print("%-17s %-8s max|diff| %.3g  max|ref| %.3g  (limit %.3g)  run %.2f s  %s"
          % (model, f[:-4], diff, scale, tol * scale, float(t1) - float(t0),
             "PASS" if good else "FAIL"))
sys.exit(0 if ok else 1)
PYEOF
	rm -rf "$out"
done
total=$(echo $MODELS | wc -w)
echo "check-models: $((total - failed)) of $total models passed"
[ "$failed" -eq 0 ]

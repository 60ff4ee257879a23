#!/bin/sh
# check_models.sh - `modelfs run` against PyTorch on real models.
#
# For each model exported by export_models.py (ResNet-18, MobileNetV2, a
# 4-layer transformer encoder), run the reference input through
# `modelfs run` and compare every output with PyTorch's:
# max|diff| <= 1e-3 * max|ref|.  Prints one line per model and exits
# non-zero if any model fails.  Exports the models first when they are
# missing or older than the export script (about 30 s).
#
# Environment: MODELFS (default ./modelfs), MODELS_DIR (default
# build/models), PYTHON (default /usr/bin/python3, which has torch).
MODELFS=${MODELFS:-./modelfs}
DIR=${MODELS_DIR:-build/models}
PY=${PYTHON:-/usr/bin/python3}
HERE=$(dirname "$0")
MODELS="resnet18 mobilenet_v2 encoder"

stamp=$DIR.stamp
if [ ! -f "$stamp" ] || [ "$HERE/export_models.py" -nt "$stamp" ]; then
	echo "exporting models into $DIR ..."
	t0=$(date +%s)
	rm -rf "$DIR"
	"$PY" "$HERE/export_models.py" "$DIR" 2>"$DIR.export.log" ||
		{ cat "$DIR.export.log"; echo "check-models: export failed"; exit 1; }
	echo "export took $(( $(date +%s) - t0 )) s"
	touch "$stamp"
fi

failed=0
for m in $MODELS; do
	out=$(mktemp -d)
	set --
	for f in "$DIR/$m/ref/inputs/"*.npy; do
		set -- "$@" "$(basename "$f" .npy)=$f"
	done
	t0=$(date +%s.%N)
	if ! msg=$("$MODELFS" run "$DIR/$m" "$@" --out "$out" 2>&1); then
		printf '%-13s FAIL: modelfs run: %s\n' "$m" "$(printf '%s' "$msg" | tail -1)"
		failed=$((failed + 1))
		rm -rf "$out"
		continue
	fi
	t1=$(date +%s.%N)
	"$PY" - "$m" "$DIR/$m/ref/expected" "$out" "$t0" "$t1" <<'PYEOF' || failed=$((failed + 1))
import os, sys
import numpy as np
model, ref_dir, out_dir, t0, t1 = sys.argv[1:]
ok = True
for f in sorted(os.listdir(ref_dir)):
    ref = np.load(os.path.join(ref_dir, f))
    path = os.path.join(out_dir, f)
    if not os.path.exists(path):
        print("%-13s FAIL: no output %s" % (model, f))
        ok = False
        continue
    got = np.load(path)
    if got.shape != ref.shape or got.dtype != ref.dtype:
        print("%-13s FAIL: %s is %s %s, expected %s %s"
              % (model, f, got.dtype, got.shape, ref.dtype, ref.shape))
        ok = False
        continue
    diff = float(np.max(np.abs(got.astype(np.float64) - ref))) if ref.size else 0.0
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    good = bool(np.isfinite(diff)) and diff <= 1e-3 * scale
    ok = ok and good
    print("%-13s %-18s max|diff| %.3g  max|ref| %.3g  (limit %.3g)  run %.2f s  %s"
          % (model, f[:-4], diff, scale, 1e-3 * scale, float(t1) - float(t0),
             "PASS" if good else "FAIL"))
sys.exit(0 if ok else 1)
PYEOF
	rm -rf "$out"
done
total=$(echo $MODELS | wc -w)
echo "check-models: $((total - failed)) of $total models passed"
[ "$failed" -eq 0 ]

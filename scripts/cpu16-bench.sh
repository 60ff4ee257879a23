#!/bin/bash
# cpu16-bench.sh - the CPU engine against ONNX Runtime on the device
# tool's 16-core host (its python3 has onnxruntime 1.30 and torch): the
# same exports as gpu-bench.sh (ResNet-50, the 4-layer encoder), batch 1
# and 32, modelfs's bench_engine and ONNX Runtime each at every core.
# Carry the binaries as gpu-bench.sh does:
#   sh scripts/gpu-carry.sh    (here)   then, through the device tool,
#   bash scripts/cpu16-bench.sh [CARRY_DIR]        (default .gpu)
# Prints a markdown table (also $OUT/cpu16.md when OUT is set).
set -u
CARRY=$(cd "${1:-.gpu}" && pwd)
TOP=$(cd "$(dirname "$0")/.." && pwd)
W=/tmp/mfs-cpu16
R=${OUT:-$W/out}
PY=${PYTHON:-python3}
mkdir -p "$W" "$R"
tar xzf "$CARRY/lib.tgz" -C "$W"
BENCH="$CARRY/bin/bench_engine"
THREADS=${THREADS:-$(nproc)}
# bench_engine takes the daemon's OpenMP wait policy (exec/runtime/openmp_policy.h)
run_engine() { LD_LIBRARY_PATH="$W/lib" "$BENCH" "$@"; }
field() { sed -n "s/.*\"$1\": *\([0-9.]*\).*/\1/p"; }

# TV_MODELS="regnet_y_400mf googlenet ...": also these torchvision models
# (scripts/export_torchvision.py, when the host's python3 has
# torchvision), their rows named tv/NAME; MODELS="" leaves out the others.
if [ -n "${TV_MODELS:-}" ]; then
	# shellcheck disable=SC2086
	"$PY" "$TOP/scripts/export_torchvision.py" "$W/tv" $TV_MODELS >&2 || exit 1
fi
if [ -n "${MODELS-resnet50 encoder}" ]; then
	"$PY" "$TOP/bench/torch_bench.py" export "$W/models" >&2 || exit 1
fi
row() { # label path batch
	iters=20; [ "$3" = 32 ] && iters=8
	desc=$(run_engine --describe "$2" --batch "$3")
	me=$(run_engine "$2" --batch "$3" --iters "$iters" --threads "$THREADS" | field median_ms)
	o=$("$PY" "$TOP/bench/ort_bench.py" "$2" "$desc" "$iters" "$THREADS" | field median_ms)
	echo "| $1 | $3 | $me | $o | $(echo "$o $me" | awk '{ if ($2 > 0) printf "%.2f", $1/$2; else print "-" }') |"
}
{
echo "CPU engine vs ONNX Runtime $("$PY" -c 'import onnxruntime; print(onnxruntime.__version__)'), $THREADS threads, $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')); median ms"
echo
echo "| model | batch | modelfs | ONNX Runtime | ort/modelfs |"
echo "| --- | ---: | ---: | ---: | ---: |"
for m in ${MODELS-resnet50 encoder}; do
	for b in ${BATCHES:-1 32}; do
		row "$m" "$W/models/$m/1/model.onnx" "$b"
	done
done
for m in ${TV_MODELS:-}; do
	for b in ${BATCHES:-1 32}; do
		# a model without a batch dim (max_batch_size 0: SSDlite) at batch 1 only
		grep -q 'max_batch_size: 0' "$W/tv/$m/config.pbtxt" && [ "$b" != 1 ] && continue
		row "tv/$m" "$W/tv/$m/1/model.onnx" "$b"
	done
done
} | tee "$R/cpu16.md"

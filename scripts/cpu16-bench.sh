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

"$PY" "$TOP/bench/torch_bench.py" export "$W/models" >&2 || exit 1
{
echo "CPU engine vs ONNX Runtime $("$PY" -c 'import onnxruntime; print(onnxruntime.__version__)'), $THREADS threads, $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')); median ms"
echo
echo "| model | batch | modelfs | ONNX Runtime | ort/modelfs |"
echo "| --- | ---: | ---: | ---: | ---: |"
for m in ${MODELS:-resnet50 encoder}; do
	for b in ${BATCHES:-1 32}; do
		path="$W/models/$m/1/model.onnx"
		iters=20; [ "$b" = 32 ] && iters=8
		desc=$(run_engine --describe "$path" --batch "$b")
		me=$(run_engine "$path" --batch "$b" --iters "$iters" --threads "$THREADS" | field median_ms)
		o=$("$PY" "$TOP/bench/ort_bench.py" "$path" "$desc" "$iters" "$THREADS" | field median_ms)
		echo "| $m | $b | $me | $o | $(echo "$o $me" | awk '{ if ($2 > 0) printf "%.2f", $1/$2; else print "-" }') |"
	done
done
} | tee "$R/cpu16.md"

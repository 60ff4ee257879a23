#!/bin/sh
# make bench: time the modelfs engine against ONNX Runtime 1.30 (CPU) and
# raw OpenBLAS in the same run, on this machine, and print the ratios.
# OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE are unset here only (NOTES.md): they
# pin OpenBLAS to a slower kernel that tests need and benchmarks must not.
set -e
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
# The daemon runs OpenMP passive unless told otherwise (src/cli/main.c): the
# bench tool measures the same configuration.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
THREADS=${BENCH_THREADS:-2}
ITERS=${BENCH_ITERS:-20}
ENGINE=build/bench/bench_engine
[ -d bench/node_modules/onnxruntime-node ] || (cd bench && npm install --ignore-scripts --no-audit --no-fund >/dev/null)
/usr/bin/python3 bench/make_bench_models.py build/bench-models >/dev/null
/usr/bin/python3 tests/models/export_models.py build/models >/dev/null

field() { sed -n "s/.*\"$1\": *\([0-9.]*\).*/\1/p"; }

echo "modelfs engine vs ONNX Runtime 1.30 CPU and raw OpenBLAS; $THREADS threads, median of $ITERS runs"
echo "$(uname -m), $(nproc) cores, $(date -u +%Y-%m-%d)"
printf '%-24s %6s %12s %12s %10s\n' model batch modelfs_ms ort_ms ort/modelfs

bench_model() { # label path batch
	desc=$($ENGINE --describe "$2" --batch "$3")
	m=$($ENGINE "$2" --batch "$3" --iters "$ITERS" --threads "$THREADS" | field median_ms)
	o=$(node bench/ort_bench.js "$2" "$desc" "$ITERS" "$THREADS" | field median_ms)
	printf '%-24s %6s %12s %12s %10s\n' "$1" "$3" "$m" "$o" "$(echo "$o $m" | awk '{printf "%.2f", $1/$2}')"
}

bench_model mlp examples/mlp/1/model.onnx 1
bench_model mlp examples/mlp/1/model.onnx 64
bench_model resnet18 build/models/resnet18/1/model.onnx 1
bench_model resnet50 build/bench-models/resnet50.onnx 1
bench_model mobilenetv2 build/models/mobilenet_v2/1/model.onnx 1
bench_model encoder build/models/encoder/1/model.onnx 1
bench_model bert_op17 build/models/bert_op17/1/model.onnx 1
bench_model gpt2_op17 build/models/gpt2_op17/1/model.onnx 1
bench_model matmul1024 build/bench-models/matmul1024.onnx 1

raw=$($ENGINE --sgemm 1024 --iters "$ITERS" --threads "$THREADS")
mm=$($ENGINE build/bench-models/matmul1024.onnx --iters "$ITERS" --threads "$THREADS" | field median_ms)
rawms=$(echo "$raw" | field median_ms)
echo "raw OpenBLAS sgemm 1024^3: $rawms ms ($(echo "$raw" | field gflops) GFLOP/s); modelfs MatMul 1024^3: $mm ms; openblas/modelfs $(echo "$rawms $mm" | awk '{printf "%.2f", $1/$2}')"

#!/bin/sh
# The INT8 rows of make bench (issue 33): static QDQ versions of a CNN
# (ResNet-18), an MLP and a transformer encoder, built now from the FP32
# exports as ONNX Runtime's quantize_static would (bench/make_qdq_models.py;
# the encoder's weight MatMuls only; encoder_dyn: quantize_dynamic's
# DynamicQuantizeLinear + MatMulInteger form), each timed in modelfs and in ONNX
# Runtime on the same QDQ file and in modelfs on the FP32 original, in
# turn, BENCH_ROUNDS times (the median of each side's medians).
# Columns: ort_qdq/qdq above 1: modelfs faster than ONNX Runtime on the
# QDQ model; fp32/qdq: how much faster the QDQ model runs than the FP32
# one in modelfs; rel_err: the largest difference from ONNX Runtime's
# output on the QDQ model over the spread (max - min) of that output, and
# whether every row's arg-max agrees (bench/qdq_accuracy.py).
set -e
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
THREADS=${BENCH_THREADS:-2}
ITERS=${BENCH_ITERS:-20}
ROUNDS=${BENCH_ROUNDS:-3}
ENGINE=build/bench/bench_engine
OUT=build/bench-models/qdq
mkdir -p "$OUT"
[ -d bench/node_modules/onnxruntime-node ] || (cd bench && npm install --ignore-scripts --no-audit --no-fund >/dev/null)

qdq() { # name fp32-path calibration-batch [make_qdq_models.py options]
	n=$1 src=$2 b=$3
	shift 3
	[ -f "$OUT/$n.onnx" ] && [ "$OUT/$n.onnx" -nt "$src" ] && return 0
	/usr/bin/python3 bench/make_qdq_models.py "$src" "$OUT/$n.onnx" --batch "$b" "$@" >/dev/null
}
qdq resnet18 build/models/resnet18/1/model.onnx 1
qdq mlp examples/mlp/1/model.onnx 32
qdq encoder build/models/encoder/1/model.onnx 1 --ops MatMul
qdq encoder_dyn build/models/encoder/1/model.onnx 1 --dynamic

field() { sed -n "s/.*\"$1\": *\([0-9.]*\).*/\1/p"; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { echo "$1 $2" | awk '{printf "%.2f", $1/$2}'; }

echo "INT8 (static QDQ) in modelfs vs ONNX Runtime on the same file, and modelfs on the FP32 original; $THREADS threads, median of $ROUNDS rounds' medians of $ITERS runs"
printf '%-10s %6s %10s %10s %12s %10s %9s %22s\n' model batch qdq_ms ort_qdq_ms ort_qdq/qdq fp32_ms fp32/qdq rel_err,top1
row() { # name fp32-path batch
	q=$OUT/$1.onnx
	desc=$($ENGINE --describe "$q" --batch "$3")
	ms= os= fs=
	i=0
	while [ "$i" -lt "$ROUNDS" ]; do
		ms="$ms $($ENGINE "$q" --batch "$3" --iters "$ITERS" --threads "$THREADS" | field median_ms)"
		os="$os $(node bench/ort_bench.js "$q" "$desc" "$ITERS" "$THREADS" | field median_ms)"
		fs="$fs $($ENGINE "$2" --batch "$3" --iters "$ITERS" --threads "$THREADS" | field median_ms)"
		i=$((i + 1))
	done
	m=$(echo $ms | tr ' ' '\n' | median)
	o=$(echo $os | tr ' ' '\n' | median)
	f=$(echo $fs | tr ' ' '\n' | median)
	acc=$(/usr/bin/python3 bench/qdq_accuracy.py "$q" --batch "$3" |
	      /usr/bin/python3 -c 'import json,sys; r=list(json.load(sys.stdin).values())[0]; print("%.2g,%s" % (r["rel_spread"], "yes" if r["top1_agree"] else "no"))')
	printf '%-10s %6s %10s %10s %12s %10s %9s %22s\n' "$1" "$3" "$m" "$o" "$(ratio "$o" "$m")" "$f" "$(ratio "$f" "$m")" "$acc"
}
row resnet18 build/models/resnet18/1/model.onnx 1
row mlp examples/mlp/1/model.onnx 32
row encoder build/models/encoder/1/model.onnx 1
row encoder_dyn build/models/encoder/1/model.onnx 1

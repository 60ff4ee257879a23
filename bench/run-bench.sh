#!/bin/sh
# make bench: time the modelfs engine against ONNX Runtime 1.30 (CPU) and
# raw OpenBLAS in the same run, on this machine, and print the ratios.
# OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE are unset here only (NOTES.md): they
# pin OpenBLAS to a slower kernel that tests need and benchmarks must not.
set -e
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
# bench_engine takes the daemon's OpenMP wait policy itself
# (exec/runtime/openmp_policy.h) unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set.
THREADS=${BENCH_THREADS:-2}
ITERS=${BENCH_ITERS:-20}
# Each row alternates modelfs and ONNX Runtime BENCH_ROUNDS times and
# reports the median of each side's medians: one burst of this shared
# VM's noise then skews one round, not the row (single rows moved 2x
# between runs minutes apart, docs/PERFORMANCE.md).
ROUNDS=${BENCH_ROUNDS:-3}
# BENCH_ENGINE=path: time another bench_engine build as modelfs.
ENGINE=${BENCH_ENGINE:-build/bench/bench_engine}
# BENCH_BASELINE=path/to/another/bench_engine adds its time and ratio in
# the same run (each model: baseline, modelfs, ONNX Runtime in turn), for
# a before/after that the machine's drift cannot skew.
BASE=${BENCH_BASELINE:-}
# The ratios as a chart beside the table (gnuplot; skipped without it).
CHART=${BENCH_CHART:-docs/bench-ratios.png}
DATA=$(mktemp)
trap 'rm -f "$DATA"' EXIT
[ -d bench/node_modules/onnxruntime-node ] || (cd bench && npm install --ignore-scripts --no-audit --no-fund >/dev/null)
/usr/bin/python3 bench/make_bench_models.py build/bench-models >/dev/null
missing=
for m in resnet18 mobilenet_v2 encoder bert_op17 gpt2_op17; do
	[ -f build/models/$m/1/model.onnx ] || missing="$missing $m"
done
# shellcheck disable=SC2086
[ -z "$missing" ] || /usr/bin/python3 tests/models/export_models.py build/models $missing >/dev/null

field() { sed -n "s/.*\"$1\": *\([0-9.]*\).*/\1/p"; }

echo "modelfs engine vs ONNX Runtime 1.30 CPU and raw OpenBLAS; $THREADS threads, median of $ROUNDS alternating rounds' medians of $ITERS runs"
echo "$(uname -m), $(nproc) cores, $(date -u +%Y-%m-%d)"
ratio() { echo "$1 $2" | awk '{printf "%.2f", $1/$2}'; }
if [ -n "$BASE" ]; then
	printf '%-24s %6s %12s %12s %10s %12s %10s\n' model batch modelfs_ms ort_ms ort/modelfs base_ms ort/base
else
	printf '%-24s %6s %12s %12s %10s\n' model batch modelfs_ms ort_ms ort/modelfs
fi

# median of the numbers on stdin, one per line
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

bench_model() { # label path batch
	desc=$($ENGINE --describe "$2" --batch "$3")
	bs= ms= os=
	i=0
	while [ "$i" -lt "$ROUNDS" ]; do
		[ -n "$BASE" ] && bs="$bs $($BASE "$2" --batch "$3" --iters "$ITERS" --threads "$THREADS" | field median_ms)"
		ms="$ms $($ENGINE "$2" --batch "$3" --iters "$ITERS" --threads "$THREADS" | field median_ms)"
		os="$os $(node bench/ort_bench.js "$2" "$desc" "$ITERS" "$THREADS" | field median_ms)"
		i=$((i + 1))
	done
	[ -n "$BASE" ] && b=$(echo $bs | tr ' ' '\n' | median)
	m=$(echo $ms | tr ' ' '\n' | median)
	o=$(echo $os | tr ' ' '\n' | median)
	r=$(ratio "$o" "$m")
	if [ -n "$BASE" ]; then
		printf '%-24s %6s %12s %12s %10s %12s %10s\n' "$1" "$3" "$m" "$o" "$r" "$b" "$(ratio "$o" "$b")"
		echo "$1/b$3 $r $(ratio "$o" "$b")" >> "$DATA"
	else
		printf '%-24s %6s %12s %12s %10s\n' "$1" "$3" "$m" "$o" "$r"
		echo "$1/b$3 $r" >> "$DATA"
	fi
}

# Batch 1 for latency; 8 and 32 where serving batches requests (every
# export has a dynamic batch dim).  BENCH_CORE=0 skips these rows and the
# OpenBLAS line (the torchvision rows alone: BENCH_CORE=0 BENCH_GEN=0).
if [ "${BENCH_CORE:-1}" != 0 ]; then
for b in 1 8 32 64; do bench_model mlp examples/mlp/1/model.onnx $b; done
for b in 1 8; do bench_model resnet18 build/models/resnet18/1/model.onnx $b; done
bench_model resnet50 build/bench-models/resnet50.onnx 1
for b in 1 8; do bench_model mobilenetv2 build/models/mobilenet_v2/1/model.onnx $b; done
for b in 1 8 32; do bench_model encoder build/models/encoder/1/model.onnx $b; done
for b in 1 8; do bench_model bert_op17 build/models/bert_op17/1/model.onnx $b; done
for b in 1 8 32; do bench_model gpt2_op17 build/models/gpt2_op17/1/model.onnx $b; done
bench_model matmul1024 build/bench-models/matmul1024.onnx 1

raw=$($ENGINE --sgemm 1024 --iters "$ITERS" --threads "$THREADS")
mm=$($ENGINE build/bench-models/matmul1024.onnx --iters "$ITERS" --threads "$THREADS" | field median_ms)
rawms=$(echo "$raw" | field median_ms)
echo "raw OpenBLAS sgemm 1024^3: $rawms ms ($(echo "$raw" | field gflops) GFLOP/s); modelfs MatMul 1024^3: $mm ms; openblas/modelfs $(echo "$rawms $mm" | awk '{printf "%.2f", $1/$2}')"
fi

# torchvision models (issue 33), each at batch 1: exported here once
# from Debian's python3-torchvision (random weights, offline;
# scripts/export_torchvision.py) into build/tv-models, then timed as the
# rows above but with TV_ITERS runs and TV_ROUNDS rounds.  BENCH_TV=0
# skips them; TV_MODELS picks (names of export_torchvision.py).
TV_MODELS=${TV_MODELS:-"resnet18 resnet50 resnext50_32x4d regnet_x_400mf regnet_y_400mf
	mobilenet_v2 mobilenet_v3_small mobilenet_v3_large efficientnet_b0 efficientnet_b1
	mnasnet0_5 mnasnet1_0 shufflenet_v2_x0_5 shufflenet_v2_x1_0 squeezenet1_0 squeezenet1_1
	alexnet googlenet inception_v3 densenet121 lraspp_mobilenet_v3_large
	ssdlite320_mobilenet_v3_large"}
if [ "${BENCH_TV:-1}" != 0 ]; then
	# shellcheck disable=SC2086
	/usr/bin/python3 scripts/export_torchvision.py build/tv-models $TV_MODELS >/dev/null 2>&1 ||
		echo "torchvision export failed: /usr/bin/python3 scripts/export_torchvision.py build/tv-models"
	its=$ITERS rds=$ROUNDS
	ITERS=${TV_ITERS:-10} ROUNDS=${TV_ROUNDS:-3}
	echo "torchvision (random weights), batch 1: median of $ROUNDS rounds' medians of $ITERS runs"
	for m in $TV_MODELS; do
		if [ -f build/tv-models/$m/1/model.onnx ]; then
			bench_model "tv/$m" build/tv-models/$m/1/model.onnx 1
		fi
	done
	ITERS=$its ROUNDS=$rds
fi

# INT8 QDQ models (issue 33): BENCH_QDQ=0 skips them.
[ "${BENCH_QDQ:-1}" = 0 ] || sh bench/run-bench-qdq.sh

# Text generation (issue 30): BENCH_GEN=0 skips it.
[ "${BENCH_GEN:-1}" = 0 ] || sh bench/run-bench-generate.sh

if [ -n "$CHART" ] && command -v gnuplot >/dev/null 2>&1; then
	if [ -n "$BASE" ]; then
		plot="'$DATA' using 3:xtic(1) title 'baseline', '' using 2 title 'modelfs'"
	else
		plot="'$DATA' using 2:xtic(1) title 'modelfs'"
	fi
	gnuplot <<EOF
set terminal png size $(( $(wc -l < "$DATA") * 40 + 200 )),500 noenhanced
set output '$CHART'
set bmargin 7
set rmargin 6
set key inside top left
set title "ONNX Runtime time / modelfs time ($THREADS threads, median of $ITERS; above 1: modelfs faster)"
set style data histograms
set style fill solid 0.8
set boxwidth 0.8
set yrange [0:*]
set grid ytics
set xtics rotate by -40
set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 2 lc rgb 'red'
plot $plot
EOF
	echo "chart: $CHART"
fi

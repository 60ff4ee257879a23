#!/bin/bash
# engine-ab.sh - two bench_engine binaries A/B on the device tool's host
# (a quiet 16-core machine, where this VM's 2 cores are busy): the same
# models, the same threads pinned with taskset, the two binaries
# alternating R times, the median of each side's medians, base/new > 1
# when the new one is faster.  For "no behaviour change" claims about the
# engine (docs/PERFORMANCE.md "Engine A/B").
# Here:   cp OLD/build/bench/bench_engine /tmp/bench_engine_base
#         sh scripts/carry-pack.sh .ab build/bench/bench_engine /tmp/bench_engine_base
# There (device tool, carry .ab):   R=9 T=2 bash scripts/engine-ab.sh
set -u
W=/tmp/ab; mkdir -p $W; tar xzf .ab/lib.tgz -C $W
export LD_LIBRARY_PATH=$W/lib
python3 bench/torch_bench.py export $W/models >/dev/null 2>&1 || echo "export failed"
field() { sed -n "s/.*\"$1\": *\([0-9.]*\).*/\1/p"; }
med() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
T=${T:-2}
run() { # label model batch
	local b="" n="" r
	for r in $(seq "${R:-9}"); do
		b="$b $(taskset -c 0-$((T-1)) .ab/bin/bench_engine_base "$2" --batch "$3" --iters 20 --threads "$T" | field median_ms)"
		n="$n $(taskset -c 0-$((T-1)) .ab/bin/bench_engine "$2" --batch "$3" --iters 20 --threads "$T" | field median_ms)"
	done
	local bm nm
	bm=$(echo $b | tr ' ' '\n' | med); nm=$(echo $n | tr ' ' '\n' | med)
	echo "$1 b$3: base $bm ms, new $nm ms, base/new $(awk -v a="$bm" -v b="$nm" 'BEGIN{printf "%.3f", a/b}')"
}
echo "threads $T, $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
run mlp examples/mlp/1/model.onnx 1
run mlp examples/mlp/1/model.onnx 32
for f in $W/models/*/1/model.onnx; do
	run "$(basename "$(dirname "$(dirname "$f")")")" "$f" 1
done

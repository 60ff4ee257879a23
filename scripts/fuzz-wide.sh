#!/bin/sh
# fuzz-wide.sh - run the carried libFuzzer targets (scripts/fuzz-carry.sh)
# side by side in libFuzzer's fork mode on every core of a large machine,
# from the committed seeds; findings and the final corpora land in $OUT
# (the device tool's output folder), the logs too.
#   sh scripts/fuzz-wide.sh SECONDS [CARRY_DIR]
# Each target gets cores / targets workers for SECONDS: with 16 cores and
# two targets, 450 s is one CPU-hour per target.
set -u
SECS=$1
CARRY=$(cd "${2:-.fuzz}" && pwd)
R=${OUT:-/tmp/mfs-fuzz/out}
W=/tmp/mfs-fuzz
mkdir -p "$W" "$R"
tar xzf "$CARRY/lib.tgz" -C "$W"
export LD_LIBRARY_PATH="$W/lib"
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export OMP_NUM_THREADS=1
n=$(ls "$CARRY/bin" | wc -l)
jobs=$(( $(nproc) / n )); [ "$jobs" -ge 1 ] || jobs=1
for exe in "$CARRY"/bin/fuzz_*; do
	t=${exe##*/fuzz_}
	mkdir -p "$W/corpus/$t" "$R/findings/$t"
	cp tests/fuzz/corpus/$t/* "$W/corpus/$t/" 2>/dev/null
	dict=""; [ -f "tests/fuzz/$t.dict" ] && dict="-dict=tests/fuzz/$t.dict"
	"$exe" -fork="$jobs" -ignore_crashes=1 -max_total_time="$SECS" -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 $dict \
		-artifact_prefix="$R/findings/$t/" "$W/corpus/$t" > "$R/$t.log" 2>&1 &
done
wait
for exe in "$CARRY"/bin/fuzz_*; do
	t=${exe##*/fuzz_}
	echo "== $t: $(ls "$R/findings/$t" | wc -l) findings, corpus $(ls "$W/corpus/$t" | wc -l) files"
	grep -E '^#[0-9]+.*(DONE|pulse)|stat::number_of_executed_units|INFO: exiting' "$R/$t.log" | tail -3
done
tar czf "$R/corpora.tgz" -C "$W" corpus

#!/bin/sh
# run-fuzz.sh MODE SECS TARGET... - drive the libFuzzer targets built by
# `make fuzz-bins` (build/fuzz/fuzz/fuzz_<target>).
#
#   run   SECS: fuzz each target for SECS seconds, one after the other.
#   smoke RUNS: replay every regression input and every corpus file of
#               each target (each must run clean), then fuzz RUNS inputs
#               with a fixed seed from the committed seeds only: (nearly)
#               the same inputs every time, on every machine, so that
#               `make test` does not pass here and fail in CI because a
#               random walk went elsewhere (docs/FUZZING.md).  New ground is
#               found by `make fuzz` (random seed, growing corpus), whose
#               findings become regressions.
#
# Seeds come from tests/fuzz/corpus/<t>/ (committed); the corpus grows in
# build/fuzz/corpus/<t>/ (not committed).  A crash, leak, timeout or OOM
# is written to tests/fuzz/regressions/<t>/ (commit it after fixing), and
# the script exits 1 after trying every target.  Optional per-target
# files: tests/fuzz/<t>.dict (libFuzzer dictionary), tests/fuzz/<t>.options
# (extra libFuzzer flags, one line), tests/fuzz/<t>.smoke-runs (the smoke's
# number of inputs for a target whose inputs are slow, e.g. the FUSE
# targets, which run models: keeps make test's time in bounds).
MODE=$1; AMOUNT=$2; shift 2
BIN=build/fuzz/fuzz
FAILED=""

# Leaks matter (a hostile model must not leak on the reload path);
# timeouts above 10 s per input or RSS above 2 GiB count as findings.
COMMON="-timeout=10 -rss_limit_mb=2048 -print_final_stats=1"
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
# One thread: the machine is shared, and OpenMP pools only add noise here.
export OMP_NUM_THREADS=1

for t in "$@"; do
	exe=$BIN/fuzz_$t
	seeds=tests/fuzz/corpus/$t
	regs=tests/fuzz/regressions/$t
	work=build/fuzz/corpus/$t
	if [ ! -x "$exe" ]; then
		echo "fuzz $t: $exe not built"; FAILED="$FAILED $t"; continue
	fi
	mkdir -p "$seeds" "$regs" "$work"
	extra=""
	[ -f "tests/fuzz/$t.dict" ] && extra="$extra -dict=tests/fuzz/$t.dict"
	[ -f "tests/fuzz/$t.options" ] && extra="$extra $(cat "tests/fuzz/$t.options")"

	if [ "$MODE" = smoke ]; then
		# Replay: libFuzzer runs each file given as an argument once.
		n=$(find "$regs" "$seeds" -type f | wc -l)
		if [ "$n" -gt 0 ]; then
			if ! find "$regs" "$seeds" -type f -print0 |
			     xargs -0 "$exe" $COMMON $extra > "build/fuzz/replay-$t.log" 2>&1; then
				echo "fuzz $t: replay FAILED (build/fuzz/replay-$t.log)"
				tail -30 "build/fuzz/replay-$t.log"
				FAILED="$FAILED $t"; continue
			fi
		fi
		echo "fuzz $t: replayed $n inputs"
	fi
	log=build/fuzz/fuzz-$t.log
	if [ "$MODE" = smoke ]; then
		# A fresh, throw-away corpus each time, so the run depends
		# only on the committed seeds and the fixed seed.
		work=build/fuzz/smoke-corpus/$t
		rm -rf "$work"; mkdir -p "$work"
		runs=$AMOUNT
		[ -f "tests/fuzz/$t.smoke-runs" ] && runs=$(cat "tests/fuzz/$t.smoke-runs")
		budget="-seed=1 -runs=$runs"
		echo "fuzz $t: $runs runs from seed 1, seeds $seeds, log $log"
	else
		budget="-max_total_time=$AMOUNT"
		echo "fuzz $t: ${AMOUNT}s, corpus $work + $seeds, log $log"
	fi
	if ! "$exe" $COMMON $extra $budget \
	     -artifact_prefix="$regs/" "$work" "$seeds" > "$log" 2>&1; then
		echo "fuzz $t: FOUND a problem, input saved in $regs/ (log $log)"
		grep -E 'ERROR|SUMMARY|artifact' "$log" | head -10
		FAILED="$FAILED $t"
		continue
	fi
	grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb)|Done [0-9]+ runs' "$log" |
		tr '\n' ' ' | sed "s/^/fuzz $t: /"; echo
done
if [ -n "$FAILED" ]; then
	echo "fuzz: problems in:$FAILED"
	exit 1
fi
echo "fuzz: all targets clean"

#!/bin/sh
# Run every test suite of modelfs and end with one line "N passed, M failed".
# Called by `make test` after both builds (plain and ASan+UBSan) exist.
# Each suite's full output goes to build/test-logs/<suite>.log; this script
# prints one line per suite.  Suites whose prerequisites are not built yet
# are reported as failed, not skipped: a missing suite is a defect.
LOGS=build/test-logs
DATA=/usr/share/libonnx-testdata/data
mkdir -p "$LOGS"
TOTAL_PASS=0
TOTAL_FAIL=0

record() { # suite passed failed
	TOTAL_PASS=$((TOTAL_PASS + $2))
	TOTAL_FAIL=$((TOTAL_FAIL + $3))
	printf '%-28s %5d passed, %3d failed   (log: %s)\n' "$1" "$2" "$3" "$LOGS/$1.log"
	# CI keeps only what this script prints: show why a suite failed.
	if [ "$3" -ne 0 ] && [ -f "$LOGS/$1.log" ]; then
		if grep -q '^not ok ' "$LOGS/$1.log"; then
			echo "---- $1: the failing tests in $LOGS/$1.log ----"
			grep -A 30 '^not ok ' "$LOGS/$1.log" | head -n 80 | sed 's/^/    | /'
		else
			echo "---- $1: last lines of $LOGS/$1.log ----"
			tail -n 40 "$LOGS/$1.log" | sed 's/^/    | /'
		fi
		echo "---- end of $1 ----"
	fi
}

# A log that ends with "N passed, M failed": record those; no such line,
# or a non-zero exit with no failure counted, is a failure.
record_counted() { # suite exit-status
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$LOGS/$1.log" | tail -1)
	p=$(echo "$line" | cut -d' ' -f1); f=$(echo "$line" | cut -d' ' -f3)
	p=${p:-0}; f=${f:-1}
	[ "$2" -ne 0 ] && [ "$f" -eq 0 ] && f=1
	record "$1" "$p" "$f"
}

# cmocka binaries: count the PASSED/FAILED lines; a crash counts as a failure.
run_unit() { # suite builddir
	suite=$1; dir=$2; p=0; f=0
	: > "$LOGS/$suite.log"
	for t in "$dir"/tests/test_*; do
		[ -x "$t" ] || continue
		out=$("$t" 2>&1); rc=$?
		printf '%s\n' "$out" >> "$LOGS/$suite.log"
		tp=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
		tf=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
		tp=${tp:-0}; tf=${tf:-0}
		# LeakSanitizer's own tracer can crash while it stops a test's
		# threads at exit ("Tracer caught signal 11", "LeakSanitizer has
		# encountered a fatal error"): test_registry under ASan did so in 2
		# of 4 runs on a loaded machine, on the old code as on the new.
		# That is the checker failing, with every test passed and no
		# report: say so, and judge the binary by its tests (as
		# tests/e2e/helpers.bash judges the daemon).
		if [ "$rc" -ne 0 ] && [ "$tf" -eq 0 ] && [ "$tp" -gt 0 ] &&
		   printf '%s\n' "$out" | grep -q 'LeakSanitizer has encountered a fatal error' &&
		   printf '%s\n' "$out" | grep -q 'Tracer caught signal' &&
		   ! printf '%s\n' "$out" | grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:'; then
			echo "# warning: $t: LeakSanitizer's tracer failed at exit (no leak check this run)" |
				tee -a "$LOGS/$suite.log"
			rc=0
		fi
		if [ "$rc" -ne 0 ] && [ "$tf" -eq 0 ]; then
			tf=1
			echo "$t exited $rc" >> "$LOGS/$suite.log"
		fi
		p=$((p + tp)); f=$((f + tf))
	done
	[ $((p + f)) -gt 0 ] || { f=1; echo "no unit tests found in $dir/tests" >> "$LOGS/$suite.log"; }
	record "$suite" $p $f
}

# The ONNX backend test data: the counts are the cases of the committed
# expected-pass list (a regression fails), the per-folder figures go to the log.
# conformance-opencl runs the first-set cases on the OpenCL engine (PoCL
# here) against their own list: every first-set case the CPU passes.
run_conformance() { # suite tool [expected-list [tool options...]]
	suite=$1; tool=$2; expected=${3:-tests/conformance/expected-pass.txt}
	shift 2; [ $# -gt 0 ] && shift
	if [ ! -x "$tool" ]; then
		echo "$tool not built" > "$LOGS/$suite.log"; record "$suite" 0 1; return
	fi
	"$tool" --expected "$expected" "$@" \
		--write-passing "$LOGS/$suite.passing" \
		"$DATA/node" "$DATA/pytorch-converted" "$DATA/pytorch-operator" "$DATA/simple" \
		tests/conformance/torch-elementwise > "$LOGS/$suite.log" 2>&1
	rc=$?
	grep -E '^(node|pytorch-converted|pytorch-operator|simple|torch-elementwise):' "$LOGS/$suite.log" | sed 's/^/    /'
	record_counted "$suite" "$rc"
}

# Every case of the conformance runner's expected-pass list through
# `modelfs run` (the path users take), judged by the runner's tolerance:
# proves that both pass the same cases.  The per-folder figures go to the
# output as run_conformance's do (and to docs/OPERATORS.md via run_docs).
# One `modelfs run --device cpu` per case, RUN_CASES_JOBS (2) at once.
run_cli_cases() { # suite modelfs-binary
	suite=$1
	/usr/bin/python3 tests/e2e/run_backend_cases.py "$2" "$DATA" \
		--expected tests/conformance/expected-pass.txt --jobs "${RUN_CASES_JOBS:-2}" \
		> "$LOGS/$suite.log" 2>&1
	rc=$?
	grep -E '^[a-z-]+: [0-9]+/[0-9]+ passed' "$LOGS/$suite.log" | sed 's/^/    /'
	record_counted "$suite" "$rc"
}

# docs/OPERATORS.md must equal what `make docs` generates now.
run_docs() { # suite
	suite=$1
	if [ ! -x build/tools/list_ops ] || [ ! -x build/tools/conformance ]; then
		echo "build/tools/list_ops or conformance not built" > "$LOGS/$suite.log"
		record "$suite" 0 1; return
	fi
	if sh scripts/gen-operators-doc.sh build/tools/list_ops build/tools/conformance \
		"$LOGS/run-cases.log" > "$LOGS/OPERATORS.md" 2> "$LOGS/$suite.log" &&
	   diff -u docs/OPERATORS.md "$LOGS/OPERATORS.md" >> "$LOGS/$suite.log" 2>&1; then
		record "$suite" 1 0
	else
		echo "docs/OPERATORS.md is stale: run make docs" | tee -a "$LOGS/$suite.log"
		record "$suite" 0 1
	fi
}

# bats suites: count TAP "ok"/"not ok" lines.
run_bats() { # suite modelfs-binary files...
	suite=$1; bin=$2; shift 2
	if [ $# -eq 0 ] || [ ! -e "$1" ]; then
		echo "no bats files" > "$LOGS/$suite.log"; record "$suite" 0 1; return
	fi
	MODELFS=$bin bats --tap "$@" > "$LOGS/$suite.log" 2>&1
	rc=$?
	p=$(grep -c '^ok ' "$LOGS/$suite.log"); f=$(grep -c '^not ok ' "$LOGS/$suite.log")
	[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
	record "$suite" "$p" "$f"
}

# A make target that is one test: passes when it exits 0.
run_target() { # suite target
	if make --no-print-directory "$2" > "$LOGS/$1.log" 2>&1; then
		record "$1" 1 0
	else
		record "$1" 0 1
	fi
}

# A script that ends with "N passed, M failed": count those.
run_counted() { # suite command...
	suite=$1; shift
	"$@" > "$LOGS/$suite.log" 2>&1; rc=$?
	record_counted "$suite" "$rc"
}

# OpenMP's wait policy is the daemon's own (exec/runtime/openmp_policy.h: a bounded
# spin, one thread while the cores are busy), as users get it.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:${ASAN_OPTIONS:-}"
# Leaks inside PoCL's LLVM compiler are not ours (tests/lsan.supp).
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:${LSAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"

run_counted layers sh tests/layers/check-layers.sh
run_counted sizes sh tests/layers/check-size.sh
# Call cycles between files, in the plain build's objects.
run_counted cycles sh tests/layers/check-cycles.sh build/obj
run_unit unit build
run_conformance conformance build/tools/conformance
run_conformance conformance-opencl build/tools/conformance \
	tests/conformance/expected-pass-opencl.txt --device opencl --first-set
run_bats e2e "$PWD/modelfs" tests/e2e/*.bats
run_cli_cases run-cases "$PWD/modelfs"
run_bats install "$PWD/modelfs" tests/install/*.bats
run_counted deploy /usr/bin/python3 tests/install/check_deploy.py "$PWD/modelfs"
# Triton's own model-configuration cases (tests/triton_config/README.md);
# the cases whose outcome differs from Triton's, with why, go to the log dir.
run_counted triton-config /usr/bin/python3 tests/triton_config/run.py "$PWD/modelfs" \
	"$LOGS/triton-config-differences.txt"
run_counted soak /usr/bin/python3 tests/soak/soak.py "$PWD/modelfs" examples 16 200 5
run_unit unit-asan build/asan
run_conformance conformance-asan build/asan/tools/conformance
run_bats e2e-asan "$PWD/build/asan/modelfs" tests/e2e/*.bats
run_counted soak-asan /usr/bin/python3 tests/soak/soak.py "$PWD/build/asan/modelfs" examples 16 200 5
run_target fuzz-regressions fuzz-smoke
run_target real-models check-models
run_docs docs

echo "$TOTAL_PASS passed, $TOTAL_FAIL failed"
[ "$TOTAL_FAIL" -eq 0 ]

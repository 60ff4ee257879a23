#!/bin/sh
# gpu-carry.sh - pack what scripts/gpu-bench.sh needs on the GPU machine
# (and scripts/fs16-bench.sh's), where nothing can be installed: the built
# modelfs, bench_engine, bench_generate (scripts/gpu-generate.sh) and
# bare_fs (make bench-fs's baseline), every
# shared library they load except glibc's own (OpenBLAS, oneDNN, CLBlast,
# Debian's ocl-icd libOpenCL.so.1, libfuse3, ...; gzipped: about 25 MB),
# and fusermount3, into .gpu/ (under 60 MB; git-ignored through
# .git/info/exclude so the device tool's `carry` takes it).
#
# Run here, in the repository root:  sh scripts/gpu-carry.sh
set -e
log=$(mktemp)
make -j2 --no-print-directory modelfs build/bench/bench_engine build/bench/bench_generate build/bench/bare_fs >"$log" 2>&1 ||
	{ tail -20 "$log" >&2; rm -f "$log"; exit 1; }
rm -f "$log"
sh "$(dirname "$0")/carry-pack.sh" .gpu modelfs build/bench/bench_engine build/bench/bench_generate build/bench/bare_fs \
	"$(command -v fusermount3)"

#!/bin/sh
# gpu-carry.sh - pack what scripts/gpu-bench.sh needs on the GPU machine,
# where nothing can be installed: the built modelfs and bench_engine, every
# shared library they load except glibc's own (OpenBLAS, oneDNN, CLBlast,
# Debian's ocl-icd libOpenCL.so.1, libfuse3, ...; gzipped: about 25 MB),
# and fusermount3, into .gpu/ (under 60 MB; git-ignored through
# .git/info/exclude so the device tool's `carry` takes it).
#
# Run here, in the repository root:  sh scripts/gpu-carry.sh
set -e
OUT=.gpu
make -j2 --no-print-directory modelfs build/bench/bench_engine >/dev/null 2>&1
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib"
cp modelfs build/bench/bench_engine "$OUT/bin/"
cp "$(command -v fusermount3)" "$OUT/bin/"
for lib in $(ldd modelfs build/bench/bench_engine | awk '/=>/ { print $3 }' | sort -u); do
	case $(basename "$lib") in
	libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libresolv.so*) continue ;;
	esac
	cp -L "$lib" "$OUT/lib/"
done
tar czf "$OUT/lib.tgz" -C "$OUT" lib
rm -rf "$OUT/lib"
exclude="$(git rev-parse --git-common-dir)/info/exclude"
mkdir -p "$(dirname "$exclude")"
grep -qxF '.gpu/' "$exclude" 2>/dev/null || echo '.gpu/' >> "$exclude"
size=$(du -sm "$OUT" | cut -f1)
echo "$OUT: ${size} MB ($(ls "$OUT/bin" | tr '\n' ' '); lib.tgz)"
[ "$size" -lt 60 ] || { echo "gpu-carry: $OUT is over 60 MB" >&2; exit 1; }

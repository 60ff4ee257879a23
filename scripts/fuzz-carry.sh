#!/bin/sh
# fuzz-carry.sh - pack the libFuzzer targets named (default: the two FUSE
# targets) and the shared libraries they load into .fuzz/, for a long run
# on the device tool's many-core host (scripts/fuzz-wide.sh there), as
# gpu-carry.sh does for the GPU bench.  Run here after `make fuzz-bins`.
#   sh scripts/fuzz-carry.sh [TARGET...]
set -e
OUT=.fuzz
TARGETS=${*:-fuse_requests fuse_infer}
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib"
for t in $TARGETS; do
	cp "build/fuzz/fuzz/fuzz_$t" "$OUT/bin/"
done
for lib in $(ldd "$OUT"/bin/* | awk '/=>/ { print $3 }' | sort -u); do
	case $(basename "$lib") in
	libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libresolv.so*) continue ;;
	esac
	cp -L "$lib" "$OUT/lib/"
done
tar czf "$OUT/lib.tgz" -C "$OUT" lib
rm -rf "$OUT/lib"
exclude="$(git rev-parse --git-common-dir)/info/exclude"
grep -qxF '.fuzz/' "$exclude" 2>/dev/null || echo '.fuzz/' >> "$exclude"
echo "$OUT: $(du -sm "$OUT" | cut -f1) MB ($(ls "$OUT/bin" | tr '\n' ' '))"

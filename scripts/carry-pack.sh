#!/bin/sh
# carry-pack.sh OUT PROGRAM... - pack programs for the device tool's host,
# where nothing can be installed: the programs into OUT/bin, every shared
# library they load except glibc's own into OUT/lib.tgz (unpack it there
# and point LD_LIBRARY_PATH at it).  OUT is git-ignored through
# .git/info/exclude so the device tool's `carry` takes it; it must stay
# under 60 MB (the tool carries 64 MiB at most).  Used by gpu-carry.sh and
# fuzz-carry.sh.
set -e
OUT=$1; shift
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib"
cp "$@" "$OUT/bin/"
for lib in $(ldd "$@" 2>/dev/null | awk '/=>/ { print $3 }' | sort -u); do
	case $(basename "$lib") in
	libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libresolv.so*) continue ;;
	esac
	cp -L "$lib" "$OUT/lib/"
done
tar czf "$OUT/lib.tgz" -C "$OUT" lib
rm -rf "$OUT/lib"
exclude="$(git rev-parse --git-common-dir)/info/exclude"
mkdir -p "$(dirname "$exclude")"
grep -qxF "$OUT/" "$exclude" 2>/dev/null || echo "$OUT/" >> "$exclude"
size=$(du -sm "$OUT" | cut -f1)
echo "$OUT: ${size} MB ($(ls "$OUT/bin" | tr '\n' ' '); lib.tgz)"
[ "$size" -lt 60 ] || { echo "carry-pack: $OUT is over 60 MB" >&2; exit 1; }

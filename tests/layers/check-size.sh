#!/bin/sh
# The size rule (docs/ARCHITECTURE.md, "Sizes"): no source file of the
# product over 900 lines and no function over 120, so that a file does one
# job and a function fits a screen or two.  Prints the five longest
# functions and the five longest files every time, so the margin is seen.
# Functions are counted the way this code base writes them: the opening
# brace of a function body alone at column 0, the closing one too (kernel
# style); a definition that opens its body on the signature's line would
# hide from the count, so it fails the check too.
# Usage: check-size.sh [DIR...]  (default: src exec fs; run from the
# repository root; `make check-size`)
set -u
MAX_FILE=${MAX_FILE:-900}
MAX_FUNC=${MAX_FUNC:-120}
dirs=${*:-src exec fs}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
find $dirs -name '*.c' | sort > "$tmp/files"
pass=0; fail=0

# Every function body: its length in lines, where it starts, its name.
xargs awk '
FNR == 1 { start = 0 }
/^[A-Za-z_].*\(/ { sig = $0 }
/^\{/ { start = FNR; name = sig; sub(/\(.*/, "", name); n = split(name, a, /[ *]+/); name = a[n] }
/^\}/ && start { print FNR - start + 1, FILENAME ":" start, name; start = 0 }
' < "$tmp/files" | sort -rn > "$tmp/funcs"
xargs wc -l < "$tmp/files" | grep -v ' total$' | sort -rn > "$tmp/sizes"

echo "the five longest functions (limit $MAX_FUNC lines):"
head -5 "$tmp/funcs" | sed 's/^/    /'
echo "the five longest files (limit $MAX_FILE lines):"
head -5 "$tmp/sizes" | sed 's/^/    /'

long=$(awk -v m="$MAX_FUNC" '$1 > m' "$tmp/funcs")
if [ -n "$long" ]; then
	echo "FAIL: functions over $MAX_FUNC lines:"; echo "$long" | sed 's/^/    /'
	fail=$((fail + 1))
else
	echo "ok: no function over $MAX_FUNC lines ($(wc -l < "$tmp/funcs") functions)"
	pass=$((pass + 1))
fi
big=$(awk -v m="$MAX_FILE" '$1 > m' "$tmp/sizes")
if [ -n "$big" ]; then
	echo "FAIL: files over $MAX_FILE lines:"; echo "$big" | sed 's/^/    /'
	fail=$((fail + 1))
else
	echo "ok: no file over $MAX_FILE lines ($(wc -l < "$tmp/files") files)"
	pass=$((pass + 1))
fi
hidden=$(xargs grep -nE '^[A-Za-z_][^;=]*\)[[:space:]]*\{[[:space:]]*$' < "$tmp/files")
if [ -n "$hidden" ]; then
	echo "FAIL: function bodies opened on the signature's line (not counted):"; echo "$hidden" | sed 's/^/    /'
	fail=$((fail + 1))
else
	pass=$((pass + 1))
fi
# The probe: the counter must see a known long function, or it proves nothing.
printf 'int f(void)\n{\n%s}\n' "$(yes '	;' | head -n $((MAX_FUNC + 1)) | tr -d '\r')
" > "$tmp/probe.c"
if awk '/^\{/ { s = FNR } /^\}/ && s { print FNR - s + 1 }' "$tmp/probe.c" | awk -v m="$MAX_FUNC" '$1 > m { ok = 1 } END { exit !ok }'; then
	pass=$((pass + 1))
else
	echo "FAIL: the function counter does not see a $((MAX_FUNC + 3))-line probe"
	fail=$((fail + 1))
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

#!/bin/sh
# No call cycles between files: in the built objects, file A "calls" file
# B when A uses (nm -u) a function B defines (nm --defined-only, type T).
# Every strongly connected component of that graph with more than one
# file is a cycle: the files cannot be read, tested or moved one at a time
# (a lower file that calls back up into its caller).  For each one the
# files and the calls between them (caller -> callee: functions) are
# printed, so that a person can see which call to move or invert.
# Only functions count: data (an operator table that points at
# descriptors, a string table) is not a call.
#
# Usage: check-cycles.sh [OBJ-DIR-OR-PREFIX...]   (default: build/obj)
#   an argument is a folder (every .o under it) or a path prefix
#   (build/obj/src/core/config/config_ takes the objects it starts).
#   Run from the repository root: an object build/obj/X.o whose source
#   X.c is gone is stale and left out.
# Every object named is one file of the graph; calls into objects not
# named (libc, another layer left out) are not edges.
# Prints one "ok"/"FAIL" line per component and ends with
# "N passed, M failed" (N: files in no cycle, M: cycles); exits non-zero
# on any cycle.  `make check-cycles` runs it over the daemon's own layers.
set -u
[ $# -gt 0 ] || set -- build/obj
NM=${NM:-nm}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

: > "$tmp/objs"
for arg in "$@"; do
	if [ -d "$arg" ]; then
		find "$arg" -name '*.o' -type f >> "$tmp/objs"
	else
		find "$(dirname "$arg")" -name '*.o' -type f -path "$arg*" >> "$tmp/objs"
	fi
done
sort -u "$tmp/objs" -o "$tmp/objs"
# An object whose source is gone (a file moved or split since the last
# build) is stale: its functions are defined again by the new object, and
# its calls are not the program's.  Left out, with a note.
: > "$tmp/live"
while read -r o; do
	case $o in
	*/obj/*) src=${o#*/obj/}; src=${src%.o}.c
		if [ ! -e "$src" ] && [ "${src##*/}" != kernels_embedded.c ]; then
			echo "note: $o left out: $src is gone (stale object)"
			continue
		fi ;;
	esac
	echo "$o" >> "$tmp/live"
done < "$tmp/objs"
mv "$tmp/live" "$tmp/objs"
if [ ! -s "$tmp/objs" ]; then
	echo "FAIL: no object files under $*: build first (make all)"
	echo "0 passed, 1 failed"
	exit 1
fi

# "file: symbol type ..." (POSIX format, one line per symbol).
xargs "$NM" -A -P --defined-only < "$tmp/objs" > "$tmp/defs" 2> "$tmp/err" &&
	xargs "$NM" -A -P -u < "$tmp/objs" > "$tmp/uses" 2>> "$tmp/err" || {
	echo "FAIL: nm failed:"; cat "$tmp/err"
	echo "0 passed, 1 failed"
	exit 1
}

awk -v objs="$tmp/objs" -v defs="$tmp/defs" -v uses="$tmp/uses" '
function file_of(s) { sub(/:$/, "", s); return s }
BEGIN {
	while ((getline line < objs) > 0)
		if (!(line in idx)) { idx[line] = ++n; name[n] = line }
	# Functions: T (global text).  A symbol defined twice (never in a
	# linked program) keeps its first file.
	while ((getline line < defs) > 0) {
		split(line, f, " ")
		if (f[3] == "T" && !(f[2] in owner))
			owner[f[2]] = idx[file_of(f[1])]
	}
	while ((getline line < uses) > 0) {
		split(line, f, " ")
		a = idx[file_of(f[1])]; s = f[2]
		if (!(s in owner) || owner[s] == a)
			continue
		b = owner[s]
		if (!((a, b) in calls)) {
			calls[a, b] = s
			out[a] = out[a] " " b
		} else {
			calls[a, b] = calls[a, b] ", " s
		}
	}
	# Reachability from each file (breadth first), then a component is
	# the files that reach each other.
	for (i = 1; i <= n; i++) {
		delete seen; head = 1; tail = 0
		queue[++tail] = i
		while (head <= tail) {
			k = queue[head++]
			m = split(out[k], nx, " ")
			for (j = 1; j <= m; j++)
				if (!(nx[j] in seen)) {
					seen[nx[j]] = 1
					reach[i, nx[j]] = 1
					queue[++tail] = nx[j]
				}
		}
	}
	passed = 0; failed = 0
	for (i = 1; i <= n; i++) {
		if (i in comp)
			continue
		comp[i] = i; members = name[i]; size = 1; list[1] = i
		for (j = i + 1; j <= n; j++)
			if (!(j in comp) && ((i, j) in reach) && ((j, i) in reach)) {
				comp[j] = i; members = members " " name[j]; list[++size] = j
			}
		if (size == 1) {
			passed++
			continue
		}
		failed++
		printf "FAIL: call cycle between %d files: %s\n", size, members
		for (x = 1; x <= size; x++)
			for (y = 1; y <= size; y++)
				if ((list[x], list[y]) in calls)
					printf "    %s -> %s: %s\n", name[list[x]], name[list[y]], calls[list[x], list[y]]
	}
	if (failed == 0)
		printf "ok: no call cycle between the %d object files\n", n
	printf "%d passed, %d failed\n", passed, failed
	exit failed > 0
}'

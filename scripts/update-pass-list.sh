#!/bin/sh
# update-pass-list.sh LIST CONFORMANCE [OPTION...] - bring a conformance
# pass list (tests/conformance/expected-pass*.txt) up to date: run
# CONFORMANCE with OPTIONs (e.g. --device opencl --first-set) over the same
# cases as tests/run-all.sh and write every passing case to LIST.
#
# Only new passes are added this way: when a case on LIST no longer
# passes, the runner names it, LIST stays as it was and this exits 1 - a
# regression is fixed, not written into the list.  (A case meant to leave
# the list, e.g. one deleted from the data, is removed from LIST by hand.)
# OPTIONs must not narrow the cases (--filter): LIST would keep only those.
# Called by `make docs`.
set -e
LIST=$1
CONF=$2
[ -n "$LIST" ] && [ -x "$CONF" ] || { echo "usage: $0 LIST CONFORMANCE [OPTION...]" >&2; exit 2; }
shift 2
DATA=${ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}
log=$(mktemp)
trap 'rm -f "$log" "$LIST.tmp"' EXIT

if ! "$CONF" --expected "$LIST" --write-passing "$LIST.tmp" "$@" \
	"$DATA/node" "$DATA/pytorch-converted" "$DATA/pytorch-operator" "$DATA/simple" \
	tests/conformance/torch-elementwise > "$log" 2>&1; then
	grep '^REGRESSION' "$log" >&2 || tail -n 20 "$log" >&2
	echo "$LIST: not updated" >&2
	exit 1
fi
grep '^expected passes:' "$log"
mv "$LIST.tmp" "$LIST"

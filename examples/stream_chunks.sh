#!/bin/sh
# Feed a stateful model a signal chunk by chunk: examples/running_mean
# keeps each sequence's running [sum, count] in the daemon (Triton's
# sequence batcher and implicit state, docs/SPEC.md section 12), so each
# chunk is sent alone and each answer covers the whole signal so far.
#   usage: examples/stream_chunks.sh [MOUNT] [FILE]
# FILE holds the samples, whitespace-separated (default: 1 to 64); each
# 16 samples are one chunk (a last partial chunk is left out).
set -e
mnt=${1:-mnt}
chunks=$(mktemp)
req=$mnt/running_mean/requests/stream-$$
mkdir "$req"
trap 'rm -r "$req"; rm -f "$chunks"' EXIT
if [ -n "${2:-}" ]; then cat "$2"; else seq 1 64; fi | xargs -n 16 | awk 'NF == 16' > "$chunks"
n=$(wc -l < "$chunks")
# One request directory carries the whole sequence: its id (any number
# from 1, or a string) and the start and end flags stay until rewritten.
echo $$ > "$req/.sequence_id"
k=1
while read -r chunk; do
	if [ "$k" = 1 ]; then echo 1; else echo 0; fi > "$req/.sequence_start"
	if [ "$k" = "$n" ]; then echo 1; else echo 0; fi > "$req/.sequence_end"
	echo "$chunk" > "$req/chunk.txt"
	echo "after chunk $k: mean $(cat "$req/mean.txt")"
	k=$((k + 1))
done < "$chunks"

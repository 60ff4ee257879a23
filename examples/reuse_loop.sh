#!/bin/sh
# Reuse one request directory for many runs: each run consumes its inputs,
# so writing a fresh set of inputs runs the model again.
#   usage: examples/reuse_loop.sh [MOUNT] [N]
set -e
mnt=${1:-mnt}
n=${2:-10}
req=$mnt/add_sub/requests/loop-$$

mkdir "$req"
trap 'rm -r "$req"' EXIT
i=1
while [ "$i" -le "$n" ]; do
	seq "$i" $((i + 15)) > "$req/INPUT0.txt"
	seq 1 16 > "$req/INPUT1.txt"
	echo "run $i: $(cat "$req/OUTPUT0.txt")"
	i=$((i + 1))
done

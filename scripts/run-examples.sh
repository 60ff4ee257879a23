#!/bin/sh
# `make run`: mount examples/ at ./mnt in the background and say how to use it.
set -e
cd "$(dirname "$0")/.."
mkdir -p mnt
if mountpoint -q mnt 2>/dev/null; then
	echo "modelfs: ./mnt is already mounted; unmount it first: fusermount3 -u mnt" >&2
	exit 1
fi
# The pipeline's first step is the example custom backend, built there.
# --exit-on-error=true: return once every example model is READY (or say
# which failed), so that the next command can use them.
./modelfs --exit-on-error=true --backend-dir build/examples examples mnt
echo "modelfs serves examples/ at ./mnt: try  ls mnt/add_sub  and  sh examples/add_sub.sh  (also classify.sh, classify_pipeline.sh, reuse_loop.sh, infer.sh, stream_chunks.sh)"
echo "a request by hand: mkdir mnt/add_sub/requests/r1; seq 16 > mnt/add_sub/requests/r1/INPUT0.txt; seq 16 > mnt/add_sub/requests/r1/INPUT1.txt; cat mnt/add_sub/requests/r1/OUTPUT0.txt"
echo "unmount with: fusermount3 -u mnt"

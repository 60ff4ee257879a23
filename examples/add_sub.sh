#!/bin/sh
# Run Triton's add_sub through a modelfs mount from the shell.
#   usage: examples/add_sub.sh [MOUNT]        (default: ./mnt, as `make run` mounts it)
set -e
mnt=${1:-mnt}
req=$mnt/add_sub/requests/add_sub-$$

mkdir "$req"                                   # a request, bound to the current version
trap 'rm -r "$req"' EXIT                       # always clean up
seq 1 16 > "$req/INPUT0.txt"                   # 16 numbers, one per line
echo "10 10 10 10 10 10 10 10 10 10 10 10 10 10 10 10" > "$req/INPUT1.txt"
# Writing the last input ran the model; reading waits for the result.
echo "INPUT0 + INPUT1 = $(cat "$req/OUTPUT0.txt")"
echo "INPUT0 - INPUT1 = $(cat "$req/OUTPUT1.txt")"
cat "$req/trace.json"

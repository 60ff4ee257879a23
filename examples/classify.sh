#!/bin/sh
# Classify a tensor file with the example MLP (784 inputs -> 10 classes).
#   usage: examples/classify.sh [MOUNT] [INPUT]
#   INPUT: any tensor file the mount accepts (.npy, .json, .txt, .raw, .pb)
#          holding 784 FP32 values (default: examples/mlp/samples/input.npy)
set -e
mnt=${1:-mnt}
input=${2:-$(dirname "$0")/mlp/samples/input.npy}
ext=${input##*.}
req=$mnt/mlp/requests/classify-$$

mkdir "$req"
trap 'rm -r "$req"' EXIT
cp "$input" "$req/input.$ext"                  # the format comes from the extension
# probabilities.txt: one line per batch row, 10 space-separated values.
awk '{ best = 1; for (i = 2; i <= NF; i++) if ($i > $best) best = i;
       printf "class %d (p = %s)\n", best - 1, $best }' "$req/probabilities.txt"

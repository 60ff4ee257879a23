#!/bin/sh
# Classify an 8-bit 28x28 grey image with the pipeline ensemble
# (pipeline_preprocess -> cnn -> pipeline_softmax, run inside the daemon)
# and name the class from examples/pipeline/labels.txt.
#   usage: examples/classify_pipeline.sh [MOUNT] [IMAGE]
#   IMAGE: any tensor file the mount accepts holding 28x28 UINT8 pixels
#          (default: examples/pipeline/samples/pixels.npy)
set -e
here=$(dirname "$0")
mnt=${1:-mnt}
image=${2:-$here/pipeline/samples/pixels.npy}
ext=${image##*.}
req=$mnt/pipeline/requests/classify-$$

mkdir "$req"
trap 'rm -r "$req"' EXIT
cp "$image" "$req/pixels.$ext"          # writing the last input runs the pipeline
# probabilities.txt: one line of 10 values; the best one's line in labels.txt.
awk 'NR == FNR { best = 1; for (i = 2; i <= NF; i++) if ($i > $best) best = i;
                 p = $best; next }
     FNR == best { printf "%s (class %d, p = %s)\n", $0, best - 1, p }' \
    "$req/probabilities.txt" "$here/pipeline/labels.txt"

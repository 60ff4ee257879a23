#!/bin/sh
# Classify an 8-bit 28x28 grey image with the pipeline ensemble
# (pipeline_preprocess, the example custom backend in C -> cnn ->
# pipeline_softmax, run inside the daemon; mount with
# --backend-dir build/examples, as `make run` does):
# one cp of the image, one cat of the best class with its label
# (probabilities.top1.txt: "score index label", from pipeline/labels.txt).
#   usage: examples/classify_pipeline.sh [MOUNT] [IMAGE]
#   IMAGE: any tensor file the mount accepts holding 28x28 UINT8 pixels
#          (default: examples/pipeline/samples/pixels.npy)
set -e
mnt=${1:-mnt}
image=${2:-$(dirname "$0")/pipeline/samples/pixels.npy}
ext=${image##*.}
req=$mnt/pipeline/requests/classify-$$

mkdir "$req"
trap 'rm -r "$req"' EXIT
cp "$image" "$req/pixels.$ext"          # writing the last input runs the pipeline
awk '{ printf "%s (class %d, p = %s)\n", $3, $2, $1 }' "$req/probabilities.top1.txt"

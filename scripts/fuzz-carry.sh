#!/bin/sh
# fuzz-carry.sh - pack the libFuzzer targets named (default: the two FUSE
# targets) and the shared libraries they load into .fuzz/, for a long run
# on the device tool's many-core host (scripts/fuzz-wide.sh there), as
# gpu-carry.sh does for the GPU bench.  Run here after `make fuzz-bins`.
#   sh scripts/fuzz-carry.sh [TARGET...]
set -e
TARGETS=${*:-fuse_requests fuse_infer}
bins=""
for t in $TARGETS; do
	bins="$bins build/fuzz/fuzz/fuzz_$t"
done
sh "$(dirname "$0")/carry-pack.sh" .fuzz $bins

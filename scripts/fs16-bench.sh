#!/bin/sh
# fs16-bench.sh - `make bench-fs` (bench/run-bench-fs.sh) on the device
# tool's 16-core host: the filesystem path against the bare FUSE server,
# daemon compute against bench_engine, large tensors, and dynamic batching
# where one request does not fill the cores (on 2 cores ResNet-18 at batch
# 1 already does, so batching can only gain what the engine gains per
# image at batch 8).  Carry what scripts/gpu-carry.sh packs:
#
#   here:    sh scripts/gpu-carry.sh
#   device:  sh scripts/fs16-bench.sh .gpu     (run with carry [".gpu"])
#
# The device's python3 (torch) exports ResNet-18; the carried binaries
# run through wrappers that give them the carried libraries, so python
# keeps its own.
set -e
CARRY=$(cd "${1:-.gpu}" && pwd)
TOP=$(cd "$(dirname "$0")/.." && pwd)
W=/tmp/mfs-fs16
PY=${PYTHON:-python3}
rm -rf "$W"
mkdir -p "$W/b/bench"
tar xzf "$CARRY/lib.tgz" -C "$W"
wrap() { # wrapper PATH PROGRAM
	printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/lib exec %s/bin/%s "$@"\n' "$W" "$CARRY" "$2" > "$1"
	chmod +x "$1"
}
wrap "$W/b/modelfs" modelfs
wrap "$W/b/bench/bench_engine" bench_engine
wrap "$W/b/bench/bare_fs" bare_fs
export PATH="$CARRY/bin:$PATH"
echo "== $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
"$PY" "$TOP/tests/models/export_models.py" "$W/models" resnet18 >/dev/null
cd "$TOP"
# MODELFS_ARGS: options for the daemon (--threads=2 for a comparison)
PYTHON=$PY MODELS_DIR="$W/models" BUILD="$W/b" MODELFS="$W/b/modelfs ${MODELFS_ARGS:-}" \
	sh bench/run-bench-fs.sh

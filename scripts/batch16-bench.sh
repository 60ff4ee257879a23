#!/bin/bash
# batch16-bench.sh - dynamic batching through the mount on the device
# tool's 16-core host (issue 10): on the 2-core development VM the
# engine's own batch-8 throughput is only ~1.06x batch 1's, so the
# batching gain cannot show there (docs/PERFORMANCE.md).  Exports
# ResNet-50 and MobileNetV2 with python3 (torch, bench/torch_bench.py),
# times bench_engine at batch 1 and 8 with every core, then mounts them
# with max_batch_size 8 and dynamic_batching (2 ms) on the CPU engine and
# measures requests/s with 1 client and with 8 (bench/bench_clients.py;
# each reads stats.json's batch counts after).  Carry as gpu-bench.sh:
#   sh scripts/gpu-carry.sh (here), then on the device:
#   bash scripts/batch16-bench.sh [CARRY_DIR]        (default .gpu)
# Prints a markdown table (also $OUT/batch16.md when OUT is set).
set -u
CARRY=$(cd "${1:-.gpu}" && pwd)
TOP=$(cd "$(dirname "$0")/.." && pwd)
W=/tmp/mfs-batch16
R=${OUT:-$W/out}
PY=${PYTHON:-python3}
mkdir -p "$W" "$R"
tar xzf "$CARRY/lib.tgz" -C "$W"
export PATH="$CARRY/bin:$PATH"
run_mfs() { LD_LIBRARY_PATH="$W/lib" "$@"; }
field() { sed -n "s/.*\"$1\": *\([0-9.]*\).*/\1/p"; }
THREADS=$(nproc)
MODELS=${MODELS:-resnet50 mobilenetv2}

"$PY" "$TOP/bench/torch_bench.py" export "$W/models" >&2 || exit 1
# MobileNetV2 needs torchvision.
MODELS=$(for m in $MODELS; do [ -f "$W/models/$m/1/model.onnx" ] && echo $m; done)
rm -rf "$W/repo" && mkdir -p "$W/repo" "$W/mnt"
for m in $MODELS; do
	mkdir -p "$W/repo/$m/1"
	cp "$W/models/$m/1/model.onnx" "$W/repo/$m/1/"
	printf 'max_batch_size: 8\ninstance_group [ { count: 1, kind: KIND_CPU } ]\ndynamic_batching { max_queue_delay_microseconds: 2000 }\n' \
		> "$W/repo/$m/config.pbtxt"
done
run_mfs modelfs "$W/repo" "$W/mnt" || exit 1
sleep 2
{
echo "Dynamic batching through the mount, $THREADS cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
echo
echo "| model | engine b1 ms | engine b8 ms | engine b8 gain | 1 client req/s | 8 clients req/s | mount gain |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for m in $MODELS; do
	p="$W/models/$m/1/model.onnx"
	e1=$(run_mfs bench_engine "$p" --batch 1 --iters 20 --threads "$THREADS" | field median_ms)
	e8=$(run_mfs bench_engine "$p" --batch 8 --iters 10 --threads "$THREADS" | field median_ms)
	one=$("$PY" "$TOP/bench/bench_clients.py" "$W/mnt" "$m" 1 48 | tail -1)
	eight=$("$PY" "$TOP/bench/bench_clients.py" "$W/mnt" "$m" 8 12 | tail -1)
	echo "| $m | $e1 | $e8 | $(echo "$e1 $e8" | awk '{ printf "%.2f", 8 * $1 / $2 }') | $one | $eight | $(echo "$one $eight" | awk '{ printf "%.2f", $2 / $1 }') |"
done
echo
for m in $MODELS; do
	echo "$m batch sizes run (stats.json batch_stats): $("$PY" -c "
import json
s = json.load(open('$W/mnt/$m/stats.json'))['model_stats'][0]
print(', '.join('%d x%d' % (b['batch_size'], b['compute_infer']['count']) for b in s.get('batch_stats', [])))")"
done
} | tee "$R/batch16.md"
fusermount3 -u "$W/mnt" 2>/dev/null || umount "$W/mnt"

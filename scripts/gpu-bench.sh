#!/bin/bash
# gpu-bench.sh - the OpenCL engine on a real NVIDIA GPU (the device tool's
# machine), against the CPU engine and PyTorch CUDA; then a mount with
# KIND_AUTO to show the router's choice.  Prints a markdown table.
#
#   bash scripts/gpu-bench.sh [CARRY_DIR]     (default .gpu, from gpu-carry.sh)
#
# Steps: unpack the carried libraries; register NVIDIA's OpenCL for Debian's
# ocl-icd loader (preloaded from the carried folder: the CUDA toolkit's
# libOpenCL lists PoCL first, NOTES.md); export ResNet-50 and the encoder
# with python3 (torch) through bench/torch_bench.py; time each at batch 1
# and 32 on the OpenCL engine (--device opencl:NVIDIA), the CPU engine (all
# cores) and eager PyTorch CUDA (FP32, TF32 off); mount a repository of
# both models with KIND_AUTO and --opencl-device=NVIDIA, print each model's
# status (the choice and both warm-up timings), run one request per model
# through the mount and compare it with `modelfs run --device cpu`.
# Everything lands in $OUT (the device tool's output folder) when set, else
# /tmp/mfs-gpu/out: results.md, results.jsonl, the daemon's log.
set -u
CARRY=$(cd "${1:-.gpu}" && pwd)
TOP=$(cd "$(dirname "$0")/.." && pwd)
W=/tmp/mfs-gpu
R=${OUT:-$W/out}
PY=${PYTHON:-python3}
mkdir -p "$W" "$R"
JS="$R/results.jsonl"
: > "$JS"
log() { echo "== $*" >&2; }

tar xzf "$CARRY/lib.tgz" -C "$W"
export LD_LIBRARY_PATH="$W/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$CARRY/bin:$PATH"
# KEEP_ICD=1 (a try-out on a machine without NVIDIA's library) keeps the
# system's OpenCL platforms.
if [ "${KEEP_ICD:-0}" != 1 ]; then
	mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd
	export OCL_ICD_VENDORS=/tmp/icd
	export LD_PRELOAD="$W/lib/libOpenCL.so.1"
fi
export MODELFS_CACHE_DIR="$W/cl-cache"
SEL=${OPENCL_DEVICE:-NVIDIA}
THREADS=$(nproc)
BENCH="$CARRY/bin/bench_engine"
MFS="$CARRY/bin/modelfs"

log "OpenCL devices"
"$BENCH" --list-devices || { echo "no OpenCL device: check the ICD setup" >&2; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null

log "export models"
# torch_bench.py imports tests/models/export_models.py; its own python
LD_PRELOAD= LD_LIBRARY_PATH= "$PY" "$TOP/bench/torch_bench.py" export "$W/models" >&2 || exit 1

MODELS=${MODELS:-resnet50 encoder}
for m in $MODELS; do
	for b in ${BATCHES:-1 32}; do
		for dev in "opencl:$SEL" cpu; do
			log "$m batch $b $dev"
			iters=20
			[ "$dev" = cpu ] && [ "$b" = 32 ] && iters=5
			j=$("$BENCH" "$W/models/$m/1/model.onnx" --batch "$b" --iters "$iters" \
				--threads "$THREADS" --device "$dev" 2>"$W/bench.err") ||
				{ cat "$W/bench.err" >&2; j='{"median_ms": null}'; }
			e=${dev%%:*}
			echo "{\"engine\": \"modelfs-$e\", \"model\": \"$m\", \"batch\": $b, ${j#\{}" >> "$JS"
		done
	done
done

log "PyTorch"
LD_PRELOAD= LD_LIBRARY_PATH= "$PY" "$TOP/bench/torch_bench.py" bench --device "${TORCH_DEVICE:-cuda}" >> "$JS" ||
	echo "PyTorch bench failed" >&2

log "mount with KIND_AUTO"
REPO="$W/repo"
MNT="$W/mnt"
rm -rf "$REPO"
mkdir -p "$REPO" "$MNT"
for m in $MODELS; do
	mkdir -p "$REPO/$m/1"
	ln -sf "$W/models/$m/1/model.onnx" "$REPO/$m/1/model.onnx"
	printf 'name: "%s"\ninstance_group [ { count: 1, kind: KIND_AUTO } ]\n' "$m" > "$REPO/$m/config.pbtxt"
done
LD_PRELOAD= LD_LIBRARY_PATH= "$PY" - "$W" <<'EOF'
import sys, numpy as np
w = sys.argv[1]
rng = np.random.default_rng(0)
np.save(w + "/input.npy", rng.standard_normal((1, 3, 224, 224), dtype=np.float32))
np.save(w + "/input_ids.npy", rng.integers(0, 1000, (1, 128), dtype=np.int64))
EOF
"$MFS" -f --opencl-device="$SEL" --threads="$THREADS" "$REPO" "$MNT" 2>"$R/daemon.log" &
DPID=$!
for i in $(seq 1 600); do
	ready=1
	for m in $MODELS; do
		[ "$(cat "$MNT/$m/status" 2>/dev/null | cut -d' ' -f1)" = READY ] || ready=0
	done
	[ $ready = 1 ] && break
	kill -0 $DPID 2>/dev/null || break
	sleep 0.2
done
STATUS=""
for m in $MODELS; do
	s=$(cat "$MNT/$m/status" 2>&1)
	echo "$m: $s" >&2
	STATUS="$STATUS| $m | \`$s\` |"$'\n'
	in=input; out=logits
	[ $m = encoder ] && { in=input_ids; out=hidden; }
	req="$MNT/$m/requests/check"
	mkdir -p "$R/$m"
	if mkdir "$req" && cp "$W/$in.npy" "$req/$in.npy" && cat "$req/$out.npy" > "$R/$m/mount.npy"; then
		rm -r "$req"
		"$MFS" run "$REPO/$m" "$in=$W/$in.npy" --device cpu --threads "$THREADS" --out "$R/$m" 2>&1
		LD_PRELOAD= LD_LIBRARY_PATH= "$PY" -c "
import numpy as np
a = np.load('$R/$m/mount.npy').astype(np.float64); c = np.load('$R/$m/$out.npy').astype(np.float64)
d = float(np.max(np.abs(a - c))); s = float(np.max(np.abs(c)))
print('$m through the mount vs the CPU engine: max|diff| %.3g, max|ref| %.3g: %s' % (d, s, 'PASS' if d <= 1e-3 * s else 'FAIL'))
" | tee -a "$R/compare.txt" >&2
	else
		echo "$m: request through the mount failed: $(cat "$req/error" 2>/dev/null)" | tee -a "$R/compare.txt" >&2
	fi
done
cat "$MNT/resnet50/stats.json" > "$R/resnet50-stats.json" 2>/dev/null
fusermount3 -u "$MNT" 2>/dev/null || umount "$MNT" 2>/dev/null
wait $DPID

log "table"
LD_PRELOAD= LD_LIBRARY_PATH= "$PY" - "$JS" > "$R/results.md" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
dev = next((r["device"] for r in rows if r.get("device") not in (None, "cpu")), "GPU")
t = {}
for r in rows:
    t[(r["model"], r["batch"], r["engine"])] = r.get("median_ms")
engines = ["modelfs-opencl", "modelfs-cpu", "pytorch-cuda"]
def f(v):
    return "%.2f" % v if isinstance(v, (int, float)) else "-"
print("Latency, median ms (%s; FP32; modelfs runs include input upload and output download)\n" % dev)
print("| model | batch | modelfs OpenCL | modelfs CPU | PyTorch CUDA |")
print("| --- | ---: | ---: | ---: | ---: |")
for m in ("resnet50", "encoder"):
    for b in (1, 32):
        print("| %s | %d | %s |" % (m, b, " | ".join(f(t.get((m, b, e))) for e in engines)))
EOF
{
	cat "$R/results.md"
	echo
	echo "KIND_AUTO through the mount (status: choice, warm-up timings):"
	echo
	echo "| model | status |"
	echo "| --- | --- |"
	printf '%s' "$STATUS"
	echo
	cat "$R/compare.txt" 2>/dev/null
} | tee "$R/summary.md"

#!/bin/bash
# gpu-bench.sh - the OpenCL engine on a real NVIDIA GPU (the device tool's
# machine), against the CPU engine and PyTorch CUDA; then a mount with
# KIND_AUTO to show the router's choice.  Prints a markdown table.
#
#   bash scripts/gpu-bench.sh [CARRY_DIR]     (default .gpu, from gpu-carry.sh)
#
# Steps: unpack the carried libraries; register NVIDIA's OpenCL for Debian's
# ocl-icd loader (preloaded from the carried folder: the CUDA toolkit's
# libOpenCL lists PoCL first, NOTES.md); export ResNet-50, MobileNetV2,
# the encoder, the BERT-like and the GPT-2-like models with python3 (torch)
# through bench/torch_bench.py; time each at batch 1 and 32 on the OpenCL
# engine (--device opencl:NVIDIA), the CPU engine (all cores) and eager
# PyTorch CUDA (FP32, TF32 off); at batch 32 the OpenCL run is repeated
# with MODELFS_OCL_PROFILE=1 (per-kernel device times, profile.txt) and,
# with CONV_AB=1, with MODELFS_OCL_CONV=gemm (the im2col + CLBlast path);
# mount a repository of the models with KIND_AUTO and
# --opencl-device=NVIDIA, print each model's status (the choice and both
# warm-up timings), run one request per model through the mount and
# compare it with `modelfs run --device cpu`.  Everything lands in $OUT
# (the device tool's output folder) when set, else /tmp/mfs-gpu/out:
# results.md, results.jsonl, profile.txt, the daemon's log.
# MODELS, BATCHES and CPU=0 (skip the CPU engine's timings) narrow a run.
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

# the carried libraries, NVIDIA's OpenCL (KEEP_ICD=1: the system's)
. "$TOP/scripts/gpu-env.sh"
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

MODELS=${MODELS:-resnet50 mobilenetv2 encoder bert gpt2}
MODELS=$(for m in $MODELS; do [ -f "$W/models/$m/1/model.onnx" ] && echo $m; done)
# bench_one ENGINE MODEL BATCH DEVICE [ENV...]: one bench_engine run, one
# JSON line
bench_one() {
	local eng=$1 m=$2 b=$3 dev=$4 iters=20 j
	shift 4
	[ "$dev" = cpu ] && [ "$b" = 32 ] && iters=5
	log "$m batch $b $eng"
	j=$(env "$@" "$BENCH" "$W/models/$m/1/model.onnx" --batch "$b" --iters "$iters" \
		--threads "$THREADS" --device "$dev" 2>"$W/bench.err") ||
		{ cat "$W/bench.err" >&2; j='{"median_ms": null}'; }
	echo "{\"engine\": \"$eng\", \"model\": \"$m\", \"batch\": $b, ${j#\{}" >> "$JS"
}
: > "$R/profile.txt"
for m in $MODELS; do
	for b in ${BATCHES:-1 32}; do
		bench_one modelfs-opencl $m $b "opencl:$SEL"
		[ "${CONV_AB:-0}" = 1 ] && bench_one modelfs-opencl-gemm $m $b "opencl:$SEL" MODELFS_OCL_CONV=gemm
		[ "${CPU:-1}" = 1 ] && bench_one modelfs-cpu $m $b cpu
		if [ "$b" = 32 ]; then
			echo "## $m batch $b" >> "$R/profile.txt"
			MODELFS_OCL_PROFILE=1 "$BENCH" "$W/models/$m/1/model.onnx" --batch $b --iters 5 \
				--device "opencl:$SEL" 2>> "$R/profile.txt" >/dev/null
		fi
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
LD_PRELOAD= LD_LIBRARY_PATH= "$PY" "$TOP/bench/torch_bench.py" inputs "$W/in" >&2
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
	out=$(cat "$W/in/$m/output")
	ins=$(cd "$W/in/$m" && ls *.npy)
	req="$MNT/$m/requests/check"
	C="$W/cmp/$m"
	mkdir -p "$C"
	if mkdir "$req" && (cd "$W/in/$m" && cp $ins "$req/") && cat "$req/$out.npy" > "$C/mount.npy"; then
		rm -r "$req"
		"$MFS" run "$REPO/$m" $(for f in $ins; do echo "${f%.npy}=$W/in/$m/$f"; done) \
			--device cpu --threads "$THREADS" --out "$C" 2>&1
		LD_PRELOAD= LD_LIBRARY_PATH= "$PY" -c "
import numpy as np
a = np.load('$C/mount.npy').astype(np.float64); c = np.load('$C/$out.npy').astype(np.float64)
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
engines = ["modelfs-opencl", "modelfs-opencl-gemm", "modelfs-cpu", "pytorch-cuda"]
heads = ["modelfs OpenCL", "OpenCL, MODELFS_OCL_CONV=gemm", "modelfs CPU", "PyTorch CUDA"]
engines, heads = zip(*([(e, h) for e, h in zip(engines, heads)
                        if any(k[2] == e for k in t)] or [("modelfs-opencl", heads[0])]))
models = []
for r in rows:
    if r["model"] not in models:
        models.append(r["model"])
def f(v):
    return "%.2f" % v if isinstance(v, (int, float)) else "-"
print("Latency, median ms (%s; FP32; modelfs runs include input upload and output download)\n" % dev)
print("| model | batch | %s |" % " | ".join(heads))
print("| --- | ---: |%s" % (" ---: |" * len(heads)))
for m in models:
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

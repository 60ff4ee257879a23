#!/bin/bash
# gpu-generate.sh - issue 30's text generation benchmark on the device
# tool's GPU host: GPT-2 small's shape with its key/value cache
# (bench/gpt2_kv.py, exported there with the host's torch), a prompt of
# PROMPT tokens (128) then NEW (128) greedy, 1 stream and a batch of
# STREAMS (8), on
#   modelfs-opencl  bench_generate --device opencl:NVIDIA (the cache stays
#                   on the device between steps: engine.h, "Resident
#                   tensors"; each step uploads ids, mask and positions
#                   and downloads the logits)
#   modelfs-cpu     bench_generate on every core (CPU=0 skips it and the next)
#   ort-cpu         ONNX Runtime's Python package on every core, one loop
#                   over the batch (bench/ort_generate.py), if installed
#   torch-cuda      PyTorch eager with its cache (gpt2_kv.py bench: FP32,
#                   TF32 off), the peer issue 30 names
# Prints a markdown table; results.jsonl and results.md land in $OUT (the
# device tool's output folder) when set, else /tmp/mfs-gpu/out.
#
#   here:    sh scripts/gpu-carry.sh
#   device:  bash scripts/gpu-generate.sh .gpu      (carry [".gpu"])
set -u
CARRY=$(cd "${1:-.gpu}" && pwd)
TOP=$(cd "$(dirname "$0")/.." && pwd)
W=/tmp/mfs-gpu
R=${OUT:-$W/out}
PY=${PYTHON:-python3}
P=${PROMPT:-128}
N=${NEW:-128}
S=${STREAMS:-8}
mkdir -p "$W" "$R"
JS="$R/results.jsonl"
: > "$JS"
log() { echo "== $*" >&2; }

# the carried libraries, NVIDIA's OpenCL (KEEP_ICD=1: the system's)
. "$TOP/scripts/gpu-env.sh"
SEL=${OPENCL_DEVICE:-NVIDIA}
GEN="$CARRY/bin/bench_generate"
M="$W/gpt2_kv.onnx"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null

log "export $M"
[ -f "$M" ] || LD_PRELOAD= LD_LIBRARY_PATH= "$PY" "$TOP/bench/gpt2_kv.py" export "$M" >&2 || exit 1

# one JSON line per (engine, batch)
mfs() {   # ENGINE BATCH DEVICE
	log "$1 batch $2"
	local j
	j=$("$GEN" "$M" --prompt "$P" --new "$N" --batch "$2" --threads "$(nproc)" --device "$3" \
		--rounds 3 --ids 2>"$W/gen.err") || { cat "$W/gen.err" >&2; j='{"tokens_per_s": null}'; }
	echo "{\"engine\": \"$1\", \"batch\": $2, ${j#\{}" >> "$JS"
}
for b in 1 "$S"; do
	mfs modelfs-opencl "$b" "opencl:$SEL"
	if [ "${CPU:-1}" = 1 ]; then
		mfs modelfs-cpu "$b" cpu
		log "ort-cpu batch $b"
		j=$(LD_PRELOAD= LD_LIBRARY_PATH= "$PY" "$TOP/bench/ort_generate.py" "$M" "$P" "$N" "$b" \
			"$(nproc)" 3) && echo "{\"engine\": \"ort-cpu\", \"batch\": $b, ${j#\{}" >> "$JS" ||
			log "ONNX Runtime (python3 onnxruntime) failed or is missing"
	fi
	log "torch-cuda batch $b"
	LD_PRELOAD= LD_LIBRARY_PATH= "$PY" "$TOP/bench/gpt2_kv.py" bench --device "${TORCH_DEVICE:-cuda}" \
		--prompt "$P" --new "$N" --batch "$b" --rounds 3 >> "$JS" || log "torch failed"
done

LD_PRELOAD= LD_LIBRARY_PATH= "$PY" - "$JS" "$P" "$N" > "$R/results.md" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("GPT-2 small shape with its KV cache, prompt %s, %s new tokens greedy (best of 3)" % (sys.argv[2], sys.argv[3]))
print()
print("| engine | streams | tokens/s | first token ms | torch/engine time | ids as torch's |")
print("|---|---|---|---|---|---|")
torch = {r["batch"]: r for r in rows if r["engine"].startswith("torch")}
for r in rows:
    t = torch.get(r["batch"])
    tps = r.get("tokens_per_s")
    ratio = "%.2f" % (tps / t["tokens_per_s"]) if tps and t and t.get("tokens_per_s") else "-"
    same = "-" if not t or "ids" not in r else ("yes" if r["ids"] == t.get("ids") else "no")
    print("| %s | %s | %s | %s | %s | %s |" % (r["engine"], r["batch"], tps, r.get("ttft_ms"), ratio, same))
print()
for b in sorted({r["batch"] for r in rows}):
    m = [r for r in rows if r["batch"] == b and r["engine"] == "modelfs-cpu" and r.get("tokens_per_s")]
    o = [r for r in rows if r["batch"] == b and r["engine"] == "ort-cpu" and r.get("tokens_per_s")]
    if m and o:
        print("batch %s: modelfs-cpu tokens/s over ONNX Runtime's: %.2f" % (b, m[0]["tokens_per_s"] / o[0]["tokens_per_s"]))
EOF
cat "$R/results.md"

#!/bin/sh
# Text generation rows of make bench (issue 30): GPT-2 small's shape with
# its key/value cache (bench/gpt2_kv.py: 12 layers, 768 wide, 12 heads,
# vocabulary 50257, seeded random weights), a prompt of BENCH_GEN_PROMPT
# tokens (128) then BENCH_GEN_NEW (128) new tokens, greedy, on
# BENCH_THREADS (2) threads:
#   modelfs  build/bench/bench_generate: the engine in-process, the decode
#            loop feeding present.N.* back as past_key_values.N.*; 8
#            streams are one batch of 8 rows per step (what the daemon's
#            in-flight batching makes of 8 concurrent generations);
#   ort      ONNX Runtime 1.30 (bench/ort_generate.js) in the loop an
#            obvious client writes; 8 streams both as 8 concurrent loops
#            on one session and as one loop over a batch of 8;
#   daemon   bench/bench_generate_fs.py: 1 and 8 concurrent clients of
#            MOUNT/gpt2_kv/generate; MOUNT is MODELFS_MOUNT (a mount with
#            the model as gpt2_kv), else, as root, MODELFS (./modelfs)
#            mounted here with --threads=BENCH_THREADS.
# Ratios are ONNX Runtime's time over modelfs's, i.e. modelfs tokens/s over
# ONNX Runtime's: above 1, modelfs is faster.  CPU ms per token (both
# processes' CPU time, spinning threads included) is the figure that
# waiting for a CPU on the shared development VM does not inflate.  Every side warms up with a
# generation of 2 tokens; each figure is the best of BENCH_GEN_ROUNDS (1).
# BENCH_GEN_BASELINE=path/to/another/bench_generate adds its tokens/s in
# the same run (an A/B of an engine change).  Ids of stream 0 are compared
# between the sides (random weights: float noise may flip a near tie).
set -e
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
THREADS=${BENCH_THREADS:-2}
P=${BENCH_GEN_PROMPT:-128}
N=${BENCH_GEN_NEW:-128}
S=${BENCH_GEN_STREAMS:-8}
R=${BENCH_GEN_ROUNDS:-1}
G=${BENCH_GEN_MODEL:-build/bench-models/gpt2_kv.onnx}
BASE=${BENCH_GEN_BASELINE:-}
[ -d bench/node_modules/onnxruntime-node ] || (cd bench && npm install --ignore-scripts --no-audit --no-fund >/dev/null)
[ -f "$G" ] || /usr/bin/python3 bench/make_bench_models.py "$(dirname "$G")" >/dev/null

field() { sed -n "s/.*\"$1\": *\([0-9.]*\).*/\1/p"; }
ids() { sed -n 's/.*"ids": *\[\([^]]*\)\].*/\1/p' | tr -d ' '; }
ratio() { echo "$1 $2" | awk '{ if ($2 > 0) printf "%.2f", $1 / $2; else printf "-" }'; }
row() { printf '%-44s %10s %10s %10s\n' "$@"; }
mfs() { build/bench/bench_generate "$G" --prompt "$P" --new "$N" --threads "$THREADS" --rounds "$R" --ids "$@"; }
ort() { node bench/ort_generate.js "$G" "$P" "$N" "$1" "$THREADS" "${2:-batched}" "$R"; }

echo
echo "text generation: GPT-2 small shape with its KV cache, prompt $P, $N new tokens greedy, $THREADS threads, best of $R"
echo "(ratio: modelfs tokens/s over ONNX Runtime's, or ONNX Runtime's time to first token over modelfs's: above 1, modelfs faster)"
row what modelfs ort ratio
m1=$(mfs); o1=$(ort 1)
row "1 stream: tokens/s" "$(echo "$m1" | field tokens_per_s)" "$(echo "$o1" | field tokens_per_s)" \
	"$(ratio "$(echo "$m1" | field tokens_per_s)" "$(echo "$o1" | field tokens_per_s)")"
row "1 stream: time to first token, ms" "$(echo "$m1" | field ttft_ms)" "$(echo "$o1" | field ttft_ms)" \
	"$(ratio "$(echo "$o1" | field ttft_ms)" "$(echo "$m1" | field ttft_ms)")"
row "1 stream: decode step, ms (median)" "$(echo "$m1" | field step_ms)" "$(echo "$o1" | field step_ms)" \
	"$(ratio "$(echo "$o1" | field step_ms)" "$(echo "$m1" | field step_ms)")"
row "1 stream: CPU ms per token (whole process)" "$(echo "$m1" | field cpu_ms_per_token)" \
	"$(echo "$o1" | field cpu_ms_per_token)" \
	"$(ratio "$(echo "$o1" | field cpu_ms_per_token)" "$(echo "$m1" | field cpu_ms_per_token)")"
m8=$(mfs --batch "$S"); o8c=$(ort "$S" concurrent); o8b=$(ort "$S" batched)
t8=$(echo "$m8" | field tokens_per_s)
row "$S streams: tokens/s (ort: $S concurrent loops)" "$t8" "$(echo "$o8c" | field tokens_per_s)" \
	"$(ratio "$t8" "$(echo "$o8c" | field tokens_per_s)")"
row "$S streams: tokens/s (ort: one batch of $S)" "$t8" "$(echo "$o8b" | field tokens_per_s)" \
	"$(ratio "$t8" "$(echo "$o8b" | field tokens_per_s)")"
echo "modelfs $S streams over 1 stream, tokens/s: $(ratio "$t8" "$(echo "$m1" | field tokens_per_s)")x (issue 30: at least 3)"
same=no
[ "$(echo "$m1" | ids)" = "$(echo "$o1" | ids)" ] && same=yes
echo "stream 0's ids the same in modelfs and ONNX Runtime: $same"
if [ -n "$BASE" ]; then
	b1=$("$BASE" "$G" --prompt "$P" --new "$N" --threads "$THREADS" --rounds "$R")
	echo "baseline $BASE: 1 stream $(echo "$b1" | field tokens_per_s) tokens/s, first token $(echo "$b1" | field ttft_ms) ms"
fi
# The daemon: MODELFS_MOUNT as given, else (as root, with a built daemon)
# one mounted here on a repository of the model alone.
MODELFS=${MODELFS:-./modelfs}
if [ -z "${MODELFS_MOUNT:-}" ] && [ -x "$MODELFS" ] && [ "$(id -u)" = 0 ]; then
	T=$(mktemp -d /tmp/modelfs-bench-gen.XXXXXX)
	trap 'umount "$T/mnt" 2>/dev/null || true; rm -rf "$T"' EXIT
	mkdir -p "$T/repo/gpt2_kv/1" "$T/mnt"
	ln "$G" "$T/repo/gpt2_kv/1/model.onnx" 2>/dev/null || cp "$G" "$T/repo/gpt2_kv/1/model.onnx"
	# Auto-complete would give it Triton's max_batch_size 4: room for
	# all the streams in one step.
	echo "max_batch_size: $S" > "$T/repo/gpt2_kv/config.pbtxt"
	"$MODELFS" --threads="$THREADS" "$T/repo" "$T/mnt"
	for i in $(seq 1 1200); do
		grep -q READY "$T/mnt/gpt2_kv/status" 2>/dev/null && break
		sleep 0.1
	done
	if [ -e "$T/mnt/gpt2_kv/generate" ]; then
		MODELFS_MOUNT=$T/mnt
	else
		echo "daemon rows skipped: $MODELFS gives gpt2_kv no generate file"
	fi
fi
if [ -n "${MODELFS_MOUNT:-}" ]; then
	d1=$(/usr/bin/python3 bench/bench_generate_fs.py "$MODELFS_MOUNT" gpt2_kv "$P" "$N" 1 "$R")
	d8=$(/usr/bin/python3 bench/bench_generate_fs.py "$MODELFS_MOUNT" gpt2_kv "$P" "$N" "$S" "$R")
	row "daemon, 1 client: tokens/s" "$(echo "$d1" | field tokens_per_s)" "$(echo "$o1" | field tokens_per_s)" \
		"$(ratio "$(echo "$d1" | field tokens_per_s)" "$(echo "$o1" | field tokens_per_s)")"
	row "daemon, 1 client: time to first token, ms" "$(echo "$d1" | field ttft_ms)" "$(echo "$o1" | field ttft_ms)" \
		"$(ratio "$(echo "$o1" | field ttft_ms)" "$(echo "$d1" | field ttft_ms)")"
	row "daemon, $S clients: tokens/s (ort: batch of $S)" "$(echo "$d8" | field tokens_per_s)" "$(echo "$o8b" | field tokens_per_s)" \
		"$(ratio "$(echo "$d8" | field tokens_per_s)" "$(echo "$o8b" | field tokens_per_s)")"
	echo "daemon $S clients over 1 client, tokens/s: $(ratio "$(echo "$d8" | field tokens_per_s)" "$(echo "$d1" | field tokens_per_s)")x"
fi

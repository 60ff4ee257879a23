#!/bin/sh
# bench-load.sh REPO [MODELFS]: how long a daemon start on REPO takes until
# every model is READY (issue 31: KIND_AUTO's engine choice in a budget).
#
#   cpu      --device=cpu: each model loaded once on the engine KIND_AUTO
#            picks on PoCL (the baseline), with the sum of the per-model
#            load times the log reports
#   auto     KIND_AUTO with an empty --cache-dir: every model READY on the
#            CPU, then timed after the loads (the second time printed:
#            until the last model is loaded again on its chosen engine)
#   cached   KIND_AUTO again on that cache: the stored choices
#
# FIRST=1: a true first start: the OpenCL programs and PoCL's kernel
# cache start empty too (POCL_CACHE_DIR, MODELFS_CACHE_DIR under the
# work directory); otherwise they stay in their usual caches and only the
# engine choices start empty.  Run it on an idle machine; the
# REPO of scripts/export_torchvision.py is the issue's 20 real models.
set -eu
REPO=$1
MODELFS=${2:-./modelfs}
WORK=$(mktemp -d /tmp/bench-load.XXXXXX)
if [ -n "${FIRST:-}" ]; then
	export POCL_CACHE_DIR="$WORK/pocl" MODELFS_CACHE_DIR="$WORK/opencl"
	mkdir -p "$POCL_CACHE_DIR"
else
	export MODELFS_CACHE_DIR="${MODELFS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/modelfs/opencl}"
fi
N=$(find "$REPO" -mindepth 1 -maxdepth 1 -type d | wc -l)

# start NAME OPTIONS...: seconds until all N models are READY
start() {
	name=$1
	shift
	mkdir -p "$WORK/mnt"
	t0=$(date +%s.%N)
	"$MODELFS" -f "$@" "$REPO" "$WORK/mnt" 2> "$WORK/$name.log" &
	pid=$!
	while :; do
		ready=$(grep -o '"state": *"READY"' "$WORK/mnt/.index.json" 2>/dev/null | wc -l || true)
		[ "$ready" -ge "$N" ] && break
		kill -0 "$pid" 2>/dev/null || { echo "modelfs exited:"; cat "$WORK/$name.log"; exit 1; }
		sleep 0.1
	done
	t1=$(date +%s.%N)
	# the deferred trials: each model that waited is loaded again
	while :; do
		waited=$(grep -c 'READY on .*until timed' "$WORK/$name.log" || true)
		ready=$(grep -c 'READY on' "$WORK/$name.log" || true)
		[ "$ready" -ge $((N + waited)) ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	t2=$(date +%s.%N)
	fusermount3 -u "$WORK/mnt"
	wait "$pid" || true
	sum=$(grep -v 'until timed' "$WORK/$name.log" |
		sed -n 's/.*READY on [a-z]* (loaded in \([0-9.]*\) s.*/\1/p' |
		awk '{s += $1} END {printf "%.1f", s}')
	printf '%-7s %d models READY after %6.1f s, on their chosen engines after %6.1f s (sum of per-model loads there %s s)\n' \
		"$name" "$N" "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t0" | bc)" "$sum"
}

start cpu --device=cpu
start auto --cache-dir "$WORK/cache"
start cached --cache-dir "$WORK/cache"
grep -h 'READY on' "$WORK/auto.log" | grep -v 'until timed' | sed 's/.*model .\([^ ]*\). version.*READY on \([a-z]*\) (loaded in \([0-9.]*\) s; \(.*\))$/  \1 \2 \3 s: \4/' | cut -c1-160
rm -rf "$WORK"

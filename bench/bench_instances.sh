#!/bin/sh
# Instance groups measured (issue 13): ResNet-18 requests/s with 8
# clients (request directories, bench_fs_load.py's cycle) for
# instance_group count 1, 2 and 4 (the engine divides --threads between
# runs in flight), no dynamic batching; the three mounts are measured in
# alternating rounds, ROUNDS times (default 3), and the median printed.
# Needs build/models (make models); run as root (FUSE).
# usage: sh bench/bench_instances.sh [ROUNDS] [REQUESTS_PER_CLIENT]
set -e
PY=/usr/bin/python3
ROUNDS=${1:-3}
N=${2:-4}
T=$(mktemp -d /tmp/modelfs-bench-inst.XXXXXX)
cleanup() {
	for c in 1 2 4; do umount "$T/mnt$c" 2>/dev/null || true; done
	rm -rf "$T"
}
trap cleanup EXIT
[ -f build/models/resnet18/1/model.onnx ] || $PY tests/models/export_models.py build/models >/dev/null 2>&1
for c in 1 2 4; do
	mkdir -p "$T/repo$c/resnet18/1" "$T/mnt$c"
	cp build/models/resnet18/1/model.onnx "$T/repo$c/resnet18/1/"
	printf 'name: "resnet18"\nmax_batch_size: 8\ninstance_group [ { count: %d, kind: KIND_CPU } ]\n' $c \
		> "$T/repo$c/resnet18/config.pbtxt"
	${MODELFS:-./modelfs} "$T/repo$c" "$T/mnt$c"
done
for c in 1 2 4; do
	for i in $(seq 1 200); do grep -q READY "$T/mnt$c/resnet18/status" 2>/dev/null && break; sleep 0.1; done
done
for r in $(seq 1 "$ROUNDS"); do
	for c in 1 2 4; do
		printf '%s %s\n' $c "$($PY bench/bench_clients.py "$T/mnt$c" resnet18 8 "$N")"
	done
done > "$T/rates"
echo "resnet18, 8 clients, requests/s (median of $ROUNDS rounds; load average: $(cut -d' ' -f1-3 /proc/loadavg))"
for c in 1 2 4; do
	printf 'instances %d: %s req/s\n' $c "$(awk -v c=$c '$1 == c {print $2}' "$T/rates" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')"
done

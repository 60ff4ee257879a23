#!/bin/sh
# The cost of a custom backend's worker process, same run A/B: the median
# latency of one `infer` request on a custom backend (tests/backends/fault.c,
# Y = 2X on 16 floats, in its worker) against an ONNX model run in the
# daemon (examples/add_sub, 16 floats), interleaved on one mount.
#   usage: sh bench/run-bench-backend.sh [N]   (after make all unit-bins)
set -e
cd "$(dirname "$0")/.."
n=${1:-1000}
tmp=$(mktemp -d)
trap 'fusermount3 -u "$tmp/mnt" 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/repo/fault/1" "$tmp/mnt"
cp -r examples/add_sub "$tmp/repo/"
printf '%s\n' 'backend: "fault"' \
	'input [ { name: "X" data_type: TYPE_FP32 dims: [ 16 ] } ]' \
	'output [ { name: "Y" data_type: TYPE_FP32 dims: [ 16 ] } ]' > "$tmp/repo/fault/config.pbtxt"
cp build/tests/backends/libmodelfs_fault.so "$tmp/repo/fault/1/"
./modelfs "$tmp/repo" "$tmp/mnt"
/usr/bin/python3 - "$tmp/mnt" "$n" <<'PYEOF'
import json, os, sys, time, statistics
mnt, n = sys.argv[1], int(sys.argv[2])
x = list(range(1, 17))
reqs = {
    'fault': json.dumps({'inputs': [{'name': 'X', 'datatype': 'FP32', 'shape': [16], 'data': x}]}).encode(),
    'add_sub': json.dumps({'inputs': [{'name': 'INPUT0', 'datatype': 'FP32', 'shape': [16], 'data': x},
                                      {'name': 'INPUT1', 'datatype': 'FP32', 'shape': [16], 'data': x}]}).encode(),
}
fds = {m: os.open(f'{mnt}/{m}/infer', os.O_RDWR) for m in reqs}
t = {m: [] for m in reqs}
for i in range(n):
    for m, body in reqs.items():
        t0 = time.perf_counter()
        os.write(fds[m], body)
        r = os.read(fds[m], 1 << 16)
        t[m].append(time.perf_counter() - t0)
        assert b'error' not in r, r
for m in reqs:
    print(f'{m}: median {statistics.median(t[m]) * 1e6:.0f} us over {n}')
print(f'ratio fault/add_sub: {statistics.median(t["fault"]) / statistics.median(t["add_sub"]):.2f}')
PYEOF

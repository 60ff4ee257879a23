#!/bin/sh
# fs-profile.sh - where a request's time goes on the filesystem path,
# against the bare FUSE server (bench/bare_fs.c), for the two cycles of
# `make bench-fs` on the add_sub model (bench/bench_fs.py's loops):
#   infer   write a KServe JSON request, read the answer, read EOF
#   reqdir  a reused request directory: write INPUT0.npy and INPUT1.npy,
#           read OUTPUT0.npy
# For each: the FUSE operations one cycle sends (counted in the daemon's
# `-o debug` log), and per cycle the server's CPU time (all its threads,
# user part apart) and context switches (from /proc), with the client's
# wall time.  Run as root in the repository root after `make all
# build/bench/bare_fs`; N cycles per measure (default 3000).
set -e
N=${N:-3000}
PY=${PYTHON:-/usr/bin/python3}
B=${BUILD:-build}
T=$(mktemp -d /tmp/modelfs-fs-profile.XXXXXX)
mkdir "$T/mnt" "$T/bare" "$T/dbg"
cleanup() {
	for m in "$T/mnt" "$T/bare" "$T/dbg"; do umount "$m" 2>/dev/null || true; done
	rm -rf "$T"
}
trap cleanup EXIT
$PY bench/make_fs_models.py "$T/repo" examples - >/dev/null
cat > "$T/client.py" <<'EOF'
import os, sys, time
import numpy as np
sys.path.insert(0, "bench")
from bench_fs import cycles
d, what, n, pid = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
tick = os.sysconf("SC_CLK_TCK")


def usage():
    """(CPU seconds, user seconds, context switches) of every thread of pid"""
    f = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
    sw = 0
    for tid in os.listdir("/proc/%s/task" % pid):
        for line in open("/proc/%s/task/%s/status" % (pid, tid)):
            if "ctxt_switches" in line:
                sw += int(line.split()[1])
    return (int(f[11]) + int(f[12])) / tick, int(f[11]) / tick, sw


one, _ = cycles(d, what)
for _ in range(200):
    one()
if pid == "0":
    sys.exit(0)
c0, u0, s0 = usage()
ts = []
for _ in range(n):
    t = time.perf_counter()
    one()
    ts.append(time.perf_counter() - t)
c1, u1, s1 = usage()
print("%-6s client median %6.1f us   server CPU %6.1f us (user %5.1f)   context switches %4.1f"
      % (what, float(np.median(ts)) * 1e6, (c1 - c0) / n * 1e6, (u1 - u0) / n * 1e6, (s1 - s0) / n))
EOF

# FUSE operations per cycle: 200 cycles against a daemon logging them
${MODELFS:-./modelfs} -f -o debug "$T/repo" "$T/dbg" 2> "$T/debug.log" &
for i in $(seq 1 100); do grep -q READY "$T/dbg/add_sub/status" 2>/dev/null && break; sleep 0.1; done
for what in infer reqdir; do
	: > "$T/debug.log"
	$PY "$T/client.py" "$T/dbg/add_sub" $what 0 0
	echo "$what: FUSE operations per cycle: $(grep -a -o 'opcode: [A-Z_]*' "$T/debug.log" |
		awk '{n[$2]++} END {for (k in n) if (n[k] >= 100) printf "%s %.1f  ", k, n[k] / 200}')"
done
umount "$T/dbg"

"$B/bench/bare_fs" "$T/bare" &
bp=$!
${MODELFS:-./modelfs} "$T/repo" "$T/mnt"
for i in $(seq 1 100); do
	mountpoint -q "$T/bare" && grep -q READY "$T/mnt/add_sub/status" 2>/dev/null && break
	sleep 0.1
done
mp=$(pgrep -n -f "modelfs.*$T/repo")
for what in infer reqdir; do
	echo "bare    $($PY "$T/client.py" "$T/bare" $what "$N" $bp)"
	echo "modelfs $($PY "$T/client.py" "$T/mnt/add_sub" $what "$N" "$mp")"
done

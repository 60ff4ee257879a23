#!/usr/bin/env bats
# Many clients at once, dynamic batching, readers that wait and are
# killed, SIGTERM while requests wait.

load helpers

setup_file() {
	REPO=$(make_test_repo)
	export REPO
}

teardown_file() {
	rm -rf "$REPO"
}

teardown() {
	unmount_repo
}

setup() {
	T="$BATS_TEST_TMPDIR"
}

@test "16 shell clients x 100 requests on add_sub, every result checked" {
	mount_repo "$REPO"
	for c in $(seq 1 16); do
		(
			for k in $(seq 1 100); do
				req="$MNT/add_sub/requests/c$c-$k"
				mkdir "$req" || exit 1
				seq $c $((c + 15)) > "$req/INPUT0.txt"
				seq $k $((k + 15)) > "$req/INPUT1.txt"
				want=""
				for i in $(seq 0 15); do want="$want $((c - k))"; done
				got=$(cat "$req/OUTPUT1.txt")
				[ "$got" = "${want# }" ] || { echo "client $c request $k: got '$got'"; exit 1; }
				rm -r "$req" || exit 1
			done
		) &
		clients="$clients $!"
	done
	fails=0
	for pid in $clients; do
		wait "$pid" || fails=$((fails + 1))
	done
	[ "$fails" -eq 0 ]
	grep -q 'nv_inference_request_success{model="add_sub",version="1"} 1600$' "$MNT/.metrics"
	# no failure of any reason
	[ "$(grep -c '^nv_inference_request_failure{model="add_sub",reason="[A-Z]*",version="1"} 0$' "$MNT/.metrics")" -eq 4 ]
	run ls "$MNT/add_sub/requests"
	[ "$output" = "" ]
}

# Reference outputs of the mlp for 16 inputs, computed with NumPy from the
# model's own weights.
mlp_reference() {
	"$PY" - "$REPO/mlp/1/model.onnx" "$T" <<'PY'
import sys, numpy as np, onnx, onnx.numpy_helper as nh
m = onnx.load(sys.argv[1]); d = sys.argv[2]
init = {t.name: nh.to_array(t) for t in m.graph.initializer}
def run(x):
    env = {m.graph.input[0].name: x}
    for n in m.graph.node:
        a = [env[i] if i in env else init[i] for i in n.input]
        if n.op_type == 'Gemm':
            at = {x.name: x for x in n.attribute}
            A, B = a[0], a[1]
            if 'transB' in at and at['transB'].i: B = B.T
            y = A @ B + (a[2] if len(a) > 2 else 0)
        elif n.op_type == 'Relu': y = np.maximum(a[0], 0)
        elif n.op_type == 'Softmax':
            e = np.exp(a[0] - a[0].max(axis=-1, keepdims=True)); y = e / e.sum(axis=-1, keepdims=True)
        else: raise SystemExit('unexpected op ' + n.op_type)
        env[n.output[0]] = y
    return env[m.graph.output[0].name]
rng = np.random.default_rng(3)
for c in range(1, 17):
    x = rng.random((1, 784), dtype=np.float32)
    np.save('%s/in%d.npy' % (d, c), x)
    np.save('%s/ref%d.npy' % (d, c), run(x.astype(np.float64)).astype(np.float32))
PY
}

@test "16 shell clients x 100 requests on the MLP, every result checked" {
	mlp_reference
	mount_repo "$REPO"
	mkdir "$T/out"
	for c in $(seq 1 16); do
		(
			req="$MNT/mlp/requests/client$c"
			mkdir "$req" || exit 1
			for k in $(seq 1 100); do
				# Reuse one directory: each run consumes its input.
				cp "$T/in$c.npy" "$req/input.npy" || exit 1
				cp "$req/probabilities.npy" "$T/out/$c-$k.npy" || exit 1
			done
			rm -r "$req"
		) &
		clients="$clients $!"
	done
	fails=0
	for pid in $clients; do
		wait "$pid" || fails=$((fails + 1))
	done
	[ "$fails" -eq 0 ]
	run "$PY" -c "
import numpy as np
bad = 0
for c in range(1, 17):
    ref = np.load('$T/ref%d.npy' % c)
    for k in range(1, 101):
        got = np.load('$T/out/%d-%d.npy' % (c, k))
        if got.shape != ref.shape or np.abs(got - ref).max() > 1e-5:
            bad += 1
print(bad)"
	[ "$output" = 0 ]
	grep -q 'nv_inference_request_success{model="mlp",version="1"} 1600$' "$MNT/.metrics"
}

@test "the dynamic batcher merges concurrent requests; trace.json shows it; results stay right" {
	mlp_reference
	mount_repo "$REPO"
	for c in $(seq 1 8); do
		mkdir "$MNT/batcher/requests/b$c"
	done
	writers=""
	for c in $(seq 1 8); do
		cp "$T/in$c.npy" "$MNT/batcher/requests/b$c/input.npy" &
		writers="$writers $!"
	done
	wait $writers
	for c in $(seq 1 8); do
		cp "$MNT/batcher/requests/b$c/probabilities.npy" "$T/b$c.npy"
	done
	run "$PY" -c "
import json, numpy as np
sizes = []
for c in range(1, 9):
    t = json.load(open('$MNT/batcher/requests/b%d/trace.json' % c))
    sizes.append(t['batch_size'])
    got, ref = np.load('$T/b%d.npy' % c), np.load('$T/ref%d.npy' % c)
    assert got.shape == (1, 10) and np.abs(got - ref).max() <= 1e-5, c
print(max(sizes), sizes)"
	echo "$output"
	[ "${output%% *}" -gt 1 ]
	grep -qE '"batch_size": ?[2-8]' "$MNT/batcher/stats.json"
}

@test "a reader killed while it waits goes away; the daemon carries on" {
	mount_repo "$REPO"
	slow_input "$T/x.npy"
	for i in 1 2 3; do
		mkdir "$MNT/slow/requests/k$i"
		cp "$T/x.npy" "$MNT/slow/requests/k$i/x.npy"
	done
	cat "$MNT/slow/requests/k3/y.npy" > /dev/null &
	reader=$!
	sleep 0.05
	st=$(cat "$MNT/slow/requests/k3/status")
	echo "k3 was $st"
	[ "$st" = QUEUED ] || [ "$st" = RUNNING ]
	# Interrupted (SIGINT) rather than killed: the read fails with EINTR.
	# Asked at once, while k3 still waits behind k1 and k2.
	run timeout -s INT 0.02 cat "$MNT/slow/requests/k3/y.npy"
	[ "$status" -ne 0 ]
	kill -9 $reader
	start=$(date +%s%N)
	wait $reader || true
	ms=$((($(date +%s%N) - start) / 1000000))
	echo "the killed reader was gone after $ms ms"
	[ "$ms" -lt 2000 ]
	# The request itself still runs, and a new reader gets the result.
	cmp "$MNT/slow/requests/k3/y.npy" "$T/x.npy"
	cmp "$MNT/slow/requests/k1/y.npy" "$T/x.npy"
	rm -r "$MNT"/slow/requests/k*
}

@test "SIGTERM while requests wait: they finish, the mount goes, exit 0" {
	mount_repo "$REPO"
	slow_input "$T/x.npy"
	for i in 1 2 3; do
		mkdir "$MNT/slow/requests/s$i"
		cp "$T/x.npy" "$MNT/slow/requests/s$i/x.npy"
	done
	readers=""
	for i in 1 2 3; do
		cp "$MNT/slow/requests/s$i/y.npy" "$T/y$i.npy" 2>"$T/err$i" &
		readers="$readers $!"
	done
	sleep 0.1
	kill -TERM "$DAEMON_PID"
	wait $readers || true
	for i in 1 2 3; do
		cmp "$T/y$i.npy" "$T/x.npy"
	done
	daemon_finished_cleanly
	! mountpoint -q "$MNT"
	grep -q "stopping (SIGTERM)" "$DAEMON_LOG"
	DAEMON_PID=
}

@test "waiting readers hold no FUSE thread: 12 of them, and the mount still answers" {
	mount_repo "$REPO"
	slow_input "$T/x.npy"
	for i in 1 2 3; do
		mkdir "$MNT/slow/requests/w$i"
		cp "$T/x.npy" "$MNT/slow/requests/w$i/x.npy"
	done
	readers=""
	for k in $(seq 1 12); do
		i=$(( (k % 3) + 1 ))
		cp "$MNT/slow/requests/w$i/y.npy" "$T/y$k.npy" &
		readers="$readers $!"
	done
	sleep 0.05
	# More readers wait than the daemon has FUSE threads (8); other
	# operations are answered at once all the same.
	start=$(date +%s%N)
	timeout 5 cat "$MNT/.index.json" > /dev/null
	timeout 5 ls "$MNT/add_sub" > /dev/null
	ms=$((($(date +%s%N) - start) / 1000000))
	echo "answered in $ms ms while readers waited"
	[ "$ms" -lt 1000 ]
	wait $readers
	for k in $(seq 1 12); do
		cmp "$T/y$k.npy" "$T/x.npy"
	done
	rm -r "$MNT"/slow/requests/w*
}

# A 3x3 convolution (Winograd where it pays) under dynamic batching, fed
# rounds of 4, 1, 3, 1, 4, 2 concurrent requests: the batcher runs mixed
# batch sizes and goes back to sizes it ran (each Conv node keeps a
# variant per size, exec/cpu/ops/conv_internal.h); every answer is its
# own input's convolution.
@test "a convolution under dynamic batching at mixed, repeated batch sizes answers each request right" {
	mkdir -p "$T/repo/conv/1"
	"$PY" - "$T/repo/conv/1/model.onnx" "$T" <<'PYEOF'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper as nh
rng = np.random.default_rng(7)
w = rng.standard_normal((32, 16, 3, 3)).astype(np.float32) / 12
b = rng.standard_normal(32).astype(np.float32)
g = helper.make_graph(
    [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
     helper.make_node("Relu", ["c"], ["y"])], "conv",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16, 28, 28])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 32, 28, 28])],
    [nh.from_array(w, "w"), nh.from_array(b, "b")])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
import torch
for c in range(1, 5):
    x = rng.standard_normal((1, 16, 28, 28)).astype(np.float32)
    np.save("%s/in%d.npy" % (sys.argv[2], c), x)
    y = torch.relu(torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w),
                                              torch.from_numpy(b), padding=1))
    np.save("%s/ref%d.npy" % (sys.argv[2], c), y.numpy())
PYEOF
	cat > "$T/repo/conv/config.pbtxt" <<'EOF2'
name: "conv"
max_batch_size: 8
input [ { name: "x" data_type: TYPE_FP32 dims: [ 16, 28, 28 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 32, 28, 28 ] } ]
dynamic_batching { max_queue_delay_microseconds: 50000 }
EOF2
	mount_repo "$T/repo"
	r=0
	for k in 4 1 3 1 4 2; do
		r=$((r + 1))
		writers=""
		for c in $(seq 1 "$k"); do
			mkdir "$MNT/conv/requests/r${r}c$c"
			cp "$T/in$c.npy" "$MNT/conv/requests/r${r}c$c/x.npy" &
			writers="$writers $!"
		done
		wait $writers
		for c in $(seq 1 "$k"); do
			cp "$MNT/conv/requests/r${r}c$c/y.npy" "$T/r${r}c$c.npy"
		done
	done
	run "$PY" -c "
import glob, re, numpy as np
n = 0
for f in glob.glob('$T/r*c*.npy'):
    c = int(re.search(r'c(\d+)\.npy$', f).group(1))
    got, ref = np.load(f), np.load('$T/ref%d.npy' % c)
    assert got.shape == (1, 32, 28, 28) and np.abs(got - ref).max() <= 1e-3, (f, np.abs(got - ref).max())
    n += 1
print(n)"
	echo "$output"
	[ "$output" = 15 ]
	grep -qE '"batch_size": ?[2-8]' "$MNT/conv/stats.json"
}

#!/usr/bin/env bats
# Ensembles through the mount (issue 12, SPEC.md section 11): the
# example pipeline (pipeline_preprocess, the example custom backend ->
# cnn -> pipeline_softmax)
# through a request directory and through infer, equal to its steps run
# one by one; a diamond whose two middle steps run side by side, one on
# OpenCL (PoCL) and one on the CPU; load errors; a missing step making
# the ensemble UNAVAILABLE and its return making it READY; a step model
# reloaded under load with zero failed requests; a step keeping its own
# dynamic batching; independent steps running at once; a step failing at
# run time.

load helpers

# copy_model SRC NAME [KIND]: examples/SRC as REPO/NAME (no samples),
# renamed, with an instance_group of KIND when given.
copy_model() {
	mkdir -p "$REPO/$2"
	cp -r "$EXAMPLES/$1/1" "$REPO/$2/"
	sed "s/^name: \"$1\"/name: \"$2\"/" "$EXAMPLES/$1/config.pbtxt" > "$REPO/$2/config.pbtxt"
	if [ -n "${3:-}" ]; then
		echo "instance_group [ { count: 1, kind: $3 } ]" >> "$REPO/$2/config.pbtxt"
	fi
}

# ensemble NAME: an ensemble directory with config.pbtxt from stdin (and
# the pipeline's labels.txt, which configs made from it name).
ensemble() {
	mkdir -p "$REPO/$1/1"
	cat > "$REPO/$1/config.pbtxt"
	cp "$EXAMPLES/pipeline/labels.txt" "$REPO/$1/"
}

# one_step_ensemble NAME STEP KEY READS OUT_KEY OUTPUT [MAX_BATCH]: an
# ensemble of one step, model STEP, whose input KEY reads tensor READS
# and whose output OUT_KEY is "p"; input "x", output OUTPUT, all [10].
one_step_ensemble() {
	ensemble "$1" <<EOF
platform: "ensemble"
max_batch_size: ${7:-0}
input [ { name: "x", data_type: TYPE_FP32, dims: [ 10 ] } ]
output [ { name: "$6", data_type: TYPE_FP32, dims: [ 10 ] } ]
ensemble_scheduling { step [
  { model_name: "$2" input_map { key: "$3" value: "$4" }
    output_map { key: "$5" value: "p" } }
] }
EOF
}

# softmax_ensemble NAME READS OUTPUT: one pipeline_softmax step reading
# tensor READS and writing "p"; input "x", output OUTPUT.
softmax_ensemble() { one_step_ensemble "$1" pipeline_softmax logits "$2" probabilities "$3"; }

# softmax_ensemble_of NAME STEP: an ensemble of one step, model STEP
# (an ensemble of the same shape), "x" -> "p".
softmax_ensemble_of() { one_step_ensemble "$1" "$2" x x p p; }

setup_file() {
	REPO="$BATS_FILE_TMPDIR/repo"
	copy_model cnn cnn
	copy_model pipeline_preprocess pipeline_preprocess KIND_CPU
	copy_model pipeline_softmax pipeline_softmax
	copy_model cnn cnn_gpu KIND_GPU
	ensemble pipeline < "$EXAMPLES/pipeline/config.pbtxt"
	# The diamond: preprocess, then cnn (CPU) and cnn_gpu (OpenCL) on the
	# same image at once, then two softmax steps of the CPU's logits, one
	# of them waiting up to 300 ms to fill a batch (batched_softmax, below).
	ensemble diamond <<'EOF'
name: "diamond"
platform: "ensemble"
max_batch_size: 16
input [ { name: "pixels", data_type: TYPE_UINT8, dims: [ 28, 28 ] } ]
output [
  { name: "logits_cpu", data_type: TYPE_FP32, dims: [ 10 ] },
  { name: "logits_gpu", data_type: TYPE_FP32, dims: [ 10 ] },
  { name: "probabilities", data_type: TYPE_FP32, dims: [ 10 ] },
  { name: "slow", data_type: TYPE_FP32, dims: [ 10 ] }
]
ensemble_scheduling { step [
  { model_name: "pipeline_preprocess" input_map { key: "pixels" value: "pixels" }
    output_map { key: "image" value: "image" } },
  { model_name: "cnn" input_map { key: "image" value: "image" }
    output_map { key: "logits" value: "logits_cpu" } },
  { model_name: "cnn_gpu" input_map { key: "image" value: "image" }
    output_map { key: "logits" value: "logits_gpu" } },
  { model_name: "batched_softmax" input_map { key: "logits" value: "logits_cpu" }
    output_map { key: "probabilities" value: "slow" } },
  { model_name: "pipeline_softmax" input_map { key: "logits" value: "logits_cpu" }
    output_map { key: "probabilities" value: "probabilities" } }
] }
EOF
	# Its last step's model is not in the repository yet.
	sed 's/"pipeline_softmax"/"late_softmax"/; s/^name: "pipeline"/name: "orphan"/' \
		"$EXAMPLES/pipeline/config.pbtxt" | ensemble orphan
	# Load errors: each from the config alone.
	ensemble bad_cycle <<'EOF'
platform: "ensemble"
input [ { name: "x", data_type: TYPE_FP32, dims: [ 10 ] } ]
output [ { name: "b", data_type: TYPE_FP32, dims: [ 10 ] } ]
ensemble_scheduling { step [
  { model_name: "pipeline_softmax" input_map { key: "logits" value: "b" }
    output_map { key: "probabilities" value: "a" } },
  { model_name: "pipeline_softmax" input_map { key: "logits" value: "a" }
    output_map { key: "probabilities" value: "b" } }
] }
EOF
	softmax_ensemble bad_unproduced nowhere p
	softmax_ensemble bad_output x ghost
	# Found once the step model is there: its input is UINT8, not FP32.
	ensemble bad_dtype <<'EOF'
platform: "ensemble"
max_batch_size: 16
input [ { name: "pixels", data_type: TYPE_FP32, dims: [ 28, 28 ] } ]
output [ { name: "image", data_type: TYPE_FP32, dims: [ 1, 28, 28 ] } ]
ensemble_scheduling { step [
  { model_name: "pipeline_preprocess" input_map { key: "pixels" value: "pixels" }
    output_map { key: "image" value: "image" } }
] }
EOF
	# The pipeline again, its last step a softmax that waits up to 300 ms
	# to fill a batch: concurrent ensemble requests merge there.
	copy_model pipeline_softmax batched_softmax
	echo "dynamic_batching { max_queue_delay_microseconds: 300000 preferred_batch_size: [ 4 ] }" |
		sed -i '/^dynamic_batching/d; $r /dev/stdin' "$REPO/batched_softmax/config.pbtxt"
	sed 's/"pipeline_softmax"/"batched_softmax"/; s/^name: "pipeline"/name: "batched"/' \
		"$EXAMPLES/pipeline/config.pbtxt" | ensemble batched
	# A step whose output length is variable (Identity on [batch, n])
	# feeding one that needs exactly 10: found only at run time.
	mkdir -p "$REPO/identity/1"
	"$PY" -c "
import onnx
from onnx import TensorProto, helper
i = helper.make_tensor_value_info('in', TensorProto.FLOAT, ['batch', 'n'])
o = helper.make_tensor_value_info('out', TensorProto.FLOAT, ['batch', 'n'])
g = helper.make_graph([helper.make_node('Identity', ['in'], ['out'])], 'identity', [i], [o])
m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)])
m.ir_version = 7
onnx.save(m, '$REPO/identity/1/model.onnx')"
	printf 'max_batch_size: 16\n' > "$REPO/identity/config.pbtxt"
	ensemble variable <<'EOF'
platform: "ensemble"
max_batch_size: 16
input [ { name: "x", data_type: TYPE_FP32, dims: [ -1 ] } ]
output [ { name: "p", data_type: TYPE_FP32, dims: [ 10 ] } ]
ensemble_scheduling { step [
  { model_name: "identity" input_map { key: "in" value: "x" } output_map { key: "out" value: "y" } },
  { model_name: "pipeline_softmax" input_map { key: "logits" value: "y" }
    output_map { key: "probabilities" value: "p" } }
] }
EOF
	# Nested (issue 29): "nested" runs the pipeline ensemble as its one
	# step; cyc_a and cyc_b name each other, cyc_self names itself.
	ensemble nested <<'EOF'
platform: "ensemble"
max_batch_size: 16
input [ { name: "img", data_type: TYPE_UINT8, dims: [ 28, 28 ] } ]
output [ { name: "p", data_type: TYPE_FP32, dims: [ 10 ] } ]
ensemble_scheduling { step [
  { model_name: "pipeline" input_map { key: "pixels" value: "img" }
    output_map { key: "probabilities" value: "p" } }
] }
EOF
	# inner2's one step (late2_softmax) is not there yet; nested2 runs inner2.
	one_step_ensemble inner2 late2_softmax logits x probabilities p 16
	one_step_ensemble nested2 inner2 x x p p 16
	softmax_ensemble_of cyc_a cyc_b
	softmax_ensemble_of cyc_b cyc_a
	softmax_ensemble_of cyc_self cyc_self
	mount_repo "$REPO" --backend-dir "$EXAMPLE_BACKENDS" || return 1
	export MNT DAEMON_PID DAEMON_LOG REPO
}

teardown_file() {
	unmount_repo
}

setup() {
	T="$BATS_TEST_TMPDIR"
}

teardown() {
	[ -z "${CLIENTS_PID:-}" ] || { touch "$T/stop"; wait "$CLIENTS_PID" 2>/dev/null || true; }
}

status_has() { grep -q -- "$2" "$MNT/$1/status"; }

# run_request MODEL INPUT=FILE... OUTPUT...: one request directory; each
# output read as .npy into $T/MODEL.OUTPUT.npy.
run_request() {
	local model=$1 req
	shift
	req=$(new_request "$model") || return 1
	while [ $# -gt 0 ] && [[ "$1" == *=* ]]; do
		cp "${1#*=}" "$req/${1%%=*}.npy" || return 1
		shift
	done
	local o
	for o in "$@"; do
		cat "$req/$o.npy" > "$T/$model.$o.npy" || { cat "$req/error" >&2; return 1; }
	done
	rm -r "$req"
}

@test "the pipeline's three steps through a request directory equal the steps run one by one" {
	run cat "$MNT/pipeline/status"
	[ "$output" = "READY 1 ensemble 3 steps: pipeline_preprocess, cnn, pipeline_softmax" ]
	px="$EXAMPLES/pipeline/samples/pixels.npy"
	run_request pipeline pixels="$px" probabilities logits
	# The same input, step by step, each through its own model's directory.
	run_request pipeline_preprocess pixels="$px" image
	run_request cnn image="$T/pipeline_preprocess.image.npy" logits
	run_request pipeline_softmax logits="$T/cnn.logits.npy" probabilities
	run "$PY" -c "
import numpy as np
t = '$T/'
p, l = np.load(t + 'pipeline.probabilities.npy'), np.load(t + 'pipeline.logits.npy')
assert p.shape == (1, 10) and p.dtype == np.float32, (p.shape, p.dtype)
assert np.array_equal(l, np.load(t + 'cnn.logits.npy')), 'logits differ'
assert np.array_equal(p, np.load(t + 'pipeline_softmax.probabilities.npy')), 'probabilities differ'
want = np.load('$EXAMPLES/pipeline/samples/expected/probabilities.npy')
assert np.max(np.abs(p - want)) < 1e-5, np.max(np.abs(p - want))
print('ok')"
	echo "$output"
	[ "$output" = ok ]
	# The ensemble's output has labels like any model's: top-K views.
	req=$(new_request pipeline)
	cp "$px" "$req/pixels.npy"
	run cat "$req/probabilities.top3.txt"
	echo "$output"
	[ "${#lines[@]}" -eq 3 ]
	best=$("$PY" -c "import numpy as np; print(int(np.load('$T/pipeline.probabilities.npy').argmax()))")
	label=$(sed -n "$((best + 1))p" "$EXAMPLES/pipeline/labels.txt")
	[[ "${lines[0]}" == 0.*" $best $label" ]]
	rm -r "$req"
}

@test "the pipeline through infer, and its stats, metrics and config" {
	exec 7<>"$MNT/pipeline/infer"
	"$PY" -c "
import json, numpy as np
x = np.load('$EXAMPLES/pipeline/samples/pixels.npy')
print(json.dumps({'id': 'e1', 'inputs': [{'name': 'pixels', 'shape': list(x.shape), 'datatype': 'UINT8',
                                       'data': x.reshape(-1).tolist()}]}), end='')" >&7
	cat <&7 > "$T/resp.json"
	exec 7>&-
	run "$PY" -c "
import json, numpy as np
r = json.load(open('$T/resp.json'))
assert r['model_name'] == 'pipeline' and r['id'] == 'e1', r
o = {t['name']: t for t in r['outputs']}
assert o['probabilities']['shape'] == [1, 10] and o['probabilities']['datatype'] == 'FP32', o
want = np.load('$EXAMPLES/pipeline/samples/expected/probabilities.npy').reshape(-1)
assert np.max(np.abs(np.array(o['probabilities']['data']) - want)) < 1e-5
print('ok')"
	echo "$output"
	[ "$output" = ok ]
	run "$PY" -c "
import json
s = json.load(open('$MNT/pipeline/stats.json'))['model_stats'][0]
assert s['inference_stats']['success']['count'] >= 1 and s['device']['choice'] == 'ensemble', s
c = json.load(open('$MNT/pipeline/config.json'))
steps = c['ensemble_scheduling']['step']
assert c['platform'] == 'ensemble' and [x['model_name'] for x in steps] == ['pipeline_preprocess', 'cnn', 'pipeline_softmax'], c
assert steps[1]['input_map'] == {'image': 'image'}, steps
m = json.load(open('$MNT/pipeline/metadata.json'))
assert m['platform'] == 'ensemble' and [i['name'] for i in m['inputs']] == ['pixels'], m
assert m['inputs'][0]['datatype'] == 'UINT8' and m['inputs'][0]['shape'] == [-1, 28, 28], m
print('ok')"
	echo "$output"
	[ "$output" = ok ]
	grep -q '^nv_inference_request_success{model="pipeline",version="1"} [1-9]' "$MNT/.metrics"
}

@test "a diamond: cnn on the CPU and cnn_gpu on OpenCL side by side, results within 1e-3" {
	run cat "$MNT/cnn_gpu/status"
	[[ "$output" == "READY 1 opencl KIND_GPU on "* ]]
	[[ "$(cat "$MNT/pipeline_preprocess/status")" == "READY 1 cpu "* ]]
	before=$("$PY" -c "import json; print(json.load(open('$MNT/cnn_gpu/stats.json'))['model_stats'][0]['execution_count'])")
	"$PY" -c "
import numpy as np
np.save('$T/px4.npy', np.random.default_rng(4).integers(0, 256, size=(4, 28, 28), dtype=np.uint8))"
	run_request diamond pixels="$T/px4.npy" logits_cpu logits_gpu probabilities
	run "$PY" -c "
import json, numpy as np
c, g = np.load('$T/diamond.logits_cpu.npy'), np.load('$T/diamond.logits_gpu.npy')
assert c.shape == g.shape == (4, 10), (c.shape, g.shape)
assert np.max(np.abs(c - g)) <= 1e-3 * np.max(np.abs(c)), np.max(np.abs(c - g))
p = np.load('$T/diamond.probabilities.npy')
assert np.allclose(p.sum(axis=1), 1, atol=1e-5), p.sum(axis=1)
n = json.load(open('$MNT/cnn_gpu/stats.json'))['model_stats'][0]['execution_count']
assert n == $before + 1, (n, $before)
print('ok')"
	echo "$output"
	[ "$output" = ok ]
}

@test "load errors name the step and the tensor" {
	wait_until 5 status_has bad_cycle "UNAVAILABLE"
	run cat "$MNT/bad_cycle/status"
	echo "$output"
	[[ "$output" == "UNAVAILABLE 1 - "*"the steps form a cycle: steps 0 ('pipeline_softmax'), 1 ('pipeline_softmax') wait for each other"* ]]
	run cat "$MNT/bad_unproduced/status"
	echo "$output"
	[[ "$output" == *"step 0 (model 'pipeline_softmax') input_map reads 'nowhere', which no step and no ensemble input produces"* ]]
	run cat "$MNT/bad_output/status"
	echo "$output"
	[[ "$output" == *"ensemble output 'ghost' is produced by no step"* ]]
	run cat "$MNT/bad_dtype/status"
	echo "$output"
	[[ "$output" == "UNAVAILABLE 1 - tensor 'pixels' is TYPE_FP32 [-1,28,28] where it is produced, but step 0 (model 'pipeline_preprocess') input 'pixels' needs TYPE_UINT8 [-1,28,28]" ]]
	grep -q "model 'bad_cycle' version 1: load failed: .*cycle" "$DAEMON_LOG"
}

@test "a nested ensemble (its step is the pipeline ensemble) answers through a request directory and infer" {
	wait_until 10 status_has nested "^READY 1 ensemble"
	run_request nested img="$EXAMPLES/pipeline/samples/pixels.npy" p
	exec 7<>"$MNT/nested/infer"
	"$PY" -c "
import json, numpy as np
x = np.load('$EXAMPLES/pipeline/samples/pixels.npy')
print(json.dumps({'inputs': [{'name': 'img', 'shape': list(x.shape), 'datatype': 'UINT8',
                              'data': x.ravel().tolist()}]}))" >&7
	cat <&7 > "$T/infer.json"
	exec 7>&-
	run "$PY" -c "
import json, numpy as np
want = np.load('$EXAMPLES/pipeline/samples/expected/probabilities.npy')
p = np.load('$T/nested.p.npy')
assert np.max(np.abs(p - want)) < 1e-5, (p, want)
out = json.load(open('$T/infer.json'))['outputs'][0]
assert out['name'] == 'p'
assert np.max(np.abs(np.array(out['data']).reshape(want.shape) - want)) < 1e-5
print('ok')"
	echo "$output"
	[ "$output" = ok ]
}

@test "an inner ensemble that goes and comes: the outer one follows it, untouched" {
	run cat "$MNT/nested2/status"
	echo "$output"
	[ "$output" = "UNAVAILABLE 1 - step 0 (model 'inner2'): the ensemble 'inner2' is not READY (its status says why)" ]
	run cat "$MNT/inner2/status"
	[ "$output" = "UNAVAILABLE 1 - step 0 (model 'late2_softmax'): no model named 'late2_softmax' is loaded" ]
	# The inner ensemble's step arrives: both serve.
	mkdir "$T/src"
	cp -r "$REPO/pipeline_softmax" "$T/src/late2_softmax"
	sed -i 's/^name: "pipeline_softmax"/name: "late2_softmax"/' "$T/src/late2_softmax/config.pbtxt"
	mv "$T/src/late2_softmax" "$REPO/"
	wait_until 10 status_has nested2 "^READY 1 ensemble"
	"$PY" -c "import numpy as np; np.save('$T/x.npy', np.arange(10, dtype=np.float32).reshape(1, 10))"
	run_request nested2 x="$T/x.npy" p
	run "$PY" -c "
import numpy as np
x = np.arange(10, dtype=np.float64)
want = np.exp(x - x.max()) / np.exp(x - x.max()).sum()
p = np.load('$T/nested2.p.npy')
assert p.shape == (1, 10) and np.max(np.abs(p[0] - want)) < 1e-5, p
print('ok')"
	[ "$output" = ok ]
	# It goes: the inner ensemble, then the outer, are UNAVAILABLE.
	mv "$REPO/late2_softmax" "$T/gone"
	wait_until 10 status_has nested2 "^UNAVAILABLE 1 - step 0 (model 'inner2'): the ensemble 'inner2' is not READY"
	run py_errno "os.mkdir('$MNT/nested2/requests/r1')"
	[ "$output" = EAGAIN ]
}

@test "ensembles that name each other or themselves: refused with the cycle named, in a short message" {
	wait_until 5 status_has cyc_a "UNAVAILABLE"
	run cat "$MNT/cyc_a/status"
	echo "$output"
	[ "$output" = "UNAVAILABLE 1 - circular dependency between ensembles cyc_a -> cyc_b -> cyc_a" ]
	run cat "$MNT/cyc_b/status"
	[ "$output" = "UNAVAILABLE 1 - circular dependency between ensembles cyc_b -> cyc_a -> cyc_b" ]
	run cat "$MNT/cyc_self/status"
	[ "$output" = "UNAVAILABLE 1 - circular dependency between ensembles cyc_self -> cyc_self" ]
	# A request gets the same short reason, not one quoting itself.
	run py_errno "os.mkdir('$MNT/cyc_self/requests/r1')"
	[ "$output" = EAGAIN ]
	exec 7<>"$MNT/cyc_a/infer"
	printf '{"inputs":[{"name":"x","shape":[10],"datatype":"FP32","data":[0,1,2,3,4,5,6,7,8,9]}]}' >&7
	run cat <&7
	exec 7>&-
	echo "$output"
	[[ "$output" == *"circular dependency between ensembles cyc_a -> cyc_b -> cyc_a"* ]]
	[ "${#output}" -lt 400 ]
	! grep -q "cyc_self.*cyc_self.*cyc_self" "$DAEMON_LOG"
	grep "ensemble 'cyc_a'" "$DAEMON_LOG" | awk '{ if (length($0) > 400) bad = 1 } END { exit bad }'
}

@test "a missing step: UNAVAILABLE naming it, READY when it comes, UNAVAILABLE when it goes" {
	run cat "$MNT/orphan/status"
	[ "$output" = "UNAVAILABLE 1 - step 2 (model 'late_softmax'): no model named 'late_softmax' is loaded" ]
	run py_errno "os.mkdir('$MNT/orphan/requests/r1')"
	[ "$output" = EAGAIN ]
	exec 7<>"$MNT/orphan/infer"
	printf '{"inputs":[{"name":"pixels","shape":[1,28,28],"datatype":"UINT8","data":[%s]}]}' \
		"$(seq -s, 1 784 | sed 's/[0-9]*/1/g')" >&7
	run cat <&7
	exec 7>&-
	echo "$output"
	[[ "$output" == *"step 2 (model 'late_softmax'): no model named 'late_softmax' is loaded"* ]]
	# The step arrives: the ensemble serves, its own directory untouched.
	mkdir "$T/src"
	cp -r "$REPO/pipeline_softmax" "$T/src/late_softmax"
	sed -i 's/^name: "pipeline_softmax"/name: "late_softmax"/' "$T/src/late_softmax/config.pbtxt"
	mv "$T/src/late_softmax" "$REPO/"
	wait_until 10 status_has orphan "^READY 1 ensemble"
	run_request orphan pixels="$EXAMPLES/pipeline/samples/pixels.npy" probabilities
	run "$PY" -c "
import numpy as np
p = np.load('$T/orphan.probabilities.npy')
want = np.load('$EXAMPLES/pipeline/samples/expected/probabilities.npy')
assert np.max(np.abs(p - want)) < 1e-5
print('ok')"
	[ "$output" = ok ]
	# It goes again.
	mv "$REPO/late_softmax" "$T/gone"
	wait_until 10 status_has orphan "^UNAVAILABLE 1 - step 2 (model 'late_softmax'): no model named 'late_softmax' is loaded"
	grep -q "ensemble 'orphan' version 1: UNAVAILABLE: step 2 (model 'late_softmax')" "$DAEMON_LOG"
}

@test "an input that does not fit fails at close() with EINVAL and the reason" {
	req=$(new_request pipeline)
	"$PY" -c "import numpy as np; np.save('$T/bad.npy', np.zeros((1, 27, 28), dtype=np.uint8))"
	run py_errno "import shutil; shutil.copyfile('$T/bad.npy', '$req/pixels.npy')"
	[ "$output" = EINVAL ]
	grep -q "pixels" "$req/error"
	rm -r "$req"
}

@test "steps keep their own dynamic batching: 4 concurrent requests merge into fewer runs of the softmax step" {
	grep -q "max_queue_delay_microseconds: 300000" "$REPO/batched_softmax/config.pbtxt"
	run "$PY" -c "
import json, os, threading
import numpy as np
mnt = '$MNT'
x = np.load('$EXAMPLES/pipeline/samples/pixels.npy')
req = json.dumps({'inputs': [{'name': 'pixels', 'shape': list(x.shape), 'datatype': 'UINT8',
                             'data': x.reshape(-1).tolist()}]}).encode()
want = np.load('$EXAMPLES/pipeline/samples/expected/probabilities.npy').reshape(-1)
errors = []
def counts():
    s = json.load(open(mnt + '/batched_softmax/stats.json'))['model_stats'][0]
    return s['inference_count'], s['execution_count']
before = counts()
def one():
    fd = os.open(mnt + '/batched/infer', os.O_RDWR)
    os.write(fd, req)
    body = b''
    while True:
        d = os.read(fd, 65536)
        if not d:
            break
        body += d
    os.close(fd)
    r = json.loads(body)
    p = [t['data'] for t in r.get('outputs', []) if t['name'] == 'probabilities']
    if not p or np.max(np.abs(np.array(p[0]) - want)) > 1e-5:
        errors.append(r)
ts = [threading.Thread(target=one) for _ in range(4)]
[t.start() for t in ts]
[t.join() for t in ts]
assert not errors, errors
after = counts()
rows, runs = after[0] - before[0], after[1] - before[1]
assert rows == 4 and runs < 4, (rows, runs)
print('ok')"
	echo "$output"
	[ "$output" = ok ]
}

@test "independent steps run concurrently: pipeline_softmax ends while batched_softmax waits for its batch" {
	run_request diamond pixels="$EXAMPLES/pipeline/samples/pixels.npy" slow probabilities
	run "$PY" -c "
import json
import numpy as np
t = '$T/'
assert np.array_equal(np.load(t + 'diamond.slow.npy'), np.load(t + 'diamond.probabilities.npy'))
last = lambda m: json.load(open('$MNT/%s/stats.json' % m))['model_stats'][0]['last_inference']
slow, fast = last('batched_softmax'), last('pipeline_softmax')
# Submitted one after the other, the fast step would end after the slow
# one's 300 ms wait; run side by side, it ends during it.
assert slow - fast >= 200, (slow, fast)
print('ok: the fast branch ended %d ms before the slow one' % (slow - fast))"
	echo "$output"
	[[ "$output" == "ok: "* ]]
}

@test "a step that fails at run time: EIO, and the error names the ensemble, the step and the reason" {
	wait_until 5 status_has variable "^READY 1 ensemble 2 steps"
	req=$(new_request variable)
	echo "[[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]]" > "$req/x.json"
	cat "$req/p.txt"
	echo "[[1, 2, 3]]" > "$req/x.json"
	run py_errno "open('$req/p.txt').read()"
	[ "$output" = EIO ]
	run cat "$req/error"
	echo "$output"
	[[ "$output" == "ensemble 'variable': step 1 (model 'pipeline_softmax' version 1): "*"logits"* ]]
	[[ "$(cat "$req/status")" == "FAILED "* ]]
	rm -r "$req"
	grep -q "ensemble 'variable': step 1 (model 'pipeline_softmax' version 1)" "$DAEMON_LOG"
	run "$PY" -c "
import json; s = json.load(open('$MNT/variable/stats.json'))['model_stats'][0]['inference_stats']
assert s['success']['count'] == 1 and s['fail']['count'] == 1, s
print('ok')"
	[ "$output" = ok ]
}

@test "cnn reloaded twice under load through the pipeline: zero failed requests" {
	rm -f "$T/stop"
	"$PY" "$TOP/tests/e2e/reload_clients.py" "$MNT" pipeline 6 "$T/stop" "$T/clients.json" \
		--pipeline "$EXAMPLES/pipeline/samples/pixels.npy" \
		"$EXAMPLES/pipeline/samples/expected/probabilities.npy" 3>&- &
	CLIENTS_PID=$!
	loads() { "$PY" -c "
import re; t = open('$MNT/.metrics').read()
print(int(float(re.search(r'^nv_model_load_total (\S+)', t, re.M).group(1))))"; }
	loaded_at_least() { [ "$(loads)" -ge "$1" ]; }
	n0=$(loads)
	sleep 1
	# A new version (version 1 drains and leaves), then the same version's
	# file replaced (a reload of version 2 in place).
	cp -r "$REPO/cnn/1" "$T/v2"
	mv "$T/v2" "$REPO/cnn/2"
	wait_until 15 status_has cnn "^READY 2"
	sleep 1
	cp "$REPO/cnn/2/model.onnx" "$T/m.onnx"
	mv "$T/m.onnx" "$REPO/cnn/2/model.onnx"
	wait_until 15 loaded_at_least $((n0 + 2))
	sleep 1
	touch "$T/stop"
	wait "$CLIENTS_PID"
	CLIENTS_PID=
	cat "$T/clients.json"
	"$PY" -c "
import json; s = json.load(open('$T/clients.json'))
assert s['fail'] == 0 and s['ok'] > 10, s"
	[ "$(cat "$MNT/pipeline/status")" = "READY 1 ensemble 3 steps: pipeline_preprocess, cnn, pipeline_softmax" ]
}

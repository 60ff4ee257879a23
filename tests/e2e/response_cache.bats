#!/usr/bin/env bats
# The response cache (issue 29, SPEC.md section 7, CONFIG.md "Response
# cache"): a model whose config says response_cache { enable: true },
# mounted with --cache-size (here as Triton spells it, --cache-config).  A repeated request is answered from the
# cache (its trace.json says cache_hit, the cache metrics count it, the
# model does not run); a different input is never answered from another's
# entry (one byte apart; the same bytes in another shape); the infer file
# uses the same cache; a reload forgets the model's entries.

load helpers

setup_file() {
	REPO="$BATS_FILE_TMPDIR/repo"
	# double: y = 2 x on [batch, n], n variable.
	mkdir -p "$REPO/double/1"
	"$PY" -c "
import onnx
from onnx import TensorProto, helper
x = helper.make_tensor_value_info('x', TensorProto.FLOAT, ['batch', 'n'])
y = helper.make_tensor_value_info('y', TensorProto.FLOAT, ['batch', 'n'])
two = helper.make_tensor('two', TensorProto.FLOAT, [], [2.0])
g = helper.make_graph([helper.make_node('Mul', ['x', 'two'], ['y'])], 'double', [x], [y], [two])
m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)])
m.ir_version = 7
onnx.save(m, '$REPO/double/1/model.onnx')"
	cat > "$REPO/double/config.pbtxt" <<'EOF'
max_batch_size: 8
input [ { name: "x", data_type: TYPE_FP32, dims: [ -1 ] } ]
output [ { name: "y", data_type: TYPE_FP32, dims: [ -1 ] } ]
response_cache { enable: true }
EOF
	# The same model without the cache: never counted.
	mkdir -p "$REPO/plain/1"
	cp "$REPO/double/1/model.onnx" "$REPO/plain/1/"
	grep -v response_cache "$REPO/double/config.pbtxt" > "$REPO/plain/config.pbtxt"
	# An ensemble may enable it too (its whole answer is kept): over
	# "twice", a copy of plain that only it runs.
	mkdir -p "$REPO/twice/1" "$REPO/ens/1"
	cp "$REPO/double/1/model.onnx" "$REPO/twice/1/"
	cp "$REPO/plain/config.pbtxt" "$REPO/twice/"
	cat > "$REPO/ens/config.pbtxt" <<'EOF'
platform: "ensemble"
max_batch_size: 8
input [ { name: "x", data_type: TYPE_FP32, dims: [ -1 ] } ]
output [ { name: "y", data_type: TYPE_FP32, dims: [ -1 ] } ]
ensemble_scheduling { step [ { model_name: "twice" input_map { key: "x" value: "x" } output_map { key: "y" value: "y" } } ] }
response_cache { enable: true }
EOF
	mount_repo "$REPO" --cache-config=local,size=16M || return 1
	export MNT DAEMON_PID DAEMON_LOG REPO
}

teardown_file() {
	unmount_repo
}

setup() {
	T="$BATS_TEST_TMPDIR"
}

# metric NAME MODEL: its value on the .metrics page.
metric() {
	sed -n "s/^$1{model=\"$2\",version=\"1\"} \([0-9]*\)$/\1/p" "$MNT/.metrics"
}

# npy FILE SHAPE VALUES: a float32 array.
npy() {
	"$PY" -c "import numpy as np; np.save('$1', np.array($3, dtype=np.float32).reshape($2))"
}

# ask MODEL FILE: one request of x=FILE; y in $T/y.npy, the trace in
# $T/trace.json.
ask() {
	local req
	req=$(new_request "$1") || return 1
	cp "$2" "$req/x.npy" || return 1
	cat "$req/y.npy" > "$T/y.npy" || { cat "$req/error" >&2; return 1; }
	cat "$req/trace.json" > "$T/trace.json"
	rm -r "$req"
}

# answer_is SHAPE VALUES: $T/y.npy is exactly that.
answer_is() {
	"$PY" -c "
import numpy as np
y = np.load('$T/y.npy')
want = np.array($2, dtype=np.float32).reshape($1)
assert y.shape == want.shape and (y == want).all(), (y, want)"
}

hit() { grep -q '"cache_hit":true' "$T/trace.json"; }
missed() { grep -q '"cache_hit":false' "$T/trace.json"; }

@test "a repeated request is answered from the cache: trace, metrics, no run; other inputs are not" {
	npy "$T/a.npy" "(1, 8)" "[1, 2, 3, 4, 5, 6, 7, 8]"
	ask double "$T/a.npy"
	missed
	answer_is "(1, 8)" "[2, 4, 6, 8, 10, 12, 14, 16]"
	[ "$(metric nv_cache_num_misses_per_model double)" = 1 ]
	[ "$(metric nv_cache_num_hits_per_model double)" = 0 ]
	[ "$(metric nv_inference_exec_count double)" = 1 ]
	# Again: from the cache, the model not run.
	ask double "$T/a.npy"
	hit
	answer_is "(1, 8)" "[2, 4, 6, 8, 10, 12, 14, 16]"
	[ "$(metric nv_cache_num_hits_per_model double)" = 1 ]
	[ "$(metric nv_cache_num_misses_per_model double)" = 1 ]
	[ "$(metric nv_inference_exec_count double)" = 1 ]
	[ "$(metric nv_inference_request_success double)" = 2 ]
	"$PY" -c "
import json
s = json.load(open('$MNT/double/stats.json'))['model_stats'][0]['inference_stats']
assert s['cache_hit']['count'] == 1 and s['cache_miss']['count'] == 1, s"
	# One byte apart (the lowest byte of the last float): not a hit.
	"$PY" -c "
import numpy as np
a = np.load('$T/a.npy')
b = a.copy()
b.view(np.uint8)[0, -4] ^= 1
np.save('$T/b.npy', b)
np.save('$T/b_want.npy', b * 2)"
	ask double "$T/b.npy"
	missed
	"$PY" -c "
import numpy as np
assert (np.load('$T/y.npy') == np.load('$T/b_want.npy')).all()"
	# The same bytes in another shape: not a hit, and answered in its shape.
	npy "$T/c.npy" "(2, 4)" "[1, 2, 3, 4, 5, 6, 7, 8]"
	cmp <(tail -c 32 "$T/a.npy") <(tail -c 32 "$T/c.npy")
	ask double "$T/c.npy"
	missed
	answer_is "(2, 4)" "[2, 4, 6, 8, 10, 12, 14, 16]"
	[ "$(metric nv_cache_num_hits_per_model double)" = 1 ]
	[ "$(metric nv_cache_num_misses_per_model double)" = 3 ]
	[ "$(metric nv_inference_exec_count double)" = 3 ]
	# A model without response_cache: never looked up.
	ask plain "$T/a.npy"
	ask plain "$T/a.npy"
	missed
	[ "$(metric nv_cache_num_misses_per_model plain)" = 0 ]
	[ "$(metric nv_inference_exec_count plain)" = 2 ]
	"$PY" -c "
import json
assert json.load(open('$MNT/double/config.json'))['response_cache'] == {'enable': True}
assert 'response_cache' not in json.load(open('$MNT/plain/config.json'))"
}

@test "an ensemble's answers are cached whole: its step does not run again" {
	npy "$T/a.npy" "(1, 8)" "[1, 2, 3, 4, 5, 6, 7, 8]"
	ask ens "$T/a.npy"
	missed
	ask ens "$T/a.npy"
	hit
	answer_is "(1, 8)" "[2, 4, 6, 8, 10, 12, 14, 16]"
	[ "$(metric nv_cache_num_hits_per_model ens)" = 1 ]
	[ "$(metric nv_inference_exec_count twice)" = 1 ]
}

@test "the infer file answers from the same cache" {
	local before
	before=$(metric nv_cache_num_hits_per_model double)
	exec 7<>"$MNT/double/infer"
	printf '{"inputs":[{"name":"x","shape":[1,8],"datatype":"FP32","data":[1,2,3,4,5,6,7,8]}]}' >&7
	run cat <&7
	exec 7>&-
	echo "$output"
	[[ "$output" == *'"data":[2'*'16'* ]]
	[ "$(metric nv_cache_num_hits_per_model double)" = $((before + 1)) ]
}

@test "a reload forgets the model's entries" {
	npy "$T/a.npy" "(1, 8)" "[1, 2, 3, 4, 5, 6, 7, 8]"
	ask double "$T/a.npy"
	hit
	local n
	n=$(sed -n 's/^nv_model_load_total \([0-9]*\)$/\1/p' "$MNT/.metrics")
	cp "$REPO/double/1/model.onnx" "$REPO/double/1/.model.tmp"
	mv "$REPO/double/1/.model.tmp" "$REPO/double/1/model.onnx"
	loaded() { [ "$(sed -n 's/^nv_model_load_total \([0-9]*\)$/\1/p' "$MNT/.metrics")" -gt "$n" ]; }
	wait_until 10 loaded
	wait_until 10 grep -q "^READY 1" "$MNT/double/status"
	ask double "$T/a.npy"
	missed
	answer_is "(1, 8)" "[2, 4, 6, 8, 10, 12, 14, 16]"
	# The reloaded version's counters start again; the answer is kept anew.
	[ "$(metric nv_cache_num_misses_per_model double)" = 1 ]
	ask double "$T/a.npy"
	hit
}

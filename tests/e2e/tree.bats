#!/usr/bin/env bats
# The mounted tree (SPEC.md section 3): every file, right sizes and modes,
# read completely by cat, dd and Python; control files are read-only.

load helpers

use_shared_mount examples

@test "the root lists .index.json, .metrics and every model" {
	run ls -A "$MNT"
	[ "$status" -eq 0 ]
	[[ "$output" == *".index.json"* ]]
	[[ "$output" == *".metrics"* ]]
	[[ "$output" == *"add_sub"* ]]
	[[ "$output" == *"mlp"* ]]
	[[ "$output" == *"cnn"* ]]
}

@test ".index.json is Triton's repository index with every model READY" {
	run "$PY" -c "
import json; idx = json.load(open('$MNT/.index.json'))
names = {(e['name'], e['version'], e['state']) for e in idx}
assert ('add_sub', '1', 'READY') in names, names
assert ('mlp', '1', 'READY') in names, names
assert all(set(e) >= {'name', 'version', 'state', 'reason'} for e in idx)
print('ok')"
	[ "$output" = ok ]
}

@test "a model directory holds the control files, infer, requests/ and its versions" {
	run ls "$MNT/add_sub"
	[ "$output" = "$(printf '1\nconfig.json\ninfer\nmetadata.json\nrequests\nstats.json\nstatus')" ]
	run ls "$MNT/add_sub/1"
	[ "$output" = "$(printf 'config.json\ninfer\nmetadata.json\nrequests\nstats.json\nstatus')" ]
	[ -d "$MNT/add_sub/requests" ]
	[ -d "$MNT/add_sub/1/requests" ]
}

@test "config.json is the config in effect" {
	run "$PY" -c "
import json; c = json.load(open('$MNT/mlp/config.json'))
assert c['name'] == 'mlp' and c['max_batch_size'] == 64, c
assert c['input'][0]['name'] == 'input'
assert 'dynamic_batching' in c
c1 = json.load(open('$MNT/mlp/1/config.json')); assert c1 == c
print('ok')"
	[ "$output" = ok ]
}

@test "metadata.json is KServe v2 model metadata" {
	run "$PY" -c "
import json; m = json.load(open('$MNT/mlp/metadata.json'))
assert m['name'] == 'mlp' and m['versions'] == ['1'], m
assert m['inputs'] == [{'name': 'input', 'datatype': 'FP32', 'shape': [-1, 784]}], m['inputs']
assert m['outputs'] == [{'name': 'probabilities', 'datatype': 'FP32', 'shape': [-1, 10]}], m['outputs']
a = json.load(open('$MNT/add_sub/metadata.json'))
assert a['inputs'][0] == {'name': 'INPUT0', 'datatype': 'FP32', 'shape': [16]}, a
print('ok')"
	[ "$output" = ok ]
}

@test "status is one line: state, version, device" {
	run cat "$MNT/add_sub/status"
	[[ "$output" == "READY 1 cpu"* ]]
	run cat "$MNT/add_sub/1/status"
	[[ "$output" == "READY 1 cpu"* ]]
}

@test "stats.json follows Triton's statistics extension" {
	run "$PY" -c "
import json; s = json.load(open('$MNT/add_sub/stats.json'))
m = s['model_stats'][0]
assert m['name'] == 'add_sub' and m['version'] == '1'
for k in ('success', 'fail', 'queue', 'compute_input', 'compute_infer', 'compute_output'):
    assert set(m['inference_stats'][k]) == {'count', 'ns'}, k
assert 'batch_stats' in m and 'inference_count' in m and 'execution_count' in m
print('ok')"
	[ "$output" = ok ]
}

@test ".metrics is Prometheus text with Triton's names" {
	run cat "$MNT/.metrics"
	[ "$status" -eq 0 ]
	for name in nv_inference_request_success nv_inference_request_failure nv_inference_count \
		nv_inference_exec_count nv_inference_request_duration_us nv_inference_queue_duration_us \
		nv_inference_compute_input_duration_us nv_inference_compute_infer_duration_us \
		nv_inference_compute_output_duration_us nv_model_load_duration_secs; do
		grep -q "^# TYPE $name " "$MNT/.metrics"
	done
	grep -q '^nv_inference_request_success{model="add_sub",version="1"} [0-9]*$' "$MNT/.metrics"
}

@test "stat sizes equal the bytes cat, dd and Python read" {
	for f in .index.json .metrics add_sub/config.json add_sub/metadata.json add_sub/status \
		add_sub/stats.json mlp/1/config.json; do
		size=$(stat -c %s "$MNT/$f")
		[ "$size" -gt 0 ]
		[ "$(cat "$MNT/$f" | wc -c)" -eq "$size" ]
		[ "$(dd if="$MNT/$f" bs=7 2>/dev/null | wc -c)" -eq "$size" ]
		[ "$("$PY" -c "print(len(open('$MNT/$f','rb').read()))")" -eq "$size" ]
	done
	cp "$MNT/add_sub/config.json" "$BATS_TEST_TMPDIR/c.json"
	cmp "$BATS_TEST_TMPDIR/c.json" "$MNT/add_sub/config.json"
}

@test "modes: control files read-only, infer read-write, requests/ writable by all (sticky)" {
	[ "$(stat -c %A "$MNT/add_sub/config.json")" = "-r--r--r--" ]
	[ "$(stat -c %A "$MNT/add_sub/infer")" = "-rw-rw-rw-" ]
	[ "$(stat -c %A "$MNT/add_sub/requests")" = "drwxrwxrwt" ]
	[ "$(stat -c %A "$MNT/add_sub")" = "dr-xr-xr-x" ]
}

@test "writing a control file fails with EROFS" {
	for f in .index.json .metrics add_sub/config.json add_sub/status add_sub/1/stats.json; do
		run py_errno "open('$MNT/$f', 'w')"
		[ "$output" = EROFS ]
	done
	run py_errno "os.mkdir('$MNT/newmodel')"
	[ "$output" = EROFS ]
	run py_errno "open('$MNT/add_sub/newfile', 'w')"
	[ "$output" = EROFS ]
}

@test "unknown names are ENOENT" {
	run py_errno "os.stat('$MNT/nosuchmodel')"
	[ "$output" = ENOENT ]
	run py_errno "os.stat('$MNT/add_sub/7')"
	[ "$output" = ENOENT ]
	run py_errno "os.stat('$MNT/add_sub/requests/nosuchrequest')"
	[ "$output" = ENOENT ]
}

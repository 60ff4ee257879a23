#!/usr/bin/env bats
# The transaction file MOUNT/<model>/infer (SPEC.md section 5).

load helpers

use_shared_mount examples

REQ='{"inputs":[{"name":"INPUT0","shape":[16],"datatype":"FP32","data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]},{"name":"INPUT1","shape":[16],"datatype":"FP32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]}'

@test "infer from bash: write the request, read the response" {
	exec 7<>"$MNT/add_sub/infer"
	printf '%s' "$REQ" >&7
	resp=$(cat <&7)
	exec 7>&-
	run "$PY" -c "
import json, sys; r = json.loads(sys.argv[1])
assert r['model_name'] == 'add_sub' and r['model_version'] == '1', r
o = {t['name']: t for t in r['outputs']}
assert o['OUTPUT0']['data'] == [float(i + 2) for i in range(16)], o
assert o['OUTPUT1']['data'] == [float(i) for i in range(16)]
assert o['OUTPUT0']['shape'] == [16] and o['OUTPUT0']['datatype'] == 'FP32'
print('ok')" "$resp"
	[ "$output" = ok ]
}

@test "several requests on one open file; each response answers its request" {
	exec 7<>"$MNT/add_sub/infer"
	for k in 1 2 3 4 5; do
		printf '{"id":"r%d","inputs":[{"name":"INPUT0","shape":[16],"datatype":"FP32","data":[%s]},{"name":"INPUT1","shape":[16],"datatype":"FP32","data":[%s]}],"outputs":[{"name":"OUTPUT0"}]}' \
			$k "$(seq -s, $k $((k + 15)))" "$(seq -s, 16)" >&7
		resp=$(cat <&7)
		run "$PY" -c "
import json, sys; r = json.loads(sys.argv[1]); k = int(sys.argv[2])
assert r['id'] == 'r%d' % k
assert [t['name'] for t in r['outputs']] == ['OUTPUT0']
assert r['outputs'][0]['data'] == [float(k + i + 1 + i) for i in range(16)], r
print('ok')" "$resp" $k
		[ "$output" = ok ]
	done
	exec 7>&-
}

@test "nested data and the batched mlp through infer" {
	exec 7<>"$MNT/mlp/infer"
	"$PY" -c "
import json, numpy as np
x = np.load('$EXAMPLES/mlp/samples/input_batch4.npy')
print(json.dumps({'inputs': [{'name': 'input', 'shape': list(x.shape), 'datatype': 'FP32', 'data': x.tolist()}]}))" >&7
	resp=$(cat <&7)
	exec 7>&-
	run "$PY" -c "
import json, sys; r = json.loads(sys.argv[1]); o = r['outputs'][0]
assert o['name'] == 'probabilities' and o['shape'] == [4, 10], o['shape']
assert abs(sum(o['data'][:10]) - 1) < 1e-5
print('ok')" "$resp"
	[ "$output" = ok ]
}

@test "errors come back as {\"error\": ...} and the file stays usable" {
	exec 7<>"$MNT/add_sub/infer"
	printf 'not json' >&7
	resp=$(cat <&7)
	[[ "$resp" == '{"error":'* ]]
	printf '{"inputs":[{"name":"NOPE","shape":[16],"datatype":"FP32","data":[1]}]}' >&7
	resp=$(cat <&7)
	[[ "$resp" == *"no input named 'NOPE'"* ]]
	printf '{"inputs":[{"name":"INPUT0","shape":[3],"datatype":"FP32","data":[1,2,3]},{"name":"INPUT1","shape":[16],"datatype":"FP32","data":[1]}]}' >&7
	resp=$(cat <&7)
	[[ "$resp" == '{"error":'* ]]
	printf '%s' "$REQ" >&7
	resp=$(cat <&7)
	[[ "$resp" == *'"model_name":"add_sub"'* ]]
	exec 7>&-
}

@test "reading with nothing written returns nothing" {
	run cat "$MNT/add_sub/infer"
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
}

@test "many processes use infer at once, each its own session" {
	for p in $(seq 1 8); do
		(
			for k in $(seq 1 20); do
				exec 7<>"$MNT/add_sub/infer"
				printf '{"inputs":[{"name":"INPUT0","shape":[16],"datatype":"FP32","data":[%s]},{"name":"INPUT1","shape":[16],"datatype":"FP32","data":[%s]}]}' \
					"$(seq -s, $p $((p + 15)))" "$(seq -s, $k $((k + 15)))" >&7
				resp=$(cat <&7)
				exec 7>&-
				"$PY" -c "
import json, sys; r = json.loads(sys.argv[1]); p, k = int(sys.argv[2]), int(sys.argv[3])
o = [t['data'] for t in r['outputs'] if t['name'] == 'OUTPUT0'][0]
assert o == [float(p + k + 2 * i) for i in range(16)], (p, k, o)" "$resp" $p $k || exit 1
			done
		) &
		clients="$clients $!"
	done
	fails=0
	for pid in $clients; do
		wait "$pid" || fails=$((fails + 1))
	done
	[ "$fails" -eq 0 ]
}

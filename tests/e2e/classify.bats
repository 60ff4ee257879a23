#!/usr/bin/env bats
# Classification with labels (SPEC.md sections 4 and 5, Triton's
# label_filename and classification extension) through a real mount:
# OUTPUT.topK.txt with and without a label file, batched outputs, K past
# the number of classes, a bad K, and the infer file's "classification".

load helpers

make_shared_repo() {
	REPO=$(mktemp -d "${BATS_RUN_TMPDIR:-/tmp}/repo.XXXXXX")
	# mlp with labels; mlp_plain: the same model without a label file.
	cp -r "$EXAMPLES/mlp" "$REPO/mlp"
	cp -r "$EXAMPLES/mlp" "$REPO/mlp_plain"
	sed -i 's/^name: "mlp"/name: "mlp_plain"/' "$REPO/mlp_plain/config.pbtxt"
	printf '%s\n' zero one two three four five six seven eight nine > "$REPO/mlp/labels.txt"
	sed -i 's/    dims: \[ 10 \]/    dims: [ 10 ]\n    label_filename: "labels.txt"/' "$REPO/mlp/config.pbtxt"
}
use_shared_mount own

# expected_topk NPY K LABELS(0|1): what topK.txt must hold, from NumPy.
expected_topk() {
	"$PY" - "$@" <<'PYEOF'
import sys, numpy as np
p = np.load(sys.argv[1]).reshape(-1, 10); k = int(sys.argv[2]); labelled = sys.argv[3] == '1'
names = 'zero one two three four five six seven eight nine'.split()
blocks = []
for row in p:
    order = sorted(range(10), key=lambda i: (-row[i], i))[:k]
    blocks.append(''.join('%f %d%s\n' % (row[i], i, ' ' + names[i] if labelled else '') for i in order))
sys.stdout.write('\n'.join(blocks))
PYEOF
}

@test "OUTPUT.top3.txt: the three highest scores, highest first, with their labels: one cp and one cat" {
	req=$(new_request mlp)
	cp "$EXAMPLES/mlp/samples/input.npy" "$req/input.npy"
	cat "$req/probabilities.top3.txt" > "$T/top3.txt"
	cat "$req/probabilities.npy" > "$T/p.npy"
	[ "$(wc -l < "$T/top3.txt")" -eq 3 ]
	expected_topk "$T/p.npy" 3 1 > "$T/want.txt"
	diff "$T/want.txt" "$T/top3.txt"
	# top1: the class, as a script wants it.
	run awk '{ print $3 }' "$req/probabilities.top1.txt"
	[ "$output" = "$(awk 'NR == 1 { print $3 }' "$T/top3.txt")" ]
	# stat's size is the content's (cat relies on it).
	[ "$(stat -c %s "$req/probabilities.top3.txt")" -eq "$(wc -c < "$T/top3.txt")" ]
	rm -r "$req"
}

@test "without a label file, topK.txt has two columns: score and index" {
	req=$(new_request mlp_plain)
	cp "$EXAMPLES/mlp/samples/input.npy" "$req/input.npy"
	cat "$req/probabilities.npy" > "$T/p.npy"
	expected_topk "$T/p.npy" 5 0 > "$T/want.txt"
	diff "$T/want.txt" <(cat "$req/probabilities.top5.txt")
	[ "$(awk '{ print NF }' "$req/probabilities.top5.txt" | sort -u)" = 2 ]
	rm -r "$req"
}

@test "a batch of 3: one block of K lines per batch item, separated by an empty line; K past the classes gives them all" {
	"$PY" -c "import numpy as np; np.save('$T/x.npy', np.random.default_rng(5).random((3, 784), dtype=np.float32))"
	req=$(new_request mlp)
	cp "$T/x.npy" "$req/input.npy"
	cat "$req/probabilities.npy" > "$T/p.npy"
	expected_topk "$T/p.npy" 2 1 > "$T/want.txt"
	diff "$T/want.txt" <(cat "$req/probabilities.top2.txt")
	[ "$(grep -c '^$' "$req/probabilities.top2.txt")" -eq 2 ]
	expected_topk "$T/p.npy" 10 1 > "$T/want10.txt"
	diff "$T/want10.txt" <(cat "$req/probabilities.top1000.txt")
	rm -r "$req"
}

@test "a bad K is no file (ENOENT); an input's name is no classification either" {
	req=$(new_request mlp)
	cp "$EXAMPLES/mlp/samples/input.npy" "$req/input.npy"
	for name in probabilities.top0.txt probabilities.top.txt probabilities.top-1.txt \
		    probabilities.top05.txt probabilities.topx.txt probabilities.top5.npy input.top5.txt; do
		run py_errno "open('$req/$name').read()"
		[ "$output" = ENOENT ] || { echo "$name: $output"; false; }
	done
	# The request itself is unharmed.
	[ "$(wc -l < "$req/probabilities.top4.txt")" -eq 4 ]
	rm -r "$req"
}

@test "infer with \"classification\": Triton's BYTES strings score:index:label" {
	run "$PY" - "$MNT" "$EXAMPLES/mlp/samples/input.npy" <<'PYEOF'
import json, os, sys, numpy as np
mnt, x = sys.argv[1], np.load(sys.argv[2])
def infer(model, outputs):
    fd = os.open(f'{mnt}/{model}/infer', os.O_RDWR)
    os.write(fd, json.dumps({'inputs': [{'name': 'input', 'datatype': 'FP32', 'shape': list(x.shape),
                                         'data': x.ravel().tolist()}], 'outputs': outputs}).encode())
    r = json.loads(os.read(fd, 1 << 20)); os.close(fd)
    return r
plain = infer('mlp', [])['outputs'][0]['data']
names = 'zero one two three four five six seven eight nine'.split()
order = sorted(range(10), key=lambda i: (-plain[i], i))
r = infer('mlp', [{'name': 'probabilities', 'parameters': {'classification': 3}}])['outputs'][0]
assert r['datatype'] == 'BYTES' and r['shape'] == [1, 3], r
assert r['data'] == ['%f:%d:%s' % (plain[i], i, names[i]) for i in order[:3]], (r, plain)
# No label file: "score:index", as Triton answers.
r = infer('mlp_plain', [{'name': 'probabilities', 'parameters': {'classification': 2}}])['outputs'][0]
assert r['data'] == ['%f:%d' % (plain[i], i) for i in order[:2]], r
# A bad K is the request's error.
for bad in (0, -1, 'five', 2.5):
    e = infer('mlp', [{'name': 'probabilities', 'parameters': {'classification': bad}}])
    assert e == {'error': "output 'probabilities': \"classification\" must be a positive integer"}, e
print('ok')
PYEOF
	[ "$status" -eq 0 ]
	[ "$output" = ok ]
}

@test "a label file that is missing fails the load, naming the file" {
	mkdir -p "$REPO/nolabels"
	cp -r "$EXAMPLES/mlp/1" "$REPO/nolabels/"
	sed -e 's/^name: "mlp"/name: "nolabels"/' -e 's/    dims: \[ 10 \]/    dims: [ 10 ]\n    label_filename: "missing.txt"/' \
		"$EXAMPLES/mlp/config.pbtxt" > "$REPO/nolabels/config.pbtxt"
	wait_until 10 test -e "$MNT/nolabels/status"
	wait_until 10 grep -q UNAVAILABLE "$MNT/nolabels/status"
	[[ "$(cat "$MNT/nolabels/status")" == *"output 'probabilities': label file $REPO/nolabels/missing.txt: "* ]]
}

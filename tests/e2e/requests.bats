#!/usr/bin/env bats
# Request directories (SPEC.md section 4): the shell path, every format in
# and out, byte-exact round trips, status/error/trace.json, reuse, rm -r.

load helpers

use_shared_mount examples

@test "add_sub from the shell: mkdir, echo inputs, cat outputs, rm -r" {
	req=$(new_request add_sub job42)
	[ "$(cat "$req/status")" = "WAITING INPUT0 INPUT1" ]
	seq 16 > "$req/INPUT0.txt"
	[ "$(cat "$req/status")" = "WAITING INPUT1" ]
	echo "1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1" > "$req/INPUT1.txt"
	[ "$(cat "$req/OUTPUT0.txt")" = "2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17" ]
	[ "$(cat "$req/OUTPUT1.txt")" = "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15" ]
	[ "$(cat "$req/status")" = "DONE" ]
	[ "$(cat "$req/error")" = "" ]
	run ls "$req"
	[ "$output" = "$(printf 'OUTPUT0.txt\nOUTPUT1.txt\nerror\nstatus\ntrace.json')" ]
	rm -r "$req"
	[ ! -e "$req" ]
	run ls "$MNT/add_sub/requests"
	[[ "$output" != *job42* ]]
}

@test "mkdir twice is EEXIST; bad names are EINVAL" {
	req=$(new_request add_sub twice)
	run py_errno "os.mkdir('$req')"
	[ "$output" = EEXIST ]
	run py_errno "os.mkdir('$MNT/add_sub/requests/bad name')"
	[ "$output" = EINVAL ]
	run py_errno "os.mkdir('$MNT/add_sub/requests/$(printf 'x%.0s' $(seq 65))')"
	[ "$output" = EINVAL ]
	rmdir "$req"
}

@test "every input format, every output format" {
	"$PY" - "$T" <<'PY'
import json, sys, numpy as np, onnx, onnx.numpy_helper as nh
d = sys.argv[1]
a = np.arange(16, dtype=np.float32) * 0.5
b = np.full(16, 2, dtype=np.float32)
np.save(d + '/a.npy', a)
json.dump({"shape": [16], "datatype": "FP32", "data": a.tolist()}, open(d + '/a.json', 'w'))
json.dump(a.tolist(), open(d + '/a_nested.json', 'w'))
open(d + '/a.txt', 'w').write(' '.join('%g' % x for x in a) + '\n')
open(d + '/a.raw', 'wb').write(a.tobytes())
open(d + '/a.pb', 'wb').write(nh.from_array(a, 'whatever').SerializeToString())
np.save(d + '/b.npy', b)
np.save(d + '/sum.npy', a + b)
PY
	for f in a.npy a.json a_nested.json a.txt a.raw a.pb; do
		req=$(new_request add_sub)
		ext=${f##*.}
		cp "$T/$f" "$req/INPUT0.$ext"
		cp "$T/b.npy" "$req/INPUT1.npy"
		cp "$req/OUTPUT0.npy" "$T/out.npy"
		run "$PY" -c "
import numpy as np, json, onnx, onnx.numpy_helper as nh
want = np.load('$T/sum.npy')
assert np.array_equal(np.load('$T/out.npy'), want)
assert np.array_equal(np.array(json.load(open('$req/OUTPUT0.json'))['data'], dtype=np.float32), want)
assert json.load(open('$req/OUTPUT0.json'))['shape'] == [16]
assert np.array_equal(np.loadtxt('$req/OUTPUT0.txt', dtype=np.float32), want)
assert np.array_equal(np.frombuffer(open('$req/OUTPUT0.raw','rb').read(), dtype=np.float32), want)
t = onnx.TensorProto(); t.ParseFromString(open('$req/OUTPUT0.pb','rb').read())
assert np.array_equal(nh.to_array(t), want)
print('ok')"
		echo "$f: $output"
		[ "$output" = ok ]
		rm -r "$req"
	done
}

@test "byte-exact round trips for .npy, .raw and .pb" {
	"$PY" - "$T" <<'PY'
import sys, numpy as np, onnx.numpy_helper as nh
d = sys.argv[1]
rng = np.random.default_rng(7)
x = rng.standard_normal(16).astype(np.float32)
x[x == 0] = 1
z = np.zeros(16, dtype=np.float32)
np.save(d + '/x.npy', x); np.save(d + '/z.npy', z)
open(d + '/x.raw', 'wb').write(x.tobytes())
open(d + '/x.pb', 'wb').write(nh.from_array(x, 'INPUT0').SerializeToString())
open(d + '/want.pb', 'wb').write(nh.from_array(x, 'OUTPUT0').SerializeToString())
PY
	for ext in npy raw pb; do
		req=$(new_request add_sub)
		cp "$T/x.$ext" "$req/INPUT0.$ext"
		cp "$T/z.npy" "$req/INPUT1.npy"
		# x + 0 is x: the output file must be the input file, byte for byte.
		if [ "$ext" = pb ]; then
			cmp "$req/OUTPUT0.pb" "$T/want.pb"
		else
			cmp "$req/OUTPUT0.$ext" "$T/x.$ext"
		fi
		# An input reads back exactly as written until the run consumes it.
		rm -r "$req"
	done
	req=$(new_request add_sub)
	cp "$T/x.npy" "$req/INPUT0.npy"
	cmp "$req/INPUT0.npy" "$T/x.npy"
	rm -r "$req"
}

@test "ls lists outputs in the format of the first input" {
	req=$(new_request add_sub)
	"$PY" -c "import numpy as np; np.save('$T/o.npy', np.ones(16, np.float32))"
	cp "$T/o.npy" "$req/INPUT0.npy"
	cp "$T/o.npy" "$req/INPUT1.npy"
	run ls "$req"
	[ "$output" = "$(printf 'OUTPUT0.npy\nOUTPUT1.npy\nerror\nstatus\ntrace.json')" ]
	rm -r "$req"
}

@test "batched models: .txt infers the batch dim, outputs keep it" {
	req=$(new_request mlp)
	"$PY" -c "
import numpy as np
x = np.load('$EXAMPLES/mlp/samples/input_batch4.npy')
assert x.shape == (4, 784), x.shape
open('$T/x.txt', 'w').write('\n'.join(' '.join('%.9g' % v for v in row) for row in x) + '\n')"
	cp "$T/x.txt" "$req/input.txt"
	cp "$req/probabilities.npy" "$T/p.npy"
	run "$PY" -c "
import numpy as np
p = np.load('$T/p.npy'); assert p.shape == (4, 10), p.shape
assert np.allclose(p.sum(axis=1), 1, atol=1e-5)
print('ok')"
	[ "$output" = ok ]
	[ "$(wc -l < "$req/probabilities.txt")" -eq 4 ]
	rm -r "$req"
}

@test "mlp matches the committed reference output" {
	req=$(new_request mlp)
	cp "$EXAMPLES/mlp/samples/input.npy" "$req/input.npy"
	run "$PY" -c "
import numpy as np
got = np.load('$req/probabilities.npy'); want = np.load('$EXAMPLES/mlp/samples/expected/probabilities.npy')
assert got.shape == want.shape, (got.shape, want.shape)
assert np.abs(got - want).max() <= 1e-3 * np.abs(want).max(), np.abs(got - want).max()
print('ok')"
	[ "$output" = ok ]
	rm -r "$req"
}

@test "trace.json has the timings, the batch size and the device" {
	req=$(new_request add_sub)
	seq 16 > "$req/INPUT0.txt"
	seq 16 > "$req/INPUT1.txt"
	cat "$req/OUTPUT0.txt" > /dev/null
	run "$PY" -c "
import json; t = json.load(open('$req/trace.json'))
for k in ('queue_ns', 'input_ns', 'compute_ns', 'output_ns'):
    assert isinstance(t[k], int) and t[k] >= 0, k
assert t['compute_ns'] > 0 and t['batch_size'] == 1 and t['device'] == 'cpu' and t['state'] == 'DONE'
print('ok')"
	[ "$output" = ok ]
	rm -r "$req"
}

@test "reuse: writing inputs to a finished request runs it again" {
	req=$(new_request add_sub loop)
	for i in 1 2 3 4 5; do
		seq $i $((i + 15)) > "$req/INPUT0.txt"
		[ "$(cat "$req/status")" = "WAITING INPUT1" ]
		seq 16 > "$req/INPUT1.txt"
		want=$(seq 16 | awk -v i=$i '{printf "%s%d", (NR>1?" ":""), $1 + ($1 + i - 1)}')
		[ "$(cat "$req/OUTPUT0.txt")" = "$want" ]
	done
	run "$PY" -c "import json; print(json.load(open('$req/trace.json'))['run'])"
	[ "$output" = 5 ]
	rm -r "$req"
}

@test "a consumed input is gone by every path, and its name takes the next input by any way of writing" {
	req=$(new_request add_sub consumed)
	run_once() {   # $1: how INPUT0.txt is written; INPUT1 by the shell
		"$PY" -c "$1"
		seq 16 > "$req/INPUT1.txt"
		[ "$(cat "$req/OUTPUT0.txt" | wc -w)" = 16 ]
	}
	run_once "open('$req/INPUT0.txt', 'w').write(' '.join(map(str, range(16))))"
	# gone: stat, open, ls, rm all say so (the kernel may keep the name)
	[ ! -e "$req/INPUT0.txt" ]
	run py_errno "os.stat('$req/INPUT0.txt')"
	[ "$output" = ENOENT ]
	run py_errno "open('$req/INPUT0.txt')"
	[ "$output" = ENOENT ]
	! ls "$req" | grep -q INPUT0
	run py_errno "os.unlink('$req/INPUT0.txt')"
	[ "$output" = ENOENT ]
	# written again: O_EXCL, O_APPEND, cp, the shell's >, a symlink
	run_once "import os; f = os.open('$req/INPUT0.txt', os.O_WRONLY | os.O_CREAT | os.O_EXCL); os.write(f, b'1 ' * 16); os.close(f)"
	run_once "open('$req/INPUT0.txt', 'a').write('2 ' * 16)"
	seq 16 > "$BATS_TEST_TMPDIR/in.txt"
	cp "$BATS_TEST_TMPDIR/in.txt" "$req/INPUT0.txt"
	seq 16 > "$req/INPUT1.txt"
	[ "$(cat "$req/OUTPUT0.txt" | wc -w)" = 16 ]
	echo {1..16} > "$req/INPUT0.txt"
	seq 16 > "$req/INPUT1.txt"
	[ "$(cat "$req/OUTPUT0.txt")" = "$(seq 2 2 32 | paste -sd' ')" ]
	ln -s "$BATS_TEST_TMPDIR/in.txt" "$req/INPUT0.txt"
	seq 16 > "$req/INPUT1.txt"
	[ "$(cat "$req/OUTPUT0.txt" | wc -w)" = 16 ]
	run "$PY" -c "import json; print(json.load(open('$req/trace.json'))['run'])"
	[ "$output" = 6 ]
	rm -r "$req"
}

@test "a bad input fails close() with EINVAL and the reason is in error" {
	req=$(new_request add_sub)
	# /bin/echo and cat check close(); bash's builtin echo cannot see it.
	run bash -c "/bin/echo '1 2 3' > '$req/INPUT0.txt'"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Invalid argument"* ]]
	run bash -c "echo '1 2 3' | cat > '$req/INPUT0.txt'"
	[ "$status" -ne 0 ]
	run py_errno "f = open('$req/INPUT0.txt', 'w'); f.write('1 2'); f.close()"
	[ "$output" = EINVAL ]
	grep -q "INPUT0" "$req/error"
	grep -q "16" "$req/error"
	# Nothing else in the request is lost.
	seq 16 > "$req/INPUT1.txt"
	[ "$(cat "$req/status")" = "WAITING INPUT0" ]
	seq 16 > "$req/INPUT0.txt"
	[ "$(cat "$req/status")" != "FAILED" ]
	cat "$req/OUTPUT0.txt" > /dev/null
	[ "$(cat "$req/error")" = "" ]
	rm -r "$req"
}

@test "an unknown input name fails at create with ENOENT; cp and bash's echo report it" {
	req=$(new_request add_sub)
	run cp "$EXAMPLES/add_sub/samples/INPUT0.npy" "$req/NOPE.npy"
	[ "$status" -ne 0 ]
	[[ "$output" == *"No such file or directory"* ]]
	grep -q "NOPE" "$req/error"
	[ ! -e "$req/NOPE.npy" ]
	# bash's builtin echo ignores close(), but not a failed open
	run bash -c "echo 1 2 3 > '$req/a.npy'"
	[ "$status" -ne 0 ]
	grep -q "model 'add_sub' has no input named 'a'" "$req/error"
	run py_errno "open('$req/INPUT0.bin', 'w')"
	[ "$output" = ENOENT ]
	grep -q "not NAME.EXT" "$req/error"
	[ "$(ls "$req")" = "$(printf 'error\nstatus\ntrace.json')" ]
	rm -r "$req"
}

@test "a file that cannot be of its format fails at the first write (bash's echo sees it)" {
	req=$(new_request add_sub)
	for f in INPUT0.npy INPUT0.txt INPUT0.json; do
		run bash -c "echo 'not a tensor' > '$req/$f'"
		[ "$status" -ne 0 ]
		[[ "$output" == *"Invalid argument"* ]]
		grep -q "'$f'" "$req/error"
		[ ! -e "$req/$f" ]
	done
	grep -q "is not a number" "$DAEMON_LOG"
	grep -q "NUMPY magic" "$DAEMON_LOG"
	# every later write fails too, and close() says it again
	run py_errno "
f = open('$req/INPUT1.txt', 'w', buffering=1)
try:
    f.write('1 2 x\\n')
except OSError as e:
    assert e.errno == errno.EINVAL, e
    os.write(f.fileno(), b'3 4\\n')"
	[ "$output" = EINVAL ]
	# a good file written in pieces passes, the rest is checked at close
	run py_errno "
fd = os.open('$req/INPUT0.txt', os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
os.write(fd, b'1 2 3'); os.write(fd, b'.5 4\\n'); os.write(fd, b' '.join([b'1'] * 12)); os.close(fd)"
	[ "$output" = OK ]
	[ "$(cat "$req/status")" = "WAITING INPUT1" ]
	rm -r "$req"
}

@test "the wrong datatype in a binary format is EINVAL" {
	req=$(new_request add_sub)
	"$PY" -c "import numpy as np; np.save('$T/i.npy', np.arange(16, dtype=np.int64))"
	run cp "$T/i.npy" "$req/INPUT0.npy"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Invalid argument"* ]]
	run cat "$req/error"
	[[ "$output" == *"INPUT0"* ]]
	rm -r "$req"
}

@test "reading an output while inputs are missing is ENODATA naming them" {
	req=$(new_request add_sub)
	seq 16 > "$req/INPUT0.txt"
	run py_errno "open('$req/OUTPUT0.txt').read()"
	[ "$output" = ENODATA ]
	grep -q "INPUT1" "$DAEMON_LOG"
	run py_errno "open('$req/NOSUCH.txt').read()"
	[ "$output" = ENOENT ]
	rm -r "$req"
}

@test "outputs are read-only; control files in a request are EROFS" {
	req=$(new_request add_sub)
	run py_errno "open('$req/OUTPUT0.npy', 'w')"
	[ "$output" = EACCES ]
	run py_errno "open('$req/status', 'w')"
	[ "$output" = EROFS ]
	rm -r "$req"
}

@test "unlinking an input removes it; the request waits for it again" {
	req=$(new_request add_sub)
	seq 16 > "$req/INPUT0.txt"
	rm "$req/INPUT0.txt"
	[ ! -e "$req/INPUT0.txt" ]
	[ "$(cat "$req/status")" = "WAITING INPUT0 INPUT1" ]
	rm -r "$req"
}

@test "a pinned version directory serves requests too" {
	req=$(new_request add_sub/1)
	seq 16 > "$req/INPUT0.txt"
	seq 16 > "$req/INPUT1.txt"
	[ "$(cat "$req/OUTPUT1.txt")" = "0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0" ]
	rm -r "$req"
}

@test "rename into place: a dot file is kept as written, renaming it commits it" {
	req=$(new_request add_sub staged)
	cp "$EXAMPLES/add_sub/samples/INPUT0.npy" "$req/.INPUT0.npy.tmp"
	[ -e "$req/.INPUT0.npy.tmp" ]
	cmp "$req/.INPUT0.npy.tmp" "$EXAMPLES/add_sub/samples/INPUT0.npy"
	[ "$(cat "$req/status")" = "WAITING INPUT0 INPUT1" ]
	mv "$req/.INPUT0.npy.tmp" "$req/INPUT0.npy"
	[ ! -e "$req/.INPUT0.npy.tmp" ]
	[ "$(cat "$req/status")" = "WAITING INPUT1" ]
	# Python's write-then-replace idiom; a bad temporary is refused at rename.
	run py_errno "open('$req/.bad', 'w').write('1 2 3'); os.replace('$req/.bad', '$req/INPUT1.txt')"
	[ "$output" = EINVAL ]
	[ -e "$req/.bad" ]
	run py_errno "open('$req/.good', 'w').write(' '.join(['1'] * 16)); os.replace('$req/.good', '$req/INPUT1.txt')"
	[ "$output" = OK ]
	[ "$(cat "$req/OUTPUT1.txt")" = "$("$PY" -c "import numpy as np; print(' '.join('%.9g' % (v - 1) for v in np.load('$EXAMPLES/add_sub/samples/INPUT0.npy')))")" ]
	[ "$(cat "$req/status")" = DONE ]
	rm -r "$req"
}

@test "fsync commits an input as close does, and returns its error" {
	req=$(new_request add_sub fsynced)
	# A good file: committed at fsync, before close.
	run py_errno "
f = open('$req/INPUT0.txt', 'w'); f.write(' '.join(['1'] * 16)); f.flush(); os.fsync(f.fileno())
assert open('$req/status').read() == 'WAITING INPUT1\n', open('$req/status').read()
f.close()"
	[ "$output" = OK ]
	# A bad one: fsync fails with close()'s error, and error says why.
	run py_errno "f = open('$req/INPUT1.txt', 'w'); f.write('1 2'); f.flush(); os.fsync(f.fileno())"
	[ "$output" = EINVAL ]
	grep -q "INPUT1" "$req/error"
	rm -r "$req"
}

@test "ftruncate: shrink and grow (zero bytes) an input being written; past the limit EFBIG" {
	req=$(new_request add_sub truncated)
	# 18 values; truncating the last two away leaves a valid file.
	run py_errno "
f = open('$req/INPUT0.txt', 'w'); f.write(' '.join(['2'] * 16) + ' 9 9'); f.flush()
os.ftruncate(f.fileno(), len(' '.join(['2'] * 16)))
f.close()"
	[ "$output" = OK ]
	[ "$(cat "$req/INPUT0.txt")" = "$(printf '2 %.0s' $(seq 15))2" ]
	# Growing adds zero bytes, as a write past the end would: a .raw of
	# 16 FP32 zeros is 64 bytes.
	run py_errno "f = open('$req/INPUT1.raw', 'wb'); os.ftruncate(f.fileno(), 64); f.close()"
	[ "$output" = OK ]
	[ "$(cat "$req/OUTPUT0.txt")" = "2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2" ]
	# 2^40 bytes is past --max-request-bytes: EFBIG, the file unchanged
	# (its 64 bytes commit at close).
	run py_errno "
f = open('$req/INPUT1.raw', 'wb'); f.write(bytes(64)); f.flush()
try:
    os.ftruncate(f.fileno(), 1 << 40)
finally:
    f.close()"
	[ "$output" = EFBIG ]
	[ "$(stat -c %s "$req/INPUT1.raw")" = 64 ]
	# truncate to 0 empties it: an empty tensor file fails at close.
	seq 16 > "$req/INPUT1.txt"
	run py_errno "f = open('$req/INPUT1.txt', 'r+'); os.ftruncate(f.fileno(), 0); f.close()"
	[ "$output" = EINVAL ]
	# Truncating a control file or an output: EROFS / EACCES at open.
	run py_errno "os.truncate('$req/status', 0)"
	[ "$output" = EROFS ]
	rm -r "$req"
}

@test "chmod, chown and explicit times are EPERM; touch (times = now) works" {
	req=$(new_request add_sub attrs)
	seq 16 > "$req/INPUT0.txt"
	for f in "$req" "$req/INPUT0.txt" "$req/status" "$MNT/add_sub/config.json"; do
		run py_errno "os.chmod('$f', 0o777)"
		[ "$output" = EPERM ]
		run py_errno "os.chown('$f', 1, 1)"
		[ "$output" = EPERM ]
		run py_errno "os.utime('$f', (1, 1))"
		[ "$output" = EPERM ]
	done
	# The modes did not change.
	[ "$(stat -c %a "$req/INPUT0.txt")" = 600 ]
	# touch of an existing input sets its times to now: what stat shows.
	touch "$req/INPUT0.txt"
	[ "$(cat "$req/INPUT0.txt" | wc -l)" = 16 ]
	rm -r "$req"
}

@test "a reader is bound to the run current at open: a replaced run is ESTALE" {
	req=$(new_request add_sub shared)
	run "$PY" - "$req" <<'PYEOF'
import errno, os, sys
req = sys.argv[1]
def put(name, v):
    with open(f"{req}/{name}", "w") as f:
        f.write(" ".join([str(v)] * 16) + "\n")
put("INPUT0.txt", 1); put("INPUT1.txt", 1)
mine = open(f"{req}/OUTPUT0.txt")            # client A: its run is run 1
assert open(f"{req}/OUTPUT0.txt").read().split() == ["2"] * 16
put("INPUT0.txt", 5); put("INPUT1.txt", 5)   # client B reuses the directory
assert open(f"{req}/OUTPUT0.txt").read().split() == ["10"] * 16
try:
    print("A read:", mine.read().split()[:1])
except OSError as e:
    print(errno.errorcode[e.errno])
# a reader that opened while B's inputs were still missing reads B's run
put("INPUT0.txt", 3)
theirs = open(f"{req}/OUTPUT0.txt")
put("INPUT1.txt", 3)
print(theirs.read().split()[:1])
PYEOF
	echo "$output"
	[ "${lines[0]}" = ESTALE ]
	[ "${lines[1]}" = "['6']" ]
	grep -q "request 'shared'.*run 1 was replaced" "$DAEMON_LOG"
	rm -r "$req"
}

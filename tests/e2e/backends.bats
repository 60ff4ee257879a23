#!/usr/bin/env bats
# Custom backends (docs/BACKENDS.md) through a real mount: the example
# backend serving requests, a library of the wrong ABI version refused at
# load, a backend's error in $req/error, a backend's crash failing only
# its request (the daemon and the model stay up, the next request is
# served by a new worker).  tests/backends/fault.c is the test backend.

load helpers

BACKENDS="$TOP/build/tests/backends"

# fault_model DIR NAME BACKEND: a model NAME (X -> Y, FP32 [-1]) served by
# libmodelfs_BACKEND.so, put in its version directory.
fault_model() {
	mkdir -p "$1/$2/1"
	printf '%s\n' "backend: \"$3\"" \
		'input [ { name: "X" data_type: TYPE_FP32 dims: [ -1 ] } ]' \
		'output [ { name: "Y" data_type: TYPE_FP32 dims: [ -1 ] } ]' > "$1/$2/config.pbtxt"
	cp "$BACKENDS/libmodelfs_$3.so" "$1/$2/1/"
}

make_shared_repo() {
	REPO=$(mktemp -d "${BATS_RUN_TMPDIR:-/tmp}/repo.XXXXXX")
	cp -r "$EXAMPLES/backends/preprocess" "$REPO/"
	fault_model "$REPO" fault fault
	fault_model "$REPO" badabi badabi
	mkdir -p "$REPO/nolib/1"
	printf 'backend: "nosuch"\ninput [ { name: "X" data_type: TYPE_FP32 dims: [ 1 ] } ]\noutput [ { name: "Y" data_type: TYPE_FP32 dims: [ 1 ] } ]\n' \
		> "$REPO/nolib/config.pbtxt"
}
use_shared_mount own --backend-dir "$TOP/build/examples"

@test "the example backend serves requests: uint8 HWC images into normalised float NCHW" {
	[[ "$(cat "$MNT/preprocess/status")" == "READY 1 cpu backend 'preprocess'"* ]]
	grep -q '"platform": *"preprocess"' "$MNT/preprocess/metadata.json"
	grep -q '"backend": *"preprocess"' "$MNT/preprocess/config.json"
	"$PY" -c "
import numpy as np
img = np.random.default_rng(3).integers(0, 256, (2, 5, 7, 3), dtype=np.uint8)
np.save('$T/img.npy', img)
mean = np.array([0.485, 0.456, 0.406], np.float32); std = np.array([0.229, 0.224, 0.225], np.float32)
np.save('$T/ref.npy', ((img / np.float32(255) - mean) / std).transpose(0, 3, 1, 2).astype(np.float32))"
	req=$(new_request preprocess)
	cp "$T/img.npy" "$req/IMAGE.npy"
	cat "$req/PIXELS.npy" > "$T/out.npy"
	"$PY" -c "
import numpy as np
a, b = np.load('$T/out.npy'), np.load('$T/ref.npy')
assert a.shape == (2, 3, 5, 7) and a.dtype == np.float32, (a.shape, a.dtype)
assert np.abs(a - b).max() < 1e-5, np.abs(a - b).max()"
	# The same through infer, with another image size.
	run "$PY" -c "
import json, os
fd = os.open('$MNT/preprocess/infer', os.O_RDWR)
os.write(fd, json.dumps({'inputs': [{'name': 'IMAGE', 'datatype': 'UINT8', 'shape': [1, 1, 2, 3],
                                     'data': [0, 255, 0, 255, 0, 255]}]}).encode())
r = json.loads(os.read(fd, 1 << 20)); os.close(fd)
o = r['outputs'][0]
assert o['name'] == 'PIXELS' and o['shape'] == [1, 3, 1, 2], r
print(round(o['data'][0], 4), round(o['data'][1], 4))"
	[ "$status" -eq 0 ]
	[ "$output" = "-2.1179 2.2489" ]
	rm -r "$req"
}

@test "a library of another ABI version is refused at load, naming the library and both versions" {
	run cat "$MNT/badabi/status"
	[[ "$output" == UNAVAILABLE* ]]
	[[ "$output" == *"$REPO/badabi/1/libmodelfs_badabi.so declares backend ABI version 99, this modelfs speaks version 1"* ]]
	grep -q "model 'badabi' version 1: backend 'badabi': .*ABI version 99" "$DAEMON_LOG"
	# The other models are unaffected.
	[[ "$(cat "$MNT/fault/status")" == READY* ]]
}

@test "a backend library that is nowhere is a load error naming both places" {
	run cat "$MNT/nolib/status"
	[[ "$output" == UNAVAILABLE* ]]
	[[ "$output" == *"libmodelfs_nosuch.so is not in $REPO/nolib/1 nor in --backend-dir $TOP/build/examples"* ]]
}

@test "a backend's error fails the request: EIO, its text in \$req/error and the log" {
	req=$(new_request fault)
	echo "1 2 3" > "$req/X.txt"
	[ "$(cat "$req/Y.txt")" = "2 4 6" ]
	echo "-1 2 3" > "$req/X.txt"
	run py_errno "open('$req/Y.txt').read()"
	[ "$output" = EIO ]
	run cat "$req/error"
	[[ "$output" == *"model 'fault' version 1: backend 'fault': asked to fail (X[0] = -1)"* ]]
	grep -q "asked to fail (X\[0\] = -1)" "$DAEMON_LOG"
	rm -r "$req"
	# The infer file answers with the same text.
	run "$PY" -c "
import json, os
fd = os.open('$MNT/fault/infer', os.O_RDWR)
os.write(fd, b'{\"inputs\": [{\"name\": \"X\", \"datatype\": \"FP32\", \"shape\": [2], \"data\": [-1, 0]}]}')
print(json.loads(os.read(fd, 65536))['error'])"
	[ "$output" = "model 'fault' version 1: backend 'fault': asked to fail (X[0] = -1)" ]
}

@test "a backend's output that does not match the config fails the request, not the daemon" {
	req=$(new_request fault)
	echo "-3 1" > "$req/X.txt"
	run py_errno "open('$req/Y.txt').read()"
	[ "$output" = EIO ]
	[[ "$(cat "$req/error")" == *"output 'Y' came back with shape [2,1], the config says 1 dims"* ]]
	echo "-4 1" > "$req/X.txt"
	run py_errno "open('$req/Y.txt').read()"
	[ "$output" = EIO ]
	[[ "$(cat "$req/error")" == *"output 'Y' was not given data"* ]]
	rm -r "$req"
}

@test "a backend that crashes: its request fails with the signal, the daemon and model stay, the next request is served" {
	req=$(new_request fault)
	echo "-2 1" > "$req/X.txt"
	run py_errno "open('$req/Y.txt').read()"
	[ "$output" = EIO ]
	run cat "$req/error"
	[[ "$output" == *"model 'fault' version 1: backend 'fault': the worker crashed (killed by signal 6 (Aborted))"* ]]
	grep -q "backend 'fault': worker [0-9]* crashed: killed by signal 6" "$DAEMON_LOG"
	kill -0 "$DAEMON_PID"
	[[ "$(cat "$MNT/fault/status")" == READY* ]]
	# The next request gets a new worker.
	req2=$(new_request fault)
	echo "5 6" > "$req2/X.txt"
	[ "$(cat "$req2/Y.txt")" = "10 12" ]
	grep -q "backend 'fault': new worker [0-9]* after 1 crash" "$DAEMON_LOG"
	# Crashing again and again is answered every time (with a backoff).
	for i in 1 2 3; do
		echo "-2" > "$req/X.txt"
		run py_errno "open('$req/Y.txt').read()"
		[ "$output" = EIO ]
	done
	echo "7" > "$req2/X.txt"
	[ "$(cat "$req2/Y.txt")" = "14" ]
	rm -r "$req" "$req2"
}

@test "a changed config reloads a custom-backend model: new workers, the old ones gone, requests served" {
	workers() { pgrep -P "$DAEMON_PID" -f -- --backend-worker | sort; }
	loaded_twice() { [ "$(grep -c "model 'fault' version 1: READY" "$DAEMON_LOG")" -ge 2 ]; }
	old=$(workers)
	[ "$(echo "$old" | wc -l)" -eq 2 ]   # fault and preprocess, one instance each
	echo "# reloaded" >> "$REPO/fault/config.pbtxt"
	wait_until 20 loaded_twice
	req=$(new_request fault)
	echo "4" > "$req/X.txt"
	[ "$(cat "$req/Y.txt")" = "8" ]
	rm -r "$req"
	# The old version's worker exits once the version is freed.
	two_workers() { [ "$(workers | wc -l)" -eq 2 ]; }
	wait_until 10 two_workers
	[ "$(workers)" != "$old" ]
}

@test "modelfs run serves a custom backend too, and reports its crash" {
	echo "1.5 2" > "$T/x.txt"
	run "$MODELFS" run "$REPO/fault" X="$T/x.txt" --out "$T/out"
	[ "$status" -eq 0 ]
	[ "$(cat "$T/out/Y.txt")" = "3 4" ]
	echo "-2" > "$T/x.txt"
	run "$MODELFS" run "$REPO/fault" X="$T/x.txt" --out "$T/out"
	[ "$status" -eq 1 ]
	[[ "$output" == *"the worker crashed (killed by signal 6"* ]]
	run "$MODELFS" run "$REPO/preprocess" IMAGE="$T/x.txt"
	[ "$status" -eq 1 ]
	[[ "$output" == *"libmodelfs_preprocess.so is not in $REPO/preprocess/1 and no --backend-dir is set"* ]]
}

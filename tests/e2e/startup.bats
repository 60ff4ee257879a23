#!/usr/bin/env bats
# Start-up as an operator sees it (issue 31, SPEC.md sections 1 and 3):
# the mount is there at once and the models load after, in parallel;
# a model still loading is LOADING in its status and its requests fail
# with EAGAIN while the others answer; MOUNT/.live and MOUNT/.ready follow
# Triton's health semantics (--strict-readiness); --exit-on-error makes a
# failed model a failed start, daemonized or not; the log carries the
# date and the zone (--log-format, --log-file); the process is modelfs.
#
# The slow model is tests/backends/fault.c with wait_init: its init waits
# until the test creates a file, so "loading" lasts exactly as long as
# the test wants.

load helpers

BACKENDS="$TOP/build/tests/backends"

setup() {
	T="$BATS_TEST_TMPDIR"
	REPO="$T/repo"
	MARKS="$T/marks"
	mkdir -p "$MARKS"
	add_sub_repo "$REPO"
}

teardown() {
	# Let any slow model go, so that the daemon can stop.
	touch "$T"/go* 2>/dev/null || true
	unmount_repo
}

# slow_model NAME: a model whose load waits for the file $T/go-NAME.
slow_model() {
	mkdir -p "$REPO/$1/1"
	{
		printf 'backend: "fault"\n'
		printf 'input [ { name: "X" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
		printf 'output [ { name: "Y" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
		printf 'parameters { key: "mark_dir" value { string_value: "%s" } }\n' "$MARKS"
		printf 'parameters { key: "wait_init" value { string_value: "%s" } }\n' "$T/go-$1"
	} > "$REPO/$1/config.pbtxt"
	cp "$BACKENDS/libmodelfs_fault.so" "$REPO/$1/1/"
}

# bad_model NAME: a version whose model.onnx is not ONNX.
bad_model() {
	mkdir -p "$REPO/$1/1"
	echo garbage > "$REPO/$1/1/model.onnx"
}

waiting_loads() { ls "$MARKS" | grep -c '^waiting\.' || true; }
waiting_is() { [ "$(waiting_loads)" -eq "$1" ]; }

@test "the mount is there while a slow model loads; the others answer; LOADING until READY" {
	slow_model slow
	local t0 t1
	t0=$(date +%s%N)
	MOUNT_NO_WAIT=1 mount_repo "$REPO" --backend-init-timeout=600
	t1=$(date +%s%N)
	echo "# mounted in $(( (t1 - t0) / 1000000 )) ms" >&3
	# the slow load is under way (its init waits for go-slow) and the
	# mount serves: slow is listed, LOADING
	wait_until 60 waiting_is 1
	[[ "$(cat "$MNT/slow/status")" == "LOADING 1"* ]]
	[ "$(index_state slow)" = "LOADING|" ]
	ls "$MNT" | grep -qx slow
	# another model answers meanwhile
	wait_until 60 grep -q '^READY' "$MNT/add_sub/status"
	add_sub_answers
	# a request on the loading model fails at once with EAGAIN
	[ "$(py_errno "os.mkdir('$MNT/slow/requests/r1')")" = EAGAIN ]
	# (infer answers in JSON, as for any failed request)
	run "$PY" -c "
import os
fd = os.open('$MNT/slow/infer', os.O_RDWR)
os.write(fd, b'{\"inputs\": [{\"name\": \"X\", \"datatype\": \"FP32\", \"shape\": [1], \"data\": [1]}]}')
print(os.read(fd, 4096).decode())"
	[[ "$output" == *'"error"'*"model 'slow' is LOADING (version 1); wait for READY in its status"* ]]
	# health: live, not ready
	[ "$(cat "$MNT/.live")" = live ]
	[ "$(py_errno "open('$MNT/.ready').read()")" = EAGAIN ]
	run cat "$MNT/.ready"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Resource temporarily unavailable"* ]]
	[[ "$(cat "$MNT/slow/status")" == "LOADING 1"* ]]
	# released: READY, ready, and it serves
	touch "$T/go-slow"
	wait_until 60 grep -q '^READY 1' "$MNT/slow/status"
	[ "$(cat "$MNT/.ready")" = ready ]
	req=$(new_request slow)
	echo "1 2 3" > "$req/X.txt"
	[ "$(cat "$req/Y.txt")" = "2 4 6" ]
	grep -q "model 'slow' version 1: READY" "$DAEMON_LOG"
}

@test "models load in parallel (--model-load-thread-count)" {
	[ "$(nproc)" -ge 2 ] || skip "one core: loads are not run side by side"
	slow_model slow1
	slow_model slow2
	MOUNT_NO_WAIT=1 mount_repo "$REPO" --backend-init-timeout=600 --model-load-thread-count=2
	# both inits wait at once: one after the other would never get there
	wait_until 60 waiting_is 2
	[[ "$(cat "$MNT/slow1/status")" == LOADING* ]]
	[[ "$(cat "$MNT/slow2/status")" == LOADING* ]]
	touch "$T/go-slow1" "$T/go-slow2"
	wait_until 60 grep -q '^READY' "$MNT/slow1/status"
	wait_until 60 grep -q '^READY' "$MNT/slow2/status"
}

@test "one load thread: the models load one after the other" {
	slow_model slow1
	slow_model slow2
	MOUNT_NO_WAIT=1 mount_repo "$REPO" --backend-init-timeout=600 --model-load-thread-count=1
	wait_until 60 waiting_is 1
	# add_sub waits behind it too (one thread); the second slow one has
	# not started while the first waits
	[ "$(waiting_loads)" -eq 1 ]
	touch "$T/go-slow1" "$T/go-slow2"
	wait_until 60 grep -q '^READY' "$MNT/slow2/status"
	wait_until 60 grep -q '^READY' "$MNT/slow1/status"
	grep -q "first load: 3 model(s) tried in [0-9.]* s on 1 thread(s); 0 version(s) failed" "$DAEMON_LOG"
}

@test ".ready: strict by default (every model READY), non-strict once the first load is over" {
	bad_model bad
	mount_repo "$REPO"
	[[ "$(cat "$MNT/bad/status")" == UNAVAILABLE* ]]
	[ "$(cat "$MNT/.live")" = live ]
	[ "$(py_errno "open('$MNT/.ready').read()")" = EAGAIN ]
	ls -a "$MNT" | grep -qx .ready
	ls -a "$MNT" | grep -qx .live
	# fixed (hot reload): ready
	rm -rf "$REPO/bad"
	wait_until 30 eval "[ \"\$(cat '$MNT/.ready' 2>/dev/null)\" = ready ]"
	unmount_repo
	bad_model bad
	mount_repo "$REPO" --strict-readiness=false
	[[ "$(cat "$MNT/bad/status")" == UNAVAILABLE* ]]
	[ "$(cat "$MNT/.ready")" = ready ]
}

@test ".ready in explicit mode: models not loaded do not count" {
	cp -r "$REPO/add_sub" "$REPO/other"
	sed -i 's/name: "add_sub"/name: "other"/' "$REPO/other/config.pbtxt"
	mount_repo "$REPO" --model-control=explicit --load-model=add_sub
	[ "$(index_state other)" = "UNAVAILABLE|not loaded" ]
	[ "$(cat "$MNT/.ready")" = ready ]
}

@test "--exit-on-error=true: a model that fails is a failed start with the reason on stderr, foreground or daemon" {
	bad_model bad
	mkdir "$T/mnt"
	run timeout 120 "$MODELFS" -f --exit-on-error=true "$REPO" "$T/mnt" 3>&-
	[ "$status" -eq 1 ]
	[[ "$output" == *"modelfs: model 'bad' version 1: "*"model.onnx"* ]]
	[[ "$output" == *"failed to load; stopping (--exit-on-error=true)"* ]]
	! mountpoint -q "$T/mnt"
	# daemonized: the parent says so too, and returns non-zero
	run timeout 120 "$MODELFS" --exit-on-error=true "$REPO" "$T/mnt" 3>&-
	[ "$status" -eq 1 ]
	[[ "$output" == *"modelfs: model 'bad' version 1: "*"model.onnx"* ]]
	! mountpoint -q "$T/mnt"
	# the default (false): the mount serves what loaded
	run timeout 120 "$MODELFS" --log-file="$T/d.log" "$REPO" "$T/mnt" 3>&-
	[ "$status" -eq 0 ]
	mountpoint -q "$T/mnt"
	MNT="$T/mnt"
	wait_until 60 grep -q '^UNAVAILABLE' "$MNT/bad/status"
	add_sub_answers
	fusermount3 -u "$T/mnt"
	MNT=
	wait_until 30 eval "! grep -q ' $T/mnt ' /proc/self/mounts"
	# with every model good, --exit-on-error=true starts (the parent returns once loaded)
	rm -rf "$REPO/bad"
	run timeout 120 "$MODELFS" --exit-on-error=true --log-file="$T/d.log" "$REPO" "$T/mnt" 3>&-
	[ "$status" -eq 0 ]
	[[ "$(cat "$T/mnt/add_sub/status")" == "READY 1"* ]]
	fusermount3 -u "$T/mnt"
}

@test "bad start options and files are one line on stderr, daemonized or not" {
	mkdir "$T/mnt"
	run "$MODELFS" --exit-on-error=maybe "$REPO" "$T/mnt"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--exit-on-error: expected true or false, got 'maybe'"* ]]
	run "$MODELFS" --model-load-thread-count=0 "$REPO" "$T/mnt"
	[ "$status" -eq 2 ]
	run "$MODELFS" --log-format=json "$REPO" "$T/mnt"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--log-format: expected default or ISO8601"* ]]
	run "$MODELFS" --log-file=/nonexistent/dir/log "$REPO" "$T/mnt" 3>&-
	[ "$status" -eq 1 ]
	[[ "$output" == *"--log-file '/nonexistent/dir/log': No such file or directory"* ]]
	! mountpoint -q "$T/mnt"
}

@test "logs: date and zone, --log-format=ISO8601 and --log-file; the process is named modelfs" {
	mount_repo "$REPO"
	# default: local date, time, zone
	grep -qE "^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3} [+-][0-9]{4} modelfs info: model 'add_sub' version 1: READY" "$DAEMON_LOG"
	[ "$(cat "/proc/$DAEMON_PID/comm")" = modelfs ]
	pgrep -x modelfs | grep -qx "$DAEMON_PID"
	unmount_repo
	mount_repo "$REPO" --log-format=ISO8601 --log-file="$T/log"
	grep -qE "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z I modelfs\[$DAEMON_PID\] model 'add_sub' version 1: READY" "$T/log"
	# the file, not stderr
	! grep -q "READY" "$DAEMON_LOG"
}

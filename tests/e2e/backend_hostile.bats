#!/usr/bin/env bats
# A hostile custom backend (issue 32; docs/BACKENDS.md "Isolation",
# docs/SECURITY.md "Custom backends"): whatever tests/backends/fault.c
# does in its worker -- shrink the shared memory under the daemon, leave a
# child holding the socket, hang in init or execute, write broken
# messages, die at any step -- fails its own load or request, and nothing
# else: the daemon stays up, other models load and serve, SIGTERM stops
# the daemon in bounded time, and no worker outlives the daemon.  Each
# test mounts its own repository (the limits are daemon options).

load helpers

BACKENDS="$TOP/build/tests/backends"

setup() {
	T="$BATS_TEST_TMPDIR"
	REPO="$T/repo"
	MARKS="$T/marks"
	mkdir -p "$REPO" "$MARKS"
	hostile_model fault
}

teardown() {
	unmount_repo
}

# hostile_model NAME [PARAMETER...]: a model NAME (X -> Y, FP32 [-1])
# served by libmodelfs_fault.so, with the config parameters named (each
# set to "1", fail_init's value is its reason) and mark_dir, where the
# backend leaves a file before it hangs.
hostile_model() {
	local name=$1 p
	shift
	mkdir -p "$REPO/$name/1"
	{
		printf 'backend: "fault"\n'
		printf 'input [ { name: "X" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
		printf 'output [ { name: "Y" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
		printf 'parameters { key: "mark_dir" value { string_value: "%s" } }\n' "$MARKS"
		for p in "$@"; do
			printf 'parameters { key: "%s" value { string_value: "1" } }\n' "$p"
		done
	} > "$REPO/$name/config.pbtxt"
	cp "$BACKENDS/libmodelfs_fault.so" "$REPO/$name/1/"
}

# The daemon's worker processes, one pid a line.
workers() { pgrep -P "$DAEMON_PID" -f -- --backend-worker; }

# A backend hangs (in init or execute) in a worker whose pid is printed.
hanging() { ls "$MARKS" | grep -q '^hanging\.'; }
hanging_pid() { ls "$MARKS" | sed -n 's/^hanging\.//p' | head -1; }

# read_within SECONDS FILE: prints FILE's text, or the errno name its
# read failed with; nothing when it took longer than SECONDS.
read_within() {
	timeout "$1" "$PY" - "$2" <<'PYEOF'
import errno, sys
try:
    print(open(sys.argv[1]).read().strip())
except OSError as e:
    print(errno.errorcode[e.errno])
PYEOF
}

# Run X = "$2" on model $1; prints Y, or the errno name the read failed with.
infer_fault() {
	local req
	req=$(new_request "$1") || return 1
	echo "$2" > "$req/X.txt"
	read_within 60 "$req/Y.txt"
}

# A request whose execute hangs, read in the background (BG: the reader);
# WORKER: the worker's pid once it hangs.
start_hanging_run() {
	local req
	req=$(new_request fault)
	echo "-6 1" > "$req/X.txt"
	timeout 60 cat "$req/Y.txt" > /dev/null 2>&1 &
	BG=$!
	wait_until 10 hanging
	WORKER=$(hanging_pid)
}

# SIGTERM ends the daemon within $1 seconds, cleanly, and the hanging
# WORKER with it; BG (a reader or a loader) is collected.
sigterm_stops_all() {
	kill -TERM "$DAEMON_PID"
	daemon_gone_within "$1"
	! kill -0 "$WORKER" 2>/dev/null
	wait "$BG" || true
	daemon_finished_cleanly
	DAEMON_PID=
}

# The daemon exits (by itself, after a signal) within $1 seconds.
daemon_gone_within() {
	gone() { ! kill -0 "$DAEMON_PID" 2>/dev/null; }
	wait_until "$1" gone
}

@test "case 1-2: the shared memory is private, and shrinking it under the daemon fails one request" {
	mount_repo "$REPO"
	[ "$(infer_fault fault '1 2')" = "2 4" ]
	# The daemon's memfd: mode 0600, not the 0777 memfd_create gives.
	local fd found=
	for fd in /proc/$DAEMON_PID/fd/*; do
		if [[ "$(readlink "$fd")" == "/memfd:modelfs-backend"* ]]; then
			[ "$(stat -L -c %a "$fd")" = 600 ]
			found=1
		fi
	done
	[ -n "$found" ]
	# 16 MB answers, the file truncated while the daemon reads each one.
	"$PY" -c "
import numpy as np
x = np.ones(1 << 22, np.float32); x[0] = -8
np.save('$T/x.npy', x)"
	local i req out
	for i in 1 2 3 4 5 6 7 8; do
		req=$(new_request fault)
		cp "$T/x.npy" "$req/X.npy"
		out=$(py_errno "open('$req/Y.npy', 'rb').read()")
		[[ "$out" == OK || "$out" == EIO ]]
		kill -0 "$DAEMON_PID"
		rm -r "$req"
	done
	[ "$(infer_fault fault '3 4')" = "6 8" ]
}

@test "case 3: a backend that leaves a child holding the socket and crashes fails its request at once" {
	mount_repo "$REPO"
	[ "$(infer_fault fault 1)" = 2 ]
	local req t0
	req=$(new_request fault)
	echo "-7 1" > "$req/X.txt"
	t0=$SECONDS
	# The child sleeps 60 s: the crash must not wait for it.
	[ "$(read_within 20 "$req/Y.txt")" = EIO ]
	[ $((SECONDS - t0)) -lt 15 ]
	[[ "$(cat "$req/error")" == *"backend 'fault': the worker crashed (killed by signal 6 (Aborted))"* ]]
	# The worker's process group went with it: the sleep too.
	local pid
	pid=$(sed -n "s/.*backend 'fault': worker \([0-9]*\) crashed.*/\1/p" "$DAEMON_LOG" | tail -1)
	[ -n "$pid" ]
	group_empty() { ! pgrep -g "$pid" > /dev/null; }
	wait_until 5 group_empty
	[ "$(infer_fault fault 5)" = 10 ]
}

@test "case 4: a backend whose init never returns fails that load, and blocks no other load" {
	hostile_model hang hang_init
	mount_repo "$REPO" --model-control=explicit --backend-init-timeout=2
	local t0=$SECONDS
	run timeout 30 sh -c "echo load > '$MNT/hang/control'"
	[ "$status" -ne 0 ] && [ "$status" -ne 124 ]
	[ $((SECONDS - t0)) -lt 20 ]
	[[ "$(cat "$MNT/hang/status")" == *"model 'hang' version 1: backend 'fault': init did not return within 2 s (--backend-init-timeout)"* ]]
	# Its worker was killed; the next load works.
	[ -z "$(workers)" ]
	echo load > "$MNT/fault/control"
	[ "$(infer_fault fault '1 2')" = "2 4" ]
	# A load of another model while one hangs waits at most the limit.
	timeout 30 sh -c "echo load > '$MNT/hang/control'" 2>/dev/null &
	local loader=$!
	wait_until 10 hanging
	printf unload > "$MNT/fault/control"
	timeout 30 sh -c "echo load > '$MNT/fault/control'"
	[ "$(infer_fault fault 3)" = 6 ]
	wait "$loader" || true
}

@test "case 4: SIGTERM stops the daemon while a backend's init hangs" {
	hostile_model hang hang_init
	mount_repo "$REPO" --model-control=explicit --backend-init-timeout=600
	timeout 60 sh -c "echo load > '$MNT/hang/control'" 2>/dev/null &
	BG=$!
	wait_until 10 hanging
	WORKER=$(hanging_pid)
	sigterm_stops_all 20
}

@test "case 4: a backend whose execute never returns fails its request with ETIMEDOUT; a new worker serves the next" {
	mount_repo "$REPO" --backend-exec-timeout=2
	[ "$(infer_fault fault 1)" = 2 ]
	local req t0=$SECONDS
	req=$(new_request fault)
	echo "-6 1" > "$req/X.txt"
	[ "$(read_within 30 "$req/Y.txt")" = ETIMEDOUT ]
	[ $((SECONDS - t0)) -lt 20 ]
	[[ "$(cat "$req/error")" == *"backend 'fault': execute did not return within 2 s (--backend-exec-timeout); the worker was killed"* ]]
	[ "$(infer_fault fault 4)" = 8 ]
}

@test "case 5: SIGTERM stops the daemon while a backend's execute hangs" {
	mount_repo "$REPO" --backend-exec-timeout=600
	start_hanging_run
	# The drain (10 s), and then the worker is killed.
	sigterm_stops_all 25
}

@test "case 5: a SIGKILLed daemon leaves no worker behind" {
	mount_repo "$REPO" --backend-exec-timeout=600
	start_hanging_run
	kill -KILL "$DAEMON_PID"
	wait "$DAEMON_PID" 2>/dev/null || true
	DAEMON_PID=
	worker_gone() { ! kill -0 "$WORKER" 2>/dev/null; }
	wait_until 10 worker_gone
	wait "$BG" || true
	fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -uz "$MNT"
}

@test "the worker protocol against a hostile backend: every fault fails its own request, the next is served" {
	hostile_model crashinit crash_init
	hostile_model hangfin hang_finalize
	mount_repo "$REPO" --model-control=explicit --load-model=fault --load-model=hangfin \
		--backend-exec-timeout=2 --backend-init-timeout=5
	one_worker() { [ "$(workers | wc -l)" -eq 1 ]; }
	local mode want out n=0
	# X[0]:the errno its request fails with.  (Not -5, a segfault: under
	# ASan the worker's report would reach the daemon's log.)
	for mode in -2:EIO -9:EIO -10:EIO -11:EIO -12:EIO -13:EIO -6:ETIMEDOUT -14:OK -8:ANY; do
		want=${mode#*:}
		out=$(infer_fault fault "${mode%%:*} 1")
		case $want in
		OK) [ "$out" = "$((2 * ${mode%%:*})) 2" ] ;;
		ANY) [[ "$out" = "-16 2" || "$out" = EIO ]] ;;
		*) [ "$out" = "$want" ] ;;
		esac || { echo "X[0] = ${mode%%:*}: $out, expected $want"; false; }
		kill -0 "$DAEMON_PID"
		# -14's worker dies just after its answer: let it go first.
		[ "$want" != OK ] || wait_until 10 one_worker
		[ "$(infer_fault fault "$n 1")" = "$((2 * n)) 2" ]
		n=$((n + 1))
	done
	# A stray message never answers the next request.
	grep -q "a message out of turn" "$DAEMON_LOG"
	grep -q "a message of 8 bytes" "$DAEMON_LOG"
	grep -q "died between requests" "$DAEMON_LOG"
	# Death in init: a load error.
	run sh -c "echo load > '$MNT/crashinit/control'"
	[ "$status" -ne 0 ]
	[[ "$(cat "$MNT/crashinit/status")" == *"the worker died while starting: killed by signal 6"* ]]
	# A finalize that never returns holds an unload 2 s at most.
	local t0=$SECONDS
	timeout 20 sh -c "printf unload > '$MNT/hangfin/control'"
	[ $((SECONDS - t0)) -lt 10 ]
	wait_until 10 one_worker
}

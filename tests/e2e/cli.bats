#!/usr/bin/env bats
# The command line (SPEC.md section 1): --help, --version, one clear line
# and a non-zero exit for each reason not to start, daemon mode, signals.

load helpers

teardown() {
	unmount_repo
	[ -z "${DIR:-}" ] || rm -rf "$DIR"
}

@test "--help and --version" {
	run "$MODELFS" --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"usage: modelfs [OPTIONS] REPOSITORY MOUNTPOINT"* ]]
	for opt in -f --device --opencl-device --poll-secs --reload-quiet-ms --threads \
		--max-request-bytes --request-ttl-secs --log-level -o; do
		[[ "$output" == *"$opt"* ]]
	done
	run "$MODELFS" --version
	[ "$status" -eq 0 ]
	[[ "$output" == "modelfs "* ]]
}

@test "a bad option is one clear line and exit 2" {
	run "$MODELFS" --frobnicate "$EXAMPLES" /tmp
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"unknown option '--frobnicate'"* ]]
	run "$MODELFS" --threads=lots "$EXAMPLES" /tmp
	[ "$status" -eq 2 ]
	[[ "$output" == *"--threads"* ]]
	run "$MODELFS" "$EXAMPLES"
	[ "$status" -eq 2 ]
	[[ "$output" == *"MOUNTPOINT"* ]]
}

@test "a missing repository is one clear line and a non-zero exit" {
	DIR=$(mktemp -d)
	run "$MODELFS" -f /nonexistent/repo "$DIR"
	[ "$status" -ne 0 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"repository '/nonexistent/repo': No such file or directory"* ]]
	run "$MODELFS" -f "$EXAMPLES" "$DIR/nope"
	[ "$status" -ne 0 ]
	[[ "$output" == *"mountpoint"* ]]
}

@test "a busy mountpoint is one clear line and a non-zero exit" {
	mount_repo "$EXAMPLES"
	run "$MODELFS" -f "$EXAMPLES" "$MNT"
	[ "$status" -ne 0 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"is busy"* ]]
	# The first mount is untouched.
	[[ "$(cat "$MNT/add_sub/status")" == "READY 1 cpu"* ]]
}

@test "daemon mode: returns once serving, SIGTERM unmounts and exits" {
	DIR=$(mktemp -d)
	run "$MODELFS" "$EXAMPLES" "$DIR" 3>&-
	[ "$status" -eq 0 ]
	# Serving as soon as the command returned.
	[[ "$(cat "$DIR/add_sub/status")" == "READY 1 cpu"* ]]
	pid=$(pgrep -f "modelfs $EXAMPLES $DIR" | head -1)
	[ -n "$pid" ]
	kill -TERM "$pid"
	for i in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	! kill -0 "$pid" 2>/dev/null
	! mountpoint -q "$DIR"
}

@test "SIGINT stops it cleanly too; fusermount3 -u as well" {
	mount_repo "$EXAMPLES"
	cat "$MNT/.index.json" > /dev/null
	kill -INT "$DAEMON_PID"
	daemon_finished_cleanly
	! mountpoint -q "$MNT"
	grep -q "stopping (SIGINT)" "$DAEMON_LOG"
	rmdir "$MNT"
	MNT=
	mount_repo "$EXAMPLES"
	fusermount3 -u "$MNT"
	daemon_finished_cleanly
	grep -q "stopping (the filesystem was unmounted)" "$DAEMON_LOG"
	rmdir "$MNT"
	MNT=
}

@test "SIGHUP rescans the repository and keeps serving (systemctl reload)" {
	DIR=$(mktemp -d)
	cp -r "$EXAMPLES/add_sub" "$DIR/"
	# Polling once an hour, given as a mount option: only SIGHUP can
	# make it see the new model within the test.
	mount_repo "$DIR" -o poll_secs=3600,reload_quiet_ms=50
	[[ "$(cat "$MNT/add_sub/status")" == "READY 1 cpu"* ]]
	cp -r "$EXAMPLES/add_sub" "$DIR/add_sub2"
	sed -i 's/^name: "add_sub"/name: "add_sub2"/' "$DIR/add_sub2/config.pbtxt"
	sleep 0.3
	[ ! -e "$MNT/add_sub2" ]
	kill -HUP "$DAEMON_PID"
	for i in $(seq 1 100); do
		[[ "$(cat "$MNT/add_sub2/status" 2>/dev/null)" == "READY 1"* ]] && break
		sleep 0.05
	done
	[[ "$(cat "$MNT/add_sub2/status")" == "READY 1"* ]]
	# Still serving the model that did not change, and still mounted.
	[[ "$(cat "$MNT/add_sub/status")" == "READY 1 cpu"* ]]
	kill -0 "$DAEMON_PID"
	grep -q "SIGHUP: looking at every model" "$DAEMON_LOG"
	! grep -q "model 'add_sub': repository change handled.*[1-9] failure" "$DAEMON_LOG"
}

@test "-o passes FUSE mount options" {
	mount_repo "$EXAMPLES" -o allow_other
	grep " $MNT " /proc/self/mounts | grep -q allow_other
	DIR=$(mktemp -d)
	run "$MODELFS" -f -o no_such_fuse_option "$EXAMPLES" "$DIR"
	[ "$status" -ne 0 ]
}

@test "make run's script mounts examples/ at ./mnt and prints three lines" {
	if mountpoint -q "$TOP/mnt" 2>/dev/null; then
		skip "./mnt is in use"
	fi
	# Into a file, not bats' pipe: a process that kept the pipe open
	# (a custom-backend worker spawned before the daemon detached) would
	# make `run` wait forever.
	sh "$TOP/scripts/run-examples.sh" > "$BATS_TEST_TMPDIR/out" 2>&1 3>&-
	mapfile -t lines < "$BATS_TEST_TMPDIR/out"
	[ "${#lines[@]}" -eq 3 ]
	[[ "${lines[2]}" == *"fusermount3 -u mnt"* ]]
	[[ "$(cat "$TOP/mnt/add_sub/status")" == "READY 1 cpu"* ]]
	# The pipeline's custom-backend step found its library.
	wait_until 10 grep -q "^READY 1 ensemble" "$TOP/mnt/pipeline/status"
	# Its worker holds none of the caller's stdio.
	worker=$(pgrep -P "$(pgrep -n -f "modelfs --exit-on-error=true --backend-dir build/examples examples mnt")" -f backend-worker)
	[ -n "$worker" ]
	for fd in 0 1 2; do
		[ "$(readlink "/proc/$worker/fd/$fd")" = /dev/null ]
	done
	fusermount3 -u "$TOP/mnt"
	for i in $(seq 1 100); do
		pgrep -f "modelfs --backend-dir build/examples examples mnt" > /dev/null || break
		sleep 0.05
	done
	! pgrep -f "modelfs --backend-dir build/examples examples mnt"
}

@test "under systemd (NOTIFY_SOCKET): READY=1 once every model is READY, STOPPING=1 on SIGTERM" {
	DIR=$(mktemp -d)
	mkdir "$DIR/mnt"
	# systemd's side: on READY=1, look at the tree at once.
	"$PY" -c '
import os, socket, sys
sock, mnt, out = sys.argv[1:]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sock)
s.settimeout(60)
with open(out, "w") as f:
    for _ in range(2):
        msg = s.recv(4096).decode()
        f.write(msg.replace("\n", " ") + "\n")
        if "READY=1" in msg:
            for m in sorted(os.listdir(mnt)):
                if not m.startswith("."):
                    f.write(m + ": " + open(os.path.join(mnt, m, "status")).read().split()[0] + "\n")
        f.flush()
' "$DIR/notify" "$DIR/mnt" "$DIR/got" 3>&- &
	local listener=$!
	wait_until 5 test -S "$DIR/notify"
	MNT="$DIR/mnt" DAEMON_LOG="$DIR/log"
	NOTIFY_SOCKET="$DIR/notify" "$MODELFS" -f --backend-dir "$EXAMPLE_BACKENDS" "$EXAMPLES" "$MNT" 2>"$DAEMON_LOG" 3>&- &
	DAEMON_PID=$!
	wait_until 30 grep -q "^pipeline_softmax: " "$DIR/got"
	cat "$DIR/got"
	grep -q "^READY=1 STATUS=serving $EXAMPLES on $MNT" "$DIR/got"
	# add_sub, cnn, mlp, the pipeline ensemble with its two steps, running_mean
	[ "$(grep -c ': READY$' "$DIR/got")" -eq 7 ]
	kill -TERM "$DAEMON_PID"
	daemon_finished_cleanly
	wait "$listener"
	tail -1 "$DIR/got" | grep -q "^STOPPING=1"
	MNT=
}

@test "the daemon's OpenMP threads spin a bounded time, unless the user chose a policy" {
	# exec/runtime/openmp_policy.h: the daemon starts again with GOMP_SPINCOUNT set
	unset OMP_WAIT_POLICY GOMP_SPINCOUNT
	mount_repo "$EXAMPLES"
	tr '\0' '\n' < "/proc/$DAEMON_PID/environ" | grep -qx 'GOMP_SPINCOUNT=30000'
	[[ "$(cat "$MNT/mlp/status")" == "READY 1 cpu"* ]]
	unmount_repo
	# a user's OMP_WAIT_POLICY (or GOMP_SPINCOUNT) is kept as it is
	OMP_WAIT_POLICY=PASSIVE mount_repo "$EXAMPLES"
	env=$(tr '\0' '\n' < "/proc/$DAEMON_PID/environ")
	grep -qx 'OMP_WAIT_POLICY=PASSIVE' <<<"$env"
	! grep -q '^GOMP_SPINCOUNT=' <<<"$env"
}

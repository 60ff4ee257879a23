#!/usr/bin/env bats
# Hot reload while mounted (issue #4, SPEC.md section 8, docs/RELOAD.md).
# Every "Done when" line of the issue is a test here, with inotify and
# again with --poll-secs=1.

load helpers

setup() {
	T="$BATS_TEST_TMPDIR"
	REPO="$T/repo"
	add_sub_repo "$REPO"
}

teardown() {
	# The overflow test stops the daemon for a moment: never leave it so.
	[ -z "${DAEMON_PID:-}" ] || kill -CONT "$DAEMON_PID" 2>/dev/null || true
	[ -z "${CLIENTS_PID:-}" ] || { touch "$T/stop"; wait "$CLIENTS_PID" 2>/dev/null || true; }
	[ -z "${HELD_PID:-}" ] || { touch "$T/removed"; kill "$HELD_PID" 2>/dev/null; wait "$HELD_PID" 2>/dev/null || true; }
	unmount_repo
}

status_has() { grep -q -- "$2" "$MNT/$1/status"; }
status_lacks() { ! grep -q -- "$2" "$MNT/$1/status"; }

# One add_sub request through infer; prints model_version.
infer_version() {
	exec 7<>"$MNT/$1/infer"
	printf '{"inputs":[{"name":"INPUT0","shape":[16],"datatype":"FP32","data":[%s]},{"name":"INPUT1","shape":[16],"datatype":"FP32","data":[%s]}]}' \
		"$(seq -s, 1 16)" "$(seq -s, 1 16)" >&7
	local resp
	resp=$(cat <&7)
	exec 7>&-
	"$PY" -c "import json,sys; r=json.loads(sys.argv[1]); print(r.get('model_version', r))" "$resp"
}

version_is() { [ "$(infer_version "$1")" = "$2" ]; }

start_clients() { # MODEL N [--allow-enoent]
	rm -f "$T/stop" "$T/clients.json"
	"$PY" "$TOP/tests/e2e/reload_clients.py" "$MNT" "$1" "$2" "$T/stop" "$T/clients.json" ${3:-} 3>&- &
	CLIENTS_PID=$!
}

stop_clients() {
	touch "$T/stop"
	wait "$CLIENTS_PID"
	CLIENTS_PID=
	cat "$T/clients.json"
	echo
}

clients() { # python expression over s (the summary)
	"$PY" -c "import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if ($1) else 1)" "$T/clients.json"
}

# ---- the checks, each run with inotify and with --poll-secs=1 ----

# The time to READY is printed, not asserted: on a loaded machine a 1 s
# poll took 1031 ms once (a timing assertion does not belong in a test);
# never becoming READY fails.
check_cp_ready() { # OPTIONS...
	mount_repo "$REPO" "$@"
	mkdir "$T/src"
	cp -r "$REPO/add_sub" "$T/src/copy"
	sed -i 's/^name: "add_sub"/name: "copy"/' "$T/src/copy/config.pbtxt"
	local t0 t1 ms
	t0=$(date +%s%N)
	cp -r "$T/src/copy" "$REPO/copy"
	wait_until 10 status_has copy "^READY 1"
	t1=$(date +%s%N)
	ms=$(( (t1 - t0) / 1000000 ))
	echo "# cp -r -> READY in $ms ms ($*)" >&3
	version_is copy 1
}

check_version_switch() {
	mount_repo "$REPO" "$@"
	start_clients add_sub 8
	sleep 1
	cp -r "$REPO/add_sub/1" "$REPO/add_sub/2"
	wait_until 10 status_has add_sub "^READY 2"
	wait_until 5 version_is add_sub 2
	sleep 1
	stop_clients
	clients 's["fail"] == 0 and s["ok"] > 0'
	clients 'set(s["versions"]) <= {"1", "2"} and s["versions"].get("1", 0) > 0 and s["versions"].get("2", 0) > 0'
	# latest{1}: version 1 has left the tree
	wait_until 5 test ! -e "$MNT/add_sub/1"
	version_is add_sub 2
}

check_corrupt_v3() {
	cp -r "$REPO/add_sub/1" "$REPO/add_sub/2"
	mount_repo "$REPO" "$@"
	version_is add_sub 2
	mkdir "$REPO/add_sub/3"
	head -c 1000 /dev/urandom > "$REPO/add_sub/3/model.onnx"
	wait_until 10 status_has add_sub "^READY 2 .*version 3 UNAVAILABLE: .*model.onnx"
	"$PY" -c "import json,sys; e=[x for x in json.load(open(sys.argv[1])) if x['version']=='3'][0]; assert e['state']=='UNAVAILABLE' and e['reason'], e" "$MNT/.index.json"
	version_is add_sub 2
	[ -d "$MNT/add_sub/2" ]
	cp "$REPO/add_sub/1/model.onnx" "$REPO/add_sub/3/model.onnx"
	wait_until 10 status_has add_sub "^READY 3"
	version_is add_sub 3
	wait_until 5 test ! -e "$MNT/add_sub/2"
}

check_bad_config() {
	mount_repo "$REPO" "$@"
	cp "$REPO/add_sub/config.pbtxt" "$T/good.pbtxt"
	echo 'no_such_field: 1' >> "$REPO/add_sub/config.pbtxt"
	wait_until 10 status_has add_sub "no_such_field"
	status_has add_sub "still serving the previous load: config not loaded: "
	"$PY" -c "import json,sys; assert any('no_such_field' in x['reason'] for x in json.load(open(sys.argv[1]))), 'reason'" "$MNT/.index.json"
	version_is add_sub 1
	grep -q '"INPUT0"' "$MNT/add_sub/config.json"
	cp "$T/good.pbtxt" "$REPO/add_sub/config.pbtxt"
	wait_until 10 status_lacks add_sub "no_such_field"
	status_has add_sub "^READY 1"
	version_is add_sub 1
}

check_removal() {
	mount_repo "$REPO" "$@"
	# A request bound to the model before it goes, with one input given.
	# it gets its last input after the model is gone, through a directory
	# descriptor taken before, and still runs.
	local req="$MNT/add_sub/requests/held"
	mkdir "$req"
	seq 1 16 > "$req/INPUT0.txt"
	"$PY" - "$req" "$T/removed" "$T/held.out" 3>&- <<'PY' &
import os, sys, time
d = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.01)
fd = os.open("INPUT1.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=d)
os.write(fd, b" ".join(b"1" for _ in range(16)) + b"\n")
os.close(fd)
fd = os.open("OUTPUT0.txt", os.O_RDONLY, dir_fd=d)
out = os.read(fd, 65536)
os.close(fd)
os.close(d)
open(sys.argv[3], "wb").write(out)
PY
	HELD_PID=$!
	start_clients add_sub 8 --allow-enoent
	sleep 0.5
	mv "$REPO/add_sub" "$T/gone"
	wait_until 10 test ! -e "$MNT/add_sub"
	touch "$T/removed"
	sleep 0.5
	stop_clients
	clients 's["fail"] == 0 and s["ok"] > 0 and s["enoent"] > 0'
	run cat "$MNT/add_sub/status"
	[ "$status" -ne 0 ]
	[[ "$output" == *"No such file"* ]]
	wait "$HELD_PID"
	HELD_PID=
	[ "$(tr -s ' \n' ' ' < "$T/held.out")" = "$(seq -s ' ' 2 17) " ]
}

@test "inotify: cp -r of a model makes it READY" {
	check_cp_ready
}

@test "inotify: 8 clients while version 2 is added: zero failures, results from v1 and v2" {
	check_version_switch
}

@test "inotify: a corrupt version 3 leaves v2 serving with the reason shown; fixing it loads v3" {
	check_corrupt_v3
}

@test "inotify: a config with an unknown field keeps the old config serving, error shown; fixing reloads" {
	check_bad_config
}

@test "inotify: removing the model: new requests get ENOENT, running ones finish" {
	check_removal
}

@test "a config bad from the first load: UNAVAILABLE, 'config not loaded: REASON', no previous one claimed" {
	echo 'no_such_field: 1' >> "$REPO/add_sub/config.pbtxt"
	mount_repo "$REPO"
	wait_until 10 status_has add_sub "no_such_field"
	status_has add_sub "UNAVAILABLE"
	status_has add_sub "config not loaded: "
	status_lacks add_sub "still serving"
	status_lacks add_sub "previous"
	"$PY" -c "import json,sys; v=[x for x in json.load(open(sys.argv[1])) if x['name']=='add_sub']; assert v and v[0]['state']=='UNAVAILABLE' and v[0]['reason'].startswith('config not loaded: '), v" "$MNT/.index.json"
}

@test "--poll-secs=1: cp -r of a model makes it READY on the next poll" {
	check_cp_ready --poll-secs=1
}

@test "--poll-secs=1: 8 clients while version 2 is added: zero failures" {
	check_version_switch --poll-secs=1
}

@test "--poll-secs=1: a corrupt version 3 leaves v2 serving; fixing it loads v3" {
	check_corrupt_v3 --poll-secs=1
}

@test "--poll-secs=1: a config with an unknown field keeps the old one serving; fixing reloads" {
	check_bad_config --poll-secs=1
}

@test "--poll-secs=1: removing the model: new requests get ENOENT, running ones finish" {
	check_removal --poll-secs=1
}

loads_at_least() {
	local n
	n=$(sed -n 's/^nv_model_load_total \([0-9]*\)$/\1/p' "$MNT/.metrics")
	[ -n "$n" ] && [ "$n" -ge "$1" ]
}

rss_kb() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$DAEMON_PID/status"; }

# cycle I: add version 2 (odd) or remove it (even); each loads a version.
reload_cycle() {
	if [ $(($1 % 2)) -eq 1 ]; then
		cp -r "$REPO/add_sub/1" "$REPO/add_sub/.new" && mv "$REPO/add_sub/.new" "$REPO/add_sub/2"
	else
		rm -rf "$REPO/add_sub/2"
	fi
}

@test "100 reload cycles under load: no crash, no failed request, RSS back within 10%" {
	# Under ASan a small quarantine: freed memory is held back, not leaked.
	ASAN_OPTIONS="${ASAN_OPTIONS:-}:quarantine_size_mb=1:thread_local_quarantine_size_kb=64" \
		mount_repo "$REPO" --reload-quiet-ms=20
	start_clients add_sub 8
	local base i rss0 rss1 t0 t1
	base=$(sed -n 's/^nv_model_load_total \([0-9]*\)$/\1/p' "$MNT/.metrics")
	# warm-up: allocator pools and caches reach their working size
	for i in $(seq 1 20); do
		reload_cycle $i
		wait_until 10 loads_at_least $((base + i))
	done
	rss0=$(rss_kb)
	t0=$(date +%s%N)
	for i in $(seq 21 120); do
		reload_cycle $i
		wait_until 10 loads_at_least $((base + i))
	done
	t1=$(date +%s%N)
	stop_clients
	kill -0 "$DAEMON_PID"
	clients 's["fail"] == 0 and s["ok"] > 0 and set(s["versions"]) <= {"1", "2"}'
	rss1=$(rss_kb)
	echo "# 100 cycles in $(( (t1 - t0) / 1000000 )) ms; RSS $rss0 kB -> $rss1 kB" >&3
	grep -q '^nv_model_unload_total [1-9]' "$MNT/.metrics"
	grep -q '^nv_model_load_duration_secs{model="add_sub"' "$MNT/.metrics"
	[ "$rss1" -le $((rss0 + rss0 / 10)) ]
}

@test "a renamed model: the old name goes, the new one is served" {
	sed -i '/^name:/d' "$REPO/add_sub/config.pbtxt"   # the name comes from the directory
	mount_repo "$REPO"
	mv "$REPO/add_sub" "$REPO/renamed"
	wait_until 10 status_has renamed "^READY 1"
	wait_until 5 test ! -e "$MNT/add_sub"
	version_is renamed 1
	[ "$(ls "$MNT")" = renamed ]
}

@test "a model file replaced by rename-into-place reloads its version" {
	mount_repo "$REPO"
	local n
	n=$(sed -n 's/^nv_model_load_total \([0-9]*\)$/\1/p' "$MNT/.metrics")
	cp "$REPO/add_sub/1/model.onnx" "$REPO/add_sub/1/.model.tmp"
	mv "$REPO/add_sub/1/.model.tmp" "$REPO/add_sub/1/model.onnx"
	wait_until 10 loads_at_least $((n + 1))
	grep -q "version 1: unloaded (replaced by a new load) in" "$DAEMON_LOG"
	grep -q "version 1: READY on cpu (loaded in" "$DAEMON_LOG"
	version_is add_sub 1
}

@test "version_policy latest{2}: version directories appear and disappear with the versions" {
	echo 'version_policy { latest { num_versions: 2 } }' >> "$REPO/add_sub/config.pbtxt"
	mount_repo "$REPO"
	cp -r "$REPO/add_sub/1" "$REPO/add_sub/2"
	wait_until 10 test -d "$MNT/add_sub/2"
	[ -d "$MNT/add_sub/1" ]
	version_is add_sub 2
	[ "$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['model_version'])" <(
		exec 7<>"$MNT/add_sub/1/infer"
		printf '{"inputs":[{"name":"INPUT0","shape":[16],"datatype":"FP32","data":[%s]},{"name":"INPUT1","shape":[16],"datatype":"FP32","data":[%s]}]}' \
			"$(seq -s, 1 16)" "$(seq -s, 1 16)" >&7
		cat <&7))" = 1 ]
	rm -rf "$REPO/add_sub/1"
	wait_until 10 test ! -e "$MNT/add_sub/1"
	[ -d "$MNT/add_sub/2" ]
	grep -q '^nv_model_unload_total 1$' "$MNT/.metrics"
	grep -q '^nv_model_load_failure_total 0$' "$MNT/.metrics"
}

# IN_Q_OVERFLOW: the kernel dropped events, so the watcher must rescan the
# whole repository.  The queue length is read when the daemon creates its
# inotify instance: shrink it (system-wide, root only) just for the mount.
@test "inotify: a queue overflow rescans the repository and loses no model" {
	local q=/proc/sys/fs/inotify/max_queued_events old
	[ -w "$q" ] || skip "shrinking $q needs root"
	old=$(cat "$q")
	echo 4 > "$q"
	mount_repo "$REPO" || { echo "$old" > "$q"; false; }
	echo "$old" > "$q"
	mkdir "$T/src"
	cp -r "$REPO/add_sub" "$T/src/copy"
	sed -i 's/^name: "add_sub"/name: "copy"/' "$T/src/copy/config.pbtxt"
	# With the daemon stopped nothing reads the queue: hundreds of events
	# overflow it for sure, and the new model's events (after the flood)
	# are lost, so only the rescan can find it.
	kill -STOP "$DAEMON_PID"
	"$PY" - "$REPO" "$T/src/copy" <<'PY'
import os, sys
repo, src = sys.argv[1], sys.argv[2]
# In a watched directory: events in a new one would not be seen at all.
for i in range(100):
    p = os.path.join(repo, "add_sub", "flood%d" % i)
    open(p, "w").close()
    os.unlink(p)
os.rename(src, os.path.join(repo, "copy"))
PY
	kill -CONT "$DAEMON_PID"
	wait_until 10 grep -q "inotify queue overflowed: rescanning everything" "$DAEMON_LOG"
	wait_until 10 status_has copy "^READY 1"
	version_is copy 1
	version_is add_sub 1
}

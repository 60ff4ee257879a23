#!/usr/bin/env bats
# A fleet (docs/DEPLOY.md, Kubernetes): three daemons mount one shared
# repository with --poll-secs=1, as the DaemonSet's pods do on their
# nodes.  A new version copied in is served by all three within the poll
# period (plus the quiet period and the load), and the requests that run
# meanwhile, on every mount, never fail.

load helpers

setup() {
	T="$BATS_TEST_TMPDIR"
	REPO="$T/repo"
	add_sub_repo "$REPO"
	MNTS=() PIDS=() LOGS=() CLIENTS=()
}

teardown() {
	touch "$T/stop"
	local i rc=0
	for i in "${!CLIENTS[@]}"; do wait "${CLIENTS[$i]}" 2>/dev/null || true; done
	for i in "${!MNTS[@]}"; do
		MNT=${MNTS[$i]} DAEMON_PID=${PIDS[$i]} DAEMON_LOG=${LOGS[$i]}
		unmount_repo || rc=1
	done
	return $rc
}

@test "three daemons on one repository serve a new version within the poll period, no request fails" {
	local i
	for i in 0 1 2; do
		mount_repo "$REPO" --poll-secs=1 --reload-quiet-ms=100 --threads=1
		MNTS+=("$MNT") PIDS+=("$DAEMON_PID") LOGS+=("$DAEMON_LOG")
		grep -q "^READY 1" "$MNT/add_sub/status"
	done
	for i in 0 1 2; do
		"$PY" "$TOP/tests/e2e/reload_clients.py" "${MNTS[$i]}" add_sub 1 "$T/stop" "$T/clients$i.json" 3>&- &
		CLIENTS+=($!)
	done
	sleep 0.5
	# The new version arrives as a deployment would copy it onto the share.
	local t0 t1 ms
	t0=$(date +%s%N)
	cp -r "$REPO/add_sub/1" "$REPO/add_sub/2"
	for i in 0 1 2; do
		MNT=${MNTS[$i]}
		wait_until 10 grep -q "^READY 2" "$MNT/add_sub/status"
	done
	t1=$(date +%s%N)
	ms=$(( (t1 - t0) / 1000000 ))
	echo "# all three READY 2 in $ms ms" >&3
	sleep 0.5
	touch "$T/stop"
	for i in 0 1 2; do wait "${CLIENTS[$i]}"; done
	CLIENTS=()
	for i in 0 1 2; do
		cat "$T/clients$i.json"; echo
		# Requests ran on both versions, and none failed.
		"$PY" -c 'import json,sys; s=json.load(open(sys.argv[1]))
sys.exit(0 if s["fail"] == 0 and s["versions"].get("1", 0) > 0 and s["versions"].get("2", 0) > 0 else 1)' "$T/clients$i.json"
	done
	# The poll period (1 s) plus the quiet period (0.1 s) and the load,
	# with slack for a loaded machine (and ASan).
	[ "$ms" -le 2000 ]
}

#!/usr/bin/env bats
# Nothing a client sends can crash the daemon or damage another request:
# 8 processes of random, colliding operations, then a clean request and a
# clean shutdown (under ASan in the e2e-asan suite: no error, no leak).

load helpers

teardown() {
	unmount_repo
}

@test "random colliding operations from 8 processes; the daemon stays up and correct" {
	mount_repo "$EXAMPLES"
	pids=""
	for s in $(seq 1 8); do
		"$PY" "$TOP/tests/e2e/chaos.py" "$MNT" "$s" 600 > "$BATS_TEST_TMPDIR/chaos$s.out" 2>&1 &
		pids="$pids $!"
	done
	for p in $pids; do
		wait "$p"
	done
	for s in $(seq 1 8); do
		[ "$(cat "$BATS_TEST_TMPDIR/chaos$s.out")" = ok ]
	done
	kill -0 "$DAEMON_PID"
	req=$(new_request add_sub after-chaos)
	seq 16 > "$req/INPUT0.txt"
	seq 16 > "$req/INPUT1.txt"
	[ "$(cat "$req/OUTPUT1.txt")" = "0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0" ]
	rm -r "$req"
}

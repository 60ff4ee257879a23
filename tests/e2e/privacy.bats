#!/usr/bin/env bats
# Requests are private (docs/SECURITY.md): with -o allow_other another
# user can make and use requests of their own, but cannot list, read,
# write or remove anyone else's.  Needs root (setpriv, allow_other).

load helpers

NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"

setup() {
	[ "$(id -u)" = 0 ] || skip "needs root"
	T="$BATS_TEST_TMPDIR"
	MOUNT_PARENT=$(mktemp -d /tmp/mfs-priv.XXXXXX)
	chmod 755 "$MOUNT_PARENT"
}

teardown() {
	unmount_repo
	rmdir "$MOUNT_PARENT" 2>/dev/null || true
}

# as_nobody CMD: run a shell command as uid/gid 65534.
as_nobody() {
	$NOBODY sh -c "$1"
}

check_privacy() {
	# root's request
	mine=$(new_request add_sub roots)
	seq 16 > "$mine/INPUT0.txt"
	[ "$(stat -c %u:%a "$mine")" = 0:700 ]
	[ "$(stat -c %u:%a "$mine/INPUT0.txt")" = 0:600 ]
	# nobody: its own request, its own owner, its own result
	as_nobody "mkdir '$MNT/add_sub/requests/nobodys'"
	theirs="$MNT/add_sub/requests/nobodys"
	[ "$(stat -c %u:%g:%a "$theirs")" = 65534:65534:700 ]
	as_nobody "seq 16 > '$theirs/INPUT0.txt' && seq 16 > '$theirs/INPUT1.txt'"
	[ "$(as_nobody "cat '$theirs/OUTPUT1.txt'")" = "0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0" ]
	[ "$(stat -c %u "$theirs/status")" = 65534 ]
	# root may look at anything
	[ "$(cat "$theirs/status")" = DONE ]
	# nobody may not touch root's request: list, read, write, remove
	run as_nobody "ls '$mine'"
	[ "$status" -ne 0 ]
	run as_nobody "cat '$mine/INPUT0.txt'"
	[ "$status" -ne 0 ]
	run as_nobody "cat '$mine/status'"
	[ "$status" -ne 0 ]
	run as_nobody "seq 16 > '$mine/INPUT1.txt'"
	[ "$status" -ne 0 ]
	run as_nobody "rm -f '$mine/INPUT0.txt'"
	[ "$status" -ne 0 ]
	run as_nobody "rmdir '$mine'"
	[ "$status" -ne 0 ]
	run as_nobody "rm -rf '$mine'"
	[ -d "$mine" ]
	[ "$(cat "$mine/status")" = "WAITING INPUT1" ]
	[ "$(cat "$mine/INPUT0.txt" | wc -l)" = 16 ]
	# infer: each open is the opener's own session
	req='{"inputs":[{"name":"INPUT0","shape":[16],"datatype":"FP32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]},{"name":"INPUT1","shape":[16],"datatype":"FP32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]}'
	out=$(as_nobody "exec 3<>'$MNT/add_sub/infer'; printf '%s' '$req' >&3; cat <&3")
	[[ "$out" == *'"data":[2,2,2'* ]]
	# the owner removes its own
	as_nobody "rm -r '$theirs'"
	[ ! -e "$theirs" ]
	rm -r "$mine"
}

@test "allow_other: another uid uses its own requests and cannot touch root's" {
	mount_repo "$EXAMPLES" -o allow_other
	check_privacy
}

@test "allow_other,default_permissions: the kernel enforces the same through the modes" {
	mount_repo "$EXAMPLES" -o allow_other,default_permissions
	check_privacy
}

@test "one uid cannot take every request directory: --max-requests-per-uid (half by default)" {
	mount_repo "$EXAMPLES" -o allow_other --max-requests=6
	# uid 65534 gets half of --max-requests; root's mkdir still works.
	as_nobody "mkdir $(printf "'$MNT/add_sub/requests/n%d' " 1 2 3)"
	run as_nobody "mkdir '$MNT/add_sub/requests/n4'"
	[ "$status" -ne 0 ]
	[[ "$output" == *"No space left on device"* ]]
	grep -q "model 'add_sub' request 'n4': refused, uid 65534 has 3 of the model's request directories (--max-requests-per-uid)" "$DAEMON_LOG"
	mkdir "$MNT/add_sub/requests/root1"
	# The share is per model, and comes back as requests go.
	as_nobody "mkdir '$MNT/mlp/requests/n1'"
	as_nobody "rmdir '$MNT/add_sub/requests/n1'"
	as_nobody "mkdir '$MNT/add_sub/requests/n4'"
	# root and the daemon's own user are held only to --max-requests.
	mkdir "$MNT/add_sub/requests/root2" "$MNT/add_sub/requests/root3"
	run mkdir "$MNT/add_sub/requests/root4"
	[ "$status" -ne 0 ]
	[[ "$output" == *"No space left on device"* ]]
	rm -r "$MNT"/add_sub/requests/* "$MNT"/mlp/requests/*
	unmount_repo
	# Set explicitly: two each.
	mount_repo "$EXAMPLES" -o allow_other,max_requests_per_uid=2 --max-requests=6
	as_nobody "mkdir '$MNT/add_sub/requests/n1' '$MNT/add_sub/requests/n2'"
	run as_nobody "mkdir '$MNT/add_sub/requests/n3'"
	[ "$status" -ne 0 ]
	as_nobody "rm -r '$MNT/add_sub/requests/n1' '$MNT/add_sub/requests/n2'"
}

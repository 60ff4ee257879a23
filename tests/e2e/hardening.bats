#!/usr/bin/env bats
# Issue 17 (hardening): what a client can make the daemon write, and how
# much memory it can make the daemon hold.  docs/SECURITY.md.

load helpers

teardown() {
	unmount_repo
}

@test "a name with a newline cannot forge a log line or a second error line" {
	mount_repo "$EXAMPLES"
	forged='00:00:00.000 modelfs error: FORGED'
	# Through infer: the name is JSON, "\n" in it is a real newline.
	exec 7<>"$MNT/add_sub/infer"
	printf '{"inputs":[{"name":"x\\n%s","data":[1]}]}' "$forged" >&7
	resp=$(cat <&7)
	exec 7>&-
	[[ "$resp" == *"no input named 'x\\\\n$forged'"* ]]
	# Through a request directory: a file name with a newline and an
	# escape sequence.
	req=$(new_request add_sub inj)
	run py_errno "f = open('$req/a\\n$forged\\x1b[31m.txt', 'w'); f.write('1'); f.close()"
	[ "$output" = ENOENT ]
	grep -q 'no input named .a\\n00:00:00.000 modelfs error: FORGED\\x1b\[31m' "$req/error"
	[ "$(wc -l < "$req/error")" -eq 1 ]
	rm -r "$req"
	# Every line of the log is one the daemon began.
	! grep -q '^00:00:00.000 modelfs error: FORGED' "$DAEMON_LOG"
	grep -q "no input named 'x\\\\n00:00:00.000 modelfs error: FORGED'" "$DAEMON_LOG"
	! grep -q $'\x1b' "$DAEMON_LOG"
}

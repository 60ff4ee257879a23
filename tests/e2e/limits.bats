#!/usr/bin/env bats
# --max-request-bytes (EFBIG) and --request-ttl-secs (expiry).

load helpers

teardown() {
	unmount_repo
}

@test "EFBIG: a request larger than --max-request-bytes" {
	mount_repo "$EXAMPLES" --max-request-bytes=100
	req=$(new_request add_sub big)
	run cp "$EXAMPLES/add_sub/samples/INPUT0.npy" "$req/INPUT0.npy"
	[ "$status" -ne 0 ]
	[[ "$output" == *"File too large"* ]]
	grep -q "max-request-bytes" "$req/error"
	# "1 2 ... 16" is 38 bytes: accepted; 16 x "1.0000" more would pass 100.
	seq 16 > "$req/INPUT0.txt"
	run py_errno "f = open('$req/INPUT1.txt', 'w'); f.write(' '.join(['1.0000'] * 16)); f.close()"
	[ "$output" = EFBIG ]
	run py_errno "fd = os.open('$MNT/add_sub/infer', os.O_RDWR); os.write(fd, b'x' * 200)"
	[ "$output" = EFBIG ]
	rm -r "$req"
}

@test "abandoned request directories expire after --request-ttl-secs" {
	mount_repo "$EXAMPLES" --request-ttl-secs=1
	req=$(new_request add_sub old)
	seq 16 > "$req/INPUT0.txt"
	sleep 3.5
	[ ! -e "$req" ]
	run ls "$MNT/add_sub/requests"
	[ "$output" = "" ]
	grep -q "request 'old': removed after 1 s unused" "$DAEMON_LOG"
}

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

@test "ENOSPC: mkdir past --max-requests; a removed request frees its place" {
	mount_repo "$EXAMPLES" --max-requests=3
	mkdir "$MNT/add_sub/requests/a" "$MNT/add_sub/requests/b" "$MNT/add_sub/1/requests/c"
	# the pinned and the unpinned requests/ count for the same model
	run py_errno "os.mkdir('$MNT/add_sub/requests/d')"
	[ "$output" = ENOSPC ]
	grep -q "model 'add_sub' request 'd': refused.*--max-requests" "$DAEMON_LOG"
	# another model has its own count
	mkdir "$MNT/mlp/requests/x"
	rmdir "$MNT/add_sub/requests/a"
	mkdir "$MNT/add_sub/requests/d"
	rm -r "$MNT/add_sub/requests/"* "$MNT/add_sub/1/requests/"* "$MNT/mlp/requests/x"
}

# Issue 17: 100,000 request directories took 671 s to make (each mkdir
# walked every sibling) and their expiry stalled the mount.  The bound is
# generous (a shared 2-core machine, ASan); quadratic bookkeeping takes
# minutes.
@test "100,000 request directories are made and expire within bounds" {
	mount_repo "$EXAMPLES" --max-requests=100000 --request-ttl-secs=1 --log-level=warn
	start=$(date +%s)
	"$PY" -c "
import os
for i in range(100000):
    os.mkdir('$MNT/add_sub/requests/r%d' % i)
"
	made=$(date +%s)
	# Requests keep working meanwhile (the first ones have expired: a
	# place is free).
	req=$(new_request add_sub live)
	seq 16 > "$req/INPUT0.txt"
	seq 16 > "$req/INPUT1.txt"
	[ "$(cat "$req/OUTPUT1.txt")" = "0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0" ]
	for i in $(seq 1 240); do
		[ -z "$(ls "$MNT/add_sub/requests")" ] && break
		sleep 0.5
	done
	end=$(date +%s)
	echo "made in $((made - start)) s, all expired after $((end - start)) s"
	[ -z "$(ls "$MNT/add_sub/requests")" ]
	[ $((end - start)) -lt 120 ]
}

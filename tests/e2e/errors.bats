#!/usr/bin/env bats
# Every errno of SPEC.md section 10, and each error logged once with the
# model, the request and the reason.

load helpers

use_shared_mount test-repo

@test "ENOENT: unknown model, version, input or output name" {
	run py_errno "os.listdir('$MNT/nomodel')"
	[ "$output" = ENOENT ]
	run py_errno "os.mkdir('$MNT/nomodel/requests/x')"
	[ "$output" = ENOENT ]
	run py_errno "os.listdir('$MNT/add_sub/9')"
	[ "$output" = ENOENT ]
	req=$(new_request add_sub enoent)
	run py_errno "f = open('$req/INPUT9.txt', 'w'); f.write('1'); f.close()"
	[ "$output" = ENOENT ]
	run py_errno "open('$req/OUTPUT9.txt')"
	[ "$output" = ENOENT ]
	run py_errno "open('$req/OUTPUT0.bin')"
	[ "$output" = ENOENT ]
	rm -r "$req"
}

@test "EINVAL: undecodable tensor, wrong datatype, wrong shape" {
	req=$(new_request add_sub einval)
	printf 'not a numpy file' > "$T/junk.npy"
	"$PY" -c "
import numpy as np
np.save('$T/int.npy', np.arange(16, dtype=np.int32))
np.save('$T/shape.npy', np.zeros((4, 4), np.float32))"
	for f in junk int shape; do
		run cp "$T/$f.npy" "$req/INPUT0.npy"
		[ "$status" -ne 0 ]
		[[ "$output" == *"Invalid argument"* ]]
	done
	run py_errno "f = open('$req/INPUT0.json', 'w'); f.write('[1, 2, 3.5e99]'); f.close()"
	[ "$output" = EINVAL ]
	run py_errno "f = open('$req/INPUT0.txt', 'w'); f.write('1 2 x'); f.close()"
	[ "$output" = EINVAL ]
	rm -r "$req"
}

@test "ENODATA: reading an output while inputs are missing; error names them" {
	req=$(new_request add_sub enodata)
	seq 16 > "$req/INPUT1.txt"
	run py_errno "open('$req/OUTPUT1.npy').read()"
	[ "$output" = ENODATA ]
	grep -q "inputs missing: INPUT0" "$req/error"
	rm -r "$req"
}

@test "EIO: the run failed, and error says why" {
	req=$(new_request varlen eio)
	echo 1 2 3 > "$req/a.txt"
	echo 1 2 3 4 > "$req/b.txt"
	run py_errno "open('$req/out.txt').read()"
	[ "$output" = EIO ]
	[[ "$(cat "$req/status")" == FAILED* ]]
	grep -q "broadcast" "$req/error"
	rm -r "$req"
}

@test "EAGAIN: the model has no READY version" {
	[[ "$(cat "$MNT/broken/status")" == UNAVAILABLE* ]]
	run py_errno "os.mkdir('$MNT/broken/requests/x')"
	[ "$output" = EAGAIN ]
	grep -q "broken" "$MNT/.index.json"
}

@test "EAGAIN: the queue is full" {
	slow_input "$T/x.npy"
	for i in 1 2 3 4 5; do
		mkdir "$MNT/slow/requests/q$i"
	done
	# One instance, max_queue_size 2: one runs, two wait, the rest are
	# refused.  One process writes all five, so they arrive within ms.
	codes=$("$PY" -c "
import errno, shutil
out = []
for i in range(1, 6):
    try:
        shutil.copyfile('$T/x.npy', '$MNT/slow/requests/q%d/x.npy' % i); out.append('OK')
    except OSError as e:
        out.append(errno.errorcode[e.errno])
print(' ' + ' '.join(out))")
	echo "codes:$codes"
	[[ "$codes" == " OK OK OK EAGAIN"* ]]
	grep -q "queue full" "$MNT/slow/requests/q4/error"
	for i in 1 2 3; do
		cmp "$MNT/slow/requests/q$i/y.npy" "$T/x.npy"
	done
	rm -r "$MNT"/slow/requests/q*
}

@test "EROFS: writing a read-only file" {
	for f in .index.json .metrics add_sub/config.json add_sub/metadata.json add_sub/status \
		add_sub/stats.json add_sub/1/config.json; do
		run py_errno "open('$MNT/$f', 'a')"
		[ "$output" = EROFS ]
	done
	req=$(new_request add_sub erofs)
	run py_errno "open('$req/trace.json', 'w')"
	[ "$output" = EROFS ]
	# a request holds files only, requests/ directories only
	run py_errno "os.mkdir('$req/sub')"
	[ "$output" = EROFS ]
	run py_errno "open('$MNT/add_sub/requests/file', 'w')"
	[ "$output" = EROFS ]
	rm -r "$req"
}

@test "each error is logged once, naming the model, the request and the reason" {
	req=$(new_request add_sub logged1)
	printf 'garbage' > "$T/g.npy"
	cp "$T/g.npy" "$req/INPUT1.npy" 2>/dev/null || true
	[ "$(grep -c "request 'logged1'" "$DAEMON_LOG")" -eq 1 ]
	grep "request 'logged1'" "$DAEMON_LOG" | grep -q "model 'add_sub'"
	grep "request 'logged1'" "$DAEMON_LOG" | grep -q "INPUT1"
	rm -r "$req"
}

@test "the daemon survives hostile input and serves the next request" {
	req=$(new_request add_sub hostile)
	head -c 100000 /dev/urandom > "$T/rnd"
	for ext in npy json txt raw pb; do
		cp "$T/rnd" "$req/INPUT0.$ext" 2>/dev/null || true
	done
	printf '\x93NUMPY\x01\x00\xff\xff{"descr":' > "$T/h.npy"
	cp "$T/h.npy" "$req/INPUT0.npy" 2>/dev/null || true
	rm -r "$req"
	req=$(new_request add_sub after)
	seq 16 > "$req/INPUT0.txt"
	seq 16 > "$req/INPUT1.txt"
	[ "$(cat "$req/OUTPUT1.txt")" = "0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0" ]
	rm -r "$req"
}

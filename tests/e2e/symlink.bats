#!/usr/bin/env bats
# Inputs handed over by symlink (SPEC.md section 4, docs/SECURITY.md):
# `ln -s FILE "$req/INPUT0.npy"` reads FILE, as the client, into the
# request at once.  The result equals that of the copied file; a client
# never reads through the daemon a file it could not read itself (uid
# 65534 through setpriv, with -o allow_other), nor, root included, through
# a descriptor link (/proc/self/fd/N, /dev/fd/N, /dev/stdin: what the
# daemon has open) or from /proc; a file changed or truncated
# while it is read or while the request runs cannot crash the daemon or
# change the run.

load helpers

NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"

setup_file() {
	REPO=$(make_test_repo) || return 1
	export REPO
	# Somewhere another uid may search, for the mountpoint and its files.
	MOUNT_PARENT=$(mktemp -d /tmp/mfs-link.XXXXXX)
	chmod 755 "$MOUNT_PARENT"
	export MOUNT_PARENT
	# A file the daemon holds open (its descriptor 7) that no client may
	# reach by its path: readable itself, behind a 0700 directory.
	VAULT="$MOUNT_PARENT/vault"
	mkdir -m 700 "$VAULT"
	seq 16 > "$VAULT/secret.txt"
	chmod 644 "$VAULT/secret.txt"
	export VAULT
	local opt=()
	[ "$(id -u)" = 0 ] && opt=(-o allow_other)
	exec 7<"$VAULT/secret.txt"
	mount_repo "$REPO" --max-request-bytes=64M "${opt[@]}" || return 1
	exec 7<&-
	export MNT DAEMON_PID DAEMON_LOG
}

teardown_file() {
	local rc=0
	unmount_repo || rc=$?
	rm -rf "$REPO" "$MOUNT_PARENT"
	return $rc
}

setup() {
	T="$BATS_TEST_TMPDIR"
	SHM=$(mktemp -d /dev/shm/mfs-link.XXXXXX)
	chmod 755 "$SHM"
}

teardown() {
	rm -rf "$SHM"
}

@test "a symlinked /dev/shm input gives the result of the copied one" {
	cp "$EXAMPLES/add_sub/samples/INPUT0.npy" "$EXAMPLES/add_sub/samples/INPUT1.npy" "$SHM/"
	copied=$(new_request add_sub)
	cp "$SHM/INPUT0.npy" "$SHM/INPUT1.npy" "$copied/"
	linked=$(new_request add_sub)
	ln -s "$SHM/INPUT0.npy" "$linked/INPUT0.npy"
	# Until the run consumes it, the input is a symlink to the file.
	[ "$(readlink "$linked/INPUT0.npy")" = "$SHM/INPUT0.npy" ]
	[ -L "$linked/INPUT0.npy" ]
	[ "$(stat -c %F "$linked/INPUT0.npy")" = "symbolic link" ]
	[ "$(cat "$linked/status")" = "WAITING INPUT1" ]
	ln -s "$SHM/INPUT1.npy" "$linked/INPUT1.npy"
	cmp "$copied/OUTPUT0.npy" "$linked/OUTPUT0.npy"
	cmp "$copied/OUTPUT1.npy" "$linked/OUTPUT1.npy"
	cmp "$linked/OUTPUT0.txt" "$EXAMPLES/add_sub/samples/expected/OUTPUT0.txt"
	[ ! -e "$linked/INPUT0.npy" ] && [ ! -L "$linked/INPUT0.npy" ]
	# The format is the link name's: a .txt file read as .txt.
	seq 16 > "$SHM/a.txt"
	ln -s "$SHM/a.txt" "$linked/INPUT0.txt"
	ln -s "$SHM/a.txt" "$linked/INPUT1.txt"
	[ "$(cat "$linked/OUTPUT1.txt")" = "0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0" ]
	# rm of a linked input forgets it (the file stays).
	ln -s "$SHM/a.txt" "$linked/INPUT0.txt"
	rm "$linked/INPUT0.txt"
	[ "$(cat "$linked/status")" = "WAITING INPUT0 INPUT1" ]
	[ -f "$SHM/a.txt" ]
	# A request removed while it holds a linked input frees it (ASan).
	ln -s "$SHM/a.txt" "$linked/INPUT0.txt"
	rm -r "$copied" "$linked"
}

@test "a bad symlink fails ln with the errno of SPEC and the reason in error" {
	req=$(new_request add_sub)
	seq 16 > "$SHM/a.txt"
	mkfifo "$SHM/fifo"
	run py_errno "os.symlink('a.txt', '$req/INPUT0.txt')"
	[ "$output" = EINVAL ]
	grep -q "'INPUT0.txt' -> 'a.txt': the link must be an absolute path" "$req/error"
	run py_errno "os.symlink('$SHM/none.txt', '$req/INPUT0.txt')"
	[ "$output" = ENOENT ]
	grep -q "none.txt': No such file or directory" "$req/error"
	for target in "$SHM" /dev/zero "$SHM/fifo"; do
		run py_errno "os.symlink('$target', '$req/INPUT0.txt')"
		[ "$output" = EINVAL ]
		grep -q "not a regular file" "$req/error"
	done
	run py_errno "os.symlink('$SHM/a.txt', '$req/NOPE.txt')"
	[ "$output" = ENOENT ]
	grep -q "has no input named 'NOPE'" "$req/error"
	run py_errno "os.symlink('$SHM/a.txt', '$req/.hidden')"
	[ "$output" = EPERM ]
	# Names that exist already: the kernel's EEXIST.
	run py_errno "os.symlink('$SHM/a.txt', '$req/OUTPUT0.txt')"
	[ "$output" = EEXIST ]
	run py_errno "os.symlink('$SHM/a.txt', '$req/status')"
	[ "$output" = EEXIST ]
	# Decoded like a written file: 15 numbers for [16] is EINVAL.
	seq 15 > "$SHM/short.txt"
	run py_errno "os.symlink('$SHM/short.txt', '$req/INPUT0.txt')"
	[ "$output" = EINVAL ]
	grep -q "'INPUT0.txt'" "$req/error"
	# Past --max-request-bytes (64M here): EFBIG, nothing read.
	truncate -s 65M "$SHM/big.raw"
	run py_errno "os.symlink('$SHM/big.raw', '$req/INPUT0.raw')"
	[ "$output" = EFBIG ]
	grep -q "more than the request may hold" "$req/error"
	[ "$(cat "$req/status")" = "WAITING INPUT0 INPUT1" ]
	grep -q "request '$(basename "$req")': 'INPUT0.txt' -> 'a.txt'" "$DAEMON_LOG"
	rm -r "$req"
}

@test "another uid cannot read through the daemon a file it cannot read itself" {
	[ "$(id -u)" = 0 ] || skip "needs root (setpriv, allow_other)"
	seq 16 > "$SHM/secret.txt"
	chmod 600 "$SHM/secret.txt"
	mkdir -m 700 "$SHM/private"
	seq 16 > "$SHM/private/open.txt"
	chmod 644 "$SHM/private/open.txt"
	seq 16 > "$SHM/group.txt"
	chgrp 65534 "$SHM/group.txt"
	chmod 640 "$SHM/group.txt"
	$NOBODY mkdir "$MNT/add_sub/requests/nob"
	req="$MNT/add_sub/requests/nob"
	# root's 0600 file: refused with the client's own error.
	run $NOBODY ln -s "$SHM/secret.txt" "$req/INPUT0.txt"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Permission denied"* ]]
	run $NOBODY cat "$req/error"
	[[ "$output" == *"secret.txt': Permission denied (opened as uid 65534)"* ]]
	# A world-readable file in a directory it may not search: refused.
	run $NOBODY ln -s "$SHM/private/open.txt" "$req/INPUT0.txt"
	[ "$status" -ne 0 ]
	# Its group's file and its own file: read.
	$NOBODY ln -s "$SHM/group.txt" "$req/INPUT0.txt"
	mkdir "$SHM/nobodys"
	chown 65534:65534 "$SHM/nobodys"
	$NOBODY sh -c "seq 16 > '$SHM/nobodys/mine.txt'"
	$NOBODY ln -s "$SHM/nobodys/mine.txt" "$req/INPUT1.txt"
	[ "$($NOBODY cat "$req/OUTPUT1.txt")" = "0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0" ]
	# root may read anything it links.
	root=$(new_request add_sub)
	ln -s "$SHM/secret.txt" "$root/INPUT0.txt"
	ln -s "$SHM/private/open.txt" "$root/INPUT1.txt"
	[ "$(cat "$root/OUTPUT1.txt")" = "0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0" ]
	# The daemon is still root for everyone else afterwards.
	[ "$(cat "$MNT/add_sub/status" | cut -d' ' -f1)" = READY ]
	$NOBODY rm -r "$req"
	rm -r "$root"
}

# nobody_refused REASON TARGET...: uid 65534 linking each TARGET as
# $req/INPUT0.txt gets EACCES, and $req/error says REASON.
nobody_refused() {
	local reason=$1 target
	shift
	for target in "$@"; do
		run $NOBODY ln -s "$target" "$req/INPUT0.txt"
		echo "$target: $output"
		[ "$status" -ne 0 ]
		[[ "$output" == *"Permission denied"* ]]
		run $NOBODY cat "$req/error"
		[[ "$output" == *"'INPUT0.txt' -> '$target': $reason"* ]]
	done
}

@test "a link to the daemon's descriptors or into /proc is refused (EACCES), for every user" {
	[ "$(id -u)" = 0 ] || skip "needs root (setpriv, allow_other)"
	[ "$(readlink "/proc/$DAEMON_PID/fd/7")" = "$VAULT/secret.txt" ]
	$NOBODY mkdir "$MNT/add_sub/requests/nofd"
	req="$MNT/add_sub/requests/nofd"
	# A chain of ordinary links that ends in a descriptor link.
	ln -s /proc/self/fd/7 "$SHM/hop2"
	ln -s "$SHM/hop2" "$SHM/hop1"
	nobody_refused "the path goes through a process's descriptor link" \
		/proc/self/fd/7 /dev/fd/7 /proc/thread-self/fd/7 "/proc/$DAEMON_PID/fd/7" \
		"$SHM/hop1" /dev/stdin "/proc/self/root$VAULT/secret.txt" "/proc/self/cwd$VAULT/secret.txt"
	# A number the daemon has not open: the same EACCES, so a client
	# cannot list the daemon's descriptors by trying numbers.
	ln -s /proc/self/fd/999 "$SHM/hop999"
	nobody_refused "the path leads into /proc" \
		/proc/self/fd/999 /dev/fd/999 "/proc/$DAEMON_PID/fd/999" "$SHM/hop999"
	# The daemon's own /proc (any /proc: no tensor lives there).
	nobody_refused "the file is in /proc" \
		/proc/self/status /proc/thread-self/status "/proc/$DAEMON_PID/maps"
	[ "$($NOBODY cat "$req/status")" = "WAITING INPUT0 INPUT1" ]
	grep -q "model 'add_sub' version 1 request 'nofd': 'INPUT0.txt' -> '/proc/self/fd/7': the path goes through" "$DAEMON_LOG"
	# root is refused the same (a link is not how root reads a file).
	root=$(new_request add_sub)
	[ "$(py_errno "os.symlink('/proc/self/fd/7', '$root/INPUT0.txt')")" = EACCES ]
	[ "$(py_errno "os.symlink('/proc/self/status', '$root/INPUT0.txt')")" = EACCES ]
	# The file by its path: refused to uid 65534, read for root.
	run $NOBODY ln -s "$VAULT/secret.txt" "$req/INPUT0.txt"
	[ "$status" -ne 0 ]
	ln -s "$VAULT/secret.txt" "$root/INPUT0.txt"
	$NOBODY rm -r "$req"
	rm -r "$root"
}

@test "a file truncated after the symlink does not change the run" {
	slow_input "$SHM/x.npy"
	cp "$SHM/x.npy" "$T/x.npy"
	busy=$(new_request slow)
	cp "$SHM/x.npy" "$busy/x.npy"     # holds the one instance
	req=$(new_request slow)
	ln -s "$SHM/x.npy" "$req/x.npy"
	: > "$SHM/x.npy"                  # truncated while the request waits or runs
	cmp "$req/y.npy" "$T/x.npy"
	cmp "$busy/y.npy" "$T/x.npy"
	rm -r "$busy" "$req"
}

@test "a file truncated and rewritten while it is being read: no crash, never a wrong result" {
	run "$PY" - "$SHM/x.npy" "$MNT/scale_shift/requests" <<'PYEOF'
import errno, os, sys, threading, time
import numpy as np
path, reqs = sys.argv[1], sys.argv[2]
x = np.arange(8 * 200000, dtype=np.float32).reshape(200000, 8)
np.save(path, x)
data = open(path, 'rb').read()
stop = False
hold = threading.Event()    # set: leave the file whole
held = threading.Event()    # set by churn once it leaves the file whole
def churn():
    # Truncate and rewrite the file over and over while it is linked.
    while not stop:
        if hold.is_set():
            held.set()
            time.sleep(0.001)
            continue
        with open(path, 'r+b') as f:
            f.truncate(len(data) // 3)
            f.seek(0, 2)
            f.write(data[len(data) // 3:])
        time.sleep(0.003)   # whole for a moment: some reads see it so
t = threading.Thread(target=churn)
t.start()
ok = refused = 0
shift = np.zeros(8, dtype=np.float32)
# 40 tries under the churn; then, if no read happened to see the file
# whole (a loaded machine can leave every one in a rewrite), one more
# with the churn held, which must succeed: no race decides the test.
for i in range(41):
    if i == 40:
        if ok > 0:
            break
        hold.set()
        held.wait()
    req = os.path.join(reqs, 'churn%d' % i)
    os.mkdir(req)
    np.save(os.path.join(req, 'shift.npy'), shift)
    try:
        os.symlink(path, os.path.join(req, 'x.npy'))
    except OSError as e:
        assert e.errno in (errno.EINVAL, errno.EIO), e
        refused += 1
        continue
    y = np.load(os.path.join(req, 'y.npy'))
    # Whatever was read decoded as a whole file: the result is exact.
    assert np.array_equal(y, x * 2), i
    ok += 1
stop = True
t.join()
print('ok', ok, 'refused', refused)
assert ok > 0
PYEOF
	echo "$output"
	echo "# $output" >&3
	[ "$status" -eq 0 ]
	[[ "$output" == "ok "* ]]
	[ "$(cat "$MNT/scale_shift/status" | cut -d' ' -f1)" = READY ]
	rm -rf "$MNT"/scale_shift/requests/churn*
}

#!/usr/bin/env bats
# mount(8) and fstab (SPEC.md section 1, docs/DEPLOY.md): `mount -t
# fuse.modelfs` runs mount.fuse3, which runs the type's subtype,
# `modelfs`, as `modelfs SOURCE MOUNTPOINT -o OPTIONS` through /bin/sh;
# the daemon takes its own options out of -o and gives the rest to FUSE;
# umount(8) stops it.
#
# mount(8) drops PATH from the environment, so /bin/sh looks in its
# default PATH (/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:...).
# Each test runs in its own mount namespace in which a folder holding the
# binary under test is bind-mounted over /usr/local/sbin: the system's
# folders are never touched, and the FUSE mount lives in that namespace.

load helpers

setup() {
	T="$BATS_TEST_TMPDIR"
	mkdir "$T/bin" "$T/mnt"
	ln -s "$MODELFS" "$T/bin/modelfs"
}

teardown() {
	# A test that failed half-way: the daemon unmounts on SIGTERM.
	pkill -TERM -f "modelfs .* $T/mnt" 2>/dev/null || true
	daemon_gone
}

# in_ns SCRIPT: run SCRIPT (bash, -e) where `modelfs` is the binary under
# test for mount(8).
in_ns() {
	# ready MOUNT MODEL: the mount is there at once, MODEL loads after.
	unshare -m --propagation private bash -ec \
		'ready() { timeout 120 sh -c "until grep -q ^READY $1/$2/status 2>/dev/null; do sleep 0.05; done"; }
		mount --bind "$0" /usr/local/sbin; T=$1; EXAMPLES=$2; '"$1" \
		"$T/bin" "$T" "$EXAMPLES" 3>&-
}

# mount_in_ns SCRIPT: in_ns SCRIPT (which mounts at $T/mnt), then umount
# there; the last line says it is unmounted.
mount_in_ns() {
	in_ns "$1"'
		umount "$T/mnt"
		if mountpoint -q "$T/mnt"; then exit 1; fi
		echo unmounted'
}

# After `run mount_in_ns`: every step passed and the daemon has exited.
unmounted_cleanly() {
	echo "$output"
	[ "$status" -eq 0 ] && [ "${lines[-1]}" = unmounted ] && daemon_gone
}

# The daemon forked by mount.fuse3 has exited (it is not our child).
daemon_gone() {
	local i
	for i in $(seq 1 200); do
		pgrep -f "modelfs .* $T/mnt" > /dev/null || return 0
		sleep 0.05
	done
	echo "the daemon did not exit" >&2
	return 1
}

@test "mount -t fuse.modelfs with FUSE and daemon options, then umount" {
	run mount_in_ns '
		mount -t fuse.modelfs "$EXAMPLES" "$T/mnt" -o allow_other,poll_secs=5,threads=1,reload_quiet_ms=100
		ready "$T/mnt" add_sub
		cat "$T/mnt/add_sub/status"
		# The kernel s view: our type, and the FUSE option passed through.
		grep " $T/mnt " /proc/self/mounts
		# A request through the mount.
		mkdir "$T/mnt/add_sub/requests/m1"
		cp "$EXAMPLES"/add_sub/samples/INPUT[01].npy "$T/mnt/add_sub/requests/m1/"
		cmp "$T/mnt/add_sub/requests/m1/OUTPUT0.npy" "$EXAMPLES/add_sub/samples/expected/OUTPUT0.npy"'
	unmounted_cleanly
	[[ "${lines[0]}" == "READY 1 cpu"* ]]
	[[ "${lines[1]}" == "$EXAMPLES $T/mnt fuse.modelfs "*allow_other* ]]
}

@test "a bad daemon option through mount is the daemon's one line and a failed mount" {
	run in_ns 'mount -t fuse.modelfs "$EXAMPLES" "$T/mnt" -o threads=0'
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"modelfs: --threads: expected 1-1024, got '0'"* ]]
}

@test "an fstab line: mount MOUNTPOINT, umount MOUNTPOINT" {
	# mount -T reads this file instead of /etc/fstab.
	printf '%s %s fuse.modelfs allow_other,poll_secs=5,nofail,noauto 0 0\n' \
		"$EXAMPLES" "$T/mnt" > "$T/fstab"
	run mount_in_ns '
		mount -T "$T/fstab" "$T/mnt"
		ready "$T/mnt" mlp
		cat "$T/mnt/mlp/status"
		grep " $T/mnt " /proc/self/mounts'
	unmounted_cleanly
	[[ "${lines[0]}" == "READY 1"* ]]
	[[ "${lines[1]}" == *" fuse.modelfs "* ]]
}

@test "a user's fstab line (user): allow_other needs user_allow_other; the user mounts and unmounts" {
	# Run as nobody, from folders nobody can reach; in the namespace
	# /etc/fstab and /etc/fuse.conf are this test's, and /dev/fuse has
	# Debian's mode (crw-rw-rw-, which the kernel gives it; containers may
	# have 0600).
	id nobody > /dev/null || skip "no user nobody"
	U=$(mktemp -d /tmp/modelfs-user.XXXXXX)
	chmod 755 "$U" "$T/bin"
	mkdir "$U/mnt" && chown nobody "$U/mnt"
	cp -r "$EXAMPLES" "$U/repo" && chmod -R a+rX "$U/repo"
	mknod -m 666 "$U/fuse" c 10 229
	cp /etc/fstab "$U/fstab"
	echo "$U/repo $U/mnt fuse.modelfs user,noauto,allow_other,poll_secs=5 0 0" >> "$U/fstab"
	grep -v '^user_allow_other' /etc/fuse.conf > "$U/fuse.conf" || true
	run in_ns '
		U='"$U"'
		mount --bind "$U/fuse" /dev/fuse
		mount --bind "$U/fstab" /etc/fstab
		mount --bind "$U/fuse.conf" /etc/fuse.conf
		if su nobody -s /bin/sh -c "mount $U/mnt"; then exit 1; fi
		echo user_allow_other >> "$U/fuse.conf"
		su nobody -s /bin/sh -c "mount $U/mnt"
		grep " $U/mnt " /proc/self/mounts
		ready "$U/mnt" add_sub
		# root is another user: allow_other lets it in.
		mkdir "$U/mnt/add_sub/requests/u1"
		cp "$EXAMPLES"/add_sub/samples/INPUT[01].npy "$U/mnt/add_sub/requests/u1/"
		cmp "$U/mnt/add_sub/requests/u1/OUTPUT0.npy" "$EXAMPLES/add_sub/samples/expected/OUTPUT0.npy"
		su nobody -s /bin/sh -c "umount $U/mnt"
		if mountpoint -q "$U/mnt"; then exit 1; fi
		echo unmounted'
	echo "$output"
	rm -rf "$U"
	[ "$status" -eq 0 ] && [ "${lines[-1]}" = unmounted ]
	[[ "$output" == *"fusermount3: option allow_other only allowed if 'user_allow_other' is set in /etc/fuse.conf"* ]]
	[[ "$output" == *" fuse.modelfs rw,nosuid,nodev,noexec,"*"user_id=$(id -u nobody),"*allow_other* ]]
	T=$U daemon_gone
}

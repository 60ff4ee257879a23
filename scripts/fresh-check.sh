#!/bin/sh
# `make fresh-check` (not in make test): does modelfs install and run on a
# Debian 12 machine that has nothing?  docs/FRESH.md has the steps, why
# each is there, and the last run.
#
#   scripts/fresh-check.sh [STEP...]     or   FRESH_STEPS="STEP..." make fresh-check
#
# With no step named, every step runs in order (FRESH_FULL=1 adds
# make-test).  Naming steps runs only those, on the roots a previous run
# left in build/fresh/, so that a rerun need not bootstrap again:
#
#   bootstrap         mmdebstrap: build/fresh/base.tar, a minimal Debian 12
#                     (--variant=apt, CA certificates)
#   root              build/fresh/root from base.tar, plus make and git
#   copy-tree         the committed tree (git archive HEAD) into
#                     root:/root/modelfs; only changed files are replaced
#   make-deps-all     make deps all (the README's first run)
#   mount-and-request ./modelfs examples mnt, one request, unmount
#   make-test         make test (only when named or FRESH_FULL=1)
#   make-install      man-db (a user's Debian has it), then make install
#   installed-use     from PATH: man, --help, mount -t fuse.modelfs, an
#                     fstab line and mount MNT, a user's fstab line (user,
#                     user_allow_other), a request each, umount
#   make-uninstall    make uninstall; the file list equals the one
#                     before make install
#   deb               make deb (dpkg-buildpackage -us -uc -b, lintian)
#   debroot           build/fresh/debroot from base.tar (no make deps),
#                     plus man-db and systemd
#   deb-install       the .deb into it, apt-get install ./modelfs_*.deb
#   deb-use           as installed-use, and systemd-analyze verify
#   deb-remove        apt-get remove leaves of modelfs only its conffile and
#                     deb-systemd-helper's record; purge and autoremove
#                     --purge leave the file list as before the install
#
# Each step's output goes to build/fresh/<step>.log; the script prints one
# line per step and exits non-zero at the first that fails.  Needs root,
# network access to the Debian archive, /dev/fuse, ~7 GB of disk.
set -u
cd "$(dirname "$0")/.."
OUT=$PWD/build/fresh
BASE=$OUT/base.tar
ROOT=$OUT/root          # make deps all, make install, make deb
DEBROOT=$OUT/debroot    # only the .deb and what its Depends pull in
ALL_STEPS="bootstrap root copy-tree make-deps-all mount-and-request make-install
installed-use make-uninstall deb debroot deb-install deb-use deb-remove"
[ "${FRESH_FULL:-0}" = 1 ] && ALL_STEPS=$(echo "$ALL_STEPS" | sed 's/mount-and-request/& make-test/')
if [ $# -gt 0 ]; then STEPS=$*; else STEPS=${FRESH_STEPS:-$ALL_STEPS}; fi
for s in $STEPS; do
	case " $(echo $ALL_STEPS) make-test " in
	*" $s "*) ;;
	*) echo "fresh-check: no step '$s'; steps: $(echo $ALL_STEPS) make-test" >&2; exit 2 ;;
	esac
done
mkdir -p "$OUT"
command -v mmdebstrap >/dev/null 2>&1 || {
	echo "fresh-check: installing mmdebstrap"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap > "$OUT/apt.log" 2>&1 || {
		echo "fresh-check: cannot install mmdebstrap (see $OUT/apt.log)"; exit 1; }
}

# /proc, /sys and /dev (with /dev/fuse) bound into a root while it is used.
mounted=""
bind_system() { # root
	case " $mounted " in *" $1/proc "*) return 0 ;; esac
	for m in /proc /sys /dev; do
		mount --rbind "$m" "$1$m" && mount --make-rslave "$1$m" && mounted="$1$m $mounted"
	done
	cp /etc/resolv.conf "$1/etc/resolv.conf"
}
cleanup() {
	for m in $mounted; do umount -l "$m" 2>/dev/null; done
}
trap cleanup EXIT INT TERM

step() { # name command...
	name=$1; shift
	t0=$(date +%s)
	if "$@" > "$OUT/$name.log" 2>&1; then
		echo "fresh-check: $name ok ($(( $(date +%s) - t0 )) s)"
	else
		echo "fresh-check: $name FAILED after $(( $(date +%s) - t0 )) s; last lines of $OUT/$name.log:"
		tail -20 "$OUT/$name.log" | sed 's/^/    | /'
		exit 1
	fi
}

# in_root ROOT SCRIPT: SCRIPT by sh -e in ROOT, in /root/modelfs where it
# exists, with the environment of a root login (nothing of this shell's,
# e.g. make's MAKEFLAGS).
in_root() {
	r=$1; shift
	bind_system "$r"
	chroot "$r" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		/bin/sh -exc "cd /root/modelfs 2>/dev/null || cd /root; $1"
}

# new_root DIR: DIR afresh from base.tar, refusing while anything is
# mounted under it (rm -rf would reach through a bound /dev).
new_root() {
	if grep -q " $1/" /proc/mounts; then
		echo "fresh-check: something is mounted under $1; not removing it" >&2
		return 1
	fi
	rm -rf "$1" && mkdir -p "$1" && tar -x -C "$1" -f "$BASE"
}

APT='DEBIAN_FRONTEND=noninteractive apt-get -y -q'

# The files of a root that installing can change: what is there and its
# checksum, without the kernel's trees, logs, caches, apt's and dpkg's
# own records, the build tree and the test user's home.
PRUNE='\( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path /tmp -o -path /root -o -path /home -o -path /var/log -o -path /var/cache -o -path /var/lib/apt -o -path /var/lib/dpkg \) -prune -o'
LIST_FILES="{ find / -xdev $PRUNE -type f -print0 | xargs -0 -r md5sum |
		sed 's/^\\([0-9a-f]*\\)  \\(.*\\)/\\2 \\1/'
	find / -xdev $PRUNE ! -type f -printf '%p %y\\n'; } | sort"

# The user who mounts from fstab in $USE: made before the first file list.
ADD_USER='id user1 > /dev/null 2>&1 || useradd -m user1'

# What a user does with an installed modelfs, the same for make install
# and the .deb: $DOC is where the examples were installed.
USE='cd /
	command -v modelfs
	modelfs --help | grep -q -- --poll-secs
	man --warnings modelfs > /tmp/man1.txt 2> /tmp/man.err
	grep -q "^NAME" /tmp/man1.txt && grep -q -- "--poll-secs" /tmp/man1.txt
	man --warnings 5 modelfs-repository > /tmp/man5.txt 2>> /tmp/man.err
	grep -q "config.pbtxt" /tmp/man5.txt
	test ! -s /tmp/man.err
	head -n 12 /tmp/man1.txt
	mkdir /mnt/models
	cp -r "$DOC/examples" /srv/models
	request() { # mountpoint name (the mount is there at once; add_sub loads after)
		timeout 120 sh -c "until grep -q ^READY $1/add_sub/status; do sleep 0.1; done"
		mkdir "$1/add_sub/requests/$2"
		seq 16 > "$1/add_sub/requests/$2/INPUT0.txt"
		seq 16 > "$1/add_sub/requests/$2/INPUT1.txt"
		test "$(tr -s " \n" " " < "$1/add_sub/requests/$2/OUTPUT0.txt")" = "2 4 6 8 10 12 14 16 18 20 22 24 26 28 30 32 "
		rm -r "$1/add_sub/requests/$2"
	}
	mount -t fuse.modelfs /srv/models /mnt/models -o allow_other,poll_secs=5
	grep " /mnt/models fuse.modelfs " /proc/self/mounts
	request /mnt/models r1
	umount /mnt/models
	if mountpoint -q /mnt/models; then exit 1; fi
	cp /etc/fstab /tmp/fstab.orig
	echo "/srv/models /mnt/models fuse.modelfs allow_other,poll_secs=5,nofail 0 0" >> /etc/fstab
	mount /mnt/models
	request /mnt/models r2
	umount /mnt/models
	if mountpoint -q /mnt/models; then exit 1; fi
	# A user mounts from an fstab line with the option user; allow_other is
	# refused until /etc/fuse.conf has user_allow_other.  /dev/fuse is
	# crw-rw-rw- on Debian (the kernel makes it so); where this host has it
	# 0600, the root gets a node with that mode bound over its own.
	fuse_bound=0
	if [ "$(stat -c %a /dev/fuse)" != 666 ]; then
		mknod -m 666 /tmp/fuse c 10 229 && mount --bind /tmp/fuse /dev/fuse && fuse_bound=1
	fi
	mkdir /mnt/user1 && chown user1 /mnt/user1
	echo "/srv/models /mnt/user1 fuse.modelfs user,noauto,allow_other,poll_secs=5 0 0" >> /etc/fstab
	cp /etc/fuse.conf /tmp/fuse.conf.orig
	if su user1 -c "mount /mnt/user1" 2> /tmp/user-mount.err; then exit 1; fi
	cat /tmp/user-mount.err
	grep -q "user_allow_other" /tmp/user-mount.err
	echo user_allow_other >> /etc/fuse.conf
	su user1 -c "mount /mnt/user1"
	grep " /mnt/user1 fuse.modelfs .*user_id=$(id -u user1)," /proc/self/mounts
	request /mnt/user1 r3
	su user1 -c "umount /mnt/user1"
	if mountpoint -q /mnt/user1; then exit 1; fi
	if [ $fuse_bound = 1 ]; then umount /dev/fuse && rm /tmp/fuse; fi
	cp /tmp/fuse.conf.orig /etc/fuse.conf
	cp /tmp/fstab.orig /etc/fstab
	rm -r /srv/models && rmdir /mnt/models /mnt/user1'

# The newest stored snapshot of the tree in the root: files that differ
# are replaced (so make rebuilds only what changed).
copy_tree() {
	rm -rf "$OUT/tree" && mkdir -p "$OUT/tree" "$ROOT/root/modelfs" &&
	git archive HEAD | tar -x -C "$OUT/tree" &&
	(cd "$OUT/tree" && find . -type f) | while read -r f; do
		cmp -s "$OUT/tree/$f" "$ROOT/root/modelfs/$f" && continue
		mkdir -p "$(dirname "$ROOT/root/modelfs/$f")" && cp "$OUT/tree/$f" "$ROOT/root/modelfs/$f" || exit 1
	done
}

# The one .deb `make deb` built in the build root, into the other.
copy_deb() {
	debs=$(ls "$ROOT"/root/modelfs/build/deb/modelfs_*_amd64.deb) &&
	[ "$(echo "$debs" | wc -l)" = 1 ] && rm -f "$DEBROOT"/root/modelfs_*.deb &&
	cp "$debs" "$DEBROOT/root/"
}

# compare_lists BEFORE AFTER ALLOWED: the two lists of files differ only in
# the lines matching ALLOWED (an extended regular expression; '^$' for none).
compare_lists() {
	diff "$1" "$2" | grep '^[<>]' | grep -v -E "$3" && return 1
	echo "no other difference between $(basename "$1") and $(basename "$2")"
}

# compare_modelfs_files BEFORE AFTER ALLOWED: compare_lists on the files
# named modelfs (after apt-get remove, the dependencies are still there).
compare_modelfs_files() {
	grep modelfs "$1" > "$OUT/modelfs-files-before" || true
	grep modelfs "$2" > "$OUT/modelfs-files-after" || true
	compare_lists "$OUT/modelfs-files-before" "$OUT/modelfs-files-after" "$3"
}

for s in $STEPS; do
	case $s in
	bootstrap)
		# Into a temporary name: an interrupted run leaves no half base.tar.
		step bootstrap mmdebstrap --variant=apt --include=ca-certificates --format=tar \
			bookworm "$BASE.part" "deb http://deb.debian.org/debian bookworm main" \
			"deb http://deb.debian.org/debian bookworm-updates main" \
			"deb http://deb.debian.org/debian-security bookworm-security main"
		mv "$BASE.part" "$BASE" ;;
	root)
		step root new_root "$ROOT"
		step root-packages in_root "$ROOT" "$APT update && $APT install make git" ;;
	copy-tree) step copy-tree copy_tree ;;
	make-deps-all) step make-deps-all in_root "$ROOT" "make deps all" ;;
	mount-and-request)
		step mount-and-request in_root "$ROOT" 'mkdir -p mnt && ./modelfs examples mnt &&
			mkdir mnt/add_sub/requests/r1 && seq 16 > mnt/add_sub/requests/r1/INPUT0.txt &&
			seq 16 > mnt/add_sub/requests/r1/INPUT1.txt &&
			test "$(tr -s " \n" " " < mnt/add_sub/requests/r1/OUTPUT0.txt)" = "2 4 6 8 10 12 14 16 18 20 22 24 26 28 30 32 " &&
			fusermount3 -u mnt' ;;
	make-test)
		step make-test in_root "$ROOT" "make test"
		grep -E '^[0-9]+ passed, [0-9]+ failed$' "$OUT/make-test.log" ;;
	make-install)
		step make-install in_root "$ROOT" "$APT install man-db
			$ADD_USER
			($LIST_FILES) > /root/files-before-install
			make install" ;;
	installed-use) step installed-use in_root "$ROOT" "DOC=/usr/local/share/doc/modelfs; $USE" ;;
	make-uninstall)
		step make-uninstall in_root "$ROOT" "make uninstall
			($LIST_FILES) > /root/files-after-uninstall
			if command -v modelfs; then exit 1; fi"
		step make-uninstall-clean compare_lists "$ROOT/root/files-before-install" \
			"$ROOT/root/files-after-uninstall" '^$' ;;
	deb) step deb in_root "$ROOT" "make deb" ;;
	debroot)
		step debroot new_root "$DEBROOT"
		step debroot-packages in_root "$DEBROOT" "$APT update && $APT install man-db systemd" ;;
	deb-install)
		step copy-deb copy_deb
		step deb-install in_root "$DEBROOT" "$ADD_USER
			($LIST_FILES) > /root/files-before-deb
			$APT install ./modelfs_*_amd64.deb
			dpkg -L modelfs" ;;
	deb-use)
		# systemd-analyze verify exits 0 on what it only warns about:
		# its output must be empty.
		step deb-use in_root "$DEBROOT" "DOC=/usr/share/doc/modelfs; $USE
			cp /lib/systemd/system/modelfs@.service /tmp/modelfs@models.service
			systemd-analyze verify /lib/systemd/system/modelfs.service \
				/tmp/modelfs@models.service > /tmp/verify.out 2>&1
			cat /tmp/verify.out
			test ! -s /tmp/verify.out
			rm /tmp/modelfs@models.service /tmp/verify.out" ;;
	deb-remove)
		step deb-remove in_root "$DEBROOT" "$APT remove modelfs
			($LIST_FILES) > /root/files-after-remove
			$APT purge modelfs && $APT autoremove --purge
			($LIST_FILES) > /root/files-after-purge"
		# remove keeps the conffile (Debian policy 10.7.3) and
		# deb-systemd-helper's record of the unit until purge.
		step deb-remove-clean compare_modelfs_files "$DEBROOT/root/files-before-deb" \
			"$DEBROOT/root/files-after-remove" \
			'^> (/etc/default/modelfs|/var/lib/systemd/deb-systemd-helper-enabled/modelfs.service.dsh-also) '
		step deb-purge-clean compare_lists "$DEBROOT/root/files-before-deb" \
			"$DEBROOT/root/files-after-purge" '^$' ;;
	esac
done
echo "fresh-check: done ($STEPS)" | tr '\n' ' '; echo

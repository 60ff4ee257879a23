#!/bin/sh
# `make fresh-check` (not in make test): does the README's first run work
# on a machine that has nothing?  Builds a fresh Debian 12 root with
# mmdebstrap (only apt, make and CA certificates beyond the minimal
# system), copies the committed tree (git archive HEAD) into it, and runs
# inside it, as root through chroot:
#   make deps all        (what `make run` does before mounting)
#   a mount of examples/, one request, unmount
#   make test            (only with FRESH_FULL=1: it needs ~15 min more)
# Each step's output goes to build/fresh/<step>.log; the script prints
# one line per step and exits non-zero at the first that fails.  Needs
# root, network access to the Debian archive, and /dev/fuse.
set -u
cd "$(dirname "$0")/.."
OUT=$PWD/build/fresh
ROOT=$OUT/root
mkdir -p "$OUT"
command -v mmdebstrap >/dev/null 2>&1 || {
	echo "fresh-check: installing mmdebstrap"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap > "$OUT/apt.log" 2>&1 || {
		echo "fresh-check: cannot install mmdebstrap (see $OUT/apt.log)"; exit 1; }
}

mounted=""
cleanup() {
	for m in $mounted; do umount -l "$ROOT$m" 2>/dev/null; done
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

in_root() { chroot "$ROOT" /bin/sh -c "cd /root/modelfs && $1"; }

rm -rf "$ROOT"
step bootstrap mmdebstrap --variant=apt --include=make,ca-certificates,git \
	bookworm "$ROOT" "deb http://deb.debian.org/debian bookworm main" \
	"deb http://deb.debian.org/debian bookworm-updates main" \
	"deb http://deb.debian.org/debian-security bookworm-security main"
mkdir -p "$ROOT/root/modelfs"
step copy-tree sh -c "git archive HEAD | tar -x -C '$ROOT/root/modelfs'"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
for m in /proc /sys /dev; do
	mount --rbind "$m" "$ROOT$m" && mounted="$m $mounted"
done
step make-deps-all in_root "make deps all"
step mount-and-request in_root 'mkdir -p mnt && ./modelfs examples mnt &&
	mkdir mnt/add_sub/requests/r1 && seq 16 > mnt/add_sub/requests/r1/INPUT0.txt &&
	seq 16 > mnt/add_sub/requests/r1/INPUT1.txt &&
	test "$(tr -s " \n" " " < mnt/add_sub/requests/r1/OUTPUT0.txt)" = "2 4 6 8 10 12 14 16 18 20 22 24 26 28 30 32 " &&
	fusermount3 -u mnt'
if [ "${FRESH_FULL:-0}" = 1 ]; then
	step make-test in_root "make test"
	grep -E '^[0-9]+ passed, [0-9]+ failed$' "$OUT/make-test.log"
fi
echo "fresh-check: done"

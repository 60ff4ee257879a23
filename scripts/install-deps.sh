#!/bin/sh
# Install the Debian packages modelfs needs, only those missing.  Why each
# is there: README.md, "Dependencies".  `install-deps.sh deb`: also what
# `make deb` needs.
PACKAGES="build-essential pkg-config clang libclang-rt-14-dev \
libfuse3-dev fuse3 libinotifytools0-dev libopenblas-dev libjansson-dev libpcre2-dev \
libdnnl-dev ocl-icd-opencl-dev pocl-opencl-icd clinfo libclblast-dev \
libsystemd-dev libcmocka-dev bats mandoc bsdextrautils prometheus bash-completion systemd python3-yaml libomp-dev procps libonnx-testdata python3-onnx python3-numpy \
python3-torch python3-torchvision gnuplot-nox"
# `make deb` also needs the packaging tools (not needed by make test).
[ "${1:-}" = deb ] && PACKAGES="$PACKAGES dpkg-dev debhelper lintian"

missing=""
for p in $PACKAGES; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

echo "modelfs: installing missing Debian packages:$missing"
SUDO=""
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO="sudo"
	else
		echo "modelfs: cannot install$missing: not root and no sudo; install them with apt-get and run again" >&2
		exit 1
	fi
fi
export DEBIAN_FRONTEND=noninteractive
if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends $missing; } >/tmp/modelfs-apt.log 2>&1; then
	echo "modelfs: apt-get failed installing$missing; see /tmp/modelfs-apt.log" >&2
	tail -5 /tmp/modelfs-apt.log >&2
	exit 1
fi

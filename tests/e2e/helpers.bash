# helpers.bash - mount a repository with the real daemon for one bats file
# or one test, and always unmount.  Used as `load helpers`.
#
#   MODELFS           the binary (default: ./modelfs at the top); the
#                     ASan run sets build/asan/modelfs
#   MODELFS_EXAMPLES  the example repository (default: examples/)
#   EXAMPLE_BACKENDS  where the example custom backend was built (default:
#                     build/examples/, as `make` builds it)
#
# mount_repo REPO [OPTIONS...] sets MNT, DAEMON_PID, DAEMON_LOG; the daemon
# runs with -f in the background.  The mount is there at once and the
# models load after (SPEC.md section 1): mount_repo returns once none is
# LOADING (the first load is over), unless MOUNT_NO_WAIT=1.  The example repository is mounted with
# --backend-dir EXAMPLE_BACKENDS, as `make run` does: its pipeline's first
# step is the example custom backend.  unmount_repo unmounts, waits for the
# daemon and fails when it did not exit 0 or when its log shows a
# sanitizer report (a leak under ASan makes the exit status non-zero).

TOP="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
MODELFS="${MODELFS:-$TOP/modelfs}"
EXAMPLES="${MODELFS_EXAMPLES:-$TOP/examples}"
EXAMPLE_BACKENDS="${EXAMPLE_BACKENDS:-$TOP/build/examples}"
PY=/usr/bin/python3

mount_repo() {
	local repo=$1
	shift
	[ "$repo" != "$EXAMPLES" ] || set -- --backend-dir "$EXAMPLE_BACKENDS" "$@"
	# MOUNT_PARENT: where the mountpoint is made (a test acting as another
	# user needs a parent that user can search).
	MNT=$(mktemp -d "${MOUNT_PARENT:-${BATS_RUN_TMPDIR:-/tmp}}/mnt.XXXXXX")
	DAEMON_LOG="$MNT.log"
	# fd 3 is bats' own output: a daemon holding it would hang bats.
	"$MODELFS" -f "$@" "$repo" "$MNT" 2>"$DAEMON_LOG" 3>&- &
	DAEMON_PID=$!
	local i
	for i in $(seq 1 300); do
		if mountpoint -q "$MNT"; then
			[ "${MOUNT_NO_WAIT:-0}" = 1 ] || wait_loaded 300
			return
		fi
		if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
			echo "modelfs exited before mounting:" >&2
			cat "$DAEMON_LOG" >&2
			return 1
		fi
		sleep 0.05
	done
	echo "modelfs did not mount within 15 s" >&2
	cat "$DAEMON_LOG" >&2
	return 1
}

# wait_loaded SECONDS: until no version in MNT/.index.json is LOADING.
wait_loaded() {
	wait_until "$1" eval '! grep -q "\"state\": \"LOADING\"" "$MNT/.index.json"' ||
		{ cat "$DAEMON_LOG" >&2; return 1; }
}

# Check the daemon's exit and log; $1: expected exit status (default 0).
daemon_finished_cleanly() {
	local want=${1:-0} rc=0 i
	# Bounded: a daemon that does not stop is a failure, not a hang.
	for i in $(seq 1 600); do
		kill -0 "$DAEMON_PID" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$DAEMON_PID" 2>/dev/null; then
		echo "modelfs did not exit within 30 s; its log:" >&2
		tail -30 "$DAEMON_LOG" >&2
		kill -9 "$DAEMON_PID" 2>/dev/null
		return 1
	fi
	wait "$DAEMON_PID" 2>/dev/null || rc=$?
	# LeakSanitizer's own tracer can crash while it stops the threads of an
	# exiting process ("Tracer caught signal 11 ... LeakSanitizer has
	# encountered a fatal error"): seen once in a full ASan run, not
	# reproduced in reruns.  That is the checker failing, not a finding: no
	# leak report, no ASan or UBSan error.  Say so in the test's output and
	# judge the run by the rest of its log.
	if grep -q 'LeakSanitizer has encountered a fatal error' "$DAEMON_LOG" &&
	   grep -q 'Tracer caught signal' "$DAEMON_LOG" &&
	   ! grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$DAEMON_LOG"; then
		echo "# warning: LeakSanitizer's tracer failed at the daemon's exit (no leak check this run)" >&3
		sed -i '/Tracer caught signal\|LeakSanitizer has encountered a fatal error\|HINT: For debugging\|HINT: LeakSanitizer does not work/d' "$DAEMON_LOG"
		[ "$rc" -ne 0 ] && [ "$want" -eq 0 ] && rc=0
	fi
	if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$DAEMON_LOG"; then
		echo "sanitizer report in the daemon's log:" >&2
		cat "$DAEMON_LOG" >&2
		return 1
	fi
	if [ "$rc" -ne "$want" ]; then
		echo "modelfs exited $rc, expected $want; its log:" >&2
		tail -30 "$DAEMON_LOG" >&2
		return 1
	fi
}

unmount_repo() {
	[ -n "${MNT:-}" ] || return 0
	local rc=0
	if mountpoint -q "$MNT" 2>/dev/null || [ -n "$(grep " $MNT " /proc/self/mounts)" ]; then
		fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -uz "$MNT" 2>/dev/null || true
	fi
	if [ -n "${DAEMON_PID:-}" ]; then
		daemon_finished_cleanly || rc=$?
	fi
	rmdir "$MNT" 2>/dev/null || true
	MNT=
	DAEMON_PID=
	return $rc
}

# A fresh request directory on MODEL; prints its path.
new_request() {
	local model=$1 name=${2:-r$RANDOM$RANDOM}
	mkdir "$MNT/$model/requests/$name" && echo "$MNT/$model/requests/$name"
}

# py_errno CODE: run Python statements (one line or several) that
# perform an operation and print the errno name it failed with ("OK" when
# it worked); an AssertionError in CODE prints a traceback instead.
py_errno() {
	"$PY" - "$1" <<'PYEOF'
import errno, os, sys
try:
    exec(sys.argv[1])
    print('OK')
except OSError as e:
    print(errno.errorcode[e.errno])
PYEOF
}

# A repository with examples/add_sub, examples/mlp and the fixtures of
# make_fixtures.py; prints its path.
make_test_repo() {
	local dir
	dir=$(mktemp -d "${BATS_RUN_TMPDIR:-/tmp}/repo.XXXXXX")
	cp -r "$EXAMPLES/add_sub" "$EXAMPLES/mlp" "$dir/"
	"$PY" "$TOP/tests/e2e/make_fixtures.py" "$dir" "$EXAMPLES" || return 1
	echo "$dir"
}

# An input for the slow model (x: [1,256,1024]) at $1.
slow_input() {
	"$PY" -c "import numpy as np; np.save('$1', np.random.default_rng(${2:-1}).random((1, 256, 1024), dtype=np.float32))"
}

# wait_until SECONDS COMMAND...: poll every 20 ms.
wait_until() {
	local limit=$1 i
	shift
	for i in $(seq 1 $((limit * 50))); do
		if "$@" 2>/dev/null; then
			return 0
		fi
		sleep 0.02
	done
	echo "timed out after $limit s waiting for: $*" >&2
	return 1
}

# wait_timed MODEL [SECONDS]: KIND_AUTO's engine trial, which the daemon
# runs after its loads (device_router.h defer_trial), has replaced the
# model's first load: its status no longer says "until timed".
wait_timed() {
	wait_until "${2:-120}" sh -c "grep -q '^READY' '$MNT/$1/status' && ! grep -q 'until timed' '$MNT/$1/status'"
}

# add_sub_repo DIR: a repository of examples/add_sub alone (no samples).
add_sub_repo() {
	mkdir -p "$1"
	cp -r "$EXAMPLES/add_sub" "$1/"
	rm -rf "$1/add_sub/samples"
}

# use_shared_mount examples|test-repo|own [DAEMON OPTIONS...]: every test
# of the bats file uses one mount, made once (setup_file) of examples/,
# of a fresh make_test_repo, or (own) of the repository the file's
# make_shared_repo function builds and names in REPO; REPO is exported,
# unmounted, checked and removed at the end (teardown_file); each test
# gets T, its own temporary directory.  Call it after `load helpers`,
# instead of writing those three functions.
use_shared_mount() {
	SHARED_MOUNT_OF=$1
	shift
	SHARED_MOUNT_ARGS=("$@")
	setup_file() {
		case $SHARED_MOUNT_OF in
		test-repo) REPO=$(make_test_repo) || return 1 ;;
		own) make_shared_repo || return 1 ;;
		esac
		if [ "$SHARED_MOUNT_OF" = examples ]; then
			mount_repo "$EXAMPLES" "${SHARED_MOUNT_ARGS[@]}" || return 1
		else
			export REPO
			mount_repo "$REPO" "${SHARED_MOUNT_ARGS[@]}" || return 1
		fi
		export MNT DAEMON_PID DAEMON_LOG
	}
	teardown_file() {
		local rc=0
		unmount_repo || rc=$?
		[ -z "${REPO:-}" ] || rm -rf "$REPO"
		return $rc
	}
	setup() {
		T="$BATS_TEST_TMPDIR"
	}
}

# index_state MODEL: "STATE|REASON" of MODEL's entry in MNT/.index.json
# (its last version); nothing when the model is not listed.
index_state() {
	"$PY" -c '
import json, sys
for e in json.load(open(sys.argv[1])):
    if e["name"] == sys.argv[2]:
        print(e["state"] + "|" + e["reason"])' "$MNT/.index.json" "$1" | tail -1
}

# add_sub_answers [MODEL]: one request through a request directory of
# MODEL (add_sub or a copy of it) gives add_sub's answer.
add_sub_answers() {
	local req
	req=$(new_request "${1:-add_sub}") || return 1
	seq 16 > "$req/INPUT0.txt" && seq 16 > "$req/INPUT1.txt" &&
		[ "$(cat "$req/OUTPUT0.txt")" = "$(seq -s ' ' 2 2 32)" ]
}

# use_add_sub_repo_per_test: each test gets T, its own temporary
# directory, and REPO, a fresh repository of add_sub alone (add_sub_repo);
# whatever it mounted is unmounted and checked after it.  Call it after
# `load helpers`, instead of writing setup and teardown.
use_add_sub_repo_per_test() {
	setup() {
		T="$BATS_TEST_TMPDIR"
		REPO="$T/repo"
		add_sub_repo "$REPO"
	}
	teardown() {
		unmount_repo
	}
}

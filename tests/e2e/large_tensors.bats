#!/usr/bin/env bats
# Large tensors through files (issue 10): an input of 1 MiB or more is
# handed to the request at the close() that commits it, not copied, and
# outputs of megabytes come back exactly.

load helpers

setup_file() {
	export REPO
	REPO=$(make_test_repo)
}

teardown_file() {
	rm -rf "$REPO"
}

teardown() {
	unmount_repo
}

@test "8 MB inputs written with cp come back exactly as the output (a + b)" {
	mount_repo "$REPO"
	req=$(new_request varlen big)
	"$PY" -c "
import numpy as np
n = 2 * 1000 * 1000
np.save('$BATS_TEST_TMPDIR/a.npy', np.arange(n, dtype=np.float32))
np.save('$BATS_TEST_TMPDIR/b.npy', np.full(n, 0.5, dtype=np.float32))"
	for round in 1 2; do
		cp "$BATS_TEST_TMPDIR/a.npy" "$req/a.npy"
		cp "$BATS_TEST_TMPDIR/b.npy" "$req/b.npy"
		cp "$req/out.npy" "$BATS_TEST_TMPDIR/out.npy"
		"$PY" -c "
import numpy as np
o = np.load('$BATS_TEST_TMPDIR/out.npy')
assert o.shape == (2000000,) and (o == np.arange(2000000, dtype=np.float32) + 0.5).all(), o[:4]"
	done
	rm -r "$req"
}

# A file committed by the close() of a dup stays readable and writable
# through the descriptor still open while the request holds it; once its
# run consumed it the bytes are the run's: ESTALE (open the file again).
@test "a handed-over input: read back through the open file, ESTALE once its run took it" {
	mount_repo "$REPO"
	req=$(new_request varlen hand)
	run py_errno "
import io, numpy as np
def npy(a):
    b = io.BytesIO(); np.save(b, a); return b.getvalue()
a = npy(np.arange(1 << 20, dtype=np.float32))
fd = os.open('$req/a.npy', os.O_RDWR | os.O_CREAT | os.O_TRUNC)
os.write(fd, a)
os.close(os.dup(fd))                       # commits a, handed to the request
assert os.pread(fd, len(a), 0) == a        # read back from the request's bytes
os.pwrite(fd, a[:16], 0)                   # written again: committed again at close
os.close(os.dup(fd))
with open('$req/b.npy', 'wb') as f:        # b completes the request: a goes to the run
    f.write(npy(np.ones(1 << 20, dtype=np.float32)))
assert np.load('$req/out.npy')[3] == 4.0
os.pwrite(fd, a[:16], 0)"
	[ "$output" = ESTALE ]
	grep -q "'a.npy': committed at a close() and consumed by its run since" "$req/error"
	grep -q "model 'varlen' version 1 request 'hand': 'a.npy': committed at a close()" "$DAEMON_LOG"
	rm -r "$req"
}

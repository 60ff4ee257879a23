/* cred_open.h - reading a file a client named, as that client could
 * (docs/SECURITY.md, "Inputs by symlink"): the daemon must never read for
 * a client what the client could not read itself.
 *
 * The daemon as root switches the calling thread's filesystem identity
 * (fsuid, fsgid and supplementary groups; raw syscalls, which the kernel
 * keeps per thread, not glibc's setgroups(), which changes every thread)
 * for the open() alone, so the kernel's own checks (every directory on
 * the path, the file's mode and ACLs, /proc's ptrace rules) decide as
 * they would for the client; the capabilities root has lose their effect
 * while its fsuid is not 0.  A daemon that is not root cannot take
 * another identity: it opens the file as itself and then, on the opened
 * descriptor (no race with a rename of the path), requires that the
 * client is the daemon's own user or owns the file.
 *
 * Whoever the client is (root included), the open follows no magic link
 * (openat2's RESOLVE_NO_MAGICLINKS: /proc/PID/fd/N, /dev/fd/N,
 * /dev/stdin, /proc/PID/cwd and root lead to what the daemon has open,
 * and the kernel checks none of the path that file was opened by) and
 * opens nothing on a proc filesystem (/proc/self and /proc/thread-self
 * are the daemon's own process, whose files any of its threads may read
 * whatever its fsuid; no tensor lives in /proc): both are EACCES.
 *
 * Only regular files are read (a FIFO or a device is refused without
 * blocking), with read() rather than mmap(): a file truncated while it is
 * read is an error, not SIGBUS; what is read is a private copy, so later
 * changes to the file cannot reach a run.
 */
#ifndef MFS_CRED_OPEN_H
#define MFS_CRED_OPEN_H

#include <stddef.h>
#include <sys/types.h>

#include "error.h"

typedef struct mfs_cred {
	uid_t uid;
	gid_t gid;
	const gid_t *groups;     /* supplementary groups; may be NULL */
	int n_groups;
} mfs_cred;

/* Open path read-only (O_NONBLOCK, O_CLOEXEC, O_NOCTTY) with cred's
 * rights, as described above.  Returns the descriptor, or a negative
 * errno with err saying why (the message does not name path):
 *   -EACCES, -ENOENT, ...  open() as the client failed (its errno)
 *   -EACCES                the non-root rule refused the file; the
 *                          path goes through a magic link; the file is
 *                          in /proc
 *   -ENOTSUP               the kernel has no openat2 (before Linux 5.6)
 *   -EPERM                 the identity could not be switched */
int mfs_open_as(const mfs_cred *cred, const char *path, mfs_error *err);

/* mfs_open_as, then read the whole regular file into *buf (malloc'd,
 * NUL after the last byte, *len without it); the errors of mfs_open_as
 * and of mfs_read_fd (file_util.h). */
int mfs_read_file_as(const mfs_cred *cred, const char *path, size_t max_bytes,
		     char **buf, size_t *len, mfs_error *err);

#endif

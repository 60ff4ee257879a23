/* cred_open.c - see cred_open.h. */
#include "cred_open.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "file_util.h"

#define OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)

static int openat2_at_cwd(const char *path, uint64_t flags, uint64_t resolve)
{
	struct open_how how = { .flags = flags, .resolve = resolve };
	return (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
}

/* Whether the folder holding path's last name is on a proc filesystem:
 * a link to /proc/self/fd/999 (a number the daemon has not open) fails
 * with ENOENT before any magic link is met, and telling it apart from
 * EACCES would let a client list the daemon's open descriptors. */
static bool parent_is_proc(const char *path)
{
	char *cur = strdup(path);
	/* Ordinary links first, as the kernel would follow them: a chain
	 * $SHM/hop -> /proc/self/fd/999 ends in /proc. */
	for (int hop = 0; cur && hop < 40; hop++) {
		char target[4096];
		ssize_t n = readlink(cur, target, sizeof(target) - 1);
		if (n < 0)
			break;
		target[n] = '\0';
		char *next = NULL;
		char *slash = strrchr(cur, '/');
		if (target[0] == '/' || !slash)
			next = strdup(target);
		else if (asprintf(&next, "%.*s/%s", (int)(slash - cur), cur, target) < 0)
			next = NULL;
		free(cur);
		cur = next;
	}
	if (!cur)
		return false;
	char *slash = strrchr(cur, '/');
	if (slash == cur)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		strcpy(cur, ".");
	int fd = openat2_at_cwd(cur, O_PATH | O_CLOEXEC, RESOLVE_NO_MAGICLINKS);
	free(cur);
	if (fd < 0)
		return false;
	struct statfs sf;
	bool proc = fstatfs(fd, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC;
	close(fd);
	return proc;
}

/* open(path) under the thread's identity as it stands, except that no
 * magic link is followed and nothing on a proc filesystem is opened (see
 * the header): /proc/PID/fd/N, /dev/fd/N and /dev/stdin lead to what the
 * daemon has open, with no check of the path the file was opened by, and
 * /proc/self is the daemon's own process, whose files the kernel lets any
 * of its threads read whatever the fsuid. */
static int open_target(const char *path, mfs_error *err)
{
	int fd = openat2_at_cwd(path, OPEN_FLAGS, RESOLVE_NO_MAGICLINKS);
	if (fd < 0 && errno == ENOSYS)
		return mfs_fail(err, ENOTSUP, "inputs by symlink need openat2 (Linux 5.6 or later), "
				"which this kernel does not have");
	if (fd < 0 && errno == ELOOP) {
		/* A magic link, or a true loop: an O_PATH open follows magic
		 * links and reads nothing; only a loop fails it with ELOOP. */
		int probe = openat2_at_cwd(path, O_PATH | O_CLOEXEC, 0);
		int probe_errno = errno;
		if (probe >= 0)
			close(probe);
		if (probe >= 0 || probe_errno != ELOOP)
			return mfs_fail(err, EACCES, "the path goes through a process's descriptor link "
					"(/proc/PID/fd/N, /dev/fd/N, /dev/stdin, /proc/PID/cwd or root), which "
					"would be the daemon's: such links are not followed");
		errno = ELOOP;
	}
	if (fd < 0 && errno == ENOENT && parent_is_proc(path))
		return mfs_fail(err, EACCES, "the path leads into /proc (a descriptor number the "
				"daemon has not open, or a process's file): refused, as every /proc path is");
	if (fd < 0)
		return mfs_fail(err, errno, "%s", strerror(errno));
	struct statfs sf;
	if (fstatfs(fd, &sf) < 0 || sf.f_type == PROC_SUPER_MAGIC) {
		close(fd);
		return mfs_fail(err, EACCES, "the file is in /proc (a process's files are no tensors, "
				"and /proc/self would be the daemon's own): refused");
	}
	return fd;
}

/* setfsuid/setfsgid return the previous id whatever happens; asking
 * again (-1 changes nothing) tells whether the change took. */
static int set_fs_ids(uid_t uid, gid_t gid)
{
	syscall(SYS_setfsgid, gid);
	if ((gid_t)syscall(SYS_setfsgid, (gid_t)-1) != gid)
		return -EPERM;
	syscall(SYS_setfsuid, uid);
	if ((uid_t)syscall(SYS_setfsuid, (uid_t)-1) != uid)
		return -EPERM;
	return 0;
}

/* The error says whose identity the open had; returns rc. */
static int said_as(mfs_error *err, int rc, uid_t uid)
{
	if (err) {
		size_t n = strlen(err->msg);
		snprintf(err->msg + n, sizeof(err->msg) - n, " (opened as uid %u)", (unsigned)uid);
	}
	return rc;
}

/* As root: the open under the client's identity, on this thread only. */
static int open_switched(const mfs_cred *cred, const char *path, mfs_error *err)
{
	int n_mine = (int)syscall(SYS_getgroups, 0, NULL);
	gid_t *mine = n_mine >= 0 ? malloc(((size_t)n_mine + 1) * sizeof(gid_t)) : NULL;
	if (!mine || syscall(SYS_getgroups, n_mine, mine) != n_mine) {
		free(mine);
		return mfs_fail(err, EPERM, "cannot read the daemon's groups");
	}
	uid_t old_uid = (uid_t)syscall(SYS_setfsuid, (uid_t)-1);
	gid_t old_gid = (gid_t)syscall(SYS_setfsgid, (gid_t)-1);
	int fd = -1, rc = 0;
	if (syscall(SYS_setgroups, (size_t)(cred->groups ? cred->n_groups : 0), cred->groups) < 0)
		rc = mfs_fail(err, EPERM, "cannot take the client's groups: %s", strerror(errno));
	else if (set_fs_ids(cred->uid, cred->gid) < 0)
		rc = mfs_fail(err, EPERM, "cannot take the client's identity (uid %u)", (unsigned)cred->uid);
	else if ((fd = open_target(path, err)) < 0)
		rc = said_as(err, fd, cred->uid);
	/* Back to the daemon's identity before anything else runs on this
	 * thread: a FUSE worker left as the client must never go on. */
	if (set_fs_ids(old_uid, old_gid) < 0 || syscall(SYS_setgroups, (size_t)n_mine, mine) < 0)
		abort();
	free(mine);
	return fd >= 0 ? fd : rc;
}

/* Not root: open as the daemon, then judge the opened file. */
static int open_checked(const mfs_cred *cred, const char *path, mfs_error *err)
{
	int fd = open_target(path, err);
	if (fd < 0)
		return fd;
	struct stat st;
	if (cred->uid == geteuid())
		return fd;
	if (fstat(fd, &st) < 0 || st.st_uid != cred->uid) {
		close(fd);
		return mfs_fail(err, EACCES, "uid %u does not own the file (a daemon that is not root "
				"reads another user's file only when that user owns it)", (unsigned)cred->uid);
	}
	return fd;
}

int mfs_open_as(const mfs_cred *cred, const char *path, mfs_error *err)
{
	if (geteuid() != 0)
		return open_checked(cred, path, err);
	if (cred->uid == 0)
		return open_target(path, err);
	return open_switched(cred, path, err);
}

int mfs_read_file_as(const mfs_cred *cred, const char *path, size_t max_bytes,
		     char **buf, size_t *len, mfs_error *err)
{
	*buf = NULL;
	*len = 0;
	int fd = mfs_open_as(cred, path, err);
	if (fd < 0)
		return fd;
	int rc = mfs_read_fd(fd, max_bytes, buf, len, err);
	close(fd);
	return rc;
}

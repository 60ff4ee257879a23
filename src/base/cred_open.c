/* cred_open.c - see cred_open.h. */
#include "cred_open.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "file_util.h"

#define OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)

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
	else if ((fd = open(path, OPEN_FLAGS)) < 0)
		rc = mfs_fail(err, errno, "%s (opened as uid %u)", strerror(errno), (unsigned)cred->uid);
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
	int fd = open(path, OPEN_FLAGS);
	if (fd < 0)
		return mfs_fail(err, errno, "%s", strerror(errno));
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
	if (cred->uid == 0) {
		int fd = open(path, OPEN_FLAGS);
		return fd >= 0 ? fd : mfs_fail(err, errno, "%s", strerror(errno));
	}
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

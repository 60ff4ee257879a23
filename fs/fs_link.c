/* fs_link.c - inputs handed over by symlink (SPEC.md section 4, "Inputs
 * by symlink"; docs/SECURITY.md):
 *
 *   ln -s /dev/shm/x.npy "$req/INPUT0.npy"
 *
 * makes the FUSE symlink operation, which commits the input at once: the
 * daemon opens the target with the calling client's identity, through
 * no descriptor link and not in /proc (cred_open.h), reads it once into the request (one copy from the page
 * cache, no FUSE round trips) and decodes it by the link name's
 * extension, exactly as a written file would be at close().  The input is
 * then a symlink in the directory (readlink shows the target) until the
 * run consumes it.  What the file does afterwards (rewritten, truncated,
 * removed) cannot reach the run: the request holds its own copy.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cred_open.h"
#include "file_util.h"
#include "fs_internal.h"
#include "log.h"
#include "membudget.h"

/* The caller's supplementary groups (*groups malloc'd; none when the
 * kernel cannot say, which can only narrow what the open may read). */
static int caller_groups(fuse_req_t freq, gid_t **groups)
{
	int cap = 32;
	for (;;) {
		gid_t *g = malloc((size_t)cap * sizeof(gid_t));
		if (!g)
			return -ENOMEM;
		int n = fuse_req_getgroups(freq, cap, g);
		if (n >= 0 && n <= cap) {
			*groups = g;
			return n;
		}
		free(g);
		if (n < 0) {
			*groups = NULL;
			return 0;
		}
		cap = n;
	}
}

/* Read link's target as the caller: 0 and *buf (malloc'd), or a
 * negative errno with err saying why.  Its size is charged to
 * --max-memory (*charged; the caller gives it back once the request
 * holds the bytes) before they are read, as a write() asks before its
 * buffer grows. */
static int read_target(fuse_req_t freq, mfs_request *req, const char *filename,
		       const char *link, char **buf, size_t *len, uint64_t *charged,
		       mfs_error *err)
{
	*charged = 0;
	if (link[0] != '/')
		return mfs_fail(err, EINVAL, "the link must be an absolute path (the daemon "
				"does not know the directory a relative one starts from)");
	const struct fuse_ctx *ctx = fuse_req_ctx(freq);
	gid_t *groups = NULL;
	int n_groups = caller_groups(freq, &groups);
	if (n_groups < 0)
		return mfs_fail(err, ENOMEM, "out of memory");
	mfs_cred cred = { ctx->uid, ctx->gid, groups, n_groups };
	int fd = mfs_open_as(&cred, link, err);
	free(groups);
	if (fd < 0)
		return fd;
	struct stat st;
	uint64_t room = mfs_request_room(req, filename);
	int rc = 0;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size <= room &&
	    (rc = mfs_membudget_take((uint64_t)st.st_size, err)) == 0)
		*charged = (uint64_t)st.st_size;
	if (rc == 0)
		rc = mfs_read_fd(fd, room, buf, len, err);
	close(fd);
	if (rc == -EFBIG)
		mfs_error_prefix(err, "more than the request may hold (--max-request-bytes): ");
	return rc;
}

void fs_op_symlink(fuse_req_t freq, const char *link, fuse_ino_t parent, const char *name)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	target p;
	mfs_file_info info;
	mfs_error err;
	if (fs_resolve(fs, parent, &p) < 0) {
		fuse_reply_err(freq, ENOENT);
		return;
	}
	int rc = p.kind != N_REQ ? -EROFS : fs_may_use(freq, &p);
	if (rc == 0 && fs_rfile_index(name) >= 0)
		rc = -EROFS;
	if (rc == 0 && mfs_request_find_file(p.req, name, &info) == MFS_FILE_OUTPUT)
		rc = -EACCES;
	if (rc == 0 && name[0] == '.') {
		rc = mfs_fail(&err, EPERM, "'%s': only an input (NAME.EXT) may be a symlink", name);
		mfs_request_note_error(p.req, &err);
	}
	if (rc == 0)
		rc = mfs_request_check_file_name(p.req, name, &err);   /* ENOENT, recorded */
	if (rc == 0) {
		char *buf = NULL;
		size_t len = 0;
		uint64_t charged;
		rc = read_target(freq, p.req, name, link, &buf, &len, &charged, &err);
		if (rc < 0) {
			mfs_error_prefix(&err, "'%s' -> '%s': ", name, link);
			mfs_request_note_error(p.req, &err);
		} else {
			/* Its errors (decoding, a full queue) are the request's. */
			rc = mfs_request_commit_link(p.req, name, link, buf, len, &err);
		}
		mfs_membudget_give(charged);
	}
	if (rc < 0) {
		fuse_reply_err(freq, -rc);
		fs_target_release(&p);
		return;
	}
	/* Committed: the name is a symlink now. */
	target t;
	bool made = fs_request_file_node(fs, parent, &p, name, RF_LINK, &t);
	fs_target_release(&p);
	if (!made) {
		fuse_reply_err(freq, ENOMEM);
		return;
	}
	struct fuse_entry_param e;
	memset(&e, 0, sizeof(e));
	e.ino = t.ino;
	e.generation = 1;
	fs_fill_attr(fs, &t, &e.attr);
	fs_target_release(&t);
	fuse_reply_entry(freq, &e);
}

void fs_op_readlink(fuse_req_t freq, fuse_ino_t ino)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	target t;
	if (fs_resolve(fs, ino, &t) < 0) {
		fuse_reply_err(freq, ENOENT);
		return;
	}
	char *link = NULL;
	int rc = t.kind != N_RFILE || t.sub != RF_LINK ? -EINVAL : fs_may_use(freq, &t);
	if (rc == 0 && !(link = mfs_request_input_link(t.req, t.name)))
		rc = -ENOENT;   /* the run consumed it */
	fs_target_release(&t);
	if (rc < 0)
		fuse_reply_err(freq, -rc);
	else
		fuse_reply_readlink(freq, link);
	free(link);
}

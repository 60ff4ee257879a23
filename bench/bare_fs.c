/* bare_fs.c - the bare baseline of `make bench-fs`: the fastest honest
 * low-level libfuse server of the same file operations a modelfs client
 * makes, with no model behind them.
 *
 * Tree (all in memory):
 *   MOUNT/infer                     write a request, read it back once
 *                                   (echo), then EOF, as modelfs's infer
 *   MOUNT/requests/NAME/            any file may be created, written,
 *                                   truncated, read; OUTPUT0.npy and
 *                                   probabilities.npy always exist and
 *                                   read back the last file written
 * Caching as modelfs may cache: every entry and the attributes of
 * directories for 1 s, direct_io for every file (synthetic contents have
 * no stable size), no FLUSH for a file opened read-only (FOPEN_NOFLUSH),
 * writes up to max_write.  Whatever modelfs costs beyond this server is
 * its own work: decoding, queueing, running, encoding, bookkeeping.
 *
 * usage: bare_fs MOUNTPOINT   (foreground; unmount with umount or SIGTERM)
 */
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { INO_ROOT = 1, INO_INFER, INO_REQUESTS, INO_FIRST_DYN };
#define MAX_NODES 4096

typedef struct node {
	fuse_ino_t parent;
	char name[64];
	int is_dir;
	char *data;
	size_t size, cap;
} node;

static node nodes[MAX_NODES];
static fuse_ino_t n_nodes = INO_FIRST_DYN;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *last;                 /* the last file written, for outputs */
static size_t last_size;

static int is_output(const char *name)
{
	return !strcmp(name, "OUTPUT0.npy") || !strcmp(name, "probabilities.npy");
}

static void fill_attr(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_nlink = nodes[ino].is_dir ? 2 : 1;
	st->st_mode = nodes[ino].is_dir ? S_IFDIR | 0755 : S_IFREG | 0644;
	st->st_size = (off_t)nodes[ino].size;
	st->st_blksize = 1 << 20;
}

static fuse_ino_t find(fuse_ino_t parent, const char *name)
{
	for (fuse_ino_t i = INO_INFER; i < n_nodes; i++)
		if (nodes[i].parent == parent && !strcmp(nodes[i].name, name))
			return i;
	return 0;
}

static fuse_ino_t add(fuse_ino_t parent, const char *name, int is_dir)
{
	if (n_nodes >= MAX_NODES || strlen(name) >= sizeof(nodes[0].name))
		return 0;
	nodes[n_nodes].parent = parent;
	nodes[n_nodes].is_dir = is_dir;
	snprintf(nodes[n_nodes].name, sizeof(nodes[0].name), "%s", name);
	return n_nodes++;
}

static void reply_entry(fuse_req_t req, fuse_ino_t ino)
{
	struct fuse_entry_param e;
	memset(&e, 0, sizeof(e));
	e.ino = ino;
	e.attr_timeout = nodes[ino].is_dir ? 1.0 : 0.0;
	e.entry_timeout = 1.0;
	fill_attr(ino, &e.attr);
	fuse_reply_entry(req, &e);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_ino_t ino;
	pthread_mutex_lock(&lock);
	ino = find(parent, name);
	if (!ino && parent >= INO_FIRST_DYN && nodes[parent].is_dir && is_output(name))
		ino = add(parent, name, 0);
	pthread_mutex_unlock(&lock);
	if (ino)
		reply_entry(req, ino);
	else
		fuse_reply_err(req, ENOENT);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	(void)fi;
	if (ino >= n_nodes) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	pthread_mutex_lock(&lock);
	fill_attr(ino, &st);
	pthread_mutex_unlock(&lock);
	fuse_reply_attr(req, &st, nodes[ino].is_dir ? 1.0 : 0.0);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	pthread_mutex_lock(&lock);
	if (to_set & FUSE_SET_ATTR_SIZE && (size_t)attr->st_size < nodes[ino].size)
		nodes[ino].size = (size_t)attr->st_size;
	pthread_mutex_unlock(&lock);
	op_getattr(req, ino, fi);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	fuse_ino_t ino = 0;
	(void)mode;
	pthread_mutex_lock(&lock);
	if (parent == INO_REQUESTS && !find(parent, name))
		ino = add(parent, name, 1);
	pthread_mutex_unlock(&lock);
	if (ino)
		reply_entry(req, ino);
	else
		fuse_reply_err(req, EEXIST);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	pthread_mutex_lock(&lock);
	fuse_ino_t ino = find(parent, name);
	for (fuse_ino_t i = INO_FIRST_DYN; ino && i < n_nodes; i++)
		if (nodes[i].parent == ino)
			nodes[i].parent = 0;
	if (ino)
		nodes[ino].parent = 0;
	pthread_mutex_unlock(&lock);
	fuse_reply_err(req, ino ? 0 : ENOENT);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	pthread_mutex_lock(&lock);
	if (fi->flags & O_TRUNC)
		nodes[ino].size = 0;
	pthread_mutex_unlock(&lock);
	if (ino == INO_INFER) {
		/* per-open state: has the last answer been read? */
		int *answered = calloc(1, sizeof(*answered));
		if (!answered) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		*answered = 1;
		fi->fh = (uintptr_t)answered;
	}
	fi->direct_io = 1;
	/* As modelfs: only a file opened for writing needs its FLUSH. */
	fi->noflush = (fi->flags & O_ACCMODE) == O_RDONLY;
	fuse_reply_open(req, fi);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct fuse_entry_param e;
	fuse_ino_t ino;
	(void)mode;
	pthread_mutex_lock(&lock);
	ino = find(parent, name);
	if (!ino)
		ino = add(parent, name, 0);
	if (ino)
		nodes[ino].size = 0;
	pthread_mutex_unlock(&lock);
	if (!ino) {
		fuse_reply_err(req, ENOSPC);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = ino;
	e.entry_timeout = 1.0;
	fill_attr(ino, &e.attr);
	fi->direct_io = 1;
	fuse_reply_create(req, &e, fi);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		     off_t off, struct fuse_file_info *fi)
{
	node *n = &nodes[ino];
	pthread_mutex_lock(&lock);
	if (ino == INO_INFER) {
		off = 0;             /* each write is one whole request */
		*(int *)(uintptr_t)fi->fh = 0;   /* its answer is unread */
	}
	if ((size_t)off + size > n->cap) {
		size_t cap = ((size_t)off + size) * 2;
		char *p = realloc(n->data, cap);
		if (!p) {
			pthread_mutex_unlock(&lock);
			fuse_reply_err(req, ENOMEM);
			return;
		}
		n->data = p;
		n->cap = cap;
	}
	memcpy(n->data + off, buf, size);
	if ((size_t)off + size > n->size)
		n->size = (size_t)off + size;
	last = n->data;
	last_size = n->size;
	pthread_mutex_unlock(&lock);
	fuse_reply_write(req, size);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	const char *data;
	size_t len;
	pthread_mutex_lock(&lock);
	if (ino == INO_INFER) {
		/* As modelfs's infer file: the answer to the last write, read
		 * once from its start whatever the fd's offset, then EOF. */
		data = nodes[ino].data;
		int *answered = (int *)(uintptr_t)fi->fh;
		len = *answered ? 0 : nodes[ino].size;
		*answered = 1;
		off = 0;
	} else if (is_output(nodes[ino].name)) {
		data = last;
		len = last_size;
	} else {
		data = nodes[ino].data;
		len = nodes[ino].size;
	}
	if ((size_t)off >= len)
		len = 0;
	else
		len = len - (size_t)off < size ? len - (size_t)off : size;
	/* Replying copies into the kernel; hold the lock until then. */
	fuse_reply_buf(req, len ? data + off : NULL, len);
	pthread_mutex_unlock(&lock);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	char buf[4096];
	size_t used = 0;
	struct stat st;
	(void)fi;
	memset(&st, 0, sizeof(st));
	pthread_mutex_lock(&lock);
	for (fuse_ino_t i = INO_INFER + (fuse_ino_t)off; i < n_nodes; i++) {
		if (nodes[i].parent != ino)
			continue;
		st.st_ino = i;
		st.st_mode = nodes[i].is_dir ? S_IFDIR : S_IFREG;
		size_t need = fuse_add_direntry(req, buf + used, sizeof(buf) - used,
						nodes[i].name, &st, (off_t)(i - INO_INFER + 1));
		if (used + need > size || used + need > sizeof(buf))
			break;
		used += need;
	}
	pthread_mutex_unlock(&lock);
	fuse_reply_buf(req, buf, used);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino == INO_INFER)
		free((void *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static const struct fuse_lowlevel_ops ops = {
	.lookup = op_lookup,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.mkdir = op_mkdir,
	.rmdir = op_rmdir,
	.open = op_open,
	.create = op_create,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.readdir = op_readdir,
};

int main(int argc, char **argv)
{
	char *fargv[] = { argv[0], "-o", "fsname=bare_fs", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	struct fuse_loop_config *cfg;
	struct fuse_session *se;
	int rc = 1;

	if (argc != 2) {
		fprintf(stderr, "usage: bare_fs MOUNTPOINT\n");
		return 2;
	}
	nodes[INO_ROOT].is_dir = 1;
	nodes[INO_INFER].parent = INO_ROOT;
	snprintf(nodes[INO_INFER].name, sizeof(nodes[0].name), "infer");
	nodes[INO_REQUESTS].parent = INO_ROOT;
	nodes[INO_REQUESTS].is_dir = 1;
	snprintf(nodes[INO_REQUESTS].name, sizeof(nodes[0].name), "requests");

	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se || fuse_set_signal_handlers(se) || fuse_session_mount(se, argv[1]))
		return 1;
	cfg = fuse_loop_cfg_create();
	fuse_loop_cfg_set_clone_fd(cfg, 0);
	fuse_loop_cfg_set_max_threads(cfg, 10);
	rc = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	return rc ? 1 : 0;
}

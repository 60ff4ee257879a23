/* fs_ops.c - the fuse_lowlevel_ops table and the inode table.
 *
 * Inode numbers are allocated from a counter and map to nodes through a
 * hash table, so a stale number from the kernel finds nothing instead of
 * freed memory.  Every operation copies what it needs of its node into a
 * target under fs->lock and works without it (lock order: fs->lock, then
 * a request's lock; never the other way).  Nothing here runs a model.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_internal.h"
#include "log.h"
#include "metrics.h"
#include "repo.h"

#define BLKSIZE (1u << 20)
#define STABLE_TIMEOUT 1.0      /* names that only reload changes (issue #4 invalidates) */
#define UNKNOWN_INO 0xffffffffu    /* readdir: the kernel looks entries up anyway */

static const char *const rfile_names[] = { "status", "error", "trace.json" };

/* ---- the inode table (fs->lock held) ---- */

static size_t bucket(const mfs_fs *fs, fuse_ino_t ino)
{
	return (size_t)(ino * 0x9E3779B97F4A7C15ull >> 20) % fs->n_buckets;
}

static node *node_find(mfs_fs *fs, fuse_ino_t ino)
{
	for (node *n = fs->buckets[bucket(fs, ino)]; n; n = n->hnext)
		if (n->ino == ino)
			return n;
	return NULL;
}

static node *node_child(node *parent, const char *name)
{
	for (node *c = parent->children; c; c = c->sibling)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

static void node_free(mfs_fs *fs, node *n)
{
	node **p = &fs->buckets[bucket(fs, n->ino)];
	while (*p && *p != n)
		p = &(*p)->hnext;
	if (*p)
		*p = n->hnext;
	if (n->req)
		mfs_request_put(n->req);
	free(n->name);
	free(n->model);
	free(n);
}

static node *node_add(mfs_fs *fs, node *parent, const char *name, nkind kind,
		      int sub, const char *model, int64_t version,
		      mfs_request *req, int idx, mfs_format fmt)
{
	node *n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->name = strdup(name);
	n->model = model ? strdup(model) : NULL;
	if (!n->name || (model && !n->model)) {
		free(n->name);
		free(n->model);
		free(n);
		return NULL;
	}
	n->ino = parent ? ++fs->next_ino : FUSE_ROOT_ID;
	n->kind = kind;
	n->sub = sub;
	n->version = version;
	if (req) {
		mfs_request_get(req);
		n->req = req;
	}
	n->idx = idx;
	n->fmt = fmt;
	n->parent = parent;
	if (parent) {
		n->sibling = parent->children;
		parent->children = n;
	}
	size_t b = bucket(fs, n->ino);
	n->hnext = fs->buckets[b];
	fs->buckets[b] = n;
	return n;
}

/* The object behind n is gone: it leaves the tree now and memory when the
 * kernel forgets it. */
static void node_kill(mfs_fs *fs, node *n)
{
	if (n->dead)
		return;
	n->dead = true;
	while (n->children)
		node_kill(fs, n->children);
	if (n->parent) {
		node **p = &n->parent->children;
		while (*p && *p != n)
			p = &(*p)->sibling;
		if (*p)
			*p = n->sibling;
		n->parent = NULL;
		n->sibling = NULL;
	}
	if (n->nlookup == 0)
		node_free(fs, n);
}

/* Copy what an operation needs (fs->lock held). */
static void fill_target(const node *n, target *t)
{
	memset(t, 0, sizeof(*t));
	t->ino = n->ino;
	t->kind = n->kind;
	t->sub = n->sub;
	if (n->model)
		snprintf(t->model, sizeof(t->model), "%s", n->model);
	t->version = n->version;
	t->req = n->req;
	if (t->req)
		mfs_request_get(t->req);
	t->idx = n->idx;
	t->fmt = n->fmt;
	snprintf(t->name, sizeof(t->name), "%s", n->name);
}

static void target_release(target *t)
{
	if (t->req)
		mfs_request_put(t->req);
	t->req = NULL;
}

/* Is the model (and the pinned version) still served? */
static int model_alive(mfs_fs *fs, const char *model, int64_t version)
{
	mfs_model_info mi;
	if (mfs_registry_model_snapshot(fs->conf.registry, model, &mi) < 0)
		return -ENOENT;
	int rc = 0;
	if (version) {
		rc = -ENOENT;
		for (int k = 0; k < mi.n_versions; k++)
			if (mi.versions[k].version == version && mi.versions[k].served)
				rc = 0;
	}
	mfs_model_info_release(&mi);
	return rc;
}

/* Resolve ino to a live target.  -ENOENT when its object is gone. */
static int resolve(mfs_fs *fs, fuse_ino_t ino, target *t)
{
	pthread_mutex_lock(&fs->lock);
	node *n = node_find(fs, ino);
	if (!n || n->dead) {
		pthread_mutex_unlock(&fs->lock);
		return -ENOENT;
	}
	fill_target(n, t);
	pthread_mutex_unlock(&fs->lock);
	if (t->req) {
		if (mfs_request_removed(t->req)) {
			target_release(t);
			return -ENOENT;
		}
		mfs_request_touch(t->req);
		return 0;
	}
	if (t->kind != N_ROOT && t->kind != N_INDEX && t->kind != N_METRICS &&
	    model_alive(fs, t->model, t->version) < 0)
		return -ENOENT;
	return 0;
}

/* ---- attributes ---- */

static bool is_dir(nkind k)
{
	return k == N_ROOT || k == N_MODEL || k == N_VERSION || k == N_REQS || k == N_REQ;
}

static void fill_attr(mfs_fs *fs, const target *t, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = t->ino;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_blksize = BLKSIZE;
	st->st_atim = st->st_mtim = st->st_ctim = fs->start;
	if (is_dir(t->kind)) {
		st->st_mode = S_IFDIR | (t->kind == N_REQS || t->kind == N_REQ ? 0755 : 0555);
		st->st_nlink = 2;
		return;
	}
	st->st_nlink = 1;
	int64_t size = 0;
	mode_t mode = 0444;
	if (t->kind == N_MFILE && t->sub == MF_INFER) {
		mode = 0666;
	} else if (t->kind == N_RFILE && t->sub == RF_INPUT) {
		mode = 0644;
		size = mfs_request_input_file_size(t->req, t->name);
	} else if (t->kind == N_RFILE && t->sub == RF_OUTPUT) {
		size = mfs_request_output_size(t->req, t->idx, t->fmt);
	} else {
		char *buf = NULL;
		size_t len = 0;
		if (fs_content(fs, t, &buf, &len) == 0)
			size = (int64_t)len;
		free(buf);
	}
	if (t->kind == N_RFILE || t->kind == N_MFILE || t->kind == N_INDEX || t->kind == N_METRICS)
		clock_gettime(CLOCK_REALTIME, &st->st_mtim);
	st->st_ctim = st->st_mtim;
	st->st_mode = S_IFREG | mode;
	st->st_size = size > 0 ? size : 0;
	st->st_blocks = (st->st_size + 511) / 512;
}

static double entry_timeout(nkind parent_kind)
{
	return parent_kind == N_REQS || parent_kind == N_REQ ? 0.0 : STABLE_TIMEOUT;
}

/* Find or make the child node and answer the lookup-like request. */
static void reply_child(mfs_fs *fs, fuse_req_t freq, fuse_ino_t parent, nkind pkind,
			const char *name, nkind kind, int sub, const char *model,
			int64_t version, mfs_request *req, int idx, mfs_format fmt)
{
	struct fuse_entry_param e;
	target t;
	pthread_mutex_lock(&fs->lock);
	node *p = node_find(fs, parent);
	if (!p || p->dead) {
		pthread_mutex_unlock(&fs->lock);
		fuse_reply_err(freq, ENOENT);
		return;
	}
	node *c = node_child(p, name);
	if (c && (c->kind != kind || c->sub != sub || c->idx != idx || c->fmt != fmt)) {
		node_kill(fs, c);
		c = NULL;
	}
	if (!c)
		c = node_add(fs, p, name, kind, sub, model, version, req, idx, fmt);
	if (!c) {
		pthread_mutex_unlock(&fs->lock);
		fuse_reply_err(freq, ENOMEM);
		return;
	}
	c->nlookup++;
	fill_target(c, &t);
	pthread_mutex_unlock(&fs->lock);
	memset(&e, 0, sizeof(e));
	e.ino = t.ino;
	e.generation = 1;
	fill_attr(fs, &t, &e.attr);
	e.attr_timeout = is_dir(kind) ? STABLE_TIMEOUT : 0.0;
	e.entry_timeout = entry_timeout(pkind);
	target_release(&t);
	fuse_reply_entry(freq, &e);
}

/* ---- operations ---- */

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	/* Reads of one file must not be merged or reordered by the kernel. */
	conn->want &= ~(unsigned)FUSE_CAP_ASYNC_READ;
	/* Our own loop reads the device non-blocking; splice would bypass it. */
	conn->want &= ~(unsigned)(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
}

static int mfile_index(const char *name)
{
	for (int i = 0; i < MF_COUNT; i++)
		if (strcmp(name, mfile_names[i]) == 0)
			return i;
	return -1;
}

static int rfile_index(const char *name)
{
	for (int i = 0; i < 3; i++)
		if (strcmp(name, rfile_names[i]) == 0)
			return i;
	return -1;
}

/* An output file name "OUTPUT0.EXT": its index and format, or -1. */
static int output_file(mfs_request *r, const char *name, mfs_format *fmt)
{
	size_t nl;
	char base[256];
	int f = mfs_format_split_filename(name, &nl);
	if (f < 0 || nl >= sizeof(base))
		return -1;
	memcpy(base, name, nl);
	base[nl] = '\0';
	*fmt = (mfs_format)f;
	return mfs_request_output_index(r, base);
}

static void op_lookup(fuse_req_t freq, fuse_ino_t parent, const char *name)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	target p;
	int m;
	int64_t v;
	if (resolve(fs, parent, &p) < 0) {
		fuse_reply_err(freq, ENOENT);
		return;
	}
	switch (p.kind) {
	case N_ROOT:
		if (strcmp(name, ".index.json") == 0)
			reply_child(fs, freq, parent, p.kind, name, N_INDEX, 0, NULL, 0, NULL, 0, 0);
		else if (strcmp(name, ".metrics") == 0)
			reply_child(fs, freq, parent, p.kind, name, N_METRICS, 0, NULL, 0, NULL, 0, 0);
		else if (model_alive(fs, name, 0) == 0)
			reply_child(fs, freq, parent, p.kind, name, N_MODEL, 0, name, 0, NULL, 0, 0);
		else
			fuse_reply_err(freq, ENOENT);
		break;
	case N_MODEL:
	case N_VERSION:
		if ((m = mfile_index(name)) >= 0)
			reply_child(fs, freq, parent, p.kind, name, N_MFILE, m, p.model, p.version, NULL, 0, 0);
		else if (strcmp(name, "requests") == 0)
			reply_child(fs, freq, parent, p.kind, name, N_REQS, 0, p.model, p.version, NULL, 0, 0);
		else if (p.kind == N_MODEL && mfs_repo_version_name(name, &v) && model_alive(fs, p.model, v) == 0)
			reply_child(fs, freq, parent, p.kind, name, N_VERSION, 0, p.model, v, NULL, 0, 0);
		else
			fuse_reply_err(freq, ENOENT);
		break;
	case N_REQS: {
		/* Request directories exist only through mkdir. */
		struct fuse_entry_param e;
		target t;
		pthread_mutex_lock(&fs->lock);
		node *pn = node_find(fs, parent);
		node *c = pn ? node_child(pn, name) : NULL;
		if (c && !mfs_request_removed(c->req)) {
			c->nlookup++;
			fill_target(c, &t);
		} else {
			c = NULL;
		}
		pthread_mutex_unlock(&fs->lock);
		if (!c) {
			fuse_reply_err(freq, ENOENT);
			break;
		}
		memset(&e, 0, sizeof(e));
		e.ino = t.ino;
		e.generation = 1;
		fill_attr(fs, &t, &e.attr);
		e.attr_timeout = 0;
		e.entry_timeout = 0;
		target_release(&t);
		fuse_reply_entry(freq, &e);
		break;
	}
	case N_REQ: {
		mfs_format fmt;
		int idx;
		if ((m = rfile_index(name)) >= 0)
			reply_child(fs, freq, parent, p.kind, name, N_RFILE, m, p.model, p.version, p.req, 0, 0);
		else if ((idx = output_file(p.req, name, &fmt)) >= 0)
			reply_child(fs, freq, parent, p.kind, name, N_RFILE, RF_OUTPUT, p.model, p.version, p.req, idx, fmt);
		else if (mfs_request_input_file_size(p.req, name) >= 0)
			reply_child(fs, freq, parent, p.kind, name, N_RFILE, RF_INPUT, p.model, p.version, p.req, 0, 0);
		else
			fuse_reply_err(freq, ENOENT);
		break;
	}
	default:
		fuse_reply_err(freq, ENOTDIR);
		break;
	}
	target_release(&p);
}

static void forget_one(mfs_fs *fs, fuse_ino_t ino, uint64_t nlookup)
{
	node *n = node_find(fs, ino);
	if (!n || n->kind == N_ROOT)
		return;
	n->nlookup = n->nlookup > nlookup ? n->nlookup - nlookup : 0;
	if (n->nlookup == 0 && n->dead)
		node_free(fs, n);
}

static void op_forget(fuse_req_t freq, fuse_ino_t ino, uint64_t nlookup)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	pthread_mutex_lock(&fs->lock);
	forget_one(fs, ino, nlookup);
	pthread_mutex_unlock(&fs->lock);
	fuse_reply_none(freq);
}

static void op_forget_multi(fuse_req_t freq, size_t count, struct fuse_forget_data *f)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	pthread_mutex_lock(&fs->lock);
	for (size_t i = 0; i < count; i++)
		forget_one(fs, f[i].ino, f[i].nlookup);
	pthread_mutex_unlock(&fs->lock);
	fuse_reply_none(freq);
}

static void op_getattr(fuse_req_t freq, fuse_ino_t ino, struct fuse_file_info *fi)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	target t;
	struct stat st;
	(void)fi;
	if (resolve(fs, ino, &t) < 0) {
		fuse_reply_err(freq, ENOENT);
		return;
	}
	fill_attr(fs, &t, &st);
	/* A file being written shows what has been written so far. */
	if (fi && fi->fh) {
		handle *h = (handle *)(uintptr_t)fi->fh;
		if (h->kind == H_INPUT)
			st.st_size = (off_t)h->wlen;
	}
	fuse_reply_attr(freq, &st, is_dir(t.kind) ? STABLE_TIMEOUT : 0.0);
	target_release(&t);
}

static void op_setattr(fuse_req_t freq, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	target t;
	struct stat st;
	if (resolve(fs, ino, &t) < 0) {
		fuse_reply_err(freq, ENOENT);
		return;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		handle *h = fi ? (handle *)(uintptr_t)fi->fh : NULL;
		if (t.kind != N_RFILE || t.sub != RF_INPUT || !h || h->kind != H_INPUT) {
			/* Only an input file open for writing can change size. */
			fuse_reply_err(freq, t.kind == N_RFILE && t.sub == RF_INPUT ? EINVAL : EROFS);
			target_release(&t);
			return;
		}
		pthread_mutex_lock(&h->lock);
		if ((size_t)attr->st_size <= h->wlen) {
			h->wlen = (size_t)attr->st_size;
			h->dirty = true;
			h->written = true;
		}
		pthread_mutex_unlock(&h->lock);
	}
	fill_attr(fs, &t, &st);
	fuse_reply_attr(freq, &st, 0.0);
	target_release(&t);
}

/* ---- request directories ---- */

static void op_mkdir(fuse_req_t freq, fuse_ino_t parent, const char *name, mode_t mode)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	target p;
	mfs_error err;
	(void)mode;
	if (resolve(fs, parent, &p) < 0) {
		fuse_reply_err(freq, ENOENT);
		return;
	}
	if (p.kind != N_REQS) {
		fuse_reply_err(freq, p.kind == N_REQ ? EPERM : EROFS);
		goto out;
	}
	if (!mfs_request_name_ok(name)) {
		mfs_log_warn("model '%s': request name '%s' refused: use [A-Za-z0-9._-], 1 to 64 characters",
			     p.model, name);
		fuse_reply_err(freq, EINVAL);
		goto out;
	}
	if (!__atomic_load_n(&fs->accepting, __ATOMIC_ACQUIRE)) {
		mfs_log_warn("model '%s' request '%s': refused, the daemon is stopping", p.model, name);
		fuse_reply_err(freq, EAGAIN);
		goto out;
	}
	mfs_version *v;
	mfs_error_clear(&err);
	int rc = mfs_registry_get(fs->conf.registry, p.model, p.version, &v, &err);
	if (rc < 0) {
		mfs_log_warn("model '%s' request '%s': %s", p.model, name, err.msg);
		fuse_reply_err(freq, -rc);
		goto out;
	}
	mfs_request *r;
	rc = mfs_request_new(v, name, fs->conf.max_request_bytes, &r, &err);
	mfs_version_put(v);
	if (rc < 0) {
		mfs_log_error("model '%s' request '%s': %s", p.model, name, err.msg);
		fuse_reply_err(freq, -rc);
		goto out;
	}
	pthread_mutex_lock(&fs->lock);
	node *pn = node_find(fs, parent);
	node *c = pn && !pn->dead ? node_child(pn, name) : NULL;
	if (c && !mfs_request_removed(c->req)) {
		pthread_mutex_unlock(&fs->lock);
		mfs_request_put(r);
		fuse_reply_err(freq, EEXIST);
		goto out;
	}
	if (c)
		node_kill(fs, c);
	c = pn && !pn->dead ? node_add(fs, pn, name, N_REQ, 0, p.model, p.version, r, 0, 0) : NULL;
	target t;
	if (c) {
		c->nlookup++;
		fill_target(c, &t);
	}
	pthread_mutex_unlock(&fs->lock);
	mfs_request_put(r);
	if (!c) {
		fuse_reply_err(freq, pn ? ENOMEM : ENOENT);
		goto out;
	}
	mfs_log_debug("model '%s' request '%s': created on version %" PRId64, p.model, name,
		      mfs_request_version(t.req)->version);
	struct fuse_entry_param e;
	memset(&e, 0, sizeof(e));
	e.ino = t.ino;
	e.generation = 1;
	fill_attr(fs, &t, &e.attr);
	target_release(&t);
	fuse_reply_entry(freq, &e);
out:
	target_release(&p);
}

static void op_rmdir(fuse_req_t freq, fuse_ino_t parent, const char *name)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	target p;
	if (resolve(fs, parent, &p) < 0) {
		fuse_reply_err(freq, ENOENT);
		return;
	}
	if (p.kind != N_REQS) {
		fuse_reply_err(freq, p.kind == N_ROOT || p.kind == N_MODEL || p.kind == N_VERSION ? EROFS : ENOTDIR);
		target_release(&p);
		return;
	}
	int rc = -ENOENT;
	pthread_mutex_lock(&fs->lock);
	node *pn = node_find(fs, parent);
	node *c = pn ? node_child(pn, name) : NULL;
	if (c) {
		mfs_request_mark_removed(c->req);
		node_kill(fs, c);
		rc = 0;
	}
	pthread_mutex_unlock(&fs->lock);
	fuse_reply_err(freq, -rc);
	target_release(&p);
}

static void op_unlink(fuse_req_t freq, fuse_ino_t parent, const char *name)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	target p;
	if (resolve(fs, parent, &p) < 0) {
		fuse_reply_err(freq, ENOENT);
		return;
	}
	if (p.kind != N_REQ) {
		fuse_reply_err(freq, p.kind == N_REQS ? EISDIR : EROFS);
		target_release(&p);
		return;
	}
	mfs_format fmt;
	int rc = 0;
	if (mfs_request_remove_input(p.req, name) == 0) {
		pthread_mutex_lock(&fs->lock);
		node *pn = node_find(fs, parent);
		node *c = pn ? node_child(pn, name) : NULL;
		if (c)
			node_kill(fs, c);
		pthread_mutex_unlock(&fs->lock);
	} else if (rfile_index(name) < 0 && output_file(p.req, name, &fmt) < 0) {
		rc = -ENOENT;
	}
	/* Control and output files are not removable, but `rm -r` must be
	 * able to empty the directory: removing them succeeds and changes
	 * nothing. */
	fuse_reply_err(freq, -rc);
	target_release(&p);
}

/* ---- open files ---- */

static handle *handle_new(mfs_fs *fs, hkind kind, const target *t)
{
	handle *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	pthread_mutex_lock(&fs->hlock);
	h->hnext = fs->handles;
	if (fs->handles)
		fs->handles->hprev = h;
	fs->handles = h;
	pthread_mutex_unlock(&fs->hlock);
	pthread_mutex_init(&h->lock, NULL);
	h->kind = kind;
	h->ino = t->ino;
	snprintf(h->name, sizeof(h->name), "%s", t->name);
	if (t->req) {
		mfs_request_get(t->req);
		h->req = t->req;
	}
	h->idx = t->idx;
	h->fmt = t->fmt;
	snprintf(h->model, sizeof(h->model), "%s", t->model);
	h->version = t->version;
	return h;
}

static void handle_free(mfs_fs *fs, handle *h)
{
	/* Wait out a reply still being written from h's buffers by another
	 * thread (the kernel may deliver it, and the reader close the file,
	 * before that thread's writev has returned). */
	pthread_mutex_lock(&h->lock);
	pthread_mutex_unlock(&h->lock);
	pthread_mutex_lock(&fs->hlock);
	if (h->hprev)
		h->hprev->hnext = h->hnext;
	else
		fs->handles = h->hnext;
	if (h->hnext)
		h->hnext->hprev = h->hprev;
	pthread_mutex_unlock(&fs->hlock);
	if (h->req)
		mfs_request_put(h->req);
	free(h->content);
	free(h->wbuf);
	for (size_t i = 0; i < h->n_ents; i++)
		free(h->ents[i].name);
	free(h->ents);
	mfs_infer_req_release(&h->ireq);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

static void set_handle(struct fuse_file_info *fi, handle *h)
{
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	if (h->kind == H_INFER)
		fi->nonseekable = 1;
}

static void op_open(fuse_req_t freq, fuse_ino_t ino, struct fuse_file_info *fi)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	target t;
	int acc = fi->flags & O_ACCMODE;
	bool writing = acc != O_RDONLY;
	handle *h = NULL;
	int rc = 0;
	if (resolve(fs, ino, &t) < 0) {
		fuse_reply_err(freq, ENOENT);
		return;
	}
	if (is_dir(t.kind)) {
		rc = -EISDIR;
	} else if (t.kind == N_MFILE && t.sub == MF_INFER) {
		h = handle_new(fs, H_INFER, &t);
		rc = h ? 0 : -ENOMEM;
	} else if (t.kind == N_RFILE && t.sub == RF_OUTPUT) {
		if (writing)
			rc = -EACCES;
		else if (!(h = handle_new(fs, H_OUTPUT, &t)))
			rc = -ENOMEM;
	} else if (t.kind == N_RFILE && t.sub == RF_INPUT) {
		if (!(h = handle_new(fs, writing ? H_INPUT : H_STATIC, &t))) {
			rc = -ENOMEM;
		} else if (!writing || !(fi->flags & O_TRUNC)) {
			char *buf;
			size_t len;
			if ((rc = mfs_request_input_file(t.req, t.name, &buf, &len)) == 0) {
				if (writing) {
					h->wbuf = buf;
					h->wlen = h->wcap = len;
				} else {
					h->content = buf;
					h->len = len;
				}
			}
		} else {
			h->dirty = true;   /* truncated: an empty file is what was written */
		}
	} else if (writing) {
		rc = -EROFS;
	} else if (!(h = handle_new(fs, H_STATIC, &t))) {
		rc = -ENOMEM;
	} else {
		rc = fs_content(fs, &t, &h->content, &h->len);
	}
	target_release(&t);
	if (rc < 0) {
		if (h)
			handle_free(fs, h);
		fuse_reply_err(freq, -rc);
		return;
	}
	set_handle(fi, h);
	if (fuse_reply_open(freq, fi) != 0)
		handle_free(fs, h);
}

static void op_create(fuse_req_t freq, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	target p;
	mfs_format fmt;
	(void)mode;
	if (resolve(fs, parent, &p) < 0) {
		fuse_reply_err(freq, ENOENT);
		return;
	}
	if (p.kind != N_REQ) {
		fuse_reply_err(freq, p.kind == N_REQS ? EPERM : EROFS);
		target_release(&p);
		return;
	}
	if (rfile_index(name) >= 0 || output_file(p.req, name, &fmt) >= 0) {
		fuse_reply_err(freq, rfile_index(name) >= 0 ? EROFS : EACCES);
		target_release(&p);
		return;
	}
	bool existed = mfs_request_input_file_size(p.req, name) >= 0;
	pthread_mutex_lock(&fs->lock);
	node *pn = node_find(fs, parent);
	node *c = pn && !pn->dead ? node_child(pn, name) : NULL;
	if (c && (c->kind != N_RFILE || c->sub != RF_INPUT)) {
		node_kill(fs, c);
		c = NULL;
	}
	if (!c && pn && !pn->dead)
		c = node_add(fs, pn, name, N_RFILE, RF_INPUT, p.model, p.version, p.req, 0, 0);
	target t;
	if (c) {
		c->nlookup++;
		fill_target(c, &t);
	}
	pthread_mutex_unlock(&fs->lock);
	target_release(&p);
	if (!c) {
		fuse_reply_err(freq, ENOMEM);
		return;
	}
	handle *h = handle_new(fs, H_INPUT, &t);
	if (!h) {
		target_release(&t);
		fuse_reply_err(freq, ENOMEM);
		return;
	}
	h->dirty = true;
	h->created = !existed;
	struct fuse_entry_param e;
	memset(&e, 0, sizeof(e));
	e.ino = t.ino;
	e.generation = 1;
	fill_attr(fs, &t, &e.attr);
	e.attr.st_size = 0;
	target_release(&t);
	set_handle(fi, h);
	if (fuse_reply_create(freq, &e, fi) != 0)
		handle_free(fs, h);
}

static void op_read(fuse_req_t freq, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi);

static void op_write(fuse_req_t freq, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	handle *h = (handle *)(uintptr_t)fi->fh;
	uint64_t max = fs->conf.max_request_bytes;
	(void)ino;
	if (h->kind != H_INPUT && h->kind != H_INFER) {
		fuse_reply_err(freq, EBADF);
		return;
	}
	pthread_mutex_lock(&h->lock);
	size_t at = (size_t)off;
	if (h->kind == H_INFER) {
		if (h->inflight) {
			pthread_mutex_unlock(&h->lock);
			fuse_reply_err(freq, EBUSY);
			return;
		}
		if (h->have_content) {
			/* A write after the response starts the next request. */
			free(h->content);
			h->content = NULL;
			h->len = 0;
			h->have_content = false;
			h->wlen = 0;
			h->rpos = 0;
		}
		at = h->wlen;   /* a stream: offsets do not matter */
	} else {
		int64_t mine = mfs_request_input_file_size(h->req, h->name);
		uint64_t others = mfs_request_input_bytes(h->req) - (mine > 0 ? (uint64_t)mine : 0);
		max = others < max ? max - others : 0;
	}
	if ((uint64_t)at + size > max) {
		/* The file is refused: nothing of it is committed at close. */
		if (h->kind == H_INPUT)
			h->dirty = h->written = false;
		pthread_mutex_unlock(&h->lock);
		if (h->kind == H_INPUT) {
			mfs_error err;
			mfs_fail(&err, EFBIG, "'%s' refused: the request would pass --max-request-bytes=%" PRIu64,
				 h->name, fs->conf.max_request_bytes);
			mfs_request_note_error(h->req, &err);
		} else {
			mfs_log_warn("model '%s' infer: request refused: more than --max-request-bytes=%" PRIu64,
				     h->model, fs->conf.max_request_bytes);
		}
		fuse_reply_err(freq, EFBIG);
		return;
	}
	if (at + size > h->wcap) {
		size_t cap = h->wcap ? h->wcap : 4096;
		while (cap < at + size)
			cap *= 2;
		char *nb = realloc(h->wbuf, cap);
		if (!nb) {
			pthread_mutex_unlock(&h->lock);
			fuse_reply_err(freq, ENOMEM);
			return;
		}
		h->wbuf = nb;
		h->wcap = cap;
	}
	if (at > h->wlen)
		memset(h->wbuf + h->wlen, 0, at - h->wlen);
	memcpy(h->wbuf + at, buf, size);
	if (at + size > h->wlen)
		h->wlen = at + size;
	h->dirty = true;
	h->written = true;
	pthread_mutex_unlock(&h->lock);
	fuse_reply_write(freq, size);
}

/* Commit an input file written on h; 0 or a negative errno.  At flush
 * (every close()) only once something was written: a shell's `>`
 * opens the file, dup2()s it and closes the first descriptor before the
 * command writes anything.  At release, whatever is still uncommitted (an
 * empty file made by `: > f`) is committed; its error goes to $req/error. */
static int commit_input(mfs_fs *fs, handle *h, bool final)
{
	mfs_error err;
	mfs_error_clear(&err);
	pthread_mutex_lock(&h->lock);
	if (!h->dirty || (!final && !h->written)) {
		pthread_mutex_unlock(&h->lock);
		return 0;
	}
	h->dirty = false;
	h->written = false;
	int rc = mfs_request_commit_file(h->req, h->name, h->wbuf ? h->wbuf : "", h->wlen, &err);
	bool created = h->created;
	if (rc == 0)
		h->created = false;
	pthread_mutex_unlock(&h->lock);
	if (rc < 0 && created && mfs_request_input_file_size(h->req, h->name) < 0) {
		/* A new file that was refused leaves no entry behind. */
		pthread_mutex_lock(&fs->lock);
		node *n = node_find(fs, h->ino);
		if (n)
			node_kill(fs, n);
		pthread_mutex_unlock(&fs->lock);
	}
	return rc;
}

static void op_flush(fuse_req_t freq, fuse_ino_t ino, struct fuse_file_info *fi)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	handle *h = (handle *)(uintptr_t)fi->fh;
	(void)ino;
	int rc = h->kind == H_INPUT ? commit_input(fs, h, false) : 0;
	fuse_reply_err(freq, -rc);
}

static void op_release(fuse_req_t freq, fuse_ino_t ino, struct fuse_file_info *fi)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	handle *h = (handle *)(uintptr_t)fi->fh;
	(void)ino;
	if (h->kind == H_INPUT)
		commit_input(fs, h, true);
	handle_free(fs, h);
	fuse_reply_err(freq, 0);
}

static void op_fsync(fuse_req_t freq, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino;
	(void)datasync;
	(void)fi;
	fuse_reply_err(freq, 0);
}

void fs_answer_output(fuse_req_t freq, handle *h, size_t size, off_t off)
{
	pthread_mutex_lock(&h->lock);
	if (!h->have_content) {
		mfs_error err;
		char *buf;
		size_t len;
		mfs_error_clear(&err);
		int rc = mfs_request_read_output(h->req, h->idx, h->fmt, &buf, &len, &err);
		if (rc < 0) {
			pthread_mutex_unlock(&h->lock);
			if (rc == -ENODATA || rc == -EIO)
				mfs_log_warn("model '%s' request '%s': reading '%s': %s", h->model,
					     mfs_request_name(h->req), h->name, err.msg);
			fuse_reply_err(freq, rc == -EINPROGRESS ? EAGAIN : -rc);
			return;
		}
		h->content = buf;
		h->len = len;
		h->have_content = true;
	}
	/* Reply under the lock: release() frees the content only after
	 * taking it, and the reply's buffer must live until writev returns. */
	fs_reply_slice(freq, h->content, h->len, size, off);
	pthread_mutex_unlock(&h->lock);
}

/* Build the session's response (h->lock held). */
static void infer_response(handle *h)
{
	mfs_version *v = mfs_request_version(h->req);
	const mfs_model_config *cfg = v->config;
	const mfs_tensor **outs = calloc((size_t)cfg->n_outputs + 1, sizeof(*outs));
	mfs_error err;
	mfs_error_clear(&err);
	char *text = NULL;
	size_t len = 0;
	if (!outs)
		mfs_fail(&err, ENOMEM, "out of memory");
	else if (mfs_request_outputs(h->req, outs, &err) == 0)
		text = mfs_infer_response(cfg, v->model_name, v->version, &h->ireq, outs, &len, &err);
	free(outs);
	if (!text)
		text = mfs_infer_error_json(err.msg, &len);
	mfs_infer_req_release(&h->ireq);
	h->content = text;
	h->len = text ? len : 0;
	h->have_content = true;
	h->rpos = 0;
	h->inflight = false;
}

void fs_answer_infer(mfs_fs *fs, fuse_req_t freq, handle *h, size_t size)
{
	(void)fs;
	pthread_mutex_lock(&h->lock);
	if (!h->have_content && !h->req) {
		/* Nothing was ever asked on this file. */
		pthread_mutex_unlock(&h->lock);
		fuse_reply_buf(freq, NULL, 0);
		return;
	}
	if (!h->have_content)
		infer_response(h);
	size_t pos = h->rpos < h->len ? h->rpos : h->len;
	size_t n = h->len - pos < size ? h->len - pos : size;
	h->rpos = pos + n;
	/* Reply under the handle lock so two readers of one session see the
	 * response in order. */
	fuse_reply_buf(freq, h->content ? h->content + pos : NULL, n);
	pthread_mutex_unlock(&h->lock);
}

/* The first read of an infer session: parse, submit, wait. */
static void infer_read(mfs_fs *fs, fuse_req_t freq, handle *h, size_t size)
{
	mfs_error err;
	mfs_error_clear(&err);
	pthread_mutex_lock(&h->lock);
	if (h->inflight) {
		/* A read interrupted earlier: wait for the same run again. */
		mfs_request *r = h->req;
		pthread_mutex_unlock(&h->lock);
		if (fs_wait_read(fs, freq, h, r, size, 0) == 0)
			fs_answer_infer(fs, freq, h, size);
		return;
	}
	if (h->have_content || h->wlen == 0) {
		pthread_mutex_unlock(&h->lock);
		fs_answer_infer(fs, freq, h, size);
		return;
	}
	int rc;
	bool logged = false;
	mfs_version *v = NULL;
	if (!__atomic_load_n(&fs->accepting, __ATOMIC_ACQUIRE)) {
		rc = mfs_fail(&err, EAGAIN, "the daemon is stopping");
		goto fail;
	}
	rc = mfs_registry_get(fs->conf.registry, h->model, h->version, &v, &err);
	if (rc < 0)
		goto fail;
	if (!h->req || mfs_request_version(h->req) != v) {
		char name[64];
		snprintf(name, sizeof(name), "infer-%" PRIu64,
			 __atomic_add_fetch(&fs->infer_seq, 1, __ATOMIC_RELAXED));
		mfs_request *r;
		rc = mfs_request_new(v, name, fs->conf.max_request_bytes, &r, &err);
		if (rc < 0)
			goto fail;
		if (h->req)
			mfs_request_put(h->req);
		h->req = r;
	}
	mfs_infer_req_release(&h->ireq);
	rc = mfs_infer_parse(v->config, h->wbuf, h->wlen, &h->ireq, &err);
	if (rc < 0)
		goto fail;
	rc = mfs_request_submit_tensors(h->req, h->ireq.inputs, &err);
	if (rc < 0) {
		logged = true;   /* the request logged it */
		goto fail;
	}
	mfs_version_put(v);
	h->inflight = true;
	h->wlen = 0;
	mfs_request *r = h->req;
	mfs_request_get(r);
	pthread_mutex_unlock(&h->lock);
	if (fs_wait_read(fs, freq, h, r, size, 0) == 0)
		fs_answer_infer(fs, freq, h, size);
	mfs_request_put(r);
	return;
fail:
	if (v)
		mfs_version_put(v);
	if (!logged)
		mfs_log_warn("model '%s' infer: %s", h->model, err.msg);
	mfs_infer_req_release(&h->ireq);
	free(h->content);
	h->content = mfs_infer_error_json(err.msg, &h->len);
	if (!h->content)
		h->len = 0;
	h->have_content = true;
	h->rpos = 0;
	h->wlen = 0;
	pthread_mutex_unlock(&h->lock);
	fs_answer_infer(fs, freq, h, size);
}

static void op_read(fuse_req_t freq, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	handle *h = (handle *)(uintptr_t)fi->fh;
	(void)ino;
	switch (h->kind) {
	case H_STATIC:
		pthread_mutex_lock(&h->lock);
		fs_reply_slice(freq, h->content, h->len, size, off);
		pthread_mutex_unlock(&h->lock);
		return;
	case H_OUTPUT: {
		pthread_mutex_lock(&h->lock);
		bool have = h->have_content;
		pthread_mutex_unlock(&h->lock);
		if (!have && mfs_request_state(h->req) != MFS_REQ_DONE &&
		    mfs_request_state(h->req) != MFS_REQ_FAILED &&
		    mfs_request_state(h->req) != MFS_REQ_WAITING) {
			if (fs_wait_read(fs, freq, h, h->req, size, off) == 1)
				return;
		}
		fs_answer_output(freq, h, size, off);
		return;
	}
	case H_INFER:
		infer_read(fs, freq, h, size);
		return;
	case H_INPUT:
		pthread_mutex_lock(&h->lock);
		fs_reply_slice(freq, h->wbuf, h->wlen, size, off);
		pthread_mutex_unlock(&h->lock);
		return;
	default:
		fuse_reply_err(freq, EISDIR);
		return;
	}
}

/* ---- directories ---- */

static int add_ent(handle *h, size_t *cap, const char *name, mode_t type, fuse_ino_t ino)
{
	if (h->n_ents == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		dirent_ *ne = realloc(h->ents, nc * sizeof(*ne));
		if (!ne)
			return -ENOMEM;
		h->ents = ne;
		*cap = nc;
	}
	char *s = strdup(name);
	if (!s)
		return -ENOMEM;
	h->ents[h->n_ents++] = (dirent_){ s, type, ino };
	return 0;
}

static int list_dir(mfs_fs *fs, const target *t, handle *h)
{
	size_t cap = 0;
	int rc = add_ent(h, &cap, ".", S_IFDIR, t->ino);
	if (rc == 0)
		rc = add_ent(h, &cap, "..", S_IFDIR, UNKNOWN_INO);
	if (rc < 0)
		return rc;
	switch (t->kind) {
	case N_ROOT: {
		mfs_model_info *ms;
		int n;
		if ((rc = add_ent(h, &cap, ".index.json", S_IFREG, UNKNOWN_INO)) < 0 ||
		    (rc = add_ent(h, &cap, ".metrics", S_IFREG, UNKNOWN_INO)) < 0)
			return rc;
		if (mfs_registry_snapshot(fs->conf.registry, &ms, &n) < 0)
			return -ENOMEM;
		for (int i = 0; rc == 0 && i < n; i++)
			rc = add_ent(h, &cap, ms[i].name, S_IFDIR, UNKNOWN_INO);
		mfs_registry_snapshot_free(ms, n);
		return rc;
	}
	case N_MODEL:
	case N_VERSION: {
		for (int i = 0; rc == 0 && i < MF_COUNT; i++)
			rc = add_ent(h, &cap, mfile_names[i], S_IFREG, UNKNOWN_INO);
		if (rc == 0)
			rc = add_ent(h, &cap, "requests", S_IFDIR, UNKNOWN_INO);
		if (rc < 0 || t->kind == N_VERSION)
			return rc;
		mfs_model_info mi;
		if (mfs_registry_model_snapshot(fs->conf.registry, t->model, &mi) < 0)
			return -ENOENT;
		for (int k = 0; rc == 0 && k < mi.n_versions; k++)
			if (mi.versions[k].served) {
				char v[32];
				snprintf(v, sizeof(v), "%" PRId64, mi.versions[k].version);
				rc = add_ent(h, &cap, v, S_IFDIR, UNKNOWN_INO);
			}
		mfs_model_info_release(&mi);
		return rc;
	}
	case N_REQS: {
		pthread_mutex_lock(&fs->lock);
		node *n = node_find(fs, t->ino);
		for (node *c = n ? n->children : NULL; rc == 0 && c; c = c->sibling)
			if (c->req && !mfs_request_removed(c->req))
				rc = add_ent(h, &cap, c->name, S_IFDIR, c->ino);
		pthread_mutex_unlock(&fs->lock);
		return rc;
	}
	case N_REQ: {
		for (int i = 0; rc == 0 && i < 3; i++)
			rc = add_ent(h, &cap, rfile_names[i], S_IFREG, UNKNOWN_INO);
		char **names;
		int n;
		if (rc < 0 || mfs_request_list(t->req, &names, &n) < 0)
			return rc < 0 ? rc : -ENOMEM;
		for (int i = 0; i < n; i++) {
			if (rc == 0)
				rc = add_ent(h, &cap, names[i], S_IFREG, UNKNOWN_INO);
			free(names[i]);
		}
		free(names);
		return rc;
	}
	default:
		return -ENOTDIR;
	}
}

static void op_opendir(fuse_req_t freq, fuse_ino_t ino, struct fuse_file_info *fi)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	target t;
	if (resolve(fs, ino, &t) < 0) {
		fuse_reply_err(freq, ENOENT);
		return;
	}
	if (!is_dir(t.kind)) {
		target_release(&t);
		fuse_reply_err(freq, ENOTDIR);
		return;
	}
	handle *h = handle_new(fs, H_DIR, &t);
	int rc = h ? list_dir(fs, &t, h) : -ENOMEM;
	target_release(&t);
	if (rc < 0) {
		if (h)
			handle_free(fs, h);
		fuse_reply_err(freq, -rc);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)h;
	if (fuse_reply_open(freq, fi) != 0)
		handle_free(fs, h);
}

static void op_readdir(fuse_req_t freq, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	handle *h = (handle *)(uintptr_t)fi->fh;
	(void)ino;
	char *buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(freq, ENOMEM);
		return;
	}
	size_t used = 0;
	for (size_t i = off < 0 ? 0 : (size_t)off; i < h->n_ents; i++) {
		struct stat st;
		memset(&st, 0, sizeof(st));
		st.st_ino = h->ents[i].ino;
		st.st_mode = h->ents[i].type;
		size_t need = fuse_add_direntry(freq, buf + used, size - used, h->ents[i].name, &st,
						(off_t)(i + 1));
		if (need > size - used)
			break;
		used += need;
	}
	fuse_reply_buf(freq, buf, used);
	free(buf);
}

static void op_releasedir(fuse_req_t freq, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	handle_free(fuse_req_userdata(freq), (handle *)(uintptr_t)fi->fh);
	fuse_reply_err(freq, 0);
}

/* Rename inside one request directory: a temporary (dot file) into
 * place commits it (rename-into-place); see mfs_request_rename_file. */
static void op_rename(fuse_req_t freq, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	target p;
	mfs_error err;
	if (resolve(fs, parent, &p) < 0) {
		fuse_reply_err(freq, ENOENT);
		return;
	}
	if (p.kind != N_REQ || newparent != parent) {
		fuse_reply_err(freq, p.kind == N_REQ || p.kind == N_REQS ? EXDEV : EROFS);
		target_release(&p);
		return;
	}
	if (flags) {
		fuse_reply_err(freq, EINVAL);
		target_release(&p);
		return;
	}
	mfs_format fmt;
	if (rfile_index(newname) >= 0 || output_file(p.req, newname, &fmt) >= 0) {
		fuse_reply_err(freq, EACCES);
		target_release(&p);
		return;
	}
	mfs_error_clear(&err);
	int rc = mfs_request_rename_file(p.req, name, newname, &err);
	if (rc == 0 || rc == -EAGAIN) {
		pthread_mutex_lock(&fs->lock);
		node *pn = node_find(fs, parent);
		node *c;
		if (pn && (c = node_child(pn, name)))
			node_kill(fs, c);
		if (pn && (c = node_child(pn, newname)))
			node_kill(fs, c);
		pthread_mutex_unlock(&fs->lock);
	}
	fuse_reply_err(freq, -rc);
	target_release(&p);
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.mkdir = op_mkdir,
	.rmdir = op_rmdir,
	.unlink = op_unlink,
	.rename = op_rename,
	.open = op_open,
	.create = op_create,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.releasedir = op_releasedir,
};

const struct fuse_lowlevel_ops *mfs_fs_ops(void)
{
	return &ops;
}

/* ---- life ---- */

int mfs_fs_new(const mfs_fs_conf *conf, mfs_fs **out, mfs_error *err)
{
	mfs_fs *fs = calloc(1, sizeof(*fs));
	if (!fs)
		return mfs_fail(err, ENOMEM, "out of memory");
	fs->conf = *conf;
	fs->n_buckets = 4096;
	fs->buckets = calloc(fs->n_buckets, sizeof(node *));
	pthread_mutex_init(&fs->lock, NULL);
	pthread_mutex_init(&fs->wlock, NULL);
	pthread_mutex_init(&fs->hlock, NULL);
	fs->next_ino = FUSE_ROOT_ID;
	fs->uid = getuid();
	fs->gid = getgid();
	fs->accepting = true;
	clock_gettime(CLOCK_REALTIME, &fs->start);
	if (!fs->buckets || !(fs->root = node_add(fs, NULL, "", N_ROOT, 0, NULL, 0, NULL, 0, 0))) {
		mfs_fs_free(fs);
		return mfs_fail(err, ENOMEM, "out of memory");
	}
	fs->root->nlookup = 1;
	*out = fs;
	return 0;
}

int mfs_fs_open_files(mfs_fs *fs)
{
	int n = 0;
	pthread_mutex_lock(&fs->hlock);
	for (handle *h = fs->handles; h; h = h->hnext)
		n += h->kind != H_DIR;
	pthread_mutex_unlock(&fs->hlock);
	return n;
}

void mfs_fs_stop_accepting(mfs_fs *fs)
{
	__atomic_store_n(&fs->accepting, false, __ATOMIC_RELEASE);
}

/* Remove idle request directories below n (fs->lock held). */
static void expire_below(mfs_fs *fs, node *n, uint64_t now)
{
	for (node *c = n->children, *next; c; c = next) {
		next = c->sibling;
		if (c->kind == N_REQ) {
			/* last_use may be later than now (touched meanwhile):
			 * no unsigned subtraction here. */
			if (!mfs_request_busy(c->req) &&
			    mfs_request_last_use(c->req) + fs->conf.request_ttl_ns < now) {
				mfs_log_info("model '%s' request '%s': removed after %" PRIu64 " s unused",
					     c->model, c->name, fs->conf.request_ttl_ns / 1000000000u);
				mfs_request_mark_removed(c->req);
				node_kill(fs, c);
			}
		} else if (c->kind == N_MODEL || c->kind == N_VERSION || c->kind == N_REQS) {
			expire_below(fs, c, now);
		}
	}
}

void mfs_fs_expire(mfs_fs *fs)
{
	pthread_mutex_lock(&fs->lock);
	expire_below(fs, fs->root, mfs_now_ns());
	pthread_mutex_unlock(&fs->lock);
	fs_expire_reads(fs);
}

void mfs_fs_free(mfs_fs *fs)
{
	if (!fs)
		return;
	mfs_fs_cancel_reads(fs, EINTR);
	while (fs->handles)
		handle_free(fs, fs->handles);
	for (size_t b = 0; fs->buckets && b < fs->n_buckets; b++)
		while (fs->buckets[b])
			node_free(fs, fs->buckets[b]);
	free(fs->buckets);
	pthread_mutex_destroy(&fs->lock);
	pthread_mutex_destroy(&fs->wlock);
	pthread_mutex_destroy(&fs->hlock);
	free(fs);
}

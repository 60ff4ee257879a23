/* fs_ops.c - the fuse_lowlevel_ops table, and the name operations:
 * lookup, forget, attributes, mkdir/rmdir/unlink/rename of request
 * directories and files, directory listings.  File I/O is in fs_files.c,
 * the inode table in fs_nodes.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_internal.h"
#include "log.h"
#include "membudget.h"
#include "metrics.h"
#include "repo.h"

#define UNKNOWN_INO 0xffffffffu    /* readdir: the kernel looks entries up anyway */

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

static void op_lookup(fuse_req_t freq, fuse_ino_t parent, const char *name)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	target p;
	int m;
	int64_t v;
	if (fs_resolve(fs, parent, &p) < 0) {
		fuse_reply_err(freq, ENOENT);
		return;
	}
	int rc = fs_may_use(freq, &p);   /* another user's request: no lookup inside */
	if (rc < 0) {
		fuse_reply_err(freq, -rc);
		fs_target_release(&p);
		return;
	}
	switch (p.kind) {
	case N_ROOT:
		if (strcmp(name, ".index.json") == 0)
			fs_reply_child(fs, freq, parent, p.kind, name, N_INDEX, 0, NULL, 0, NULL, 0, 0);
		else if (strcmp(name, ".metrics") == 0)
			fs_reply_child(fs, freq, parent, p.kind, name, N_METRICS, 0, NULL, 0, NULL, 0, 0);
		else if (strcmp(name, ".live") == 0 || strcmp(name, ".ready") == 0)
			fs_reply_child(fs, freq, parent, p.kind, name, N_HEALTH, name[1] == 'r', NULL, 0,
				       NULL, 0, 0);
		else if (fs_model_alive(fs, name, 0) == 0)
			fs_reply_child(fs, freq, parent, p.kind, name, N_MODEL, 0, name, 0, NULL, 0, 0);
		else
			fuse_reply_err(freq, ENOENT);
		break;
	case N_MODEL:
	case N_VERSION:
		if ((m = fs_mfile_index(name)) >= 0 &&
		    (m != MF_GENERATE || fs_is_generator(fs, p.model, p.version)))
			fs_reply_child(fs, freq, parent, p.kind, name, N_MFILE, m, p.model, p.version, NULL, 0, 0);
		else if (strcmp(name, "requests") == 0)
			fs_reply_child(fs, freq, parent, p.kind, name, N_REQS, 0, p.model, p.version, NULL, 0, 0);
		else if (p.kind == N_MODEL && fs->conf.control && strcmp(name, "control") == 0)
			fs_reply_child(fs, freq, parent, p.kind, name, N_CONTROL, 0, p.model, 0, NULL, 0, 0);
		else if (p.kind == N_MODEL && mfs_repo_version_name(name, &v) && fs_model_alive(fs, p.model, v) == 0)
			fs_reply_child(fs, freq, parent, p.kind, name, N_VERSION, 0, p.model, v, NULL, 0, 0);
		else
			fuse_reply_err(freq, ENOENT);
		break;
	case N_REQS: {
		/* Request directories exist only through mkdir. */
		struct fuse_entry_param e;
		target t;
		pthread_mutex_lock(&fs->lock);
		node *pn = fs_node_find(fs, parent);
		node *c = pn ? fs_node_child(fs, pn, name) : NULL;
		if (c && !mfs_request_removed(c->req)) {
			c->nlookup++;
			fs_fill_target(c, &t);
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
		fs_fill_attr(fs, &t, &e.attr);
		e.attr_timeout = STABLE_TIMEOUT;
		e.entry_timeout = STABLE_TIMEOUT;
		fs_target_release(&t);
		fuse_reply_entry(freq, &e);
		break;
	}
	case N_REQ: {
		mfs_file_info fi;
		if ((m = fs_rfile_index(name)) >= 0)
			fs_reply_child(fs, freq, parent, p.kind, name, N_RFILE, m, p.model, p.version, p.req, 0, 0);
		else if (strcmp(name, "output_ids.txt") == 0 && mfs_request_version(p.req)->gen)
			fs_reply_child(fs, freq, parent, p.kind, name, N_RFILE, RF_GENOUT, p.model, p.version, p.req, 0, 0);
		else if (mfs_request_find_file(p.req, name, &fi) == MFS_FILE_OUTPUT)
			fs_reply_child(fs, freq, parent, p.kind, name, N_RFILE, RF_OUTPUT, p.model, p.version, p.req, fi.idx, fi.fmt);
		else if (fi.kind == MFS_FILE_INPUT)
			fs_reply_child(fs, freq, parent, p.kind, name, N_RFILE, fi.link ? RF_LINK : RF_INPUT,
				       p.model, p.version, p.req, 0, 0);
		else
			fuse_reply_err(freq, ENOENT);
		break;
	}
	default:
		fuse_reply_err(freq, ENOTDIR);
		break;
	}
	fs_target_release(&p);
}

static void forget_one(mfs_fs *fs, fuse_ino_t ino, uint64_t nlookup)
{
	node *n = fs_node_find(fs, ino);
	if (!n || n->kind == N_ROOT)
		return;
	n->nlookup = n->nlookup > nlookup ? n->nlookup - nlookup : 0;
	if (n->nlookup == 0 && n->dead)
		fs_node_free(fs, n);
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
	if (fs_resolve(fs, ino, &t) < 0) {
		fuse_reply_err(freq, ENOENT);
		return;
	}
	handle *h = fi && fi->fh ? (handle *)(uintptr_t)fi->fh : NULL;
	mfs_file_info info;
	if (t.kind == N_RFILE && t.sub == RF_INPUT && t.writers == 0 &&
	    mfs_request_find_file(t.req, t.name, &info) != MFS_FILE_INPUT) {
		/* The input's name, kept by the kernel (fs_nodes.c,
		 * entry_timeout()), but no input now (consumed by a run)
		 * and nobody writing one. */
		fuse_reply_err(freq, ENOENT);
		fs_target_release(&t);
		return;
	}
	fs_fill_attr(fs, &t, &st);
	/* A file being written shows what has been written so far. */
	if (h && h->kind == H_INPUT)
		st.st_size = (off_t)h->wlen;
	fuse_reply_attr(freq, &st, fs_is_dir(t.kind) ? STABLE_TIMEOUT : 0.0);
	fs_target_release(&t);
}

/* A size change of an input file open for writing (ftruncate, or the
 * truncate(2) of a file someone has open for writing): shrinking drops
 * bytes, growing adds zero bytes as a write past the end would, up to
 * what --max-request-bytes leaves (EFBIG beyond, the file unchanged).
 * The change is committed at close like a write.  0 or a negative errno. */
static int set_input_size(handle *h, off_t size)
{
	if (size < 0)
		return -EINVAL;
	pthread_mutex_lock(&h->lock);
	int rc = size == 0 ? 0 : fs_input_reclaim(h);
	if (size == 0 && h->handed) {
		h->handed = false;   /* emptied: the handed bytes are not needed */
		h->wlen = 0;
	}
	if (rc < 0) {
		/* the bytes went to a run */
	} else if ((uint64_t)size > h->wlen && (uint64_t)size > mfs_request_room(h->req, h->name)) {
		rc = -EFBIG;
	} else if ((size_t)size > h->wcap) {
		/* The write buffer is charged to --max-memory like a write's. */
		mfs_error err;
		char *nb = NULL;
		if ((rc = mfs_membudget_take((size_t)size - h->wcap, &err)) == 0 &&
		    !(nb = realloc(h->wbuf, (size_t)size))) {
			mfs_membudget_give((size_t)size - h->wcap);
			rc = -ENOMEM;
		}
		if (nb) {
			h->wbuf = nb;
			h->wcap = (size_t)size;
		}
	}
	if (rc == 0) {
		if (size == 0)
			h->refused = 0;   /* emptied: what is written next is judged afresh */
		if ((size_t)size > h->wlen)
			memset(h->wbuf + h->wlen, 0, (size_t)size - h->wlen);
		h->wlen = (size_t)size;
		h->dirty = true;
		h->written = true;
	}
	pthread_mutex_unlock(&h->lock);
	return rc;
}

/* Attributes that can change (docs/FILESYSTEM.md, "Attributes"): the
 * size of an input being written, and times set to now (what stat of a
 * request file shows anyway).  Modes, owners and explicit times are
 * fixed by the filesystem: EPERM. */
static void op_setattr(fuse_req_t freq, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	target t;
	struct stat st;
	int rc = 0;
	if (fs_resolve(fs, ino, &t) < 0) {
		fuse_reply_err(freq, ENOENT);
		return;
	}
	bool input = t.kind == N_RFILE && t.sub == RF_INPUT;
	/* "Now" arrives as ATIME|ATIME_NOW (MTIME likewise); a given time
	 * without _NOW is explicit. */
	bool explicit_time = ((to_set & FUSE_SET_ATTR_ATIME) && !(to_set & FUSE_SET_ATTR_ATIME_NOW)) ||
			     ((to_set & FUSE_SET_ATTR_MTIME) && !(to_set & FUSE_SET_ATTR_MTIME_NOW)) ||
			     (to_set & FUSE_SET_ATTR_CTIME);
	if ((to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) || explicit_time) {
		rc = -EPERM;
	} else if (to_set & FUSE_SET_ATTR_SIZE) {
		handle *h = fi ? (handle *)(uintptr_t)fi->fh : NULL;
		if (!input)
			rc = fs_is_dir(t.kind) ? -EISDIR : -EROFS;
		else if (!h || h->kind != H_INPUT)
			rc = -EINVAL;   /* no open writer whose bytes could change */
		else
			rc = set_input_size(h, attr->st_size);
	}
	if (rc < 0) {
		fuse_reply_err(freq, -rc);
		fs_target_release(&t);
		return;
	}
	fs_fill_attr(fs, &t, &st);
	if (fi && fi->fh && input && ((handle *)(uintptr_t)fi->fh)->kind == H_INPUT)
		st.st_size = (off_t)((handle *)(uintptr_t)fi->fh)->wlen;
	fuse_reply_attr(freq, &st, 0.0);
	fs_target_release(&t);
}

/* ---- request directories ---- */

static void op_mkdir(fuse_req_t freq, fuse_ino_t parent, const char *name, mode_t mode)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	target p;
	mfs_error err;
	(void)mode;
	if (fs_resolve(fs, parent, &p) < 0) {
		fuse_reply_err(freq, ENOENT);
		return;
	}
	if (p.kind != N_REQS) {
		fuse_reply_err(freq, EROFS);   /* a request holds files only */
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
	node *pn = fs_node_find(fs, parent);
	node *c = pn && !pn->dead ? fs_node_child(fs, pn, name) : NULL;
	if (c && !mfs_request_removed(c->req)) {
		pthread_mutex_unlock(&fs->lock);
		mfs_request_put(r);
		fuse_reply_err(freq, EEXIST);
		goto out;
	}
	if (c)
		fs_node_kill(fs, c);
	/* The cap bounds what one model's clients can make the daemon hold
	 * (each request directory keeps its inputs and outputs). */
	node *m = pn && !pn->dead ? fs_node_model(pn) : NULL;
	if (m && fs->conf.max_requests > 0 && m->live_reqs >= fs->conf.max_requests) {
		pthread_mutex_unlock(&fs->lock);
		mfs_request_put(r);
		mfs_log_warn("model '%s' request '%s': refused, the model has %d request directories "
			     "(--max-requests); remove some or let them expire", p.model, name,
			     fs->conf.max_requests);
		fuse_reply_err(freq, ENOSPC);
		goto out;
	}
	/* A user's share of them, so that one user cannot take them all;
	 * root and the daemon's own user are not held to it. */
	const struct fuse_ctx *ctx = fuse_req_ctx(freq);
	int share = fs->conf.max_requests_per_uid;
	if (m && share > 0 && ctx->uid != 0 && ctx->uid != fs->uid &&
	    uid_tally_get(&m->reqs_by_uid, ctx->uid) >= share) {
		pthread_mutex_unlock(&fs->lock);
		mfs_request_put(r);
		mfs_log_warn("model '%s' request '%s': refused, uid %u has %d of the model's request "
			     "directories (--max-requests-per-uid); remove some or let them expire",
			     p.model, name, (unsigned)ctx->uid, share);
		fuse_reply_err(freq, ENOSPC);
		goto out;
	}
	bool counted = m && uid_tally_add(&m->reqs_by_uid, ctx->uid, 1);
	c = (!m || counted) && pn && !pn->dead
		? fs_node_add(fs, pn, name, N_REQ, 0, p.model, p.version, r, 0, 0) : NULL;
	if (!c && counted)
		uid_tally_add(&m->reqs_by_uid, ctx->uid, -1);
	target t;
	if (c) {
		/* The request and its files are its maker's (docs/SECURITY.md). */
		c->uid = ctx->uid;
		c->gid = ctx->gid;
		c->nlookup++;
		fs_fill_target(c, &t);
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
	fs_fill_attr(fs, &t, &e.attr);
	e.attr_timeout = STABLE_TIMEOUT;
	e.entry_timeout = STABLE_TIMEOUT;
	fs_target_release(&t);
	fuse_reply_entry(freq, &e);
out:
	fs_target_release(&p);
}

static void op_rmdir(fuse_req_t freq, fuse_ino_t parent, const char *name)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	target p;
	if (fs_resolve(fs, parent, &p) < 0) {
		fuse_reply_err(freq, ENOENT);
		return;
	}
	if (p.kind != N_REQS) {
		fuse_reply_err(freq, p.kind == N_ROOT || p.kind == N_MODEL || p.kind == N_VERSION ? EROFS : ENOTDIR);
		fs_target_release(&p);
		return;
	}
	int rc = -ENOENT;
	const struct fuse_ctx *ctx = fuse_req_ctx(freq);
	pthread_mutex_lock(&fs->lock);
	node *pn = fs_node_find(fs, parent);
	node *c = pn ? fs_node_child(fs, pn, name) : NULL;
	if (c && ctx->uid != 0 && ctx->uid != c->uid) {
		rc = -EPERM;   /* requests/ is sticky: only the owner removes */
	} else if (c) {
		mfs_request_mark_removed(c->req);
		fs_node_kill(fs, c);
		rc = 0;
	}
	pthread_mutex_unlock(&fs->lock);
	fuse_reply_err(freq, -rc);
	fs_target_release(&p);
}

static void op_unlink(fuse_req_t freq, fuse_ino_t parent, const char *name)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	target p;
	if (fs_resolve(fs, parent, &p) < 0) {
		fuse_reply_err(freq, ENOENT);
		return;
	}
	int rc = p.kind != N_REQ ? (p.kind == N_REQS ? -EISDIR : -EROFS) : fs_may_use(freq, &p);
	if (rc < 0) {
		fuse_reply_err(freq, -rc);
		fs_target_release(&p);
		return;
	}
	mfs_file_info fi;
	if (mfs_request_remove_input(p.req, name) == 0) {
		pthread_mutex_lock(&fs->lock);
		node *pn = fs_node_find(fs, parent);
		node *c = pn ? fs_node_child(fs, pn, name) : NULL;
		if (c)
			fs_node_kill(fs, c);
		pthread_mutex_unlock(&fs->lock);
	} else if (fs_rfile_index(name) < 0 && mfs_request_find_file(p.req, name, &fi) != MFS_FILE_OUTPUT) {
		rc = -ENOENT;
	}
	/* Control and output files are not removable, but `rm -r` must be
	 * able to empty the directory: removing them succeeds and changes
	 * nothing. */
	fuse_reply_err(freq, -rc);
	fs_target_release(&p);
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
		    (rc = add_ent(h, &cap, ".metrics", S_IFREG, UNKNOWN_INO)) < 0 ||
		    (rc = add_ent(h, &cap, ".live", S_IFREG, UNKNOWN_INO)) < 0 ||
		    (rc = add_ent(h, &cap, ".ready", S_IFREG, UNKNOWN_INO)) < 0)
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
		bool gen = fs_is_generator(fs, t->model, t->version);
		for (int i = 0; rc == 0 && i < MF_COUNT; i++)
			if (i != MF_GENERATE || gen)
				rc = add_ent(h, &cap, mfile_names[i], S_IFREG, UNKNOWN_INO);
		if (rc == 0)
			rc = add_ent(h, &cap, "requests", S_IFDIR, UNKNOWN_INO);
		if (rc == 0 && t->kind == N_MODEL && fs->conf.control)
			rc = add_ent(h, &cap, "control", S_IFREG, UNKNOWN_INO);
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
		node *n = fs_node_find(fs, t->ino);
		for (node *c = n ? n->children : NULL; rc == 0 && c; c = c->sibling)
			if (c->req && !mfs_request_removed(c->req))
				rc = add_ent(h, &cap, c->name, S_IFDIR, c->ino);
		pthread_mutex_unlock(&fs->lock);
		return rc;
	}
	case N_REQ: {
		for (int i = 0; rc == 0 && i < 3; i++)
			rc = add_ent(h, &cap, fs_rfile_names[i], S_IFREG, UNKNOWN_INO);
		char **names;
		int n;
		if (rc < 0 || mfs_request_list(t->req, &names, &n) < 0)
			return rc < 0 ? rc : -ENOMEM;
		for (int i = 0; i < n; i++) {
			mfs_file_info fi;
			if (rc == 0) {
				mfs_request_find_file(t->req, names[i], &fi);
				rc = add_ent(h, &cap, names[i], fi.link ? S_IFLNK : S_IFREG, UNKNOWN_INO);
			}
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
	if (fs_resolve(fs, ino, &t) < 0) {
		fuse_reply_err(freq, ENOENT);
		return;
	}
	int rc = fs_is_dir(t.kind) ? fs_may_use(freq, &t) : -ENOTDIR;
	if (rc < 0) {
		fs_target_release(&t);
		fuse_reply_err(freq, -rc);
		return;
	}
	handle *h = fs_handle_new(fs, H_DIR, &t);
	rc = h ? list_dir(fs, &t, h) : -ENOMEM;
	fs_target_release(&t);
	if (rc < 0) {
		if (h)
			fs_handle_free(fs, h);
		fuse_reply_err(freq, -rc);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)h;
	if (fuse_reply_open(freq, fi) != 0)
		fs_handle_free(fs, h);
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
	fs_handle_free(fuse_req_userdata(freq), (handle *)(uintptr_t)fi->fh);
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
	if (fs_resolve(fs, parent, &p) < 0) {
		fuse_reply_err(freq, ENOENT);
		return;
	}
	if (p.kind != N_REQ || newparent != parent) {
		fuse_reply_err(freq, p.kind == N_REQ || p.kind == N_REQS ? EXDEV : EROFS);
		fs_target_release(&p);
		return;
	}
	if (fs_may_use(freq, &p) < 0) {
		fuse_reply_err(freq, EACCES);
		fs_target_release(&p);
		return;
	}
	if (flags) {
		fuse_reply_err(freq, EINVAL);
		fs_target_release(&p);
		return;
	}
	mfs_file_info fi;
	if (fs_rfile_index(newname) >= 0 || mfs_request_find_file(p.req, newname, &fi) == MFS_FILE_OUTPUT) {
		fuse_reply_err(freq, EACCES);
		fs_target_release(&p);
		return;
	}
	mfs_error_clear(&err);
	int rc = mfs_request_rename_file(p.req, name, newname, &err);
	if (rc == 0 || rc == -EAGAIN) {
		pthread_mutex_lock(&fs->lock);
		node *pn = fs_node_find(fs, parent);
		node *c;
		if (pn && (c = fs_node_child(fs, pn, name)))
			fs_node_kill(fs, c);
		if (pn && (c = fs_node_child(fs, pn, newname)))
			fs_node_kill(fs, c);
		pthread_mutex_unlock(&fs->lock);
	}
	fuse_reply_err(freq, -rc);
	fs_target_release(&p);
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
	.symlink = fs_op_symlink,
	.readlink = fs_op_readlink,
	.open = fs_op_open,
	.create = fs_op_create,
	.read = fs_op_read,
	.write = fs_op_write,
	.flush = fs_op_flush,
	.release = fs_op_release,
	.fsync = fs_op_fsync,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.releasedir = op_releasedir,
};

const struct fuse_lowlevel_ops *mfs_fs_ops(void)
{
	return &ops;
}


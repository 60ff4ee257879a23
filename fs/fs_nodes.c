/* fs_nodes.c - the inode table of the FUSE layer, what operations copy
 * out of it (targets), attributes, open-file handles, and the layer's life
 * (new, expiry, free).
 *
 * Inode numbers are allocated from a counter and map to nodes through a
 * hash table, so a stale number from the kernel finds nothing instead of
 * freed memory.  Every operation copies what it needs of its node into a
 * target under fs->lock and works without it (lock order: fs->lock, then
 * a request's lock; never the other way).
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

#define BLKSIZE (1u << 20)

const char *const fs_rfile_names[] = { "status", "error", "trace.json" };

/* ---- the inode table (fs->lock held) ---- */

static size_t bucket(const mfs_fs *fs, fuse_ino_t ino)
{
	return (size_t)(ino * 0x9E3779B97F4A7C15ull >> 20) % fs->n_buckets;
}

node *fs_node_find(mfs_fs *fs, fuse_ino_t ino)
{
	for (node *n = fs->buckets[bucket(fs, ino)]; n; n = n->hnext)
		if (n->ino == ino)
			return n;
	return NULL;
}

node *fs_node_child(node *parent, const char *name)
{
	for (node *c = parent->children; c; c = c->sibling)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

void fs_node_free(mfs_fs *fs, node *n)
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

node *fs_node_add(mfs_fs *fs, node *parent, const char *name, nkind kind,
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
void fs_node_kill(mfs_fs *fs, node *n)
{
	if (n->dead)
		return;
	n->dead = true;
	while (n->children)
		fs_node_kill(fs, n->children);
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
		fs_node_free(fs, n);
}

/* Copy what an operation needs (fs->lock held). */
void fs_fill_target(const node *n, target *t)
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

void fs_target_release(target *t)
{
	if (t->req)
		mfs_request_put(t->req);
	t->req = NULL;
}

/* Is the model (and the pinned version) still served? */
int fs_model_alive(mfs_fs *fs, const char *model, int64_t version)
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
int fs_resolve(mfs_fs *fs, fuse_ino_t ino, target *t)
{
	pthread_mutex_lock(&fs->lock);
	node *n = fs_node_find(fs, ino);
	if (!n || n->dead) {
		pthread_mutex_unlock(&fs->lock);
		return -ENOENT;
	}
	fs_fill_target(n, t);
	pthread_mutex_unlock(&fs->lock);
	if (t->req) {
		if (mfs_request_removed(t->req)) {
			fs_target_release(t);
			return -ENOENT;
		}
		mfs_request_touch(t->req);
		return 0;
	}
	if (t->kind != N_ROOT && t->kind != N_INDEX && t->kind != N_METRICS &&
	    fs_model_alive(fs, t->model, t->version) < 0)
		return -ENOENT;
	return 0;
}

/* ---- attributes ---- */

bool fs_is_dir(nkind k)
{
	return k == N_ROOT || k == N_MODEL || k == N_VERSION || k == N_REQS || k == N_REQ;
}

void fs_fill_attr(mfs_fs *fs, const target *t, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = t->ino;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_blksize = BLKSIZE;
	st->st_atim = st->st_mtim = st->st_ctim = fs->start;
	if (fs_is_dir(t->kind)) {
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

/* How long the kernel may keep a name.  Request directories and their
 * control and output files keep theirs for STABLE_TIMEOUT: they go away
 * by rmdir/unlink through the kernel (which drops the name itself) or by
 * expiry (which tells the kernel, mfs_fs_expire).  Input files are not
 * cached: a run consumes them behind the kernel's back. */
static double entry_timeout(nkind parent_kind, nkind kind, int sub)
{
	if (parent_kind == N_REQ && kind == N_RFILE && sub == RF_INPUT)
		return 0.0;
	return STABLE_TIMEOUT;
}

/* Find or make the child node and answer the lookup-like request. */
void fs_reply_child(mfs_fs *fs, fuse_req_t freq, fuse_ino_t parent, nkind pkind,
			const char *name, nkind kind, int sub, const char *model,
			int64_t version, mfs_request *req, int idx, mfs_format fmt)
{
	struct fuse_entry_param e;
	target t;
	pthread_mutex_lock(&fs->lock);
	node *p = fs_node_find(fs, parent);
	if (!p || p->dead) {
		pthread_mutex_unlock(&fs->lock);
		fuse_reply_err(freq, ENOENT);
		return;
	}
	node *c = fs_node_child(p, name);
	if (c && (c->kind != kind || c->sub != sub || c->idx != idx || c->fmt != fmt)) {
		fs_node_kill(fs, c);
		c = NULL;
	}
	if (!c)
		c = fs_node_add(fs, p, name, kind, sub, model, version, req, idx, fmt);
	if (!c) {
		pthread_mutex_unlock(&fs->lock);
		fuse_reply_err(freq, ENOMEM);
		return;
	}
	c->nlookup++;
	fs_fill_target(c, &t);
	pthread_mutex_unlock(&fs->lock);
	memset(&e, 0, sizeof(e));
	e.ino = t.ino;
	e.generation = 1;
	fs_fill_attr(fs, &t, &e.attr);
	e.attr_timeout = fs_is_dir(kind) ? STABLE_TIMEOUT : 0.0;
	e.entry_timeout = entry_timeout(pkind, kind, sub);
	fs_target_release(&t);
	fuse_reply_entry(freq, &e);
}

int fs_mfile_index(const char *name)
{
	for (int i = 0; i < MF_COUNT; i++)
		if (strcmp(name, mfile_names[i]) == 0)
			return i;
	return -1;
}

int fs_rfile_index(const char *name)
{
	for (int i = 0; i < 3; i++)
		if (strcmp(name, fs_rfile_names[i]) == 0)
			return i;
	return -1;
}

/* An output file name "OUTPUT0.EXT": its index and format, or -1. */
int fs_output_file(mfs_request *r, const char *name, mfs_format *fmt)
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

/* ---- open files ---- */

handle *fs_handle_new(mfs_fs *fs, hkind kind, const target *t)
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

void fs_handle_free(mfs_fs *fs, handle *h)
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
	mfs_membudget_give(h->wcap);
	for (size_t i = 0; i < h->n_ents; i++)
		free(h->ents[i].name);
	free(h->ents);
	mfs_infer_req_release(&h->ireq);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

void fs_set_handle(struct fuse_file_info *fi, handle *h)
{
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	if (h->kind == H_INFER)
		fi->nonseekable = 1;
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
	if (!fs->buckets || !(fs->root = fs_node_add(fs, NULL, "", N_ROOT, 0, NULL, 0, NULL, 0, 0))) {
		mfs_fs_free(fs);
		return mfs_fail(err, ENOMEM, "out of memory");
	}
	fs->root->nlookup = 1;
	*out = fs;
	return 0;
}

void mfs_fs_set_session(mfs_fs *fs, struct fuse_session *se)
{
	fs->se = se;
}

void mfs_fs_model_changed(mfs_fs *fs, const char *model)
{
	/* Collect (parent, name) pairs under the lock; notify without it (the
	 * kernel may call back into the filesystem while we notify). */
	struct { fuse_ino_t parent; char name[32]; } vers[64];
	int nv = 0;
	fuse_ino_t model_ino = 0;
	if (!fs->se)
		return;
	pthread_mutex_lock(&fs->lock);
	node *m = fs_node_child(fs->root, model);
	if (m) {
		model_ino = m->ino;
		for (node *c = m->children; c && nv < 64; c = c->sibling)
			if (c->kind == N_VERSION) {
				vers[nv].parent = m->ino;
				snprintf(vers[nv].name, sizeof(vers[nv].name), "%s", c->name);
				nv++;
			}
	}
	pthread_mutex_unlock(&fs->lock);
	for (int i = 0; i < nv; i++)
		fuse_lowlevel_notify_inval_entry(fs->se, vers[i].parent, vers[i].name, strlen(vers[i].name));
	if (model_ino)
		fuse_lowlevel_notify_inval_inode(fs->se, model_ino, 0, 0);
	fuse_lowlevel_notify_inval_entry(fs->se, FUSE_ROOT_ID, model, strlen(model));
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

typedef struct gone {
	fuse_ino_t parent;
	char name[72];
} gone;

/* Remove idle request directories below n (fs->lock held); remember up
 * to max of them in out for the kernel. */
static void expire_below(mfs_fs *fs, node *n, uint64_t now, gone *out, int *n_out, int max)
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
				if (*n_out < max) {
					out[*n_out].parent = n->ino;
					snprintf(out[*n_out].name, sizeof(out[*n_out].name), "%s", c->name);
					(*n_out)++;
				}
				mfs_request_mark_removed(c->req);
				fs_node_kill(fs, c);
			}
		} else if (c->kind == N_MODEL || c->kind == N_VERSION || c->kind == N_REQS) {
			expire_below(fs, c, now, out, n_out, max);
		}
	}
}

void mfs_fs_expire(mfs_fs *fs)
{
	gone g[256];
	int n = 0;
	pthread_mutex_lock(&fs->lock);
	expire_below(fs, fs->root, mfs_now_ns(), g, &n, 256);
	pthread_mutex_unlock(&fs->lock);
	/* Not a FUSE thread, no lock held: the kernel may call back. */
	for (int i = 0; fs->se && i < n; i++)
		fuse_lowlevel_notify_inval_entry(fs->se, g[i].parent, g[i].name, strlen(g[i].name));
	fs_expire_reads(fs);
}

void mfs_fs_free(mfs_fs *fs)
{
	if (!fs)
		return;
	mfs_fs_cancel_reads(fs, EINTR);
	while (fs->handles)
		fs_handle_free(fs, fs->handles);
	for (size_t b = 0; fs->buckets && b < fs->n_buckets; b++)
		while (fs->buckets[b])
			fs_node_free(fs, fs->buckets[b]);
	free(fs->buckets);
	pthread_mutex_destroy(&fs->lock);
	pthread_mutex_destroy(&fs->wlock);
	pthread_mutex_destroy(&fs->hlock);
	free(fs);
}


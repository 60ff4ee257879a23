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

#include "bigbuf.h"
#include "fs_internal.h"
#include "log.h"
#include "membudget.h"
#include "metrics.h"
#include "repo.h"

#define BLKSIZE (1u << 20)

const char *const fs_rfile_names[] = { "status", "error", "trace.json" };

/* ---- the node tables (fs->lock held) ---- */

#define FIRST_BUCKETS 4096

static size_t ino_hash(fuse_ino_t ino)
{
	return (size_t)(ino * 0x9E3779B97F4A7C15ull >> 17);
}

/* FNV-1a over the name, seeded with the parent's ino. */
static size_t name_hash(fuse_ino_t parent, const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull ^ (parent * 0x9E3779B97F4A7C15ull);
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	return (size_t)(h ^ h >> 29);
}

static node **ino_link(node *n) { return &n->hnext; }
static node **name_link(node *n) { return &n->nnext; }

static size_t node_hash(const node_table *t, const node *n, bool by_name)
{
	(void)t;
	return by_name ? name_hash(n->parent ? n->parent->ino : 0, n->name) : ino_hash(n->ino);
}

/* Double the buckets once the table holds twice as many nodes as it has
 * buckets; a failed allocation keeps the old table (longer chains, still
 * correct). */
static void table_grow(node_table *t, bool by_name)
{
	if (t->count < 2 * t->n_buckets)
		return;
	size_t nb = t->n_buckets * 2;
	node **b = calloc(nb, sizeof(*b));
	if (!b)
		return;
	for (size_t i = 0; i < t->n_buckets; i++)
		for (node *n = t->b[i], *next; n; n = next) {
			node **link = by_name ? name_link(n) : ino_link(n);
			next = *link;
			size_t k = node_hash(t, n, by_name) % nb;
			*link = b[k];
			b[k] = n;
		}
	free(t->b);
	t->b = b;
	t->n_buckets = nb;
}

static void table_insert(node_table *t, node *n, bool by_name)
{
	table_grow(t, by_name);
	size_t k = node_hash(t, n, by_name) % t->n_buckets;
	node **link = by_name ? name_link(n) : ino_link(n);
	*link = t->b[k];
	t->b[k] = n;
	t->count++;
}

static void table_remove(node_table *t, node *n, bool by_name)
{
	node **p = &t->b[node_hash(t, n, by_name) % t->n_buckets];
	while (*p && *p != n)
		p = by_name ? name_link(*p) : ino_link(*p);
	if (*p) {
		*p = by_name ? n->nnext : n->hnext;
		t->count--;
	}
}

node *fs_node_find(mfs_fs *fs, fuse_ino_t ino)
{
	for (node *n = fs->inos.b[ino_hash(ino) % fs->inos.n_buckets]; n; n = n->hnext)
		if (n->ino == ino)
			return n;
	return NULL;
}

node *fs_node_child(mfs_fs *fs, node *parent, const char *name)
{
	for (node *c = fs->names.b[name_hash(parent->ino, name) % fs->names.n_buckets]; c; c = c->nnext)
		if (c->parent == parent && strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

node *fs_node_model(node *n)
{
	while (n && n->kind != N_MODEL)
		n = n->parent;
	return n;
}

void fs_node_free(mfs_fs *fs, node *n)
{
	table_remove(&fs->inos, n, false);
	if (n->req)
		mfs_request_put(n->req);
	uid_tally_release(&n->reqs_by_uid);
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
	/* A request's files belong to whoever made the request (mkdir sets
	 * the request directory's owner); the rest to the daemon. */
	bool in_req = parent && parent->kind == N_REQ;
	n->uid = in_req ? parent->uid : fs->uid;
	n->gid = in_req ? parent->gid : fs->gid;
	n->parent = parent;
	if (parent) {
		n->sibling = parent->children;
		if (n->sibling)
			n->sibling->sibling_pp = &n->sibling;
		parent->children = n;
		n->sibling_pp = &parent->children;
		table_insert(&fs->names, n, true);
	}
	if (kind == N_REQ) {
		node *m = fs_node_model(parent);
		n->rnext = fs->reqs;
		if (n->rnext)
			n->rnext->rpp = &n->rnext;
		fs->reqs = n;
		n->rpp = &fs->reqs;
		fs->n_reqs++;
		if (m)
			m->live_reqs++;
	}
	table_insert(&fs->inos, n, false);
	return n;
}

/* The object behind n is gone: it leaves the tree now (every list but
 * fs->inos, each in O(1)) and memory when the kernel forgets it. */
void fs_node_kill(mfs_fs *fs, node *n)
{
	if (n->dead)
		return;
	n->dead = true;
	while (n->children)
		fs_node_kill(fs, n->children);
	if (n->kind == N_REQ && n->rpp) {
		node *m = fs_node_model(n->parent);
		if (m) {
			m->live_reqs--;
			uid_tally_add(&m->reqs_by_uid, n->uid, -1);
		}
		*n->rpp = n->rnext;
		if (n->rnext)
			n->rnext->rpp = n->rpp;
		n->rnext = NULL;
		n->rpp = NULL;
		fs->n_reqs--;
	}
	if (n->parent) {
		table_remove(&fs->names, n, true);
		*n->sibling_pp = n->sibling;
		if (n->sibling)
			n->sibling->sibling_pp = n->sibling_pp;
		n->parent = NULL;
		n->sibling = NULL;
		n->sibling_pp = NULL;
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
		fs_copy_str(t->model, sizeof(t->model), n->model);
	t->version = n->version;
	t->req = n->req;
	if (t->req)
		mfs_request_get(t->req);
	t->idx = n->idx;
	t->fmt = n->fmt;
	t->uid = n->uid;
	t->gid = n->gid;
	t->writers = n->writers;
	fs_copy_str(t->name, sizeof(t->name), n->name);
}

bool fs_request_file_node(mfs_fs *fs, fuse_ino_t parent, const target *p, const char *name,
			  int sub, target *t)
{
	pthread_mutex_lock(&fs->lock);
	node *pn = fs_node_find(fs, parent);
	node *c = pn && !pn->dead ? fs_node_child(fs, pn, name) : NULL;
	if (c && (c->kind != N_RFILE || c->sub != sub)) {
		fs_node_kill(fs, c);
		c = NULL;
	}
	if (!c && pn && !pn->dead)
		c = fs_node_add(fs, pn, name, N_RFILE, sub, p->model, p->version, p->req, 0, 0);
	if (c) {
		c->nlookup++;
		fs_fill_target(c, t);
	}
	pthread_mutex_unlock(&fs->lock);
	return c != NULL;
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
		if (!mfs_request_use(t->req)) {
			fs_target_release(t);
			return -ENOENT;
		}
		return 0;
	}
	if (t->kind != N_ROOT && t->kind != N_INDEX && t->kind != N_METRICS && t->kind != N_HEALTH &&
	    fs_model_alive(fs, t->model, t->version) < 0)
		return -ENOENT;
	return 0;
}

/* ---- attributes ---- */

bool fs_is_dir(nkind k)
{
	return k == N_ROOT || k == N_MODEL || k == N_VERSION || k == N_REQS || k == N_REQ;
}

int fs_may_use(fuse_req_t freq, const target *t)
{
	if (t->kind != N_REQ && t->kind != N_RFILE)
		return 0;
	const struct fuse_ctx *ctx = fuse_req_ctx(freq);
	return ctx->uid == 0 || ctx->uid == t->uid ? 0 : -EACCES;
}

/* Modes (docs/SECURITY.md): requests/ is like /tmp (anyone makes a
 * request, only its owner removes it), a request and its files are its
 * owner's alone; the rest is read-only to all, infer read-write to all
 * (each open is its own session). */
void fs_fill_attr(mfs_fs *fs, const target *t, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = t->ino;
	st->st_uid = t->uid;
	st->st_gid = t->gid;
	st->st_blksize = BLKSIZE;
	st->st_atim = st->st_mtim = st->st_ctim = fs->start;
	if (fs_is_dir(t->kind)) {
		st->st_mode = S_IFDIR | (t->kind == N_REQS ? 01777 : t->kind == N_REQ ? 0700 : 0555);
		st->st_nlink = 2;
		return;
	}
	st->st_nlink = 1;
	int64_t size = 0;
	mode_t mode = t->kind == N_RFILE ? 0400 : 0444;
	if (t->kind == N_MFILE && (t->sub == MF_INFER || t->sub == MF_GENERATE)) {
		mode = 0666;
	} else if (t->kind == N_CONTROL) {
		mode = 0200;   /* the daemon's user (and root) load and unload */
	} else if (t->kind == N_RFILE && t->sub == RF_INPUT) {
		mfs_file_info fi;
		mode = 0600;
		mfs_request_find_file(t->req, t->name, &fi);
		size = fi.size;
	} else if (t->kind == N_RFILE && t->sub == RF_OUTPUT) {
		size = mfs_request_output_size(t->req, t->idx, t->fmt);
	} else if (t->kind == N_RFILE && t->sub == RF_LINK) {
		/* A symlink's size is its text's length; its mode is not
		 * used (the target's is). */
		char *link = mfs_request_input_link(t->req, t->name);
		st->st_mode = S_IFLNK | 0777;
		st->st_size = link ? (off_t)strlen(link) : 0;
		free(link);
		return;
	} else {
		char *buf = NULL;
		size_t len = 0;
		if (fs_content(fs, t, &buf, &len) == 0)
			size = (int64_t)len;
		free(buf);
	}
	if (t->kind == N_RFILE || t->kind == N_MFILE || t->kind == N_INDEX || t->kind == N_METRICS ||
	    t->kind == N_HEALTH)
		clock_gettime(CLOCK_REALTIME, &st->st_mtim);
	st->st_ctim = st->st_mtim;
	st->st_mode = S_IFREG | mode;
	st->st_size = size > 0 ? size : 0;
	st->st_blocks = (st->st_size + 511) / 512;
}

/* How long the kernel may keep a name.  Request directories and their
 * files keep theirs for STABLE_TIMEOUT: they go away by rmdir/unlink
 * through the kernel (which drops the name itself) or by expiry (which
 * tells the kernel, mfs_fs_expire).  An input file's node stands for its
 * name in the request, present or not: a run consumes the input behind
 * the kernel's back, and the node answers for the absent file (getattr
 * and a read-only open ENOENT, an open for writing starts it anew), so
 * a client that writes the same inputs again and again makes no lookup
 * (a cached entry: the kernel sends the open straight away; an entry
 * the kernel must look up again costs two LOOKUPs and a FORGET per
 * file).  Opens that must see a name absent (O_EXCL, symlink, mkdir,
 * rename) make the kernel look up again, and a lookup of an absent
 * input answers ENOENT.  Inputs committed by symlink are not cached:
 * the kernel would refuse a new symlink over a cached one itself. */
static double entry_timeout(nkind parent_kind, nkind kind, int sub)
{
	if (parent_kind == N_REQ && kind == N_RFILE && sub == RF_LINK)
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
	node *c = fs_node_child(fs, p, name);
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

/* ---- open files ---- */

/* An input being written exists for getattr before its first commit
 * (fs_ops.c, op_getattr): `cp` fstat()s the file it created, and the
 * kernel's GETATTR does not say through which open file. */
static void count_writer(mfs_fs *fs, fuse_ino_t ino, int d)
{
	pthread_mutex_lock(&fs->lock);
	node *n = fs_node_find(fs, ino);
	if (n)
		n->writers += d;
	pthread_mutex_unlock(&fs->lock);
}

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
	if (kind == H_INPUT)
		count_writer(fs, t->ino, 1);
	pthread_mutex_init(&h->lock, NULL);
	h->kind = kind;
	h->ino = t->ino;
	fs_copy_str(h->name, sizeof(h->name), t->name);
	if (t->req) {
		mfs_request_get(t->req);
		h->req = t->req;
	}
	h->idx = t->idx;
	h->fmt = t->fmt;
	h->fmt_in = kind == H_INPUT && t->name[0] != '.' ? mfs_format_split_filename(t->name, &(size_t){ 0 }) : -1;
	fs_copy_str(h->model, sizeof(h->model), t->model);
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
	if (h->kind == H_INPUT)
		count_writer(fs, h->ino, -1);
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
	/* An output's encoding and an input's write buffer are the large
	 * ones: kept for the next request (bigbuf.h). */
	mfs_bigbuf_free(h->content);
	mfs_bigbuf_free(h->wbuf);
	mfs_membudget_give(h->wcap);
	for (size_t i = 0; i < h->n_ents; i++)
		free(h->ents[i].name);
	free(h->ents);
	mfs_infer_req_release(&h->ireq);
	if (h->gen && h->kind == H_GENERATE)
		mfs_gen_cancel(h->gen);   /* a closed session wants no more ids */
	mfs_gen_put(h->gen);
	if (h->gv)
		mfs_version_put(h->gv);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

void fs_set_handle(struct fuse_file_info *fi, handle *h)
{
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	/* Only an input does anything at close (its commit): the others'
	 * close() sends no FLUSH (FOPEN_NOFLUSH, Linux 5.19+; older kernels
	 * ignore it and flush does nothing for them). */
	fi->noflush = h->kind != H_INPUT;
	if (h->kind == H_INFER || h->kind == H_GENERATE)
		fi->nonseekable = 1;
}

/* ---- life ---- */

int mfs_fs_new(const mfs_fs_conf *conf, mfs_fs **out, mfs_error *err)
{
	mfs_fs *fs = calloc(1, sizeof(*fs));
	if (!fs)
		return mfs_fail(err, ENOMEM, "out of memory");
	fs->conf = *conf;
	fs->inos.n_buckets = fs->names.n_buckets = FIRST_BUCKETS;
	fs->inos.b = calloc(FIRST_BUCKETS, sizeof(node *));
	fs->names.b = calloc(FIRST_BUCKETS, sizeof(node *));
	pthread_mutex_init(&fs->lock, NULL);
	pthread_mutex_init(&fs->wlock, NULL);
	pthread_mutex_init(&fs->hlock, NULL);
	fs->next_ino = FUSE_ROOT_ID;
	fs->uid = getuid();
	fs->gid = getgid();
	fs->accepting = true;
	clock_gettime(CLOCK_REALTIME, &fs->start);
	if (!fs->inos.b || !fs->names.b || !(fs->root = fs_node_add(fs, NULL, "", N_ROOT, 0, NULL, 0, NULL, 0, 0))) {
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
	node *m = fs_node_child(fs, fs->root, model);
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

/* Expiry, in three steps so that fs->lock is never held while requests
 * are asked anything (a request's lock can be held by a run ending) and
 * never for long: (1) under fs->lock, copy the live request directories
 * (ino and a reference); (2) without it, ask each request whether it is
 * idle past the TTL; (3) under fs->lock again, in batches, remove those
 * that are still the same node and still idle (asked again: cheap, and
 * only for those about to go), and tell the kernel without the lock. */
typedef struct candidate {
	fuse_ino_t ino, parent;
	mfs_request *req;             /* a reference */
} candidate;

#define EXPIRE_BATCH 1024

static void expire_requests(mfs_fs *fs, uint64_t now)
{
	pthread_mutex_lock(&fs->lock);
	size_t n = 0, cap = fs->n_reqs;
	candidate *c = cap ? malloc(cap * sizeof(*c)) : NULL;
	for (node *r = fs->reqs; c && r && n < cap; r = r->rnext) {
		mfs_request_get(r->req);
		c[n++] = (candidate){ r->ino, r->parent ? r->parent->ino : 0, r->req };
	}
	pthread_mutex_unlock(&fs->lock);

	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		/* last_use may be later than now (touched meanwhile): no
		 * unsigned subtraction here. */
		if (!mfs_request_busy(c[i].req) &&
		    mfs_request_last_use(c[i].req) + fs->conf.request_ttl_ns < now)
			c[k++] = c[i];
		else
			mfs_request_put(c[i].req);
	}

	for (size_t at = 0; at < k; at += EXPIRE_BATCH) {
		size_t end = at + EXPIRE_BATCH < k ? at + EXPIRE_BATCH : k;
		pthread_mutex_lock(&fs->lock);
		for (size_t i = at; i < end; i++) {
			node *r = fs_node_find(fs, c[i].ino);
			/* Gone, or used since step 2: nothing to do or tell.
			 * (fs->lock, then a request's lock: the allowed order.) */
			if (!r || r->dead || r->req != c[i].req || mfs_request_busy(r->req) ||
			    mfs_request_last_use(r->req) + fs->conf.request_ttl_ns >= now) {
				c[i].parent = 0;
				continue;
			}
			mfs_request_mark_removed(r->req);
			fs_node_kill(fs, r);
		}
		pthread_mutex_unlock(&fs->lock);
		/* Not a FUSE thread, no lock held: the kernel may call back. */
		for (size_t i = at; i < end; i++) {
			const char *name = mfs_request_name(c[i].req);
			if (c[i].parent) {
				const mfs_version *v = mfs_request_version(c[i].req);
				mfs_log_info("model '%s' request '%s': removed after %" PRIu64 " s unused",
					     v->model_name, name, fs->conf.request_ttl_ns / 1000000000u);
				if (fs->se)
					fuse_lowlevel_notify_inval_entry(fs->se, c[i].parent, name, strlen(name));
			}
			mfs_request_put(c[i].req);
		}
	}
	free(c);
}

void mfs_fs_expire(mfs_fs *fs)
{
	expire_requests(fs, mfs_now_ns());
	fs_expire_reads(fs);
}

void mfs_fs_free(mfs_fs *fs)
{
	if (!fs)
		return;
	mfs_fs_cancel_reads(fs, EINTR);
	while (fs->handles)
		fs_handle_free(fs, fs->handles);
	for (size_t b = 0; fs->inos.b && b < fs->inos.n_buckets; b++)
		while (fs->inos.b[b])
			fs_node_free(fs, fs->inos.b[b]);
	free(fs->inos.b);
	free(fs->names.b);
	pthread_mutex_destroy(&fs->lock);
	pthread_mutex_destroy(&fs->wlock);
	pthread_mutex_destroy(&fs->hlock);
	free(fs);
}


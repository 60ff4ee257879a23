/* fs_internal.h - shared between the FUSE layer's files:
 *   fs_ops.c      the operations table and the name operations (lookup,
 *                 attributes, mkdir/rmdir/unlink/rename, listings)
 *   fs_files.c    the file operations (open, create, read, write, flush,
 *                 release, fsync) and infer sessions
 *   fs_nodes.c    the inode table, targets, attributes, open-file handles,
 *                 and the layer's life (new, expiry, free)
 *   fs_content.c  the text of synthetic files
 *   fs_wait.c     reads that wait for a run
 *   fs_answer.c   the answer to a read of a run's result (now or woken),
 *                 and the reply helpers
 *   fs_link.c     inputs handed over by symlink
 *   fs_generate.c the generate file and $req/output_ids.txt (generate.h)
 * Calls go down this order and never back: fs_ops.c; fs_files.c and
 * fs_link.c; fs_generate.c; fs_nodes.c (the layer's life cancels and expires the
 * waits); fs_wait.c; fs_answer.c and fs_content.c
 * (tests/layers/check-cycles.sh).
 */
#ifndef MFS_FS_INTERNAL_H
#define MFS_FS_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "codec.h"
#include "fs.h"
#include "generate.h"
#include "infer_json.h"
#include "request.h"
#include "uid_tally.h"

typedef enum nkind {
	N_ROOT, N_INDEX, N_METRICS, N_MODEL, N_VERSION, N_MFILE, N_REQS, N_REQ, N_RFILE,
	N_CONTROL,                    /* MODEL/control (explicit model control only) */
	N_HEALTH,                     /* .live (sub 0) and .ready (sub 1) */
} nkind;

typedef enum mfile { MF_CONFIG, MF_METADATA, MF_STATUS, MF_STATS, MF_INFER, MF_GENERATE, MF_COUNT } mfile;
/* RF_LINK: an input committed by symlink (fs_link.c), a symlink to the
 * kernel while the request holds it.  RF_GENOUT: a generator's
 * output_ids.txt (fs_generate.c). */
typedef enum rfile { RF_STATUS, RF_ERROR, RF_TRACE, RF_INPUT, RF_OUTPUT, RF_LINK, RF_GENOUT } rfile;

extern const char *const mfile_names[MF_COUNT];

/* An inode.  Every node is in fs->inos (by ino) until freed; a live
 * node is also in fs->names (by parent and name) and its parent's child
 * list, and a live request directory in fs->reqs.  A dead node (its
 * object is gone) leaves all but fs->inos at once, in O(1), and is freed
 * when the kernel forgets it.  fs->lock protects every field but the
 * immutable ones (ino, kind, sub, model, version, req, idx, fmt, name). */
typedef struct node {
	fuse_ino_t ino;
	uint64_t nlookup;
	struct node *parent;          /* NULL once dead or for the root */
	struct node *children;
	struct node *sibling, **sibling_pp;   /* the parent's list: doubly linked */
	struct node *hnext;           /* fs->inos chain */
	struct node *nnext;           /* fs->names chain */
	struct node *rnext, **rpp;    /* fs->reqs (N_REQ only) */
	int live_reqs;                /* N_MODEL: live request directories below */
	uid_tally reqs_by_uid;        /* N_MODEL: the same, per owner */
	int writers;                  /* RF_INPUT: H_INPUT handles open on it */
	uid_t uid;                    /* owner: who made the request (N_REQ and below), else the daemon's */
	gid_t gid;
	char *name;
	nkind kind;
	int sub;                      /* mfile or rfile */
	char *model;                  /* model-level nodes and below */
	int64_t version;              /* 0 = unpinned (current version) */
	mfs_request *req;             /* N_REQ, N_RFILE: a reference */
	int idx;                      /* RF_OUTPUT: config output index */
	mfs_format fmt;               /* RF_OUTPUT */
	bool dead;
} node;

/* What an operation needs of a node, copied out under fs->lock so the
 * operation runs without it. */
typedef struct target {
	fuse_ino_t ino;
	nkind kind;
	int sub;
	char model[128];
	int64_t version;
	mfs_request *req;             /* a reference, or NULL */
	int idx;
	mfs_format fmt;
	uid_t uid;
	gid_t gid;
	int writers;                  /* node.writers */
	char name[256];
} target;

/* snprintf(dst, size, "%s", src) without printf: targets and handles
 * copy names at every operation. */
static inline void fs_copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* Open-file state (fi->fh). */
/* H_GENERATE: a session of the generate file; H_GENOUT: output_ids.txt. */
typedef enum hkind { H_STATIC, H_INPUT, H_OUTPUT, H_INFER, H_DIR, H_CONTROL, H_GENERATE, H_GENOUT } hkind;

typedef struct dirent_ {
	char *name;
	mode_t type;
	fuse_ino_t ino;
} dirent_;

typedef struct handle {
	hkind kind;
	pthread_mutex_t lock;
	mfs_request *req;             /* H_INPUT, H_OUTPUT, H_INFER (session's) */
	fuse_ino_t ino;
	char name[256];
	/* H_STATIC: snapshot; H_OUTPUT: encoded result once read; H_INFER: response */
	char *content;
	size_t len;
	bool have_content;
	int idx;
	mfs_format fmt;
	uint64_t run;                 /* H_OUTPUT: the run it reads (mfs_request_run_id at open) */
	/* H_INPUT: the bytes written so far; H_INFER: the request body */
	char *wbuf;
	size_t wlen, wcap;
	bool dirty;                   /* changed since the last commit */
	bool written;                 /* a write() came since the last commit (H_CONTROL: since open) */
	bool handed;                  /* H_INPUT: wbuf went to the request at its last commit
					 (fs_input_reclaim gets the bytes back to write more) */
	int refused;                  /* H_INPUT: errno that refused the file at a write;
					 H_CONTROL: that of its failed command (0: none) */
	int fmt_in;                   /* H_INPUT: the format its name gives, -1 for a temporary */
	/* H_INFER */
	char model[128];
	int64_t version;
	mfs_infer_req ireq;
	bool inflight;                /* a run of this session is pending */
	size_t rpos;                  /* response bytes already read */
	/* H_GENERATE, H_GENOUT: the generation read (a reference), the ids
	 * already rendered into content, and whether its end was */
	mfs_gen *gen;
	mfs_version *gv;              /* H_GENERATE: the version it runs on (a reference) */
	size_t gtok;
	bool gstream, gended;
	/* H_DIR */
	dirent_ *ents;
	size_t n_ents;
	/* fs->handles, under fs->hlock: what is still open at shutdown is
	 * freed by mfs_fs_free. */
	struct handle *hnext, *hprev;
} handle;

/* A hash table of nodes, grown as it fills (chains stay short with
 * 100,000 request directories). */
typedef struct node_table {
	node **b;
	size_t n_buckets, count;
} node_table;

struct mfs_fs {
	mfs_fs_conf conf;
	pthread_mutex_t lock;         /* the node tables, child lists, fs->reqs */
	node_table inos;              /* every node, by ino */
	node_table names;             /* live nodes, by (parent ino, name) */
	node *reqs;                   /* live request directories */
	size_t n_reqs;
	fuse_ino_t next_ino;
	node *root;
	uid_t uid;
	gid_t gid;
	struct timespec start;
	bool accepting;               /* atomic */
	/* Stored reads (fs_wait.c). */
	pthread_mutex_t wlock;
	struct fwait *waits;
	uint64_t infer_seq;           /* atomic: names of infer sessions */
	pthread_mutex_t hlock;
	handle *handles;
	struct fuse_session *se;      /* for cache invalidation; NULL until set */
};

#define STABLE_TIMEOUT 1.0   /* names only a reload changes (mfs_fs_model_changed invalidates them) */

/* fs_nodes.c: the inode table (fs->lock held for the node_* functions). */
extern const char *const fs_rfile_names[3];
node *fs_node_find(mfs_fs *fs, fuse_ino_t ino);
node *fs_node_child(mfs_fs *fs, node *parent, const char *name);   /* live children only */
/* The model directory node above n (n itself for N_MODEL), or NULL. */
node *fs_node_model(node *n);
node *fs_node_add(mfs_fs *fs, node *parent, const char *name, nkind kind,
		  int sub, const char *model, int64_t version,
		  mfs_request *req, int idx, mfs_format fmt);
/* The object is gone: out of the tree now, freed once forgotten. */
void fs_node_kill(mfs_fs *fs, node *n);
void fs_node_free(mfs_fs *fs, node *n);
void fs_fill_target(const node *n, target *t);
/* The node of file name (an rfile of kind sub) in the request directory
 * p (ino parent) that a create or symlink makes: the existing one when it
 * is of that kind, else a new one; its lookup counted, *t filled (release
 * it).  Takes fs->lock.  false when the directory is gone or memory ran
 * out. */
bool fs_request_file_node(mfs_fs *fs, fuse_ino_t parent, const target *p, const char *name,
			  int sub, target *t);
void fs_target_release(target *t);
/* Is the model (and the pinned version, if any) served?  0 or -ENOENT. */
int fs_model_alive(mfs_fs *fs, const char *model, int64_t version);
/* A live target for ino (no lock held); -ENOENT when its object is gone. */
int fs_resolve(mfs_fs *fs, fuse_ino_t ino, target *t);
bool fs_is_dir(nkind k);
/* May the caller of freq use t (a request directory or a file in one)?
 * Its owner and root may; 0 or -EACCES.  Other nodes: 0. */
int fs_may_use(fuse_req_t freq, const target *t);
void fs_fill_attr(mfs_fs *fs, const target *t, struct stat *st);
/* Find or make parent's child and answer a lookup-like request with it. */
void fs_reply_child(mfs_fs *fs, fuse_req_t freq, fuse_ino_t parent, nkind pkind,
		    const char *name, nkind kind, int sub, const char *model,
		    int64_t version, mfs_request *req, int idx, mfs_format fmt);
int fs_mfile_index(const char *name);
int fs_rfile_index(const char *name);
handle *fs_handle_new(mfs_fs *fs, hkind kind, const target *t);
void fs_handle_free(mfs_fs *fs, handle *h);
void fs_set_handle(struct fuse_file_info *fi, handle *h);

/* fs_files.c: the file operations of the table. */
void fs_op_open(fuse_req_t freq, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_create(fuse_req_t freq, fuse_ino_t parent, const char *name,
		  mode_t mode, struct fuse_file_info *fi);
void fs_op_read(fuse_req_t freq, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi);
void fs_op_write(fuse_req_t freq, fuse_ino_t ino, const char *buf,
		 size_t size, off_t off, struct fuse_file_info *fi);
void fs_op_flush(fuse_req_t freq, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_release(fuse_req_t freq, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_fsync(fuse_req_t freq, fuse_ino_t ino, int datasync,
		 struct fuse_file_info *fi);

/* An input handle whose buffer went to the request at commit (h->handed)
 * gets its bytes back before a write, read or size change (h->lock
 * held): a copy from the request while it holds the input; once a run
 * consumed it, -ESTALE (the bytes are the run's; open the file again).
 * 0 when nothing was handed. */
int fs_input_reclaim(handle *h);

/* fs_link.c: inputs handed over by symlink. */
void fs_op_symlink(fuse_req_t freq, const char *link, fuse_ino_t parent, const char *name);
void fs_op_readlink(fuse_req_t freq, fuse_ino_t ino);

/* fs_content.c: the text of a synthetic file.  0, or -ENOENT (gone) /
 * -EAGAIN (no READY version) / -ENOMEM.  *buf malloc'd. */
int fs_content(mfs_fs *fs, const target *t, char **buf, size_t *len);

/* fs_generate.c */
void fs_gen_read(mfs_fs *fs, fuse_req_t freq, handle *h, size_t size, off_t off);
/* A write on a generate session: the request text (EBUSY while its
 * generation runs; after the answer, the next request). */
void fs_gen_write(fuse_req_t freq, handle *h, const char *buf, size_t size, uint64_t max);
/* Is model (version; 0: current) a generator?  For lookup and listing. */
bool fs_is_generator(mfs_fs *fs, const char *model, int64_t version);

/* fs_wait.c */
typedef struct fwait {
	mfs_waiter w;                 /* first: container_of by cast */
	mfs_fs *fs;
	fuse_req_t freq;
	handle *h;
	mfs_request *req;             /* a reference, or NULL for a generation's read */
	mfs_gen *gen;                 /* a reference: the read waits for its next id */
	size_t size;
	off_t off;
	uint64_t deadline;
	struct fwait *next, *prev;    /* fs->waits, under fs->wlock */
} fwait;

/* Store a read on h (H_OUTPUT or H_INFER) until req's run ends.  Returns
 * 1 when stored (the reply comes later), 0 when the run already ended
 * (answer now).  Replies EINTR itself when interrupted meanwhile (then
 * returns 1). */
int fs_wait_read(mfs_fs *fs, fuse_req_t freq, handle *h, mfs_request *req,
		 size_t size, off_t off);

/* The same for a read of a generation (H_GENERATE, H_GENOUT) that
 * waits for more than h->gtok ids: 1 stored (or answered EINTR), 0
 * answer now. */
int fs_wait_gen(mfs_fs *fs, fuse_req_t freq, handle *h, size_t size, off_t off);

/* Answer stored reads whose deadline passed (ETIMEDOUT). */
void fs_expire_reads(mfs_fs *fs);

/* fs_answer.c */

/* Answer a read on h now (shared by the FUSE thread and the wake path). */
void fs_answer_output(fuse_req_t freq, handle *h, size_t size, off_t off);
void fs_answer_infer(mfs_fs *fs, fuse_req_t freq, handle *h, size_t size);
/* Answer a read of a generation (H_GENERATE: from h->rpos; H_GENOUT: at
 * off) with what it produced; 1 without replying when there is nothing
 * new yet and it still runs (the caller waits: fs_wait_gen). */
int fs_answer_gen(fuse_req_t freq, handle *h, size_t size, off_t off);

/* Reply with the n bytes at buf, which lock (held) keeps alive, and
 * unlock it.  Up to REPLY_COPY_MAX bytes are copied and sent after
 * unlocking: a client's next operation on the same file comes the moment
 * the reply reaches it and would otherwise wait for the lock (two context
 * switches per round trip on two cores).  Larger slices are sent under
 * the lock, whose wait is small beside them.  fs_reply_slice_unlock
 * replies with the part of buf[0..len) a read of size at off asks for
 * (nothing past the end). */
#define REPLY_COPY_MAX 16384
void fs_reply_unlock(fuse_req_t freq, pthread_mutex_t *lock, const char *buf, size_t n);
void fs_reply_slice_unlock(fuse_req_t freq, pthread_mutex_t *lock, const char *buf, size_t len,
			   size_t size, off_t off);

#endif

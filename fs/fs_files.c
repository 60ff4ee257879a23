/* fs_files.c - open files: control-file snapshots, input files (written,
 * then committed at flush), output files (reads that wait for the run),
 * and infer sessions (SPEC.md sections 4 and 5).  Nothing here runs a
 * model: a read that must wait is stored (fs_wait.c) and answered from
 * the compute thread.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_internal.h"
#include "bigbuf.h"
#include "hugemem.h"
#include "log.h"
#include "membudget.h"
#include "metrics.h"
#include "repo.h"

void fs_op_open(fuse_req_t freq, fuse_ino_t ino, struct fuse_file_info *fi)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	target t;
	int acc = fi->flags & O_ACCMODE;
	bool writing = acc != O_RDONLY;
	handle *h = NULL;
	int rc = 0;
	if (fs_resolve(fs, ino, &t) < 0) {
		fuse_reply_err(freq, ENOENT);
		return;
	}
	if (fs_is_dir(t.kind)) {
		rc = -EISDIR;
	} else if (t.kind == N_RFILE && t.sub == RF_LINK) {
		rc = -ELOOP;   /* the kernel follows a symlink itself; only O_NOFOLLOW gets here */
	} else if ((rc = fs_may_use(freq, &t)) < 0) {
		/* another user's request file */
	} else if (t.kind == N_MFILE && (t.sub == MF_INFER || t.sub == MF_GENERATE)) {
		h = fs_handle_new(fs, t.sub == MF_INFER ? H_INFER : H_GENERATE, &t);
		rc = h ? 0 : -ENOMEM;
	} else if (t.kind == N_RFILE && t.sub == RF_GENOUT) {
		if (writing)
			rc = -EACCES;
		else
			rc = (h = fs_handle_new(fs, H_GENOUT, &t)) ? 0 : -ENOMEM;
	} else if (t.kind == N_CONTROL) {
		/* Write-only, and only for the daemon's user and root: with
		 * allow_other, another user must not unload a model. */
		const struct fuse_ctx *ctx = fuse_req_ctx(freq);
		if (acc != O_WRONLY || (ctx->uid != 0 && ctx->uid != fs->uid))
			rc = -EACCES;
		else
			rc = (h = fs_handle_new(fs, H_CONTROL, &t)) ? 0 : -ENOMEM;
	} else if (t.kind == N_RFILE && t.sub == RF_OUTPUT) {
		if (writing)
			rc = -EACCES;
		else if (!(h = fs_handle_new(fs, H_OUTPUT, &t)))
			rc = -ENOMEM;
		else
			h->run = mfs_request_run_id(t.req);
	} else if (t.kind == N_RFILE && t.sub == RF_INPUT) {
		if (!(h = fs_handle_new(fs, writing ? H_INPUT : H_STATIC, &t))) {
			rc = -ENOMEM;
		} else if (!writing || !(fi->flags & O_TRUNC)) {
			char *buf;
			size_t len;
			rc = mfs_request_input_file(t.req, t.name, &buf, &len);
			if (rc == -ENOENT && writing) {
				/* Consumed by a run (or never committed): the
				 * kernel kept the name, and the kernel does not
				 * say whether O_CREAT was given; open it as the
				 * empty file create() would make. */
				rc = 0;
				h->dirty = true;
			} else if (rc == 0) {
				if (writing) {
					h->wbuf = buf;
					h->wlen = h->wcap = len;
					mfs_membudget_force(len);
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
	} else if (!(h = fs_handle_new(fs, H_STATIC, &t))) {
		rc = -ENOMEM;
	} else {
		rc = fs_content(fs, &t, &h->content, &h->len);
	}
	fs_target_release(&t);
	if (rc < 0) {
		if (h)
			fs_handle_free(fs, h);
		fuse_reply_err(freq, -rc);
		return;
	}
	fs_set_handle(fi, h);
	if (fuse_reply_open(freq, fi) != 0)
		fs_handle_free(fs, h);
}

void fs_op_create(fuse_req_t freq, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	target p;
	mfs_file_info info;
	(void)mode;
	if (fs_resolve(fs, parent, &p) < 0) {
		fuse_reply_err(freq, ENOENT);
		return;
	}
	if (p.kind != N_REQ || fs_may_use(freq, &p) < 0) {
		/* requests/ holds directories only; another user's request
		 * takes no files */
		fuse_reply_err(freq, p.kind != N_REQ ? EROFS : EACCES);
		fs_target_release(&p);
		return;
	}
	if (fs_rfile_index(name) >= 0) {
		fuse_reply_err(freq, EROFS);
		fs_target_release(&p);
		return;
	}
	if (mfs_request_find_file(p.req, name, &info) == MFS_FILE_OUTPUT) {
		fuse_reply_err(freq, EACCES);
		fs_target_release(&p);
		return;
	}
	/* An unknown name, or a format that cannot hold the input (a
	 * sequence as .npy), fails here, where every writer (bash's builtin
	 * echo too) sees it, not only at close. */
	mfs_error err;
	if (info.kind != MFS_FILE_INPUT && mfs_request_check_file_name(p.req, name, &err) < 0) {
		fuse_reply_err(freq, ENOENT);
		fs_target_release(&p);
		return;
	}
	target t;
	bool made = fs_request_file_node(fs, parent, &p, name, RF_INPUT, &t);
	fs_target_release(&p);
	if (!made) {
		fuse_reply_err(freq, ENOMEM);
		return;
	}
	handle *h = fs_handle_new(fs, H_INPUT, &t);
	if (!h) {
		fs_target_release(&t);
		fuse_reply_err(freq, ENOMEM);
		return;
	}
	h->dirty = true;
	struct fuse_entry_param e;
	memset(&e, 0, sizeof(e));
	e.ino = t.ino;
	e.generation = 1;
	fs_fill_attr(fs, &t, &e.attr);
	e.attr.st_size = 0;
	e.entry_timeout = STABLE_TIMEOUT;   /* the input's name: fs_nodes.c, entry_timeout() */
	fs_target_release(&t);
	fs_set_handle(fi, h);
	if (fuse_reply_create(freq, &e, fi) != 0)
		fs_handle_free(fs, h);
}

/* Does what was written so far already show the file cannot be of its
 * format (SPEC section 4)?  Then the file is refused now (h->lock held):
 * this write fails EINVAL, so does every later one, nothing is committed
 * at close, and the reason is in $req/error.  Only the beginning is
 * judged (MFS_PREFIX_CHECK_BYTES); the close-time decode checks the rest. */
static bool refuse_prefix(handle *h, size_t at)
{
	mfs_error err;
	/* .priority and .timeout are judged whole at every write: they are
	 * a few bytes, and a value out of range shows only at its end. */
	if (mfs_request_check_param(h->req, h->name, h->wbuf, h->wlen, &err) < 0) {
		h->refused = EINVAL;
		h->dirty = h->written = false;
		mfs_request_note_error(h->req, &err);
		return true;
	}
	if (h->fmt_in < 0 || at >= MFS_PREFIX_CHECK_BYTES ||
	    (h->req && mfs_request_input_is_string(h->req, h->name)) ||
	    mfs_tensor_prefix_check((mfs_format)h->fmt_in, h->wbuf, h->wlen, &err) == 0)
		return false;
	h->refused = EINVAL;
	h->dirty = h->written = false;
	mfs_error_prefix(&err, "'%s': ", h->name);
	mfs_request_note_error(h->req, &err);
	return true;
}

/* JSON has its own, lower limit (--max-json-bytes): its text is held
 * beside the tensor it decodes to. */
static bool fs_limits_is_json(const handle *h)
{
	return h->kind == H_INFER ||
	       mfs_format_split_filename(h->name, NULL) == MFS_FMT_JSON;
}

/* A control write waiting for its command (answered by the loader). */
typedef struct control_reply {
	fuse_req_t freq;
	handle *h;     /* open until the write is answered: the kernel holds the file */
	size_t size;
	char model[128];
} control_reply;

static void control_reply_now(fuse_req_t freq, handle *h, const char *model, size_t size,
			      int rc, const mfs_error *err)
{
	if (rc < 0) {
		mfs_log_error("model '%s': control: %s", model, err->msg);
		/* A later write on this open() (Python retries a failed one at
		 * close) gets the same answer, and nothing is done again. */
		pthread_mutex_lock(&h->lock);
		if (!h->refused)
			h->refused = -rc;
		pthread_mutex_unlock(&h->lock);
		fuse_reply_err(freq, -rc);
	} else {
		fuse_reply_write(freq, size);
	}
}

/* Loader thread, once the command is done (or refused at shutdown). */
static void control_done(void *ctx, int rc, const mfs_error *err)
{
	control_reply *c = ctx;
	control_reply_now(c->freq, c->h, c->model, c->size, rc, err);
	free(c);
}

/* A write into MODEL/control is one command, answered once it is done
 * (a script uses the model on its next line): the FUSE thread hands it
 * to the loader thread and goes back to serving, so loads never hold the
 * mount's workers.  A failure is the write's errno (bash's echo reports
 * it), logged with its reason, which the model's status also shows. */
static void control_write(mfs_fs *fs, fuse_req_t freq, handle *h, const char *buf, size_t size)
{
	mfs_control_verb verb;
	mfs_error err;
	mfs_error_clear(&err);
	/* One command per open(): `written` marks the first write. */
	pthread_mutex_lock(&h->lock);
	bool first = !h->written;
	int refused = h->refused;
	h->written = true;
	pthread_mutex_unlock(&h->lock);
	if (refused) {
		fuse_reply_err(freq, refused);
		return;
	}
	int rc = mfs_control_parse(buf, size, first, &verb, &err);
	control_reply *c = NULL;
	if (rc == 0 && !(c = calloc(1, sizeof(*c))))
		rc = mfs_fail(&err, ENOMEM, "out of memory");
	if (rc == 0) {
		c->freq = freq;
		c->h = h;
		c->size = size;
		snprintf(c->model, sizeof(c->model), "%s", h->model);
		rc = mfs_reloader_control_async(fs->conf.control, h->model, verb, control_done, c, &err);
		if (rc == 0)
			return;
		free(c);
	}
	control_reply_now(freq, h, h->model, size, rc, &err);
}

void fs_op_write(fuse_req_t freq, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	handle *h = (handle *)(uintptr_t)fi->fh;
	uint64_t max = fs->conf.max_request_bytes;
	(void)ino;
	if (h->kind == H_CONTROL) {
		control_write(fs, freq, h, buf, size);
		return;
	}
	if (h->kind == H_GENERATE) {
		fs_gen_write(freq, h, buf, size, fs->conf.max_json_bytes);
		return;
	}
	if (h->kind != H_INPUT && h->kind != H_INFER) {
		fuse_reply_err(freq, EBADF);
		return;
	}
	pthread_mutex_lock(&h->lock);
	size_t at = (size_t)off, before = h->wlen;
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
		if (h->refused) {
			pthread_mutex_unlock(&h->lock);
			fuse_reply_err(freq, h->refused);
			return;
		}
		int rc = fs_input_reclaim(h);
		if (rc < 0) {
			pthread_mutex_unlock(&h->lock);
			fuse_reply_err(freq, -rc);
			return;
		}
		max = mfs_request_room(h->req, h->name);
	}
	mfs_error err;
	int refused = 0;
	if ((uint64_t)at + size > max) {
		refused = mfs_fail(&err, EFBIG, "'%s' refused: the request would pass --max-request-bytes=%" PRIu64,
				   h->name, fs->conf.max_request_bytes);
	} else if ((uint64_t)at + size > fs->conf.max_json_bytes && fs_limits_is_json(h)) {
		refused = mfs_fail(&err, EFBIG, "'%s' refused: JSON text past --max-json-bytes=%" PRIu64,
				   h->name, fs->conf.max_json_bytes);
	} else if (at + size > h->wcap) {
		size_t cap = h->wcap ? h->wcap : 4096;
		while (cap < at + size)
			cap *= 2;
		/* A .npy file's header says how long the file is: its buffer
		 * is taken once, at that size, rather than doubled to up to
		 * twice what it needs (and charged so to --max-memory). */
		size_t whole = at == 0 && h->kind == H_INPUT && h->fmt_in == MFS_FMT_NPY
				       ? mfs_npy_file_size(buf, size) : 0;
		if (whole > at + size && whole <= max)
			cap = whole;
		char *nb = NULL;
		if ((refused = mfs_membudget_take(cap - h->wcap, &err)) == 0 &&
		    !(nb = h->wbuf ? realloc(h->wbuf, cap) : mfs_bigbuf_alloc(cap))) {
			mfs_membudget_give(cap - h->wcap);
			refused = mfs_fail(&err, ENOMEM, "'%s': out of memory", h->name);
		}
		if (nb) {
			mfs_hugemem_advise(nb + h->wcap, cap - h->wcap);   /* the part not yet touched */
			h->wbuf = nb;
			h->wcap = cap;
		}
	}
	if (refused) {
		/* The file is refused: nothing of it is committed at close. */
		if (h->kind == H_INPUT)
			h->dirty = h->written = false;
		pthread_mutex_unlock(&h->lock);
		if (h->kind == H_INPUT)
			mfs_request_note_error(h->req, &err);
		else
			mfs_log_warn("model '%s' infer: request refused: %s", h->model, err.msg);
		fuse_reply_err(freq, -refused);
		return;
	}
	if (at > h->wlen)
		memset(h->wbuf + h->wlen, 0, at - h->wlen);
	if (size)   /* a 0-byte write on a new file: wbuf is still NULL */
		memcpy(h->wbuf + at, buf, size);
	if (at + size > h->wlen)
		h->wlen = at + size;
	h->dirty = true;
	h->written = true;
	if (h->kind == H_INPUT && at <= before && refuse_prefix(h, at)) {
		pthread_mutex_unlock(&h->lock);
		fuse_reply_err(freq, EINVAL);
		return;
	}
	pthread_mutex_unlock(&h->lock);
	fuse_reply_write(freq, size);
}

/* A committed input of at least this size is handed to the request
 * instead of copied: a 100 MB `cp` is held once.  Smaller ones are
 * copied, so the shell's `exec 3>f; echo a >&3; echo b >&3` (a commit at
 * each close of a dup, then more writes) keeps its bytes at no cost. */
#define HANDOVER_BYTES (1u << 20)

int fs_input_reclaim(handle *h)
{
	if (!h->handed)
		return 0;
	char *buf;
	size_t len;
	if (mfs_request_input_file(h->req, h->name, &buf, &len) < 0) {
		mfs_error err;
		mfs_fail(&err, ESTALE, "'%s': committed at a close() and consumed by its run since; "
			 "open the file again to write a new input", h->name);
		mfs_request_note_error(h->req, &err);
		return -ESTALE;
	}
	mfs_membudget_force(len);
	h->wbuf = buf;
	h->wlen = h->wcap = len;
	h->handed = false;
	return 0;
}

/* Commit h's bytes (h->lock held), handing a large buffer over. */
static int commit_bytes(handle *h, mfs_error *err)
{
	if (!h->wbuf || h->wlen < HANDOVER_BYTES)
		return mfs_request_commit_file(h->req, h->name, h->wbuf ? h->wbuf : "", h->wlen, err);
	if (h->wcap > h->wlen) {
		/* The request keeps wlen bytes (and is charged so); shrinking
		 * a large block is a page-table change, not a copy. */
		char *nb = realloc(h->wbuf, h->wlen);
		if (nb) {
			mfs_membudget_give(h->wcap - h->wlen);
			h->wbuf = nb;
			h->wcap = h->wlen;
		}
	}
	int rc = mfs_request_commit_take(h->req, h->name, &h->wbuf, h->wlen, err);
	if (!h->wbuf) {
		mfs_membudget_give(h->wcap);   /* the request charges it now */
		h->wcap = 0;
		h->handed = true;
	}
	return rc;
}

/* Commit an input file written on h; 0 or a negative errno.  At flush
 * (every close()) only once something was written: a shell's `>`
 * opens the file, dup2()s it and closes the first descriptor before the
 * command writes anything.  At release, whatever is still uncommitted (an
 * empty file made by `: > f`) is committed; its error goes to $req/error. */
static int commit_input(handle *h, bool final)
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
	int rc = commit_bytes(h, &err);
	pthread_mutex_unlock(&h->lock);
	return rc;
}

void fs_op_flush(fuse_req_t freq, fuse_ino_t ino, struct fuse_file_info *fi)
{
	handle *h = (handle *)(uintptr_t)fi->fh;
	(void)ino;
	int rc = h->kind == H_INPUT ? commit_input(h, false) : 0;
	if (h->kind == H_INPUT && h->refused)
		rc = -h->refused;
	fuse_reply_err(freq, -rc);
}

void fs_op_release(fuse_req_t freq, fuse_ino_t ino, struct fuse_file_info *fi)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	handle *h = (handle *)(uintptr_t)fi->fh;
	(void)ino;
	if (h->kind == H_INPUT)
		commit_input(h, true);
	fs_handle_free(fs, h);
	fuse_reply_err(freq, 0);
}

/* fsync on an input commits what was written so far, as close() would,
 * and returns the same error; the file stays open and later writes are
 * committed again.  Nothing else has anything to make durable. */
void fs_op_fsync(fuse_req_t freq, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	handle *h = (handle *)(uintptr_t)fi->fh;
	(void)ino;
	(void)datasync;
	int rc = h->kind == H_INPUT ? commit_input(h, false) : 0;
	fuse_reply_err(freq, -rc);
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
	rc = mfs_request_set_queue_params(h->req, h->ireq.priority, h->ireq.timeout_us, &err);
	if (rc < 0)
		goto fail;
	mfs_request_set_seq_params(h->req, &h->ireq.seq);
	rc = mfs_request_submit_tensors(h->req, h->ireq.inputs, &err);
	if (rc < 0) {
		logged = true;   /* the request logged it */
		goto fail;
	}
	mfs_version_put(v);
	h->inflight = true;
	/* The text is parsed: its buffer goes now, not at close, so a
	 * large request's text is not held beside its run. */
	free(h->wbuf);
	mfs_membudget_give(h->wcap);
	h->wbuf = NULL;
	h->wcap = 0;
	h->wlen = 0;
	mfs_request *r = h->req;
	mfs_request_get(r);
	pthread_mutex_unlock(&h->lock);
	if (fs_wait_read(fs, freq, h, r, size, 0) == 0)
		fs_answer_infer(fs, freq, h, size);
	mfs_request_put(r);
	return;
fail:
	/* refused before it reached the request (a shape or type that does
	 * not fit, bad JSON): a failed request all the same (the request
	 * counts its own) */
	if (v && !logged)
		mfs_stats_add_failure(&v->stats, MFS_FAIL_OTHER, 0);
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

void fs_op_read(fuse_req_t freq, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	mfs_fs *fs = fuse_req_userdata(freq);
	handle *h = (handle *)(uintptr_t)fi->fh;
	(void)ino;
	switch (h->kind) {
	case H_STATIC:
		pthread_mutex_lock(&h->lock);
		fs_reply_slice_unlock(freq, &h->lock, h->content, h->len, size, off);
		return;
	case H_OUTPUT: {
		pthread_mutex_lock(&h->lock);
		bool have = h->have_content;
		pthread_mutex_unlock(&h->lock);
		mfs_req_state st = have ? MFS_REQ_DONE : mfs_request_state(h->req);
		/* A newer run than the one this file reads: ESTALE now, not
		 * after waiting for it. */
		if ((st == MFS_REQ_QUEUED || st == MFS_REQ_RUNNING) &&
		    mfs_request_run_id(h->req) == h->run &&
		    fs_wait_read(fs, freq, h, h->req, size, off) == 1)
			return;
		fs_answer_output(freq, h, size, off);
		return;
	}
	case H_INFER:
		infer_read(fs, freq, h, size);
		return;
	case H_GENERATE:
	case H_GENOUT:
		fs_gen_read(fs, freq, h, size, off);
		return;
	case H_INPUT: {
		pthread_mutex_lock(&h->lock);
		int rc = fs_input_reclaim(h);
		if (rc < 0) {
			pthread_mutex_unlock(&h->lock);
			fuse_reply_err(freq, -rc);
		} else {
			fs_reply_slice_unlock(freq, &h->lock, h->wbuf, h->wlen, size, off);
		}
		return;
	}
	default:
		fuse_reply_err(freq, EISDIR);
		return;
	}
}

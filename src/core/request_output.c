/* request_output.c - a finished run's outputs (request.h): read in a
 * format, their sizes for getattr, the tensors for the infer file, and
 * the top-K classification view.  An output's encoding in each format is
 * cached for the run (r->enc) so that getattr's size and the read that
 * follows encode once; a reader takes the bytes, the size stays.
 */
#include "request.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>

#include "classify.h"
#include "request_internal.h"

/* The top-K view of output idx (lock held); not cached: it is a few
 * lines, and a K is rarely read twice. */
static int classify_locked(mfs_request *r, int idx, mfs_format view, char **buf, size_t *len,
			   mfs_error *err)
{
	const mfs_labels *labels = r->v->lv->labels ? r->v->lv->labels[idx] : NULL;
	int rc = mfs_classify_text(&r->run_out[r->out_graph_idx[idx]], r->cfg->outputs[idx].name,
				   MFS_VIEW_K(view), labels, buf, len, err);
	if (rc && err->code != ENOMEM)
		mfs_error_prefix(err, "model '%s' request '%s': ", r->v->model_name, r->name);
	return rc;
}

/* Encode output idx in fmt into the cache, unless it is there; with
 * need_bytes, also when only its size is left (the bytes went to a
 * reader: mfs_request_read_output). */
static int encode_locked(mfs_request *r, int idx, mfs_format fmt, bool need_bytes, mfs_error *err)
{
	enc_cache *c = &r->enc[idx * MFS_FMT_COUNT + (int)fmt];
	if (c->valid && (c->buf || !need_bytes))
		return 0;
	free(c->buf);
	c->buf = NULL;
	int rc = mfs_value_encode(fmt, &r->run_out[r->out_graph_idx[idx]], r->cfg->outputs[idx].name,
				  &c->buf, &c->len, err);
	if (rc == 0)
		c->valid = true;
	return rc;
}

uint64_t mfs_request_run_id(mfs_request *r)
{
	pthread_mutex_lock(&r->lock);
	uint64_t run = r->gen;
	pthread_mutex_unlock(&r->lock);
	return run;
}

int mfs_request_read_output(mfs_request *r, uint64_t run, int idx, mfs_format fmt,
			    char **buf, size_t *len, mfs_error *err)
{
	int rc = 0;
	pthread_mutex_lock(&r->lock);
	r->last_use = mfs_now_ns();
	/* Replaced: the run ended and a new input (of a next run) cleared
	 * its outputs. */
	if (run && run != r->gen) {
		rc = mfs_fail(err, ESTALE, "model '%s' request '%s': run %" PRIu64 " was replaced by "
			      "newer inputs before its result was read (one writer per request "
			      "directory; open the output again to read the newest run)",
			      r->v->model_name, r->name, run);
		pthread_mutex_unlock(&r->lock);
		return rc;
	}
	switch (r->state) {
	case MFS_REQ_QUEUED:
	case MFS_REQ_RUNNING:
		rc = -EINPROGRESS;
		break;
	case MFS_REQ_WAITING: {
		char miss[512];
		req_missing_inputs(r, miss, sizeof(miss));
		rc = mfs_fail(err, ENODATA, "model '%s' request '%s': no result yet, inputs missing: %s",
			      r->v->model_name, r->name, miss);
		/* For $req/error (SPEC section 4); the caller logs it. */
		r->error = *err;
		break;
	}
	case MFS_REQ_FAILED:
		/* A request that waited past its queue timeout says so, and
		 * one whose run the memory budget refused; any other failed
		 * run is EIO (SPEC section 10). */
		*err = r->error;
		err->code = r->error.code == ETIMEDOUT || r->error.code == ENOSPC ? r->error.code : EIO;
		rc = -err->code;
		break;
	case MFS_REQ_DONE:
		if (MFS_VIEW_IS_TOPK(fmt)) {
			rc = classify_locked(r, idx, fmt, buf, len, err);
			if (rc)
				r->error = *err;   /* for $req/error; the caller logs it */
			break;
		}
		rc = encode_locked(r, idx, fmt, true, err);
		if (rc == 0) {
			/* The encoding goes to the reader, not a copy of it (a
			 * large output was held twice); its size stays for
			 * getattr, and another reader encodes again. */
			enc_cache *c = &r->enc[idx * MFS_FMT_COUNT + (int)fmt];
			*buf = c->buf ? c->buf : malloc(1);
			*len = c->len;
			c->buf = NULL;
			if (!*buf)
				rc = mfs_fail(err, ENOMEM, "out of memory");
		} else {
			/* An output that does not fit the asked format (a
			 * sequence as .npy; FP16 as text is fine): for
			 * $req/error too. */
			rc = -EIO;
			err->code = EIO;
			r->error = *err;
		}
		break;
	}
	req_recharge_locked(r);
	pthread_mutex_unlock(&r->lock);
	return rc;
}

int64_t mfs_request_output_size(mfs_request *r, int idx, mfs_format fmt)
{
	int64_t n = -1;
	mfs_error err;
	pthread_mutex_lock(&r->lock);
	if (r->state == MFS_REQ_DONE && MFS_VIEW_IS_TOPK(fmt)) {
		char *buf;
		size_t len;
		if (classify_locked(r, idx, fmt, &buf, &len, &err) == 0) {
			n = (int64_t)len;
			free(buf);
		}
	} else if (r->state == MFS_REQ_DONE && encode_locked(r, idx, fmt, false, &err) == 0)
		n = (int64_t)r->enc[idx * MFS_FMT_COUNT + (int)fmt].len;
	req_recharge_locked(r);
	pthread_mutex_unlock(&r->lock);
	return n;
}

int mfs_request_outputs(mfs_request *r, const mfs_tensor **outs,
			mfs_error *err)
{
	int rc = 0;
	pthread_mutex_lock(&r->lock);
	if (r->state == MFS_REQ_DONE) {
		for (int i = 0; i < r->n_out; i++)
			outs[i] = &r->run_out[r->out_graph_idx[i]];
	} else if (r->state == MFS_REQ_FAILED) {
		*err = r->error;
		err->code = EIO;
		rc = -EIO;
	} else if (r->state == MFS_REQ_WAITING) {
		rc = mfs_fail(err, ENODATA, "the request has not run");
	} else {
		rc = mfs_fail(err, EINPROGRESS, "the request has not finished");
	}
	pthread_mutex_unlock(&r->lock);
	return rc;
}

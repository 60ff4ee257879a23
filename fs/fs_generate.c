/* fs_generate.c - reads of a generation (SPEC.md section 5b): the
 * generate file (write a JSON request, read the answer on the same fd:
 * one {"output_ids"} line, or with "stream" one {"token"} line per id
 * as it comes and that line last) and a request directory's
 * output_ids.txt (one id per line as it comes, EOF after the last).  A
 * read with nothing new waits without holding a FUSE thread
 * (fs_wait_gen). */
#include <stdlib.h>
#include <string.h>

#include "fs_internal.h"
#include "log.h"
#include "membudget.h"

bool fs_is_generator(mfs_fs *fs, const char *model, int64_t version)
{
	mfs_version *v;
	mfs_error err;
	if (mfs_registry_get(fs->conf.registry, model, version, &v, &err) < 0)
		return false;
	bool yes = v->gen != NULL;
	mfs_version_put(v);
	return yes;
}

/* Start the generation the session's text asks for (h->lock held);
 * on failure the session's answer is the error line. */
static void gen_start(mfs_fs *fs, handle *h)
{
	mfs_error err;
	mfs_error_clear(&err);
	int64_t *prompt = NULL, n = 0;
	mfs_gen_params p;
	mfs_version *v = NULL;
	int rc = mfs_registry_get(fs->conf.registry, h->model, h->version, &v, &err);
	if (rc == 0 && !v->gen)
		rc = mfs_fail(&err, ENOTSUP, "model '%s' is not a generator", h->model);
	if (rc == 0)
		rc = mfs_gen_parse_json(h->wbuf, h->wlen, &prompt, &n, &p, &err);
	if (rc == 0)
		rc = mfs_gen_start(v->gen, prompt, n, &p, &h->gen, &err);
	free(prompt);
	h->wlen = 0;
	h->rpos = h->gtok = h->len = 0;
	h->gended = false;
	if (rc == 0) {
		h->gstream = p.stream;
		h->gv = v;
		return;
	}
	if (v)
		mfs_version_put(v);
	mfs_log_warn("model '%s' generate: %s", h->model, err.msg);
	free(h->content);
	h->content = mfs_infer_error_json(err.msg, &h->len);
	if (!h->content)
		h->len = 0;
	h->gended = true;
}

void fs_gen_read(mfs_fs *fs, fuse_req_t freq, handle *h, size_t size, off_t off)
{
	pthread_mutex_lock(&h->lock);
	if (h->kind == H_GENERATE && !h->gen && !h->gended) {
		if (h->wlen == 0) {
			pthread_mutex_unlock(&h->lock);
			fuse_reply_buf(freq, NULL, 0);
			return;
		}
		gen_start(fs, h);
	} else if (h->kind == H_GENOUT && !h->gen && !(h->gen = mfs_request_gen(h->req))) {
		pthread_mutex_unlock(&h->lock);
		mfs_error err;
		mfs_fail(&err, ENODATA, "'output_ids.txt': no generation yet: write input_ids first");
		mfs_request_note_error(h->req, &err);
		fuse_reply_err(freq, ENODATA);
		return;
	}
	pthread_mutex_unlock(&h->lock);
	while (fs_answer_gen(freq, h, size, off) == 1)
		if (fs_wait_gen(fs, freq, h, size, off) == 1)
			return;
}

void fs_gen_write(fuse_req_t freq, handle *h, const char *buf, size_t size, uint64_t max)
{
	pthread_mutex_lock(&h->lock);
	if (h->gen && !h->gended) {
		pthread_mutex_unlock(&h->lock);
		fuse_reply_err(freq, EBUSY);
		return;
	}
	if (h->gended) {
		/* A write after the answer starts the next request. */
		mfs_gen_put(h->gen);
		h->gen = NULL;
		if (h->gv)
			mfs_version_put(h->gv);
		h->gv = NULL;
		h->gended = false;
		h->len = h->rpos = h->gtok = h->wlen = 0;
	}
	if (h->wlen + size > max) {
		pthread_mutex_unlock(&h->lock);
		fuse_reply_err(freq, EFBIG);
		return;
	}
	if (h->wlen + size > h->wcap) {
		size_t cap = h->wcap ? h->wcap : 4096;
		while (cap < h->wlen + size)
			cap *= 2;
		mfs_error err;
		char *nb = NULL;
		if (mfs_membudget_take(cap - h->wcap, &err) == 0 && !(nb = realloc(h->wbuf, cap)))
			mfs_membudget_give(cap - h->wcap);
		if (!nb) {
			pthread_mutex_unlock(&h->lock);
			fuse_reply_err(freq, ENOMEM);
			return;
		}
		h->wbuf = nb;
		h->wcap = cap;
	}
	memcpy(h->wbuf + h->wlen, buf, size);
	h->wlen += size;
	pthread_mutex_unlock(&h->lock);
	fuse_reply_write(freq, size);
}

/* fs_answer.c - answering a read of a run's result: an output file
 * (its encoded bytes, read once from the request and then sliced) or an
 * infer session's response.  The same answer is given by the FUSE thread
 * when the run has ended (fs_files.c) and by the compute thread when a
 * stored read is woken (fs_wait.c).  Also the reply helpers that send
 * bytes a lock keeps alive.  Calls neither of those files.
 */
#include <stdlib.h>
#include <string.h>

#include "fs_internal.h"
#include "log.h"

void fs_reply_unlock(fuse_req_t freq, pthread_mutex_t *lock, const char *buf, size_t n)
{
	if (n > REPLY_COPY_MAX) {
		fuse_reply_buf(freq, buf, n);
		pthread_mutex_unlock(lock);
		return;
	}
	char copy[REPLY_COPY_MAX];
	if (n)
		memcpy(copy, buf, n);
	pthread_mutex_unlock(lock);
	fuse_reply_buf(freq, n ? copy : NULL, n);
}

void fs_reply_slice_unlock(fuse_req_t freq, pthread_mutex_t *lock, const char *buf, size_t len,
			   size_t size, off_t off)
{
	if (off < 0 || (size_t)off >= len) {
		pthread_mutex_unlock(lock);
		fuse_reply_buf(freq, NULL, 0);
		return;
	}
	size_t n = len - (size_t)off;
	fs_reply_unlock(freq, lock, buf + off, n < size ? n : size);
}

void fs_answer_output(fuse_req_t freq, handle *h, size_t size, off_t off)
{
	pthread_mutex_lock(&h->lock);
	if (!h->have_content) {
		mfs_error err;
		char *buf;
		size_t len;
		mfs_error_clear(&err);
		int rc = mfs_request_read_output(h->req, h->run, h->idx, h->fmt, &buf, &len, &err);
		if (rc < 0) {
			pthread_mutex_unlock(&h->lock);
			if (rc == -ENODATA || rc == -EIO || rc == -ESTALE || rc == -ETIMEDOUT ||
			    rc == -EINVAL || rc == -ENOSPC)
				mfs_log_warn("model '%s' request '%s': reading '%s': %s", h->model,
					     mfs_request_name(h->req), h->name, err.msg);
			fuse_reply_err(freq, rc == -EINPROGRESS ? EAGAIN : -rc);
			return;
		}
		h->content = buf;
		h->len = len;
		h->have_content = true;
	}
	/* release() frees the content only after taking the lock, and the
	 * reply's buffer must live until writev returns (a client killed
	 * mid-read closes the file while the reply is on its way). */
	fs_reply_slice_unlock(freq, &h->lock, h->content, h->len, size, off);
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
		text = mfs_infer_response(cfg, v->model_name, v->version, &h->ireq, outs,
					  (const mfs_labels *const *)v->lv->labels, &len, &err);
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
	if (!h->have_content && !h->inflight) {
		/* Nothing was asked since the last response (or ever): a
		 * response needs the request it answers (h->ireq). */
		pthread_mutex_unlock(&h->lock);
		fuse_reply_buf(freq, NULL, 0);
		return;
	}
	if (!h->have_content)
		infer_response(h);
	size_t pos = h->rpos < h->len ? h->rpos : h->len;
	size_t n = h->len - pos < size ? h->len - pos : size;
	h->rpos = pos + n;
	/* Sliced under the handle lock so two readers of one session see
	 * the response in order. */
	fs_reply_unlock(freq, &h->lock, h->content ? h->content + pos : NULL, n);
}

/* Append text to h->content (h->lock held); false when out of memory. */
static bool gen_append(handle *h, const char *text, size_t n)
{
	char *c = realloc(h->content, h->len + n + 1);
	if (!c)
		return false;
	memcpy(c + h->len, text, n);
	h->len += n;
	c[h->len] = '\0';
	h->content = c;
	return true;
}

/* The generate file's last line: {"output_ids":[...],"finish_reason":R}
 * or {"error":...} (h->lock held). */
static bool gen_final_line(handle *h, mfs_gen_state st, const char *finish, const mfs_error *err)
{
	if (st == MFS_GEN_FAILED) {
		size_t n;
		char *t = mfs_infer_error_json(err->msg, &n);
		bool ok = t && gen_append(h, t, n);
		free(t);
		return ok;
	}
	int64_t *ids;
	size_t n;
	mfs_gen_state st2;
	const char *f2;
	mfs_gen_read(h->gen, 0, &ids, &n, &st2, &f2, NULL);
	bool ok = gen_append(h, "{\"output_ids\":[", 15);
	for (size_t i = 0; ok && i < n; i++) {
		char num[32];
		int k = snprintf(num, sizeof(num), "%s%lld", i ? "," : "", (long long)ids[i]);
		ok = gen_append(h, num, (size_t)k);
	}
	char tail[64];
	int k = snprintf(tail, sizeof(tail), "],\"finish_reason\":\"%s\"}\n", finish);
	free(ids);
	return ok && gen_append(h, tail, (size_t)k);
}

int fs_answer_gen(fuse_req_t freq, handle *h, size_t size, off_t off)
{
	pthread_mutex_lock(&h->lock);
	if (!h->gended && h->gen) {
		int64_t *ids;
		size_t n;
		mfs_gen_state st;
		const char *finish;
		mfs_error err;
		mfs_error_clear(&err);
		size_t total = mfs_gen_read(h->gen, h->gtok, &ids, &n, &st, &finish, &err);
		bool ok = true;
		for (size_t i = 0; ok && i < n; i++) {
			char line[48];
			int k = h->kind == H_GENOUT ? snprintf(line, sizeof(line), "%lld\n", (long long)ids[i])
				: snprintf(line, sizeof(line), "{\"token\":%lld}\n", (long long)ids[i]);
			ok = (h->kind == H_GENERATE && !h->gstream) || gen_append(h, line, (size_t)k);
		}
		free(ids);
		if (ok)
			h->gtok = total;
		if (ok && st != MFS_GEN_RUNNING && total == h->gtok) {
			h->gended = true;
			if (h->kind == H_GENERATE)
				ok = gen_final_line(h, st, finish, &err);
			else if (st == MFS_GEN_FAILED)
				h->refused = EIO;
		}
		if (!ok) {
			pthread_mutex_unlock(&h->lock);
			fuse_reply_err(freq, ENOMEM);
			return 0;
		}
	}
	size_t pos = h->kind == H_GENERATE ? h->rpos : (size_t)off;
	if (pos < h->len) {
		size_t n = h->len - pos < size ? h->len - pos : size;
		if (h->kind == H_GENERATE)
			h->rpos = pos + n;
		fs_reply_unlock(freq, &h->lock, h->content + pos, n);
		return 0;
	}
	if (!h->gended) {
		pthread_mutex_unlock(&h->lock);
		return 1;
	}
	int e = h->kind == H_GENOUT ? h->refused : 0;
	pthread_mutex_unlock(&h->lock);
	if (e)
		fuse_reply_err(freq, e);
	else
		fuse_reply_buf(freq, NULL, 0);
	return 0;
}

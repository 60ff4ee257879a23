/* request.c - see request.h: a request's life (new, get, put), its
 * inputs (committed files, dot files, the infer file's tensors), its runs
 * (submit, done, waiting for the end) and the use that keeps it alive.
 * What the request shows as files is elsewhere (request_internal.h):
 * request_files.c, request_output.c, request_status.c; the queue
 * parameters are request_params.c's.
 *
 * r->lock protects everything mutable in the request.  The job embedded
 * in the request is in the scheduler's hands between submit and done();
 * the request holds a reference to itself for that time.  Input slots
 * are indexed like the config's inputs; the run's tensors are in graph
 * order (what the engine wants), so each slot knows its graph index.
 */
#include "request.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigbuf.h"
#include "ensemble.h"
#include "generate.h"
#include "log.h"
#include "membudget.h"
#include "queue_policy.h"
#include "request_internal.h"

bool mfs_request_name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > 64 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

static void job_done(mfs_job *job);

static void job_started(mfs_job *job)
{
	mfs_request *r = job->arg;
	pthread_mutex_lock(&r->lock);
	r->state = MFS_REQ_RUNNING;
	pthread_mutex_unlock(&r->lock);
}

/* Bring the request's share of the daemon's memory budget
 * (membudget.h) to what it holds now (lock held): file bytes, inputs
 * decoded or in a run, outputs and their encodings. */
void req_recharge_locked(mfs_request *r)
{
	uint64_t held = 0;
	for (int i = 0; i < r->n_in; i++)
		held += r->in[i].blob_len + (r->in[i].present && r->in[i].t.owns_data ? r->in[i].t.nbytes : 0);
	for (int i = 0; i < r->n_staged; i++)
		held += r->staged[i].len;
	for (int i = 0; i < r->n_gin; i++)
		held += r->run_in[i].nbytes;
	for (int i = 0; i < r->n_gout; i++)
		held += r->run_out[i].nbytes;
	for (int i = 0; i < r->n_out * MFS_FMT_COUNT; i++)
		held += r->enc[i].buf ? r->enc[i].len : 0;
	if (held > r->charged)
		mfs_membudget_force(held - r->charged);
	else
		mfs_membudget_give(r->charged - held);
	r->charged = held;
}

/* The run's inputs and the file bytes they point into. */
static void release_run_in(mfs_request *r)
{
	for (int i = 0; r->run_in && i < r->n_gin; i++) {
		mfs_tensor_release(&r->run_in[i]);
		if (r->run_blob) {
			mfs_bigbuf_free(r->run_blob[i]);
			r->run_blob[i] = NULL;
		}
	}
}

static void free_request(mfs_request *r)
{
	mfs_membudget_give(r->charged);
	for (int i = 0; r->in && i < r->n_in; i++)
		req_clear_slot(&r->in[i]);
	release_run_in(r);
	for (int i = 0; r->run_out && i < r->n_gout; i++)
		mfs_tensor_release(&r->run_out[i]);
	for (int i = 0; r->enc && i < r->n_out * MFS_FMT_COUNT; i++)
		free(r->enc[i].buf);
	for (int i = 0; i < r->n_staged; i++) {
		free(r->staged[i].name);
		free(r->staged[i].blob);
	}
	free(r->staged);
	mfs_rcache_key_release(&r->cache_key);
	free(r->in);
	free(r->out_graph_idx);
	free(r->run_in);
	free(r->run_blob);
	free(r->run_out);
	free(r->enc);
	free(r->name);
	if (r->generation) {
		mfs_gen_cancel(r->generation);
		mfs_gen_put(r->generation);
	}
	if (r->v)
		mfs_version_put(r->v);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

int mfs_request_new(mfs_version *v, const char *name, uint64_t max_bytes,
		    mfs_request **out, mfs_error *err)
{
	mfs_request *r = calloc(1, sizeof(*r));
	if (!r)
		return mfs_fail(err, ENOMEM, "out of memory");
	pthread_mutex_init(&r->lock, NULL);
	r->refs = 1;
	mfs_version_get(v);
	r->v = v;
	r->cfg = v->config;
	r->max_bytes = max_bytes;
	r->n_in = r->cfg->n_inputs;
	r->n_out = r->cfg->n_outputs;
	r->n_gin = v->n_graph_inputs;
	r->n_gout = v->n_graph_outputs;
	r->name = strdup(name);
	r->in = calloc((size_t)r->n_in + 1, sizeof(*r->in));
	r->out_graph_idx = calloc((size_t)r->n_out + 1, sizeof(int));
	r->run_in = calloc((size_t)r->n_gin + 1, sizeof(mfs_tensor));
	r->run_blob = calloc((size_t)r->n_gin + 1, sizeof(char *));
	r->run_out = calloc((size_t)r->n_gout + 1, sizeof(mfs_tensor));
	r->enc = calloc((size_t)r->n_out * MFS_FMT_COUNT + 1, sizeof(enc_cache));
	r->last_use = mfs_now_ns();
	r->gen = 1;
	if (!r->name || !r->in || !r->out_graph_idx || !r->run_in || !r->run_blob || !r->run_out || !r->enc) {
		free_request(r);
		return mfs_fail(err, ENOMEM, "out of memory");
	}
	for (int i = 0; i < r->n_in; i++) {
		r->in[i].graph_idx = r->cfg->inputs[i].graph_index;
		if (r->in[i].graph_idx < 0 || r->in[i].graph_idx >= r->n_gin) {
			free_request(r);
			return mfs_fail(err, EINVAL, "config input '%s' is not an input of the graph",
					v->config->inputs[i].name);
		}
	}
	for (int i = 0; i < r->n_out; i++) {
		r->out_graph_idx[i] = r->cfg->outputs[i].graph_index;
		if (r->out_graph_idx[i] < 0 || r->out_graph_idx[i] >= r->n_gout) {
			free_request(r);
			return mfs_fail(err, EINVAL, "config output '%s' is not an output of the graph",
					v->config->outputs[i].name);
		}
	}
	r->job.inputs = r->run_in;
	r->job.outputs = r->run_out;
	r->job.done = job_done;
	r->job.started = job_started;
	r->job.arg = r;
	*out = r;
	return 0;
}

void mfs_request_get(mfs_request *r)
{
	__atomic_add_fetch(&r->refs, 1, __ATOMIC_RELAXED);
}

void mfs_request_put(mfs_request *r)
{
	if (r && __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free_request(r);
}

const char *mfs_request_name(const mfs_request *r) { return r->name; }
mfs_version *mfs_request_version(const mfs_request *r) { return r->v; }

mfs_req_state mfs_request_state(mfs_request *r)
{
	pthread_mutex_lock(&r->lock);
	mfs_req_state s = r->state;
	pthread_mutex_unlock(&r->lock);
	return s;
}

int req_input_index(const mfs_request *r, const char *name)
{
	for (int i = 0; i < r->n_in; i++)
		if (strcmp(r->cfg->inputs[i].name, name) == 0)
			return i;
	return -1;
}

uint64_t req_input_bytes_locked(const mfs_request *r)
{
	uint64_t n = 0;
	for (int i = 0; i < r->n_staged; i++)
		n += r->staged[i].len;
	for (int i = 0; i < r->n_in; i++)
		if (r->in[i].present)
			n += r->in[i].blob ? r->in[i].blob_len : r->in[i].t.nbytes;
	return n;
}

/* Record an error for $req/error and the log (lock held). */
int req_record(mfs_request *r, int rc, const mfs_error *err)
{
	if (!r->failure_counted)
		mfs_stats_add_failure(&r->v->stats, MFS_FAIL_OTHER, 0);
	return req_record_counted(r, rc, err);
}

int req_record_counted(mfs_request *r, int rc, const mfs_error *err)
{
	r->failure_counted = true;
	r->error = *err;
	mfs_log_warn("model '%s' version %" PRId64 " request '%s': %s", r->v->model_name,
		     r->v->version, r->name, err->msg);
	return rc;
}

void req_clear_slot(input_slot *s)
{
	mfs_tensor_release(&s->t);
	free(s->filename);
	mfs_bigbuf_free(s->blob);
	free(s->link);
	s->filename = NULL;
	s->blob = NULL;
	s->link = NULL;
	s->blob_len = 0;
	s->present = false;
}

static void clear_outputs(mfs_request *r)
{
	for (int i = 0; i < r->n_gout; i++)
		mfs_tensor_release(&r->run_out[i]);
	for (int i = 0; i < r->n_out * MFS_FMT_COUNT; i++) {
		free(r->enc[i].buf);
		r->enc[i] = (enc_cache){ 0 };
	}
}

/* A finished request gets a new input: forget the last run (lock held). */
static void begin_new_run(mfs_request *r)
{
	if (r->state == MFS_REQ_DONE || r->state == MFS_REQ_FAILED) {
		r->gen++;
		clear_outputs(r);
		r->state = MFS_REQ_WAITING;
		r->decode_ns = 0;
		r->failure_counted = false;   /* a new attempt */
		mfs_error_clear(&r->error);
	}
}

static bool all_present(const mfs_request *r)
{
	for (int i = 0; i < r->n_in; i++)
		if (!r->in[i].present && !r->cfg->inputs[i].optional)
			return false;
	return true;
}

/* Unlock r; then run the job that submit left to this thread, if any
 * (mfs_sched_run_here): a short run on an idle instance goes without a
 * thread wake-up.  An ensemble's run starts here too: its first steps'
 * submits may fail and end it, and ending takes r->lock. */
static void unlock_and_run(mfs_request *r)
{
	mfs_queue *q = r->run_here;
	mfs_ensemble_run *ens = r->ens_start;
	r->run_here = NULL;
	r->ens_start = NULL;
	pthread_mutex_unlock(&r->lock);
	if (q)
		mfs_sched_run_here(q);
	if (ens)
		mfs_ensemble_start(ens);   /* may end the run: done() takes r->lock */
}

/* Move the slots into the run and queue it (lock held). */
static int submit_locked(mfs_request *r, mfs_error *err)
{
	/* A .timeout written under another .priority may not hold now. */
	if (mfs_queue_check_timeout(r->cfg, r->v->model_name, r->priority, r->timeout_us, err) < 0) {
		mfs_error_prefix(err, "the request is not queued: ");
		return req_record(r, -EINVAL, err);
	}
	r->job.priority = (int)r->priority;
	r->job.timeout_ns = (uint64_t)r->timeout_us * 1000u;
	release_run_in(r);
	if (r->v->cache && req_cache_answer_locked(r)) {
		/* Answered: the inputs are consumed as a run's are. */
		for (int i = 0; i < r->n_in; i++)
			req_clear_slot(&r->in[i]);
		r->last_use = mfs_now_ns();
		return 0;
	}
	for (int i = 0; i < r->n_in; i++) {
		input_slot *s = &r->in[i];
		if (s->present) {
			/* The model may see another shape (config reshape),
			 * found when the input was set; the data is the same
			 * row-major bytes. */
			s->t.shape = s->model_shape;
			r->run_in[s->graph_idx] = s->t;
			if (!s->t.owns_data) {
				/* A view into the file's bytes (.npy): they
				 * go with it. */
				r->run_blob[s->graph_idx] = s->blob;
				s->blob = NULL;
				s->blob_len = 0;
			}
			s->t = (mfs_tensor){ 0 };
		} else if (r->cfg->inputs[i].kind == MFS_KIND_OPTIONAL &&
			   mfs_container_init(&r->run_in[s->graph_idx], MFS_KIND_OPTIONAL,
					      r->cfg->inputs[i].elem_kind,
					      r->cfg->inputs[i].dtype, 0, err) < 0) {
			return req_record(r, -ENOMEM, err);
		}   /* an optional left out: one without a value */
		req_clear_slot(s);
	}
	r->state = MFS_REQ_QUEUED;
	r->runs++;
	mfs_request_get(r);
	int rc;
	if (r->v->plan) {
		/* An ensemble: its steps' queues run it (ensemble.h), from
		 * unlock_and_run. */
		rc = mfs_ensemble_prepare(r->v->registry, r->v, &r->job, &r->ens_start, err);
	} else if (r->v->seqb) {
		rc = mfs_seqb_submit(r->v->seqb, &r->job, &r->seq, err);
	} else {
		rc = mfs_sched_submit_here(r->v->queue, &r->job, err);
		if (rc == 0 && r->job.here)
			r->run_here = r->v->queue;
	}
	if (rc == 0)
		r->failure_counted = false;   /* the run's outcome is the scheduler's to count */
	if (rc < 0) {
		mfs_request_put(r);   /* never the last: the caller holds one */
		release_run_in(r);
		r->state = MFS_REQ_FAILED;
		r->tr = (trace){ 0 };
		/* a full queue is the scheduler's to count (REJECTED) */
		if (rc == -EAGAIN)
			req_record_counted(r, rc, err);
		else
			req_record(r, rc, err);
		/* A closed queue means the version went away, -EIO a
		 * sequence that does not run: the run failed (read: EIO);
		 * the inputs themselves were fine. */
		if (rc == -ESHUTDOWN || rc == -EIO)
			rc = 0;
	}
	return rc;
}

int req_find_staged(const mfs_request *r, const char *name)
{
	for (int i = 0; i < r->n_staged; i++)
		if (strcmp(r->staged[i].name, name) == 0)
			return i;
	return -1;
}

void req_drop_staged(mfs_request *r, int i)
{
	if (req_param_of(r->staged[i].name) == PARAM_PRIORITY)
		r->priority = 0;
	else if (req_param_of(r->staged[i].name) == PARAM_TIMEOUT)
		r->timeout_us = 0;
	else
		req_store_param_locked(r, req_param_of(r->staged[i].name), NULL, 0);
	free(r->staged[i].name);
	free(r->staged[i].blob);
	r->staged[i] = r->staged[--r->n_staged];
}

/* Keep a dot file's bytes (lock held). */
static int stage_locked(mfs_request *r, const char *filename, const void *buf,
			size_t len, mfs_error *err)
{
	int i = req_find_staged(r, filename);
	uint64_t others = req_input_bytes_locked(r) - (i >= 0 ? r->staged[i].len : 0);
	if (others + len > r->max_bytes)
		return req_record(r, mfs_fail(err, EFBIG, "'%s': the request's files would be %" PRIu64
					      " bytes, more than --max-request-bytes=%" PRIu64,
					      filename, others + len, r->max_bytes), err);
	int param = req_param_of(filename);
	int64_t value = 0;
	if (param != PARAM_NONE && req_parse_param_locked(r, param, buf, len, &value, err) < 0)
		return req_record(r, -EINVAL, err);
	char *blob = malloc(len ? len : 1);
	if (!blob)
		return mfs_fail(err, ENOMEM, "out of memory");
	if (len)
		memcpy(blob, buf, len);
	if (i < 0) {
		staged_file *ns = realloc(r->staged, (size_t)(r->n_staged + 1) * sizeof(*ns));
		char *name = strdup(filename);
		if (!ns || !name) {
			if (ns)
				r->staged = ns;
			free(name);
			free(blob);
			return mfs_fail(err, ENOMEM, "out of memory");
		}
		r->staged = ns;
		i = r->n_staged++;
		r->staged[i] = (staged_file){ name, NULL, 0 };
	}
	free(r->staged[i].blob);
	r->staged[i].blob = blob;
	r->staged[i].len = len;
	if (param == PARAM_PRIORITY)
		r->priority = value;
	else if (param == PARAM_TIMEOUT)
		r->timeout_us = value;
	else
		req_store_param_locked(r, param, blob, len);
	return 0;
}

static int commit_locked(mfs_request *r, const char *filename, const void *buf,
			 size_t len, mfs_error *err);
static int commit_owned_locked(mfs_request *r, const char *filename, char **blobp,
			       size_t len, const char *link, mfs_error *err);

int mfs_request_commit_link(mfs_request *r, const char *filename, const char *link,
			    char *buf, size_t len, mfs_error *err)
{
	pthread_mutex_lock(&r->lock);
	r->last_use = mfs_now_ns();
	int rc = commit_owned_locked(r, filename, &buf, len, link, err);
	req_recharge_locked(r);
	unlock_and_run(r);
	free(buf);   /* not taken: the commit failed */
	return rc;
}

int mfs_request_commit_take(mfs_request *r, const char *filename, char **buf,
			    size_t len, mfs_error *err)
{
	pthread_mutex_lock(&r->lock);
	r->last_use = mfs_now_ns();
	int rc = filename[0] == '.' ? stage_locked(r, filename, *buf, len, err)
				    : commit_owned_locked(r, filename, buf, len, NULL, err);
	req_recharge_locked(r);
	unlock_and_run(r);
	return rc;
}

int mfs_request_commit_file(mfs_request *r, const char *filename,
			    const void *buf, size_t len, mfs_error *err)
{
	pthread_mutex_lock(&r->lock);
	r->last_use = mfs_now_ns();
	int rc = filename[0] == '.' ? stage_locked(r, filename, buf, len, err)
				    : commit_locked(r, filename, buf, len, err);
	req_recharge_locked(r);
	unlock_and_run(r);
	return rc;
}

int mfs_request_rename_file(mfs_request *r, const char *from, const char *to,
			    mfs_error *err)
{
	int rc;
	pthread_mutex_lock(&r->lock);
	r->last_use = mfs_now_ns();
	int i = req_find_staged(r, from);
	if (i < 0) {
		rc = mfs_fail(err, EXDEV, "'%s': only a dot file (a temporary) can be renamed", from);
	} else if (to[0] == '.') {
		staged_file f = r->staged[i];
		r->staged[i].blob = NULL;
		rc = stage_locked(r, to, f.blob, f.len, err);
		if (rc == 0 && (i = req_find_staged(r, from)) >= 0)
			req_drop_staged(r, i);
		free(f.blob);
	} else {
		/* The temporary's bytes become the input, checked as at close. */
		staged_file f = r->staged[i];
		r->staged[i] = r->staged[--r->n_staged];
		rc = commit_locked(r, to, f.blob, f.len, err);
		if (rc < 0 && rc != -EAGAIN) {
			/* A failed rename changes nothing: the temporary stays. */
			r->staged[r->n_staged++] = f;
		} else {
			free(f.name);
			free(f.blob);
		}
	}
	req_recharge_locked(r);
	unlock_and_run(r);
	return rc;
}

/* The input a file name "NAME.EXT" is for: its index, format and name;
 * -ENOENT (recorded) when there is none. */
static int input_of_file(mfs_request *r, const char *filename, int *idx, int *fmt,
			 char name[256], mfs_error *err)
{
	size_t name_len;
	*fmt = mfs_format_split_filename(filename, &name_len);
	if (*fmt < 0 || name_len >= 256)
		return req_record(r, mfs_fail(err, ENOENT, "'%s': not NAME.EXT with EXT one of npy, json, txt, raw, pb",
					      filename), err);
	memcpy(name, filename, name_len);
	name[name_len] = '\0';
	*idx = req_input_index(r, name);
	if (*idx < 0)
		return req_record(r, mfs_fail(err, ENOENT, "'%s': model '%s' has no input named '%s'",
					      filename, r->v->model_name, name), err);
	if (mfs_value_format_ok((mfs_format)*fmt, r->cfg->inputs[*idx].kind,
				r->cfg->inputs[*idx].elem_kind, name, err) < 0)
		return req_record(r, -EINVAL, err);
	return 0;
}

int mfs_request_check_file_name(mfs_request *r, const char *filename, mfs_error *err)
{
	int idx, fmt, rc = 0;
	char name[256];
	if (filename[0] == '.')
		return 0;
	pthread_mutex_lock(&r->lock);
	rc = input_of_file(r, filename, &idx, &fmt, name, err);
	pthread_mutex_unlock(&r->lock);
	return rc;
}

/* The file's bytes are kept (to read back); a .npy tensor is a view into
 * them rather than a second copy. */
static int commit_locked(mfs_request *r, const char *filename, const void *buf,
			 size_t len, mfs_error *err)
{
	char *blob = malloc(len ? len : 1);
	if (!blob)
		return req_record(r, mfs_fail(err, ENOMEM, "out of memory"), err);
	if (len)
		memcpy(blob, buf, len);
	int rc = commit_owned_locked(r, filename, &blob, len, NULL, err);
	free(blob);
	return rc;
}

/* commit_locked on bytes the request takes over: *blobp is set to NULL
 * when taken, and left to the caller when the commit fails. */
static int commit_owned_locked(mfs_request *r, const char *filename, char **blobp,
			       size_t len, const char *link, mfs_error *err)
{
	char *blob = *blobp;
	int fmt, idx;
	char *fname = NULL, *link_copy = NULL;
	char name[256];
	int rc = input_of_file(r, filename, &idx, &fmt, name, err);
	if (rc < 0)
		goto out;
	if (r->state == MFS_REQ_QUEUED || r->state == MFS_REQ_RUNNING) {
		rc = req_record(r, mfs_fail(err, EBUSY, "'%s': the request is %s; write inputs after it ends",
					    filename, r->state == MFS_REQ_QUEUED ? "queued" : "running"), err);
		goto out;
	}
	input_slot *s = &r->in[idx];
	uint64_t others = req_input_bytes_locked(r) - (s->present ? (s->blob ? s->blob_len : s->t.nbytes) : 0);
	if (others + len > r->max_bytes) {
		rc = req_record(r, mfs_fail(err, EFBIG, "'%s': the request's inputs would be %" PRIu64
					    " bytes, more than --max-request-bytes=%" PRIu64,
					    filename, others + len, r->max_bytes), err);
		goto out;
	}
	mfs_tensor_spec spec;
	mfs_config_input_spec(r->cfg, idx, &spec);
	/* A generator's prompt (request_generate.c) is its ids in order: a
	 * .txt of them (one line or one a line) is read as one row. */
	bool prompt = req_gen_input_locked(r, idx);
	if (prompt && fmt == MFS_FMT_TXT) {
		spec.rank = 1;
		spec.dims[0] = -1;
	}
	mfs_tensor t = { 0 };
	uint64_t t0 = mfs_now_ns();
	fname = strdup(filename);
	link_copy = link ? strdup(link) : NULL;
	if (!fname || (link && !link_copy)) {
		rc = req_record(r, mfs_fail(err, ENOMEM, "out of memory"), err);
		goto out;
	}
	if (r->cfg->inputs[idx].kind != MFS_KIND_TENSOR)
		rc = mfs_value_decode((mfs_format)fmt, blob, len, &spec,
				      r->cfg->inputs[idx].kind,
				      r->cfg->inputs[idx].elem_kind, &t, err);
	else
		rc = mfs_tensor_decode_view((mfs_format)fmt, blob, len, &spec, &t, err);
	if (rc == 0 && !prompt && (rc = mfs_config_check_batch(r->cfg, idx, &t.shape, err)) < 0)
		mfs_tensor_release(&t);
	mfs_shape model_shape = t.shape;
	if (rc == 0 && t.kind == MFS_KIND_TENSOR && !prompt) {
		rc = mfs_config_input_to_model(r->cfg, idx, &t.shape, &model_shape, err);
		if (rc < 0)
			mfs_tensor_release(&t);
	}
	if (rc < 0) {
		if (rc != -ENOMEM)
			rc = -EINVAL;
		err->code = -rc;
		mfs_error_prefix(err, "'%s': ", filename);
		rc = req_record(r, rc, err);
		goto out;
	}
	begin_new_run(r);
	req_clear_slot(s);
	s->present = true;
	s->t = t;
	s->filename = fname;
	s->blob = blob;
	s->blob_len = len;
	s->link = link_copy;
	s->model_shape = model_shape;
	*blobp = NULL;
	fname = link_copy = NULL;
	r->decode_ns += mfs_now_ns() - t0;
	if (!r->have_fmt) {
		r->have_fmt = true;
		r->list_fmt = (mfs_format)fmt;
	}
	mfs_error_clear(&r->error);
	if (req_gen_input_locked(r, idx)) {
		if ((rc = req_gen_start_locked(r, idx, err)) < 0) {
			mfs_error_prefix(err, "'%s': ", filename);
			rc = req_record(r, rc, err);
		}
	} else if (all_present(r)) {
		rc = submit_locked(r, err);
	}
out:
	free(fname);
	free(link_copy);
	return rc;
}

int mfs_request_submit_tensors(mfs_request *r, mfs_tensor *tensors,
			       mfs_error *err)
{
	int rc;
	pthread_mutex_lock(&r->lock);
	r->last_use = mfs_now_ns();
	if (r->state == MFS_REQ_QUEUED || r->state == MFS_REQ_RUNNING) {
		rc = req_record(r, mfs_fail(err, EBUSY, "the request is still running"), err);
		for (int i = 0; i < r->n_in; i++)
			mfs_tensor_release(&tensors[i]);
		goto out;
	}
	begin_new_run(r);
	uint64_t total = 0;
	for (int i = 0; i < r->n_in; i++)
		total += tensors[i].nbytes;
	for (int i = 0; i < r->n_in; i++) {
		req_clear_slot(&r->in[i]);
		if (tensors[i].dtype != MFS_DT_UNDEFINED) {
			mfs_error ignored;
			r->in[i].t = tensors[i];
			r->in[i].present = true;
			/* The infer file's parser checked the shape; a shape
			 * that does not map goes to the engine as given. */
			if (mfs_config_input_to_model(r->cfg, i, &tensors[i].shape,
						      &r->in[i].model_shape, &ignored) < 0)
				r->in[i].model_shape = tensors[i].shape;
		}
		tensors[i] = (mfs_tensor){ 0 };
	}
	if (total > r->max_bytes) {
		for (int i = 0; i < r->n_in; i++)
			req_clear_slot(&r->in[i]);
		rc = req_record(r, mfs_fail(err, EFBIG, "the request's inputs are %" PRIu64
					    " bytes, more than --max-request-bytes=%" PRIu64,
					    total, r->max_bytes), err);
		goto out;
	}
	if (!all_present(r)) {
		for (int i = 0; i < r->n_in; i++)
			if (!r->in[i].present && !r->cfg->inputs[i].optional) {
				rc = mfs_fail(err, ENOENT, "input '%s' is missing", r->cfg->inputs[i].name);
				break;
			}
		for (int i = 0; i < r->n_in; i++)
			req_clear_slot(&r->in[i]);
		rc = req_record(r, -ENOENT, err);
		goto out;
	}
	rc = submit_locked(r, err);
	if (rc == 0 && r->state == MFS_REQ_FAILED)
		rc = -EAGAIN;   /* the version went away between lookup and submit */
out:
	req_recharge_locked(r);
	unlock_and_run(r);
	return rc;
}

void mfs_request_note_error(mfs_request *r, const mfs_error *err)
{
	pthread_mutex_lock(&r->lock);
	req_record(r, -err->code, err);
	req_recharge_locked(r);
	pthread_mutex_unlock(&r->lock);
}

/* "INPUT0 INPUT1" into buf (lock held). */
void req_missing_inputs(const mfs_request *r, char *buf, size_t size)
{
	size_t at = 0;
	buf[0] = '\0';
	for (int i = 0; i < r->n_in; i++)
		if (!r->in[i].present && !r->cfg->inputs[i].optional && at < size)
			at += (size_t)snprintf(buf + at, size - at, "%s%s", at ? " " : "",
					       r->cfg->inputs[i].name);
}

static void job_done(mfs_job *job)
{
	mfs_request *r = job->arg;
	pthread_mutex_lock(&r->lock);
	release_run_in(r);
	r->tr.valid = true;
	r->tr.run = r->runs;
	r->tr.decode = r->decode_ns;
	r->tr.queue = job->t_start - job->t_enqueue;
	r->tr.input = job->t_input - job->t_start;
	r->tr.infer = job->t_infer - job->t_input;
	r->tr.output = job->t_end - job->t_infer;
	r->tr.total = job->t_end - job->t_enqueue;
	r->tr.batch_size = job->batch_size;
	r->tr.batch_requests = job->batch_requests;
	r->tr.cache_hit = false;
	if (job->status == 0) {
		r->state = MFS_REQ_DONE;
		for (int i = 0; i < r->n_out; i++) {
			mfs_tensor *t = &r->run_out[r->out_graph_idx[i]];
			mfs_shape client;
			mfs_error e;
			if (mfs_config_output_from_model(r->cfg, i, &t->shape, &client, &e) == 0)
				t->shape = client;
		}
	} else {
		r->state = MFS_REQ_FAILED;
		for (int i = 0; i < r->n_gout; i++)
			mfs_tensor_release(&r->run_out[i]);
		req_record_counted(r, job->status, &job->err);
	}
	req_cache_keep_locked(r, job->status == 0);
	r->decode_ns = 0;
	r->last_use = mfs_now_ns();
	mfs_waiter *list = r->waiters;
	r->waiters = NULL;
	for (mfs_waiter *w = list; w; w = w->next)
		w->wstate = W_WOKEN;
	req_recharge_locked(r);
	pthread_mutex_unlock(&r->lock);
	/* wake() may free the waiter: read next first. */
	while (list) {
		mfs_waiter *next = list->next;
		list->next = list->prev = NULL;
		list->wake(list);
		list = next;
	}
	mfs_request_put(r);
}

int mfs_request_wait(mfs_request *r, mfs_waiter *w)
{
	int rc;
	pthread_mutex_lock(&r->lock);
	if (w->wstate == W_CANCELLED) {
		rc = -EINTR;
	} else if (r->state == MFS_REQ_QUEUED || r->state == MFS_REQ_RUNNING) {
		w->req = r;
		w->wstate = W_QUEUED;
		w->prev = NULL;
		w->next = r->waiters;
		if (r->waiters)
			r->waiters->prev = w;
		r->waiters = w;
		rc = 1;
	} else {
		rc = 0;
	}
	pthread_mutex_unlock(&r->lock);
	return rc;
}

bool mfs_request_cancel_wait(mfs_request *r, mfs_waiter *w)
{
	bool removed = false;
	pthread_mutex_lock(&r->lock);
	if (w->wstate == W_QUEUED) {
		if (w->prev)
			w->prev->next = w->next;
		else
			r->waiters = w->next;
		if (w->next)
			w->next->prev = w->prev;
		w->next = w->prev = NULL;
		w->wstate = W_CANCELLED;
		removed = true;
	} else if (w->wstate == W_NEW) {
		w->wstate = W_CANCELLED;
	}
	pthread_mutex_unlock(&r->lock);
	return removed;
}

bool mfs_request_use(mfs_request *r)
{
	if (mfs_request_removed(r))
		return false;
	pthread_mutex_lock(&r->lock);
	r->last_use = mfs_now_ns();
	pthread_mutex_unlock(&r->lock);
	return true;
}

uint64_t mfs_request_last_use(mfs_request *r)
{
	pthread_mutex_lock(&r->lock);
	uint64_t t = r->last_use;
	pthread_mutex_unlock(&r->lock);
	return t;
}

bool mfs_request_busy(mfs_request *r)
{
	pthread_mutex_lock(&r->lock);
	bool b = r->state == MFS_REQ_QUEUED || r->state == MFS_REQ_RUNNING || r->waiters;
	pthread_mutex_unlock(&r->lock);
	return b;
}

void mfs_request_mark_removed(mfs_request *r)
{
	__atomic_store_n(&r->removed, true, __ATOMIC_RELEASE);
	/* Nobody can ask for the result any more unless a read already
	 * waits for it: stop the run (a Loop without end would otherwise
	 * hold the instance for good).  An ensemble's steps run on. */
	pthread_mutex_lock(&r->lock);
	if (r->generation)
		mfs_gen_cancel(r->generation);
	if ((r->state == MFS_REQ_QUEUED || r->state == MFS_REQ_RUNNING) && !r->waiters &&
	    !r->v->plan && !r->v->seqb)   /* a sequence's step runs: the state goes on */
		mfs_sched_cancel(r->v->queue, &r->job);
	pthread_mutex_unlock(&r->lock);
}

bool mfs_request_removed(mfs_request *r)
{
	return __atomic_load_n(&r->removed, __ATOMIC_ACQUIRE);
}

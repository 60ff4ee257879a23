/* request.c - see request.h.
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
#include "classify.h"
#include "ensemble.h"
#include "log.h"
#include "membudget.h"
#include "metrics.h"
#include "queue_policy.h"

enum { W_NEW = 0, W_QUEUED, W_CANCELLED, W_WOKEN };

typedef struct input_slot {
	bool present;
	mfs_tensor t;
	char *filename;            /* as written: "INPUT0.npy"; NULL for tensors */
	char *blob;                /* the file's bytes, to read back */
	size_t blob_len;
	char *link;                /* committed by symlink: its text (for readlink), else NULL */
	int graph_idx;
	mfs_shape model_shape;     /* t's shape as the graph sees it (config reshape) */
} input_slot;

/* A file whose name starts with '.': a temporary a tool writes before
 * renaming it into place (cp --backup, rsync, editors, Python's
 * tempfile + os.replace).  Kept as bytes; checked when renamed to an
 * input's name. */
typedef struct staged_file {
	char *name;
	char *blob;
	size_t len;
} staged_file;

typedef struct enc_cache {
	char *buf;
	size_t len;
	bool valid;
} enc_cache;

typedef struct trace {
	bool valid;
	uint64_t run, decode, queue, input, infer, output, total;
	int batch_size, batch_requests;
} trace;

struct mfs_request {
	pthread_mutex_t lock;
	int refs;                  /* atomic */
	char *name;
	mfs_version *v;
	mfs_queue *run_here;        /* a job submit left to this thread (unlock_and_run) */
	mfs_ensemble_run *ens_start;   /* an ensemble run to start once unlocked */
	const mfs_model_config *cfg;
	uint64_t max_bytes;
	int n_in, n_out;           /* config inputs/outputs */
	int n_gin, n_gout;         /* graph inputs/outputs */
	input_slot *in;
	int *out_graph_idx;        /* config output -> graph output */
	mfs_tensor *run_in;        /* n_gin: the run in flight's inputs */
	char **run_blob;           /* n_gin: the file bytes a run_in tensor points into, or NULL */
	mfs_tensor *run_out;       /* n_gout: filled by the run */
	enc_cache *enc;            /* n_out * MFS_FMT_COUNT, for the last DONE run */
	mfs_req_state state;
	mfs_error error;           /* code 0: none */
	bool have_fmt;
	mfs_format list_fmt;
	uint64_t decode_ns;        /* decoding the current run's inputs */
	uint64_t runs;
	uint64_t gen;              /* the run inputs go to now: +1 when a finished run's result is dropped */
	trace tr;
	mfs_job job;
	mfs_waiter *waiters;       /* doubly linked, NULL-terminated */
	uint64_t last_use;
	bool removed;              /* atomic */
	staged_file *staged;       /* dot files: kept as written, never decoded */
	int n_staged;
	uint64_t charged;          /* bytes counted in the daemon's --max-memory budget */
	int64_t priority;          /* chosen by .priority or infer's "priority"; 0: the default */
	int64_t timeout_us;        /* chosen by .timeout or infer's "timeout"; 0: the default */
};

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
static void recharge_locked(mfs_request *r)
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

static void clear_slot(input_slot *s);

static void free_request(mfs_request *r)
{
	mfs_membudget_give(r->charged);
	for (int i = 0; r->in && i < r->n_in; i++)
		clear_slot(&r->in[i]);
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
	free(r->in);
	free(r->out_graph_idx);
	free(r->run_in);
	free(r->run_blob);
	free(r->run_out);
	free(r->enc);
	free(r->name);
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

static int input_index(const mfs_request *r, const char *name)
{
	for (int i = 0; i < r->n_in; i++)
		if (strcmp(r->cfg->inputs[i].name, name) == 0)
			return i;
	return -1;
}

static int output_index(const mfs_request *r, const char *name)
{
	for (int i = 0; i < r->n_out; i++)
		if (strcmp(r->cfg->outputs[i].name, name) == 0)
			return i;
	return -1;
}

static uint64_t input_bytes_locked(const mfs_request *r)
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
static int record(mfs_request *r, int rc, const mfs_error *err)
{
	r->error = *err;
	mfs_log_warn("model '%s' version %" PRId64 " request '%s': %s", r->v->model_name,
		     r->v->version, r->name, err->msg);
	return rc;
}

static void clear_slot(input_slot *s)
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
		return record(r, -EINVAL, err);
	}
	r->job.priority = (int)r->priority;
	r->job.timeout_ns = (uint64_t)r->timeout_us * 1000u;
	release_run_in(r);
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
			return record(r, -ENOMEM, err);
		}   /* an optional left out: one without a value */
		clear_slot(s);
	}
	r->state = MFS_REQ_QUEUED;
	r->runs++;
	mfs_request_get(r);
	int rc;
	if (r->v->plan) {
		/* An ensemble: its steps' queues run it (ensemble.h), from
		 * unlock_and_run. */
		rc = mfs_ensemble_prepare(r->v->registry, r->v, &r->job, &r->ens_start, err);
	} else {
		rc = mfs_sched_submit_here(r->v->queue, &r->job, err);
		if (rc == 0 && r->job.here)
			r->run_here = r->v->queue;
	}
	if (rc < 0) {
		mfs_request_put(r);   /* never the last: the caller holds one */
		release_run_in(r);
		r->state = MFS_REQ_FAILED;
		r->tr = (trace){ 0 };
		record(r, rc, err);
		/* A closed queue means the version went away: the run failed
		 * (read: EIO); the inputs themselves were fine. */
		if (rc == -ESHUTDOWN)
			rc = 0;
	}
	return rc;
}

static int find_staged(const mfs_request *r, const char *name)
{
	for (int i = 0; i < r->n_staged; i++)
		if (strcmp(r->staged[i].name, name) == 0)
			return i;
	return -1;
}

/* The request-directory files that set the request's queue parameters
 * rather than hold a tensor (SPEC.md section 4). */
enum { PARAM_NONE, PARAM_PRIORITY, PARAM_TIMEOUT };

static int param_of(const char *filename)
{
	return strcmp(filename, ".priority") == 0 ? PARAM_PRIORITY :
	       strcmp(filename, ".timeout") == 0 ? PARAM_TIMEOUT : PARAM_NONE;
}

/* Parse and check a parameter file's bytes against the model's queue
 * policy (lock held; r->priority is the priority a timeout is checked
 * for).  0 and *value, or -EINVAL with err naming the file. */
static int parse_param_locked(mfs_request *r, int param, const void *buf, size_t len,
			      int64_t *value, mfs_error *err)
{
	bool prio = param == PARAM_PRIORITY;
	int rc = mfs_queue_parse_param(prio ? "'.priority'" : "'.timeout' (µs)", buf, len,
				       prio ? MFS_MAX_PRIORITY_LEVELS : MFS_MAX_QUEUE_TIMEOUT_US,
				       value, err);
	if (rc < 0)
		return rc;
	rc = prio ? mfs_queue_check_priority(r->cfg, r->v->model_name, *value, err)
		  : mfs_queue_check_timeout(r->cfg, r->v->model_name, r->priority, *value, err);
	if (rc < 0)
		mfs_error_prefix(err, "%s: ", prio ? "'.priority'" : "'.timeout'");
	return rc;
}

int mfs_request_check_param(mfs_request *r, const char *filename, const void *buf,
			    size_t len, mfs_error *err)
{
	int param = param_of(filename);
	int64_t value;
	if (param == PARAM_NONE)
		return 0;
	pthread_mutex_lock(&r->lock);
	int rc = parse_param_locked(r, param, buf, len, &value, err);
	pthread_mutex_unlock(&r->lock);
	return rc;
}

int mfs_request_set_queue_params(mfs_request *r, int64_t priority, int64_t timeout_us,
				 mfs_error *err)
{
	pthread_mutex_lock(&r->lock);
	int rc = mfs_queue_check_priority(r->cfg, r->v->model_name, priority, err);
	if (rc == 0)
		rc = mfs_queue_check_timeout(r->cfg, r->v->model_name, priority, timeout_us, err);
	if (rc == 0) {
		r->priority = priority;
		r->timeout_us = timeout_us;
	}
	pthread_mutex_unlock(&r->lock);
	return rc;
}

static void drop_staged(mfs_request *r, int i)
{
	if (param_of(r->staged[i].name) == PARAM_PRIORITY)
		r->priority = 0;
	else if (param_of(r->staged[i].name) == PARAM_TIMEOUT)
		r->timeout_us = 0;
	free(r->staged[i].name);
	free(r->staged[i].blob);
	r->staged[i] = r->staged[--r->n_staged];
}

/* Keep a dot file's bytes (lock held). */
static int stage_locked(mfs_request *r, const char *filename, const void *buf,
			size_t len, mfs_error *err)
{
	int i = find_staged(r, filename);
	uint64_t others = input_bytes_locked(r) - (i >= 0 ? r->staged[i].len : 0);
	if (others + len > r->max_bytes)
		return record(r, mfs_fail(err, EFBIG, "'%s': the request's files would be %" PRIu64
					  " bytes, more than --max-request-bytes=%" PRIu64,
					  filename, others + len, r->max_bytes), err);
	int param = param_of(filename);
	int64_t value = 0;
	if (param != PARAM_NONE && parse_param_locked(r, param, buf, len, &value, err) < 0)
		return record(r, -EINVAL, err);
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
	recharge_locked(r);
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
	recharge_locked(r);
	unlock_and_run(r);
	return rc;
}

char *mfs_request_input_link(mfs_request *r, const char *filename)
{
	pthread_mutex_lock(&r->lock);
	char *link = NULL;
	for (int i = 0; i < r->n_in && !link; i++)
		if (r->in[i].present && r->in[i].link && strcmp(r->in[i].filename, filename) == 0)
			link = strdup(r->in[i].link);
	pthread_mutex_unlock(&r->lock);
	return link;
}

int mfs_request_commit_file(mfs_request *r, const char *filename,
			    const void *buf, size_t len, mfs_error *err)
{
	pthread_mutex_lock(&r->lock);
	r->last_use = mfs_now_ns();
	int rc = filename[0] == '.' ? stage_locked(r, filename, buf, len, err)
				    : commit_locked(r, filename, buf, len, err);
	recharge_locked(r);
	unlock_and_run(r);
	return rc;
}

int mfs_request_rename_file(mfs_request *r, const char *from, const char *to,
			    mfs_error *err)
{
	int rc;
	pthread_mutex_lock(&r->lock);
	r->last_use = mfs_now_ns();
	int i = find_staged(r, from);
	if (i < 0) {
		rc = mfs_fail(err, EXDEV, "'%s': only a dot file (a temporary) can be renamed", from);
	} else if (to[0] == '.') {
		staged_file f = r->staged[i];
		r->staged[i].blob = NULL;
		rc = stage_locked(r, to, f.blob, f.len, err);
		if (rc == 0 && (i = find_staged(r, from)) >= 0)
			drop_staged(r, i);
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
	recharge_locked(r);
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
		return record(r, mfs_fail(err, ENOENT, "'%s': not NAME.EXT with EXT one of npy, json, txt, raw, pb",
					  filename), err);
	memcpy(name, filename, name_len);
	name[name_len] = '\0';
	*idx = input_index(r, name);
	if (*idx < 0)
		return record(r, mfs_fail(err, ENOENT, "'%s': model '%s' has no input named '%s'",
					  filename, r->v->model_name, name), err);
	if (mfs_value_format_ok((mfs_format)*fmt, r->cfg->inputs[*idx].kind,
				r->cfg->inputs[*idx].elem_kind, name, err) < 0)
		return record(r, -EINVAL, err);
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
		return record(r, mfs_fail(err, ENOMEM, "out of memory"), err);
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
		rc = record(r, mfs_fail(err, EBUSY, "'%s': the request is %s; write inputs after it ends",
					filename, r->state == MFS_REQ_QUEUED ? "queued" : "running"), err);
		goto out;
	}
	input_slot *s = &r->in[idx];
	uint64_t others = input_bytes_locked(r) - (s->present ? (s->blob ? s->blob_len : s->t.nbytes) : 0);
	if (others + len > r->max_bytes) {
		rc = record(r, mfs_fail(err, EFBIG, "'%s': the request's inputs would be %" PRIu64
					" bytes, more than --max-request-bytes=%" PRIu64,
					filename, others + len, r->max_bytes), err);
		goto out;
	}
	mfs_tensor_spec spec;
	mfs_config_input_spec(r->cfg, idx, &spec);
	mfs_tensor t = { 0 };
	uint64_t t0 = mfs_now_ns();
	fname = strdup(filename);
	link_copy = link ? strdup(link) : NULL;
	if (!fname || (link && !link_copy)) {
		rc = record(r, mfs_fail(err, ENOMEM, "out of memory"), err);
		goto out;
	}
	if (r->cfg->inputs[idx].kind != MFS_KIND_TENSOR)
		rc = mfs_value_decode((mfs_format)fmt, blob, len, &spec,
				      r->cfg->inputs[idx].kind,
				      r->cfg->inputs[idx].elem_kind, &t, err);
	else
		rc = mfs_tensor_decode_view((mfs_format)fmt, blob, len, &spec, &t, err);
	if (rc == 0 && r->cfg->max_batch_size > 0 && t.shape.rank > 0 &&
	    t.shape.dims[0] > r->cfg->max_batch_size) {
		rc = mfs_fail(err, EINVAL, "input '%s': batch of %" PRId64 " exceeds max_batch_size %d",
			      name, t.shape.dims[0], r->cfg->max_batch_size);
		mfs_tensor_release(&t);
	}
	mfs_shape model_shape = t.shape;
	if (rc == 0 && t.kind == MFS_KIND_TENSOR) {
		rc = mfs_config_input_to_model(r->cfg, idx, &t.shape, &model_shape, err);
		if (rc < 0)
			mfs_tensor_release(&t);
	}
	if (rc < 0) {
		if (rc != -ENOMEM)
			rc = -EINVAL;
		err->code = -rc;
		mfs_error_prefix(err, "'%s': ", filename);
		rc = record(r, rc, err);
		goto out;
	}
	begin_new_run(r);
	clear_slot(s);
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
	if (all_present(r))
		rc = submit_locked(r, err);
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
		rc = record(r, mfs_fail(err, EBUSY, "the request is still running"), err);
		for (int i = 0; i < r->n_in; i++)
			mfs_tensor_release(&tensors[i]);
		goto out;
	}
	begin_new_run(r);
	uint64_t total = 0;
	for (int i = 0; i < r->n_in; i++)
		total += tensors[i].nbytes;
	for (int i = 0; i < r->n_in; i++) {
		clear_slot(&r->in[i]);
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
			clear_slot(&r->in[i]);
		rc = record(r, mfs_fail(err, EFBIG, "the request's inputs are %" PRIu64
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
			clear_slot(&r->in[i]);
		rc = record(r, -ENOENT, err);
		goto out;
	}
	rc = submit_locked(r, err);
	if (rc == 0 && r->state == MFS_REQ_FAILED)
		rc = -EAGAIN;   /* the version went away between lookup and submit */
out:
	recharge_locked(r);
	unlock_and_run(r);
	return rc;
}

void mfs_request_note_error(mfs_request *r, const mfs_error *err)
{
	pthread_mutex_lock(&r->lock);
	record(r, -err->code, err);
	recharge_locked(r);
	pthread_mutex_unlock(&r->lock);
}

static input_slot *slot_by_file(mfs_request *r, const char *filename)
{
	for (int i = 0; i < r->n_in; i++)
		if (r->in[i].present && r->in[i].filename && strcmp(r->in[i].filename, filename) == 0)
			return &r->in[i];
	return NULL;
}

int mfs_request_remove_input(mfs_request *r, const char *filename)
{
	pthread_mutex_lock(&r->lock);
	input_slot *s = slot_by_file(r, filename);
	int i = find_staged(r, filename);
	if (s)
		clear_slot(s);
	else if (i >= 0)
		drop_staged(r, i);
	recharge_locked(r);
	pthread_mutex_unlock(&r->lock);
	return s || i >= 0 ? 0 : -ENOENT;
}

/* Bytes held by the committed input or temporary named filename, or -1
 * (lock held). */
static int64_t file_size_locked(mfs_request *r, const char *filename)
{
	input_slot *s = slot_by_file(r, filename);
	int i = s ? -1 : find_staged(r, filename);
	return s ? (int64_t)s->blob_len : i >= 0 ? (int64_t)r->staged[i].len : -1;
}

mfs_file_kind mfs_request_find_file(mfs_request *r, const char *filename,
				    mfs_file_info *info)
{
	size_t nl;
	char base[256];
	int f = mfs_format_split_filename(filename, &nl);
	memset(info, 0, sizeof(*info));
	if (f >= 0 && nl < sizeof(base)) {
		memcpy(base, filename, nl);
		base[nl] = '\0';
		/* Config names are fixed for the request's life: no lock. */
		if ((info->idx = output_index(r, base)) >= 0) {
			info->fmt = (mfs_format)f;
			return info->kind = MFS_FILE_OUTPUT;
		}
		/* "OUTPUT.top5.txt": the classification view. */
		char *dot = strrchr(base, '.');
		int64_t k = f == MFS_FMT_TXT && dot ? mfs_classify_parse_topk(dot + 1, strlen(dot + 1)) : 0;
		if (k > 0 && k <= MFS_VIEW_TOPK_MAX) {
			*dot = '\0';
			if ((info->idx = output_index(r, base)) >= 0) {
				info->fmt = MFS_VIEW_TOPK(k);
				return info->kind = MFS_FILE_OUTPUT;
			}
		}
	}
	pthread_mutex_lock(&r->lock);
	info->size = file_size_locked(r, filename);
	input_slot *s = slot_by_file(r, filename);
	info->link = s && s->link;
	pthread_mutex_unlock(&r->lock);
	if (info->size >= 0)
		info->kind = MFS_FILE_INPUT;
	else if (filename[0] == '.' || (f >= 0 && nl < sizeof(base) && input_index(r, base) >= 0))
		info->kind = MFS_FILE_INPUT_NAME;
	return info->kind;
}

uint64_t mfs_request_room(mfs_request *r, const char *filename)
{
	pthread_mutex_lock(&r->lock);
	int64_t mine = file_size_locked(r, filename);
	uint64_t others = input_bytes_locked(r) - (mine > 0 ? (uint64_t)mine : 0);
	uint64_t room = others < r->max_bytes ? r->max_bytes - others : 0;
	pthread_mutex_unlock(&r->lock);
	return room;
}

int mfs_request_input_file(mfs_request *r, const char *filename,
			   char **buf, size_t *len)
{
	int rc = 0;
	pthread_mutex_lock(&r->lock);
	input_slot *s = slot_by_file(r, filename);
	int i = find_staged(r, filename);
	const char *src = s ? s->blob : i >= 0 ? r->staged[i].blob : NULL;
	size_t n = s ? s->blob_len : i >= 0 ? r->staged[i].len : 0;
	if (!s && i < 0) {
		rc = -ENOENT;
	} else if (!(*buf = malloc(n ? n : 1))) {
		rc = -ENOMEM;
	} else {
		if (n)
			memcpy(*buf, src, n);
		*len = n;
	}
	pthread_mutex_unlock(&r->lock);
	return rc;
}

/* "INPUT0 INPUT1" into buf (lock held). */
static void missing_inputs(const mfs_request *r, char *buf, size_t size)
{
	size_t at = 0;
	buf[0] = '\0';
	for (int i = 0; i < r->n_in; i++)
		if (!r->in[i].present && !r->cfg->inputs[i].optional && at < size)
			at += (size_t)snprintf(buf + at, size - at, "%s%s", at ? " " : "",
					       r->cfg->inputs[i].name);
}

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
		missing_inputs(r, miss, sizeof(miss));
		rc = mfs_fail(err, ENODATA, "model '%s' request '%s': no result yet, inputs missing: %s",
			      r->v->model_name, r->name, miss);
		/* For $req/error (SPEC section 4); the caller logs it. */
		r->error = *err;
		break;
	}
	case MFS_REQ_FAILED:
		/* A request that waited past its queue timeout says so. */
		*err = r->error;
		err->code = r->error.code == ETIMEDOUT ? ETIMEDOUT : EIO;
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
	recharge_locked(r);
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
	recharge_locked(r);
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
		record(r, job->status, &job->err);
	}
	r->decode_ns = 0;
	r->last_use = mfs_now_ns();
	mfs_waiter *list = r->waiters;
	r->waiters = NULL;
	for (mfs_waiter *w = list; w; w = w->next)
		w->wstate = W_WOKEN;
	recharge_locked(r);
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

char *mfs_request_status_text(mfs_request *r)
{
	char buf[MFS_ERROR_MSG_MAX + 64];
	pthread_mutex_lock(&r->lock);
	switch (r->state) {
	case MFS_REQ_WAITING: {
		char miss[512];
		missing_inputs(r, miss, sizeof(miss));
		snprintf(buf, sizeof(buf), "WAITING %s\n", miss);
		break;
	}
	case MFS_REQ_QUEUED: snprintf(buf, sizeof(buf), "QUEUED\n"); break;
	case MFS_REQ_RUNNING: snprintf(buf, sizeof(buf), "RUNNING\n"); break;
	case MFS_REQ_DONE: snprintf(buf, sizeof(buf), "DONE\n"); break;
	case MFS_REQ_FAILED: snprintf(buf, sizeof(buf), "FAILED %s\n", r->error.msg); break;
	}
	pthread_mutex_unlock(&r->lock);
	return strdup(buf);
}

char *mfs_request_error_text(mfs_request *r)
{
	char buf[MFS_ERROR_MSG_MAX + 2];
	pthread_mutex_lock(&r->lock);
	if (r->error.code)
		snprintf(buf, sizeof(buf), "%s\n", r->error.msg);
	else
		buf[0] = '\0';
	pthread_mutex_unlock(&r->lock);
	return strdup(buf);
}

char *mfs_request_trace_json(mfs_request *r)
{
	char buf[1024];
	pthread_mutex_lock(&r->lock);
	const trace *t = &r->tr;
	const char *state = r->state == MFS_REQ_WAITING ? "WAITING" : r->state == MFS_REQ_QUEUED ? "QUEUED"
			  : r->state == MFS_REQ_RUNNING ? "RUNNING" : r->state == MFS_REQ_DONE ? "DONE" : "FAILED";
	if (!t->valid)
		snprintf(buf, sizeof(buf),
			 "{\"model\":\"%s\",\"version\":\"%" PRId64 "\",\"request\":\"%s\",\"state\":\"%s\",\"run\":0}\n",
			 r->v->model_name, r->v->version, r->name, state);
	else
		snprintf(buf, sizeof(buf),
			 "{\"model\":\"%s\",\"version\":\"%" PRId64 "\",\"request\":\"%s\",\"state\":\"%s\","
			 "\"run\":%" PRIu64 ",\"decode_ns\":%" PRIu64 ",\"queue_ns\":%" PRIu64
			 ",\"input_ns\":%" PRIu64 ",\"compute_ns\":%" PRIu64 ",\"output_ns\":%" PRIu64
			 ",\"total_ns\":%" PRIu64 ",\"batch_size\":%d,\"batch_requests\":%d,\"device\":\"%s\"}\n",
			 r->v->model_name, r->v->version, r->name, state, t->run, t->decode, t->queue,
			 t->input, t->infer, t->output, t->total, t->batch_size, t->batch_requests,
			 r->v->device);
	pthread_mutex_unlock(&r->lock);
	return strdup(buf);
}

int mfs_request_list(mfs_request *r, char ***names, int *n)
{
	pthread_mutex_lock(&r->lock);
	char **v = calloc((size_t)(r->n_in + r->n_out + r->n_staged) + 1, sizeof(char *));
	int k = 0;
	bool oom = !v;
	for (int i = 0; !oom && i < r->n_staged; i++)
		oom = !(v[k++] = strdup(r->staged[i].name));
	for (int i = 0; !oom && i < r->n_in; i++)
		if (r->in[i].present && r->in[i].filename)
			oom = !(v[k++] = strdup(r->in[i].filename));
	if (r->have_fmt) {
		const char *ext = mfs_format_ext(r->list_fmt);
		for (int i = 0; !oom && i < r->n_out; i++) {
			size_t len = strlen(r->cfg->outputs[i].name) + strlen(ext) + 2;
			if ((v[k] = malloc(len)))
				snprintf(v[k++], len, "%s.%s", r->cfg->outputs[i].name, ext);
			else
				oom = true;
		}
	}
	pthread_mutex_unlock(&r->lock);
	if (oom) {
		for (int i = 0; v && i < k; i++)
			free(v[i]);
		free(v);
		return -ENOMEM;
	}
	*names = v;
	*n = k;
	return 0;
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
	if ((r->state == MFS_REQ_QUEUED || r->state == MFS_REQ_RUNNING) && !r->waiters &&
	    !r->v->plan)
		mfs_sched_cancel(r->v->queue, &r->job);
	pthread_mutex_unlock(&r->lock);
}

bool mfs_request_removed(mfs_request *r)
{
	return __atomic_load_n(&r->removed, __ATOMIC_ACQUIRE);
}

/* request_params.c - a request's queue parameters (request.h,
 * SPEC.md section 4): the dot files ".priority" and ".timeout" (µs) and
 * the infer file's "priority" and "timeout", each checked against the
 * model's queue policy (queue_policy.h) before the request takes it;
 * and its sequence (".sequence_id", ".sequence_start", ".sequence_end",
 * SPEC.md section 12; sequence_batcher.h parses them).
 * Storing the dot file's bytes is request.c's (a dot file is kept as
 * written); this file only says what they mean.
 */
#include "request.h"

#include <pthread.h>
#include <string.h>

#include "queue_policy.h"
#include "request_internal.h"

int req_param_of(const char *filename)
{
	return strcmp(filename, ".priority") == 0 ? PARAM_PRIORITY :
	       strcmp(filename, ".timeout") == 0 ? PARAM_TIMEOUT :
	       strcmp(filename, ".sequence_id") == 0 ? PARAM_SEQ_ID :
	       strcmp(filename, ".sequence_start") == 0 ? PARAM_SEQ_START :
	       strcmp(filename, ".sequence_end") == 0 ? PARAM_SEQ_END : PARAM_NONE;
}

/* A sequence file's bytes parsed into p. */
static int parse_seq(int param, const void *buf, size_t len, mfs_seq_params *p, mfs_error *err)
{
	if (param == PARAM_SEQ_ID)
		return mfs_seq_parse_id("'.sequence_id'", buf, len, &p->id, err);
	return mfs_seq_parse_flag(param == PARAM_SEQ_START ? "'.sequence_start'" : "'.sequence_end'",
				  buf, len, param == PARAM_SEQ_START ? &p->start : &p->end, err);
}

void req_store_param_locked(mfs_request *r, int param, const void *buf, size_t len)
{
	mfs_error ignored;
	if (param == PARAM_SEQ_ID && !buf)
		r->seq.id = (mfs_seq_id){ 0 };
	else if (param >= PARAM_SEQ_ID)
		parse_seq(param, buf ? buf : "", buf ? len : 0, &r->seq, &ignored);
}

/* Parse and check a parameter file's bytes against the model's queue
 * policy (lock held; r->priority is the priority a timeout is checked
 * for).  0 and *value, or -EINVAL with err naming the file. */
int req_parse_param_locked(mfs_request *r, int param, const void *buf, size_t len,
			   int64_t *value, mfs_error *err)
{
	bool prio = param == PARAM_PRIORITY;
	if (param >= PARAM_SEQ_ID) {
		mfs_seq_params p = r->seq;
		*value = 0;
		return parse_seq(param, buf, len, &p, err) < 0 ? -EINVAL : 0;
	}
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

bool mfs_request_input_is_string(mfs_request *r, const char *filename)
{
	size_t nl = 0;
	bool yes = false;

	if (mfs_format_split_filename(filename, &nl) < 0)
		return false;
	pthread_mutex_lock(&r->lock);
	for (int i = 0; i < r->cfg->n_inputs; i++)
		if (strlen(r->cfg->inputs[i].name) == nl &&
		    !strncmp(r->cfg->inputs[i].name, filename, nl))
			yes = r->cfg->inputs[i].dtype == MFS_DT_STRING;
	pthread_mutex_unlock(&r->lock);
	return yes;
}

int mfs_request_check_param(mfs_request *r, const char *filename, const void *buf,
			    size_t len, mfs_error *err)
{
	int param = req_param_of(filename);
	int64_t value;
	if (param == PARAM_NONE)
		return 0;
	pthread_mutex_lock(&r->lock);
	int rc = req_parse_param_locked(r, param, buf, len, &value, err);
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

void mfs_request_set_seq_params(mfs_request *r, const mfs_seq_params *p)
{
	pthread_mutex_lock(&r->lock);
	r->seq = *p;
	pthread_mutex_unlock(&r->lock);
}

/* request_status.c - the text of $req/status, $req/error and
 * $req/trace.json (request.h, SPEC.md section 4): the request's state,
 * its last error, and where the last run's time went.
 */
#include "request.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "generate.h"
#include "request_internal.h"

char *mfs_request_status_text(mfs_request *r)
{
	char buf[MFS_ERROR_MSG_MAX + 64];
	pthread_mutex_lock(&r->lock);
	if (r->generation) {
		/* a generator's request directory: the generation's state */
		mfs_gen_status(r->generation, buf, sizeof(buf));
		pthread_mutex_unlock(&r->lock);
		return strdup(buf);
	}
	switch (r->state) {
	case MFS_REQ_WAITING: {
		char miss[512];
		req_missing_inputs(r, miss, sizeof(miss));
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
			 ",\"total_ns\":%" PRIu64 ",\"batch_size\":%d,\"batch_requests\":%d,\"device\":\"%s\","
			 "\"cache_hit\":%s}\n",
			 r->v->model_name, r->v->version, r->name, state, t->run, t->decode, t->queue,
			 t->input, t->infer, t->output, t->total, t->batch_size, t->batch_requests,
			 r->v->device, t->cache_hit ? "true" : "false");
	pthread_mutex_unlock(&r->lock);
	return strdup(buf);
}

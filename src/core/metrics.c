/* metrics.c - see metrics.h. */
#include "metrics.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t mfs_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void mfs_stats_init(mfs_stats *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
}

void mfs_stats_release(mfs_stats *s)
{
	pthread_mutex_destroy(&s->lock);
}

static void add(mfs_duration *d, uint64_t ns)
{
	d->count++;
	d->ns += ns;
}

void mfs_stats_add_request(mfs_stats *s, bool ok, uint64_t total_ns,
			   uint64_t queue_ns, uint64_t input_ns,
			   uint64_t infer_ns, uint64_t output_ns,
			   uint64_t batch_items)
{
	pthread_mutex_lock(&s->lock);
	if (ok) {
		add(&s->success, total_ns);
		add(&s->queue, queue_ns);
		add(&s->compute_input, input_ns);
		add(&s->compute_infer, infer_ns);
		add(&s->compute_output, output_ns);
		s->inference_count += batch_items;
	} else {
		add(&s->fail, total_ns);
	}
	s->last_inference_ms = wall_ms();
	pthread_mutex_unlock(&s->lock);
}

void mfs_stats_add_refused(mfs_stats *s, bool timed_out, uint64_t waited_ns)
{
	pthread_mutex_lock(&s->lock);
	add(&s->fail, waited_ns);
	add(timed_out ? &s->timed_out : &s->rejected, waited_ns);
	s->last_inference_ms = wall_ms();
	pthread_mutex_unlock(&s->lock);
}

void mfs_stats_add_cache_hit(mfs_stats *s, uint64_t total_ns, uint64_t hit_ns)
{
	pthread_mutex_lock(&s->lock);
	add(&s->success, total_ns);
	add(&s->cache_hit, hit_ns);
	s->last_inference_ms = wall_ms();
	pthread_mutex_unlock(&s->lock);
}

void mfs_stats_add_cache_miss(mfs_stats *s, uint64_t ns)
{
	pthread_mutex_lock(&s->lock);
	add(&s->cache_miss, ns);
	pthread_mutex_unlock(&s->lock);
}

void mfs_stats_add_execution(mfs_stats *s, int batch_size, uint64_t input_ns,
			     uint64_t infer_ns, uint64_t output_ns)
{
	int b = batch_size < 1 ? 1 : batch_size > MFS_STATS_MAX_BATCH ? MFS_STATS_MAX_BATCH : batch_size;
	pthread_mutex_lock(&s->lock);
	s->execution_count++;
	add(&s->batch[b].compute_input, input_ns);
	add(&s->batch[b].compute_infer, infer_ns);
	add(&s->batch[b].compute_output, output_ns);
	pthread_mutex_unlock(&s->lock);
}

void mfs_stats_snapshot(mfs_stats *s, mfs_stats *copy)
{
	pthread_mutex_lock(&s->lock);
	memcpy(copy, s, sizeof(*copy));
	pthread_mutex_unlock(&s->lock);
}

static json_t *dur_json(const mfs_duration *d)
{
	return json_pack("{s:I,s:I}", "count", (json_int_t)d->count, "ns", (json_int_t)d->ns);
}

json_t *mfs_stats_to_json(const char *model, int64_t version, mfs_stats *live)
{
	mfs_stats s;
	char vbuf[32];
	mfs_stats_snapshot(live, &s);
	snprintf(vbuf, sizeof(vbuf), "%" PRId64, version);
	json_t *inf = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}",
				"success", dur_json(&s.success),
				"fail", dur_json(&s.fail),
				"queue", dur_json(&s.queue),
				"compute_input", dur_json(&s.compute_input),
				"compute_infer", dur_json(&s.compute_infer),
				"compute_output", dur_json(&s.compute_output),
				"cache_hit", dur_json(&s.cache_hit),
				"cache_miss", dur_json(&s.cache_miss),
				"rejected", dur_json(&s.rejected),
				"timed_out", dur_json(&s.timed_out));
	json_t *batches = json_array();
	for (int b = 1; b <= MFS_STATS_MAX_BATCH; b++) {
		const mfs_batch_stat *bs = &s.batch[b];
		if (!bs->compute_infer.count)
			continue;
		json_array_append_new(batches,
			json_pack("{s:i,s:o,s:o,s:o}", "batch_size", b,
				  "compute_input", dur_json(&bs->compute_input),
				  "compute_infer", dur_json(&bs->compute_infer),
				  "compute_output", dur_json(&bs->compute_output)));
	}
	return json_pack("{s:s,s:s,s:I,s:I,s:I,s:o,s:o}",
			 "name", model, "version", vbuf,
			 "last_inference", (json_int_t)s.last_inference_ms,
			 "inference_count", (json_int_t)s.inference_count,
			 "execution_count", (json_int_t)s.execution_count,
			 "inference_stats", inf, "batch_stats", batches);
}

/* A growing text buffer; on allocation failure it stops growing and
 * remembers the failure. */
typedef struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
	va_list ap;
	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if (b->p && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = b->cap ? b->cap * 2 : 4096;
		while (cap < b->len + (size_t)n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
}

enum field {
	F_SUCCESS, F_FAILURE, F_COUNT, F_EXEC, F_REQ_US, F_QUEUE_US,
	F_IN_US, F_INFER_US, F_OUT_US, F_REJECTED, F_TIMED_OUT,
	F_CACHE_HITS, F_CACHE_MISSES, F_CACHE_HIT_US, F_CACHE_MISS_US,
};

static const struct {
	const char *name, *help;
	enum field f;
} counters[] = {
	{ "nv_inference_request_success", "Number of successful inference requests, all batch sizes", F_SUCCESS },
	{ "nv_inference_request_failure", "Number of failed inference requests, all batch sizes", F_FAILURE },
	{ "nv_inference_request_rejected", "Number of inference requests refused because the queue was full (max_queue_size); also counted as failures", F_REJECTED },
	{ "nv_inference_request_timeout", "Number of inference requests that waited in the queue past their timeout and were rejected; also counted as failures", F_TIMED_OUT },
	{ "nv_inference_count", "Number of inferences performed (does not include cached requests)", F_COUNT },
	{ "nv_inference_exec_count", "Number of model executions performed (does not include cached requests)", F_EXEC },
	{ "nv_inference_request_duration_us", "Cumulative inference request duration in microseconds (includes cached requests)", F_REQ_US },
	{ "nv_inference_queue_duration_us", "Cumulative inference queuing duration in microseconds (includes cached requests)", F_QUEUE_US },
	{ "nv_inference_compute_input_duration_us", "Cumulative compute input duration in microseconds (does not include cached requests)", F_IN_US },
	{ "nv_inference_compute_infer_duration_us", "Cumulative compute inference duration in microseconds (does not include cached requests)", F_INFER_US },
	{ "nv_inference_compute_output_duration_us", "Cumulative inference compute output duration in microseconds (does not include cached requests)", F_OUT_US },
	{ "nv_cache_num_hits_per_model", "Number of response cache hits per model", F_CACHE_HITS },
	{ "nv_cache_num_misses_per_model", "Number of response cache misses per model", F_CACHE_MISSES },
	{ "nv_cache_hit_duration_per_model", "Cumulative time requests spend retrieving a cached response per model on cache hits (microseconds)", F_CACHE_HIT_US },
	{ "nv_cache_miss_duration_per_model", "Cumulative time requests spend looking up and inserting responses into the cache on a cache miss (microseconds)", F_CACHE_MISS_US },
};

static uint64_t field_value(const mfs_stats *s, enum field f)
{
	switch (f) {
	case F_SUCCESS: return s->success.count;
	case F_FAILURE: return s->fail.count;
	case F_COUNT: return s->inference_count;
	case F_EXEC: return s->execution_count;
	case F_REQ_US: return (s->success.ns + s->fail.ns) / 1000;
	case F_QUEUE_US: return s->queue.ns / 1000;
	case F_IN_US: return s->compute_input.ns / 1000;
	case F_INFER_US: return s->compute_infer.ns / 1000;
	case F_OUT_US: return s->compute_output.ns / 1000;
	case F_REJECTED: return s->rejected.count;
	case F_TIMED_OUT: return s->timed_out.count;
	case F_CACHE_HITS: return s->cache_hit.count;
	case F_CACHE_MISSES: return s->cache_miss.count;
	case F_CACHE_HIT_US: return s->cache_hit.ns / 1000;
	case F_CACHE_MISS_US: return s->cache_miss.ns / 1000;
	}
	return 0;
}

/* Label values here are model names ([A-Za-z0-9._-]) and numbers, which
 * need no escaping in the Prometheus text format. */
char *mfs_metrics_render(const mfs_metrics_entry *e, int n, size_t *len)
{
	sbuf b = { 0 };
	mfs_stats *snaps = calloc(n > 0 ? (size_t)n : 1, sizeof(*snaps));
	if (!snaps)
		return NULL;
	for (int i = 0; i < n; i++)
		if (e[i].stats)
			mfs_stats_snapshot(e[i].stats, &snaps[i]);
	for (size_t c = 0; c < sizeof(counters) / sizeof(counters[0]); c++) {
		sb_printf(&b, "# HELP %s %s\n# TYPE %s counter\n", counters[c].name,
			  counters[c].help, counters[c].name);
		for (int i = 0; i < n; i++)
			if (e[i].stats)
				sb_printf(&b, "%s{model=\"%s\",version=\"%" PRId64 "\"} %" PRIu64 "\n",
					  counters[c].name, e[i].model, e[i].version,
					  field_value(&snaps[i], counters[c].f));
	}
	sb_printf(&b, "# HELP nv_model_load_duration_secs Model load time in seconds\n"
		      "# TYPE nv_model_load_duration_secs gauge\n");
	for (int i = 0; i < n; i++)
		if (e[i].load_seconds >= 0)
			sb_printf(&b, "nv_model_load_duration_secs{model=\"%s\",version=\"%" PRId64 "\"} %.6f\n",
				  e[i].model, e[i].version, e[i].load_seconds);
	free(snaps);
	if (b.oom || !b.p) {
		free(b.p);
		return NULL;
	}
	*len = b.len;
	return b.p;
}

/* metrics.c - see metrics.h. */
#include "metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metrics_host.h"

/* ---- --metrics-config ---- */

#define CONFIG_DEFAULT {                                              \
	.counter_latencies = true,                                   \
	.n_quantiles = 5,                                            \
	.quantile = { 0.5, 0.9, 0.95, 0.99, 0.999 },                 \
	.error = { 0.05, 0.01, 0.001, 0.001, 0.001 },                \
}

static mfs_metrics_config config = CONFIG_DEFAULT;

void mfs_metrics_config_init(mfs_metrics_config *c)
{
	*c = (mfs_metrics_config)CONFIG_DEFAULT;
}

static int parse_bool(const char *key, const char *v, bool *out, mfs_error *err)
{
	if (!strcmp(v, "true"))
		*out = true;
	else if (!strcmp(v, "false"))
		*out = false;
	else
		return mfs_fail(err, EINVAL, "--metrics-config %s: expected true or false, got '%s'", key, v);
	return 0;
}

/* "0.5:0.05,0.9:0.01" (Triton's format; quotes around it are dropped). */
static int parse_quantiles(mfs_metrics_config *c, const char *v, mfs_error *err)
{
	char *end;
	int n = 0;
	if (*v == '"')
		v++;
	while (*v && *v != '"') {
		if (n == MFS_METRICS_MAX_QUANTILES)
			return mfs_fail(err, EINVAL, "--metrics-config summary_quantiles: at most %d quantiles",
					MFS_METRICS_MAX_QUANTILES);
		double q = strtod(v, &end);
		if (end == v || *end != ':' || !(q > 0 && q < 1))
			return mfs_fail(err, EINVAL, "--metrics-config summary_quantiles: expected "
					"QUANTILE:ERROR,... with 0 < QUANTILE < 1, at '%s'", v);
		v = end + 1;
		double e = strtod(v, &end);
		if (end == v || (*end && *end != ',' && *end != '"') || !(e >= 0 && e < 1))
			return mfs_fail(err, EINVAL, "--metrics-config summary_quantiles: expected "
					"an error 0 <= ERROR < 1 after '%g:', at '%s'", q, v);
		c->quantile[n] = q;
		c->error[n++] = e;
		v = *end == ',' ? end + 1 : end;
	}
	if (!n)
		return mfs_fail(err, EINVAL, "--metrics-config summary_quantiles: no quantile given");
	c->n_quantiles = n;
	return 0;
}

int mfs_metrics_config_parse(mfs_metrics_config *c, const char *item, mfs_error *err)
{
	const char *eq = strchr(item, '=');
	size_t klen = eq ? (size_t)(eq - item) : 0;
	if (!eq)
		return mfs_fail(err, EINVAL, "--metrics-config: expected KEY=VALUE, got '%s'", item);
	if (klen == 17 && !strncmp(item, "counter_latencies", klen))
		return parse_bool("counter_latencies", eq + 1, &c->counter_latencies, err);
	if (klen == 17 && !strncmp(item, "summary_latencies", klen))
		return parse_bool("summary_latencies", eq + 1, &c->summary_latencies, err);
	if (klen == 17 && !strncmp(item, "summary_quantiles", klen))
		return parse_quantiles(c, eq + 1, err);
	return mfs_fail(err, EINVAL, "--metrics-config: unknown key '%.*s' (counter_latencies, "
			"summary_latencies, summary_quantiles)", (int)klen, item);
}

void mfs_metrics_configure(const mfs_metrics_config *c)
{
	config = *c;
}

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
	/* without memory for the window, the summaries stay empty */
	if (config.summary_latencies)
		s->window = calloc(1, sizeof(*s->window));
}

void mfs_stats_release(mfs_stats *s)
{
	free(s->window);
	s->window = NULL;
	pthread_mutex_destroy(&s->lock);
}

/* ---- summaries: a window of the latest latencies ---- */

static void observe(mfs_latency_window *w, const uint64_t ns[MFS_LAT_COUNT])
{
	w->at_ns[w->next] = mfs_now_ns();
	for (int l = 0; l < MFS_LAT_COUNT; l++)
		w->us[l][w->next] = ns[l] / 1000;
	w->next = (w->next + 1) % MFS_SUMMARY_WINDOW;
	if (w->n < MFS_SUMMARY_WINDOW)
		w->n++;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

bool mfs_stats_quantiles(mfs_stats *s, int lat, double *out)
{
	uint64_t v[MFS_SUMMARY_WINDOW], oldest = 0, now = mfs_now_ns();
	int n = 0;

	if (now > (uint64_t)MFS_SUMMARY_MAX_AGE_S * 1000000000u)
		oldest = now - (uint64_t)MFS_SUMMARY_MAX_AGE_S * 1000000000u;
	pthread_mutex_lock(&s->lock);
	for (int i = 0; s->window && i < s->window->n; i++)
		if (s->window->at_ns[i] >= oldest)
			v[n++] = s->window->us[lat][i];
	pthread_mutex_unlock(&s->lock);
	if (!n)
		return false;
	qsort(v, (size_t)n, sizeof(v[0]), cmp_u64);
	for (int q = 0; q < config.n_quantiles; q++) {
		/* the nearest rank: exact over the window, within any error asked */
		int rank = (int)ceil(config.quantile[q] * n) - 1;
		out[q] = (double)v[rank < 0 ? 0 : rank >= n ? n - 1 : rank];
	}
	return true;
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
		if (s->window)
			observe(s->window, (const uint64_t[MFS_LAT_COUNT]){
				total_ns, queue_ns, input_ns, infer_ns, output_ns });
		add(&s->success, total_ns);
		add(&s->queue, queue_ns);
		add(&s->compute_input, input_ns);
		add(&s->compute_infer, infer_ns);
		add(&s->compute_output, output_ns);
		s->inference_count += batch_items;
	} else {
		add(&s->fail, total_ns);
		s->fail_by[MFS_FAIL_BACKEND]++;
	}
	s->last_inference_ms = wall_ms();
	pthread_mutex_unlock(&s->lock);
}

void mfs_stats_add_failure(mfs_stats *s, mfs_fail_reason reason, uint64_t waited_ns)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	add(&s->fail, waited_ns);
	s->fail_by[reason < MFS_FAIL_REASONS ? reason : MFS_FAIL_OTHER]++;
	s->last_inference_ms = wall_ms();
	pthread_mutex_unlock(&s->lock);
}

void mfs_stats_add_refused(mfs_stats *s, bool timed_out, uint64_t waited_ns)
{
	pthread_mutex_lock(&s->lock);
	add(&s->fail, waited_ns);
	s->fail_by[MFS_FAIL_REJECTED]++;
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
	copy->window = NULL;
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
	F_SUCCESS, F_COUNT, F_EXEC, F_REQ_US, F_QUEUE_US,
	F_IN_US, F_INFER_US, F_OUT_US, F_REJECTED, F_TIMED_OUT,
	F_CACHE_HITS, F_CACHE_MISSES, F_CACHE_HIT_US, F_CACHE_MISS_US,
};

/* The per-version counters, in page order; latency ones may be turned
 * off (counter_latencies=false).  nv_inference_request_failure, with its
 * reason label, is rendered after the first. */
static const struct {
	const char *name, *help;
	enum field f;
	bool latency;
} counters[] = {
	{ "nv_inference_request_success", "Number of successful inference requests, all batch sizes", F_SUCCESS, false },
	{ "nv_inference_request_rejected", "Number of inference requests refused because the queue was full (max_queue_size); also counted as failures", F_REJECTED, false },
	{ "nv_inference_request_timeout", "Number of inference requests that waited in the queue past their timeout and were rejected; also counted as failures", F_TIMED_OUT, false },
	{ "nv_inference_count", "Number of inferences performed (does not include cached requests)", F_COUNT, false },
	{ "nv_inference_exec_count", "Number of model executions performed (does not include cached requests)", F_EXEC, false },
	{ "nv_inference_request_duration_us", "Cumulative inference request duration in microseconds (includes cached requests)", F_REQ_US, true },
	{ "nv_inference_queue_duration_us", "Cumulative inference queuing duration in microseconds (includes cached requests)", F_QUEUE_US, true },
	{ "nv_inference_compute_input_duration_us", "Cumulative compute input duration in microseconds (does not include cached requests)", F_IN_US, true },
	{ "nv_inference_compute_infer_duration_us", "Cumulative compute inference duration in microseconds (does not include cached requests)", F_INFER_US, true },
	{ "nv_inference_compute_output_duration_us", "Cumulative inference compute output duration in microseconds (does not include cached requests)", F_OUT_US, true },
	{ "nv_cache_num_hits_per_model", "Number of response cache hits per model", F_CACHE_HITS, false },
	{ "nv_cache_num_misses_per_model", "Number of response cache misses per model", F_CACHE_MISSES, false },
	{ "nv_cache_hit_duration_per_model", "Cumulative time requests spend retrieving a cached response per model on cache hits (microseconds)", F_CACHE_HIT_US, true },
	{ "nv_cache_miss_duration_per_model", "Cumulative time requests spend looking up and inserting responses into the cache on a cache miss (microseconds)", F_CACHE_MISS_US, true },
};

static const char *const reason_names[MFS_FAIL_REASONS] = {
	[MFS_FAIL_REJECTED] = "REJECTED", [MFS_FAIL_CANCELED] = "CANCELED",
	[MFS_FAIL_BACKEND] = "BACKEND", [MFS_FAIL_OTHER] = "OTHER",
};

/* Triton's summaries: name, help, the latency observed and the counter
 * whose _sum it matches. */
static const struct {
	const char *name, *help;
	int lat;
	const char *what;
} summaries[] = {
	{ "nv_inference_request_summary_us", "Summary of inference request duration in microseconds (includes cached requests)", MFS_LAT_REQUEST, "request" },
	{ "nv_inference_queue_summary_us", "Summary of inference queuing duration in microseconds (includes cached requests)", MFS_LAT_QUEUE, "queue" },
	{ "nv_inference_compute_input_summary_us", "Summary of compute input duration in microseconds (does not include cached requests)", MFS_LAT_INPUT, "input" },
	{ "nv_inference_compute_infer_summary_us", "Summary of compute inference duration in microseconds (does not include cached requests)", MFS_LAT_INFER, "infer" },
	{ "nv_inference_compute_output_summary_us", "Summary of compute output duration in microseconds (does not include cached requests)", MFS_LAT_OUTPUT, "output" },
};

static uint64_t field_value(const mfs_stats *s, enum field f)
{
	switch (f) {
	case F_SUCCESS: return s->success.count;
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

/* The successful requests' cumulative duration of one latency, in us. */
static const mfs_duration *summary_source(const mfs_stats *s, int lat)
{
	switch (lat) {
	case MFS_LAT_QUEUE: return &s->queue;
	case MFS_LAT_INPUT: return &s->compute_input;
	case MFS_LAT_INFER: return &s->compute_infer;
	case MFS_LAT_OUTPUT: return &s->compute_output;
	}
	return &s->success;
}

#define LABELS "model=\"%s\",version=\"%" PRId64 "\""

static void render_failures(sbuf *b, const mfs_metrics_entry *e, const mfs_stats *snaps, int n)
{
	sb_printf(b, "# HELP nv_inference_request_failure Number of failed inference requests, all batch sizes\n"
		     "# TYPE nv_inference_request_failure counter\n");
	for (int i = 0; i < n; i++)
		for (int r = 0; e[i].stats && r < MFS_FAIL_REASONS; r++)
			sb_printf(b, "nv_inference_request_failure{model=\"%s\",reason=\"%s\",version=\"%"
				  PRId64 "\"} %" PRIu64 "\n", e[i].model, reason_names[r], e[i].version,
				  snaps[i].fail_by[r]);
}

static void render_gauges(sbuf *b, const mfs_metrics_entry *e, int n)
{
	sb_printf(b, "# HELP nv_inference_pending_request_count Instantaneous number of pending requests awaiting execution per-model.\n"
		     "# TYPE nv_inference_pending_request_count gauge\n");
	for (int i = 0; i < n; i++)
		if (e[i].stats)
			sb_printf(b, "nv_inference_pending_request_count{" LABELS "} %" PRId64 "\n",
				  e[i].model, e[i].version, e[i].pending);
	sb_printf(b, "# HELP nv_model_load_duration_secs Model load time in seconds\n"
		     "# TYPE nv_model_load_duration_secs gauge\n");
	for (int i = 0; i < n; i++)
		if (e[i].load_seconds >= 0)
			sb_printf(b, "nv_model_load_duration_secs{" LABELS "} %.6f\n",
				  e[i].model, e[i].version, e[i].load_seconds);
}

static void render_summaries(sbuf *b, const mfs_metrics_entry *e, const mfs_stats *snaps, int n)
{
	double q[MFS_METRICS_MAX_QUANTILES];
	for (size_t k = 0; k < sizeof(summaries) / sizeof(summaries[0]); k++) {
		const char *name = summaries[k].name;
		sb_printf(b, "# HELP %s %s\n# TYPE %s summary\n", name, summaries[k].help, name);
		for (int i = 0; i < n; i++) {
			if (!e[i].stats)
				continue;
			const mfs_duration *d = summary_source(&snaps[i], summaries[k].lat);
			sb_printf(b, "%s_count{" LABELS "} %" PRIu64 "\n%s_sum{" LABELS "} %" PRIu64 "\n",
				  name, e[i].model, e[i].version, d->count,
				  name, e[i].model, e[i].version, d->ns / 1000);
			bool have = mfs_stats_quantiles(e[i].stats, summaries[k].lat, q);
			for (int j = 0; j < config.n_quantiles; j++) {
				sb_printf(b, "%s{model=\"%s\",version=\"%" PRId64 "\",quantile=\"%g\"} ",
					  name, e[i].model, e[i].version, config.quantile[j]);
				if (have)
					sb_printf(b, "%.0f\n", q[j]);
				else
					sb_printf(b, "NaN\n");
			}
		}
	}
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
		if (counters[c].latency && !config.counter_latencies)
			continue;
		sb_printf(&b, "# HELP %s %s\n# TYPE %s counter\n", counters[c].name,
			  counters[c].help, counters[c].name);
		for (int i = 0; i < n; i++)
			if (e[i].stats)
				sb_printf(&b, "%s{" LABELS "} %" PRIu64 "\n",
					  counters[c].name, e[i].model, e[i].version,
					  field_value(&snaps[i], counters[c].f));
		if (c == 0)
			render_failures(&b, e, snaps, n);
	}
	render_gauges(&b, e, n);
	if (config.summary_latencies)
		render_summaries(&b, e, snaps, n);
	free(snaps);
	char *host = mfs_metrics_host_text();
	if (host)
		sb_printf(&b, "%s", host);
	free(host);
	if (b.oom || !b.p) {
		free(b.p);
		return NULL;
	}
	*len = b.len;
	return b.p;
}

/* metrics.h - per model-version counters and their two renderings:
 * Prometheus text for MOUNT/.metrics (Triton's metric names, SPEC.md
 * section 7) and Triton's statistics extension JSON for stats.json.
 *
 * An mfs_stats is updated by compute threads and read by the filesystem;
 * it has its own lock, held only for a few additions.
 */
#ifndef MFS_METRICS_H
#define MFS_METRICS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "error.h"

/* --metrics-config (Triton's): which latency metrics the page carries.
 * Summaries keep each version's latencies of the last
 * MFS_SUMMARY_MAX_AGE_S seconds (at most MFS_SUMMARY_WINDOW of them) and
 * give their quantiles; _count and _sum are since the start. */
#define MFS_METRICS_MAX_QUANTILES 8
#define MFS_SUMMARY_WINDOW 1024
#define MFS_SUMMARY_MAX_AGE_S 60

typedef struct mfs_metrics_config {
	bool counter_latencies;    /* the *_duration_us counters (true) */
	bool summary_latencies;    /* the *_summary_us summaries (false) */
	int n_quantiles;
	double quantile[MFS_METRICS_MAX_QUANTILES];   /* 0.5, 0.9, 0.95, 0.99, 0.999 */
	double error[MFS_METRICS_MAX_QUANTILES];
} mfs_metrics_config;

/* Triton's defaults. */
void mfs_metrics_config_init(mfs_metrics_config *c);

/* One --metrics-config item, "key=value": counter_latencies=true|false,
 * summary_latencies=true|false, summary_quantiles=Q:E,Q:E,...  -EINVAL
 * names the item. */
int mfs_metrics_config_parse(mfs_metrics_config *c, const char *item, mfs_error *err);

/* The process's configuration (copied), before any mfs_stats_init. */
void mfs_metrics_configure(const mfs_metrics_config *c);

/* Why a request failed: the `reason` label of nv_inference_request_failure
 * (Triton's four). */
typedef enum mfs_fail_reason {
	MFS_FAIL_REJECTED,         /* queue full, or timed out in the queue */
	MFS_FAIL_CANCELED,         /* cancelled: its directory removed, its read interrupted */
	MFS_FAIL_BACKEND,          /* the engine's run failed */
	MFS_FAIL_OTHER,            /* refused before a run: a bad input, a missing one, ... */
	MFS_FAIL_REASONS
} mfs_fail_reason;

/* The latencies a summary is kept for (Triton's five). */
enum { MFS_LAT_REQUEST, MFS_LAT_QUEUE, MFS_LAT_INPUT, MFS_LAT_INFER, MFS_LAT_OUTPUT, MFS_LAT_COUNT };

typedef struct mfs_latency_window {
	uint64_t at_ns[MFS_SUMMARY_WINDOW];    /* when observed (mfs_now_ns) */
	uint64_t us[MFS_LAT_COUNT][MFS_SUMMARY_WINDOW];
	int next, n;
} mfs_latency_window;

typedef struct mfs_duration {
	uint64_t count;
	uint64_t ns;
} mfs_duration;

#define MFS_STATS_MAX_BATCH 64   /* batch_stats kept for sizes 1..64; larger ones share the last slot */

typedef struct mfs_batch_stat {
	mfs_duration compute_input, compute_infer, compute_output;
} mfs_batch_stat;

typedef struct mfs_stats {
	pthread_mutex_t lock;
	mfs_duration success, fail, queue;
	/* Requests the queue policy failed (also in fail): refused because
	 * the queue was full, and failed after waiting past their timeout
	 * (ns: the time they waited). */
	mfs_duration rejected, timed_out;
	uint64_t fail_by[MFS_FAIL_REASONS];   /* fail.count split by reason */
	mfs_latency_window *window;    /* successful requests' latencies; NULL unless summaries are on */
	mfs_duration compute_input, compute_infer, compute_output;
	/* Response cache (response_cache.h): requests answered from it (ns:
	 * the lookup and copy), and requests looked up in vain (ns: the
	 * lookup and, after the run, the insert). */
	mfs_duration cache_hit, cache_miss;
	uint64_t inference_count;      /* batch items inferred (Triton) */
	uint64_t execution_count;      /* runs of the model */
	uint64_t last_inference_ms;    /* wall clock, ms since the epoch */
	mfs_batch_stat batch[MFS_STATS_MAX_BATCH + 1];   /* index = batch size */
} mfs_stats;

void mfs_stats_init(mfs_stats *s);
void mfs_stats_release(mfs_stats *s);

/* One request finished its run.  ok: success or failure (reason
 * BACKEND); total_ns from queueing to completion; the compute times are
 * the run's (Triton counts them per request too).  batch_items: rows the
 * request carried. */
void mfs_stats_add_request(mfs_stats *s, bool ok, uint64_t total_ns,
			   uint64_t queue_ns, uint64_t input_ns,
			   uint64_t infer_ns, uint64_t output_ns,
			   uint64_t batch_items);

/* A request the queue policy failed: refused at a full queue
 * (timed_out false, waited_ns 0) or timed out after waiting waited_ns.
 * Counted as a failure too. */
void mfs_stats_add_refused(mfs_stats *s, bool timed_out, uint64_t waited_ns);

/* A request answered from the response cache: a success of total_ns,
 * and a cache hit of hit_ns; no run (Triton counts no inference). */
void mfs_stats_add_cache_hit(mfs_stats *s, uint64_t total_ns, uint64_t hit_ns);
/* A response cache miss that took ns (the lookup, then the insert). */
void mfs_stats_add_cache_miss(mfs_stats *s, uint64_t ns);
/* A request that failed for reason without a run's outcome to count
 * (refused before it, or cancelled); waited_ns: its time in the daemon.
 * s may be NULL: nothing is counted. */
void mfs_stats_add_failure(mfs_stats *s, mfs_fail_reason reason, uint64_t waited_ns);

/* One run of the model on a batch of batch_size rows (1 without batching). */
void mfs_stats_add_execution(mfs_stats *s, int batch_size, uint64_t input_ns,
			     uint64_t infer_ns, uint64_t output_ns);

/* A consistent copy (lock taken); the copy's lock is not initialised and
 * its window is NULL (mfs_stats_quantiles reads the live one). */
void mfs_stats_snapshot(mfs_stats *s, mfs_stats *copy);

/* The configured quantiles of latency lat (MFS_LAT_*) over the window,
 * in microseconds, into out[mfs_metrics_config.n_quantiles]; false when
 * the window is empty or summaries are off. */
bool mfs_stats_quantiles(mfs_stats *s, int lat, double *out);

/* Triton's model_stats entry for one version (a new reference). */
json_t *mfs_stats_to_json(const char *model, int64_t version, mfs_stats *s);

/* One line of the Prometheus page. */
typedef struct mfs_metrics_entry {
	const char *model;
	int64_t version;
	mfs_stats *stats;          /* may be NULL (a version that failed to load) */
	double load_seconds;       /* load start to READY; < 0: not loaded */
	int64_t pending;           /* requests queued, not yet running */
} mfs_metrics_entry;

/* Render the Prometheus text page (malloc'd, NUL-terminated; *len set):
 * the per-version families, then the host's (metrics_host.h).  NULL on
 * out-of-memory. */
char *mfs_metrics_render(const mfs_metrics_entry *entries, int n, size_t *len);

/* Monotonic clock in ns, for every duration measured in the daemon. */
uint64_t mfs_now_ns(void);

#endif

/* thread_sizing.h - how many of the engine's threads a model's runs take,
 * decided from the model's own first runs, per batch size.
 *
 * After SIZING_FULL_RUNS runs on all n threads, one trial of
 * SIZING_TRIAL_RUNS runs on fewer, answered from measured runs, never
 * from a rule about the model:
 *
 * - small runs (the full count's fastest under SIZING_SMALL_NS): the trial
 *   takes one thread, kept unless all n were 5% and SIZING_MARGIN_NS
 *   faster (the infer file's add_sub, ~5 us a run, had kept both threads
 *   on noise, and each run then paid for its /proc/schedstat samples).  Waking OpenMP
 *   threads that slept can cost more than such a run gains (the MLP in
 *   the daemon between requests: 95-110 us on 2 threads against 46 on
 *   one, when the threads slept at once), while threads that are still
 *   spinning make it faster (the MLP at batch 8 back to back: 58 us on
 *   2 threads against 100 on one): only the model's own runs, where it
 *   runs, can tell.  One thread also leaves the other cores to the FUSE
 *   threads and the clients, hence the bias towards it.
 * - larger runs with 4 or more threads: the trial takes half of them,
 *   kept when 5% faster.  On the 16-core device host the encoder at batch
 *   1 ran 3.57 ms on 16 threads and 2.32 on 8 (ONNX Runtime: 2.70 either
 *   way): small products split 16 ways pay more in synchronisation and
 *   shared cores than they gain.
 *
 * MFS_THREAD_SIZING=0 (no_half, for A/B runs) skips the trials: small
 * runs take one thread, others all, as the engine did before them.
 *
 * A decision holds for SIZING_REDECIDE_RUNS runs, then the slot measures
 * again: a trial made while the host was busy (on the 16-core device
 * host, another load's spell) would otherwise keep half the threads for
 * good (ResNet-50 at batch 1 then took 24 ms a run instead of 9), and a
 * daemon's load changes over its life.  Another trial costs at most its
 * 12 runs in 10000.
 *
 * Up to SIZING_SLOTS batch sizes are tracked per context (dynamic
 * batching gives a few); others run on the full count.  Not thread-safe:
 * one per execution context, which runs one request at a time.
 */
#ifndef MFS_THREAD_SIZING_H
#define MFS_THREAD_SIZING_H

#include <stdbool.h>
#include <stdint.h>

#define SIZING_FULL_RUNS 8
#define SIZING_TRIAL_RUNS 4
#define SIZING_SMALL_NS 200000u
#define SIZING_MARGIN_NS 10000u
#define SIZING_SLOTS 4
#define SIZING_REDECIDE_RUNS 10000

typedef struct mfs_sizing_slot {
	int64_t rows;
	int full_runs, trial_runs;    /* runs timed at each count so far */
	uint64_t full_ns, trial_ns;   /* the fastest of them */
	int threads;                  /* from then on; 0 while undecided */
	int kept_runs;                /* runs planned since the decision */
} mfs_sizing_slot;

typedef struct mfs_sizing {
	mfs_sizing_slot slot[SIZING_SLOTS];
	int n_slots;
	bool no_half;    /* skip the trials (MFS_THREAD_SIZING=0, A/B runs) */
} mfs_sizing;

/* The threads the next run with `rows` rows should take out of n (n >= 1),
 * and its slot (NULL when the table is full: n) for mfs_sizing_record. */
int mfs_sizing_plan(mfs_sizing *s, int64_t rows, int n, mfs_sizing_slot **slot);

/* A successful run planned at `planned` of n threads took ns, in slot
 * (from mfs_sizing_plan on s).  Only runs that got the planned count (not
 * fewer, shared with other runs or taken under load) are passed here. */
void mfs_sizing_record(const mfs_sizing *s, mfs_sizing_slot *slot, int planned, int n,
		       uint64_t ns);

/* Whether runs with `rows` rows on n threads have their count decided (or
 * never will be): bench_engine warms up until then, so that its timed
 * runs are not the trials. */
bool mfs_sizing_settled(const mfs_sizing *s, int64_t rows, int n);

/* The count decided for `rows` rows, 0 while undecided or untracked. */
int mfs_sizing_threads(const mfs_sizing *s, int64_t rows);

#endif

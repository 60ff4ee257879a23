/* cpu_contention.h - whether the cores a run needs are busy with other
 * work, so that the run should take one thread instead of its team.
 *
 * Why: between the parallel regions of a run (one or more per node) the
 * OpenMP threads spin for a bounded time (libgomp's GOMP_SPINCOUNT, set by
 * mfs_prefer_openmp_spin) instead of sleeping, because waking a sleeping
 * thread costs tens of microseconds on a virtual machine: on the quiet
 * 2-core machine spinning ran GPT-2 at batch 8 in 0.8 ms instead of 1.2-2.0
 * and MobileNetV2 in 5.2 ms instead of 7.3-8.6.  But when other processes
 * keep the cores busy, a spinning thread holds a core its partner needs:
 * beside six busy loops MobileNetV2 on two spinning threads took 50-180 ms,
 * on one thread 28-32 ms, on two sleeping (passive) threads 32-54 ms
 * (docs/PERFORMANCE.md, "Spinning, and one thread under load").
 *
 * How: a run measures the time its own thread waited for a CPU while
 * runnable (the kernel's run-queue delay, /proc/thread-self/schedstat).
 * Two runs in a row that each waited for more than MFS_CONTENTION_SHARE
 * of their wall time mark the process contended for a hold time; while contended, runs take
 * one thread (engine.c).  A run on one thread that still waits extends the
 * mark.  When the mark expires, the next runs try the whole team again;
 * if one of them waits too, the hold doubles (up to MFS_CONTENTION_MAX_HOLD)
 * so that a steady load costs one slow run per hold, not one per run; a
 * team run that waits no longer resets the hold.  Where the schedstat file
 * cannot be read, runs are never marked (the team always runs).
 *
 * The state is process-wide: all of a daemon's instances share the cores.
 * The first mark of a busy spell is logged at info (the run's wait and
 * the hold), later ones at debug, so that a daemon that got slow says
 * why; on the 16-core host such marks on an idle machine are the likely
 * reason its ResNet-18 runs in the daemon took longer than bench_engine's
 * (docs/PERFORMANCE.md, "The last idle compute thread first").
 */
#ifndef MFS_CPU_CONTENTION_H
#define MFS_CPU_CONTENTION_H

#include <stdbool.h>
#include <stdint.h>

/* A run that waited for a CPU this part of its wall time or more (and at
 * least MFS_CONTENTION_MIN_WAIT_NS) was contended. */
#define MFS_CONTENTION_SHARE 0.10
#define MFS_CONTENTION_MIN_WAIT_NS 200000
/* Team runs in a row that must wait before the first mark. */
#define MFS_CONTENTION_STRIKES 2
#define MFS_CONTENTION_HOLD_NS 50000000      /* first hold: 50 ms */
#define MFS_CONTENTION_MAX_HOLD_NS 2000000000 /* longest hold: 2 s */

/* The decision, apart from the clock and /proc (unit-tested). */
typedef struct mfs_contention {
	int64_t until_ns;   /* contended while now < until_ns */
	int64_t hold_ns;    /* the next mark's length; 0: the first hold */
	bool marked;        /* a mark was set and has not been cleared */
	int strikes;        /* team runs in a row that waited, unmarked */
} mfs_contention;

/* Whether a run starting at now_ns should take one thread. */
bool mfs_contention_active(const mfs_contention *c, int64_t now_ns);

/* Account one run that ended at now_ns: wall_ns long, wait_ns of it spent
 * waiting for a CPU, run on `threads` threads. */
void mfs_contention_update(mfs_contention *c, uint64_t wait_ns,
			   uint64_t wall_ns, int threads, int64_t now_ns);

/* The process-wide state around a run.  begin reads the calling thread's
 * run-queue delay and the clock; end accounts the run.  A sample whose
 * begin could not read the delay is ignored by end. */
typedef struct mfs_cpu_sample {
	uint64_t wait_ns;
	int64_t start_ns;
	bool ok;
} mfs_cpu_sample;

void mfs_cpu_sample_begin(mfs_cpu_sample *s);
void mfs_cpu_sample_end(const mfs_cpu_sample *s, int threads);
bool mfs_cpu_contended(void);

#endif

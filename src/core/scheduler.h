/* scheduler.h - queues between the filesystem and the engine.
 *
 * One mfs_sched owns a pool of compute threads.  Each served model version
 * has one mfs_queue: jobs wait there until one of the version's instances
 * (Triton's instance_group count: how many runs of this version may be in
 * flight at once) is free and a compute thread takes them.  With dynamic
 * batching, a thread merges queued jobs whose inputs agree in every dim
 * but the first into one run of at most max_batch_size rows, waiting at
 * most max_queue_delay for the batch to fill, then splits the outputs back
 * along the first dim.  FUSE threads only submit; models run only here.
 *
 * Each queue has one FIFO per priority level (Triton's priority_levels;
 * level 1 runs first) with its own policy (Triton's ModelQueuePolicy):
 * how many jobs it holds, how long a job may wait, and whether a job that
 * waited too long fails with ETIMEDOUT (REJECT) or waits on behind the
 * level's punctual jobs (DELAY).  A late job is found by an idle compute
 * thread at its deadline, or else when the next job is taken.
 *
 * The runner does the actual work (mfs_exec_run on the instance's
 * execution context in the daemon, a fake in the unit tests).
 */
#ifndef MFS_SCHEDULER_H
#define MFS_SCHEDULER_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "metrics.h"
#include "tensor.h"

typedef struct mfs_sched mfs_sched;
typedef struct mfs_queue mfs_queue;
typedef struct mfs_job mfs_job;

struct mfs_job {
	/* Set by the submitter.  inputs stay the submitter's and untouched
	 * until done() runs; on success outputs[0..n_outputs) are filled with
	 * tensors that the submitter then owns. */
	const mfs_tensor *inputs;
	mfs_tensor *outputs;
	/* Called once, on a compute thread (or in mfs_sched_queue_close /
	 * mfs_sched_stop's caller), with no scheduler lock held.  The job
	 * belongs to the submitter again from then on. */
	void (*done)(mfs_job *job);
	/* Optional: called on the compute thread just before the run starts
	 * (no scheduler lock held). */
	void (*started)(mfs_job *job);
	void *arg;
	int priority;            /* 1 (first) .. the queue's levels; 0: its default level */
	uint64_t timeout_ns;     /* longest wait in the queue; 0: the level's default */

	/* Set by the scheduler before done(). */
	int status;              /* 0, or a negative errno; err says why */
	mfs_error err;
	int batch_size;          /* rows in the run that served this job (1 without batching) */
	int batch_requests;      /* jobs merged into that run */
	uint64_t t_enqueue, t_start, t_input, t_infer, t_end;   /* mfs_now_ns() */

	/* Private to the scheduler. */
	mfs_job *next;
	int rows;
	int level, seg;          /* the FIFO it waits in */
	uint64_t deadline;       /* mfs_now_ns() past which it is late; 0: none */
	bool here;               /* left for mfs_sched_run_here() */
	bool cancelled;          /* mfs_sched_cancel() was called */
	int inst;                /* the instance running it; -1: none */
};

typedef struct mfs_runner {
	/* Run one batch on the given instance (0 <= instance < instances).
	 * Same contract as mfs_exec_run.  Only one call per instance at a time. */
	int (*run)(void *ctx, int instance, const mfs_tensor *inputs,
		   mfs_tensor *outputs, mfs_error *err);
	void *ctx;
	int n_inputs, n_outputs;
} mfs_runner;

/* One priority level's policy. */
typedef struct mfs_queue_level {
	int64_t max_queue_size;       /* jobs waiting at this level; 0 = unbounded */
	uint64_t default_timeout_ns;  /* longest wait; 0: none */
	bool delay_on_timeout;        /* late: wait behind the level's others (DELAY), not fail (REJECT) */
} mfs_queue_level;

typedef struct mfs_queue_conf {
	const char *label;            /* "add_sub v1", copied, for messages */
	int instances;                /* >= 1 */
	int max_batch_size;           /* 0: inputs have no batch dim */
	bool dynamic_batching;        /* merge jobs (needs max_batch_size > 0) */
	uint64_t max_queue_delay_ns;
	int preferred_batch_size;     /* run at once when this many rows wait; 0: max_batch_size */
	/* Priority levels (copied); NULL: one level holding at most
	 * max_queue_size jobs (0 = unbounded), no timeout. */
	const mfs_queue_level *levels;
	int n_levels;
	int default_level;            /* 1 .. n_levels: a job of priority 0 */
	int64_t max_queue_size;
	mfs_stats *stats;             /* updated per run and per job; may be NULL */
} mfs_queue_conf;

/* Start threads compute threads.  -ENOMEM/-EAGAIN with err filled. */
int mfs_sched_new(int threads, mfs_sched **out, mfs_error *err);

/* The same, each compute thread calling thread_init() (if not NULL) once
 * when it starts, before it takes any job: the daemon makes each
 * thread's OpenMP team there (mfs_engine_thread_warm), so that the
 * first runs do not. */
int mfs_sched_new_with_init(int threads, void (*thread_init)(void), mfs_sched **out,
			    mfs_error *err);

/* A new queue served by the scheduler's threads. */
int mfs_sched_queue_new(mfs_sched *s, const mfs_queue_conf *conf,
			const mfs_runner *runner, mfs_queue **out,
			mfs_error *err);

/* Queue a job.  Returns 0, or (with err filled and done() NOT called):
 * -EAGAIN when its level's queue is full, -ESHUTDOWN when the queue is
 * closed or the scheduler is stopping, -EINVAL when a batched job's inputs
 * disagree on their first dim or exceed max_batch_size, or its priority
 * is not a level of the queue.  A job that waits past its timeout under
 * REJECT gets done() with status -ETIMEDOUT. */
int mfs_sched_submit(mfs_queue *q, mfs_job *job, mfs_error *err);
/* The same, but a short run (the queue's recent runs took under 1 ms) for
 * an idle instance, without dynamic batching, is not handed to a compute
 * thread: it sets job->here and the caller must then run it with
 * mfs_sched_run_here(q) once it holds no lock that done() takes.  Saves
 * the thread wake-up (tens of µs) between a FUSE thread and a compute
 * thread. */
int mfs_sched_submit_here(mfs_queue *q, mfs_job *job, mfs_error *err);
void mfs_sched_run_here(mfs_queue *q);

/* The job's submitter no longer wants its result (its request directory
 * was removed): a queued job's run stops at its first node, a running
 * one's at the next node or loop iteration, once every job merged into
 * that run is cancelled (a batch partner's run goes on).  done() is
 * still called once, with -ECANCELED or whatever the run ended with.
 * Never calls done() itself, so the caller may hold its own lock. */
void mfs_sched_cancel(mfs_queue *q, mfs_job *job);

/* Refuse new jobs and fail the queued ones (status -ESHUTDOWN, reason as
 * the message); running ones finish.  Idempotent. */
void mfs_sched_queue_close(mfs_queue *q, const char *reason);

/* Close, wait until no run of this queue is in flight, free. */
void mfs_sched_queue_free(mfs_queue *q);

/* Jobs waiting plus running in this queue; waiting_only: the jobs not
 * yet running (nv_inference_pending_request_count). */
int mfs_sched_queue_depth(mfs_queue *q, bool waiting_only);

/* Stop: refuse new jobs, let queued and running ones finish for at most
 * drain_ns, fail what is still queued, cancel the runs still in flight
 * (they stop at their next node or loop iteration), wait for them, join
 * the threads.  Queues must still be freed (before mfs_sched_free). */
void mfs_sched_stop(mfs_sched *s, uint64_t drain_ns);

void mfs_sched_free(mfs_sched *s);

#endif

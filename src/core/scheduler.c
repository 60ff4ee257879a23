/* scheduler.c - see scheduler.h.
 *
 * One mutex (s->lock) protects every queue's list and counters; it is
 * never held while a model runs or while done() callbacks run.  Each
 * worker sleeps on its own condition variable; s->idle is signalled
 * whenever a run ends so that queue_free and stop can wait for in-flight
 * runs.
 *
 * Idle workers form a stack: work wakes the one that went idle last,
 * whose OpenMP team still spins (openmp_policy.h) and whose caches hold
 * the model; waking them in turn cost ResNet-18 1.39x on 16 cores
 * (docs/PERFORMANCE.md, "The last idle compute thread first").
 */
#include "scheduler.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "log.h"

/* One priority level: its jobs in order (seg 0), then those that waited
 * past their timeout under DELAY (seg 1). */
typedef struct level {
	mfs_queue_level conf;
	mfs_job *head[2], *tail[2];
	int64_t queued;
} level;

/* One instance of a queue: whether a run holds it, and that run's cancel
 * flag (set once every job of the run was cancelled, or at a bounded
 * shutdown; the engine checks it between nodes and loop iterations,
 * engine.h mfs_exec_watch_cancel). */
typedef struct instance_slot {
	bool busy;
	int live;                     /* jobs of the run not cancelled */
	atomic_bool cancel;
} instance_slot;

struct mfs_queue {
	mfs_sched *sched;
	mfs_queue *next_q;            /* the scheduler's list */
	char *label;
	mfs_queue_conf conf;
	mfs_runner runner;
	level *levels;                /* conf.n_levels; level 1 first */
	int64_t queued;               /* jobs in all FIFOs */
	int64_t timed;                /* of them, jobs with a deadline */
	int running;                  /* runs in flight */
	int running_jobs;
	instance_slot *inst;          /* per instance */
	bool closed;
	uint64_t run_ns;              /* recent runs' duration (moving average); 0: none yet */
};

/* Runs shorter than this go on the submitting thread (mfs_sched_run_here). */
#define RUN_HERE_NS 1000000u

struct mfs_sched {
	pthread_mutex_t lock;
	pthread_cond_t *wake;         /* per worker: a queue may have become runnable */
	int *idle_stack;              /* idle workers, the last to go idle on top */
	int n_idle;
	int n_slots;                  /* workers wake and idle_stack were made for */
	int next_index;               /* the index the next worker takes */
	pthread_cond_t idle;          /* a run ended */
	pthread_t *threads;
	int n_threads;
	mfs_queue *queues;
	bool stopping;                /* refuse new jobs */
	bool quit;                    /* workers exit */
	void (*thread_init)(void);    /* each worker's first call */
};

static void *worker(void *arg);

/* Wake the worker that went idle last, if any is idle (lock held): a
 * worker that is busy looks for work again when its run ends. */
static void wake_one(mfs_sched *s)
{
	if (s->n_idle)
		pthread_cond_signal(&s->wake[s->idle_stack[--s->n_idle]]);
}

/* Wake every worker (lock held): stop, quit. */
static void wake_all(mfs_sched *s)
{
	for (int i = 0; i < s->n_slots; i++)
		pthread_cond_signal(&s->wake[i]);
	s->n_idle = 0;
}

/* Worker me stops waiting (lock held): off the stack unless wake_one
 * took it off (a timed or spurious wake-up leaves it there). */
static void idle_leave(mfs_sched *s, int me)
{
	for (int i = s->n_idle - 1; i >= 0; i--)
		if (s->idle_stack[i] == me) {
			memmove(&s->idle_stack[i], &s->idle_stack[i + 1],
				(size_t)(s->n_idle - i - 1) * sizeof(int));
			s->n_idle--;
			return;
		}
}

int mfs_sched_new(int threads, mfs_sched **out, mfs_error *err)
{
	return mfs_sched_new_with_init(threads, NULL, out, err);
}

int mfs_sched_new_with_init(int threads, void (*thread_init)(void), mfs_sched **out,
			    mfs_error *err)
{
	if (threads < 1)
		threads = 1;
	mfs_sched *s = calloc(1, sizeof(*s));
	if (!s)
		return mfs_fail(err, ENOMEM, "out of memory");
	s->threads = calloc((size_t)threads, sizeof(pthread_t));
	s->wake = calloc((size_t)threads, sizeof(pthread_cond_t));
	s->idle_stack = calloc((size_t)threads, sizeof(int));
	if (!s->threads || !s->wake || !s->idle_stack) {
		free(s->threads);
		free(s->wake);
		free(s->idle_stack);
		free(s);
		return mfs_fail(err, ENOMEM, "out of memory");
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	for (int i = 0; i < threads; i++)
		pthread_cond_init(&s->wake[i], &ca);
	s->n_slots = threads;
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&s->idle, NULL);
	s->thread_init = thread_init;
	for (int i = 0; i < threads; i++) {
		int r = pthread_create(&s->threads[i], NULL, worker, s);
		if (r) {
			mfs_sched_stop(s, 0);
			mfs_sched_free(s);
			return mfs_fail(err, r, "cannot start compute thread: %s", strerror(r));
		}
		s->n_threads++;
	}
	*out = s;
	return 0;
}

int mfs_sched_queue_new(mfs_sched *s, const mfs_queue_conf *conf,
			const mfs_runner *runner, mfs_queue **out,
			mfs_error *err)
{
	mfs_queue *q = calloc(1, sizeof(*q));
	if (!q)
		return mfs_fail(err, ENOMEM, "out of memory");
	q->sched = s;
	q->conf = *conf;
	if (q->conf.instances < 1)
		q->conf.instances = 1;
	if (q->conf.max_batch_size <= 0)
		q->conf.dynamic_batching = false;
	if (q->conf.preferred_batch_size <= 0 || q->conf.preferred_batch_size > q->conf.max_batch_size)
		q->conf.preferred_batch_size = q->conf.max_batch_size;
	q->runner = *runner;
	if (!conf->levels || conf->n_levels < 1) {
		q->conf.n_levels = 1;
		q->conf.default_level = 1;
	}
	if (q->conf.default_level < 1 || q->conf.default_level > q->conf.n_levels)
		q->conf.default_level = 1;
	q->label = strdup(conf->label ? conf->label : "model");
	q->inst = calloc((size_t)q->conf.instances, sizeof(instance_slot));
	q->levels = calloc((size_t)q->conf.n_levels, sizeof(level));
	if (!q->label || !q->inst || !q->levels) {
		free(q->label);
		free(q->inst);
		free(q->levels);
		free(q);
		return mfs_fail(err, ENOMEM, "out of memory");
	}
	for (int i = 0; i < q->conf.n_levels; i++)
		q->levels[i].conf = conf->levels && conf->n_levels >= 1 ? conf->levels[i]
			: (mfs_queue_level){ .max_queue_size = conf->max_queue_size };
	q->conf.levels = NULL;   /* copied into q->levels */
	q->conf.label = q->label;
	pthread_mutex_lock(&s->lock);
	q->next_q = s->queues;
	s->queues = q;
	pthread_mutex_unlock(&s->lock);
	*out = q;
	return 0;
}

/* Rows a job carries: the first dim of its inputs when batched. */
static int job_rows(const mfs_queue *q, const mfs_job *job, mfs_error *err)
{
	if (q->conf.max_batch_size <= 0)
		return 1;
	int64_t rows = -1;
	for (int i = 0; i < q->runner.n_inputs; i++) {
		const mfs_tensor *t = &job->inputs[i];
		if (t->shape.rank < 1)
			return mfs_fail(err, EINVAL, "input %d has no batch dimension", i);
		if (rows >= 0 && t->shape.dims[0] != rows)
			return mfs_fail(err, EINVAL, "inputs disagree on the batch size (%lld and %lld)",
					(long long)rows, (long long)t->shape.dims[0]);
		rows = t->shape.dims[0];
	}
	if (rows < 1 || rows > q->conf.max_batch_size)
		return mfs_fail(err, EINVAL, "batch size %lld is outside 1..%d (max_batch_size)",
				(long long)rows, q->conf.max_batch_size);
	return (int)rows;
}

/* ---- the FIFOs: levels in order, each its punctual then its late jobs ---- */

static mfs_job *first_job(const mfs_queue *q)
{
	for (int l = 0; l < q->conf.n_levels; l++)
		for (int g = 0; g < 2; g++)
			if (q->levels[l].head[g])
				return q->levels[l].head[g];
	return NULL;
}

/* The job that runs after j. */
static mfs_job *next_job(const mfs_queue *q, const mfs_job *j)
{
	if (j->next)
		return j->next;
	for (int l = j->level, g = j->seg + 1; l < q->conf.n_levels; l++, g = 0)
		for (; g < 2; g++)
			if (q->levels[l].head[g])
				return q->levels[l].head[g];
	return NULL;
}

static void push_job(mfs_queue *q, mfs_job *job, int seg)
{
	level *lv = &q->levels[job->level];
	job->seg = seg;
	job->next = NULL;
	if (lv->tail[seg])
		lv->tail[seg]->next = job;
	else
		lv->head[seg] = job;
	lv->tail[seg] = job;
}

static mfs_job *pop_first(mfs_queue *q)
{
	mfs_job *job = first_job(q);
	level *lv = &q->levels[job->level];
	lv->head[job->seg] = job->next;
	if (!job->next)
		lv->tail[job->seg] = NULL;
	job->next = NULL;
	lv->queued--;
	q->queued--;
	if (job->deadline)
		q->timed--;
	return job;
}

/* Deal with the jobs of q that are late at now (lock held): under DELAY
 * they move behind their level's punctual jobs; under REJECT they are
 * taken off and prepended to *late (their done() is the caller's, with
 * no lock held).  Returns the earliest deadline still ahead, or 0. */
static uint64_t expire(mfs_queue *q, uint64_t now, mfs_job **late)
{
	uint64_t earliest = 0;
	if (!q->timed)
		return 0;
	for (int l = 0; l < q->conf.n_levels; l++) {
		level *lv = &q->levels[l];
		mfs_job *prev = NULL, *j = lv->head[0];
		while (j) {
			mfs_job *next = j->next;
			if (!j->deadline || j->deadline > now) {
				if (j->deadline && (!earliest || j->deadline < earliest))
					earliest = j->deadline;
				prev = j;
				j = next;
				continue;
			}
			if (prev)
				prev->next = next;
			else
				lv->head[0] = next;
			if (lv->tail[0] == j)
				lv->tail[0] = prev;
			q->timed--;
			j->deadline = 0;
			if (lv->conf.delay_on_timeout) {
				push_job(q, j, 1);
			} else {
				lv->queued--;
				q->queued--;
				j->next = *late;
				*late = j;
			}
			j = next;
		}
	}
	return earliest;
}

/* done() for jobs expire() rejected, with no lock held. */
static void fail_late(mfs_queue *q, mfs_job *late)
{
	uint64_t now = mfs_now_ns();
	while (late) {
		mfs_job *next = late->next;
		late->next = NULL;
		late->status = -ETIMEDOUT;
		mfs_fail(&late->err, ETIMEDOUT,
			 "%s: the request timed out in the queue after %.3f ms (its timeout: %.3f ms, "
			 "timeout_action REJECT)", q->label, (double)(now - late->t_enqueue) / 1e6,
			 (double)late->timeout_ns / 1e6);
		late->t_start = late->t_input = late->t_infer = late->t_end = now;
		if (q->conf.stats)
			mfs_stats_add_refused(q->conf.stats, true, now - late->t_enqueue);
		late->done(late);
		late = next;
	}
}

static int submit(mfs_queue *q, mfs_job *job, bool may_run_here, mfs_error *err)
{
	job->cancelled = false;
	job->inst = -1;
	mfs_sched *s = q->sched;
	int rows = q->runner.n_inputs > 0 ? job_rows(q, job, err) : 1;
	if (rows < 0)
		return rows;
	job->rows = rows;
	job->next = NULL;
	if (job->priority < 0 || job->priority > q->conf.n_levels)
		return mfs_fail(err, EINVAL, "%s: priority %d is not a level of the queue (1..%d; 0: the default, %d)",
				q->label, job->priority, q->conf.n_levels, q->conf.default_level);
	job->level = (job->priority ? job->priority : q->conf.default_level) - 1;
	level *lv = &q->levels[job->level];
	job->status = 0;
	mfs_error_clear(&job->err);
	job->batch_size = 0;
	job->batch_requests = 0;
	job->t_start = job->t_input = job->t_infer = job->t_end = 0;
	pthread_mutex_lock(&s->lock);
	if (s->stopping || q->closed) {
		pthread_mutex_unlock(&s->lock);
		return mfs_fail(err, ESHUTDOWN, "%s is not taking requests (%s)", q->label,
				s->stopping ? "the daemon is stopping" : "the version was unloaded");
	}
	if (lv->conf.max_queue_size > 0 && lv->queued >= lv->conf.max_queue_size) {
		pthread_mutex_unlock(&s->lock);
		if (q->conf.stats)
			mfs_stats_add_refused(q->conf.stats, false, 0);
		if (q->conf.n_levels > 1)
			return mfs_fail(err, EAGAIN, "%s: queue full (%lld requests waiting at priority %d, "
					"max_queue_size)", q->label, (long long)lv->conf.max_queue_size,
					job->level + 1);
		return mfs_fail(err, EAGAIN, "%s: queue full (%lld requests waiting, max_queue_size)",
				q->label, (long long)lv->conf.max_queue_size);
	}
	job->t_enqueue = mfs_now_ns();
	uint64_t timeout = job->timeout_ns ? job->timeout_ns : lv->conf.default_timeout_ns;
	job->timeout_ns = timeout;
	job->deadline = timeout ? job->t_enqueue + timeout : 0;
	job->here = may_run_here && !q->queued && !q->conf.dynamic_batching && q->running < q->conf.instances &&
		    q->run_ns && q->run_ns < RUN_HERE_NS;
	push_job(q, job, 0);
	lv->queued++;
	q->queued++;
	if (job->deadline) {
		q->timed++;
		/* An idle thread must wake at the deadline. */
		wake_one(s);
	}
	if (!job->here)
		wake_one(s);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int mfs_sched_submit(mfs_queue *q, mfs_job *job, mfs_error *err)
{
	return submit(q, job, false, err);
}

int mfs_sched_submit_here(mfs_queue *q, mfs_job *job, mfs_error *err)
{
	return submit(q, job, true, err);
}

/* Are both jobs' inputs plain (no device tensor), alike in dtype and all dims but the first? */
static bool compatible(const mfs_queue *q, const mfs_job *a, const mfs_job *b)
{
	for (int i = 0; i < q->runner.n_inputs; i++) {
		const mfs_tensor *x = &a->inputs[i], *y = &b->inputs[i];
		if (x->dtype != y->dtype || x->shape.rank != y->shape.rank || x->layout || y->layout)
			return false;
		for (int d = 1; d < x->shape.rank; d++)
			if (x->shape.dims[d] != y->shape.dims[d])
				return false;
	}
	return true;
}

/* How many jobs from the head go into the next run, and whether to run
 * now.  When it is too early, *deadline is when it will be time. */
static bool ready(mfs_queue *q, uint64_t now, int *n_jobs, uint64_t *deadline)
{
	if (!q->conf.dynamic_batching) {
		*n_jobs = 1;
		return true;
	}
	int rows = 0, n = 0;
	mfs_job *head = first_job(q);
	for (mfs_job *j = head; j; j = next_job(q, j)) {
		if (rows + j->rows > q->conf.max_batch_size || (n && !compatible(q, head, j)))
			break;
		rows += j->rows;
		n++;
		if (rows >= q->conf.preferred_batch_size)
			break;
	}
	*n_jobs = n;
	/* A job that did not fit (or does not match) means the batch cannot
	 * grow any more: run it now. */
	bool blocked = n < q->queued;
	uint64_t due = head->t_enqueue + q->conf.max_queue_delay_ns;
	if (rows >= q->conf.preferred_batch_size || blocked || now >= due ||
	    q->closed || q->sched->stopping)
		return true;
	*deadline = due;
	return false;
}

static int concat_inputs(mfs_queue *q, mfs_job **jobs, int n, int rows,
			 mfs_tensor *merged, mfs_error *err)
{
	for (int i = 0; i < q->runner.n_inputs; i++) {
		mfs_shape shape = jobs[0]->inputs[i].shape;
		shape.dims[0] = rows;
		int r = mfs_tensor_alloc(&merged[i], jobs[0]->inputs[i].dtype, &shape, err);
		if (r < 0)
			return r;
		size_t off = 0;
		for (int j = 0; j < n; j++) {
			const mfs_tensor *t = &jobs[j]->inputs[i];
			if (t->nbytes)
				memcpy((char *)merged[i].data + off, t->data, t->nbytes);
			off += t->nbytes;
		}
	}
	return 0;
}

/* Cut every output of a batched run back into one tensor per job. */
static int split_outputs(mfs_queue *q, mfs_job **jobs, int n, int rows,
			 mfs_tensor *outs, mfs_error *err)
{
	for (int o = 0; o < q->runner.n_outputs; o++) {
		const mfs_tensor *t = &outs[o];
		if (t->shape.rank < 1 || t->shape.dims[0] != rows)
			return mfs_fail(err, EIO, "%s: output %d has %lld rows for a batch of %d",
					q->label, o, t->shape.rank ? (long long)t->shape.dims[0] : 0LL, rows);
	}
	for (int o = 0; o < q->runner.n_outputs; o++) {
		const mfs_tensor *t = &outs[o];
		size_t row_bytes = t->nbytes / (size_t)rows, off = 0;
		for (int j = 0; j < n; j++) {
			mfs_shape shape = t->shape;
			shape.dims[0] = jobs[j]->rows;
			int r = mfs_tensor_alloc(&jobs[j]->outputs[o], t->dtype, &shape, err);
			if (r < 0)
				return r;
			size_t len = row_bytes * (size_t)jobs[j]->rows;
			if (len)
				memcpy(jobs[j]->outputs[o].data, (const char *)t->data + off, len);
			off += len;
			/* string elements point into the batch's arena: copy the bytes */
			if ((r = mfs_tensor_own_strings(&jobs[j]->outputs[o], err)) < 0)
				return r;
		}
	}
	return 0;
}

static void release_outputs(mfs_queue *q, mfs_job *job)
{
	for (int o = 0; o < q->runner.n_outputs; o++)
		mfs_tensor_release(&job->outputs[o]);
}

/* Run the jobs (taken off the queue) on one instance; no lock held. */
static void run_batch(mfs_queue *q, mfs_job **jobs, int n, int instance)
{
	int rows = 0, r = 0;
	mfs_error err;
	uint64_t t0 = mfs_now_ns(), t1, t2;

	mfs_error_clear(&err);
	mfs_exec_watch_cancel(&q->inst[instance].cancel);
	for (int j = 0; j < n; j++) {
		rows += jobs[j]->rows;
		jobs[j]->t_start = t0;
		if (jobs[j]->started)
			jobs[j]->started(jobs[j]);
	}
	if (n == 1) {
		t1 = mfs_now_ns();
		r = q->runner.run(q->runner.ctx, instance, jobs[0]->inputs, jobs[0]->outputs, &err);
		t2 = mfs_now_ns();
	} else {
		mfs_tensor *merged = calloc((size_t)q->runner.n_inputs + (size_t)q->runner.n_outputs + 1,
					    sizeof(mfs_tensor));
		mfs_tensor *outs = merged ? merged + q->runner.n_inputs : NULL;
		if (!merged)
			r = mfs_fail(&err, ENOMEM, "out of memory");
		else
			r = concat_inputs(q, jobs, n, rows, merged, &err);
		t1 = mfs_now_ns();
		if (r == 0)
			r = q->runner.run(q->runner.ctx, instance, merged, outs, &err);
		t2 = mfs_now_ns();
		if (r == 0) {
			r = split_outputs(q, jobs, n, rows, outs, &err);
			for (int o = 0; o < q->runner.n_outputs; o++)
				mfs_tensor_release(&outs[o]);
			if (r < 0)
				for (int j = 0; j < n; j++)
					release_outputs(q, jobs[j]);
		}
		for (int i = 0; merged && i < q->runner.n_inputs; i++)
			mfs_tensor_release(&merged[i]);
		free(merged);
	}
	mfs_exec_watch_cancel(NULL);
	uint64_t t3 = mfs_now_ns();
	if (r < 0 && !err.code)
		mfs_fail(&err, -r, "%s: the run failed (%s)", q->label, strerror(-r));
	if (q->conf.stats)
		mfs_stats_add_execution(q->conf.stats, rows, t1 - t0, t2 - t1, t3 - t2);
	for (int j = 0; j < n; j++) {
		mfs_job *job = jobs[j];
		job->t_input = t1;
		job->t_infer = t2;
		job->t_end = t3;
		job->batch_size = q->conf.max_batch_size > 0 ? rows : 1;
		job->batch_requests = n;
		job->status = r;
		if (r < 0)
			job->err = err;
		if (q->conf.stats && r < 0 && job->cancelled)
			mfs_stats_add_failure(q->conf.stats, MFS_FAIL_CANCELED, t3 - job->t_enqueue);
		else if (q->conf.stats)
			mfs_stats_add_request(q->conf.stats, r == 0, t3 - job->t_enqueue,
					      t0 - job->t_enqueue, t1 - t0, t2 - t1, t3 - t2,
					      (uint64_t)job->rows);
	}
}

/* Take n jobs off pick's head and a free instance (lock held). */
static int take_jobs(mfs_queue *pick, mfs_job **batch, int n_jobs)
{
	int inst = 0, live = 0;
	while (pick->inst[inst].busy)
		inst++;
	for (int j = 0; j < n_jobs; j++) {
		batch[j] = pop_first(pick);
		batch[j]->here = false;
		batch[j]->inst = inst;
		live += !batch[j]->cancelled;
	}
	/* A run whose every job was cancelled while queued stops at its
	 * first node. */
	pick->inst[inst].busy = true;
	pick->inst[inst].live = live;
	atomic_store(&pick->inst[inst].cancel, live == 0);
	pick->running++;
	pick->running_jobs += n_jobs;
	return inst;
}

/* Is a job waiting in any queue (lock held)?  A worker is woken only for
 * one: waking one for every run finished beside another loaded model cost
 * each request two context switches and a contended lock. */
static bool jobs_waiting(const mfs_sched *s)
{
	for (const mfs_queue *q = s->queues; q; q = q->next_q)
		if (q->queued)
			return true;
	return false;
}

/* Run the taken jobs with no lock held, then give the instance back and
 * call done(); returns with the lock held again. */
static void run_taken(mfs_sched *s, mfs_queue *pick, mfs_job **batch, int n_jobs, int inst)
{
	pthread_mutex_unlock(&s->lock);
	uint64_t t0 = mfs_now_ns();
	run_batch(pick, batch, n_jobs, inst);
	uint64_t d = mfs_now_ns() - t0;

	pthread_mutex_lock(&s->lock);
	pick->inst[inst].busy = false;
	for (int j = 0; j < n_jobs; j++)
		batch[j]->inst = -1;
	pick->running--;
	pick->running_jobs -= n_jobs;
	pick->run_ns = pick->run_ns ? (pick->run_ns * 7 + d) / 8 : d;
	/* Jobs left that this run's instance could serve, or other queues'. */
	bool more = jobs_waiting(s);
	/* done() may free a job, and the queue may be freed as soon as
	 * running reaches 0 and idle is signalled; so call done() on a
	 * copy of the pointers while no lock is held, then signal, and do
	 * not touch pick again. */
	pthread_mutex_unlock(&s->lock);
	for (int j = 0; j < n_jobs; j++)
		batch[j]->done(batch[j]);
	pthread_mutex_lock(&s->lock);
	pthread_cond_broadcast(&s->idle);
	if (more)
		wake_one(s);
}

void mfs_sched_run_here(mfs_queue *q)
{
	mfs_sched *s = q->sched;
	mfs_job *job;

	pthread_mutex_lock(&s->lock);
	mfs_job *first = first_job(q);
	if (first && first->here) {
		if (q->running < q->conf.instances && !s->stopping && !q->closed) {
			int inst = take_jobs(q, &job, 1);
			run_taken(s, q, &job, 1, inst);
		} else {
			first->here = false;
			wake_one(s);
		}
	} else if (q->queued) {
		/* Another job went ahead of it (a higher priority): a worker
		 * takes them in order. */
		wake_one(s);
	}
	pthread_mutex_unlock(&s->lock);
}

static void *worker(void *arg)
{
	mfs_sched *s = arg;
	mfs_job **batch = NULL;
	int batch_cap = 0;

	if (s->thread_init)
		s->thread_init();
	pthread_mutex_lock(&s->lock);
	int me = s->next_index++;   /* < n_slots: one per thread created */
	while (!s->quit) {
		uint64_t now = mfs_now_ns(), earliest = 0;
		mfs_queue *pick = NULL;
		int n_jobs = 0;
		/* Late jobs first: under REJECT they fail now. */
		mfs_queue *late_q = NULL;
		mfs_job *late = NULL;
		for (mfs_queue *q = s->queues; q && !late; q = q->next_q) {
			uint64_t due = expire(q, now, &late);
			if (late)
				late_q = q;
			else if (due && (!earliest || due < earliest))
				earliest = due;
		}
		if (late) {
			/* done() with no lock; the queue cannot be freed
			 * meanwhile: it counts as running. */
			late_q->running_jobs++;
			late_q->running++;
			pthread_mutex_unlock(&s->lock);
			fail_late(late_q, late);
			pthread_mutex_lock(&s->lock);
			late_q->running--;
			late_q->running_jobs--;
			pthread_cond_broadcast(&s->idle);
			continue;
		}
		/* The queue whose first job has waited longest, among those
		 * with a free instance and a batch ready to go. */
		for (mfs_queue *q = s->queues; q; q = q->next_q) {
			if (!q->queued || q->running >= q->conf.instances)
				continue;
			int n;
			uint64_t due = 0;
			if (!ready(q, now, &n, &due)) {
				if (!earliest || due < earliest)
					earliest = due;
				continue;
			}
			if (!pick || first_job(q)->t_enqueue < first_job(pick)->t_enqueue) {
				pick = q;
				n_jobs = n;
			}
		}
		if (!pick) {
			s->idle_stack[s->n_idle++] = me;
			if (earliest) {
				struct timespec ts = { (time_t)(earliest / 1000000000u),
						       (long)(earliest % 1000000000u) };
				pthread_cond_timedwait(&s->wake[me], &s->lock, &ts);
			} else {
				pthread_cond_wait(&s->wake[me], &s->lock);
			}
			idle_leave(s, me);
			continue;
		}
		if (n_jobs > batch_cap) {
			mfs_job **nb = realloc(batch, (size_t)n_jobs * sizeof(*nb));
			if (!nb) {
				n_jobs = batch_cap ? batch_cap : 0;
				if (!n_jobs) {
					/* Cannot even hold one pointer: back off. */
					pthread_mutex_unlock(&s->lock);
					struct timespec d = { 0, 1000000 };
					nanosleep(&d, NULL);
					pthread_mutex_lock(&s->lock);
					continue;
				}
			} else {
				batch = nb;
				batch_cap = n_jobs;
			}
		}
		int inst = take_jobs(pick, batch, n_jobs);
		/* Another worker may serve another instance or queue. */
		if (jobs_waiting(s))
			wake_one(s);
		run_taken(s, pick, batch, n_jobs, inst);
	}
	pthread_mutex_unlock(&s->lock);
	free(batch);
	return NULL;
}

/* Take every queued job off q (lock held); returns the list. */
static mfs_job *take_all(mfs_queue *q)
{
	mfs_job *list = NULL, **tail = &list;
	while (q->queued) {
		*tail = pop_first(q);
		tail = &(*tail)->next;
	}
	return list;
}

static void fail_list(mfs_job *list, int code, const char *why, mfs_stats *stats)
{
	while (list) {
		mfs_job *next = list->next;
		list->next = NULL;
		list->status = -code;
		mfs_fail(&list->err, code, "%s", why);
		list->t_start = list->t_input = list->t_infer = list->t_end = mfs_now_ns();
		mfs_stats_add_failure(stats, MFS_FAIL_OTHER, list->t_end - list->t_enqueue);
		list->done(list);
		list = next;
	}
}

void mfs_sched_queue_close(mfs_queue *q, const char *reason)
{
	mfs_sched *s = q->sched;
	char why[MFS_ERROR_MSG_MAX];
	snprintf(why, sizeof(why), "%s: %s", q->label, reason ? reason : "the version was unloaded");
	pthread_mutex_lock(&s->lock);
	q->closed = true;
	mfs_job *list = take_all(q);
	pthread_mutex_unlock(&s->lock);
	fail_list(list, ESHUTDOWN, why, q->conf.stats);
}

int mfs_sched_queue_depth(mfs_queue *q, bool waiting_only)
{
	pthread_mutex_lock(&q->sched->lock);
	int n = (int)q->queued + (waiting_only ? 0 : q->running_jobs);
	pthread_mutex_unlock(&q->sched->lock);
	return n;
}

void mfs_sched_queue_free(mfs_queue *q)
{
	if (!q)
		return;
	mfs_sched *s = q->sched;
	mfs_sched_queue_close(q, NULL);
	pthread_mutex_lock(&s->lock);
	while (q->running)
		pthread_cond_wait(&s->idle, &s->lock);
	for (mfs_queue **p = &s->queues; *p; p = &(*p)->next_q)
		if (*p == q) {
			*p = q->next_q;
			break;
		}
	pthread_mutex_unlock(&s->lock);
	free(q->inst);
	free(q->levels);
	free(q->label);
	free(q);
}

void mfs_sched_cancel(mfs_queue *q, mfs_job *job)
{
	mfs_sched *s = q->sched;

	pthread_mutex_lock(&s->lock);
	if (!job->cancelled) {
		job->cancelled = true;
		if (job->inst >= 0 && --q->inst[job->inst].live == 0)
			atomic_store(&q->inst[job->inst].cancel, true);
	}
	pthread_mutex_unlock(&s->lock);
}

/* Ask every run in flight to stop (lock held). */
static void cancel_running(mfs_sched *s)
{
	for (mfs_queue *q = s->queues; q; q = q->next_q)
		for (int i = 0; i < q->conf.instances; i++)
			if (q->inst[i].busy)
				atomic_store(&q->inst[i].cancel, true);
}

static bool busy(mfs_sched *s)
{
	for (mfs_queue *q = s->queues; q; q = q->next_q)
		if (q->queued || q->running)
			return true;
	return false;
}

void mfs_sched_stop(mfs_sched *s, uint64_t drain_ns)
{
	uint64_t until = mfs_now_ns() + drain_ns;
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	wake_all(s);
	while (busy(s) && mfs_now_ns() < until) {
		/* idle uses the realtime clock; wait in short slices. */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 20000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&s->idle, &s->lock, &ts);
	}
	mfs_job *lists = NULL, **tail = &lists;
	for (mfs_queue *q = s->queues; q; q = q->next_q) {
		*tail = take_all(q);
		while (*tail)
			tail = &(*tail)->next;
	}
	/* What still runs after the drain stops at its next node or loop
	 * iteration. */
	cancel_running(s);
	pthread_mutex_unlock(&s->lock);
	fail_list(lists, ESHUTDOWN, "the daemon is stopping; the request did not run", NULL);
	pthread_mutex_lock(&s->lock);
	while (busy(s))
		pthread_cond_wait(&s->idle, &s->lock);
	s->quit = true;
	wake_all(s);
	pthread_mutex_unlock(&s->lock);
	for (int i = 0; i < s->n_threads; i++)
		pthread_join(s->threads[i], NULL);
	s->n_threads = 0;
}

void mfs_sched_free(mfs_sched *s)
{
	if (!s)
		return;
	if (s->n_threads)
		mfs_sched_stop(s, 0);
	pthread_mutex_destroy(&s->lock);
	for (int i = 0; i < s->n_slots; i++)
		pthread_cond_destroy(&s->wake[i]);
	pthread_cond_destroy(&s->idle);
	free(s->wake);
	free(s->idle_stack);
	free(s->threads);
	free(s);
}

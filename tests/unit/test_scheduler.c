/* test_scheduler.c - queues, instances, dynamic batching, shutdown, with a
 * fake runner (out = in + 1) that records what it was given. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "metrics.h"
#include "scheduler.h"

typedef struct fake {
	pthread_mutex_t lock;
	int running, max_running, runs;
	int batch_rows[256];
	float first[256];          /* each run's first input value: which job ran */
	int sleep_ms;
	bool fail;
} fake;

static int fake_run(void *ctx, int instance, const mfs_tensor *in, mfs_tensor *out, mfs_error *err)
{
	fake *f = ctx;
	(void)instance;
	pthread_mutex_lock(&f->lock);
	f->running++;
	if (f->running > f->max_running)
		f->max_running = f->running;
	if (f->runs < 256)
		f->batch_rows[f->runs] = in[0].shape.rank ? (int)in[0].shape.dims[0] : 1;
	if (f->runs < 256)
		f->first[f->runs] = ((const float *)in[0].data)[0];
	f->runs++;
	pthread_mutex_unlock(&f->lock);
	if (f->sleep_ms)
		usleep((useconds_t)f->sleep_ms * 1000);
	int rc = 0;
	if (f->fail) {
		rc = mfs_fail(err, EIO, "fake failure");
	} else {
		rc = mfs_tensor_alloc(&out[0], in[0].dtype, &in[0].shape, err);
		for (int64_t i = 0; rc == 0 && i < mfs_shape_numel(&in[0].shape); i++)
			((float *)out[0].data)[i] = ((const float *)in[0].data)[i] + 1.0f;
	}
	pthread_mutex_lock(&f->lock);
	f->running--;
	pthread_mutex_unlock(&f->lock);
	return rc;
}

typedef struct tjob {
	mfs_job job;
	mfs_tensor in, out;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
} tjob;

static void tjob_done(mfs_job *j)
{
	tjob *t = j->arg;
	pthread_mutex_lock(&t->lock);
	t->done = true;
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

static void tjob_init(tjob *t, int rows, int cols, float base, bool batched)
{
	memset(t, 0, sizeof(*t));
	mfs_shape s = { .rank = batched ? 2 : 1 };
	if (batched) {
		s.dims[0] = rows;
		s.dims[1] = cols;
	} else {
		s.dims[0] = cols;
	}
	assert_int_equal(mfs_tensor_alloc(&t->in, MFS_DT_FLOAT, &s, NULL), 0);
	for (int64_t i = 0; i < mfs_shape_numel(&s); i++)
		((float *)t->in.data)[i] = base + (float)i;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->cond, NULL);
	t->job.inputs = &t->in;
	t->job.outputs = &t->out;
	t->job.done = tjob_done;
	t->job.arg = t;
}

static void tjob_wait(tjob *t)
{
	pthread_mutex_lock(&t->lock);
	while (!t->done)
		pthread_cond_wait(&t->cond, &t->lock);
	pthread_mutex_unlock(&t->lock);
}

static void tjob_check(tjob *t, float base)
{
	assert_int_equal(t->job.status, 0);
	assert_true(mfs_shape_equal(&t->out.shape, &t->in.shape));
	for (int64_t i = 0; i < mfs_shape_numel(&t->in.shape); i++)
		assert_true(((float *)t->out.data)[i] == base + (float)i + 1.0f);
}

static void tjob_free(tjob *t)
{
	mfs_tensor_release(&t->in);
	mfs_tensor_release(&t->out);
	pthread_mutex_destroy(&t->lock);
	pthread_cond_destroy(&t->cond);
}

static fake *fake_new(void)
{
	fake *f = calloc(1, sizeof(*f));
	pthread_mutex_init(&f->lock, NULL);
	return f;
}

static mfs_queue *queue(mfs_sched *s, fake *f, mfs_queue_conf qc)
{
	mfs_runner r = { .run = fake_run, .ctx = f, .n_inputs = 1, .n_outputs = 1 };
	mfs_queue *q;
	mfs_error err;
	qc.label = "test";
	assert_int_equal(mfs_sched_queue_new(s, &qc, &r, &q, &err), 0);
	return q;
}

static void test_single_jobs(void **state)
{
	(void)state;
	mfs_sched *s;
	mfs_error err;
	fake *f = fake_new();
	assert_int_equal(mfs_sched_new(2, &s, &err), 0);
	mfs_queue *q = queue(s, f, (mfs_queue_conf){ .instances = 1 });
	tjob jobs[20];
	for (int i = 0; i < 20; i++) {
		tjob_init(&jobs[i], 0, 8, (float)(i * 100), false);
		assert_int_equal(mfs_sched_submit(q, &jobs[i].job, &err), 0);
	}
	for (int i = 0; i < 20; i++) {
		tjob_wait(&jobs[i]);
		tjob_check(&jobs[i], (float)(i * 100));
		assert_int_equal(jobs[i].job.batch_size, 1);
		assert_true(jobs[i].job.t_end >= jobs[i].job.t_start);
		assert_true(jobs[i].job.t_start >= jobs[i].job.t_enqueue);
		tjob_free(&jobs[i]);
	}
	/* One instance: never two runs at once, though two threads exist. */
	assert_int_equal(f->max_running, 1);
	assert_int_equal(f->runs, 20);
	mfs_sched_queue_free(q);
	mfs_sched_stop(s, 0);
	mfs_sched_free(s);
	free(f);
}

/* Each compute thread calls thread_init once, before it runs anything:
 * a run on any thread finds it done. */
static int inits;
static pthread_mutex_t inits_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread bool thread_inited;

static void count_init(void)
{
	pthread_mutex_lock(&inits_lock);
	inits++;
	pthread_mutex_unlock(&inits_lock);
	thread_inited = true;
}

static int inited_run(void *ctx, int instance, const mfs_tensor *in, mfs_tensor *out, mfs_error *err)
{
	if (!thread_inited)
		return mfs_fail(err, EIO, "a run on a thread that was not initialised");
	return fake_run(ctx, instance, in, out, err);
}

static void test_thread_init_before_runs(void **state)
{
	(void)state;
	mfs_sched *s;
	mfs_error err;
	fake *f = fake_new();
	assert_int_equal(mfs_sched_new_with_init(3, count_init, &s, &err), 0);
	mfs_runner r = { .run = inited_run, .ctx = f, .n_inputs = 1, .n_outputs = 1 };
	mfs_queue *q;
	assert_int_equal(mfs_sched_queue_new(s, &(mfs_queue_conf){ .label = "init", .instances = 3 }, &r, &q, &err), 0);
	tjob jobs[12];
	for (int i = 0; i < 12; i++) {
		tjob_init(&jobs[i], 0, 4, (float)i, false);
		assert_int_equal(mfs_sched_submit(q, &jobs[i].job, &err), 0);
	}
	for (int i = 0; i < 12; i++) {
		tjob_wait(&jobs[i]);
		assert_int_equal(jobs[i].job.status, 0);
		tjob_free(&jobs[i]);
	}
	mfs_sched_queue_free(q);
	mfs_sched_stop(s, 0);
	mfs_sched_free(s);
	assert_int_equal(inits, 3);
	free(f);
}

/* One job at a time: each runs on the compute thread that went idle last,
 * the one that ran the job before (its OpenMP team still warm), not on
 * the threads in turn. */
static pthread_t ran_on[8];
static int n_ran;

static int recording_run(void *ctx, int instance, const mfs_tensor *in, mfs_tensor *out,
			 mfs_error *err)
{
	if (n_ran < 8)
		ran_on[n_ran++] = pthread_self();
	return fake_run(ctx, instance, in, out, err);
}

static void test_last_idle_thread_runs_next(void **state)
{
	(void)state;
	mfs_sched *s;
	mfs_error err;
	fake *f = fake_new();
	assert_int_equal(mfs_sched_new(4, &s, &err), 0);
	mfs_runner r = { .run = recording_run, .ctx = f, .n_inputs = 1, .n_outputs = 1 };
	mfs_queue *q;
	assert_int_equal(mfs_sched_queue_new(s, &(mfs_queue_conf){ .label = "lifo", .instances = 1 },
					     &r, &q, &err), 0);
	usleep(20000);   /* every thread idle */
	n_ran = 0;
	for (int i = 0; i < 8; i++) {
		tjob t;
		tjob_init(&t, 0, 4, (float)i, false);
		assert_int_equal(mfs_sched_submit(q, &t.job, &err), 0);
		tjob_wait(&t);
		tjob_check(&t, (float)i);
		tjob_free(&t);
		usleep(5000);   /* the thread goes back to waiting */
	}
	assert_int_equal(n_ran, 8);
	for (int i = 1; i < 8; i++)
		assert_true(pthread_equal(ran_on[i], ran_on[0]));
	mfs_sched_queue_free(q);
	mfs_sched_stop(s, 0);
	mfs_sched_free(s);
	free(f);
}

static void test_instances_run_concurrently(void **state)
{
	(void)state;
	mfs_sched *s;
	mfs_error err;
	fake *f = fake_new();
	f->sleep_ms = 30;
	assert_int_equal(mfs_sched_new(3, &s, &err), 0);
	mfs_queue *q = queue(s, f, (mfs_queue_conf){ .instances = 2 });
	tjob jobs[6];
	for (int i = 0; i < 6; i++) {
		tjob_init(&jobs[i], 0, 4, (float)i, false);
		assert_int_equal(mfs_sched_submit(q, &jobs[i].job, &err), 0);
	}
	for (int i = 0; i < 6; i++) {
		tjob_wait(&jobs[i]);
		tjob_check(&jobs[i], (float)i);
		tjob_free(&jobs[i]);
	}
	assert_int_equal(f->max_running, 2);   /* instance count honoured, not the 3 threads */
	mfs_sched_queue_free(q);
	mfs_sched_free(s);
	free(f);
}

static void test_dynamic_batching_merges_and_splits(void **state)
{
	(void)state;
	mfs_sched *s;
	mfs_error err;
	fake *f = fake_new();
	mfs_stats stats;
	mfs_stats_init(&stats);
	assert_int_equal(mfs_sched_new(1, &s, &err), 0);
	mfs_queue *q = queue(s, f, (mfs_queue_conf){ .instances = 1, .max_batch_size = 8,
						    .dynamic_batching = true,
						    .max_queue_delay_ns = 200000000ull,
						    .stats = &stats });
	/* 1+2+1+3 = 7 rows arrive within the delay: one run of 7 rows. */
	int rows[4] = { 1, 2, 1, 3 };
	tjob jobs[4];
	for (int i = 0; i < 4; i++) {
		tjob_init(&jobs[i], rows[i], 3, (float)(i * 1000), true);
		assert_int_equal(mfs_sched_submit(q, &jobs[i].job, &err), 0);
	}
	for (int i = 0; i < 4; i++) {
		tjob_wait(&jobs[i]);
		tjob_check(&jobs[i], (float)(i * 1000));
		assert_int_equal(jobs[i].job.batch_size, 7);
		assert_int_equal(jobs[i].job.batch_requests, 4);
		assert_int_equal(jobs[i].out.shape.dims[0], rows[i]);
		tjob_free(&jobs[i]);
	}
	assert_int_equal(f->runs, 1);
	assert_int_equal(f->batch_rows[0], 7);
	mfs_stats snap;
	mfs_stats_snapshot(&stats, &snap);
	assert_int_equal(snap.execution_count, 1);
	assert_int_equal(snap.success.count, 4);
	assert_int_equal(snap.inference_count, 7);
	assert_int_equal(snap.batch[7].compute_infer.count, 1);
	mfs_sched_queue_free(q);
	mfs_sched_free(s);
	mfs_stats_release(&stats);
	free(f);
}

static void test_batch_limit_and_shape_mismatch(void **state)
{
	(void)state;
	mfs_sched *s;
	mfs_error err;
	fake *f = fake_new();
	assert_int_equal(mfs_sched_new(1, &s, &err), 0);
	mfs_queue *q = queue(s, f, (mfs_queue_conf){ .instances = 1, .max_batch_size = 4,
						    .dynamic_batching = true,
						    .max_queue_delay_ns = 100000000ull });
	/* 3 + 3 rows cannot share a run of at most 4; a job with other
	 * columns cannot join either. */
	tjob a, b, c;
	tjob_init(&a, 3, 2, 0, true);
	tjob_init(&b, 3, 2, 10, true);
	tjob_init(&c, 1, 5, 20, true);
	assert_int_equal(mfs_sched_submit(q, &a.job, &err), 0);
	assert_int_equal(mfs_sched_submit(q, &b.job, &err), 0);
	assert_int_equal(mfs_sched_submit(q, &c.job, &err), 0);
	tjob_wait(&a);
	tjob_wait(&b);
	tjob_wait(&c);
	tjob_check(&a, 0);
	tjob_check(&b, 10);
	tjob_check(&c, 20);
	assert_int_equal(a.job.batch_size, 3);
	assert_int_equal(b.job.batch_size, 3);
	assert_int_equal(c.job.batch_size, 1);
	assert_int_equal(f->runs, 3);
	/* Too many rows for max_batch_size: refused at submit. */
	tjob d;
	tjob_init(&d, 5, 2, 0, true);
	assert_int_equal(mfs_sched_submit(q, &d.job, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "max_batch_size"));
	tjob_free(&a);
	tjob_free(&b);
	tjob_free(&c);
	tjob_free(&d);
	mfs_sched_queue_free(q);
	mfs_sched_free(s);
	free(f);
}

static void test_queue_full_and_close(void **state)
{
	(void)state;
	mfs_sched *s;
	mfs_error err;
	fake *f = fake_new();
	f->sleep_ms = 100;
	mfs_stats st;
	mfs_stats_init(&st);
	assert_int_equal(mfs_sched_new(1, &s, &err), 0);
	mfs_queue *q = queue(s, f, (mfs_queue_conf){ .instances = 1, .max_queue_size = 2, .stats = &st });
	tjob jobs[4];
	for (int i = 0; i < 4; i++)
		tjob_init(&jobs[i], 0, 2, 0, false);
	assert_int_equal(mfs_sched_submit(q, &jobs[0].job, &err), 0);
	usleep(30000);   /* the first is running: the queue holds 0 */
	assert_int_equal(mfs_sched_submit(q, &jobs[1].job, &err), 0);
	assert_int_equal(mfs_sched_submit(q, &jobs[2].job, &err), 0);
	assert_int_equal(mfs_sched_submit(q, &jobs[3].job, &err), -EAGAIN);
	assert_non_null(strstr(err.msg, "queue full"));
	assert_int_equal(mfs_sched_queue_depth(q, false), 3);
	assert_int_equal(mfs_sched_queue_depth(q, true), 2);   /* the pending ones */
	mfs_sched_queue_close(q, "unloaded for the test");
	tjob_wait(&jobs[0]);
	tjob_wait(&jobs[1]);
	tjob_wait(&jobs[2]);
	/* the full queue's refusal is REJECTED; the two failed by the close, OTHER */
	assert_int_equal(st.fail_by[MFS_FAIL_REJECTED], 1);
	assert_int_equal(st.fail_by[MFS_FAIL_OTHER], 2);
	assert_int_equal(jobs[0].job.status, 0);   /* it was running: it finished */
	assert_int_equal(jobs[1].job.status, -ESHUTDOWN);
	assert_non_null(strstr(jobs[1].job.err.msg, "unloaded for the test"));
	assert_int_equal(mfs_sched_submit(q, &jobs[3].job, &err), -ESHUTDOWN);
	for (int i = 0; i < 4; i++)
		tjob_free(&jobs[i]);
	mfs_sched_queue_free(q);
	mfs_sched_free(s);
	mfs_stats_release(&st);
	free(f);
}

static void test_stop_drains_then_fails(void **state)
{
	(void)state;
	mfs_sched *s;
	mfs_error err;
	fake *f = fake_new();
	f->sleep_ms = 20;
	assert_int_equal(mfs_sched_new(1, &s, &err), 0);
	mfs_queue *q = queue(s, f, (mfs_queue_conf){ .instances = 1 });
	tjob jobs[5];
	for (int i = 0; i < 5; i++) {
		tjob_init(&jobs[i], 0, 2, (float)i, false);
		assert_int_equal(mfs_sched_submit(q, &jobs[i].job, &err), 0);
	}
	/* Enough time to drain everything: all succeed. */
	mfs_sched_stop(s, 5000000000ull);
	for (int i = 0; i < 5; i++) {
		tjob_wait(&jobs[i]);
		tjob_check(&jobs[i], (float)i);
	}
	tjob extra;
	tjob_init(&extra, 0, 2, 0, false);
	assert_int_equal(mfs_sched_submit(q, &extra.job, &err), -ESHUTDOWN);
	tjob_free(&extra);
	for (int i = 0; i < 5; i++)
		tjob_free(&jobs[i]);
	mfs_sched_queue_free(q);
	mfs_sched_free(s);

	/* No time at all: what was queued fails, nothing hangs. */
	f->sleep_ms = 50;
	f->runs = 0;
	assert_int_equal(mfs_sched_new(1, &s, &err), 0);
	q = queue(s, f, (mfs_queue_conf){ .instances = 1 });
	for (int i = 0; i < 5; i++) {
		tjob_init(&jobs[i], 0, 2, (float)i, false);
		assert_int_equal(mfs_sched_submit(q, &jobs[i].job, &err), 0);
	}
	usleep(10000);
	mfs_sched_stop(s, 0);
	int failed = 0;
	for (int i = 0; i < 5; i++) {
		tjob_wait(&jobs[i]);
		failed += jobs[i].job.status == -ESHUTDOWN;
		tjob_free(&jobs[i]);
	}
	assert_true(failed >= 3);
	mfs_sched_queue_free(q);
	mfs_sched_free(s);
	free(f);
}

/* The queue policy tests: one instance held busy by jobs[0] while the
 * others queue.  jobs[i] adds 1 to base i * 10; f->first[k] says which
 * job the k-th run served. */
typedef struct rig {
	mfs_sched *s;
	mfs_queue *q;
	fake *f;
	mfs_stats st;
	tjob jobs[6];
	int n;
} rig;

static void rig_start(rig *r, int threads, int sleep_ms, mfs_queue_conf qc, int n)
{
	mfs_error err;
	memset(r, 0, sizeof(*r));
	r->f = fake_new();
	r->f->sleep_ms = sleep_ms;
	r->n = n;
	mfs_stats_init(&r->st);
	qc.instances = 1;
	qc.stats = &r->st;
	assert_int_equal(mfs_sched_new(threads, &r->s, &err), 0);
	r->q = queue(r->s, r->f, qc);
	for (int i = 0; i < n; i++)
		tjob_init(&r->jobs[i], 0, 2, (float)i * 10, false);
	assert_int_equal(mfs_sched_submit(r->q, &r->jobs[0].job, &err), 0);
	usleep(20000);   /* it is running */
}

/* Wait for the jobs (those with wait[i] when wait is given), free all. */
static void rig_finish(rig *r, const bool *wait)
{
	for (int i = 0; i < r->n; i++)
		if (!wait || wait[i])
			tjob_wait(&r->jobs[i]);
	for (int i = 0; i < r->n; i++)
		tjob_free(&r->jobs[i]);
	mfs_sched_queue_free(r->q);
	mfs_sched_free(r->s);
	mfs_stats_release(&r->st);
	free(r->f);
}

/* Jobs queued behind a running one, at three priority levels (default
 * 2), run level 1 first, each level in order. */
static void test_priorities_served_in_order(void **state)
{
	(void)state;
	mfs_error err;
	mfs_queue_level levels[3] = { { .max_queue_size = 8 }, { .max_queue_size = 8 },
				      { .max_queue_size = 8 } };
	rig r;
	rig_start(&r, 2, 40, (mfs_queue_conf){ .levels = levels, .n_levels = 3, .default_level = 2 }, 6);
	/* priorities of jobs 1..5, submitted in this order; expected runs:
	 * 0, 3, 5, 2, 4, 1 */
	const int priority[6] = { 0, 3, 0, 1, 2, 1 };
	const float ran[6] = { 0, 30, 50, 20, 40, 10 };
	for (int i = 1; i < 6; i++) {
		r.jobs[i].job.priority = priority[i];
		assert_int_equal(mfs_sched_submit(r.q, &r.jobs[i].job, &err), 0);
	}
	/* A priority that is not a level is refused. */
	tjob bad;
	tjob_init(&bad, 0, 2, 0, false);
	bad.job.priority = 4;
	assert_int_equal(mfs_sched_submit(r.q, &bad.job, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "priority 4"));
	tjob_free(&bad);
	for (int i = 0; i < 6; i++)
		tjob_wait(&r.jobs[i]);
	assert_int_equal(r.f->runs, 6);
	for (int i = 0; i < 6; i++)
		assert_true(r.f->first[i] == ran[i]);
	rig_finish(&r, NULL);
}

/* max_queue_size holds per level: a full level refuses, another takes. */
static void test_queue_full_per_level(void **state)
{
	(void)state;
	mfs_error err;
	mfs_queue_level levels[2] = { { .max_queue_size = 1 }, { .max_queue_size = 1 } };
	rig r;
	rig_start(&r, 1, 60, (mfs_queue_conf){ .levels = levels, .n_levels = 2, .default_level = 2 }, 4);
	r.jobs[1].job.priority = 1;
	assert_int_equal(mfs_sched_submit(r.q, &r.jobs[1].job, &err), 0);
	r.jobs[2].job.priority = 1;
	assert_int_equal(mfs_sched_submit(r.q, &r.jobs[2].job, &err), -EAGAIN);
	assert_non_null(strstr(err.msg, "queue full"));
	assert_non_null(strstr(err.msg, "priority 1"));
	assert_int_equal(mfs_sched_submit(r.q, &r.jobs[3].job, &err), 0);   /* level 2 */
	const bool submitted[4] = { true, true, false, true };
	for (int i = 0; i < 4; i++)
		if (submitted[i])
			tjob_wait(&r.jobs[i]);
	assert_int_equal(r.st.rejected.count, 1);
	assert_int_equal(r.st.fail.count, 1);
	rig_finish(&r, submitted);
}

/* REJECT: a job that waits past its timeout fails with ETIMEDOUT at its
 * deadline (an idle thread sees it while the instance is busy); one with
 * its own longer timeout runs. */
static void test_timeout_reject(void **state)
{
	(void)state;
	mfs_error err;
	mfs_queue_level level = { .max_queue_size = 8, .default_timeout_ns = 30000000 };
	rig r;
	rig_start(&r, 2, 300, (mfs_queue_conf){ .levels = &level, .n_levels = 1, .default_level = 1 }, 3);
	uint64_t t0 = mfs_now_ns();
	assert_int_equal(mfs_sched_submit(r.q, &r.jobs[1].job, &err), 0);
	r.jobs[2].job.timeout_ns = 5000000000u;
	assert_int_equal(mfs_sched_submit(r.q, &r.jobs[2].job, &err), 0);
	tjob_wait(&r.jobs[1]);
	uint64_t waited = mfs_now_ns() - t0;
	assert_int_equal(r.jobs[1].job.status, -ETIMEDOUT);
	assert_int_equal(r.jobs[1].job.err.code, ETIMEDOUT);
	assert_non_null(strstr(r.jobs[1].job.err.msg, "timed out in the queue"));
	assert_true(waited >= 30000000u);
	assert_true(waited < 250000000u);   /* before the running job ended */
	tjob_wait(&r.jobs[0]);
	tjob_wait(&r.jobs[2]);
	tjob_check(&r.jobs[0], 0);
	tjob_check(&r.jobs[2], 20);
	assert_int_equal(r.st.timed_out.count, 1);
	assert_int_equal(r.st.success.count, 2);
	rig_finish(&r, NULL);
}

/* DELAY: a late job is not failed; it runs after the level's punctual
 * ones. */
static void test_timeout_delay(void **state)
{
	(void)state;
	mfs_error err;
	mfs_queue_level level = { .max_queue_size = 8, .delay_on_timeout = true };
	rig r;
	rig_start(&r, 2, 100, (mfs_queue_conf){ .levels = &level, .n_levels = 1, .default_level = 1 }, 3);
	r.jobs[1].job.timeout_ns = 10000000;   /* late long before the first ends */
	assert_int_equal(mfs_sched_submit(r.q, &r.jobs[1].job, &err), 0);
	assert_int_equal(mfs_sched_submit(r.q, &r.jobs[2].job, &err), 0);
	for (int i = 0; i < 3; i++) {
		tjob_wait(&r.jobs[i]);
		tjob_check(&r.jobs[i], (float)i * 10);
	}
	assert_true(r.f->first[1] == 20);   /* the punctual one first */
	assert_true(r.f->first[2] == 10);
	rig_finish(&r, NULL);
}

static void test_run_failure_reaches_every_job(void **state)
{
	(void)state;
	mfs_sched *s;
	mfs_error err;
	fake *f = fake_new();
	f->fail = true;
	assert_int_equal(mfs_sched_new(1, &s, &err), 0);
	mfs_queue *q = queue(s, f, (mfs_queue_conf){ .instances = 1, .max_batch_size = 4,
						    .dynamic_batching = true,
						    .max_queue_delay_ns = 50000000ull });
	tjob a, b;
	tjob_init(&a, 1, 2, 0, true);
	tjob_init(&b, 1, 2, 0, true);
	assert_int_equal(mfs_sched_submit(q, &a.job, &err), 0);
	assert_int_equal(mfs_sched_submit(q, &b.job, &err), 0);
	tjob_wait(&a);
	tjob_wait(&b);
	assert_int_equal(a.job.status, -EIO);
	assert_int_equal(b.job.status, -EIO);
	assert_non_null(strstr(b.job.err.msg, "fake failure"));
	assert_null(a.out.data);
	tjob_free(&a);
	tjob_free(&b);
	mfs_sched_queue_free(q);
	mfs_sched_free(s);
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_jobs),
		cmocka_unit_test(test_instances_run_concurrently),
		cmocka_unit_test(test_thread_init_before_runs),
		cmocka_unit_test(test_last_idle_thread_runs_next),
		cmocka_unit_test(test_dynamic_batching_merges_and_splits),
		cmocka_unit_test(test_batch_limit_and_shape_mismatch),
		cmocka_unit_test(test_queue_full_and_close),
		cmocka_unit_test(test_stop_drains_then_fails),
		cmocka_unit_test(test_run_failure_reaches_every_job),
		cmocka_unit_test(test_priorities_served_in_order),
		cmocka_unit_test(test_queue_full_per_level),
		cmocka_unit_test(test_timeout_reject),
		cmocka_unit_test(test_timeout_delay),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* engine_trial.c - see engine_trial.h. */
#include "engine_trial.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define TRIAL_MAX_ITERATIONS 10000   /* per Loop node and trial run */

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

int mfs_trial_inputs(const mfs_graph *g, mfs_tensor *in, mfs_error *err)
{
	int n = mfs_graph_n_inputs(g);
	for (int i = 0; i < n; i++) {
		const mfs_io_desc *d = mfs_graph_input(g, i);
		mfs_shape s = { .rank = d->rank < 0 ? 1 : d->rank };
		int rc;
		for (int k = 0; k < s.rank; k++)
			s.dims[k] = d->rank < 0 || d->dims[k] < 0 ? 1 : d->dims[k];
		rc = mfs_tensor_alloc(&in[i], d->dtype, &s, err);
		if (rc) {
			for (int j = 0; j < i; j++)
				mfs_tensor_release(&in[j]);
			return rc;
		}
		if (d->dtype == MFS_DT_FLOAT)
			for (size_t e = 0; e < in[i].nbytes / sizeof(float); e++)
				((float *)in[i].data)[e] = 0.5f;
	}
	return 0;
}

/* ---- the watchdog: sets fired at a deadline unless disarmed first ---- */

typedef struct watchdog {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct timespec deadline;  /* CLOCK_MONOTONIC */
	bool disarmed, running;
	_Atomic bool fired;
} watchdog;

static void *watchdog_main(void *arg)
{
	watchdog *w = arg;
	pthread_mutex_lock(&w->lock);
	while (!w->disarmed)
		if (pthread_cond_timedwait(&w->cond, &w->lock, &w->deadline) == ETIMEDOUT) {
			atomic_store(&w->fired, true);
			break;
		}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* Arm for ms from now (ms <= 0: never fires, no thread). */
static void watchdog_arm(watchdog *w, double ms)
{
	pthread_condattr_t ca;

	memset(w, 0, sizeof(*w));
	atomic_init(&w->fired, false);
	if (ms <= 0)
		return;
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &ca);
	pthread_condattr_destroy(&ca);
	clock_gettime(CLOCK_MONOTONIC, &w->deadline);
	long long ns = (long long)(ms * 1e6) + w->deadline.tv_nsec;
	w->deadline.tv_sec += (time_t)(ns / 1000000000);
	w->deadline.tv_nsec = (long)(ns % 1000000000);
	w->running = pthread_create(&w->thread, NULL, watchdog_main, w) == 0;
	if (w->running)
		mfs_exec_watch_cancel(&w->fired);
}

/* Disarm; true when it had fired. */
static bool watchdog_disarm(watchdog *w)
{
	if (!w->running)
		return false;
	mfs_exec_watch_cancel(NULL);
	pthread_mutex_lock(&w->lock);
	w->disarmed = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	return atomic_load(&w->fired);
}

/* ---- the trial ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* One run under a watchdog of limit_ms; *ms: the run's own time (the
 * watchdog's thread not counted); *cut set when the limit stopped it, or
 * when it ended past the limit before it saw the cancel. */
static int timed_run(mfs_exec *e, const mfs_tensor *in, mfs_tensor *out, int n_out,
		     double limit_ms, double *ms, bool *cut, mfs_error *err)
{
	watchdog w;
	watchdog_arm(&w, limit_ms);
	double t0 = now_ms();
	int rc = mfs_exec_run(e, in, out, err);
	*ms = now_ms() - t0;
	bool fired = watchdog_disarm(&w);
	*cut = (fired && rc == -ECANCELED) || (!rc && limit_ms > 0 && *ms > limit_ms);
	if (!rc)
		for (int k = 0; k < n_out; k++)
			mfs_tensor_release(&out[k]);
	else if (*cut)
		mfs_error_clear(err);
	return *cut ? 0 : rc;
}

int mfs_trial_run(const mfs_graph *g, mfs_backend *b, const mfs_tensor *in,
		  const mfs_trial_limit *lim, mfs_trial *tr, mfs_error *err)
{
	int n_out = mfs_graph_n_outputs(g), rc;
	mfs_tensor *out = calloc((size_t)n_out + 1, sizeof(*out));
	double t[MFS_TRIAL_RUNS] = { -1, -1, -1 }, t0 = now_ms(), setup = lim ? lim->setup_ms : 0;
	double run_limit = lim ? lim->run_ms : 0;
	mfs_exec *e = NULL;
	bool cut = false;

	memset(tr, 0, sizeof(*tr));
	tr->median_ms = -1;
	if (!out)
		return mfs_fail(err, ENOMEM, "out of memory");
	rc = mfs_exec_new(g, b, &e, err);
	double made = now_ms() - t0, first = -1;
	/* A loop whose exit depends on data may never meet it on made-up
	 * inputs: bounded, the trial fails instead of hanging the load. */
	mfs_engine_set_thread_max_iterations(TRIAL_MAX_ITERATIONS);
	if (!rc && setup > 0 && now_ms() - t0 >= setup) {
		cut = true;
		snprintf(tr->why, sizeof(tr->why), "making its context took %.0f ms, over the %.0f ms limit",
			 now_ms() - t0, setup);
	}
	if (!rc && !cut) {
		rc = timed_run(e, in, out, n_out, setup > 0 ? setup - (now_ms() - t0) : 0, &first,
			       &cut, err);
		if (cut)
			snprintf(tr->why, sizeof(tr->why), "its setup (context and first run) passed the %.0f ms limit",
				 setup);
	}
	for (int r = 0; !rc && !cut && r < MFS_TRIAL_RUNS; r++) {
		rc = timed_run(e, in, out, n_out, run_limit, &t[r], &cut, err);
		if (cut)
			snprintf(tr->why, sizeof(tr->why), "timed run %d passed the %.3f ms limit", r + 1,
				 run_limit);
	}
	mfs_engine_set_thread_max_iterations(0);
	mfs_exec_free(e);
	free(out);
	tr->total_ms = now_ms() - t0;
	tr->stopped = cut;
	tr->context_ms = made;
	tr->first_ms = first;
	if (rc || cut)
		return rc;
	qsort(t, MFS_TRIAL_RUNS, sizeof(t[0]), cmp_double);
	tr->median_ms = t[MFS_TRIAL_RUNS / 2];
	return 0;
}

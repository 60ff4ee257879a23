/* load_pool.c - see load_pool.h.  p->lock guards the next index and the
 * failure sum; jobs run with no lock held. */
#include "load_pool.h"

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model_load.h"

typedef struct pool {
	char *const *names;
	int n, next, failed;     /* next, failed: under lock */
	mfs_load_job job;
	bool (*stop)(void *ctx);
	void *ctx;
	pthread_mutex_t lock;
} pool;

/* A load may be the process's first OpenCL compile: LLVM, under PoCL,
 * then gives the calling thread a signal stack of its own (malloc'd).
 * A pool thread that ends with it makes AddressSanitizer's thread exit
 * unmap LLVM's heap block and abort the daemon; so each worker leaves
 * with the signal stack it started with. */
static void *worker(void *arg)
{
	pool *p = arg;
	stack_t started_with;
	bool saved = sigaltstack(NULL, &started_with) == 0;
	for (;;) {
		pthread_mutex_lock(&p->lock);
		int i = p->next < p->n && !(p->stop && p->stop(p->ctx)) ? p->next++ : -1;
		pthread_mutex_unlock(&p->lock);
		if (i < 0)
			break;
		int f = p->job(p->ctx, p->names[i]);
		pthread_mutex_lock(&p->lock);
		p->failed += f;
		pthread_mutex_unlock(&p->lock);
	}
	stack_t now;
	if (saved && sigaltstack(NULL, &now) == 0 && now.ss_sp != started_with.ss_sp) {
		if (started_with.ss_flags & SS_DISABLE)
			started_with = (stack_t){ .ss_flags = SS_DISABLE };
		sigaltstack(&started_with, NULL);
	}
	return NULL;
}

int mfs_load_pool_run(char *const *names, int n, int threads, mfs_load_job job,
		      bool (*stop)(void *ctx), void *ctx)
{
	pool p = { .names = names, .n = n, .job = job, .stop = stop, .ctx = ctx };
	pthread_mutex_init(&p.lock, NULL);
	if (threads > n)
		threads = n;
	pthread_t *ts = threads > 1 ? calloc((size_t)threads - 1, sizeof(*ts)) : NULL;
	int started = 0;
	for (int k = 0; ts && k < threads - 1; k++)
		if (pthread_create(&ts[started], NULL, worker, &p) == 0)
			started++;
	worker(&p);
	for (int k = 0; k < started; k++)
		pthread_join(ts[k], NULL);
	free(ts);
	pthread_mutex_destroy(&p.lock);
	return p.failed;
}

int mfs_load_pool_threads(int want)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	if (cores > 0 && want > cores)
		want = (int)cores;
	return want < 1 ? 1 : want;
}

int mfs_load_pool_list(mfs_registry *reg, const char *repo, const mfs_repo_entry *e)
{
	mfs_model_config cfg;
	mfs_error err;
	bool ok = mfs_load_config(repo, e->name, &cfg, &err) == 0;
	int ensemble = ok && mfs_config_is_ensemble(&cfg);
	int64_t *vs = malloc((size_t)e->n_versions * sizeof(*vs));
	int nv = 0;
	if (vs) {
		memcpy(vs, e->versions, (size_t)e->n_versions * sizeof(*vs));
		nv = ok ? mfs_config_apply_version_policy(&cfg, vs, e->n_versions) : 1;
		if (!ok)
			vs[0] = e->versions[e->n_versions - 1];
	}
	for (int k = 0; k < nv; k++)
		mfs_registry_list_loading(reg, e->name, vs[k]);
	free(vs);
	mfs_config_release(&cfg);
	return ensemble;
}

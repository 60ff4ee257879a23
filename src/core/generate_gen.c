/* generate_gen.c - one generation (generate.h): the ids it produced,
 * its state, and the readers waiting for more.  The generator
 * (generate.c) pushes ids and ends it; readers take copies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generate_internal.h"

enum { GW_NEW = 0, GW_QUEUED, GW_CANCELLED, GW_WOKEN };

mfs_gen *gen_new(const int64_t *prompt, int64_t n, const mfs_gen_params *p)
{
	mfs_gen *gen = calloc(1, sizeof(*gen));
	if (!gen)
		return NULL;
	gen->prompt = malloc((size_t)n * sizeof(int64_t));
	gen->cap = p->max_tokens < 64 ? (size_t)p->max_tokens : 64;
	gen->ids = malloc(gen->cap * sizeof(int64_t));
	if (!gen->prompt || !gen->ids) {
		free(gen->prompt);
		free(gen->ids);
		free(gen);
		return NULL;
	}
	memcpy(gen->prompt, prompt, (size_t)n * sizeof(int64_t));
	gen->n_prompt = n;
	gen->p = *p;
	mfs_gen_rng_seed(&gen->rng, p->seed);
	pthread_mutex_init(&gen->lock, NULL);
	gen->refs = 1;
	gen->state = MFS_GEN_RUNNING;
	return gen;
}

void mfs_gen_get(mfs_gen *gen)
{
	__atomic_add_fetch(&gen->refs, 1, __ATOMIC_RELAXED);
}

void mfs_gen_put(mfs_gen *gen)
{
	if (!gen || __atomic_sub_fetch(&gen->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	pthread_mutex_destroy(&gen->lock);
	free(gen->prompt);
	free(gen->ids);
	free(gen);
}

void mfs_gen_cancel(mfs_gen *gen)
{
	__atomic_store_n(&gen->cancelled, true, __ATOMIC_RELEASE);
}

bool gen_cancelled(mfs_gen *gen)
{
	return __atomic_load_n(&gen->cancelled, __ATOMIC_ACQUIRE);
}

/* Take the waiters (lock held); wake them once it is released. */
static mfs_waiter *take_waiters(mfs_gen *gen)
{
	mfs_waiter *list = gen->waiters;
	gen->waiters = NULL;
	for (mfs_waiter *w = list; w; w = w->next)
		w->wstate = GW_WOKEN;
	return list;
}

/* Put list before *later (the caller wakes them, gen_wake, once it
 * holds no lock). */
static void defer(mfs_waiter *list, mfs_waiter **later)
{
	if (!list)
		return;
	mfs_waiter *t = list;
	while (t->next)
		t = t->next;
	t->next = *later;
	*later = list;
}

void gen_wake(mfs_waiter *list)
{
	while (list) {   /* wake() may free the waiter: read next first */
		mfs_waiter *next = list->next;
		list->next = list->prev = NULL;
		list->wake(list);
		list = next;
	}
}

bool gen_push(mfs_gen *gen, int64_t id, mfs_waiter **later)
{
	pthread_mutex_lock(&gen->lock);
	if (gen->state != MFS_GEN_RUNNING) {
		pthread_mutex_unlock(&gen->lock);
		return true;
	}
	if (gen->n_ids == gen->cap) {
		size_t cap = gen->cap * 2;
		int64_t *ids = realloc(gen->ids, cap * sizeof(int64_t));
		if (!ids) {
			gen->state = MFS_GEN_FAILED;
			mfs_fail(&gen->err, ENOMEM, "out of memory");
			defer(take_waiters(gen), later);
			pthread_mutex_unlock(&gen->lock);
			return true;
		}
		gen->ids = ids;
		gen->cap = cap;
	}
	gen->ids[gen->n_ids++] = id;
	bool stop = false;
	for (int i = 0; i < gen->p.n_stop; i++)
		stop |= gen->p.stop[i] == id;
	if (stop || (int64_t)gen->n_ids >= gen->p.max_tokens || gen_cancelled(gen)) {
		gen->state = MFS_GEN_DONE;
		gen->finish = stop ? "stop" : (int64_t)gen->n_ids >= gen->p.max_tokens ? "length" : "cancelled";
	}
	bool ended = gen->state != MFS_GEN_RUNNING;
	defer(take_waiters(gen), later);
	pthread_mutex_unlock(&gen->lock);
	return ended;
}

void gen_end(mfs_gen *gen, const char *finish, const mfs_error *err, mfs_waiter **later)
{
	pthread_mutex_lock(&gen->lock);
	if (gen->state != MFS_GEN_RUNNING) {
		pthread_mutex_unlock(&gen->lock);
		return;
	}
	gen->state = err ? MFS_GEN_FAILED : MFS_GEN_DONE;
	gen->finish = finish;
	if (err)
		gen->err = *err;
	defer(take_waiters(gen), later);
	pthread_mutex_unlock(&gen->lock);
}

size_t mfs_gen_read(mfs_gen *gen, size_t from, int64_t **ids, size_t *n,
		    mfs_gen_state *state, const char **finish, mfs_error *err)
{
	pthread_mutex_lock(&gen->lock);
	size_t total = gen->n_ids;
	*n = from < total ? total - from : 0;
	*ids = NULL;
	if (*n && (*ids = malloc(*n * sizeof(int64_t))))
		memcpy(*ids, gen->ids + from, *n * sizeof(int64_t));
	else if (*n) {
		*n = 0;
		total = from;   /* out of memory: nothing taken, the reader retries */
	}
	*state = gen->state;
	*finish = gen->finish;
	if (gen->state == MFS_GEN_FAILED && err)
		*err = gen->err;
	pthread_mutex_unlock(&gen->lock);
	return total;
}

int mfs_gen_wait(mfs_gen *gen, size_t have, mfs_waiter *w)
{
	int rc;
	pthread_mutex_lock(&gen->lock);
	if (w->wstate == GW_CANCELLED) {
		rc = -EINTR;
	} else if (gen->state == MFS_GEN_RUNNING && gen->n_ids <= have) {
		w->req = NULL;
		w->wstate = GW_QUEUED;
		w->prev = NULL;
		w->next = gen->waiters;
		if (gen->waiters)
			gen->waiters->prev = w;
		gen->waiters = w;
		rc = 1;
	} else {
		rc = 0;
	}
	pthread_mutex_unlock(&gen->lock);
	return rc;
}

bool mfs_gen_cancel_wait(mfs_gen *gen, mfs_waiter *w)
{
	bool removed = false;
	pthread_mutex_lock(&gen->lock);
	if (w->wstate == GW_QUEUED) {
		if (w->prev)
			w->prev->next = w->next;
		else
			gen->waiters = w->next;
		if (w->next)
			w->next->prev = w->prev;
		w->next = w->prev = NULL;
		w->wstate = GW_CANCELLED;
		removed = true;
	} else if (w->wstate == GW_NEW) {
		w->wstate = GW_CANCELLED;
	}
	pthread_mutex_unlock(&gen->lock);
	return removed;
}

void mfs_gen_status(mfs_gen *gen, char *buf, size_t size)
{
	pthread_mutex_lock(&gen->lock);
	if (gen->state == MFS_GEN_RUNNING)
		snprintf(buf, size, "GENERATING %zu/%lld\n", gen->n_ids, (long long)gen->p.max_tokens);
	else if (gen->state == MFS_GEN_DONE)
		snprintf(buf, size, "DONE %zu %s\n", gen->n_ids, gen->finish);
	else
		snprintf(buf, size, "FAILED %s\n", gen->err.msg);
	pthread_mutex_unlock(&gen->lock);
}

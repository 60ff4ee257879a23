/* bigbuf.c - see bigbuf.h. */
#include "bigbuf.h"

#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "hugemem.h"
#include "membudget.h"

typedef struct kept {
	void *p;
	size_t size;   /* malloc_usable_size */
	uint64_t at;   /* when it was given back (CLOCK_MONOTONIC, ns) */
} kept;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static kept pool[MFS_BIGBUF_KEEP + MFS_BIGBUF_KEEP_MEDIUM];
static int n_pool;

void *mfs_bigbuf_alloc(size_t n)
{
	if (n >= MFS_BIGBUF_MIN) {
		pthread_mutex_lock(&lock);
		for (int i = 0; i < n_pool; i++) {
			if (pool[i].size >= n && pool[i].size / 2 <= n) {
				kept k = pool[i];
				pool[i] = pool[--n_pool];
				pthread_mutex_unlock(&lock);
				mfs_membudget_give(k.size);
				return k.p;
			}
		}
		pthread_mutex_unlock(&lock);
	}
	void *p = malloc(n ? n : 1);
	mfs_hugemem_advise(p, n);
	return p;
}

void mfs_bigbuf_free(void *p)
{
	if (!p)
		return;
	size_t size = malloc_usable_size(p);
	if (size >= MFS_BIGBUF_MIN) {
		mfs_error err;
		bool large = size >= MFS_BIGBUF_LARGE;
		int same = 0;
		pthread_mutex_lock(&lock);
		for (int i = 0; i < n_pool; i++)
			same += (pool[i].size >= MFS_BIGBUF_LARGE) == large;
		if (same < (large ? MFS_BIGBUF_KEEP : MFS_BIGBUF_KEEP_MEDIUM) &&
		    mfs_membudget_take(size, &err) == 0) {
			pool[n_pool++] = (kept){ p, size, now_ns() };
			p = NULL;
		}
		pthread_mutex_unlock(&lock);
	}
	free(p);
}

int mfs_bigbuf_trim(uint64_t idle_ns)
{
	uint64_t now = now_ns();
	int freed = 0;

	pthread_mutex_lock(&lock);
	for (int i = 0; i < n_pool;) {
		if (now - pool[i].at < idle_ns) {
			i++;
			continue;
		}
		kept k = pool[i];
		pool[i] = pool[--n_pool];
		free(k.p);
		mfs_membudget_give(k.size);
		freed++;
	}
	pthread_mutex_unlock(&lock);
	return freed;
}

int mfs_bigbuf_drain(void)
{
	pthread_mutex_lock(&lock);
	int n = n_pool;
	while (n_pool > 0) {
		kept k = pool[--n_pool];
		free(k.p);
		mfs_membudget_give(k.size);
	}
	pthread_mutex_unlock(&lock);
	return n;
}

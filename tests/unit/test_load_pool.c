/* test_load_pool.c - the first load's pool (load_pool.h): every name is
 * loaded once, loads overlap on several threads, failures are summed, a
 * stop skips the names not yet taken. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "load_pool.h"

typedef struct counts {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int seen[8];
	int running, most_running, calls;
	int rendezvous;      /* jobs wait until this many run at once */
	int stop_after;      /* stop() says true after this many calls; -1: never */
} counts;

static int job(void *ctx, const char *name)
{
	counts *c = ctx;
	pthread_mutex_lock(&c->lock);
	c->seen[name[0] - 'a']++;
	c->calls++;
	c->running++;
	if (c->running > c->most_running)
		c->most_running = c->running;
	pthread_cond_broadcast(&c->cond);
	/* Two loads at once prove the overlap: each waits for the other. */
	while (c->rendezvous > 0 && c->most_running < c->rendezvous)
		pthread_cond_wait(&c->cond, &c->lock);
	c->running--;
	pthread_mutex_unlock(&c->lock);
	return name[0] == 'c' || name[0] == 'e';   /* c and e "fail" */
}

static bool stop_now(void *ctx)
{
	counts *c = ctx;
	return c->stop_after >= 0 && c->calls >= c->stop_after;
}

static char *names[] = { "a", "b", "c", "d", "e", "f" };

static void init(counts *c, int rendezvous, int stop_after)
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	c->rendezvous = rendezvous;
	c->stop_after = stop_after;
}

static void test_each_once_in_parallel(void **state)
{
	(void)state;
	counts c;
	init(&c, 2, -1);
	assert_int_equal(mfs_load_pool_run(names, 6, 2, job, stop_now, &c), 2);
	for (int i = 0; i < 6; i++)
		assert_int_equal(c.seen[i], 1);
	assert_int_equal(c.most_running, 2);
}

static void test_one_thread(void **state)
{
	(void)state;
	counts c;
	init(&c, 0, -1);
	assert_int_equal(mfs_load_pool_run(names, 6, 0, job, NULL, &c), 2);
	assert_int_equal(c.calls, 6);
	assert_int_equal(c.most_running, 1);
	/* more threads than names: each name still once */
	init(&c, 0, -1);
	assert_int_equal(mfs_load_pool_run(names, 2, 16, job, NULL, &c), 0);
	assert_int_equal(c.calls, 2);
	assert_int_equal(mfs_load_pool_run(names, 0, 4, job, NULL, &c), 0);
}

static void test_stop_skips_the_rest(void **state)
{
	(void)state;
	counts c;
	init(&c, 0, 3);
	mfs_load_pool_run(names, 6, 1, job, stop_now, &c);
	assert_int_equal(c.calls, 3);
	assert_int_equal(c.seen[3], 0);
}

static void test_threads_bounded_by_cores(void **state)
{
	(void)state;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	assert_int_equal(mfs_load_pool_threads(0), 1);
	assert_int_equal(mfs_load_pool_threads(1), 1);
	assert_int_equal(mfs_load_pool_threads(100000), (int)cores);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_once_in_parallel),
		cmocka_unit_test(test_one_thread),
		cmocka_unit_test(test_stop_skips_the_rest),
		cmocka_unit_test(test_threads_bounded_by_cores),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

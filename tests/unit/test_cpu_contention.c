/* Unit tests for exec/runtime/cpu_contention.c: when runs take one thread because
 * the cores are busy, how long for, and the sample around a real run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "cpu_contention.h"

#define MS 1000000LL

/* A run of wall 10 ms that waited `wait_ms` of it, ending at `at_ms`. */
static void run(mfs_contention *c, int64_t wait_ms, int threads, int64_t at_ms)
{
	mfs_contention_update(c, (uint64_t)(wait_ms * MS), 10 * MS, threads, at_ms * MS);
}

static void test_quiet_never_marks(void **st)
{
	(void)st;
	mfs_contention c = { 0 };
	for (int i = 0; i < 100; i++)
		run(&c, 0, 2, i * 10);
	assert_false(mfs_contention_active(&c, 1000 * MS));
	/* waits under the minimum, or under a tenth of the run, are noise */
	for (int i = 0; i < 10; i++) {
		mfs_contention_update(&c, MFS_CONTENTION_MIN_WAIT_NS - 1,
				      (MFS_CONTENTION_MIN_WAIT_NS - 1) * 2, 2, (2000 + i) * MS);
		mfs_contention_update(&c, 900000, 10 * MS, 2, (2000 + i) * MS);
	}
	assert_false(mfs_contention_active(&c, 2010 * MS));
}

static void test_two_waits_mark(void **st)
{
	(void)st;
	mfs_contention c = { 0 };
	run(&c, 5, 2, 0);
	assert_false(mfs_contention_active(&c, 1 * MS));   /* one is not enough */
	run(&c, 0, 2, 10);
	run(&c, 5, 2, 20);
	assert_false(mfs_contention_active(&c, 21 * MS));  /* not in a row */
	run(&c, 5, 2, 30);
	assert_true(mfs_contention_active(&c, 31 * MS));
	assert_true(mfs_contention_active(&c, 30 * MS + MFS_CONTENTION_HOLD_NS - 1));
	assert_false(mfs_contention_active(&c, 30 * MS + MFS_CONTENTION_HOLD_NS));
}

/* One-thread runs that still wait keep the mark; ones that do not let it
 * expire, and do not clear the hold. */
static void test_single_thread_runs_extend(void **st)
{
	(void)st;
	mfs_contention c = { 0 };
	run(&c, 5, 2, 0);
	run(&c, 5, 2, 10);
	int64_t t = 10;
	for (int i = 0; i < 20; i++) {
		t += 10;
		run(&c, 5, 1, t);
	}
	assert_true(mfs_contention_active(&c, t * MS + MFS_CONTENTION_HOLD_NS - 1));
	run(&c, 0, 1, t + 10);
	assert_true(mfs_contention_active(&c, (t + 11) * MS));
	assert_false(mfs_contention_active(&c, t * MS + MFS_CONTENTION_HOLD_NS));
	assert_int_equal(c.hold_ns, MFS_CONTENTION_HOLD_NS);
}

/* After the mark expires, one team run that waits marks again for twice
 * as long, up to the longest hold; one that does not wait clears it. */
static void test_hold_doubles_then_resets(void **st)
{
	(void)st;
	mfs_contention c = { 0 };
	int64_t t = 0, want = MFS_CONTENTION_HOLD_NS;
	run(&c, 5, 2, t);
	run(&c, 5, 2, t);
	for (int i = 0; i < 12; i++) {
		assert_int_equal(c.hold_ns, want);
		t += c.hold_ns / MS;   /* the mark has just expired */
		assert_false(mfs_contention_active(&c, t * MS));
		run(&c, 5, 2, t);
		assert_true(mfs_contention_active(&c, t * MS));
		want = want * 2 > MFS_CONTENTION_MAX_HOLD_NS ? MFS_CONTENTION_MAX_HOLD_NS : want * 2;
	}
	assert_int_equal(c.hold_ns, MFS_CONTENTION_MAX_HOLD_NS);
	t += c.hold_ns / MS;
	run(&c, 0, 2, t);
	assert_false(c.marked);
	assert_int_equal(c.hold_ns, 0);
	run(&c, 5, 2, t + 10);   /* a fresh start needs two again */
	assert_false(mfs_contention_active(&c, (t + 10) * MS));
}

/* The process-wide sample reads this thread's run-queue delay (whether
 * the machine is busy while the test runs is not ours to assert). */
static void test_sample_around_a_run(void **st)
{
	(void)st;
	mfs_cpu_sample s;
	volatile double x = 0;

	mfs_cpu_sample_begin(&s);
	assert_true(s.ok);   /* Linux with /proc */
	for (int i = 0; i < 100000; i++)
		x += i;
	mfs_cpu_sample_end(&s, 2);
	/* a sample that could not read is ignored */
	bool before = mfs_cpu_contended();
	s.ok = false;
	mfs_cpu_sample_end(&s, 2);
	assert_int_equal(mfs_cpu_contended(), before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quiet_never_marks),
		cmocka_unit_test(test_two_waits_mark),
		cmocka_unit_test(test_single_thread_runs_extend),
		cmocka_unit_test(test_hold_doubles_then_resets),
		cmocka_unit_test(test_sample_around_a_run),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

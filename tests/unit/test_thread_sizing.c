/* Unit tests for exec/runtime/thread_sizing.c: how many threads a model's runs
 * take, from synthetic run times. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "thread_sizing.h"

/* Run `count` runs of `rows` rows through the plan, each taking
 * ns_at(threads); returns the plan of the run after them. */
static int runs(mfs_sizing *s, int64_t rows, int n, int count,
		uint64_t (*ns_at)(int threads))
{
	mfs_sizing_slot *slot;
	for (int i = 0; i < count; i++) {
		int t = mfs_sizing_plan(s, rows, n, &slot);
		mfs_sizing_record(s, slot, t, n, ns_at(t));
	}
	return mfs_sizing_plan(s, rows, n, &slot);
}

static uint64_t tiny(int t) { (void)t; return 50000; }            /* 50 us */
static uint64_t scales(int t) { return 16000000u / (uint64_t)t; } /* more is faster */
static uint64_t half_best(int t) { return t == 8 ? 2300000 : 3570000; }
static uint64_t half_barely(int t) { return t == 8 ? 3500000 : 3570000; }

static void test_small_runs_take_one_thread(void **state)
{
	mfs_sizing s = { 0 };
	(void)state;
	assert_int_equal(runs(&s, 1, 2, SIZING_FULL_RUNS - 1, tiny), 2);
	assert_false(mfs_sizing_settled(&s, 1, 2));
	/* the full runs are in: one thread on trial */
	assert_int_equal(runs(&s, 1, 2, 1, tiny), 1);
	assert_false(mfs_sizing_settled(&s, 1, 2));
	/* as fast on one: one is kept */
	assert_int_equal(runs(&s, 1, 2, SIZING_TRIAL_RUNS, tiny), 1);
	assert_true(mfs_sizing_settled(&s, 1, 2));
	/* also with 16 threads: the trial of a small run is one, not half */
	mfs_sizing s16 = { 0 };
	assert_int_equal(runs(&s16, 1, 16, SIZING_FULL_RUNS, tiny), 1);
	assert_int_equal(runs(&s16, 1, 16, SIZING_TRIAL_RUNS, tiny), 1);
}

/* A small run that all threads make clearly faster keeps them (the MLP
 * at batch 8 back to back: 58 us on 2 threads, 100 on one); a few
 * percent is not enough to give up the one thread. */
static uint64_t small_scales(int t) { return t == 1 ? 100000 : 58000; }
static uint64_t small_barely(int t) { return t == 1 ? 100000 : 97000; }
/* 30% faster on all threads, but 3 us: a tiny run's noise */
static uint64_t tiny_noise(int t) { return t == 1 ? 10000 : 7000; }

static void test_small_runs_keep_all_where_faster(void **state)
{
	mfs_sizing s = { 0 }, b = { 0 }, n = { 0 };
	(void)state;
	assert_int_equal(runs(&s, 8, 2, SIZING_FULL_RUNS, small_scales), 1);
	assert_int_equal(runs(&s, 8, 2, SIZING_TRIAL_RUNS, small_scales), 2);
	assert_true(mfs_sizing_settled(&s, 8, 2));
	assert_int_equal(runs(&b, 8, 2, SIZING_FULL_RUNS + SIZING_TRIAL_RUNS, small_barely), 1);
	assert_int_equal(runs(&n, 1, 2, SIZING_FULL_RUNS + SIZING_TRIAL_RUNS, tiny_noise), 1);
}

static void test_half_kept_where_faster(void **state)
{
	mfs_sizing s = { 0 };
	(void)state;
	/* the full count's runs, then the half trial */
	assert_int_equal(runs(&s, 1, 16, SIZING_FULL_RUNS, half_best), 8);
	assert_false(mfs_sizing_settled(&s, 1, 16));
	assert_int_equal(runs(&s, 1, 16, SIZING_TRIAL_RUNS, half_best), 8);
	assert_true(mfs_sizing_settled(&s, 1, 16));
	assert_int_equal(mfs_sizing_threads(&s, 1), 8);
	assert_int_equal(mfs_sizing_threads(&s, 2), 0);
	/* and stays */
	assert_int_equal(runs(&s, 1, 16, 20, scales), 8);
}

static void test_full_kept_otherwise(void **state)
{
	mfs_sizing s = { 0 }, b = { 0 };
	(void)state;
	assert_int_equal(runs(&s, 1, 16, SIZING_FULL_RUNS + SIZING_TRIAL_RUNS, scales), 16);
	assert_true(mfs_sizing_settled(&s, 1, 16));
	/* 2% faster is noise, not a reason */
	assert_int_equal(runs(&b, 1, 16, SIZING_FULL_RUNS + SIZING_TRIAL_RUNS, half_barely), 16);
}

static void test_few_threads_no_half_trial(void **state)
{
	mfs_sizing s = { 0 };
	(void)state;
	/* 2 or 3 threads: nothing to halve, decided after the full runs */
	assert_int_equal(runs(&s, 1, 2, SIZING_FULL_RUNS, half_best), 2);
	assert_true(mfs_sizing_settled(&s, 1, 2));
	mfs_sizing s3 = { 0 };
	assert_int_equal(runs(&s3, 1, 3, SIZING_FULL_RUNS, half_best), 3);
	/* the trials turned off (MFS_THREAD_SIZING=0): all, or one when
	 * small, decided after the full runs */
	mfs_sizing off = { .no_half = true }, off1 = { .no_half = true };
	assert_int_equal(runs(&off, 1, 16, SIZING_FULL_RUNS, half_best), 16);
	assert_true(mfs_sizing_settled(&off, 1, 16));
	assert_int_equal(runs(&off1, 1, 16, SIZING_FULL_RUNS, tiny), 1);
}

/* Runs that got fewer threads than planned (shared, under load) are not
 * counted: the trial waits for runs that measure what it asks. */
static void test_reduced_runs_not_counted(void **state)
{
	mfs_sizing s = { 0 };
	mfs_sizing_slot *slot;
	(void)state;
	for (int i = 0; i < 20; i++) {
		int t = mfs_sizing_plan(&s, 1, 16, &slot);
		assert_int_equal(t, 16);
		mfs_sizing_record(&s, slot, 1, 16, 1000);   /* ran on one thread */
	}
	assert_false(mfs_sizing_settled(&s, 1, 16));
}

static void test_batch_sizes_apart(void **state)
{
	mfs_sizing s = { 0 };
	mfs_sizing_slot *slot;
	(void)state;
	assert_int_equal(runs(&s, 1, 16, SIZING_FULL_RUNS + SIZING_TRIAL_RUNS, half_best), 8);
	/* batch 32 has its own trial and keeps all 16 */
	assert_int_equal(runs(&s, 32, 16, SIZING_FULL_RUNS + SIZING_TRIAL_RUNS, scales), 16);
	assert_int_equal(mfs_sizing_plan(&s, 1, 16, &slot), 8);
	/* a full table: other sizes take every thread, with nothing to settle */
	runs(&s, 2, 16, 1, scales);
	runs(&s, 3, 16, 1, scales);
	assert_int_equal(mfs_sizing_plan(&s, 4, 16, &slot), 16);
	assert_null(slot);
	assert_true(mfs_sizing_settled(&s, 4, 16));
	assert_false(mfs_sizing_settled(&s, 3, 16));
	/* library defaults: nothing to decide */
	assert_true(mfs_sizing_settled(&s, 3, 0));
}

/* A decision holds SIZING_REDECIDE_RUNS runs, then the slot measures
 * again: half the threads chosen in a busy spell go back to all of them
 * once all are faster. */
static void test_decision_measured_again(void **state)
{
	mfs_sizing s = { 0 };
	mfs_sizing_slot *slot;
	(void)state;
	assert_int_equal(runs(&s, 1, 16, SIZING_FULL_RUNS + SIZING_TRIAL_RUNS, half_best), 8);
	assert_int_equal(runs(&s, 1, 16, SIZING_REDECIDE_RUNS - 2, scales), 8);   /* plans 2..REDECIDE */
	assert_true(mfs_sizing_settled(&s, 1, 16));
	/* the next plan starts the measuring again, on all threads */
	assert_int_equal(mfs_sizing_plan(&s, 1, 16, &slot), 16);
	assert_false(mfs_sizing_settled(&s, 1, 16));
	mfs_sizing_record(&s, slot, 16, 16, scales(16));
	assert_int_equal(runs(&s, 1, 16, SIZING_FULL_RUNS - 1 + SIZING_TRIAL_RUNS, scales), 16);
	assert_true(mfs_sizing_settled(&s, 1, 16));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small_runs_take_one_thread),
		cmocka_unit_test(test_small_runs_keep_all_where_faster),
		cmocka_unit_test(test_half_kept_where_faster),
		cmocka_unit_test(test_full_kept_otherwise),
		cmocka_unit_test(test_few_threads_no_half_trial),
		cmocka_unit_test(test_reduced_runs_not_counted),
		cmocka_unit_test(test_batch_sizes_apart),
		cmocka_unit_test(test_decision_measured_again),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

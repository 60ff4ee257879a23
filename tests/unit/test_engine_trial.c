/* test_engine_trial.c - one engine timed on a model (engine_trial.h):
 * without limits the median of the timed runs; a run limit or a setup
 * limit it cannot meet stops the trial with the reason, not an error;
 * made-up inputs follow the graph's inputs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine_trial.h"

static mfs_graph *model;
static mfs_tensor in[4];

static int setup(void **state)
{
	mfs_error err;
	(void)state;
	if (mfs_graph_load("examples/cnn/1/model.onnx", "cnn", &model, &err) ||
	    mfs_trial_inputs(model, in, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (int i = 0; i < mfs_graph_n_inputs(model); i++)
		mfs_tensor_release(&in[i]);
	mfs_graph_free(model);
	return 0;
}

static void test_inputs(void **state)
{
	(void)state;
	assert_int_equal(mfs_graph_n_inputs(model), 1);
	assert_int_equal(in[0].dtype, MFS_DT_FLOAT);
	assert_int_equal(in[0].shape.dims[0], 1);   /* the batch dim made 1 */
	assert_true(((float *)in[0].data)[0] == 0.5f);
}

static void test_no_limit(void **state)
{
	mfs_trial t;
	mfs_error err;
	(void)state;
	assert_int_equal(mfs_trial_run(model, mfs_backend_cpu(), in, NULL, &t, &err), 0);
	assert_false(t.stopped);
	assert_true(t.median_ms > 0);
	assert_true(t.total_ms >= t.median_ms * MFS_TRIAL_RUNS);
	mfs_trial_limit loose = { .setup_ms = 600000, .run_ms = 600000 };
	assert_int_equal(mfs_trial_run(model, mfs_backend_cpu(), in, &loose, &t, &err), 0);
	assert_false(t.stopped);
	assert_true(t.median_ms > 0);
}

static void test_run_limit_stops(void **state)
{
	mfs_trial t;
	mfs_error err;
	(void)state;
	mfs_trial_limit lim = { .setup_ms = 600000, .run_ms = 0.0001 };
	assert_int_equal(mfs_trial_run(model, mfs_backend_cpu(), in, &lim, &t, &err), 0);
	assert_true(t.stopped);
	assert_true(t.median_ms == -1);
	assert_non_null(strstr(t.why, "timed run 1 passed the 0.000 ms limit"));
	/* the same context made again runs normally: no cancel flag left set */
	assert_int_equal(mfs_trial_run(model, mfs_backend_cpu(), in, NULL, &t, &err), 0);
	assert_false(t.stopped);
}

static void test_setup_limit_stops(void **state)
{
	mfs_trial t;
	mfs_error err;
	(void)state;
	mfs_trial_limit lim = { .setup_ms = 0.0001, .run_ms = 600000 };
	assert_int_equal(mfs_trial_run(model, mfs_backend_cpu(), in, &lim, &t, &err), 0);
	assert_true(t.stopped);
	assert_true(strstr(t.why, "making its context took") || strstr(t.why, "its setup"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inputs),
		cmocka_unit_test(test_no_limit),
		cmocka_unit_test(test_run_limit_stops),
		cmocka_unit_test(test_setup_limit_stops),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

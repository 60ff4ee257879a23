/* Unit tests for the random operators (exec/cpu/ops/random.c), run through
 * the engine on hand-built graphs.  Their values cannot match the ONNX
 * reference (numpy's generator), so they are checked on statistics:
 * mean and variance within bounds of many draws, seeded runs identical
 * (across runs and loads), unseeded runs different, dtype and shape. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "graph.h"

#include "graph_builder.h"

#define N 20000

static void attr_float(onnx_node *n, const char *name, float v)
{
	gb_attr(n, name, ONNX_ATTR_FLOAT)->f = v;
}

/* Compile o and run it once on inputs; out receives output 0. */
static void run_model(onnx_model *o, const mfs_tensor *in, mfs_tensor *out)
{
	mfs_graph *g = NULL;
	mfs_exec *e = NULL;
	mfs_error err;

	if (mfs_graph_compile(o, "m", &g, &err) || mfs_exec_new(g, NULL, &e, &err) ||
	    mfs_exec_run(e, in, out, &err))
		fail_msg("failed: %s", err.msg);
	/* never folded at load: it must draw at every run */
	assert_int_equal(g->n_folded, 0);
	mfs_exec_free(e);
	mfs_graph_free(g);
}

static void stats(const mfs_tensor *t, double *mean, double *var,
		  double *lo, double *hi)
{
	int64_t n = mfs_shape_numel(&t->shape);
	double s = 0, s2 = 0;
	*lo = INFINITY;
	*hi = -INFINITY;
	for (int64_t i = 0; i < n; i++) {
		double v = mfs_tensor_get_f64(t, i);
		s += v;
		s2 += v * v;
		*lo = fmin(*lo, v);
		*hi = fmax(*hi, v);
	}
	*mean = s / (double)n;
	*var = s2 / (double)n - *mean * *mean;
}

static onnx_model *uniform_model(bool seeded)
{
	onnx_model *o = gb_new(13);
	int64_t shape[2] = { N / 100, 100 };
	onnx_node *n = gb_node(o, "", "RandomUniform", "ru", "", "y");
	attr_ints(n, "shape", 2, shape);
	attr_float(n, "low", 2);
	attr_float(n, "high", 4);
	if (seeded)
		attr_float(n, "seed", 7);
	gb_output(o, "y");
	return o;
}

static void test_uniform_seeded(void **state)
{
	mfs_tensor a, b;
	double mean, var, lo, hi;
	(void)state;

	run_model(uniform_model(true), NULL, &a);
	assert_int_equal(a.dtype, MFS_DT_FLOAT);
	assert_int_equal(a.shape.rank, 2);
	assert_int_equal(a.shape.dims[0], N / 100);
	stats(&a, &mean, &var, &lo, &hi);
	assert_true(fabs(mean - 3.0) < 0.03);           /* (low + high) / 2 */
	assert_true(fabs(var - 4.0 / 12.0) < 0.02);     /* (high - low)^2 / 12 */
	assert_true(lo >= 2.0 && hi < 4.0);
	/* another load, same seed: the same draws */
	run_model(uniform_model(true), NULL, &b);
	assert_memory_equal(a.data, b.data, a.nbytes);
	mfs_tensor_release(&b);
	/* no seed: different draws */
	run_model(uniform_model(false), NULL, &b);
	assert_memory_not_equal(a.data, b.data, a.nbytes);
	mfs_tensor_release(&a);
	mfs_tensor_release(&b);
}

/* A seeded node gives the same output at every run of one context; an
 * unseeded one differs between runs. */
static void test_runs_of_one_context(void **state)
{
	for (int seeded = 0; seeded < 2; seeded++) {
		mfs_graph *g = NULL;
		mfs_exec *e = NULL;
		mfs_tensor a, b;
		(void)state;
		assert_int_equal(mfs_graph_compile(uniform_model(seeded), "m", &g, NULL), 0);
		assert_int_equal(mfs_exec_new(g, NULL, &e, NULL), 0);
		assert_int_equal(mfs_exec_run(e, NULL, &a, NULL), 0);
		assert_int_equal(mfs_exec_run(e, NULL, &b, NULL), 0);
		if (seeded)
			assert_memory_equal(a.data, b.data, a.nbytes);
		else
			assert_memory_not_equal(a.data, b.data, a.nbytes);
		mfs_tensor_release(&a);
		mfs_tensor_release(&b);
		mfs_exec_free(e);
		mfs_graph_free(g);
	}
}

static void test_normal_like_double(void **state)
{
	onnx_model *o = gb_new(13);
	int64_t dims[1] = { N };
	float *x = calloc(N, sizeof(float));
	mfs_tensor in = { .dtype = MFS_DT_FLOAT, .shape = { .rank = 1, .dims = { N } },
			  .data = x, .nbytes = N * sizeof(float) }, y;
	double mean, var, lo, hi;
	onnx_node *n;
	(void)state;

	gb_input(o, "x", MFS_DT_FLOAT, 1, dims);
	n = gb_node(o, "", "RandomNormalLike", "rn", "x", "y");
	attr_int(n, "dtype", MFS_DT_DOUBLE);
	attr_float(n, "mean", 1);
	attr_float(n, "scale", 2);
	gb_output(o, "y");
	run_model(o, &in, &y);
	assert_int_equal(y.dtype, MFS_DT_DOUBLE);
	assert_int_equal(y.shape.rank, 1);
	assert_int_equal(y.shape.dims[0], N);
	stats(&y, &mean, &var, &lo, &hi);
	assert_true(fabs(mean - 1.0) < 0.1);
	assert_true(fabs(var - 4.0) < 0.25);
	assert_true(lo < -3.0 && hi > 5.0);   /* tails exist (2 sigma) */
	mfs_tensor_release(&y);
	free(x);
}

static void test_uniform_like_and_normal(void **state)
{
	onnx_model *o = gb_new(13);
	int64_t dims[2] = { 100, N / 100 };
	double *x = calloc(N, sizeof(double));
	mfs_tensor in = { .dtype = MFS_DT_DOUBLE, .shape = { .rank = 2, .dims = { 100, N / 100 } },
			  .data = x, .nbytes = N * sizeof(double) }, y;
	double mean, var, lo, hi;
	onnx_node *n;
	int64_t shape[1] = { N };
	(void)state;

	gb_input(o, "x", MFS_DT_DOUBLE, 2, dims);
	gb_node(o, "", "RandomUniformLike", "ru", "x", "y");
	gb_output(o, "y");
	run_model(o, &in, &y);
	assert_int_equal(y.dtype, MFS_DT_DOUBLE);      /* the input's type */
	assert_int_equal(y.shape.dims[1], N / 100);
	stats(&y, &mean, &var, &lo, &hi);
	assert_true(fabs(mean - 0.5) < 0.02 && lo >= 0 && hi < 1);
	mfs_tensor_release(&y);
	free(x);

	o = gb_new(13);
	n = gb_node(o, "", "RandomNormal", "rn", "", "y");
	attr_ints(n, "shape", 1, shape);
	attr_int(n, "dtype", MFS_DT_FLOAT16);
	gb_output(o, "y");
	run_model(o, NULL, &y);
	assert_int_equal(y.dtype, MFS_DT_FLOAT16);
	stats(&y, &mean, &var, &lo, &hi);
	assert_true(fabs(mean) < 0.05 && fabs(var - 1.0) < 0.08);
	mfs_tensor_release(&y);
}

static void test_bernoulli(void **state)
{
	onnx_model *o = gb_new(15);
	int64_t dims[1] = { N };
	float *p = malloc(N * sizeof(float));
	mfs_tensor in = { .dtype = MFS_DT_FLOAT, .shape = { .rank = 1, .dims = { N } },
			  .data = p, .nbytes = N * sizeof(float) }, y;
	double mean, var, lo, hi;
	onnx_node *n;
	(void)state;

	for (int i = 0; i < N; i++)
		p[i] = i % 2 ? 0.1f : 0.5f;     /* mean probability 0.3 */
	gb_input(o, "p", MFS_DT_FLOAT, 1, dims);
	n = gb_node(o, "", "Bernoulli", "b", "p", "y");
	attr_int(n, "dtype", MFS_DT_INT64);
	attr_float(n, "seed", 3);
	gb_output(o, "y");
	run_model(o, &in, &y);
	assert_int_equal(y.dtype, MFS_DT_INT64);
	stats(&y, &mean, &var, &lo, &hi);
	assert_true(fabs(mean - 0.3) < 0.02);
	assert_true(lo == 0 && hi == 1);
	mfs_tensor_release(&y);

	/* probabilities 0 and 1 are exact */
	for (int i = 0; i < N; i++)
		p[i] = (float)(i % 2);
	o = gb_new(15);
	gb_input(o, "p", MFS_DT_FLOAT, 1, dims);
	gb_node(o, "", "Bernoulli", "b", "p", "y");
	gb_output(o, "y");
	run_model(o, &in, &y);
	assert_int_equal(y.dtype, MFS_DT_FLOAT);
	for (int i = 0; i < N; i++)
		assert_float_equal(((float *)y.data)[i], (float)(i % 2), 0);
	mfs_tensor_release(&y);
	free(p);
}

static void test_multinomial(void **state)
{
	onnx_model *o = gb_new(13);
	int64_t dims[2] = { 2, 3 };
	float logits[6] = { logf(0.2f), logf(0.3f), logf(0.5f),
			    0, 0, -INFINITY };    /* row 1: classes 0, 1 only */
	mfs_tensor in = { .dtype = MFS_DT_FLOAT, .shape = { .rank = 2, .dims = { 2, 3 } },
			  .data = logits, .nbytes = sizeof(logits) }, y;
	int count[2][3] = { { 0 } };
	onnx_node *n;
	(void)state;

	gb_input(o, "x", MFS_DT_FLOAT, 2, dims);
	n = gb_node(o, "", "Multinomial", "m", "x", "y");
	attr_int(n, "sample_size", N);
	gb_output(o, "y");
	run_model(o, &in, &y);
	assert_int_equal(y.dtype, MFS_DT_INT32);       /* the default dtype */
	assert_int_equal(y.shape.rank, 2);
	assert_int_equal(y.shape.dims[0], 2);
	assert_int_equal(y.shape.dims[1], N);
	for (int b = 0; b < 2; b++)
		for (int s = 0; s < N; s++) {
			int32_t c = ((int32_t *)y.data)[b * N + s];
			assert_in_range(c, 0, 2);
			count[b][c]++;
		}
	assert_true(fabs(count[0][0] / (double)N - 0.2) < 0.02);
	assert_true(fabs(count[0][1] / (double)N - 0.3) < 0.02);
	assert_true(fabs(count[0][2] / (double)N - 0.5) < 0.02);
	assert_int_equal(count[1][2], 0);
	assert_true(fabs(count[1][0] / (double)N - 0.5) < 0.02);
	mfs_tensor_release(&y);
}

/* What cannot be computed is refused at load, naming the node. */
static void test_refusals(void **state)
{
	onnx_model *o = gb_new(13);
	onnx_node *n;
	mfs_graph *g = NULL;
	mfs_error err;
	(void)state;

	n = gb_node(o, "", "RandomUniform", "ru", "", "y");
	attr_int(n, "dtype", MFS_DT_INT32);
	attr_ints(n, "shape", 1, (int64_t[]){ 3 });
	gb_output(o, "y");
	assert_int_equal(mfs_graph_compile(o, "m", &g, &err), -ENOTSUP);
	assert_non_null(strstr(err.msg, "RandomUniform 'ru'"));

	o = gb_new(13);
	gb_node(o, "", "RandomNormal", "rn", "", "y");   /* no shape */
	gb_output(o, "y");
	assert_int_equal(mfs_graph_compile(o, "m", &g, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "shape attribute is required"));
}

/* Dropout in training mode draws numpy's stream (exec/cpu/ops/mt19937.h):
 * with seed 0 and ratio 0.6 numpy keeps elements 1 and 2 of 4
 * (np.random.seed(0); np.random.uniform(0, 1, 4) >= 0.6), scaled by 2.5;
 * with training_mode false the output is the input. */
static void test_dropout_training(void **state)
{
	onnx_model *o = gb_new(13);
	int64_t dims[1] = { 4 }, none[1] = { 0 };
	float x[4] = { 1, 2, 3, 4 }, ratio = 0.6f;
	bool on = true;
	mfs_tensor in[2] = {
		{ .dtype = MFS_DT_FLOAT, .shape = { .rank = 1, .dims = { 4 } },
		  .data = x, .nbytes = sizeof(x) },
		{ .dtype = MFS_DT_BOOL, .shape = { .rank = 0 }, .data = &on, .nbytes = 1 },
	};
	mfs_tensor y[2];
	mfs_graph *g = NULL;
	mfs_exec *e = NULL;
	mfs_error err;
	onnx_node *n;
	(void)state;

	gb_input(o, "x", MFS_DT_FLOAT, 1, dims);
	gb_input(o, "t", MFS_DT_BOOL, 0, none);
	gb_init_f32(o, "r", 0, none, &ratio);
	n = gb_node(o, "", "Dropout", "d", "x,r,t", "y,mask");
	attr_int(n, "seed", 0);
	gb_output(o, "y");
	gb_output(o, "mask");
	if (mfs_graph_compile(o, "m", &g, &err) || mfs_exec_new(g, NULL, &e, &err))
		fail_msg("failed: %s", err.msg);
	for (int run = 0; run < 2; run++) {   /* seeded: the same mask each run */
		if (mfs_exec_run(e, in, y, &err))
			fail_msg("run: %s", err.msg);
		const float *v = y[0].data;
		const bool *m = y[1].data;
		/* scale: float(1 / (1 - 0.6f)), a hair above 2.5 */
		assert_true(v[0] == 0.0f && v[3] == 0.0f);
		assert_true(fabsf(v[1] - 5.0f) < 1e-5f && fabsf(v[2] - 7.5f) < 1e-5f);
		assert_true(!m[0] && m[1] && m[2] && !m[3]);
		assert_true(y[0].data != x);
		mfs_tensor_release(&y[0]);
		mfs_tensor_release(&y[1]);
	}
	on = false;
	if (mfs_exec_run(e, in, y, &err))
		fail_msg("run: %s", err.msg);
	assert_memory_equal(y[0].data, x, sizeof(x));
	assert_true(((const bool *)y[1].data)[0] && ((const bool *)y[1].data)[3]);
	mfs_tensor_release(&y[0]);
	mfs_tensor_release(&y[1]);
	mfs_exec_free(e);
	mfs_graph_free(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uniform_seeded),
		cmocka_unit_test(test_runs_of_one_context),
		cmocka_unit_test(test_normal_like_double),
		cmocka_unit_test(test_uniform_like_and_normal),
		cmocka_unit_test(test_bernoulli),
		cmocka_unit_test(test_multinomial),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_dropout_training),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

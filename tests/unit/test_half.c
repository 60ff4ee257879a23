/* Unit tests for FP16/BFLOAT16 through FP32-only operators (exec/op/op_half.c,
 * flag MFS_OP_HALF_VIA_FLOAT): each graph is built twice, once in FLOAT and
 * once in FLOAT16 (or BFLOAT16) with the same values (pre-rounded to the
 * half type), and the half result must equal the FP32 result rounded to the
 * half type (the operator computes in FP32 on identical values, so the only
 * difference allowed is the final rounding). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "graph.h"

#include "graph_builder.h"

static float round_to(mfs_dtype dt, float v)
{
	if (dt == MFS_DT_FLOAT16)
		return mfs_half_to_float(mfs_float_to_half(v));
	if (dt == MFS_DT_BFLOAT16)
		return mfs_bf16_to_float(mfs_float_to_bf16(v));
	return v;
}

/* Deterministic values in [-1, 1), already representable in dt. */
static void fill(float *v, size_t n, unsigned seed, mfs_dtype dt)
{
	uint32_t s = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		s = s * 1664525u + 1013904223u;
		v[i] = round_to(dt, (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f);
	}
}

/* A tensor of dtype dt (FLOAT or a half type) holding v. */
static void make_tensor(mfs_tensor *t, mfs_dtype dt, int rank,
			const int64_t *dims, const float *v)
{
	mfs_shape s = { .rank = rank };
	size_t n;
	memcpy(s.dims, dims, (size_t)rank * sizeof(int64_t));
	assert_int_equal(mfs_tensor_alloc(t, dt, &s, NULL), 0);
	n = (size_t)mfs_shape_numel(&s);
	for (size_t i = 0; i < n; i++) {
		if (dt == MFS_DT_FLOAT)
			((float *)t->data)[i] = v[i];
		else if (dt == MFS_DT_FLOAT16)
			((uint16_t *)t->data)[i] = mfs_float_to_half(v[i]);
		else
			((uint16_t *)t->data)[i] = mfs_float_to_bf16(v[i]);
	}
}

static float elem(const mfs_tensor *t, size_t i)
{
	if (t->dtype == MFS_DT_FLOAT)
		return ((const float *)t->data)[i];
	if (t->dtype == MFS_DT_FLOAT16)
		return mfs_half_to_float(((const uint16_t *)t->data)[i]);
	return mfs_bf16_to_float(((const uint16_t *)t->data)[i]);
}

/* The half type under test: every value of both graphs is representable
 * in it, so the FP32 and half graphs compute on identical numbers. */
static mfs_dtype g_ht = MFS_DT_FLOAT16;

static void init(onnx_model *m, const char *name, mfs_dtype dt, int rank,
		 const int64_t *dims, unsigned seed)
{
	onnx_graph *g = m->graph;
	onnx_initializer *in;
	float v[4096];
	int64_t n = 1;
	for (int i = 0; i < rank; i++)
		n *= dims[i];
	assert_true(n <= 4096);
	fill(v, (size_t)n, seed, g_ht);
	g->initializers = realloc(g->initializers,
				  (size_t)(g->n_initializers + 1) * sizeof(*g->initializers));
	in = &g->initializers[g->n_initializers++];
	memset(in, 0, sizeof(*in));
	in->name = strdup(name);
	make_tensor(&in->tensor, dt, rank, dims, v);
}

typedef void (*build_fn)(onnx_model *o, mfs_dtype dt);

/* Build with dt, run twice on input x (seeded), return output 0. */
static void run_graph(build_fn build, mfs_dtype dt, int rank,
		      const int64_t *dims, mfs_tensor *out)
{
	onnx_model *o = gb_new(15);
	mfs_graph *m = NULL;
	mfs_exec *e = NULL;
	mfs_error err;
	mfs_tensor in;
	float v[4096];
	int64_t n = 1;
	mfs_exec_stats st;
	uint64_t allocs;

	for (int i = 0; i < rank; i++)
		n *= dims[i];
	fill(v, (size_t)n, 99, g_ht);
	gb_input(o, "x", dt, rank, dims);
	gb_output(o, "y");
	build(o, dt);
	if (mfs_graph_compile(o, "m", &m, &err))
		fail_msg("compile failed: %s", err.msg);
	assert_int_equal(mfs_graph_output(m, 0)->dtype, dt);
	assert_int_equal(mfs_exec_new(m, NULL, &e, &err), 0);
	make_tensor(&in, dt, rank, dims, v);
	if (mfs_exec_run(e, &in, out, &err))
		fail_msg("run failed: %s", err.msg);
	assert_int_equal(out->dtype, dt);
	mfs_tensor_release(out);
	/* a warm run allocates nothing new */
	mfs_exec_get_stats(e, &st);
	allocs = st.buffer_allocs;
	assert_int_equal(mfs_exec_run(e, &in, out, &err), 0);
	mfs_exec_get_stats(e, &st);
	assert_int_equal(st.buffer_allocs, allocs);
	mfs_tensor_release(&in);
	mfs_exec_free(e);
	mfs_graph_free(m);
}

/* abs_tol: extra absolute tolerance where the half graph rounds an
 * intermediate value the FP32 graph keeps (0 otherwise). */
static void check_half_tol(build_fn build, mfs_dtype ht, int rank,
			   const int64_t *dims, float abs_tol)
{
	mfs_tensor ref, got;
	size_t n;

	g_ht = ht;
	run_graph(build, MFS_DT_FLOAT, rank, dims, &ref);
	run_graph(build, ht, rank, dims, &got);
	assert_int_equal(ref.shape.rank, got.shape.rank);
	for (int d = 0; d < ref.shape.rank; d++)
		assert_int_equal(ref.shape.dims[d], got.shape.dims[d]);
	n = (size_t)mfs_shape_numel(&ref.shape);
	assert_true(n > 0);
	for (size_t i = 0; i < n; i++) {
		float want = round_to(ht, elem(&ref, i));
		float have = elem(&got, i);
		/* identical FP32 math: equal after rounding, up to one ulp
		 * where the FP32 engine's NHWC/packing order differs */
		if (fabsf(want - have) > fabsf(want) * (ht == MFS_DT_FLOAT16 ?
			1e-3f : 8e-3f) + 1e-6f + abs_tol)
			fail_msg("element %zu: %g, want %g", i, have, want);
	}
	mfs_tensor_release(&ref);
	mfs_tensor_release(&got);
}

static void check_half(build_fn build, mfs_dtype ht, int rank,
		       const int64_t *dims)
{
	check_half_tol(build, ht, rank, dims, 0);
}

static const int64_t img[] = { 1, 3, 6, 6 };

static void b_conv(onnx_model *o, mfs_dtype dt)
{
	static const int64_t w[] = { 4, 3, 3, 3 }, b[] = { 4 };
	init(o, "w", dt, 4, w, 1);
	init(o, "b", dt, 1, b, 2);
	gb_node(o, "", "Conv", "conv", "x,w,b", "y");
}

static void b_batchnorm(onnx_model *o, mfs_dtype dt)
{
	static const int64_t c[] = { 3 };
	init(o, "s", dt, 1, c, 3);
	init(o, "b", dt, 1, c, 4);
	init(o, "mean", dt, 1, c, 5);
	init(o, "var", dt, 1, c, 6);
	/* the variance must be positive */
	for (int i = 0; i < 3; i++) {
		mfs_tensor *t = &o->graph->initializers[3].tensor;
		if (dt == MFS_DT_FLOAT)
			((float *)t->data)[i] = 0.5f + (float)i;
		else if (dt == MFS_DT_FLOAT16)
			((uint16_t *)t->data)[i] = mfs_float_to_half(0.5f + (float)i);
		else
			((uint16_t *)t->data)[i] = mfs_float_to_bf16(0.5f + (float)i);
	}
	gb_node(o, "", "BatchNormalization", "bn", "x,s,b,mean,var", "y");
}

static void b_maxpool(onnx_model *o, mfs_dtype dt)
{
	static const int64_t k[] = { 2, 2 };
	(void)dt;
	onnx_node *n = gb_node(o, "", "MaxPool", "pool", "x", "y");
	attr_ints(n, "kernel_shape", 2, k);
}

static void b_avgpool(onnx_model *o, mfs_dtype dt)
{
	static const int64_t k[] = { 3, 3 };
	(void)dt;
	onnx_node *n = gb_node(o, "", "AveragePool", "pool", "x", "p");
	attr_ints(n, "kernel_shape", 2, k);
	gb_node(o, "", "GlobalAveragePool", "gap", "p", "y");
}

static void b_convtranspose(onnx_model *o, mfs_dtype dt)
{
	static const int64_t w[] = { 3, 2, 3, 3 };
	init(o, "w", dt, 4, w, 12);
	gb_node(o, "", "ConvTranspose", "ct", "x,w", "y");
}

static void b_instancenorm(onnx_model *o, mfs_dtype dt)
{
	static const int64_t c[] = { 3 };
	init(o, "s", dt, 1, c, 13);
	init(o, "b", dt, 1, c, 14);
	gb_node(o, "", "InstanceNormalization", "in", "x,s,b", "y");
}

static const int64_t mat[] = { 5, 16 };

static void b_matmul(onnx_model *o, mfs_dtype dt)
{
	static const int64_t w[] = { 16, 7 };
	init(o, "w", dt, 2, w, 7);
	gb_node(o, "", "MatMul", "mm", "x,w", "y");
}

static void b_gemm(onnx_model *o, mfs_dtype dt)
{
	static const int64_t w[] = { 16, 7 }, c[] = { 7 };
	init(o, "w", dt, 2, w, 8);
	init(o, "c", dt, 1, c, 9);
	gb_node(o, "", "Gemm", "gemm", "x,w,c", "y");
}

/* FP16 MatMul feeding an FP16 Add (a natively FP16 elementwise op). */
static void b_matmul_add(onnx_model *o, mfs_dtype dt)
{
	static const int64_t w[] = { 16, 7 }, c[] = { 7 };
	init(o, "w", dt, 2, w, 10);
	init(o, "c", dt, 1, c, 11);
	gb_node(o, "", "MatMul", "mm", "x,w", "h");
	gb_node(o, "", "Add", "add", "h,c", "y");
}

static void test_conv(void **s) { (void)s; check_half(b_conv, MFS_DT_FLOAT16, 4, img); }
static void test_conv_bf16(void **s) { (void)s; check_half(b_conv, MFS_DT_BFLOAT16, 4, img); }
static void test_batchnorm(void **s) { (void)s; check_half(b_batchnorm, MFS_DT_FLOAT16, 4, img); }
static void test_maxpool(void **s) { (void)s; check_half(b_maxpool, MFS_DT_FLOAT16, 4, img); }
static void test_avgpool(void **s) { (void)s; check_half(b_avgpool, MFS_DT_FLOAT16, 4, img); }
static void test_convtranspose(void **s) { (void)s; check_half(b_convtranspose, MFS_DT_FLOAT16, 4, img); }
static void test_instancenorm_bf16(void **s) { (void)s; check_half(b_instancenorm, MFS_DT_BFLOAT16, 4, img); }
static void test_matmul(void **s) { (void)s; check_half(b_matmul, MFS_DT_FLOAT16, 2, mat); }
static void test_gemm(void **s) { (void)s; check_half(b_gemm, MFS_DT_FLOAT16, 2, mat); }
static void test_matmul_add(void **s) { (void)s; check_half_tol(b_matmul_add, MFS_DT_FLOAT16, 2, mat, 4e-3f); }

/* MatMul has one T: FP16 x with FP32 weights stays an error. */
static void test_mixed_refused(void **state)
{
	(void)state;
	static const int64_t w[] = { 16, 7 };
	onnx_model *o = gb_new(13);
	mfs_graph *m = (mfs_graph *)1;
	mfs_error err;

	gb_input(o, "x", MFS_DT_FLOAT16, 2, mat);
	gb_output(o, "y");
	init(o, "w", MFS_DT_FLOAT, 2, w, 7);
	gb_node(o, "", "MatMul", "mm", "x,w", "y");
	assert_true(mfs_graph_compile(o, "m", &m, &err) < 0);
	assert_null(m);
}

/* The registry hands out the wrapper with the operator's identity. */
static void test_flag_and_wrapper(void **state)
{
	(void)state;
	const mfs_op_def *d = mfs_op_find("", "Conv", 13);
	assert_non_null(d);
	assert_true(d->flags & MFS_OP_HALF_VIA_FLOAT);
	assert_true(d->flags & MFS_OP_NHWC_OK);
	assert_string_equal(d->op_type, "Conv");
	d = mfs_op_find("", "Relu", 13);
	assert_false(d->flags & MFS_OP_HALF_VIA_FLOAT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conv),
		cmocka_unit_test(test_conv_bf16),
		cmocka_unit_test(test_batchnorm),
		cmocka_unit_test(test_maxpool),
		cmocka_unit_test(test_avgpool),
		cmocka_unit_test(test_convtranspose),
		cmocka_unit_test(test_instancenorm_bf16),
		cmocka_unit_test(test_matmul),
		cmocka_unit_test(test_gemm),
		cmocka_unit_test(test_matmul_add),
		cmocka_unit_test(test_mixed_refused),
		cmocka_unit_test(test_flag_and_wrapper),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

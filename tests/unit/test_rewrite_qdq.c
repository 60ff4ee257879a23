/* Unit tests for the QDQ rewrite (exec/graph/rewrite_qdq.c) and its integer
 * kernels (QConv, QDense, QAdd, QMaxPool): each static-QDQ group, built the
 * way ONNX Runtime's quantize_static writes it, compiles to its integer
 * node and computes what the same graph computes in float through
 * DequantizeLinear/QuantizeLinear (MFS_FUSE_SKIP=qdq, the float reference
 * of the quantized graph) within int8 rounding: one step of the output
 * scale where a value falls on the other side of a rounding boundary
 * (the float graph rounds a float sum, the integer one an exact int32
 * sum), and most elements exactly.  Near misses are left alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <math.h>

#include "engine.h"
#include "fusion.h"
#include "graph.h"
#include "graph_builder.h"

#define MAXN 4096

static int64_t xdims[4];
static int xrank;

static void scalar_f(onnx_model *m, const char *name, float v)
{
	const int64_t none[1] = { 1 };
	gb_init_f32(m, name, 0, none, &v);
}

static void scalar_q(onnx_model *m, const char *name, mfs_dtype dt, int v)
{
	const int64_t none[1] = { 1 };
	uint8_t u = (uint8_t)v;
	gb_init(m, name, dt, 0, none, &u);
}

/* x -> Q(s, z) -> DQ named out; q holds the uint8 value's name. */
static void qdq(onnx_model *m, const char *x, const char *out, float s, int z)
{
	char sn[64], zn[64], q[64], ins[200];
	snprintf(sn, sizeof(sn), "%s_s", out);
	snprintf(zn, sizeof(zn), "%s_z", out);
	snprintf(q, sizeof(q), "%s_q", out);
	scalar_f(m, sn, s);
	scalar_q(m, zn, MFS_DT_UINT8, z);
	snprintf(ins, sizeof(ins), "%s,%s,%s", x, sn, zn);
	gb_node(m, "", "QuantizeLinear", q, ins, q);
	snprintf(ins, sizeof(ins), "%s,%s,%s", q, sn, zn);
	gb_node(m, "", "DequantizeLinear", out, ins, out);
}

/* An int8 weight of the given dims, per-channel scales along axis (zero
 * points wzp, 0 normally) -> DQ named out. */
static void weight(onnx_model *m, const char *out, int rank, const int64_t *dims, int axis,
		   int wzp)
{
	int8_t w[MAXN], z[64];
	float s[64];
	int64_t n = 1, ch = dims[axis];
	char q[64], sn[64], zn[64], ins[200];
	for (int i = 0; i < rank; i++)
		n *= dims[i];
	for (int64_t i = 0; i < n; i++)
		w[i] = (int8_t)((i * 37) % 255 - 127);
	for (int64_t c = 0; c < ch; c++) {
		s[c] = 0.002f + 0.0005f * (float)c;
		z[c] = (int8_t)wzp;
	}
	snprintf(q, sizeof(q), "%s_q", out);
	snprintf(sn, sizeof(sn), "%s_s", out);
	snprintf(zn, sizeof(zn), "%s_z", out);
	gb_init(m, q, MFS_DT_INT8, rank, dims, w);
	gb_init_f32(m, sn, 1, &ch, s);
	gb_init(m, zn, MFS_DT_INT8, 1, &ch, z);
	snprintf(ins, sizeof(ins), "%s,%s,%s", q, sn, zn);
	attr_int(gb_node(m, "", "DequantizeLinear", out, ins, out), "axis", axis);
}

/* An int32 bias of n values with scale xs * ws[c] (as weight() makes them). */
static void bias(onnx_model *m, const char *out, int64_t n, float xs)
{
	int32_t b[64], z[64] = { 0 };
	float s[64];
	char q[64], sn[64], zn[64], ins[200];
	for (int64_t c = 0; c < n; c++) {
		b[c] = (int32_t)((c * 211) % 900) - 450;
		s[c] = xs * (0.002f + 0.0005f * (float)c);
	}
	snprintf(q, sizeof(q), "%s_q", out);
	snprintf(sn, sizeof(sn), "%s_s", out);
	snprintf(zn, sizeof(zn), "%s_z", out);
	gb_init(m, q, MFS_DT_INT32, 1, &n, b);
	gb_init_f32(m, sn, 1, &n, s);
	gb_init(m, zn, MFS_DT_INT32, 1, &n, z);
	snprintf(ins, sizeof(ins), "%s,%s,%s", q, sn, zn);
	attr_int(gb_node(m, "", "DequantizeLinear", out, ins, out), "axis", 0);
}

static onnx_model *model(int rank, const int64_t *dims)
{
	onnx_model *m = gb_new(13);
	xrank = rank;
	memcpy(xdims, dims, sizeof(int64_t) * (size_t)rank);
	gb_input(m, "x", MFS_DT_FLOAT, rank, dims);
	gb_output(m, "y");
	return m;
}

/* Conv variants on x [1, 4, 6, 6]: 0 plain, 1 Relu and y_zero_point 10,
 * 2 group 2 with strides 2, 3 no Q after (float output), 4 weight zero
 * point 1 and 5 x's DQ without zero point (both left alone). */
static onnx_model *conv_model(int v)
{
	const int64_t xd[4] = { 1, 4, 6, 6 }, pads[4] = { 1, 1, 1, 1 }, st[2] = { 2, 2 };
	const int64_t wd[4] = { 6, v == 2 ? 2 : 4, 3, 3 };
	onnx_model *m = model(4, xd);
	qdq(m, "x", v == 5 ? "xd0" : "xd", 0.03f, 100);
	if (v == 5)   /* a DQ without zero point: x's type unknown to the rewrite */
		gb_node(m, "", "DequantizeLinear", "dq0", "xd0_q,xd0_s", "xd");
	weight(m, "wd", 4, wd, 0, v == 4);
	bias(m, "bd", 6, 0.03f);
	onnx_node *c = gb_node(m, "", "Conv", "conv", "xd,wd,bd", v == 3 ? "y" : "c");
	attr_ints(c, "pads", 4, pads);
	if (v == 2) {
		attr_int(c, "group", 2);
		attr_ints(c, "strides", 2, st);
	}
	if (v == 1)
		gb_node(m, "", "Relu", "relu", "c", "r");
	if (v != 3) {
		qdq(m, v == 1 ? "r" : "c", "yq", 0.05f, v == 1 ? 10 : 128);
		gb_node(m, "", "Identity", "id", "yq", "y");
	}
	return m;
}

/* Dense variants on x [2, 3, 8]: 0 MatMul + bias Add + Relu -> Q,
 * 1 the same to a float output, 2 Gemm transB with an int32 bias on x
 * [6, 8] (float output). */
static onnx_model *dense_model(int v)
{
	const int64_t x3[3] = { 2, 3, 8 }, x2[2] = { 6, 8 };
	const int64_t wk[2] = { 8, 5 }, wt[2] = { 5, 8 }, n5 = 5;
	const float bv[5] = { 0.1f, -0.2f, 0.05f, 0.3f, -0.01f };
	onnx_model *m = v == 2 ? model(2, x2) : model(3, x3);
	qdq(m, "x", "xd", 0.02f, 120);
	if (v == 2) {
		weight(m, "wd", 2, wt, 0, 0);
		bias(m, "bd", 5, 0.02f);
		attr_int(gb_node(m, "", "Gemm", "gemm", "xd,wd,bd", "y"), "transB", 1);
		return m;
	}
	weight(m, "wd", 2, wk, 1, 0);
	gb_init_f32(m, "b", 1, &n5, bv);
	gb_node(m, "", "MatMul", "mm", "xd,wd", "p");
	gb_node(m, "", "Add", "add", "p,b", "pb");
	gb_node(m, "", "Relu", "relu", "pb", v == 1 ? "y" : "r");
	if (v == 0) {
		qdq(m, "r", "yq", 0.01f, 0);
		gb_node(m, "", "Identity", "id", "yq", "y");
	}
	return m;
}

/* Add of two quantized values of x (other scales) + Relu -> Q; 1: the
 * second operand a [1, 4, 1, 1] broadcast. */
static onnx_model *add_model(int v)
{
	const int64_t xd[4] = { 2, 4, 3, 5 }, cd[4] = { 1, 4, 1, 1 };
	const float cv[4] = { 0.5f, -1.0f, 2.0f, 0.0f };
	onnx_model *m = model(4, xd);
	qdq(m, "x", "a", 0.03f, 128);
	if (v == 1) {
		gb_init_f32(m, "c", 4, cd, cv);
		qdq(m, "c", "b", 0.02f, 100);
	} else {
		gb_node(m, "", "Neg", "neg", "x", "nx");
		qdq(m, "nx", "b", 0.025f, 90);
	}
	gb_node(m, "", "Add", "add", "a,b", "s");
	gb_node(m, "", "Relu", "relu", "s", "r");
	qdq(m, "r", "yq", 0.02f, 0);
	gb_node(m, "", "Identity", "id", "yq", "y");
	return m;
}

/* MaxPool 3x3 stride 2 pads 1 between a DQ and a Q of the same parameters,
 * on plain values (the Q before it and the DQ after keep them plain). */
static onnx_model *pool_model(int v)
{
	const int64_t xd[4] = { 2, 5, 7, 6 }, k3[2] = { 3, 3 }, s2[2] = { 2, 2 };
	const int64_t pads[4] = { 1, 1, 1, 1 };
	onnx_model *m = model(4, xd);
	(void)v;
	qdq(m, "x", "xd", 0.03f, 128);
	onnx_node *p = gb_node(m, "", "MaxPool", "pool", "xd", "p");
	attr_ints(p, "kernel_shape", 2, k3);
	attr_ints(p, "strides", 2, s2);
	attr_ints(p, "pads", 4, pads);
	qdq(m, "p", "pd", 0.03f, 128);
	gb_node(m, "", "Identity", "id", "pd", "y");
	return m;
}

/* A ResNet-like block on x [1, 8, 8, 8]: conv -> Q -> MaxPool -> Q ->
 * conv -> Q -> Add(pool, conv) -> Q (the integer nodes' NHWC chain). */
static onnx_model *block_model(int v)
{
	const int64_t xd[4] = { 1, 8, 8, 8 }, wd[4] = { 8, 8, 3, 3 }, pads[4] = { 1, 1, 1, 1 };
	const int64_t k2[2] = { 2, 2 };
	onnx_model *m = model(4, xd);
	(void)v;
	qdq(m, "x", "xd", 0.03f, 128);
	weight(m, "w1", 4, wd, 0, 0);
	weight(m, "w2", 4, wd, 0, 0);
	bias(m, "b1", 8, 0.03f);
	bias(m, "b2", 8, 0.04f);
	attr_ints(gb_node(m, "", "Conv", "c1", "xd,w1,b1", "c1"), "pads", 4, pads);
	qdq(m, "c1", "c1d", 0.04f, 0);
	onnx_node *p = gb_node(m, "", "MaxPool", "pool", "c1d", "p");
	attr_ints(p, "kernel_shape", 2, k2);
	attr_ints(p, "strides", 2, k2);
	qdq(m, "p", "pd", 0.04f, 0);
	attr_ints(gb_node(m, "", "Conv", "c2", "pd,w2,b2", "c2"), "pads", 4, pads);
	qdq(m, "c2", "c2d", 0.05f, 60);
	gb_node(m, "", "Add", "add", "pd,c2d", "s");
	qdq(m, "s", "yq", 0.06f, 70);
	gb_node(m, "", "Identity", "id", "yq", "y");
	return m;
}

/* ONNX's QLinearConv (0, per-channel weight scales, int32 B) and
 * QLinearMatMul (1) with constant int8 weights, between a Q and a DQ. */
static onnx_model *qlinear_model(int v)
{
	const int64_t xc[4] = { 1, 4, 5, 5 }, xm[2] = { 3, 8 }, pads[4] = { 1, 1, 1, 1 };
	const int64_t wc[4] = { 6, 4, 3, 3 }, wm[2] = { 8, 5 }, n6 = 6;
	const int32_t b[6] = { -300, 120, 0, 45, 999, -7 };
	onnx_model *m = v ? model(2, xm) : model(4, xc);
	qdq(m, "x", "xd", 0.03f, 100);
	weight(m, "wd", v ? 2 : 4, v ? wm : wc, v, 0);   /* its q, s, z feed the node */
	scalar_f(m, "ys", 0.05f);
	scalar_q(m, "yz", MFS_DT_UINT8, 128);
	if (v) {
		scalar_f(m, "ws1", 0.003f);
		gb_node(m, "", "QLinearMatMul", "qmm", "xd_q,xd_s,xd_z,wd_q,ws1,wd_z,ys,yz", "yq");
	} else {
		gb_init(m, "b", MFS_DT_INT32, 1, &n6, b);
		attr_ints(gb_node(m, "", "QLinearConv", "qc", "xd_q,xd_s,xd_z,wd_q,wd_s,wd_z,ys,yz,b",
				  "yq"), "pads", 4, pads);
	}
	gb_node(m, "", "DequantizeLinear", "dq", "yq,ys,yz", "y");
	return m;
}

/* Compile (with or without the QDQ rewrite) and run on a fixed x; fills
 * out (returns its count) and counts nodes of type op. */
static int64_t run(onnx_model *m, bool rewrite, float *out, const char *op, int *n_op)
{
	mfs_error err;
	mfs_graph *g;
	mfs_exec *e;
	mfs_tensor in = { 0 }, y[2] = { { 0 } };
	mfs_shape xs = { .rank = xrank };

	memcpy(xs.dims, xdims, sizeof(int64_t) * (size_t)xrank);
	if (!rewrite)
		setenv("MFS_FUSE_SKIP", "qdq", 1);
	int rc = mfs_graph_compile(m, "qdq", &g, &err);
	unsetenv("MFS_FUSE_SKIP");
	if (rc)
		print_error("%s\n", err.msg);
	assert_int_equal(rc, 0);
	*n_op = 0;
	for (int i = 0; i < g->n_nodes; i++)
		*n_op += !strcmp(g->nodes[i].onnx->op_type, op);
	assert_int_equal(mfs_exec_new(g, NULL, &e, &err), 0);
	assert_int_equal(mfs_tensor_alloc(&in, MFS_DT_FLOAT, &xs, &err), 0);
	for (int64_t i = 0; i < mfs_shape_numel(&xs); i++)
		((float *)in.data)[i] = 3.0f * sinf((float)i * 0.7f);
	rc = mfs_exec_run(e, &in, y, &err);
	if (rc)
		print_error("%s\n", err.msg);
	assert_int_equal(rc, 0);
	int64_t n = mfs_shape_numel(&y[0].shape);
	assert_true(n > 0 && n <= MAXN);
	memcpy(out, y[0].data, (size_t)n * sizeof(float));
	mfs_tensor_release(&in);
	mfs_tensor_release(&y[0]);
	mfs_tensor_release(&y[1]);
	mfs_exec_free(e);
	mfs_graph_free(g);
	return n;
}

/* The rewrite makes `want` nodes of type op (0: leaves the graph alone)
 * and agrees with the float graph within `steps` of step, at least 90% of
 * the elements exactly (to float rounding). */
static void check(onnx_model *(*make)(int), int v, const char *op, int want, float step,
		  float steps)
{
	static float a[MAXN], b[MAXN];
	int na, nb, exact = 0;
	int64_t n = run(make(v), false, a, op, &na);
	assert_int_equal(run(make(v), true, b, op, &nb), n);
	if (strcmp(op, "DequantizeLinear"))
		assert_int_equal(na, 0);
	if (nb != want)
		fail_msg("%s variant %d: %d %s nodes, want %d", op, v, nb, op, want);
	for (int64_t i = 0; i < n; i++) {
		float d = fabsf(a[i] - b[i]);
		if (d > steps * step + 1e-5f)
			fail_msg("%s variant %d: element %lld: float graph %g, integer %g", op, v,
				 (long long)i, (double)a[i], (double)b[i]);
		exact += d <= 1e-5f + 1e-3f * fabsf(a[i]);
	}
	if (exact < n * 9 / 10)
		fail_msg("%s variant %d: only %d of %lld elements exact", op, v, exact, (long long)n);
}

static void test_conv(void **st)
{
	(void)st;
	check(conv_model, 0, "QConv", 1, 0.05f, 1);
	check(conv_model, 1, "QConv", 1, 0.05f, 1);
	check(conv_model, 2, "QConv", 1, 0.05f, 1);
	/* float output: the float graph's Conv sums floats; no rounding */
	check(conv_model, 3, "QConv", 1, 1e-3f, 1);
	check(conv_model, 4, "QConv", 0, 0.05f, 0);
	check(conv_model, 5, "QConv", 0, 0.05f, 0);
}

static void test_dense(void **st)
{
	(void)st;
	check(dense_model, 0, "QDense", 1, 0.01f, 1);
	check(dense_model, 1, "QDense", 1, 1e-4f, 1);
	check(dense_model, 2, "QDense", 1, 1e-4f, 1);
}

static void test_add(void **st)
{
	(void)st;
	check(add_model, 0, "QAdd", 1, 0.02f, 1);
	check(add_model, 1, "QAdd", 1, 0.02f, 1);
}

static void test_qlinear(void **st)
{
	(void)st;
	check(qlinear_model, 0, "QConv", 1, 0.05f, 1);
	check(qlinear_model, 1, "QDense", 1, 0.05f, 1);
}

static void test_block(void **st)
{
	(void)st;
	check(pool_model, 0, "QMaxPool", 1, 0.03f, 0);
	/* an upstream step may move a later rounding: 2 steps */
	check(block_model, 0, "QConv", 2, 0.06f, 2);
	check(block_model, 0, "QMaxPool", 1, 0.06f, 2);
	check(block_model, 0, "QAdd", 1, 0.06f, 2);
	check(block_model, 0, "DequantizeLinear", 1, 0.06f, 2);
}

/* MatMulInteger with a constant int8 B (dynamic quantization's): oneDNN's
 * int32 product equals the exact one, a_zero_point subtracted. */
static void test_matmul_integer(void **st)
{
	const int64_t ad[3] = { 2, 3, 8 }, bd[2] = { 8, 5 }, none[1] = { 1 };
	uint8_t a[48], az = 7;
	int8_t b[40];
	mfs_error err;
	mfs_graph *g;
	mfs_exec *e;
	mfs_tensor in = { 0 }, y[1] = { { 0 } };
	mfs_shape as = { 3, { 2, 3, 8 } };
	(void)st;

	for (int i = 0; i < 40; i++)
		b[i] = (int8_t)((i * 37) % 255 - 127);
	onnx_model *m = gb_new(13);
	gb_input(m, "a", MFS_DT_UINT8, 3, ad);
	gb_output(m, "y");
	gb_init(m, "b", MFS_DT_INT8, 2, bd, b);
	gb_init(m, "az", MFS_DT_UINT8, 0, none, &az);
	gb_node(m, "", "MatMulInteger", "mmi", "a,b,az", "y");
	assert_int_equal(mfs_graph_compile(m, "mmi", &g, &err), 0);
	assert_int_equal(mfs_exec_new(g, NULL, &e, &err), 0);
	assert_int_equal(mfs_tensor_alloc(&in, MFS_DT_UINT8, &as, &err), 0);
	for (int i = 0; i < 48; i++)
		((uint8_t *)in.data)[i] = a[i] = (uint8_t)((i * 53) % 256);
	assert_int_equal(mfs_exec_run(e, &in, y, &err), 0);
	assert_int_equal(y[0].dtype, MFS_DT_INT32);
	assert_int_equal(mfs_shape_numel(&y[0].shape), 30);
	for (int r = 0; r < 6; r++)
		for (int c = 0; c < 5; c++) {
			int32_t want = 0;
			for (int k = 0; k < 8; k++)
				want += ((int32_t)a[r * 8 + k] - az) * b[k * 5 + c];
			assert_int_equal(((int32_t *)y[0].data)[r * 5 + c], want);
		}
	mfs_tensor_release(&in);
	mfs_tensor_release(&y[0]);
	mfs_exec_free(e);
	mfs_graph_free(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conv),
		cmocka_unit_test(test_dense),
		cmocka_unit_test(test_add),
		cmocka_unit_test(test_qlinear),
		cmocka_unit_test(test_block),
		cmocka_unit_test(test_matmul_integer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

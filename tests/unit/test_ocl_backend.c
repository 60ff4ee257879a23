/* Unit tests for the OpenCL backend (exec/opencl/ocl_backend.c, ocl_run.c,
 * ocl_op_table.c, ocl_ops_*.c) on whatever OpenCL device is present
 * (PoCL's CPU device in CI): each kernel family runs a small graph of real operators on both engines with the
 * same random inputs, and the results must agree; the backend's counters
 * show the nodes ran on the device, inputs went up once, outputs came
 * down once, and a third run with the same shapes created no buffer. */
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
#include "ocl_fixture.h"

#include "graph_builder.h"

static void gb_init_i64(onnx_model *m, const char *name, int n, const int64_t *v)
{
	onnx_graph *g = m->graph;
	mfs_shape s = { .rank = 1, .dims = { n } };
	onnx_initializer *in;
	g->initializers = realloc(g->initializers,
				  (size_t)(g->n_initializers + 1) * sizeof(*g->initializers));
	in = &g->initializers[g->n_initializers++];
	in->name = strdup(name);
	assert_int_equal(mfs_tensor_alloc(&in->tensor, MFS_DT_INT64, &s, NULL), 0);
	memcpy(in->tensor.data, v, in->tensor.nbytes);
}

static onnx_node *node(onnx_model *m, const char *op, const char *ins, const char *outs)
{
	static int k;
	char name[32];
	snprintf(name, sizeof(name), "n%d", k++);
	return gb_node(m, "", op, name, ins, outs);
}

static uint32_t rng = 12345;

static float frand(void)
{
	rng = rng * 1664525u + 1013904223u;
	return (float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static void init_rand(onnx_model *m, const char *name, int rank, const int64_t *dims)
{
	int64_t n = 1;
	for (int i = 0; i < rank; i++)
		n *= dims[i];
	float *d = malloc((size_t)n * sizeof(float));
	for (int64_t i = 0; i < n; i++)
		d[i] = frand();
	gb_init_f32(m, name, rank, dims, d);
	free(d);
}

static mfs_tensor rand_f32(int rank, const int64_t *dims)
{
	mfs_tensor t;
	mfs_shape s = { .rank = rank };
	memcpy(s.dims, dims, (size_t)rank * sizeof(int64_t));
	assert_int_equal(mfs_tensor_alloc(&t, MFS_DT_FLOAT, &s, NULL), 0);
	for (size_t i = 0; i < t.nbytes / 4; i++)
		((float *)t.data)[i] = frand();
	return t;
}

/* got[k] against ref[k] for every output: dtype, shape, and max |diff|
 * <= tol * max(1, max |ref|) (NaN where both are NaN is equal). */
static void compare_outputs(const mfs_tensor *ref, const mfs_tensor *got, int n_out,
			    double tol)
{
	for (int k = 0; k < n_out; k++) {
		double md = 0, mr = 1;
		int64_t n = mfs_shape_numel(&ref[k].shape);
		assert_int_equal(got[k].dtype, ref[k].dtype);
		assert_true(mfs_shape_equal(&got[k].shape, &ref[k].shape));
		for (int64_t i = 0; i < n; i++) {
			double a = mfs_tensor_get_f64(&ref[k], i), b = mfs_tensor_get_f64(&got[k], i);
			if (isnan(a) && isnan(b))
				continue;
			md = fmax(md, fabs(a - b));
			mr = fmax(mr, fabs(a));
		}
		if (md > tol * mr)
			fail_msg("output %d: max |diff| %g > %g", k, md, tol * mr);
	}
}

/* Compile m, run ins on the CPU and on OpenCL, compare every output
 * (max |diff| <= tol * max(1, max |ref|)); check the counters. */
static void check(onnx_model *m, int n_in, mfs_tensor *ins, double tol, bool all_device)
{
	mfs_graph *cm = NULL;
	mfs_exec *ec = NULL, *eo = NULL;
	mfs_error err;
	enum { MAX_OUT = 12 };
	mfs_tensor ref[MAX_OUT], got[MAX_OUT];
	mfs_exec_stats st, st2;
	int n_out;

	if (mfs_graph_compile(m, "t", &cm, &err))
		fail_msg("compile: %s", err.msg);
	n_out = mfs_graph_n_outputs(cm);
	assert_true(n_out <= MAX_OUT);
	assert_int_equal(mfs_exec_new(cm, NULL, &ec, &err), 0);
	if (mfs_exec_new(cm, ocl, &eo, &err))
		fail_msg("exec_new: %s", err.msg);
	assert_int_equal(mfs_exec_run(ec, ins, ref, &err), 0);
	for (int pass = 0; pass < 3; pass++) {
		if (mfs_exec_run(eo, ins, got, &err))
			fail_msg("opencl run: %s", err.msg);
		compare_outputs(ref, got, n_out, tol);
		for (int k = 0; k < n_out; k++)
			mfs_tensor_release(&got[k]);
		if (pass == 1)
			mfs_exec_get_stats(eo, &st);
	}
	mfs_exec_get_stats(eo, &st2);
	assert_int_equal(st2.runs, 3);
	/* the pool settles: a third run with the same shapes makes no buffer */
	assert_int_equal(st2.buffer_allocs, st.buffer_allocs);
	assert_true(st2.downloads - st.downloads <= (uint64_t)n_out);
	if (all_device) {
		assert_int_equal(st.host_nodes, 0);
		assert_true(st.device_nodes > 0);
		assert_true(st2.uploads - st.uploads >= (uint64_t)n_in);
	}
	for (int k = 0; k < n_out; k++)
		mfs_tensor_release(&ref[k]);
	for (int i = 0; i < n_in; i++)
		mfs_tensor_release(&ins[i]);
	mfs_exec_free(eo);
	mfs_exec_free(ec);
	mfs_graph_free(cm);
}

static void test_unary(void **state)
{
	int64_t d[] = { 2, 3, 17 };
	onnx_model *m = gb_new(17);
	(void)state;
	gb_input(m, "x", MFS_DT_FLOAT, 3, d);
	gb_init_f32(m, "lo", 0, (int64_t[]){ 0 }, (float[]){ -0.3f });
	gb_init_f32(m, "hi", 0, (int64_t[]){ 0 }, (float[]){ 0.6f });
	node(m, "Abs", "x", "a");
	node(m, "Sqrt", "a", "b");
	node(m, "Tanh", "x", "c");
	node(m, "Sigmoid", "c", "e");
	node(m, "Erf", "x", "f");
	node(m, "Relu", "x", "g");
	node(m, "Clip", "x,lo,hi", "h");
	gb_output(m, "b");
	gb_output(m, "e");
	gb_output(m, "f");
	gb_output(m, "g");
	gb_output(m, "h");
	mfs_tensor in[] = { rand_f32(3, d) };
	check(m, 1, in, 1e-5, true);
}

static void test_binary_broadcast(void **state)
{
	int64_t dx[] = { 2, 3, 4 }, dy[] = { 3, 1 };
	onnx_model *m = gb_new(17);
	(void)state;
	gb_input(m, "x", MFS_DT_FLOAT, 3, dx);
	gb_input(m, "y", MFS_DT_FLOAT, 2, dy);
	gb_init_f32(m, "two", 0, (int64_t[]){ 0 }, (float[]){ 2.0f });
	node(m, "Add", "x,y", "a");
	node(m, "Sub", "a,y", "b");
	node(m, "Mul", "b,x", "c");
	node(m, "Div", "c,two", "e");
	node(m, "Pow", "e,two", "f");
	node(m, "Equal", "a,x", "q");
	node(m, "Where", "q,f,y", "w");
	node(m, "Sum", "x,y,e", "s");
	gb_output(m, "f");
	gb_output(m, "w");
	gb_output(m, "s");
	mfs_tensor in[] = { rand_f32(3, dx), rand_f32(2, dy) };
	check(m, 2, in, 1e-5, true);
}

static void test_data_movement(void **state)
{
	int64_t d[] = { 2, 3, 5 };
	onnx_model *m = gb_new(17);
	onnx_node *n;
	(void)state;
	gb_input(m, "x", MFS_DT_FLOAT, 3, d);
	gb_init_i64(m, "st", 2, (int64_t[]){ 1, -1 });
	gb_init_i64(m, "en", 2, (int64_t[]){ 3, -6 });
	gb_init_i64(m, "ax", 2, (int64_t[]){ 1, 2 });
	gb_init_i64(m, "sp", 2, (int64_t[]){ 1, -2 });
	gb_init_i64(m, "shape", 4, (int64_t[]){ 2, 2, 3, 5 });
	gb_init_i64(m, "idx", 3, (int64_t[]){ 4, -1, 0 });
	n = node(m, "Transpose", "x", "t");
	attr_ints(n, "perm", 3, (int64_t[]){ 2, 0, 1 });
	node(m, "Slice", "x,st,en,ax,sp", "s");
	n = node(m, "Concat", "x,x", "c");
	attr_int(n, "axis", 1);
	node(m, "Expand", "x,shape", "e");
	n = node(m, "Gather", "x,idx", "g");
	attr_int(n, "axis", 2);
	n = node(m, "Cast", "g", "gi");
	attr_int(n, "to", MFS_DT_INT64);
	gb_init_i64(m, "parts", 2, (int64_t[]){ 2, 3 });
	n = node(m, "Split", "x,parts", "p0,p1");
	attr_int(n, "axis", -1);
	gb_output(m, "t");
	gb_output(m, "s");
	gb_output(m, "c");
	gb_output(m, "e");
	gb_output(m, "gi");
	gb_output(m, "p0");
	gb_output(m, "p1");
	mfs_tensor in[] = { rand_f32(3, d) };
	check(m, 1, in, 0, true);
}

/* An index out of range fails the run on the device as on the CPU (and
 * the next run with good indices still works). */
static void test_gather_out_of_range(void **state)
{
	int64_t d[] = { 2, 5 }, di[] = { 2 };
	onnx_model *m = gb_new(13);
	mfs_graph *cm = NULL;
	mfs_exec *eo = NULL;
	mfs_tensor out[1];
	mfs_error err;
	(void)state;
	gb_input(m, "x", MFS_DT_FLOAT, 2, d);
	gb_input(m, "idx", MFS_DT_INT64, 1, di);
	onnx_node *n = node(m, "Gather", "x,idx", "g");
	attr_int(n, "axis", 1);
	gb_output(m, "g");
	if (mfs_graph_compile(m, "t", &cm, &err))
		fail_msg("compile: %s", err.msg);
	if (mfs_exec_new(cm, ocl, &eo, &err))
		fail_msg("exec_new: %s", err.msg);
	mfs_tensor in[2] = { rand_f32(2, d) };
	mfs_error e2;
	memset(&e2, 0, sizeof(e2));
	assert_int_equal(mfs_tensor_alloc(&in[1], MFS_DT_INT64, &(mfs_shape){ .rank = 1, .dims = { 2 } }, &e2), 0);
	((int64_t *)in[1].data)[0] = 1;
	((int64_t *)in[1].data)[1] = 7;
	assert_int_equal(mfs_exec_run(eo, in, out, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "index 7 is out of range [-5, 5)"));
	((int64_t *)in[1].data)[1] = -5;
	if (mfs_exec_run(eo, in, out, &err))
		fail_msg("opencl run: %s", err.msg);
	const float *x = in[0].data, *g = out[0].data;
	assert_float_equal(g[0], x[1], 0);
	assert_float_equal(g[1], x[0], 0);
	assert_float_equal(g[2], x[6], 0);
	assert_float_equal(g[3], x[5], 0);
	mfs_exec_stats st;
	mfs_exec_get_stats(eo, &st);
	assert_int_equal(st.host_nodes, 0);   /* the device's Gather, not the CPU's */
	mfs_tensor_release(&out[0]);
	mfs_tensor_release(&in[0]);
	mfs_tensor_release(&in[1]);
	mfs_exec_free(eo);
	mfs_graph_free(cm);
}

static void test_rows(void **state)
{
	int64_t d[] = { 2, 5, 33 }, dn[] = { 33 };
	onnx_model *m = gb_new(18);
	onnx_node *n;
	(void)state;
	gb_input(m, "x", MFS_DT_FLOAT, 3, d);
	init_rand(m, "sc", 1, dn);
	init_rand(m, "bi", 1, dn);
	gb_init_i64(m, "axes", 1, (int64_t[]){ 1 });
	n = node(m, "Softmax", "x", "s");
	attr_int(n, "axis", 1);
	node(m, "Softmax", "x", "s2");
	node(m, "LayerNormalization", "x,sc,bi", "l");
	node(m, "ReduceMean", "x,axes", "r");
	gb_init_i64(m, "last", 1, (int64_t[]){ -1 });
	node(m, "ReduceSum", "x,last", "r2");
	n = node(m, "LogSoftmax", "x", "s3");
	gb_output(m, "s");
	gb_output(m, "s2");
	gb_output(m, "l");
	gb_output(m, "r");
	gb_output(m, "r2");
	gb_output(m, "s3");
	mfs_tensor in[] = { rand_f32(3, d) };
	check(m, 1, in, 1e-5, true);
}

static void test_dense(void **state)
{
	int64_t dx[] = { 2, 4, 9, 9 }, dw[] = { 6, 4, 3, 3 }, db[] = { 6 };
	int64_t ddw[] = { 6, 1, 3, 3 }, dc[] = { 6 }, dm[] = { 5, 9 }, dg[] = { 7, 6 };
	onnx_model *m = gb_new(17);
	onnx_node *n;
	(void)state;
	gb_input(m, "x", MFS_DT_FLOAT, 4, dx);
	init_rand(m, "w", 4, dw);
	init_rand(m, "b", 1, db);
	init_rand(m, "dw", 4, ddw);
	init_rand(m, "sc", 1, dc);
	init_rand(m, "bb", 1, dc);
	init_rand(m, "mu", 1, dc);
	gb_init_f32(m, "var", 1, dc, (float[]){ 0.5f, 1, 2, 0.1f, 3, 1 });
	init_rand(m, "mw", 2, dm);
	init_rand(m, "gw", 2, dg);
	init_rand(m, "gc", 1, (int64_t[]){ 7 });
	n = node(m, "Conv", "x,w,b", "c");
	attr_ints(n, "pads", 4, (int64_t[]){ 1, 1, 1, 1 });
	attr_ints(n, "strides", 2, (int64_t[]){ 2, 2 });
	node(m, "Relu", "c", "r");
	n = node(m, "Conv", "r,dw", "d");
	attr_int(n, "group", 6);
	attr_ints(n, "pads", 4, (int64_t[]){ 1, 1, 1, 1 });
	node(m, "BatchNormalization", "d,sc,bb,mu,var", "bn");
	n = node(m, "MaxPool", "bn", "mp");
	attr_ints(n, "kernel_shape", 2, (int64_t[]){ 2, 2 });
	n = node(m, "AveragePool", "bn", "ap");
	attr_ints(n, "kernel_shape", 2, (int64_t[]){ 3, 3 });
	attr_ints(n, "pads", 4, (int64_t[]){ 1, 1, 1, 1 });
	attr_int(n, "count_include_pad", 1);
	node(m, "GlobalAveragePool", "bn", "gp");
	node(m, "Flatten", "gp", "fl");
	n = node(m, "Gemm", "fl,gw,gc", "gm");
	attr_int(n, "transB", 1);
	node(m, "MatMul", "ap,mw", "mm");
	gb_output(m, "mp");
	gb_output(m, "gm");
	gb_output(m, "mm");
	mfs_tensor in[] = { rand_f32(4, dx) };
	check(m, 1, in, 1e-4, true);
}

/* A node of com.modelfs (the rewrites' domain), imported at version 1. */
static onnx_node *ours(onnx_model *m, const char *op, const char *ins, const char *outs)
{
	static int k;
	char name[32];
	bool imported = false;
	for (int i = 0; i < m->n_opsets; i++)
		imported |= !strcmp(m->opsets[i].domain, "com.modelfs");
	if (!imported) {
		m->opsets = realloc(m->opsets, sizeof(*m->opsets) * (size_t)(m->n_opsets + 1));
		m->opsets[m->n_opsets].domain = strdup("com.modelfs");
		m->opsets[m->n_opsets++].version = 1;
	}
	snprintf(name, sizeof(name), "f%d", k++);
	return gb_node(m, "com.modelfs", op, name, ins, outs);
}

static void attr_str(onnx_node *n, const char *name, const char *v)
{
	onnx_attr *a = gb_attr(n, name, ONNX_ATTR_STRING);
	a->s = strdup(v);
	a->s_len = strlen(v);
}

static void attr_float(onnx_node *n, const char *name, float v)
{
	gb_attr(n, name, ONNX_ATTR_FLOAT)->f = v;
}

/* What the transformer rewrites make (exec/graph/rewrite_*.c) runs on the
 * device: Dense with each activation, with and without bias and
 * transB (on 80 x 130 too: several 64 x 64 tiles each way, partial
 * ones, K not a multiple of 16), with a residual Z (after an activation
 * too); Gelu in both forms; LayerNormalization
 * of com.modelfs.  Dense on both of its device paths (MODELFS_OCL_DENSE). */
static void fused_check(void)
{
	static const char *const acts[] = { "", "Relu", "Gelu", "GeluTanh" };
	static const struct {
		const char *name;
		int rank;
		int64_t dims[2];
	} inits[] = { { "w", 2, { 33, 7 } }, { "wt", 2, { 6, 33 } }, { "b", 1, { 7 } },
		      { "sc", 1, { 33 } }, { "bi", 1, { 33 } }, { "wl", 2, { 33, 130 } },
		      { "wlt", 2, { 130, 33 } }, { "bl", 1, { 130 } } };
	int64_t d[] = { 2, 5, 33 }, d2[] = { 2, 40, 33 }, dz[] = { 2, 40, 130 };
	onnx_model *m = gb_new(17);
	onnx_node *n;
	gb_input(m, "x", MFS_DT_FLOAT, 3, d);
	gb_input(m, "x2", MFS_DT_FLOAT, 3, d2);
	gb_input(m, "z2", MFS_DT_FLOAT, 3, dz);
	for (size_t i = 0; i < sizeof(inits) / sizeof(inits[0]); i++)
		init_rand(m, inits[i].name, inits[i].rank, inits[i].dims);
	for (int i = 0; i < 4; i++) {
		char out[8];
		snprintf(out, sizeof(out), "d%d", i);
		n = ours(m, "Dense", i == 3 ? "x,wt" : "x,w,b", out);
		attr_str(n, "activation", acts[i]);
		if (i == 3)
			attr_int(n, "transB", 1);
		gb_output(m, out);
	}
	attr_str(ours(m, "Dense", "x2,wl,bl", "dl"), "activation", "GeluTanh");
	attr_int(ours(m, "Dense", "x2,wlt,bl", "dlt"), "transB", 1);
	ours(m, "Dense", "x2,wl,bl,z2", "dz");
	n = ours(m, "Dense", "x2,wlt,,z2", "dzr");
	attr_int(n, "transB", 1);
	attr_str(n, "activation", "Relu");
	ours(m, "Gelu", "x", "g");
	attr_str(ours(m, "Gelu", "x", "gt"), "approximate", "tanh");
	ours(m, "LayerNormalization", "x,sc,bi", "l");
	for (const char *const *o = (const char *const[]){ "dl", "dlt", "dz", "dzr", "g", "gt",
							   "l", NULL }; *o; o++)
		gb_output(m, *o);
	mfs_tensor in[] = { rand_f32(3, d), rand_f32(3, d2), rand_f32(3, dz) };
	check(m, 3, in, 1e-4, true);
}

static void test_fused(void **state)
{
	(void)state;
	fused_check();
	setenv("MODELFS_OCL_DENSE", "own", 1);
	fused_check();
	setenv("MODELFS_OCL_DENSE", "clblast", 1);
	fused_check();
	unsetenv("MODELFS_OCL_DENSE");
}

/* Products of few rows (a decoder's step) take gemv_small_m: Dense of 1,
 * 6 and 8 rows with and without transB, bias, activation and residual Z,
 * 130 columns (a partial group of 16) and K of 33; MatMul of rows that
 * fold into one product, batched with a B per item (attention's
 * scores), and with one B broadcast over the batch.  A Transpose that
 * moves only dims of size 1 is a view of its input (the step's [B,1,H,D]
 * to [B,H,1,D]); one that moves others still copies. */
static void test_small_m(void **state)
{
	int64_t d1[] = { 1, 1, 33 }, d6[] = { 2, 3, 33 }, d8[] = { 1, 8, 33 }, dz[] = { 2, 3, 130 };
	int64_t dw[] = { 33, 130 }, dwt[] = { 130, 33 }, db[] = { 130 };
	int64_t dq[] = { 2, 3, 1, 16 }, dk[] = { 2, 3, 16, 21 }, dkb[] = { 16, 21 };
	int64_t dt[] = { 2, 1, 3, 4 };
	onnx_model *m = gb_new(17);
	onnx_node *n;
	(void)state;
	gb_input(m, "x1", MFS_DT_FLOAT, 3, d1);
	gb_input(m, "x6", MFS_DT_FLOAT, 3, d6);
	gb_input(m, "x8", MFS_DT_FLOAT, 3, d8);
	gb_input(m, "z", MFS_DT_FLOAT, 3, dz);
	gb_input(m, "q", MFS_DT_FLOAT, 4, dq);
	gb_input(m, "k", MFS_DT_FLOAT, 4, dk);
	gb_input(m, "t", MFS_DT_FLOAT, 4, dt);
	init_rand(m, "w", 2, dw);
	init_rand(m, "wt", 2, dwt);
	init_rand(m, "b", 1, db);
	init_rand(m, "kb", 2, dkb);
	attr_str(ours(m, "Dense", "x1,w,b", "a1"), "activation", "GeluTanh");
	n = ours(m, "Dense", "x6,wt,b,z", "a6");
	attr_int(n, "transB", 1);
	attr_str(n, "activation", "Relu");
	ours(m, "Dense", "x6,w,,z", "a6z");
	n = ours(m, "Dense", "x8,wt", "a8");
	attr_int(n, "transB", 1);
	node(m, "MatMul", "x6,w", "m6");
	node(m, "MatMul", "q,k", "qk");
	node(m, "MatMul", "q,kb", "qkb");
	attr_ints(node(m, "Transpose", "t", "tv"), "perm", 4, (int64_t[]){ 0, 2, 1, 3 });
	node(m, "Relu", "tv", "tr");
	attr_ints(node(m, "Transpose", "t", "tc"), "perm", 4, (int64_t[]){ 0, 3, 1, 2 });
	for (const char *const *o = (const char *const[]){ "a1", "a6", "a6z", "a8", "m6", "qk",
							   "qkb", "tr", "tc", NULL }; *o; o++)
		gb_output(m, *o);
	mfs_tensor in[] = { rand_f32(3, d1), rand_f32(3, d6), rand_f32(3, d8), rand_f32(3, dz),
			    rand_f32(4, dq), rand_f32(4, dk), rand_f32(4, dt) };
	check(m, 7, in, 1e-4, true);
}

/* Attention on the device: a padding mask broadcast over heads and query
 * rows (keep_if 1), a causal-style one given in full with keep_if 0, and
 * none; rows wider than a work group and narrower than one; layout 1,
 * separate and packed. */
static void test_attention(void **state)
{
	int64_t dq[] = { 2, 3, 5, 8 }, dk[] = { 2, 3, 8, 40 }, dv[] = { 2, 3, 40, 4 };
	int64_t dm[] = { 2, 1, 1, 40 }, dc[] = { 5, 40 }, dq2[] = { 3, 4, 6 }, dk2[] = { 3, 6, 3 };
	int64_t dv2[] = { 3, 3, 5 }, dqh[] = { 2, 5, 3, 8 }, dkh[] = { 2, 40, 3, 8 };
	int64_t dvh[] = { 2, 40, 3, 4 }, dqkv[] = { 2, 6, 3, 3, 8 };
	onnx_model *m = gb_new(17);
	onnx_node *n;
	mfs_tensor mask, causal;
	(void)state;
	gb_input(m, "q", MFS_DT_FLOAT, 4, dq);
	gb_input(m, "k", MFS_DT_FLOAT, 4, dk);
	gb_input(m, "v", MFS_DT_FLOAT, 4, dv);
	gb_input(m, "mask", MFS_DT_BOOL, 4, dm);
	gb_input(m, "causal", MFS_DT_BOOL, 2, dc);
	gb_input(m, "q2", MFS_DT_FLOAT, 3, dq2);
	gb_input(m, "k2", MFS_DT_FLOAT, 3, dk2);
	gb_input(m, "v2", MFS_DT_FLOAT, 3, dv2);
	gb_input(m, "qh", MFS_DT_FLOAT, 4, dqh);
	gb_input(m, "kh", MFS_DT_FLOAT, 4, dkh);
	gb_input(m, "vh", MFS_DT_FLOAT, 4, dvh);
	gb_input(m, "qkv", MFS_DT_FLOAT, 5, dqkv);
	n = ours(m, "Attention", "q,k,v,mask", "a");
	attr_float(n, "scale", 0.35f);
	attr_float(n, "fill", -10000.0f);
	n = ours(m, "Attention", "q,k,v,causal", "ac");
	attr_float(n, "fill", -3.4e38f);
	attr_int(n, "keep_if", 0);
	ours(m, "Attention", "q2,k2,v2", "a2");
	/* layout 1: Q [2, 5, 3, 8], K [2, 40, 3, 8], V [2, 40, 3, 4] where the
	 * projections wrote them, the padding mask; and Q, K, V as parts of
	 * one packed [2, 6, 3, 3, 8] */
	n = ours(m, "Attention", "qh,kh,vh,mask", "ah");
	attr_int(n, "layout", 1);
	attr_float(n, "fill", -10000.0f);
	n = ours(m, "Attention", "qkv,qkv,qkv", "ap");
	attr_int(n, "layout", 1);
	attr_float(n, "scale", 0.35f);
	for (int i = 0; i < 3; i++) {
		char part[8] = "q_part", parts[8] = "q_parts";
		part[0] = parts[0] = "qkv"[i];
		attr_int(n, part, 2 - i);   /* V first in the packing */
		attr_int(n, parts, 3);
	}
	gb_output(m, "a");
	gb_output(m, "ac");
	gb_output(m, "a2");
	gb_output(m, "ah");
	gb_output(m, "ap");
	assert_int_equal(mfs_tensor_alloc(&mask, MFS_DT_BOOL, &(mfs_shape){ .rank = 4,
		.dims = { 2, 1, 1, 40 } }, NULL), 0);
	for (int i = 0; i < 80; i++)
		((uint8_t *)mask.data)[i] = (i % 40) < (i < 40 ? 30 : 17);
	assert_int_equal(mfs_tensor_alloc(&causal, MFS_DT_BOOL, &(mfs_shape){ .rank = 2,
		.dims = { 5, 40 } }, NULL), 0);
	for (int i = 0; i < 200; i++)
		((uint8_t *)causal.data)[i] = i % 40 > 35 + i / 40;   /* masked: the future */
	mfs_tensor in[] = { rand_f32(4, dq), rand_f32(4, dk), rand_f32(4, dv), mask, causal,
			    rand_f32(3, dq2), rand_f32(3, dk2), rand_f32(3, dv2), rand_f32(4, dqh),
			    rand_f32(4, dkh), rand_f32(4, dvh), rand_f32(5, dqkv) };
	check(m, 12, in, 1e-4, true);
}

/* Group-1 convolutions on the implicit-GEMM kernels: every tile (130
 * output channels over 800 columns: partial tiles of each), strided and
 * dilated
 * windows, a batch-2 pointwise one, and a residual Add + Relu after it
 * (fused into FusedConv when the fusion pass takes it). */
static onnx_model *conv_graph(void)
{
	int64_t dx[] = { 2, 5, 20, 20 }, dw[] = { 130, 5, 3, 3 }, db[] = { 130 };
	onnx_model *m = gb_new(17);
	onnx_node *n;
	gb_input(m, "x", MFS_DT_FLOAT, 4, dx);
	init_rand(m, "w", 4, dw);
	init_rand(m, "b", 1, db);
	init_rand(m, "w2", 4, (int64_t[]){ 7, 130, 1, 1 });
	init_rand(m, "w3", 4, (int64_t[]){ 9, 130, 1, 1 });
	init_rand(m, "b3", 1, (int64_t[]){ 9 });
	init_rand(m, "w4", 4, (int64_t[]){ 9, 5, 3, 3 });
	n = node(m, "Conv", "x,w,b", "c1");
	attr_ints(n, "pads", 4, (int64_t[]){ 1, 1, 1, 1 });
	n = node(m, "Conv", "c1,w2", "c2");
	attr_ints(n, "strides", 2, (int64_t[]){ 2, 2 });
	node(m, "Conv", "c1,w3,b3", "c3");
	n = node(m, "Conv", "x,w4", "c4");
	attr_ints(n, "pads", 4, (int64_t[]){ 2, 2, 2, 2 });
	attr_ints(n, "dilations", 2, (int64_t[]){ 2, 2 });
	node(m, "Add", "c3,c4", "s");
	node(m, "Relu", "s", "r");
	gb_output(m, "c2");
	gb_output(m, "r");
	return m;
}

static void test_conv_igemm(void **state)
{
	int64_t dx[] = { 2, 5, 20, 20 };
	onnx_model *m = conv_graph();
	(void)state;
	mfs_tensor in[] = { rand_f32(4, dx) };
	check(m, 1, in, 1e-4, true);
	/* every tile forced (MODELFS_OCL_IGEMM): partial tiles of each, the
	 * 1x1 stride-1 layer's plain reads (c3) and the strided one's */
	static const char *const tiles[] = { "64", "128x64", "128" };
	for (int t = 0; t < 3; t++) {
		setenv("MODELFS_OCL_IGEMM", tiles[t], 1);
		m = conv_graph();
		in[0] = rand_f32(4, dx);
		check(m, 1, in, 1e-4, true);
	}
	unsetenv("MODELFS_OCL_IGEMM");
	/* the same through im2col + CLBlast (MODELFS_OCL_CONV=gemm) */
	setenv("MODELFS_OCL_CONV", "gemm", 1);
	m = conv_graph();
	in[0] = rand_f32(4, dx);
	check(m, 1, in, 1e-4, true);
	unsetenv("MODELFS_OCL_CONV");
}

/* Winograd F(2x2, 3x3) and F(4x4, 3x3): 3x3 stride-1 layers with 32 or
 * more channels in and out take it by default.  Odd output sizes (partial 2x2 tiles),
 * asymmetric pads, a bias, a residual Add + Relu (FusedConv's Z), and a
 * W that is an input (transformed on every run, not once): each checked
 * against the CPU engine; and the default's results differ in their last
 * bits from MODELFS_OCL_WINOGRAD=0's, so the test knows it ran. */
static onnx_model *wino_graph(void)
{
	int64_t dx[] = { 2, 40, 9, 11 }, dw[] = { 70, 40, 3, 3 }, dw2[] = { 70, 70, 3, 3 };
	int64_t dwv[] = { 34, 40, 3, 3 };
	onnx_model *m = gb_new(17);
	onnx_node *n;
	gb_input(m, "x", MFS_DT_FLOAT, 4, dx);
	gb_input(m, "wv", MFS_DT_FLOAT, 4, dwv);
	init_rand(m, "w", 4, dw);
	init_rand(m, "b", 1, (int64_t[]){ 70 });
	init_rand(m, "w2", 4, dw2);
	n = node(m, "Conv", "x,w,b", "c1");
	attr_ints(n, "pads", 4, (int64_t[]){ 1, 1, 1, 1 });
	n = node(m, "Conv", "c1,w2", "c2");
	attr_ints(n, "pads", 4, (int64_t[]){ 1, 1, 1, 1 });
	node(m, "Add", "c2,c1", "s");
	node(m, "Relu", "s", "r");
	n = node(m, "Conv", "c1,w2", "c3");
	attr_ints(n, "pads", 4, (int64_t[]){ 0, 1, 1, 0 });
	n = node(m, "Conv", "x,wv", "c5");
	attr_ints(n, "pads", 4, (int64_t[]){ 1, 1, 1, 1 });
	gb_output(m, "r");
	gb_output(m, "c3");
	gb_output(m, "c5");
	return m;
}

/* Run ins on e into got and compare with ref's outputs. */
static void run_compare(mfs_exec *e, mfs_tensor *ins, mfs_tensor *ref, int n_out,
			mfs_tensor *got, double tol)
{
	mfs_error err;
	if (mfs_exec_run(e, ins, got, &err))
		fail_msg("opencl run: %s", err.msg);
	compare_outputs(ref, got, n_out, tol);
}

static void test_conv_winograd(void **state)
{
	int64_t dx[] = { 2, 40, 9, 11 }, dwv[] = { 34, 40, 3, 3 };
	/* the default (32+ channels), then each tile forced */
	static const char *const modes[] = { NULL, "2", "4" };
	mfs_graph *cm = NULL;
	mfs_exec *ec = NULL, *ew = NULL, *ed = NULL;
	mfs_error err;
	mfs_tensor ref[3], gw[3], gd[3];
	(void)state;

	if (mfs_graph_compile(wino_graph(), "t", &cm, &err))
		fail_msg("compile: %s", err.msg);
	assert_int_equal(mfs_exec_new(cm, NULL, &ec, &err), 0);
	assert_int_equal(mfs_exec_new(cm, ocl, &ed, &err), 0);
	for (int mode = 0; mode < 3; mode++) {
		/* a context per mode: U is kept per node, made for one tile */
		assert_int_equal(mfs_exec_new(cm, ocl, &ew, &err), 0);
		for (int pass = 0; pass < 2; pass++) {
			mfs_tensor in[] = { rand_f32(4, dx), rand_f32(4, dwv) };
			assert_int_equal(mfs_exec_run(ec, in, ref, &err), 0);
			if (modes[mode])
				setenv("MODELFS_OCL_WINOGRAD", modes[mode], 1);
			else
				unsetenv("MODELFS_OCL_WINOGRAD");
			run_compare(ew, in, ref, 3, gw, 1e-4);
			setenv("MODELFS_OCL_WINOGRAD", "0", 1);
			run_compare(ed, in, ref, 3, gd, 1e-4);
			for (int k = 0; k < 3; k++) {
				/* every output went through a Winograd layer */
				assert_true(memcmp(gw[k].data, gd[k].data, gw[k].nbytes) != 0);
				mfs_tensor_release(&ref[k]);
				mfs_tensor_release(&gw[k]);
				mfs_tensor_release(&gd[k]);
			}
			mfs_tensor_release(&in[0]);
			mfs_tensor_release(&in[1]);
		}
		mfs_exec_free(ew);
	}
	unsetenv("MODELFS_OCL_WINOGRAD");
	mfs_exec_free(ed);
	mfs_exec_free(ec);
	mfs_graph_free(cm);
}

/* A variable batch: shapes inferred at run, re-planned per shape. */
static void test_dynamic_batch(void **state)
{
	int64_t d[] = { -1, 8 }, dw[] = { 8, 3 };
	(void)state;
	for (int b = 1; b <= 3; b += 2) {
		onnx_model *m = gb_new(17);
		gb_input(m, "x", MFS_DT_FLOAT, 2, d);
		init_rand(m, "w", 2, dw);
		gb_init_i64(m, "shape", 2, (int64_t[]){ -1, 3 });
		node(m, "MatMul", "x,w", "y");
		node(m, "Shape", "y", "s");
		node(m, "Reshape", "y,s", "z");
		node(m, "Softmax", "z", "o");
		gb_output(m, "o");
		mfs_tensor in[] = { rand_f32(2, (int64_t[]){ b, 8 }) };
		check(m, 1, in, 1e-5, false);
	}
}

/* Clip (min/max attributes) then Add, at opset `opset`, on both engines:
 * the outputs agree; *dev and *host are the OpenCL context's node counts
 * of one run. */
static void opset_counts(int64_t opset, uint64_t *dev, uint64_t *host)
{
	int64_t d[] = { 2, 3, 17 };
	onnx_model *m = gb_new(opset);
	mfs_graph *cm = NULL;
	mfs_exec *ec = NULL, *eo = NULL;
	mfs_tensor in[] = { rand_f32(3, d), rand_f32(3, d) }, ref, got;
	mfs_exec_stats st;
	mfs_error err;
	onnx_node *n;

	gb_input(m, "x", MFS_DT_FLOAT, 3, d);
	gb_input(m, "y", MFS_DT_FLOAT, 3, d);
	n = node(m, "Clip", "x", "c");
	gb_attr(n, "min", ONNX_ATTR_FLOAT)->f = -0.3f;
	gb_attr(n, "max", ONNX_ATTR_FLOAT)->f = 0.6f;
	node(m, "Add", "c,y", "s");
	gb_output(m, "s");
	if (mfs_graph_compile(m, "t", &cm, &err))
		fail_msg("compile: %s", err.msg);
	assert_int_equal(mfs_exec_new(cm, NULL, &ec, &err), 0);
	if (mfs_exec_new(cm, ocl, &eo, &err))
		fail_msg("exec_new: %s", err.msg);
	assert_int_equal(mfs_exec_run(ec, in, &ref, &err), 0);
	if (mfs_exec_run(eo, in, &got, &err))
		fail_msg("opencl run: %s", err.msg);
	compare_outputs(&ref, &got, 1, 1e-6);
	mfs_exec_get_stats(eo, &st);
	*dev = st.device_nodes;
	*host = st.host_nodes;
	mfs_tensor_release(&ref);
	mfs_tensor_release(&got);
	mfs_tensor_release(&in[0]);
	mfs_tensor_release(&in[1]);
	mfs_exec_free(eo);
	mfs_exec_free(ec);
	mfs_graph_free(cm);
}

/* The table's opset ranges (ocl_op_table.c) decide what the device
 * claims: Add's line starts at 7 (numpy broadcasting), so at opset 6 it
 * runs on the host while Clip's opset-1 line (attributes) still takes
 * the device; at 7 both are the device's. */
static void test_opset_range(void **state)
{
	uint64_t dev, host;
	(void)state;
	opset_counts(6, &dev, &host);
	assert_int_equal(dev, 1);
	assert_int_equal(host, 1);
	opset_counts(7, &dev, &host);
	assert_int_equal(dev, 2);
	assert_int_equal(host, 0);
}

static void test_no_device(void **state)
{
	mfs_backend *b = NULL;
	mfs_error err;
	(void)state;
	assert_int_equal(mfs_backend_opencl_new("no-such-device-xyz", &b, &err), -ENODEV);
	assert_null(b);
	assert_non_null(strstr(err.msg, "no-such-device-xyz"));
}

/* The kernels are built on first use, once (ocl_exec.h): a backend opened
 * and closed with no context builds nothing; prepare builds, and again is
 * a no-op; a CPU backend has no kernels to prepare. */
static void test_program_on_first_use(void **state)
{
	mfs_backend *b = NULL;
	mfs_error err;
	(void)state;
	assert_int_equal(mfs_backend_opencl_new(NULL, &b, &err), 0);
	mfs_backend_opencl_free(b);
	assert_int_equal(mfs_backend_opencl_new(NULL, &b, &err), 0);
	assert_int_equal(mfs_backend_opencl_prepare(b, &err), 0);
	assert_int_equal(mfs_backend_opencl_prepare(b, &err), 0);
	mfs_backend_opencl_free(b);
	assert_int_equal(mfs_backend_opencl_prepare(mfs_backend_cpu(), &err), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unary),
		cmocka_unit_test(test_binary_broadcast),
		cmocka_unit_test(test_data_movement),
		cmocka_unit_test(test_gather_out_of_range),
		cmocka_unit_test(test_rows),
		cmocka_unit_test(test_dense),
		cmocka_unit_test(test_fused),
		cmocka_unit_test(test_small_m),
		cmocka_unit_test(test_attention),
		cmocka_unit_test(test_conv_igemm),
		cmocka_unit_test(test_conv_winograd),
		cmocka_unit_test(test_dynamic_batch),
		cmocka_unit_test(test_opset_range),
		cmocka_unit_test(test_no_device),
		cmocka_unit_test(test_program_on_first_use),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

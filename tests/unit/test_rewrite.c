/* Unit tests for the graph rewrites of exec/graph/rewrite_*.c: each pattern,
 * built by hand the way exporters write it, compiles to the one fused
 * node and computes what the unfused graph computes (MFS_FUSE=0); near
 * misses are left alone. */
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

#define D 8           /* feature width */
#define ROWS 6        /* x is [2, 3, D] */

static const int64_t xdims[3] = { 2, 3, D };

static void scalar(onnx_model *m, const char *name, float v)
{
	const int64_t none[1] = { 1 };   /* rank 0: no dims are read */
	gb_init_f32(m, name, 0, none, &v);
}

static void vec(onnx_model *m, const char *name, int n, float base)
{
	float v[64];
	int64_t d = n;
	for (int i = 0; i < n; i++)
		v[i] = base + 0.1f * (float)((i * 5) % 7);
	gb_init_f32(m, name, 1, &d, v);
}

static void io(onnx_model *m, const char *out)
{
	gb_input(m, "x", MFS_DT_FLOAT, 3, xdims);
	gb_output(m, out);
}

/* nn.LayerNorm at opset 13: mean, Sub, Pow (or Mul d,d), mean, +eps, Sqrt,
 * Div, *g, +b. */
static onnx_model *layernorm_model(bool pow_form, const char *extra_output)
{
	onnx_model *m = gb_new(13);
	const int64_t last[1] = { -1 };
	io(m, "y");
	if (extra_output)
		gb_output(m, extra_output);
	scalar(m, "two", 2.0f);
	scalar(m, "eps", 1e-5f);
	vec(m, "g", D, 0.8f);
	vec(m, "b", D, -0.2f);
	attr_ints(gb_node(m, "", "ReduceMean", "mu", "x", "mu"), "axes", 1, last);
	gb_node(m, "", "Sub", "d", "x,mu", "d");
	if (pow_form)
		gb_node(m, "", "Pow", "sq", "d,two", "sq");
	else
		gb_node(m, "", "Mul", "sq", "d,d", "sq");
	attr_ints(gb_node(m, "", "ReduceMean", "var", "sq", "var"), "axes", 1, last);
	gb_node(m, "", "Add", "ve", "var,eps", "ve");
	gb_node(m, "", "Sqrt", "s", "ve", "s");
	gb_node(m, "", "Div", "n", "d,s", "n");
	gb_node(m, "", "Mul", "ng", "g,n", "ng");
	gb_node(m, "", "Add", "y", "ng,b", "y");
	return m;
}

/* 0.5 x (1 + erf(x / sqrt 2)), as the encoder export writes it. */
static onnx_model *gelu_erf_model(void)
{
	onnx_model *m = gb_new(13);
	io(m, "y");
	scalar(m, "half", 0.5f);
	scalar(m, "sqrt2", 1.4142135f);
	scalar(m, "one", 1.0f);
	gb_node(m, "", "Mul", "h", "x,half", "h");
	gb_node(m, "", "Div", "t", "x,sqrt2", "t");
	gb_node(m, "", "Erf", "e", "t", "e");
	gb_node(m, "", "Add", "a", "e,one", "a");
	gb_node(m, "", "Mul", "y", "h,a", "y");
	return m;
}

/* The tanh form as GPT-2 exports it: x*x*x, *0.044715, +x, *sqrt(2/pi),
 * Tanh, 1+, *x, 0.5*. */
static onnx_model *gelu_tanh_model(void)
{
	onnx_model *m = gb_new(17);
	io(m, "y");
	scalar(m, "c3", 0.044715f);
	scalar(m, "k", 0.7978846f);
	scalar(m, "one", 1.0f);
	scalar(m, "half", 0.5f);
	gb_node(m, "", "Mul", "x2", "x,x", "x2");
	gb_node(m, "", "Mul", "x3", "x,x2", "x3");
	gb_node(m, "", "Mul", "c", "c3,x3", "c");
	gb_node(m, "", "Add", "u", "x,c", "u");
	gb_node(m, "", "Mul", "v", "k,u", "v");
	gb_node(m, "", "Tanh", "t", "v", "t");
	gb_node(m, "", "Add", "a", "one,t", "a");
	gb_node(m, "", "Mul", "p", "x,a", "p");
	gb_node(m, "", "Mul", "y", "half,p", "y");
	return m;
}

/* A linear layer: MatMul(x, W [D, 5]) + b, then Relu or GELU (erf). */
static onnx_model *dense_model(const char *act)
{
	onnx_model *m = gb_new(13);
	float w[D * 5];
	const int64_t wd[2] = { D, 5 };
	for (int i = 0; i < D * 5; i++)
		w[i] = (float)((i * 7) % 11) / 5.0f - 1.0f;
	io(m, "y");
	gb_init_f32(m, "w", 2, wd, w);
	vec(m, "b", 5, -0.3f);
	gb_node(m, "", "MatMul", "mm", "x,w", "mm");
	gb_node(m, "", "Add", "z", "b,mm", *act ? "z" : "y");
	if (!strcmp(act, "Relu")) {
		gb_node(m, "", "Relu", "r", "z", "y");
	} else if (!strcmp(act, "Gelu")) {
		scalar(m, "half", 0.5f);
		scalar(m, "r2", 0.70710678f);
		scalar(m, "one", 1.0f);
		gb_node(m, "", "Mul", "t", "z,r2", "t");
		gb_node(m, "", "Erf", "e", "t", "e");
		gb_node(m, "", "Add", "a", "e,one", "a");
		gb_node(m, "", "Mul", "p", "a,z", "p");
		gb_node(m, "", "Mul", "y", "p,half", "y");
	}
	return m;
}

/* A linear layer and its residual: MatMul(x, W) + b + r, r = MatMul(x, W2)
 * [2, 3, 5] (a transformer's output projection and skip connection), or
 * with bcast r = MatMul(ReduceMean(x, axis 0), W2) [3, 5], which Add
 * broadcasts. */
static onnx_model *dense_resid_model(bool bcast)
{
	onnx_model *m = gb_new(13);
	float w[D * 5], w2[D * 5];
	const int64_t wd[2] = { D, 5 };
	for (int i = 0; i < D * 5; i++) {
		w[i] = (float)((i * 7) % 11) / 5.0f - 1.0f;
		w2[i] = (float)((i * 3) % 13) / 6.0f - 1.0f;
	}
	io(m, "y");
	gb_init_f32(m, "w", 2, wd, w);
	gb_init_f32(m, "w2", 2, wd, w2);
	vec(m, "b", 5, -0.3f);
	if (bcast) {
		onnx_node *rm = gb_node(m, "", "ReduceMean", "rm", "x", "xm");
		attr_ints(rm, "axes", 1, (const int64_t[]){ 0 });
		attr_int(rm, "keepdims", 0);
	}
	gb_node(m, "", "MatMul", "r", bcast ? "xm,w2" : "x,w2", "r");
	gb_node(m, "", "MatMul", "mm", "x,w", "mm");
	gb_node(m, "", "Add", "z", "mm,b", "z");
	gb_node(m, "", "Add", "y", "r,z", "y");
	return m;
}

/* MatMul(x, W [D, 5]) without a bias, then Relu. */
static onnx_model *matmul_relu(void)
{
	onnx_model *m = gb_new(13);
	float w[D * 5];
	const int64_t wd[2] = { D, 5 };
	for (int i = 0; i < D * 5; i++)
		w[i] = (float)((i * 5) % 9) / 4.0f - 1.0f;
	io(m, "y");
	gb_init_f32(m, "w", 2, wd, w);
	gb_node(m, "", "MatMul", "mm", "x,w", "mm");
	gb_node(m, "", "Relu", "r", "mm", "y");
	return m;
}

/* Gemm(Flatten(x), W [5, D], b, transB) + Relu, as a PyTorch Linear at
 * the MLP's opset exports it. */
static onnx_model *gemm_relu_model(void)
{
	onnx_model *m = gb_new(13);
	float w[D * 5];
	const int64_t wd[2] = { 5, D };
	for (int i = 0; i < D * 5; i++)
		w[i] = (float)((i * 3) % 7) / 3.0f - 1.0f;
	io(m, "y");
	gb_init_f32(m, "w", 2, wd, w);
	vec(m, "b", 5, -0.3f);
	attr_int(gb_node(m, "", "Flatten", "f", "x", "f"), "axis", 2);
	attr_int(gb_node(m, "", "Gemm", "gm", "f,w,b", "gm"), "transB", 1);
	gb_node(m, "", "Relu", "y", "gm", "y");
	return m;
}

/* Attention over x [2, 3, D] as Q and V, Transpose(x) as Kt: MatMul,
 * Div by sqrt(D), optionally Where with a causal bool mask [3, 3] (in
 * either operand order), Softmax, MatMul. */
static onnx_model *attention_model(int where)
{
	onnx_model *m = gb_new(13);
	const int64_t perm[3] = { 0, 2, 1 };
	io(m, "y");
	scalar(m, "c", 2.828427f);
	scalar(m, "neg", -1e4f);
	attr_ints(gb_node(m, "", "Transpose", "kt", "x", "kt"), "perm", 3, perm);
	gb_node(m, "", "MatMul", "s", "x,kt", "s");
	gb_node(m, "", "Div", "sd", "s,c", "sd");
	if (where) {
		onnx_graph *g = m->graph;
		mfs_shape cs = { 2, { 3, 3 } };
		g->initializers = realloc(g->initializers, (size_t)(g->n_initializers + 1) *
					  sizeof(*g->initializers));
		onnx_initializer *in = &g->initializers[g->n_initializers++];
		in->name = strdup("causal");
		assert_int_equal(mfs_tensor_alloc(&in->tensor, MFS_DT_BOOL, &cs, NULL), 0);
		for (int i = 0; i < 9; i++)   /* keep j <= i (where 1) or mask it (2) */
			((uint8_t *)in->tensor.data)[i] = (i % 3 <= i / 3) == (where == 1);
		gb_node(m, "", "Where", "sw", where == 1 ? "causal,sd,neg" : "causal,neg,sd", "sw");
	}
	onnx_node *sm = gb_node(m, "", "Softmax", "p", where ? "sw" : "sd", "p");
	attr_int(sm, "axis", -1);
	gb_node(m, "", "MatMul", "y", "p,x", "y");
	return m;
}


/* Conv weights "w" [3, 3, 3] (1-D) or [3, 3, 3, 3] (2-D) and bias "cb". */
static void conv_weights(onnx_model *m, int nsp)
{
	float w[81];
	const int64_t wd[4] = { 3, 3, 3, 3 };
	for (int i = 0; i < 81; i++)
		w[i] = (float)((i * 7) % 13) / 13.0f - 0.45f;
	gb_init_f32(m, "w", 2 + nsp, wd, w);
	vec(m, "cb", 3, -0.2f);
}

static onnx_node *conv(onnx_model *m, const char *name, const char *in, const char *out, int nsp)
{
	const int64_t pads[4] = { 1, 1, 1, 1 };
	char ins[64];
	snprintf(ins, sizeof(ins), "%s,w,cb", in);
	onnx_node *n = gb_node(m, "", "Conv", name, ins, out);
	attr_ints(n, "pads", 2 * nsp, pads);
	return n;
}

/* Residual connections after a convolution on x [2, 3, 8] (1-D, pads 1:
 * the output has x's shape):
 *   0: Relu(Add(Conv(x), x))       the identity block
 *   1: Add(x, Conv(x))             no Relu, operands swapped
 *   2: Relu(Add(Conv(x), mean0(x)))  Z [1, 3, 8] broadcast over the batch
 *   3: Relu(Add(Conv(mean0(x)), x))  the convolution's [1, 3, 8] broadcast
 *   4: 2-D, NHWC inside: x as [2, 3, 2, 4], a = Conv(x), Relu(Add(Conv(a),
 *      a)) into a last Conv, back to [2, 3, 8]
 *   5: Add(Conv(x), constant [3, 1])   a bias: left alone
 *   7: as 4, the block widening 3 -> 6 channels with 1x1 convs: Z =
 *      Conv6(x) and the fused Conv6(a) read a, 3 channels, so Z's shape
 *      is not X's (kept NHWC all the same: MFS_OP_NHWC_ANY_INPUT)
 *   6: Relu(Add(Conv(x), x)) with Conv(x) also a graph output: left alone */
static onnx_model *residual_model(int v)
{
	onnx_model *m = gb_new(13);
	const int64_t axis0[1] = { 0 };
	io(m, "y");
	conv_weights(m, v == 4 || v == 7 ? 2 : 1);
	if (v == 6)
		gb_output(m, "c");
	switch (v) {
	case 0: case 6:
		conv(m, "conv", "x", "c", 1);
		gb_node(m, "", "Add", "add", "c,x", "s");
		gb_node(m, "", "Relu", "relu", "s", "y");
		break;
	case 1:
		conv(m, "conv", "x", "c", 1);
		gb_node(m, "", "Add", "add", "x,c", "y");
		break;
	case 2: case 3:
		attr_ints(gb_node(m, "", "ReduceMean", "mean", "x", "xm"), "axes", 1, axis0);
		conv(m, "conv", v == 2 ? "x" : "xm", "c", 1);
		gb_node(m, "", "Add", "add", v == 2 ? "c,xm" : "c,x", "s");
		gb_node(m, "", "Relu", "relu", "s", "y");
		break;
	case 4: {
		const int64_t s4[1] = { 4 }, s3[1] = { 3 };
		const int64_t r4[4] = { 2, 3, 2, 4 }, r3[3] = { 2, 3, 8 };
		gb_init(m, "s4", MFS_DT_INT64, 1, s4, r4);
		gb_init(m, "s3", MFS_DT_INT64, 1, s3, r3);
		gb_node(m, "", "Reshape", "in", "x,s4", "xr");
		conv(m, "conva", "xr", "a", 2);
		conv(m, "convb", "a", "b", 2);
		gb_node(m, "", "Add", "add", "b,a", "s");
		gb_node(m, "", "Relu", "relu", "s", "r");
		conv(m, "convc", "r", "c", 2);
		gb_node(m, "", "Reshape", "out", "c,s3", "y");
		break;
	}
	case 7: {
		const int64_t s4[1] = { 4 }, s3[1] = { 3 };
		const int64_t r4[4] = { 2, 3, 2, 4 }, r3[3] = { 2, 3, 8 };
		const int64_t up[4] = { 6, 3, 1, 1 }, down[4] = { 3, 6, 1, 1 };
		float wu[18], wd[18];
		for (int i = 0; i < 18; i++) {
			wu[i] = (float)((i * 5) % 7) / 7.0f - 0.4f;
			wd[i] = (float)((i * 3) % 11) / 11.0f - 0.5f;
		}
		gb_init(m, "s4", MFS_DT_INT64, 1, s4, r4);
		gb_init(m, "s3", MFS_DT_INT64, 1, s3, r3);
		gb_init_f32(m, "wu", 4, up, wu);
		gb_init_f32(m, "wd", 4, down, wd);
		gb_node(m, "", "Reshape", "in", "x,s4", "xr");
		conv(m, "conva", "xr", "a", 2);
		gb_node(m, "", "Conv", "convz", "xr,wu", "z");
		gb_node(m, "", "Conv", "convb", "a,wu", "b");
		gb_node(m, "", "Add", "add", "b,z", "s");
		gb_node(m, "", "Relu", "relu", "s", "r");
		gb_node(m, "", "Conv", "convc", "r,wd", "c");
		gb_node(m, "", "Reshape", "out", "c,s3", "y");
		break;
	}
	case 5: {
		const int64_t cd[2] = { 3, 1 };
		const float k[3] = { 0.5f, -1.0f, 2.0f };
		gb_init_f32(m, "k", 2, cd, k);
		conv(m, "conv", "x", "c", 1);
		gb_node(m, "", "Add", "add", "c,k", "y");
		break;
	}
	}
	return m;
}

/* Compile (with or without the rewrites) and run on a fixed x; returns
 * the number of nodes left to run and fills out (n values). */
static int run(onnx_model *m, bool fuse, float *out, int64_t n, const char **first_op)
{
	mfs_error err;
	mfs_graph *g;
	mfs_exec *e;
	mfs_tensor in = { 0 }, y[2] = { { 0 } };
	mfs_shape xs = { 3, { 2, 3, D } };

	if (!fuse)
		setenv("MFS_FUSE", "0", 1);
	int rc = mfs_graph_compile(m, "rewrite", &g, &err);
	unsetenv("MFS_FUSE");
	if (rc)
		print_error("%s\n", err.msg);
	assert_int_equal(rc, 0);
	int nodes = g->n_nodes;
	if (first_op)
		*first_op = g->nodes[0].onnx->op_type;   /* valid until the free */
	assert_int_equal(mfs_exec_new(g, NULL, &e, &err), 0);
	assert_int_equal(mfs_tensor_alloc(&in, MFS_DT_FLOAT, &xs, &err), 0);
	for (int i = 0; i < ROWS * D; i++)
		((float *)in.data)[i] = (float)((i * 13) % 17) / 4.0f - 2.0f;
	rc = mfs_exec_run(e, &in, y, &err);
	if (rc)
		print_error("%s\n", err.msg);
	assert_int_equal(rc, 0);
	assert_int_equal(mfs_shape_numel(&y[0].shape), n);
	memcpy(out, y[0].data, (size_t)n * sizeof(float));
	mfs_tensor_release(&in);
	mfs_tensor_release(&y[0]);
	mfs_tensor_release(&y[1]);
	mfs_exec_free(e);
	mfs_graph_free(g);
	return nodes;
}

/* Fused and unfused agree within tol; the fused graph is `nodes` nodes,
 * the last of type op. */
static void check_n(onnx_model *(*make)(void), const char *op, int64_t n, float tol, int nodes)
{
	float a[ROWS * D], b[ROWS * D];
	const char *first = NULL;
	int unfused = run(make(), false, a, n, NULL);
	onnx_model *m = make();
	mfs_error err;
	mfs_graph *g;
	assert_int_equal(mfs_graph_compile(m, "rewrite", &g, &err), 0);
	assert_int_equal(g->n_nodes, nodes);
	assert_string_equal(g->nodes[nodes - 1].onnx->op_type, op);
	assert_string_equal(g->nodes[nodes - 1].onnx->domain, "com.modelfs");
	mfs_graph_free(g);
	assert_int_equal(run(make(), true, b, n, &first), nodes);
	assert_true(unfused > nodes);
	for (int64_t i = 0; i < n; i++)
		if (fabsf(a[i] - b[i]) > tol)
			fail_msg("%s: element %lld: unfused %g, fused %g", op, (long long)i,
				 (double)a[i], (double)b[i]);
}

static void check(onnx_model *(*make)(void), const char *op, int64_t n, float tol)
{
	check_n(make, op, n, tol, 1);
}

static onnx_model *ln_mul(void) { return layernorm_model(false, NULL); }
static onnx_model *ln_pow(void) { return layernorm_model(true, NULL); }
static onnx_model *dense_plain(void) { return dense_model(""); }
static onnx_model *dense_relu(void) { return dense_model("Relu"); }
static onnx_model *dense_gelu(void) { return dense_model("Gelu"); }
static onnx_model *dense_resid(void) { return dense_resid_model(false); }
static onnx_model *dense_resid_bcast(void) { return dense_resid_model(true); }

static onnx_model *attn_plain(void) { return attention_model(0); }
static onnx_model *attn_keep(void) { return attention_model(1); }
static onnx_model *attn_fill(void) { return attention_model(2); }

static void test_attention(void **st)
{
	(void)st;
	/* Transpose (Kt) + Attention */
	check_n(attn_plain, "Attention", ROWS * D, 1e-5f, 2);
	check_n(attn_keep, "Attention", ROWS * D, 1e-5f, 2);
	check_n(attn_fill, "Attention", ROWS * D, 1e-5f, 2);
}

/* Attention fed the way exporters write multi-head attention over x [2,
 * 3, D] with 2 heads of 4 (the attention_layout pass reads the
 * projections in place, exec/graph/rewrite_attention.c):
 *   0: separate projections: Q and V = Transpose(Reshape(x), [0,2,1,3]),
 *      K = Reshape(2x) transposed by [0,2,3,1]
 *   1: as 0, K transposed by [0,2,1,3] then [0,1,3,2], a causal Where
 *   2: one packed QKV projection x W [D, 3D] reshaped to [2, 3, 3, 2, 4],
 *      Transpose [2,0,3,1,4], Split into ones, Squeeze, K's last two dims
 *      swapped; Where with the fill first (keep_if 0)
 *   3: as 2 with Gather(0 / 1 / 2) in place of Split and Squeeze
 *   4: as 0 with the attention's [2, 2, 3, 4] output a graph output too:
 *      left in layout 0
 *   5: as 0 with the output transposed by [0,1,3,2]: left in layout 0
 * The output goes back through Transpose [0,2,1,3] and Reshape [2, 3, D]. */
static onnx_model *attention_heads_model(int form)
{
	onnx_model *m = gb_new(13);
	const int64_t p_heads[4] = { 0, 2, 1, 3 }, p_kt[4] = { 0, 2, 3, 1 };
	const int64_t p_last2[4] = { 0, 1, 3, 2 }, p_packed[5] = { 2, 0, 3, 1, 4 };
	const int64_t one[1] = { 1 }, four[1] = { 4 }, five[1] = { 5 }, three[1] = { 3 };
	const int64_t s4[4] = { 2, 3, 2, 4 }, s5[5] = { 2, 3, 3, 2, 4 }, s3[3] = { 2, 3, D };
	const int64_t ones[3] = { 1, 1, 1 }, zero[1] = { 0 }, wd[2] = { D, 3 * D };
	bool packed = form == 2 || form == 3;

	io(m, "y");
	gb_init(m, "s4", MFS_DT_INT64, 1, four, s4);
	gb_init(m, "s5", MFS_DT_INT64, 1, five, s5);
	gb_init(m, "s3", MFS_DT_INT64, 1, three, s3);
	scalar(m, "c", 2.0f);
	scalar(m, "two", 2.0f);
	scalar(m, "neg", -1e4f);
	if (form == 1 || packed) {
		mfs_shape cs = { 2, { 3, 3 } };
		onnx_graph *g = m->graph;
		g->initializers = realloc(g->initializers, (size_t)(g->n_initializers + 1) *
					  sizeof(*g->initializers));
		onnx_initializer *in = &g->initializers[g->n_initializers++];
		in->name = strdup("causal");
		assert_int_equal(mfs_tensor_alloc(&in->tensor, MFS_DT_BOOL, &cs, NULL), 0);
		for (int i = 0; i < 9; i++)
			((uint8_t *)in->tensor.data)[i] = (i % 3 <= i / 3) == (form == 1);
	}
	if (packed) {
		float w[D * 3 * D];
		for (int i = 0; i < D * 3 * D; i++)
			w[i] = (float)((i * 7) % 13) / 13.0f - 0.45f;
		gb_init_f32(m, "w", 2, wd, w);
		gb_node(m, "", "MatMul", "proj", "x,w", "qkv");
		gb_node(m, "", "Reshape", "r5", "qkv,s5", "qkv5");
		attr_ints(gb_node(m, "", "Transpose", "tp", "qkv5", "t5"), "perm", 5, p_packed);
		if (form == 2) {
			gb_init(m, "ones", MFS_DT_INT64, 1, three, ones);
			gb_init(m, "ax0", MFS_DT_INT64, 1, one, zero);
			gb_node(m, "", "Split", "split", "t5,ones", "q0,k0,v0");
			gb_node(m, "", "Squeeze", "sq", "q0,ax0", "q");
			gb_node(m, "", "Squeeze", "sk", "k0,ax0", "k");
			gb_node(m, "", "Squeeze", "sv", "v0,ax0", "v");
		} else {
			const char *gi[3] = { "i0", "i1", "i2" };
			for (int64_t i = 0; i < 3; i++)
				gb_init(m, gi[i], MFS_DT_INT64, 0, one, &i);
			gb_node(m, "", "Gather", "gq", "t5,i0", "q");
			gb_node(m, "", "Gather", "gk", "t5,i1", "k");
			gb_node(m, "", "Gather", "gv", "t5,i2", "v");
		}
		attr_ints(gb_node(m, "", "Transpose", "tk", "k", "kt"), "perm", 4, p_last2);
	} else {
		gb_node(m, "", "Reshape", "rx", "x,s4", "xr");
		gb_node(m, "", "Mul", "k2", "x,two", "x2");
		gb_node(m, "", "Reshape", "rk", "x2,s4", "kr");
		attr_ints(gb_node(m, "", "Transpose", "tq", "xr", "q"), "perm", 4, p_heads);
		attr_ints(gb_node(m, "", "Transpose", "tv", "xr", "v"), "perm", 4, p_heads);
		if (form == 1) {
			attr_ints(gb_node(m, "", "Transpose", "tk0", "kr", "k"), "perm", 4, p_heads);
			attr_ints(gb_node(m, "", "Transpose", "tk", "k", "kt"), "perm", 4, p_last2);
		} else {
			attr_ints(gb_node(m, "", "Transpose", "tk", "kr", "kt"), "perm", 4, p_kt);
		}
	}
	gb_node(m, "", "MatMul", "s", "q,kt", "s");
	gb_node(m, "", "Div", "sd", "s,c", "sd");
	const char *sm_in = "sd";
	if (form == 1)
		gb_node(m, "", "Where", "sw", "causal,sd,neg", sm_in = "sw");
	else if (packed)
		gb_node(m, "", "Where", "sw", "causal,neg,sd", sm_in = "sw");
	attr_int(gb_node(m, "", "Softmax", "p", sm_in, "p"), "axis", -1);
	gb_node(m, "", "MatMul", "o", "p,v", "o");
	if (form == 4)
		gb_output(m, "o");
	attr_ints(gb_node(m, "", "Transpose", "to", "o", "ot"), "perm", 4,
		  form == 5 ? p_last2 : p_heads);
	gb_node(m, "", "Reshape", "ry", "ot,s3", "y");
	return m;
}

static int heads_form;
static onnx_model *attn_heads(void) { return attention_heads_model(heads_form); }

/* The compiled graph's Attention node has layout want, and with layout 1
 * no Transpose, Split, Squeeze or Gather is left; fused and unfused agree. */
static void check_heads(int form, int want)
{
	float a[ROWS * D], b[ROWS * D];
	mfs_error err;
	mfs_graph *g;
	int found = 0;

	heads_form = form;
	assert_int_equal(mfs_graph_compile(attn_heads(), "rewrite", &g, &err), 0);
	for (int i = 0; i < g->n_nodes; i++) {
		const onnx_node *n = g->nodes[i].onnx;
		if (!strcmp(n->op_type, "Attention")) {
			found++;
			assert_int_equal(onnx_attr_int(n, "layout", 0), want);
		}
		if (want && (!strcmp(n->op_type, "Transpose") || !strcmp(n->op_type, "Split") ||
			     !strcmp(n->op_type, "Squeeze") || !strcmp(n->op_type, "Gather")))
			fail_msg("form %d: a %s is left", form, n->op_type);
	}
	assert_int_equal(found, 1);
	mfs_graph_free(g);
	run(attn_heads(), false, a, ROWS * D, NULL);
	run(attn_heads(), true, b, ROWS * D, NULL);
	for (int i = 0; i < ROWS * D; i++)
		if (fabsf(a[i] - b[i]) > 1e-5f)
			fail_msg("form %d: element %d: unfused %g, fused %g", form, i, (double)a[i],
				 (double)b[i]);
}

static void test_attention_layout(void **st)
{
	(void)st;
	for (int form = 0; form < 6; form++)
		check_heads(form, form < 4);
	/* MFS_FUSE_SKIP names the pass: layout 0, the same answer */
	setenv("MFS_FUSE_SKIP", "attention_layout", 1);
	check_heads(2, 0);
	unsetenv("MFS_FUSE_SKIP");
}

static void test_layernorm(void **st)
{
	(void)st;
	check(ln_mul, "LayerNormalization", ROWS * D, 1e-5f);
	check(ln_pow, "LayerNormalization", ROWS * D, 1e-5f);
}

static void test_gelu(void **st)
{
	(void)st;
	check(gelu_erf_model, "Gelu", ROWS * D, 1e-5f);
	check(gelu_tanh_model, "Gelu", ROWS * D, 1e-5f);
}

static void test_dense(void **st)
{
	(void)st;
	check(dense_plain, "Dense", ROWS * 5, 1e-5f);
	check(dense_relu, "Dense", ROWS * 5, 1e-5f);
	check(dense_gelu, "Dense", ROWS * 5, 1e-5f);
	check_n(gemm_relu_model, "Dense", ROWS * 5, 1e-5f, 2);   /* Flatten, Dense */
	/* the residual Add taken in: MatMul (r), Dense; ReduceMean, MatMul,
	 * Dense with a Z that broadcasts */
	check_n(dense_resid, "Dense", ROWS * 5, 1e-5f, 2);
	check_n(dense_resid_bcast, "Dense", ROWS * 5, 1e-5f, 3);
	/* MatMul without a bias: a Dense of two inputs */
	check(matmul_relu, "Dense", ROWS * 5, 1e-5f);
	/* each path alone (by default prepare times both and keeps one) */
	static const char *const paths[] = { "sgemm", "onednn" };
	for (int p = 0; p < 2; p++) {
		setenv("MFS_DENSE", paths[p], 1);
		check(dense_gelu, "Dense", ROWS * 5, 1e-5f);
		check_n(gemm_relu_model, "Dense", ROWS * 5, 1e-5f, 2);
		check_n(dense_resid, "Dense", ROWS * 5, 1e-5f, 2);
		check_n(dense_resid_bcast, "Dense", ROWS * 5, 1e-5f, 3);
	}
	unsetenv("MFS_DENSE");
}

/* FusedConv nodes with a residual input (Z) in m compiled; *nhwc (when
 * not NULL) gets how many of their Z are planned NHWC. */
static int residual_nodes_nhwc(onnx_model *m, int *nhwc)
{
	mfs_error err;
	mfs_graph *g;
	int n = 0;
	assert_int_equal(mfs_graph_compile(m, "rewrite", &g, &err), 0);
	if (nhwc)
		*nhwc = 0;
	for (int i = 0; i < g->n_nodes; i++) {
		const mfs_node *nd = &g->nodes[i];
		if (strcmp(nd->onnx->op_type, "FusedConv") || nd->n_in != 4 || nd->in[3] < 0)
			continue;
		n++;
		if (nhwc && g->values[nd->in[3]].layout != MFS_LAYOUT_PLAIN)
			(*nhwc)++;
	}
	mfs_graph_free(g);
	return n;
}

static int residual_nodes(onnx_model *m)
{
	return residual_nodes_nhwc(m, NULL);
}

static void check_residual(int v, int want)
{
	float a[ROWS * D], b[ROWS * D];
	assert_int_equal(residual_nodes(residual_model(v)), want);
	int unfused = run(residual_model(v), false, a, ROWS * D, NULL);
	int fused = run(residual_model(v), true, b, ROWS * D, NULL);
	assert_int_equal(unfused - fused, want ? (v == 1 ? 1 : 2) : 0);
	for (int i = 0; i < ROWS * D; i++)
		if (fabsf(a[i] - b[i]) > 1e-5f)
			fail_msg("residual %d: element %d: unfused %g, fused %g", v, i,
				 (double)a[i], (double)b[i]);
}

/* Conv + Add (+ Relu): fused when the sum's other operand fits and when
 * it broadcasts (either way; FusedConv's run-time path), on both of the
 * convolution's paths; not with a constant operand or a convolution
 * output read elsewhere, nor under MFS_FUSE=0 or MFS_FUSE_SKIP=residual. */
static void test_residual(void **st)
{
	(void)st;
	for (int path = 0; path < 2; path++) {
		if (path)
			setenv("MFS_CONV", "im2col", 1);
		for (int v = 0; v <= 4; v++)
			check_residual(v, 1);
		check_residual(7, 1);
		check_residual(5, 0);
		check_residual(6, 0);
	}
	unsetenv("MFS_CONV");
	/* Z stays in a convolution's layout (NHWC, or blocked: graph.c
	 * plan_block16) between the convolutions, also when it is wider
	 * than the fused convolution's X (7) */
	int nhwc;
	assert_int_equal(residual_nodes_nhwc(residual_model(4), &nhwc), 1);
	assert_int_equal(nhwc, 1);
	assert_int_equal(residual_nodes_nhwc(residual_model(7), &nhwc), 1);
	assert_int_equal(nhwc, 1);
	setenv("MFS_FUSE", "0", 1);
	assert_int_equal(residual_nodes(residual_model(0)), 0);
	unsetenv("MFS_FUSE");
	/* MFS_FUSE_SKIP leaves out the pass named, and only that one */
	setenv("MFS_FUSE_SKIP", "dense,residual", 1);
	assert_int_equal(residual_nodes(residual_model(0)), 0);
	setenv("MFS_FUSE_SKIP", "residual1,dense", 1);
	assert_int_equal(residual_nodes(residual_model(0)), 1);
	unsetenv("MFS_FUSE_SKIP");
}

/* A convolution gated by its own activation on x [2, 3, 8] (rewrite_swish.c):
 *   0: Mul(c, Sigmoid(c))                  SiLU: FusedConv "Swish"
 *   1: Mul(HardSigmoid(c), c), alpha 1/6   HardSwish, operands swapped
 *   2: as 1 with HardSigmoid's default alpha 0.2: left alone
 *   3: as 0 with the Sigmoid also a graph output: left alone */
static onnx_model *swish_model(int v)
{
	onnx_model *m = gb_new(13);
	io(m, "y");
	conv_weights(m, 1);
	if (v == 3)
		gb_output(m, "s");
	conv(m, "conv", "x", "c", 1);
	if (v == 0 || v == 3) {
		gb_node(m, "", "Sigmoid", "sig", "c", "s");
		gb_node(m, "", "Mul", "mul", "c,s", "y");
		return m;
	}
	onnx_node *h = gb_node(m, "", "HardSigmoid", "hsig", "c", "s");
	if (v == 1) {
		gb_attr(h, "alpha", ONNX_ATTR_FLOAT)->f = 1.0f / 6.0f;
		gb_attr(h, "beta", ONNX_ATTR_FLOAT)->f = 0.5f;
	}
	gb_node(m, "", "Mul", "mul", "s,c", "y");
	return m;
}

/* Conv + x * Sigmoid(x) or x * HardSigmoid(x) becomes one FusedConv, on
 * both of the convolution's paths, with the unfused results; not with
 * another HardSigmoid, nor with the gate read elsewhere. */
static void test_swish(void **st)
{
	(void)st;
	float a[ROWS * D], b[ROWS * D];
	for (int path = 0; path < 2; path++) {
		if (path)
			setenv("MFS_CONV", "im2col", 1);
		for (int v = 0; v < 3; v++) {
			int unfused = run(swish_model(v), false, a, ROWS * D, NULL);
			int fused = run(swish_model(v), true, b, ROWS * D, NULL);
			assert_int_equal(unfused - fused, v < 2 ? 2 : 0);
			for (int i = 0; i < ROWS * D; i++)
				if (fabsf(a[i] - b[i]) > 1e-5f)
					fail_msg("swish %d: element %d: unfused %g, fused %g", v, i,
						 (double)a[i], (double)b[i]);
		}
	}
	unsetenv("MFS_CONV");
	mfs_error err = { 0 };
	for (int v = 0; v < 2; v++) {
		onnx_model *m = swish_model(v);
		assert_int_equal(mfs_fuse_graph(m, &err), 1);
		assert_int_equal(m->graph->n_nodes, 1);
		assert_string_equal(m->graph->nodes[0].op_type, "FusedConv");
		assert_string_equal(onnx_attr_string(&m->graph->nodes[0], "activation", ""),
				    v ? "HardSwish" : "Swish");
		assert_string_equal(m->graph->nodes[0].outputs[0], "y");
		onnx_model_free(m);
	}
	onnx_model *m = swish_model(3);
	assert_int_equal(mfs_fuse_graph(m, &err), 0);
	onnx_model_free(m);
}

/* A zero Pad before an AveragePool or a Conv on x reshaped to [2, 3, 2, 4]
 * (rewrite_pad.c), the result reshaped back to [2, 3, 8]:
 *   0: AveragePool(Pad(x, h and w by 1), 3x3)   into the pool's pads
 *   1: Conv(Pad(x, h by 1, w by 0 and 2), 3x3)  into the Conv's pads
 *   2: as 0 with constant_value 1: left alone
 *   3: as 0 padding the channels too: left alone */
static onnx_model *pad_model(int v)
{
	onnx_model *m = gb_new(13);
	const int64_t s4[1] = { 4 }, s3[1] = { 3 }, s8[1] = { 8 }, one[1] = { 1 };
	const int64_t r4[4] = { 2, 3, 2, 4 }, r3[3] = { 2, 3, 8 }, k3[2] = { 3, 3 };
	int64_t pads[8] = { 0, 0, 1, 1, 0, 0, 1, 1 };
	const float cv = 1.0f;
	io(m, "y");
	if (v == 1) {
		pads[3] = 0;
		pads[7] = 2;
	}
	if (v == 3)
		pads[1] = 1;
	gb_init(m, "s4", MFS_DT_INT64, 1, s4, r4);
	gb_init(m, "s3", MFS_DT_INT64, 1, s3, r3);
	gb_init(m, "pads", MFS_DT_INT64, 1, s8, pads);
	gb_init_f32(m, "cv", 1, one, &cv);
	gb_node(m, "", "Reshape", "in", "x,s4", "xr");
	gb_node(m, "", "Pad", "pad", v == 2 ? "xr,pads,cv" : "xr,pads", "p");
	if (v == 1) {
		conv_weights(m, 2);
		gb_node(m, "", "Conv", "conv", "p,w,cb", "c");
	} else {
		attr_ints(gb_node(m, "", "AveragePool", "pool", "p", "c"), "kernel_shape", 2, k3);
	}
	if (v == 3) {   /* back to 3 channels */
		const int64_t st[1] = { 0 }, en[1] = { 3 }, ax[1] = { 1 };
		gb_init(m, "st", MFS_DT_INT64, 1, one, st);
		gb_init(m, "en", MFS_DT_INT64, 1, one, en);
		gb_init(m, "ax", MFS_DT_INT64, 1, one, ax);
		gb_node(m, "", "Slice", "slice", "c,st,en,ax", "cs");
		gb_node(m, "", "Reshape", "out", "cs,s3", "y");
	} else {
		gb_node(m, "", "Reshape", "out", "c,s3", "y");
	}
	return m;
}

/* The Pad goes into the reader's pads, results as before; not a Pad of
 * another value than zero nor one of the channels. */
static void test_pad(void **st)
{
	(void)st;
	float a[ROWS * D], b[ROWS * D];
	for (int v = 0; v < 4; v++) {
		int unfused = run(pad_model(v), false, a, ROWS * D, NULL);
		int fused = run(pad_model(v), true, b, ROWS * D, NULL);
		assert_int_equal(unfused - fused, v < 2 ? 1 : 0);
		for (int i = 0; i < ROWS * D; i++)
			if (fabsf(a[i] - b[i]) > 1e-5f)
				fail_msg("pad %d: element %d: unfused %g, fused %g", v, i,
					 (double)a[i], (double)b[i]);
	}
	mfs_error err = { 0 };
	onnx_model *m = pad_model(0);
	assert_int_equal(mfs_fuse_graph(m, &err), 1);
	const onnx_node *pool = &m->graph->nodes[1];
	assert_string_equal(pool->op_type, "AveragePool");
	assert_string_equal(pool->inputs[0], "xr");
	assert_int_equal(onnx_attr_int(pool, "count_include_pad", 0), 1);
	const onnx_attr *pa = onnx_node_attr(pool, "pads");
	assert_non_null(pa);
	assert_int_equal(pa->n_ints, 4);
	for (int k = 0; k < 4; k++)
		assert_int_equal(pa->ints[k], 1);
	onnx_model_free(m);
}

/* Near misses: an intermediate that is also a graph output, a bias that
 * is not a constant vector, the wrong GELU constant, MFS_FUSE=0. */
static void test_not_rewritten(void **st)
{
	(void)st;
	mfs_error err = { 0 };
	onnx_model *m = layernorm_model(false, "var");
	int n0 = m->graph->n_nodes;
	assert_int_equal(mfs_fuse_graph(m, &err), 0);
	assert_int_equal(m->graph->n_nodes, n0);
	onnx_model_free(m);

	m = dense_model("");
	free(m->graph->nodes[1].inputs[0]);
	m->graph->nodes[1].inputs[0] = strdup("x");   /* Add(x, mm): no constant */
	/* not a bias: a Dense without one, the Add its residual */
	assert_int_equal(mfs_fuse_graph(m, &err), 1);
	assert_int_equal(m->graph->n_nodes, 1);
	assert_string_equal(m->graph->nodes[0].op_type, "Dense");
	assert_int_equal(m->graph->nodes[0].n_inputs, 4);
	assert_string_equal(m->graph->nodes[0].inputs[2], "");
	assert_string_equal(m->graph->nodes[0].inputs[3], "x");
	onnx_model_free(m);

	m = gelu_erf_model();
	for (int i = 0; i < m->graph->n_initializers; i++)
		if (!strcmp(m->graph->initializers[i].name, "sqrt2"))
			((float *)m->graph->initializers[i].tensor.data)[0] = 1.5f;
	assert_int_equal(mfs_fuse_graph(m, &err), 0);
	onnx_model_free(m);

	m = ln_pow();
	setenv("MFS_FUSE", "0", 1);
	assert_int_equal(mfs_fuse_graph(m, &err), 0);
	unsetenv("MFS_FUSE");
	onnx_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layernorm),
		cmocka_unit_test(test_gelu),
		cmocka_unit_test(test_dense),
		cmocka_unit_test(test_attention),
		cmocka_unit_test(test_attention_layout),
		cmocka_unit_test(test_residual),
		cmocka_unit_test(test_swish),
		cmocka_unit_test(test_pad),
		cmocka_unit_test(test_not_rewritten),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for the engine core: graph compile (graph.c) and the CPU
 * backend (cpu_backend.c, engine.c).  Graphs are built by hand as
 * onnx_model structs; the engine behaviour under test is exercised with
 * small test operators (resolved through mfs_graph_set_op_lookup) so the
 * tests do not depend on how real operators are written, plus a few real
 * registry operators (Shape, Reshape, Constant) and, at the end, real model
 * files from libonnx-testdata. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

#include <cmocka.h>
#include <omp.h>

#include "graph.h"

#include "graph_builder.h"

static onnx_node *tnode(onnx_model *m, const char *op, const char *name,
			const char *ins, const char *outs)
{
	return gb_node(m, "test", op, name, ins, outs);
}

static void attr_tensor_f32(onnx_node *n, const char *name, int rank,
			    const int64_t *dims, const float *data)
{
	onnx_attr *a;
	mfs_shape s = { .rank = rank };
	n->attrs = realloc(n->attrs, (size_t)(n->n_attrs + 1) * sizeof(*n->attrs));
	a = &n->attrs[n->n_attrs++];
	memset(a, 0, sizeof(*a));
	a->name = strdup(name);
	a->type = ONNX_ATTR_TENSOR;
	memcpy(s.dims, dims, (size_t)rank * sizeof(int64_t));
	assert_int_equal(mfs_tensor_alloc(&a->t, MFS_DT_FLOAT, &s, NULL), 0);
	memcpy(a->t.data, data, a->t.nbytes);
}

static mfs_tensor f32(int rank, const int64_t *dims, const float *data)
{
	mfs_tensor t;
	mfs_shape s = { .rank = rank };
	memcpy(s.dims, dims, (size_t)rank * sizeof(int64_t));
	assert_int_equal(mfs_tensor_alloc(&t, MFS_DT_FLOAT, &s, NULL), 0);
	if (data)
		memcpy(t.data, data, t.nbytes);
	return t;
}

/* ---- test operators ---------------------------------------------- */

static int n_copy_runs, n_prepares, n_rand;
static bool opt_saw_null[3], opt_out1_null;
static mfs_layout conv_seen_in, conv_seen_out;
static int plain_saw_nhwc;

static int same_infer(mfs_op_ctx *ctx)
{
	if (ctx->n_in < 1 || !ctx->in[0])
		return mfs_op_fail(ctx, EINVAL, "needs an input");
	for (int k = 0; k < ctx->n_out; k++)
		if (ctx->out[k]) {
			ctx->out[k]->dtype = ctx->in[0]->dtype;
			ctx->out[k]->shape = ctx->in[0]->shape;
		}
	return 0;
}

static int copy_run(mfs_op_ctx *ctx)
{
	n_copy_runs++;
	if (ctx->in[0]->nbytes)
		memcpy(ctx->out[0]->data, ctx->in[0]->data, ctx->in[0]->nbytes);
	return 0;
}

/* TAdd: same-shape float add; layout-oblivious, so NHWC_OK. */
static int add_infer(mfs_op_ctx *ctx)
{
	if (ctx->n_in != 2 || !mfs_shape_equal(&ctx->in[0]->shape, &ctx->in[1]->shape))
		return mfs_op_fail(ctx, EINVAL, "shapes differ");
	return same_infer(ctx);
}

static int add_run(mfs_op_ctx *ctx)
{
	const float *a = ctx->in[0]->data, *b = ctx->in[1]->data;
	float *y = ctx->out[0]->data;
	assert_int_equal(ctx->in[0]->layout, ctx->in[1]->layout);
	assert_int_equal(ctx->out[0]->layout, ctx->in[0]->layout);
	for (int64_t i = 0; i < mfs_shape_numel(&ctx->out[0]->shape); i++)
		y[i] = a[i] + b[i];
	return 0;
}

/* TView: flattens to rank 1 (a view). */
static int view_infer(mfs_op_ctx *ctx)
{
	ctx->out[0]->dtype = ctx->in[0]->dtype;
	ctx->out[0]->shape.rank = 1;
	ctx->out[0]->shape.dims[0] = mfs_shape_numel(&ctx->in[0]->shape);
	return 0;
}

/* TOpt: y = x + (b ? b : 0) + (c ? c : 0); optional second output. */
static int opt_run(mfs_op_ctx *ctx)
{
	int64_t n = mfs_shape_numel(&ctx->in[0]->shape);
	float *y = ctx->out[0]->data;
	for (int k = 0; k < 3; k++)
		opt_saw_null[k] = k >= ctx->n_in || !ctx->in[k];
	opt_out1_null = ctx->n_out < 2 || !ctx->out[1];
	for (int64_t i = 0; i < n; i++) {
		y[i] = ((const float *)ctx->in[0]->data)[i];
		for (int k = 1; k < ctx->n_in && k < 3; k++)
			if (ctx->in[k])
				y[i] += ((const float *)ctx->in[k]->data)[i];
	}
	if (!opt_out1_null)
		memcpy(ctx->out[1]->data, y, ctx->out[1]->nbytes);
	return 0;
}

static int fail_run(mfs_op_ctx *ctx)
{
	return mfs_op_fail(ctx, EDOM, "boom");
}

static int fail_plain_run(mfs_op_ctx *ctx)
{
	return mfs_fail(ctx->err, ERANGE, "plain failure");
}

static int rand_infer(mfs_op_ctx *ctx)
{
	ctx->out[0]->dtype = MFS_DT_FLOAT;
	ctx->out[0]->shape.rank = 1;
	ctx->out[0]->shape.dims[0] = 1;
	return 0;
}

static int rand_run(mfs_op_ctx *ctx)
{
	((float *)ctx->out[0]->data)[0] = (float)++n_rand;
	return 0;
}

/* TDyn: y = x[0:n] where n is the int64 scalar input 1 (shape from data). */
static int dyn_infer(mfs_op_ctx *ctx)
{
	int64_t n;
	if (!ctx->in[1]->data)
		return MFS_SHAPE_DEPENDS_ON_DATA;
	n = ((const int64_t *)ctx->in[1]->data)[0];
	if (n < 0 || n > ctx->in[0]->shape.dims[0])
		return mfs_op_fail(ctx, EINVAL, "bad n %lld", (long long)n);
	ctx->out[0]->dtype = ctx->in[0]->dtype;
	ctx->out[0]->shape.rank = 1;
	ctx->out[0]->shape.dims[0] = n;
	return 0;
}

static int prep_prepare(mfs_op_ctx *ctx)
{
	n_prepares++;
	if (!*ctx->state)
		*ctx->state = malloc(16);
	return *ctx->state ? 0 : -ENOMEM;
}

/* test.Conv: a copy that honours the layouts the engine asks for, like
 * the real Conv does. */
static int tconv_run(mfs_op_ctx *ctx)
{
	conv_seen_in = ctx->in[0]->layout;
	conv_seen_out = ctx->out[0]->layout;
	if (ctx->in[0]->layout == ctx->out[0]->layout) {
		memcpy(ctx->out[0]->data, ctx->in[0]->data, ctx->in[0]->nbytes);
	} else if (ctx->in[0]->layout == MFS_LAYOUT_PLAIN ||
		   ctx->out[0]->layout == MFS_LAYOUT_PLAIN) {
		mfs_layout_convert(ctx->out[0], ctx->in[0], ctx->out[0]->layout);
	} else {   /* NHWC <-> BLOCK16 goes through plain */
		mfs_tensor mid = *ctx->in[0];
		mid.data = malloc(mid.nbytes);
		assert_non_null(mid.data);
		mfs_layout_convert(&mid, ctx->in[0], MFS_LAYOUT_PLAIN);
		mfs_layout_convert(ctx->out[0], &mid, ctx->out[0]->layout);
		free(mid.data);
	}
	return 0;
}

static int plain_run(mfs_op_ctx *ctx)
{
	if (ctx->in[0]->layout != MFS_LAYOUT_PLAIN)
		plain_saw_nhwc++;
	return copy_run(ctx);
}

/* TBias: x + per-channel b [1,C,1,1]; refuses NHWC x in infer (as an
 * elementwise op with a plain broadcast operand does). */
static int bias_infer(mfs_op_ctx *ctx)
{
	if (ctx->in[0]->layout == MFS_LAYOUT_NHWC &&
	    ctx->in[1]->layout == MFS_LAYOUT_PLAIN &&
	    mfs_shape_numel(&ctx->in[1]->shape) > 1)
		return mfs_op_fail(ctx, ENOTSUP, "NHWC with a plain operand");
	return same_infer(ctx);
}

static int bias_run(mfs_op_ctx *ctx)
{
	const float *x = ctx->in[0]->data, *b = ctx->in[1]->data;
	float *y = ctx->out[0]->data;
	int64_t C = ctx->in[0]->shape.dims[1];
	int64_t HW = ctx->in[0]->shape.dims[2] * ctx->in[0]->shape.dims[3];
	assert_int_equal(ctx->in[0]->layout, MFS_LAYOUT_PLAIN);
	for (int64_t i = 0; i < C * HW; i++)
		y[i] = x[i] + b[i / HW];
	return 0;
}

/* TBcast: a + b with b's batch broadcast; in NHWC only when both inputs
 * are NHWC with one shape (as the elementwise ops do). */
static int bcast_infer(mfs_op_ctx *ctx)
{
	const mfs_tensor *a = ctx->in[0], *b = ctx->in[1];
	int rc;
	if ((a->layout == MFS_LAYOUT_NHWC || b->layout == MFS_LAYOUT_NHWC) &&
	    (a->layout != b->layout || !mfs_shape_equal(&a->shape, &b->shape)))
		return mfs_op_fail(ctx, ENOTSUP, "NHWC needs equal shapes");
	rc = mfs_broadcast_shape(&a->shape, &b->shape, &ctx->out[0]->shape, ctx->err);
	ctx->out[0]->dtype = a->dtype;
	return rc;
}

static int bcast_run(mfs_op_ctx *ctx)
{
	const float *a = ctx->in[0]->data, *b = ctx->in[1]->data;
	float *y = ctx->out[0]->data;
	int64_t n = mfs_shape_numel(&ctx->out[0]->shape);
	int64_t nb = mfs_shape_numel(&ctx->in[1]->shape);
	for (int64_t i = 0; i < n; i++)
		y[i] = a[i] + b[i % nb];
	return 0;
}

/* TThreads: a copy that records the OpenMP threads it was given and
 * those its prepare saw. */
static int threads_at_run, threads_at_prepare;

static int threads_prepare(mfs_op_ctx *ctx)
{
	(void)ctx;
	threads_at_prepare = omp_get_max_threads();
	return 0;
}

static int threads_run(mfs_op_ctx *ctx)
{
	threads_at_run = omp_get_max_threads();
	return copy_run(ctx);
}

static const mfs_op_def test_ops[] = {
	{ .domain = "test", .op_type = "TThreads", .since_version = 1,
	  .infer = same_infer, .prepare = threads_prepare, .run = threads_run },
	{ .domain = "test", .op_type = "TBcast", .since_version = 1,
	  .flags = MFS_OP_NHWC_OK, .infer = bcast_infer, .run = bcast_run },
	{ .domain = "test", .op_type = "TBias", .since_version = 1,
	  .flags = MFS_OP_NHWC_OK, .infer = bias_infer, .run = bias_run },
	{ .domain = "test", .op_type = "TCopy", .since_version = 1,
	  .infer = same_infer, .run = copy_run },
	{ .domain = "test", .op_type = "TAdd", .since_version = 1,
	  .flags = MFS_OP_NHWC_OK, .infer = add_infer, .run = add_run },
	{ .domain = "test", .op_type = "TView", .since_version = 1,
	  .flags = MFS_OP_VIEW, .infer = view_infer, .run = copy_run },
	{ .domain = "test", .op_type = "TOpt", .since_version = 1,
	  .infer = same_infer, .run = opt_run },
	{ .domain = "test", .op_type = "TFail", .since_version = 1,
	  .infer = same_infer, .run = fail_run },
	{ .domain = "test", .op_type = "TFailPlain", .since_version = 1,
	  .infer = same_infer, .run = fail_plain_run },
	{ .domain = "test", .op_type = "TRand", .since_version = 1,
	  .flags = MFS_OP_NONDETERMINISTIC, .infer = rand_infer, .run = rand_run },
	{ .domain = "test", .op_type = "TDyn", .since_version = 1,
	  .infer = dyn_infer, .run = copy_run },
	{ .domain = "test", .op_type = "TPrep", .since_version = 1,
	  .infer = same_infer, .prepare = prep_prepare, .run = copy_run,
	  .release = free },
	{ .domain = "test", .op_type = "Conv", .since_version = 1,
	  .flags = MFS_OP_NHWC_OK, .infer = same_infer, .run = tconv_run },
	{ .domain = "test", .op_type = "TPlain", .since_version = 1,
	  .infer = same_infer, .run = plain_run },
};

static const mfs_op_def *lookup(const char *domain, const char *op, int64_t opset)
{
	(void)opset;
	for (size_t i = 0; i < sizeof(test_ops) / sizeof(test_ops[0]); i++)
		if (!strcmp(test_ops[i].domain, domain) && !strcmp(test_ops[i].op_type, op))
			return &test_ops[i];
	return NULL;
}

static int setup(void **state)
{
	(void)state;
	mfs_graph_set_op_lookup(lookup);
	n_copy_runs = n_prepares = n_rand = plain_saw_nhwc = 0;
	unsetenv("MFS_LAYOUT");
	return 0;
}

/* compile + exec, asserting success */
static mfs_graph *compile_ok(onnx_model *o)
{
	mfs_graph *m = NULL;
	mfs_error err;
	int rc = mfs_graph_compile(o, "m", &m, &err);
	if (rc)
		fail_msg("compile failed: %s", err.msg);
	return m;
}

static int compile_err(onnx_model *o, mfs_error *err)
{
	mfs_graph *m = (mfs_graph *)1;
	int rc = mfs_graph_compile(o, "m", &m, err);
	assert_null(m);
	return rc;
}

static const int64_t d23[] = { 2, 3 };
static const float x6[] = { 1, 2, 3, 4, 5, 6 };

/* ---- tests ---------------------------------------------------------- */

static void test_topo_sort_and_run(void **state)
{
	(void)state;
	onnx_model *o = gb_new(13);
	mfs_graph *m;
	mfs_exec *e;
	mfs_error err;
	mfs_tensor in, out;

	gb_input(o, "x", MFS_DT_FLOAT, 2, d23);
	gb_output(o, "y");
	/* written backwards: y <- b <- a <- x */
	tnode(o, "TAdd", "n3", "b,a", "y");
	tnode(o, "TCopy", "n2", "a", "b");
	tnode(o, "TCopy", "n1", "x", "a");
	m = compile_ok(o);
	assert_int_equal(m->n_nodes, 3);
	assert_string_equal(m->nodes[0].onnx->name, "n1");
	assert_string_equal(m->nodes[1].onnx->name, "n2");
	assert_string_equal(m->nodes[2].onnx->name, "n3");
	assert_int_equal(mfs_graph_n_inputs(m), 1);
	assert_int_equal(mfs_graph_n_outputs(m), 1);
	assert_string_equal(mfs_graph_input(m, 0)->name, "x");
	/* the output's type and shape come from inference */
	assert_int_equal(mfs_graph_output(m, 0)->dtype, MFS_DT_FLOAT);
	assert_int_equal(mfs_graph_output(m, 0)->rank, 2);
	assert_int_equal(mfs_graph_output(m, 0)->dims[1], 3);

	assert_int_equal(mfs_exec_new(m, NULL, &e, &err), 0);
	in = f32(2, d23, x6);
	assert_int_equal(mfs_exec_run(e, &in, &out, &err), 0);
	assert_int_equal(out.shape.rank, 2);
	for (int i = 0; i < 6; i++)
		assert_float_equal(((float *)out.data)[i], 2 * x6[i], 0);
	mfs_tensor_release(&out);
	mfs_tensor_release(&in);
	mfs_exec_free(e);
	mfs_graph_free(m);
}

static void test_cycle_rejected(void **state)
{
	(void)state;
	onnx_model *o = gb_new(13);
	mfs_error err;

	gb_input(o, "x", MFS_DT_FLOAT, 2, d23);
	gb_output(o, "y");
	tnode(o, "TAdd", "p", "x,b", "a");
	tnode(o, "TCopy", "q", "a", "b");
	tnode(o, "TCopy", "r", "a", "y");
	assert_int_equal(compile_err(o, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "cycle"));
	assert_non_null(strstr(err.msg, "model 'm'"));
}

static void test_undefined_input(void **state)
{
	(void)state;
	onnx_model *o = gb_new(13);
	mfs_error err;

	gb_input(o, "x", MFS_DT_FLOAT, 2, d23);
	gb_output(o, "y");
	tnode(o, "TAdd", "adder", "x,ghost", "y");
	assert_int_equal(compile_err(o, &err), -EINVAL);
	assert_string_equal(err.msg,
			    "model 'm': TAdd 'adder': input 'ghost' is not defined by any node, input or initializer");
}

static void test_output_defined_twice(void **state)
{
	(void)state;
	onnx_model *o = gb_new(13);
	mfs_error err;

	gb_input(o, "x", MFS_DT_FLOAT, 2, d23);
	gb_output(o, "y");
	tnode(o, "TCopy", "a", "x", "y");
	tnode(o, "TCopy", "b", "x", "y");
	assert_int_equal(compile_err(o, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "already defined"));
}

static void test_missing_graph_output(void **state)
{
	(void)state;
	onnx_model *o = gb_new(13);
	mfs_error err;

	gb_input(o, "x", MFS_DT_FLOAT, 2, d23);
	gb_output(o, "nowhere");
	tnode(o, "TCopy", "a", "x", "y");
	assert_int_equal(compile_err(o, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "'nowhere'"));
}

static void test_unsupported_op(void **state)
{
	(void)state;
	onnx_model *o = gb_new(13);
	mfs_error err;

	gb_input(o, "x", MFS_DT_FLOAT, 2, d23);
	gb_output(o, "y");
	tnode(o, "TCopy", "ok", "x", "a");
	gb_node(o, "", "Foo", "n1", "a", "y");
	assert_int_equal(compile_err(o, &err), -ENOTSUP);
	assert_string_equal(err.msg,
			    "model 'm': operator 'Foo' (opset 13) is not supported (node 'n1')");

	o = gb_new(13);
	gb_input(o, "x", MFS_DT_FLOAT, 2, d23);
	gb_output(o, "y");
	gb_node(o, "com.example", "Bar", "n2", "x", "y");
	assert_int_equal(compile_err(o, &err), -ENOTSUP);
	assert_string_equal(err.msg,
			    "model 'm': operator 'com.example.Bar' (opset 0) is not supported (node 'n2')");
}

/* Operators need not check that input 0 and output 0 exist. */
static void test_first_input_output_required(void **state)
{
	(void)state;
	onnx_model *o = gb_new(13);
	mfs_error err;

	gb_input(o, "x", MFS_DT_FLOAT, 2, d23);
	gb_output(o, "y");
	gb_node(o, "", "Relu", "r", "", "y");
	assert_int_equal(compile_err(o, &err), -EINVAL);
	assert_string_equal(err.msg, "model 'm': Relu 'r': input 0 is missing");

	o = gb_new(13);
	gb_input(o, "x", MFS_DT_FLOAT, 2, d23);
	gb_output(o, "x");
	gb_node(o, "", "Relu", "r", "x", ",z");
	assert_int_equal(compile_err(o, &err), -EINVAL);
	assert_string_equal(err.msg, "model 'm': Relu 'r': output 0 has no name");
}

static void test_constant_folding(void **state)
{
	(void)state;
	onnx_model *o = gb_new(13);
	mfs_graph *m;
	mfs_exec *e;
	mfs_error err;
	mfs_tensor in, out[2];
	const float w[] = { 10, 20, 30, 40, 50, 60 };
	onnx_node *k;

	gb_input(o, "x", MFS_DT_FLOAT, 2, d23);
	gb_init_f32(o, "w", 2, d23, w);
	gb_output(o, "y");
	gb_output(o, "y2");
	/* a chain on constants only: folded */
	tnode(o, "TCopy", "c1", "w", "w1");
	tnode(o, "TAdd", "c2", "w1,w", "w2");
	/* a Constant node and a Shape -> Reshape on a static shape */
	k = gb_node(o, "", "Constant", "k", "", "kc");
	attr_tensor_f32(k, "value", 2, d23, x6);
	gb_node(o, "", "Shape", "shape", "x", "xs");
	gb_node(o, "", "Reshape", "reshape", "kc,xs", "kr");
	/* the part that runs */
	tnode(o, "TAdd", "run", "x,w2", "y");
	tnode(o, "TAdd", "run2", "x,kr", "y2");
	m = compile_ok(o);
	assert_int_equal(m->n_folded, 5);
	assert_int_equal(m->n_nodes, 2);
	assert_string_equal(m->nodes[0].onnx->name, "run");

	assert_int_equal(mfs_exec_new(m, NULL, &e, &err), 0);
	in = f32(2, d23, x6);
	assert_int_equal(mfs_exec_run(e, &in, out, &err), 0);
	for (int i = 0; i < 6; i++) {
		assert_float_equal(((float *)out[0].data)[i], x6[i] + 2 * w[i], 0);
		assert_float_equal(((float *)out[1].data)[i], 2 * x6[i], 0);
	}
	mfs_tensor_release(&out[0]);
	mfs_tensor_release(&out[1]);
	mfs_tensor_release(&in);
	mfs_exec_free(e);
	mfs_graph_free(m);
}

static void test_initializer_input_is_constant(void **state)
{
	(void)state;
	onnx_model *o = gb_new(13);
	mfs_graph *m;
	mfs_exec *e;
	mfs_error err;
	mfs_tensor in, out;

	gb_input(o, "x", MFS_DT_FLOAT, 2, d23);
	gb_input(o, "w", MFS_DT_FLOAT, 2, d23);   /* ir<4 default */
	gb_init_f32(o, "w", 2, d23, x6);
	gb_output(o, "y");
	tnode(o, "TAdd", "a", "x,w", "y");
	m = compile_ok(o);
	assert_int_equal(mfs_graph_n_inputs(m), 1);
	assert_int_equal(mfs_exec_new(m, NULL, &e, &err), 0);
	in = f32(2, d23, x6);
	assert_int_equal(mfs_exec_run(e, &in, &out, &err), 0);
	assert_float_equal(((float *)out.data)[5], 12, 0);
	mfs_tensor_release(&out);
	mfs_tensor_release(&in);
	mfs_exec_free(e);
	mfs_graph_free(m);
}

static void test_nondeterministic_not_folded(void **state)
{
	(void)state;
	onnx_model *o = gb_new(13);
	mfs_graph *m;
	mfs_exec *e;
	mfs_error err;
	mfs_tensor out;

	gb_output(o, "y");
	tnode(o, "TRand", "r", "", "y");
	m = compile_ok(o);
	assert_int_equal(m->n_folded, 0);
	assert_int_equal(m->n_nodes, 1);
	assert_int_equal(mfs_exec_new(m, NULL, &e, &err), 0);
	for (int i = 1; i <= 2; i++) {
		assert_int_equal(mfs_exec_run(e, NULL, &out, &err), 0);
		assert_float_equal(((float *)out.data)[0], (float)i, 0);
		mfs_tensor_release(&out);
	}
	mfs_exec_free(e);
	mfs_graph_free(m);
}

static void test_dead_nodes_dropped(void **state)
{
	(void)state;
	onnx_model *o = gb_new(13);
	mfs_graph *m;

	gb_input(o, "x", MFS_DT_FLOAT, 2, d23);
	gb_output(o, "y");
	tnode(o, "TCopy", "dead", "x", "unused");
	tnode(o, "TCopy", "live", "x", "y");
	m = compile_ok(o);
	assert_int_equal(m->n_nodes, 1);
	assert_string_equal(m->nodes[0].onnx->name, "live");
	mfs_graph_free(m);
}

/* A chain of copies: the second run with the same shapes allocates
 * nothing, and a live set of 2 values never needs more than 2 blocks. */
static void test_buffer_reuse(void **state)
{
	(void)state;
	onnx_model *o = gb_new(13);
	mfs_graph *m;
	mfs_exec *e;
	mfs_error err;
	mfs_exec_stats st;
	mfs_tensor in, out;
	const int64_t dyn[] = { -1, 3 };
	const int64_t d43[] = { 4, 3 };
	float x12[12];

	for (int i = 0; i < 12; i++)
		x12[i] = (float)i;
	gb_input(o, "x", MFS_DT_FLOAT, 2, dyn);
	gb_output(o, "y");
	tnode(o, "TCopy", "c1", "x", "a");
	tnode(o, "TCopy", "c2", "a", "b");
	tnode(o, "TCopy", "c3", "b", "c");
	tnode(o, "TCopy", "c4", "c", "d");
	tnode(o, "TCopy", "c5", "d", "y");
	m = compile_ok(o);
	assert_false(m->nodes[0].shapes_static);
	assert_int_equal(mfs_exec_new(m, NULL, &e, &err), 0);

	in = f32(2, d23, x6);
	assert_int_equal(mfs_exec_run(e, &in, &out, &err), 0);
	mfs_tensor_release(&out);
	mfs_exec_get_stats(e, &st);
	assert_int_equal(st.buffer_allocs, 2);
	for (int r = 0; r < 3; r++) {
		assert_int_equal(mfs_exec_run(e, &in, &out, &err), 0);
		assert_float_equal(((float *)out.data)[5], 6, 0);
		mfs_tensor_release(&out);
	}
	mfs_exec_get_stats(e, &st);
	assert_int_equal(st.buffer_allocs, 2);
	mfs_tensor_release(&in);

	/* bigger: the blocks regrow (2 more allocations), then stay */
	in = f32(2, d43, x12);
	assert_int_equal(mfs_exec_run(e, &in, &out, &err), 0);
	assert_int_equal(out.shape.dims[0], 4);
	assert_float_equal(((float *)out.data)[11], 11, 0);
	mfs_tensor_release(&out);
	mfs_exec_get_stats(e, &st);
	assert_int_equal(st.buffer_allocs, 4);
	assert_int_equal(mfs_exec_run(e, &in, &out, &err), 0);
	mfs_tensor_release(&out);
	mfs_tensor_release(&in);
	/* smaller again fits the grown blocks */
	in = f32(2, d23, x6);
	assert_int_equal(mfs_exec_run(e, &in, &out, &err), 0);
	mfs_tensor_release(&out);
	mfs_tensor_release(&in);
	mfs_exec_get_stats(e, &st);
	assert_int_equal(st.buffer_allocs, 4);
	assert_int_equal(st.runs, 7);
	mfs_exec_free(e);
	mfs_graph_free(m);
}

static void test_views(void **state)
{
	(void)state;
	onnx_model *o = gb_new(13);
	mfs_graph *m;
	mfs_exec *e;
	mfs_error err;
	mfs_exec_stats st;
	mfs_tensor in, out[2];

	gb_input(o, "x", MFS_DT_FLOAT, 2, d23);
	gb_output(o, "y");
	gb_output(o, "z");
	tnode(o, "TCopy", "c", "x", "a");
	tnode(o, "TView", "v1", "a", "flat");    /* view of a pool block */
	tnode(o, "TCopy", "c2", "flat", "y");
	tnode(o, "TView", "v2", "x", "z");       /* view of the caller's input */
	m = compile_ok(o);
	assert_int_equal(mfs_exec_new(m, NULL, &e, &err), 0);
	in = f32(2, d23, x6);
	n_copy_runs = 0;
	for (int r = 0; r < 2; r++) {
		assert_int_equal(mfs_exec_run(e, &in, out, &err), 0);
		assert_int_equal(out[0].shape.rank, 1);
		assert_int_equal(out[0].shape.dims[0], 6);
		assert_int_equal(out[1].shape.dims[0], 6);
		for (int i = 0; i < 6; i++) {
			assert_float_equal(((float *)out[0].data)[i], x6[i], 0);
			assert_float_equal(((float *)out[1].data)[i], x6[i], 0);
		}
		mfs_tensor_release(&out[0]);
		mfs_tensor_release(&out[1]);
	}
	assert_int_equal(n_copy_runs, 4);      /* the views never ran */
	mfs_exec_get_stats(e, &st);
	assert_int_equal(st.views, 4);
	/* "a" stays alive through its view until "y" is made: 2 blocks */
	assert_int_equal(st.buffer_allocs, 2);
	mfs_tensor_release(&in);
	mfs_exec_free(e);
	mfs_graph_free(m);
}

/* Outputs of 64 KiB or more leave in their pool block (no copy): the
 * caller owns an aligned block it frees as any tensor; the pool makes a
 * new block for it in the next run (buffer_allocs grows by one a run, the
 * rest replays).  A view of the caller's input is copied, and so is every
 * output with MFS_OUTPUT_HANDOFF=0. */
static void test_output_handoff(void **state)
{
	(void)state;
	onnx_model *o = gb_new(13);
	mfs_graph *m;
	mfs_exec *e;
	mfs_error err;
	mfs_exec_stats st;
	mfs_tensor in, out[2];
	const int64_t big[] = { 128, 256 };

	gb_input(o, "x", MFS_DT_FLOAT, 2, big);
	gb_output(o, "y");
	gb_output(o, "z");
	tnode(o, "TCopy", "c1", "x", "a");
	tnode(o, "TCopy", "c2", "a", "y");
	tnode(o, "TView", "v", "x", "z");        /* the caller's input */
	m = compile_ok(o);
	in = f32(2, big, NULL);
	for (int i = 0; i < 128 * 256; i++)
		((float *)in.data)[i] = (float)i;
	for (int pass = 0; pass < 2; pass++) {
		if (pass)
			setenv("MFS_OUTPUT_HANDOFF", "0", 1);
		assert_int_equal(mfs_exec_new(m, NULL, &e, &err), 0);
		for (int r = 0; r < 3; r++) {
			assert_int_equal(mfs_exec_run(e, &in, out, &err), 0);
			assert_int_equal(out[0].nbytes, in.nbytes);
			assert_true(out[0].owns_data && out[1].owns_data);
			assert_ptr_not_equal(out[1].data, in.data);
			assert_int_equal(memcmp(out[0].data, in.data, in.nbytes), 0);
			assert_int_equal(memcmp(out[1].data, in.data, in.nbytes), 0);
			mfs_tensor_release(&out[0]);
			mfs_tensor_release(&out[1]);
		}
		mfs_exec_get_stats(e, &st);
		assert_int_equal(st.outputs_handed, pass ? 0 : 3);
		assert_int_equal(st.buffer_allocs, pass ? 2 : 4);
		mfs_exec_free(e);
	}
	unsetenv("MFS_OUTPUT_HANDOFF");
	mfs_tensor_release(&in);
	mfs_graph_free(m);
}

static void test_input_validation(void **state)
{
	(void)state;
	onnx_model *o = gb_new(13);
	mfs_graph *m;
	mfs_exec *e;
	mfs_error err;
	mfs_tensor in, out;
	const int64_t dyn[] = { -1, 3 };
	const int64_t d33[] = { 3, 3 }, d32[] = { 3, 2 }, d6[] = { 6 };
	float buf[9] = { 0 };

	gb_input(o, "pixels", MFS_DT_FLOAT, 2, dyn);
	gb_output(o, "y");
	tnode(o, "TCopy", "c", "pixels", "y");
	m = compile_ok(o);
	assert_int_equal(mfs_graph_input(m, 0)->dims[0], -1);
	assert_int_equal(mfs_exec_new(m, NULL, &e, &err), 0);

	in = f32(2, d33, buf);             /* variable dim: fine */
	assert_int_equal(mfs_exec_run(e, &in, &out, &err), 0);
	assert_int_equal(out.shape.dims[0], 3);
	mfs_tensor_release(&out);
	mfs_tensor_release(&in);

	in = f32(2, d32, buf);
	assert_int_equal(mfs_exec_run(e, &in, &out, &err), -EINVAL);
	assert_string_equal(err.msg,
			    "model 'm': input 'pixels' has shape [3,2], the model expects [-1,3]");
	mfs_tensor_release(&in);

	in = f32(1, d6, buf);
	assert_int_equal(mfs_exec_run(e, &in, &out, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "input 'pixels' has shape [6]"));
	mfs_tensor_release(&in);

	in = f32(2, d23, buf);
	in.dtype = MFS_DT_INT32;
	assert_int_equal(mfs_exec_run(e, &in, &out, &err), -EINVAL);
	assert_string_equal(err.msg,
			    "model 'm': input 'pixels' has data type int32, the model expects float");
	in.dtype = MFS_DT_FLOAT;
	in.nbytes -= 4;
	assert_int_equal(mfs_exec_run(e, &in, &out, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "holds 20 bytes"));
	in.nbytes += 4;
	mfs_tensor_release(&in);

	/* zero rows: a NULL data pointer is fine */
	{
		mfs_tensor z = { .dtype = MFS_DT_FLOAT, .shape = { 2, { 0, 3 } } };
		assert_int_equal(mfs_exec_run(e, &z, &out, &err), 0);
		assert_int_equal(out.shape.dims[0], 0);
		assert_int_equal(out.nbytes, 0);
		mfs_tensor_release(&out);
	}
	mfs_exec_free(e);
	mfs_graph_free(m);
}

static void test_optional_inputs_outputs(void **state)
{
	(void)state;
	onnx_model *o = gb_new(13);
	mfs_graph *m;
	mfs_exec *e;
	mfs_error err;
	mfs_tensor in, out[2];

	gb_input(o, "x", MFS_DT_FLOAT, 2, d23);
	gb_output(o, "y");
	gb_output(o, "y2");
	tnode(o, "TOpt", "o1", "x,,x", "y,");     /* input 1 omitted, output 1 unnamed */
	tnode(o, "TOpt", "o2", "x", "y2,side");   /* output 1 named but unread */
	m = compile_ok(o);
	assert_int_equal(mfs_exec_new(m, NULL, &e, &err), 0);
	in = f32(2, d23, x6);
	assert_int_equal(mfs_exec_run(e, &in, out, &err), 0);
	assert_float_equal(((float *)out[0].data)[2], 6, 0);
	assert_float_equal(((float *)out[1].data)[2], 3, 0);
	/* o2 ran last: one input, second output provided */
	assert_true(opt_saw_null[1]);
	assert_false(opt_out1_null);
	mfs_tensor_release(&out[0]);
	mfs_tensor_release(&out[1]);
	mfs_exec_free(e);
	mfs_graph_free(m);

	/* only o1 now, to see what it got */
	o = gb_new(13);
	gb_input(o, "x", MFS_DT_FLOAT, 2, d23);
	gb_output(o, "y");
	tnode(o, "TOpt", "o1", "x,,x", "y,");
	m = compile_ok(o);
	assert_int_equal(mfs_exec_new(m, NULL, &e, &err), 0);
	assert_int_equal(mfs_exec_run(e, &in, out, &err), 0);
	assert_false(opt_saw_null[0]);
	assert_true(opt_saw_null[1]);
	assert_false(opt_saw_null[2]);
	assert_true(opt_out1_null);
	mfs_tensor_release(&out[0]);
	mfs_tensor_release(&in);
	mfs_exec_free(e);
	mfs_graph_free(m);
}

static void test_op_errors_name_node(void **state)
{
	(void)state;
	onnx_model *o = gb_new(13);
	mfs_graph *m;
	mfs_exec *e;
	mfs_error err;
	mfs_exec_stats st;
	mfs_tensor in, out;
	const int64_t d2[] = { 2 };
	const float one[] = { 1, 1 };

	gb_input(o, "x", MFS_DT_FLOAT, 1, d2);
	gb_output(o, "y");
	tnode(o, "TCopy", "c", "x", "a");
	tnode(o, "TFail", "bad", "a", "y");
	m = compile_ok(o);
	assert_int_equal(mfs_exec_new(m, NULL, &e, &err), 0);
	in = f32(1, d2, one);
	assert_int_equal(mfs_exec_run(e, &in, &out, &err), -EDOM);
	assert_string_equal(err.msg, "model 'm': TFail 'bad': boom");
	assert_null(out.data);
	/* the failed run gave its blocks back: the next run reuses them */
	assert_int_equal(mfs_exec_run(e, &in, &out, &err), -EDOM);
	mfs_exec_get_stats(e, &st);
	assert_int_equal(st.buffer_allocs, 2);
	mfs_exec_free(e);
	mfs_graph_free(m);

	o = gb_new(13);
	gb_input(o, "x", MFS_DT_FLOAT, 1, d2);
	gb_output(o, "y");
	tnode(o, "TFailPlain", "quiet", "x", "y");
	m = compile_ok(o);
	assert_int_equal(mfs_exec_new(m, NULL, &e, &err), 0);
	assert_int_equal(mfs_exec_run(e, &in, &out, &err), -ERANGE);
	assert_string_equal(err.msg, "model 'm': TFailPlain 'quiet': plain failure");
	mfs_tensor_release(&in);
	mfs_exec_free(e);
	mfs_graph_free(m);
}

static void test_dynamic_shape_and_prepare(void **state)
{
	(void)state;
	onnx_model *o = gb_new(13);
	mfs_graph *m;
	mfs_exec *e;
	mfs_error err;
	mfs_tensor in[2], out;
	const int64_t d6[] = { 6 }, dyn[] = { -1 };
	int64_t n = 4;

	gb_input(o, "x", MFS_DT_FLOAT, 1, d6);
	gb_input(o, "n", MFS_DT_INT64, 0, NULL);
	gb_output(o, "y");
	tnode(o, "TDyn", "dyn", "x,n", "a");
	tnode(o, "TPrep", "prep", "a", "y");
	m = compile_ok(o);
	assert_false(m->values[m->output_ids[0]].shape_static);
	assert_int_equal(mfs_graph_output(m, 0)->rank, -1);
	assert_int_equal(mfs_exec_new(m, NULL, &e, &err), 0);
	in[0] = f32(1, d6, x6);
	in[1] = (mfs_tensor){ .dtype = MFS_DT_INT64, .data = &n, .nbytes = 8 };
	assert_int_equal(mfs_exec_run(e, in, &out, &err), 0);
	assert_int_equal(out.shape.dims[0], 4);
	assert_float_equal(((float *)out.data)[3], 4, 0);
	mfs_tensor_release(&out);
	assert_int_equal(n_prepares, 1);
	assert_int_equal(mfs_exec_run(e, in, &out, &err), 0);
	mfs_tensor_release(&out);
	assert_int_equal(n_prepares, 1);       /* same shapes: no prepare */
	n = 2;
	assert_int_equal(mfs_exec_run(e, in, &out, &err), 0);
	assert_int_equal(out.shape.dims[0], 2);
	mfs_tensor_release(&out);
	assert_int_equal(n_prepares, 2);       /* shape changed */
	n = 7;
	assert_int_equal(mfs_exec_run(e, in, &out, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "TDyn 'dyn': bad n 7"));
	mfs_tensor_release(&in[0]);
	mfs_exec_free(e);
	mfs_graph_free(m);
	(void)dyn;
}

static void test_output_is_input_or_constant(void **state)
{
	(void)state;
	onnx_model *o = gb_new(13);
	mfs_graph *m;
	mfs_exec *e;
	mfs_error err;
	mfs_tensor in, out[2];

	gb_input(o, "x", MFS_DT_FLOAT, 2, d23);
	gb_init_f32(o, "w", 2, d23, x6);
	gb_output(o, "x");
	gb_output(o, "w");
	m = compile_ok(o);
	assert_int_equal(m->n_nodes, 0);
	assert_int_equal(mfs_graph_output(m, 1)->rank, 2);
	assert_int_equal(mfs_exec_new(m, NULL, &e, &err), 0);
	in = f32(2, d23, x6);
	assert_int_equal(mfs_exec_run(e, &in, out, &err), 0);
	assert_true(out[0].data != in.data);
	assert_memory_equal(out[0].data, x6, sizeof(x6));
	assert_memory_equal(out[1].data, x6, sizeof(x6));
	mfs_tensor_release(&out[0]);
	mfs_tensor_release(&out[1]);
	mfs_tensor_release(&in);
	mfs_exec_free(e);
	mfs_graph_free(m);
}

/* test.Conv -> TAdd -> TAdd -> TPlain: the Conv output and the first add
 * stay NHWC; the second add's output is read by an operator without
 * NHWC_OK, so it is converted once after the add; the result is right. */
static onnx_model *layout_graph(void)
{
	onnx_model *o = gb_new(13);
	static const int64_t d4[] = { 1, 3, 2, 2 };
	gb_input(o, "x", MFS_DT_FLOAT, 4, d4);
	gb_output(o, "y");
	tnode(o, "Conv", "conv", "x", "c");
	tnode(o, "TAdd", "add1", "c,c", "s");
	tnode(o, "TAdd", "add2", "s,c", "t");
	tnode(o, "TPlain", "plain", "t", "y");
	return o;
}

static void run_layout_graph(mfs_graph *m, mfs_exec_stats *st)
{
	mfs_exec *e;
	mfs_error err;
	mfs_tensor in, out;
	static const int64_t d4[] = { 1, 3, 2, 2 };
	float x[12];

	for (int i = 0; i < 12; i++)
		x[i] = (float)i;
	assert_int_equal(mfs_exec_new(m, NULL, &e, &err), 0);
	in = f32(4, d4, x);
	assert_int_equal(mfs_exec_run(e, &in, &out, &err), 0);
	assert_int_equal(out.layout, MFS_LAYOUT_PLAIN);
	for (int i = 0; i < 12; i++)
		assert_float_equal(((float *)out.data)[i], 3 * x[i], 0);
	mfs_tensor_release(&out);
	mfs_tensor_release(&in);
	mfs_exec_get_stats(e, st);
	mfs_exec_free(e);
}

static void test_layout_nhwc(void **state)
{
	(void)state;
	mfs_graph *m = compile_ok(layout_graph());
	mfs_exec_stats st;

	assert_int_equal(m->n_nhwc, 2);        /* c and s */
	run_layout_graph(m, &st);
	assert_int_equal(conv_seen_in, MFS_LAYOUT_PLAIN);
	assert_int_equal(conv_seen_out, MFS_LAYOUT_NHWC);
	assert_int_equal(st.layout_converts, 1);
	assert_int_equal(plain_saw_nhwc, 0);
	mfs_graph_free(m);

	setenv("MFS_LAYOUT", "plain", 1);
	m = compile_ok(layout_graph());
	unsetenv("MFS_LAYOUT");
	assert_int_equal(m->n_nhwc, 0);
	run_layout_graph(m, &st);
	assert_int_equal(conv_seen_out, MFS_LAYOUT_PLAIN);
	assert_int_equal(st.layout_converts, 0);
	mfs_graph_free(m);
}

/* test.Conv -> c -> test.Conv -> d -> TPlain, 16 channels (so nothing is
 * blocked: graph_plan.c plan_block16): c is NHWC; the second convolution
 * reads it so and writes d plain, as planned, itself: no conversion
 * after it. */
static void test_layout_conv_writes_plan(void **state)
{
	(void)state;
	onnx_model *o = gb_new(13);
	static const int64_t d4[] = { 1, 16, 2, 2 };
	mfs_exec *e;
	mfs_error err;
	mfs_exec_stats st;
	mfs_tensor in, out;
	float x[64];
	mfs_graph *m;

	for (int i = 0; i < 64; i++)
		x[i] = (float)i;
	gb_input(o, "x", MFS_DT_FLOAT, 4, d4);
	gb_output(o, "y");
	tnode(o, "Conv", "conv1", "x", "c");
	tnode(o, "Conv", "conv2", "c", "d");
	tnode(o, "TPlain", "plain", "d", "y");
	m = compile_ok(o);
	assert_int_equal(m->n_nhwc, 1);         /* c */
	assert_int_equal(mfs_exec_new(m, NULL, &e, &err), 0);
	in = f32(4, d4, x);
	assert_int_equal(mfs_exec_run(e, &in, &out, &err), 0);
	assert_int_equal(conv_seen_in, MFS_LAYOUT_NHWC);
	assert_int_equal(conv_seen_out, MFS_LAYOUT_PLAIN);
	mfs_exec_get_stats(e, &st);
	assert_int_equal(st.layout_converts, 0);
	assert_memory_equal(out.data, x, sizeof(x));
	mfs_tensor_release(&out);
	mfs_tensor_release(&in);
	mfs_exec_free(e);
	mfs_graph_free(m);
}

/* A Conv output read by a plain operator is not planned NHWC at all. */
static void test_layout_demoted(void **state)
{
	(void)state;
	onnx_model *o = gb_new(13);
	static const int64_t d4[] = { 1, 3, 2, 2 };
	mfs_graph *m;

	gb_input(o, "x", MFS_DT_FLOAT, 4, d4);
	gb_output(o, "y");
	gb_output(o, "c");
	tnode(o, "Conv", "conv", "x", "c");
	tnode(o, "TPlain", "plain", "c", "y");
	m = compile_ok(o);
	assert_int_equal(m->n_nhwc, 0);
	mfs_graph_free(m);
}

/* The reader's infer refuses the planned layouts: the plan backs off. */
static void test_layout_infer_refuses(void **state)
{
	(void)state;
	onnx_model *o = gb_new(13);
	static const int64_t d4[] = { 1, 3, 2, 2 }, db[] = { 1, 3, 1, 1 };
	static const float b[] = { 100, 200, 300 };
	mfs_graph *m;
	mfs_exec *e;
	mfs_error err;
	mfs_tensor in, out;
	float x[12];

	gb_input(o, "x", MFS_DT_FLOAT, 4, d4);
	gb_init_f32(o, "b", 4, db, b);
	gb_output(o, "y");
	tnode(o, "Conv", "conv", "x", "c");
	tnode(o, "TBias", "bias", "c,b", "t");
	tnode(o, "TAdd", "add", "t,t", "y");
	m = compile_ok(o);
	assert_int_equal(m->n_nhwc, 0);
	for (int i = 0; i < 12; i++)
		x[i] = (float)i;
	assert_int_equal(mfs_exec_new(m, NULL, &e, &err), 0);
	in = f32(4, d4, x);
	assert_int_equal(mfs_exec_run(e, &in, &out, &err), 0);
	for (int i = 0; i < 12; i++)
		assert_float_equal(((float *)out.data)[i], 2 * (x[i] + b[i / 4]), 0);
	mfs_tensor_release(&out);
	mfs_tensor_release(&in);
	mfs_exec_free(e);
	mfs_graph_free(m);
}

/* A variable batch: the plan is made at batch 1 (Conv outputs NHWC); at
 * batch 2 the broadcast node refuses NHWC and the engine falls back to
 * plain for it; results are right either way. */
static void test_layout_dynamic_batch(void **state)
{
	(void)state;
	onnx_model *o = gb_new(13);
	static const int64_t dx[] = { -1, 3, 2, 2 }, dy[] = { 1, 3, 2, 2 };
	mfs_graph *m;
	mfs_exec *e;
	mfs_error err;
	mfs_exec_stats st;
	float x[24], y[12];

	gb_input(o, "x", MFS_DT_FLOAT, 4, dx);
	gb_input(o, "y", MFS_DT_FLOAT, 4, dy);
	gb_output(o, "out");
	tnode(o, "Conv", "ca", "x", "a");
	tnode(o, "Conv", "cb", "y", "b");
	tnode(o, "TBcast", "bc", "a,b", "s");
	tnode(o, "TAdd", "add", "s,s", "t");
	tnode(o, "TPlain", "plain", "t", "out");
	m = compile_ok(o);
	assert_false(m->values[m->output_ids[0]].shape_static);
	assert_int_equal(m->n_nhwc, 3);         /* a, b, s */
	for (int i = 0; i < 24; i++)
		x[i] = (float)i;
	for (int i = 0; i < 12; i++)
		y[i] = (float)(100 * i);
	assert_int_equal(mfs_exec_new(m, NULL, &e, &err), 0);
	for (int64_t batch = 1; batch <= 2; batch++) {
		const int64_t d[] = { batch, 3, 2, 2 };
		mfs_tensor in[2], out;
		in[0] = f32(4, d, x);
		in[1] = f32(4, dy, y);
		if (mfs_exec_run(e, in, &out, &err))
			fail_msg("%s", err.msg);
		assert_int_equal(out.shape.dims[0], batch);
		for (int i = 0; i < 12 * batch; i++)
			assert_float_equal(((float *)out.data)[i], 2 * (x[i] + y[i % 12]), 0);
		mfs_tensor_release(&out);
		mfs_tensor_release(&in[0]);
		mfs_tensor_release(&in[1]);
		mfs_exec_get_stats(e, &st);
		/* batch 1: t converted once; batch 2: b, then a */
		assert_int_equal(st.layout_converts, batch == 1 ? 1 : 3);
	}
	mfs_exec_free(e);
	mfs_graph_free(m);
}

static void test_layout_convert_roundtrip(void **state)
{
	(void)state;
	static const int64_t d4[] = { 2, 3, 2, 5 };
	float x[60];
	mfs_tensor a, b, c;

	for (int i = 0; i < 60; i++)
		x[i] = (float)i;
	a = f32(4, d4, x);
	b = f32(4, d4, NULL);
	c = f32(4, d4, NULL);
	mfs_layout_convert(&b, &a, MFS_LAYOUT_NHWC);
	assert_int_equal(b.layout, MFS_LAYOUT_NHWC);
	/* element (n=1,c=2,h=1,w=3) sits at ((1*2+1)*5+3)*3+2 in NHWC */
	assert_float_equal(((float *)b.data)[((1 * 2 + 1) * 5 + 3) * 3 + 2],
			   x[((1 * 3 + 2) * 2 + 1) * 5 + 3], 0);
	b.layout = MFS_LAYOUT_NHWC;
	mfs_layout_convert(&c, &b, MFS_LAYOUT_PLAIN);
	assert_memory_equal(c.data, x, sizeof(x));
	mfs_tensor_release(&a);
	mfs_tensor_release(&b);
	mfs_tensor_release(&c);
}

/* BLOCK16 (tensor.h): element (n, c, h, w) of [N, 32, H, W] sits at
 * ((n*2 + c/16)*H*W + h*W + w)*16 + c%16, and back to plain is exact. */
static void test_layout_block16_roundtrip(void **state)
{
	(void)state;
	static const int64_t d4[] = { 2, 32, 3, 5 };
	enum { NUM = 2 * 32 * 3 * 5 };
	float *x = malloc(sizeof(float) * NUM);
	mfs_tensor a, b, c;

	for (int i = 0; i < NUM; i++)
		x[i] = (float)i;
	a = f32(4, d4, x);
	b = f32(4, d4, NULL);
	c = f32(4, d4, NULL);
	mfs_layout_convert(&b, &a, MFS_LAYOUT_BLOCK16);
	assert_int_equal(b.layout, MFS_LAYOUT_BLOCK16);
	for (int n = 0; n < 2; n++)
		for (int ch = 0; ch < 32; ch++)
			for (int p = 0; p < 15; p++)
				assert_float_equal(((float *)b.data)[((n * 2 + ch / 16) * 15 + p) * 16 + ch % 16],
						   x[(n * 32 + ch) * 15 + p], 0);
	mfs_layout_convert(&c, &b, MFS_LAYOUT_PLAIN);
	assert_memory_equal(c.data, x, sizeof(float) * NUM);
	mfs_tensor_release(&a);
	mfs_tensor_release(&b);
	mfs_tensor_release(&c);
	free(x);
}

/* BLOCK16 with 24 channels: two blocks, the second's last 8 lanes zero;
 * the storage is 32 channels' worth; back to plain is exact. */
static void test_layout_block16_padded(void **state)
{
	(void)state;
	static const int64_t d4[] = { 2, 24, 2, 3 };
	enum { NUM = 2 * 24 * 6, PADDED = 2 * 32 * 6 };
	float x[NUM], blk[PADDED], back[NUM];
	mfs_tensor a, b, c;
	size_t bytes;

	for (int i = 0; i < NUM; i++)
		x[i] = (float)i + 1;
	a = f32(4, d4, x);
	b = a;
	b.data = blk;
	b.layout = MFS_LAYOUT_BLOCK16;
	assert_true(mfs_tensor_storage_bytes(&b, &bytes));
	assert_int_equal(bytes, sizeof(blk));
	memset(blk, 0x7f, sizeof(blk));        /* the pad lanes must be cleared */
	mfs_layout_convert(&b, &a, MFS_LAYOUT_BLOCK16);
	for (int n = 0; n < 2; n++)
		for (int ch = 0; ch < 32; ch++)
			for (int p = 0; p < 6; p++)
				assert_float_equal(blk[((n * 2 + ch / 16) * 6 + p) * 16 + ch % 16],
						   ch < 24 ? x[(n * 24 + ch) * 6 + p] : 0.0f, 0);
	c = a;
	c.data = back;
	c.layout = MFS_LAYOUT_PLAIN;
	mfs_layout_convert(&c, &b, MFS_LAYOUT_PLAIN);
	assert_memory_equal(back, x, sizeof(x));
	mfs_tensor_release(&a);
}

/* Real convolutions x[1,3,6,6] -> A (16, 3x3) -> a -> B (depthwise 16)
 * -> b -> C (1x1 16) -> c -> D (1x1 to 24) -> d -> E (1x1 to 16) -> y.
 * The plan stores a, b, c, d BLOCK16 (made and read by convolutions,
 * each producer's X blocked or a plain 3-channel input; d's 24 channels
 * padded to 32), y is the graph's output (plain).  With side set, an
 * Identity also reads b: b is then NHWC, and so are c and d, whose
 * producers' X is no longer blocked. */
static onnx_model *block16_graph(bool side)
{
	onnx_model *o = gb_new(13);
	static const int64_t dx[] = { 1, 3, 6, 6 }, wa[] = { 16, 3, 3, 3 }, wb[] = { 16, 1, 3, 3 };
	static const int64_t wc[] = { 16, 16, 1, 1 }, wd[] = { 24, 16, 1, 1 }, we[] = { 16, 24, 1, 1 };
	static const int64_t pads[] = { 1, 1, 1, 1 };
	float w[16 * 24 * 1 * 1 + 16 * 27];
	onnx_node *n;

	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		w[i] = (float)((i * 37) % 19) / 19.0f - 0.45f;
	gb_input(o, "x", MFS_DT_FLOAT, 4, dx);
	gb_output(o, "y");
	if (side)
		gb_output(o, "side");
	gb_init_f32(o, "WA", 4, wa, w);
	gb_init_f32(o, "WB", 4, wb, w);
	gb_init_f32(o, "WC", 4, wc, w);
	gb_init_f32(o, "WD", 4, wd, w);
	gb_init_f32(o, "WE", 4, we, w);
	n = gb_node(o, "", "Conv", "A", "x,WA", "a");
	attr_ints(n, "pads", 4, pads);
	n = gb_node(o, "", "Conv", "B", "a,WB", "b");
	attr_ints(n, "pads", 4, pads);
	attr_int(n, "group", 16);
	gb_node(o, "", "Conv", "C", "b,WC", "c");
	gb_node(o, "", "Conv", "D", "c,WD", "d");
	gb_node(o, "", "Conv", "E", "d,WE", "y");
	if (side)
		gb_node(o, "", "Identity", "side", "b", "side");
	return o;
}

static void run_block16_graph(mfs_graph *m, float *y)
{
	static const int64_t dx[] = { 1, 3, 6, 6 };
	float x[108];
	mfs_exec *e;
	mfs_error err;
	mfs_tensor in, out[2] = { { 0 } };

	for (int i = 0; i < 108; i++)
		x[i] = (float)((i * 13) % 11) / 11.0f - 0.5f;
	assert_int_equal(mfs_exec_new(m, NULL, &e, &err), 0);
	in = f32(4, dx, x);
	assert_int_equal(mfs_exec_run(e, &in, out, &err), 0);
	assert_int_equal(out[0].layout, MFS_LAYOUT_PLAIN);
	assert_int_equal(out[0].nbytes, sizeof(float) * 16 * 36);
	memcpy(y, out[0].data, out[0].nbytes);
	for (int k = 0; k < m->n_outputs; k++)
		mfs_tensor_release(&out[k]);
	mfs_tensor_release(&in);
	mfs_exec_free(e);
}

/* x [1, 16, 6, 6] -> 3x3 Conv -> c -> 1x1 Conv -> y: c's producer reads
 * a plain X of 16 channels, so c is blocked only where the 3x3 layer
 * computes in nChw16c anyway, on Winograd (op.h computes_blocked); the
 * result is the same either way. */
static void wino_chain_run(float *y, int *blocked)
{
	onnx_model *o = gb_new(13);
	static const int64_t dx[] = { 1, 16, 6, 6 }, w3[] = { 16, 16, 3, 3 }, w1[] = { 16, 16, 1, 1 };
	static const int64_t pads[] = { 1, 1, 1, 1 };
	float w[16 * 16 * 9], x[16 * 36];
	mfs_exec *e;
	mfs_error err;
	mfs_tensor in, out = { 0 };

	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		w[i] = (float)((i * 37) % 19) / 19.0f - 0.45f;
	for (int i = 0; i < 16 * 36; i++)
		x[i] = (float)((i * 13) % 11) / 11.0f - 0.5f;
	gb_input(o, "x", MFS_DT_FLOAT, 4, dx);
	gb_output(o, "y");
	gb_init_f32(o, "W3", 4, w3, w);
	gb_init_f32(o, "W1", 4, w1, w);
	onnx_node *n = gb_node(o, "", "Conv", "three", "x,W3", "c");
	attr_ints(n, "pads", 4, pads);
	gb_node(o, "", "Conv", "one", "c,W1", "y");
	mfs_graph *m = compile_ok(o);
	*blocked = m->n_block16;
	assert_int_equal(mfs_exec_new(m, NULL, &e, &err), 0);
	in = f32(4, dx, x);
	assert_int_equal(mfs_exec_run(e, &in, &out, &err), 0);
	memcpy(y, out.data, sizeof(float) * 16 * 36);
	mfs_tensor_release(&out);
	mfs_tensor_release(&in);
	mfs_exec_free(e);
	mfs_graph_free(m);
}

static void test_layout_block16_winograd(void **state)
{
	(void)state;
	float ref[16 * 36], got[16 * 36];
	int blocked;

	setenv("MFS_WINOGRAD", "0", 1);
	wino_chain_run(ref, &blocked);
	assert_int_equal(blocked, 0);
	setenv("MFS_WINOGRAD", "1", 1);
	wino_chain_run(got, &blocked);
	unsetenv("MFS_WINOGRAD");
	assert_int_equal(blocked, 1);      /* c */
	for (int i = 0; i < 16 * 36; i++)
		assert_float_equal(got[i], ref[i], 1e-4);
}

static void test_layout_block16_plan(void **state)
{
	(void)state;
	float ref[16 * 36], got[16 * 36];
	mfs_graph *m;

	setenv("MFS_LAYOUT", "plain", 1);
	m = compile_ok(block16_graph(false));
	assert_int_equal(m->n_block16, 0);
	run_block16_graph(m, ref);
	mfs_graph_free(m);

	unsetenv("MFS_LAYOUT");
	m = compile_ok(block16_graph(false));
	assert_int_equal(m->n_block16, 4);     /* a, b, c, d */
	assert_int_equal(m->n_nhwc, 0);
	run_block16_graph(m, got);
	mfs_graph_free(m);
	for (int i = 0; i < 16 * 36; i++)
		assert_float_equal(got[i], ref[i], 1e-4);

	m = compile_ok(block16_graph(true));
	assert_int_equal(m->n_block16, 1);     /* a */
	run_block16_graph(m, got);
	mfs_graph_free(m);
	for (int i = 0; i < 16 * 36; i++)
		assert_float_equal(got[i], ref[i], 1e-4);

	/* the im2col path reads and writes the blocked (and padded) values
	 * too */
	setenv("MFS_CONV", "im2col", 1);
	m = compile_ok(block16_graph(false));
	assert_int_equal(m->n_block16, 4);
	run_block16_graph(m, got);
	mfs_graph_free(m);
	unsetenv("MFS_CONV");
	for (int i = 0; i < 16 * 36; i++)
		assert_float_equal(got[i], ref[i], 1e-4);

	setenv("MFS_LAYOUT", "nhwc", 1);
	m = compile_ok(block16_graph(false));
	unsetenv("MFS_LAYOUT");
	assert_int_equal(m->n_block16, 0);
	run_block16_graph(m, got);
	mfs_graph_free(m);
	for (int i = 0; i < 16 * 36; i++)
		assert_float_equal(got[i], ref[i], 1e-4);
}

static void test_tensor_size_limit(void **state)
{
	(void)state;
	onnx_model *o = gb_new(13);
	const int64_t dyn[] = { -1 };
	const int64_t d100[] = { 100 };
	mfs_graph *m;
	mfs_exec *e;
	mfs_error err;
	mfs_tensor in, out;

	gb_input(o, "x", MFS_DT_FLOAT, 1, dyn);
	gb_output(o, "y");
	tnode(o, "TCopy", "big", "x", "y");
	m = compile_ok(o);
	assert_int_equal(mfs_exec_new(m, NULL, &e, &err), 0);
	in = f32(1, d100, NULL);
	mfs_engine_set_max_tensor_bytes(399);
	assert_int_equal(mfs_exec_run(e, &in, &out, &err), -EFBIG);
	assert_string_equal(err.msg, "model 'm': TCopy 'big': output 0 of shape [100] is larger than the 399-byte limit");
	mfs_engine_set_max_tensor_bytes(400);
	assert_int_equal(mfs_exec_run(e, &in, &out, &err), 0);
	mfs_tensor_release(&out);
	mfs_engine_set_max_tensor_bytes((size_t)16 << 30);
	mfs_tensor_release(&in);
	mfs_exec_free(e);
	mfs_graph_free(m);
}

/* One compiled graph, four execution contexts on four threads. */
struct worker {
	const mfs_graph *m;
	int id, failures;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	mfs_exec *e;
	mfs_error err;
	const int64_t d[] = { 2, 3 };
	float x[6];

	if (mfs_exec_new(w->m, NULL, &e, &err)) {
		w->failures++;
		return NULL;
	}
	for (int r = 0; r < 200; r++) {
		mfs_tensor in, out;
		for (int i = 0; i < 6; i++)
			x[i] = (float)(w->id * 1000 + r + i);
		in = (mfs_tensor){ .dtype = MFS_DT_FLOAT, .shape = { 2, { d[0], d[1] } },
				   .data = x, .nbytes = sizeof(x) };
		if (mfs_exec_run(e, &in, &out, &err)) {
			w->failures++;
			continue;
		}
		for (int i = 0; i < 6; i++)
			if (((float *)out.data)[i] != 2 * x[i] + 1)
				w->failures++;
		mfs_tensor_release(&out);
	}
	mfs_exec_free(e);
	return NULL;
}

static void test_shared_model_threads(void **state)
{
	(void)state;
	onnx_model *o = gb_new(13);
	const float ones[] = { 1, 1, 1, 1, 1, 1 };
	pthread_t th[4];
	struct worker w[4];
	mfs_graph *m;

	gb_input(o, "x", MFS_DT_FLOAT, 2, d23);
	gb_init_f32(o, "one", 2, d23, ones);
	gb_output(o, "y");
	tnode(o, "TCopy", "c", "x", "a");
	tnode(o, "TView", "v", "a", "av");
	tnode(o, "TView", "v2", "x", "xv");
	tnode(o, "TAdd", "s", "av,xv", "s1");
	tnode(o, "TView", "v3", "one", "onev");
	tnode(o, "TAdd", "t", "s1,onev", "y");
	m = compile_ok(o);
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ .m = m, .id = i };
		assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(w[i].failures, 0);
	}
	mfs_graph_free(m);
}

/* ---- real model files ---------------------------------------------- */

#define TESTDATA "/usr/share/libonnx-testdata/data/node/"

static int read_pb(const char *path, mfs_tensor *t)
{
	FILE *f = fopen(path, "rb");
	char buf[1 << 16];
	size_t n;
	mfs_error err;
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	return onnx_tensor_decode(buf, n, NULL, t, NULL, &err);
}

static void run_case(const char *name, int n_in)
{
	char path[512];
	mfs_graph *m;
	mfs_exec *e;
	mfs_error err;
	mfs_tensor in[4], out, want;

	snprintf(path, sizeof(path), TESTDATA "%s/model.onnx", name);
	if (access(path, R_OK) != 0)
		skip();
	if (mfs_graph_load(path, name, &m, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(mfs_graph_n_inputs(m), n_in);
	for (int i = 0; i < n_in; i++) {
		snprintf(path, sizeof(path), TESTDATA "%s/test_data_set_0/input_%d.pb",
			 name, i);
		assert_int_equal(read_pb(path, &in[i]), 0);
	}
	snprintf(path, sizeof(path), TESTDATA "%s/test_data_set_0/output_0.pb", name);
	assert_int_equal(read_pb(path, &want), 0);
	assert_int_equal(mfs_exec_new(m, NULL, &e, &err), 0);
	if (mfs_exec_run(e, in, &out, &err))
		fail_msg("%s", err.msg);
	assert_true(mfs_shape_equal(&out.shape, &want.shape));
	assert_int_equal(out.nbytes, want.nbytes);
	assert_memory_equal(out.data, want.data, want.nbytes);
	mfs_tensor_release(&out);
	mfs_tensor_release(&want);
	for (int i = 0; i < n_in; i++)
		mfs_tensor_release(&in[i]);
	mfs_exec_free(e);
	mfs_graph_free(m);
}

static void test_real_identity(void **state)
{
	(void)state;
	mfs_graph_set_op_lookup(NULL);
	run_case("test_identity", 1);
}

static void test_real_reshape(void **state)
{
	(void)state;
	mfs_graph_set_op_lookup(NULL);
	run_case("test_reshape_reordered_all_dims", 2);
}

static void test_real_add(void **state)
{
	(void)state;
	mfs_graph_set_op_lookup(NULL);
	run_case("test_add", 2);
}

/* A Conv node with pads 1 on every side. */
static void gb_conv_pad1(onnx_model *o, const char *name, const char *ins, const char *out)
{
	static const int64_t pads[] = { 1, 1, 1, 1 };
	attr_ints(gb_node(o, "", "Conv", name, ins, out), "pads", 4, pads);
}

/* Conv -> Relu -> Conv -> Add(residual) -> GlobalAveragePool with the
 * registry's operators: the NHWC plan and the plain run agree. */
static onnx_model *cnn_graph(void)
{
	onnx_model *o = gb_new(13);
	static const int64_t dx[] = { -1, 8, 6, 6 }, dw[] = { 8, 8, 3, 3 }, db[] = { 8 };
	float w1[576], w2[576], b[8];
	uint32_t seed = 7;

	for (int i = 0; i < 576; i++) {
		seed = seed * 1664525u + 1013904223u;
		w1[i] = (float)(seed >> 8) / (float)(1 << 24) - 0.5f;
		seed = seed * 1664525u + 1013904223u;
		w2[i] = (float)(seed >> 8) / (float)(1 << 24) - 0.5f;
	}
	for (int i = 0; i < 8; i++)
		b[i] = 0.1f * (float)i - 0.3f;
	gb_input(o, "x", MFS_DT_FLOAT, 4, dx);
	gb_init_f32(o, "w1", 4, dw, w1);
	gb_init_f32(o, "w2", 4, dw, w2);
	gb_init_f32(o, "b", 1, db, b);
	gb_output(o, "y");
	for (int k = 0; k < 2; k++) {
		gb_conv_pad1(o, k ? "conv2" : "conv1", k ? "r,w2,b" : "x,w1,b", k ? "c2" : "c1");
		if (!k)
			gb_node(o, "", "Relu", "relu", "c1", "r");
	}
	gb_node(o, "", "Add", "add", "c2,r", "s");
	gb_node(o, "", "GlobalAveragePool", "gap", "s", "y");
	return o;
}

/* Two runs of m on a [2, 8, 6, 6] input; y: output 0 (16 floats).
 * Returns the outputs given their input 3's block (op.h:
 * MFS_OP_OUT0_OVER_IN3). */
static uint64_t run_cnn(mfs_graph *m, float *y)
{
	static const int64_t d[] = { 2, 8, 6, 6 };
	float x[576];
	mfs_exec *e;
	mfs_exec_stats st;
	mfs_error err;
	mfs_tensor in, out[2];

	for (int i = 0; i < 576; i++)
		x[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
	assert_int_equal(mfs_exec_new(m, NULL, &e, &err), 0);
	in = f32(4, d, x);
	for (int r = 0; r < 2; r++) {
		if (mfs_exec_run(e, &in, out, &err))
			fail_msg("%s", err.msg);
		assert_int_equal(out[0].nbytes, 16 * sizeof(float));
		memcpy(y, out[0].data, out[0].nbytes);
		for (int k = 0; k < m->n_outputs; k++)
			mfs_tensor_release(&out[k]);
	}
	mfs_exec_get_stats(e, &st);
	mfs_tensor_release(&in);
	mfs_exec_free(e);
	return st.outputs_over_inputs;
}

static void test_real_cnn_layouts_agree(void **state)
{
	(void)state;
	mfs_graph *m;
	float y_nhwc[16], y_plain[16];

	mfs_graph_set_op_lookup(NULL);
	m = compile_ok(cnn_graph());
	/* r and s: conv2 and the Add are one FusedConv (rewrite_residual.c);
	 * r, read only by it (as X and Z), is blocked with its 8 channels
	 * padded to 16 (graph_plan.c plan_block16), s read by the pool NHWC */
	assert_int_equal(m->n_nhwc, 1);
	assert_int_equal(m->n_block16, 1);
	run_cnn(m, y_nhwc);
	mfs_graph_free(m);
	setenv("MFS_LAYOUT", "nhwc", 1);
	m = compile_ok(cnn_graph());
	unsetenv("MFS_LAYOUT");
	assert_int_equal(m->n_nhwc, 2);
	assert_int_equal(m->n_block16, 0);
	run_cnn(m, y_plain);
	mfs_graph_free(m);
	for (int i = 0; i < 16; i++)
		assert_float_equal(y_nhwc[i], y_plain[i], 1e-4);
	setenv("MFS_LAYOUT", "plain", 1);
	m = compile_ok(cnn_graph());
	unsetenv("MFS_LAYOUT");
	assert_int_equal(m->n_nhwc, 0);
	run_cnn(m, y_plain);
	mfs_graph_free(m);
	for (int i = 0; i < 16; i++)
		assert_float_equal(y_nhwc[i], y_plain[i], 1e-4);
}

/* x -> conv1 -> relu -> r; r -> conv2 -> c2; conv3(c2) + r -> s (one
 * FusedConv with Z = r, rewrite_residual.c); GlobalAveragePool(s) -> y.
 * r's last reader is that FusedConv unless r is a graph output too. */
static onnx_model *resid_graph(bool r_out)
{
	onnx_model *o = gb_new(13);
	static const int64_t dx[] = { -1, 8, 6, 6 }, dw[] = { 8, 8, 3, 3 }, db[] = { 8 };
	static const char *names[3] = { "conv1", "conv2", "conv3" };
	static const char *ins[3] = { "x,w0,b", "r,w1,b", "c2,w2,b" };
	static const char *outs[3] = { "c1", "c2", "c3" };
	float w[3][576], b[8];
	uint32_t seed = 11;

	for (int k = 0; k < 3; k++)
		for (int i = 0; i < 576; i++) {
			seed = seed * 1664525u + 1013904223u;
			w[k][i] = (float)(seed >> 8) / (float)(1 << 24) - 0.5f;
		}
	for (int i = 0; i < 8; i++)
		b[i] = 0.1f * (float)i - 0.3f;
	gb_input(o, "x", MFS_DT_FLOAT, 4, dx);
	gb_init_f32(o, "w0", 4, dw, w[0]);
	gb_init_f32(o, "w1", 4, dw, w[1]);
	gb_init_f32(o, "w2", 4, dw, w[2]);
	gb_init_f32(o, "b", 1, db, b);
	gb_output(o, "y");
	if (r_out)
		gb_output(o, "r");
	for (int k = 0; k < 3; k++) {
		gb_conv_pad1(o, names[k], ins[k], outs[k]);
		if (!k)
			gb_node(o, "", "Relu", "relu", "c1", "r");
	}
	gb_node(o, "", "Add", "add", "c3,r", "s");
	gb_node(o, "", "GlobalAveragePool", "gap", "s", "y");
	return o;
}

/* run_cnn on resid_graph. */
static uint64_t run_resid(bool r_out, float *y)
{
	mfs_graph *m = compile_ok(resid_graph(r_out));
	uint64_t shared = run_cnn(m, y);
	mfs_graph_free(m);
	return shared;
}

/* The residual's FusedConv writes over Z where Z dies there and has the
 * output's layout, with the results of the run that does not; never
 * where Z is read later (a graph output) or under MFS_Z_IN_PLACE=0.  The
 * default plan stores r blocked (read only by convolutions) and s NHWC
 * (read by the pool): layouts differ, no sharing. */
static void test_output_over_dying_z(void **state)
{
	(void)state;
	static const char *plans[3] = { NULL, "nhwc", "plain" };
	static const uint64_t shared[3] = { 0, 2, 2 };
	float y[16], y_apart[16];

	mfs_graph_set_op_lookup(NULL);
	for (int p = 0; p < 3; p++) {
		if (plans[p])
			setenv("MFS_LAYOUT", plans[p], 1);
		assert_int_equal(run_resid(false, y), shared[p]);
		assert_int_equal(run_resid(true, y_apart), 0);
		for (int i = 0; i < 16; i++)
			assert_float_equal(y[i], y_apart[i], 1e-5);
		setenv("MFS_Z_IN_PLACE", "0", 1);
		assert_int_equal(run_resid(false, y_apart), 0);
		unsetenv("MFS_Z_IN_PLACE");
		for (int i = 0; i < 16; i++)
			assert_float_equal(y[i], y_apart[i], 1e-5);
		unsetenv("MFS_LAYOUT");
	}
}

static void test_real_missing_file(void **state)
{
	(void)state;
	mfs_graph *m;
	mfs_error err;
	assert_true(mfs_graph_load("/nonexistent/model.onnx", "gone", &m, &err) < 0);
	assert_null(m);
	assert_non_null(strstr(err.msg, "model 'gone'"));
}

/* Overlapping runs share the threads instead of each taking all. */
/* A node of work up to the grain runs on one thread, a larger one on all
 * of the run's (node_threads.h); prepare sees the same
 * count as run; the run's count is back when the run ends; grain 0 turns
 * the cap off. */
static void test_node_threads_applied(void **state)
{
	(void)state;
	static const int64_t dyn[] = { -1, 1000 }, small[] = { 1, 1000 }, large[] = { 64, 1000 };
	static float xs[64 * 1000];
	mfs_error err;
	mfs_exec *e;
	mfs_tensor in, out;
	int was = omp_get_max_threads();

	for (int pass = 0; pass < 2; pass++) {
		onnx_model *o = gb_new(13);
		gb_input(o, "x", MFS_DT_FLOAT, 2, dyn);
		gb_output(o, "y");
		tnode(o, "TThreads", "t", "x", "y");
		mfs_graph *m = compile_ok(o);
		setenv("MFS_THREAD_GRAIN", pass ? "0" : "65536", 1);
		assert_int_equal(mfs_exec_new(m, NULL, &e, &err), 0);
		omp_set_num_threads(4);
		/* 1000 elements: 16000 multiply-adds of work, under one grain */
		in = f32(2, small, xs);
		threads_at_run = threads_at_prepare = 0;
		assert_int_equal(mfs_exec_run(e, &in, &out, &err), 0);
		assert_int_equal(threads_at_run, pass ? 4 : 1);
		assert_int_equal(threads_at_prepare, threads_at_run);
		assert_int_equal(omp_get_max_threads(), 4);
		mfs_tensor_release(&out);
		mfs_tensor_release(&in);
		/* 64000 elements, not a product: all of the run's 4 */
		in = f32(2, large, xs);
		assert_int_equal(mfs_exec_run(e, &in, &out, &err), 0);
		assert_int_equal(threads_at_run, 4);
		mfs_tensor_release(&out);
		mfs_tensor_release(&in);
		mfs_exec_free(e);
		mfs_graph_free(m);
	}
	unsetenv("MFS_THREAD_GRAIN");
	omp_set_num_threads(was);
}

static const mfs_op_def *lookup_or_registry(const char *domain, const char *op, int64_t opset)
{
	const mfs_op_def *d = lookup(domain, op, opset);
	return d ? d : mfs_op_find(domain, op, opset);
}

/* A node that runs a body (If) hands the run's threads on, whatever the
 * node before it got: after a one-element TCopy (one thread), the If
 * touches one element, but the TThreads in its branch, over a large value
 * of the outer graph, gets all of the run's 4. */
static void test_body_gets_run_threads(void **state)
{
	(void)state;
	onnx_model *o = gb_new(13), *t = gb_new(13), *e = gb_new(13);
	static const int64_t big[] = { 128, 1000 }, one[] = { 1 };
	static float xs[128 * 1000];
	uint8_t cv = 1;
	float sv = 2;
	mfs_error err;
	mfs_exec *ex;
	mfs_tensor in[3], out;
	int was = omp_get_max_threads();
	onnx_node *n;

	mfs_graph_set_op_lookup(lookup_or_registry);
	gb_input(o, "c", MFS_DT_BOOL, 0, NULL);
	gb_input(o, "x", MFS_DT_FLOAT, 2, big);
	gb_input(o, "s", MFS_DT_FLOAT, 1, one);
	tnode(o, "TCopy", "small", "s", "s2");
	tnode(t, "TThreads", "tt", "x", "tv");
	gb_node(t, "", "ReduceSum", "rs", "tv", "tr");
	gb_node(t, "", "Add", "ta", "tr,s2", "ty");
	gb_output(t, "ty");
	gb_node(e, "", "ReduceSum", "rs2", "x", "er");
	gb_node(e, "", "Add", "ea", "er,s2", "ey");
	gb_output(e, "ey");
	n = gb_node(o, "", "If", "if", "c", "y");
	gb_attr(n, "then_branch", ONNX_ATTR_GRAPH)->g = t->graph;
	gb_attr(n, "else_branch", ONNX_ATTR_GRAPH)->g = e->graph;
	t->graph = e->graph = NULL;
	onnx_model_free(t);
	onnx_model_free(e);
	gb_output(o, "y");
	mfs_graph *m = compile_ok(o);
	setenv("MFS_THREAD_GRAIN", "65536", 1);
	assert_int_equal(mfs_exec_new(m, NULL, &ex, &err), 0);
	omp_set_num_threads(4);
	in[0] = (mfs_tensor){ .dtype = MFS_DT_BOOL, .data = &cv, .nbytes = 1 };
	in[1] = f32(2, big, xs);
	in[2] = f32(1, one, &sv);
	threads_at_run = 0;
	if (mfs_exec_run(ex, in, &out, &err))
		fail_msg("run failed: %s", err.msg);
	assert_int_equal(threads_at_run, 4);
	unsetenv("MFS_THREAD_GRAIN");
	mfs_tensor_release(&out);
	mfs_tensor_release(&in[1]);
	mfs_tensor_release(&in[2]);
	mfs_exec_free(ex);
	mfs_graph_free(m);
	omp_set_num_threads(was);
}

static void test_thread_share(void **state)
{
	(void)state;
	assert_int_equal(mfs_engine_thread_share(16, 1), 16);
	assert_int_equal(mfs_engine_thread_share(16, 4), 4);
	assert_int_equal(mfs_engine_thread_share(16, 3), 5);
	assert_int_equal(mfs_engine_thread_share(2, 3), 1);
	assert_int_equal(mfs_engine_thread_share(8, 0), 8);
}

/* mfs_engine_thread_warm makes the calling thread's OpenMP team at once:
 * a new thread's call adds the team's other threads to the process (not
 * at that thread's first run). */
static int task_count(void)
{
	int n = 0;
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

static void *warm_and_count(void *arg)
{
	int *counts = arg;
	counts[0] = task_count();
	mfs_engine_thread_warm();
	counts[1] = task_count();
	return NULL;
}

static void test_thread_warm_makes_the_team(void **state)
{
	(void)state;
	mfs_engine_set_threads(4);
	int counts[2];
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, warm_and_count, counts), 0);
	pthread_join(th, NULL);
	assert_true(counts[1] >= counts[0] + 3);
}

int main(void)
{
	/* Tests here count the threads a run takes; on a busy machine the
	 * contention check (cpu_contention.h, tested on its own) would put
	 * runs on one thread: a fresh clone's CI run failed two of them so
	 * while other work kept both cores busy. */
	setenv("MFS_CONTENTION", "0", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_topo_sort_and_run, setup),
		cmocka_unit_test(test_thread_warm_makes_the_team),
		cmocka_unit_test_setup(test_cycle_rejected, setup),
		cmocka_unit_test_setup(test_undefined_input, setup),
		cmocka_unit_test_setup(test_output_defined_twice, setup),
		cmocka_unit_test_setup(test_missing_graph_output, setup),
		cmocka_unit_test_setup(test_unsupported_op, setup),
		cmocka_unit_test_setup(test_first_input_output_required, setup),
		cmocka_unit_test_setup(test_constant_folding, setup),
		cmocka_unit_test_setup(test_initializer_input_is_constant, setup),
		cmocka_unit_test_setup(test_nondeterministic_not_folded, setup),
		cmocka_unit_test_setup(test_dead_nodes_dropped, setup),
		cmocka_unit_test_setup(test_buffer_reuse, setup),
		cmocka_unit_test_setup(test_views, setup),
		cmocka_unit_test_setup(test_output_handoff, setup),
		cmocka_unit_test_setup(test_input_validation, setup),
		cmocka_unit_test_setup(test_optional_inputs_outputs, setup),
		cmocka_unit_test_setup(test_op_errors_name_node, setup),
		cmocka_unit_test_setup(test_dynamic_shape_and_prepare, setup),
		cmocka_unit_test_setup(test_output_is_input_or_constant, setup),
		cmocka_unit_test_setup(test_layout_nhwc, setup),
		cmocka_unit_test_setup(test_layout_conv_writes_plan, setup),
		cmocka_unit_test_setup(test_layout_demoted, setup),
		cmocka_unit_test_setup(test_layout_infer_refuses, setup),
		cmocka_unit_test_setup(test_layout_dynamic_batch, setup),
		cmocka_unit_test_setup(test_layout_convert_roundtrip, setup),
		cmocka_unit_test_setup(test_layout_block16_roundtrip, setup),
		cmocka_unit_test_setup(test_layout_block16_padded, setup),
		cmocka_unit_test_setup(test_layout_block16_plan, setup),
		cmocka_unit_test_setup(test_layout_block16_winograd, setup),
		cmocka_unit_test_setup(test_shared_model_threads, setup),
		cmocka_unit_test_setup(test_tensor_size_limit, setup),
		cmocka_unit_test_setup(test_real_identity, setup),
		cmocka_unit_test_setup(test_real_reshape, setup),
		cmocka_unit_test_setup(test_real_add, setup),
		cmocka_unit_test_setup(test_real_cnn_layouts_agree, setup),
		cmocka_unit_test_setup(test_output_over_dying_z, setup),
		cmocka_unit_test_setup(test_real_missing_file, setup),
		cmocka_unit_test(test_thread_share),
		cmocka_unit_test_setup(test_node_threads_applied, setup),
		cmocka_unit_test_setup(test_body_gets_run_threads, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

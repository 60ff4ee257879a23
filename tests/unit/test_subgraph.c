/* Unit tests for body graphs (graph.c's scoping, subgraph.c) and the
 * control-flow operators If, Loop and Scan (exec/cpu/ops/if.c, loop.c,
 * scan.c).  Graphs are built by hand; bodies read values of the graphs
 * around them by name, the way exporters write them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "graph.h"
#include "ocl_backend.h"
#include "subgraph.h"

#include "graph_builder.h"

static const int64_t d1[] = { 1 };
static const int64_t d3[] = { 3 };

/* A body: built as a model of its own, its graph then moved into a
 * graph attribute of n. */
static void attr_body(onnx_node *n, const char *name, onnx_model *b)
{
	gb_attr(n, name, ONNX_ATTR_GRAPH)->g = b->graph;
	b->graph = NULL;
	onnx_model_free(b);
}

static mfs_graph *compile_ok(onnx_model *o)
{
	mfs_graph *m = NULL;
	mfs_error err;
	if (mfs_graph_compile(o, "m", &m, &err))
		fail_msg("compile failed: %s", err.msg);
	return m;
}

static mfs_tensor f32(int rank, const int64_t *dims, float *data)
{
	mfs_tensor t = { .dtype = MFS_DT_FLOAT, .data = data,
			 .shape.rank = rank };
	memcpy(t.shape.dims, dims, sizeof(int64_t) * (size_t)rank);
	t.nbytes = sizeof(float) * (size_t)mfs_shape_numel(&t.shape);
	return t;
}

/* y = If(c) then x + w else -x, where x is a graph input and w an
 * initializer read only inside the branch: both must stay alive (and w
 * must not be dropped as unread) until the If ran. */
static onnx_model *if_model(void)
{
	onnx_model *o = gb_new(13), *t = gb_new(13), *e = gb_new(13);
	static const float w[3] = { 10, 20, 30 };
	onnx_node *n;

	gb_input(o, "c", MFS_DT_BOOL, 0, NULL);
	gb_input(o, "x", MFS_DT_FLOAT, 1, d3);
	gb_init_f32(o, "w", 1, d3, w);
	gb_node(t, "", "Add", "add", "x,w", "ty");
	gb_output(t, "ty");
	gb_node(e, "", "Neg", "neg", "x", "ey");
	gb_output(e, "ey");
	n = gb_node(o, "", "If", "if", "c", "y");
	attr_body(n, "then_branch", t);
	attr_body(n, "else_branch", e);
	gb_output(o, "y");
	return o;
}

static void run_if(mfs_exec *e, bool c, const float *want)
{
	uint8_t cv = c;
	float x[3] = { 1, 2, 3 };
	mfs_tensor in[2] = {
		{ .dtype = MFS_DT_BOOL, .data = &cv, .nbytes = 1 },
		f32(1, d3, x),
	}, out;
	mfs_error err;

	if (mfs_exec_run(e, in, &out, &err))
		fail_msg("run failed: %s", err.msg);
	assert_int_equal(out.dtype, MFS_DT_FLOAT);
	assert_int_equal(out.shape.rank, 1);
	assert_int_equal(out.shape.dims[0], 3);
	for (int i = 0; i < 3; i++)
		assert_float_equal(((float *)out.data)[i], want[i], 1e-6);
	mfs_tensor_release(&out);
}

static void test_if_reads_outer_scope(void **state)
{
	static const float then_y[3] = { 11, 22, 33 }, else_y[3] = { -1, -2, -3 };
	mfs_graph *g = compile_ok(if_model());
	mfs_exec *e;
	(void)state;

	/* x and w are the If node's inputs after its own (lifetimes) */
	assert_int_equal(g->n_nodes, 1);
	assert_int_equal(g->nodes[0].n_in, 3);
	assert_int_equal(g->nodes[0].n_bodies, 2);
	/* then_branch binds x as an input; w, a constant of the main graph,
	 * is a constant of the branch too (folding, packed weights) */
	assert_int_equal(g->nodes[0].bodies[0]->n_formal, 0);
	assert_int_equal(g->nodes[0].bodies[0]->n_inputs, 1);
	assert_string_equal(g->nodes[0].bodies[0]->inputs[0].name, "x");
	assert_int_equal(mfs_exec_new(g, NULL, &e, NULL), 0);
	run_if(e, true, then_y);
	run_if(e, false, else_y);
	run_if(e, true, then_y);
	mfs_exec_free(e);
	mfs_graph_free(g);
}

/* The memory plan: a value made by a node and read only inside a body
 * lives until the node with the body ran, not only until its producer. */
static void test_outer_value_lifetime(void **state)
{
	onnx_model *o = gb_new(13), *t = gb_new(13), *e = gb_new(13);
	onnx_node *n;
	mfs_graph *g;
	int id = -1;
	(void)state;

	gb_input(o, "c", MFS_DT_BOOL, 0, NULL);
	gb_input(o, "x", MFS_DT_FLOAT, 1, d3);
	gb_node(o, "", "Neg", "neg", "x", "nx");
	gb_node(o, "", "Abs", "abs", "x", "ax");
	gb_node(t, "", "Add", "add", "nx,nx", "ty");
	gb_output(t, "ty");
	gb_node(e, "", "Identity", "id", "ax", "ey");
	gb_output(e, "ey");
	n = gb_node(o, "", "If", "if", "c", "y");
	attr_body(n, "then_branch", t);
	attr_body(n, "else_branch", e);
	gb_output(o, "y");
	g = compile_ok(o);
	assert_int_equal(g->n_nodes, 3);
	assert_string_equal(g->nodes[2].onnx->op_type, "If");
	for (int v = 0; v < g->n_values; v++)
		if (!strcmp(g->values[v].name, "nx"))
			id = v;
	assert_true(id >= 0);
	assert_int_equal(g->values[id].last_use, 2);
	mfs_graph_free(g);
}

/* A body reading a name no enclosing graph defines fails the compile,
 * naming the node and the value. */
static void test_undefined_outer_name(void **state)
{
	onnx_model *o = gb_new(13), *t = gb_new(13), *e = gb_new(13);
	onnx_node *n;
	mfs_graph *g = NULL;
	mfs_error err;
	(void)state;

	gb_input(o, "c", MFS_DT_BOOL, 0, NULL);
	gb_node(t, "", "Neg", "neg", "nowhere", "ty");
	gb_output(t, "ty");
	gb_node(e, "", "Neg", "neg", "c", "ey");
	gb_output(e, "ey");
	n = gb_node(o, "", "If", "if1", "c", "y");
	attr_body(n, "then_branch", t);
	attr_body(n, "else_branch", e);
	gb_output(o, "y");
	assert_int_equal(mfs_graph_compile(o, "m", &g, &err), -EINVAL);
	assert_null(g);
	assert_non_null(strstr(err.msg, "If 'if1'"));
	assert_non_null(strstr(err.msg, "'nowhere'"));
}

/* A graph attribute on an operator that runs none (MFS_OP_BODIES) is
 * ignored like any attribute it does not read: it adds no inputs, even
 * when it names a value nothing defines. */
static void test_graph_attr_of_other_ops_ignored(void **state)
{
	onnx_model *o = gb_new(13), *b = gb_new(13);
	float x[3] = { 1, 2, 3 };
	mfs_tensor in = f32(1, d3, x), out;
	onnx_node *n;
	mfs_graph *g;
	mfs_exec *e;
	(void)state;

	gb_input(o, "x", MFS_DT_FLOAT, 1, d3);
	gb_node(b, "", "Neg", "neg", "nowhere", "by");
	gb_output(b, "by");
	n = gb_node(o, "", "Neg", "neg", "x", "y");
	attr_body(n, "stray", b);
	gb_output(o, "y");
	g = compile_ok(o);
	assert_int_equal(g->nodes[0].n_in, 1);
	assert_int_equal(g->nodes[0].n_bodies, 0);
	assert_int_equal(mfs_exec_new(g, NULL, &e, NULL), 0);
	assert_int_equal(mfs_exec_run(e, &in, &out, NULL), 0);
	assert_float_equal(((float *)out.data)[2], -3, 0);
	mfs_tensor_release(&out);
	mfs_exec_free(e);
	mfs_graph_free(g);
}

/* Loop: M iterations of s = s + x (x from the enclosing graph), the
 * running s as a scan output; with a nested If in the body reading x two
 * levels up.  Final s and the stacked rows are checked for M = 3 and 0. */
static onnx_model *loop_model(void)
{
	onnx_model *o = gb_new(13), *b = gb_new(13), *t = gb_new(13),
		   *e = gb_new(13);
	onnx_node *n;

	gb_input(o, "m", MFS_DT_INT64, 0, NULL);
	gb_input(o, "x", MFS_DT_FLOAT, 1, d1);
	gb_input(o, "s0", MFS_DT_FLOAT, 1, d1);
	gb_input(b, "i", MFS_DT_INT64, 0, NULL);
	gb_input(b, "cin", MFS_DT_BOOL, 0, NULL);
	gb_input(b, "s", MFS_DT_FLOAT, 1, d1);
	/* the nested If always takes then: x + s; else would be -x */
	gb_node(t, "", "Add", "add", "s,x", "ty");
	gb_output(t, "ty");
	gb_node(e, "", "Neg", "neg", "x", "ey");
	gb_output(e, "ey");
	n = gb_node(b, "", "If", "inner", "cin", "s2");
	attr_body(n, "then_branch", t);
	attr_body(n, "else_branch", e);
	gb_node(b, "", "Identity", "c", "cin", "cout");
	gb_node(b, "", "Identity", "row", "s2", "rowv");
	gb_output(b, "cout");
	gb_output(b, "s2");
	/* typed, as exporters write it: after no iteration the empty scan
	 * output takes the declared type */
	vi_add(&b->graph->outputs, &b->graph->n_outputs, "rowv", MFS_DT_FLOAT,
	       1, d1);
	n = gb_node(o, "", "Loop", "loop", "m,,s0", "sN,rows");
	attr_body(n, "body", b);
	gb_output(o, "sN");
	gb_output(o, "rows");
	return o;
}

static void test_loop_carried_and_scan(void **state)
{
	mfs_graph *g = compile_ok(loop_model());
	mfs_exec *e;
	int64_t m = 3;
	float x = 2, s0 = 1;
	mfs_tensor in[3] = {
		{ .dtype = MFS_DT_INT64, .data = &m, .nbytes = 8 },
		f32(1, d1, &x), f32(1, d1, &s0),
	}, out[2];
	mfs_error err;
	(void)state;

	assert_int_equal(mfs_exec_new(g, NULL, &e, NULL), 0);
	if (mfs_exec_run(e, in, out, &err))
		fail_msg("run failed: %s", err.msg);
	assert_float_equal(((float *)out[0].data)[0], 7, 1e-6);
	assert_int_equal(out[1].shape.rank, 2);
	assert_int_equal(out[1].shape.dims[0], 3);
	assert_int_equal(out[1].shape.dims[1], 1);
	assert_float_equal(((float *)out[1].data)[0], 3, 1e-6);
	assert_float_equal(((float *)out[1].data)[1], 5, 1e-6);
	assert_float_equal(((float *)out[1].data)[2], 7, 1e-6);
	mfs_tensor_release(&out[0]);
	mfs_tensor_release(&out[1]);

	m = 0;   /* no iteration: the initial value, no rows */
	if (mfs_exec_run(e, in, out, &err))
		fail_msg("run failed: %s", err.msg);
	assert_float_equal(((float *)out[0].data)[0], 1, 1e-6);
	assert_int_equal(out[1].shape.rank, 2);
	assert_int_equal(out[1].shape.dims[0], 0);
	mfs_tensor_release(&out[0]);
	mfs_tensor_release(&out[1]);

	m = 3;    /* past the engine's iteration limit: EFBIG, in words */
	mfs_engine_set_max_iterations(2);
	assert_int_equal(mfs_exec_run(e, in, out, &err), -EFBIG);
	assert_non_null(strstr(err.msg, "Loop 'loop': more than 2 iterations"));
	mfs_engine_set_max_iterations(INT64_MAX);

	m = -1;   /* a bad trip count type is refused, the context lives on */
	in[0].dtype = MFS_DT_INT32;
	in[0].nbytes = 4;
	assert_int_equal(mfs_exec_run(e, in, out, &err), -EINVAL);
	mfs_exec_free(e);
	mfs_graph_free(g);
}

/* Scan 9: running sum over axis 0, once forward and once backward; the
 * scan output is stacked in the input's direction. */
static void run_scan(int64_t dir, const float *want_rows, float want_sum)
{
	onnx_model *o = gb_new(11), *b = gb_new(11);
	static const int64_t d31[] = { 3, 1 };
	float xs[3] = { 1, 2, 3 }, init = 0;
	mfs_tensor in[2] = { f32(1, d1, &init), f32(2, d31, xs) }, out[2];
	onnx_node *n;
	mfs_graph *g;
	mfs_exec *e;
	mfs_error err;

	gb_input(o, "init", MFS_DT_FLOAT, 1, d1);
	gb_input(o, "xs", MFS_DT_FLOAT, 2, d31);
	gb_input(b, "acc", MFS_DT_FLOAT, 1, d1);
	gb_input(b, "x", MFS_DT_FLOAT, 1, d1);
	gb_node(b, "", "Add", "add", "acc,x", "acc2");
	gb_node(b, "", "Identity", "id", "acc2", "row");
	gb_output(b, "acc2");
	gb_output(b, "row");
	n = gb_node(o, "", "Scan", "scan", "init,xs", "sum,rows");
	attr_body(n, "body", b);
	attr_int(n, "num_scan_inputs", 1);
	attr_ints(n, "scan_input_directions", 1, &dir);
	attr_ints(n, "scan_output_directions", 1, &dir);
	gb_output(o, "sum");
	gb_output(o, "rows");
	g = compile_ok(o);
	assert_int_equal(mfs_exec_new(g, NULL, &e, NULL), 0);
	if (mfs_exec_run(e, in, out, &err))
		fail_msg("run failed: %s", err.msg);
	assert_float_equal(((float *)out[0].data)[0], want_sum, 1e-6);
	assert_int_equal(out[1].shape.dims[0], 3);
	for (int i = 0; i < 3; i++)
		assert_float_equal(((float *)out[1].data)[i], want_rows[i], 1e-6);
	mfs_tensor_release(&out[0]);
	mfs_tensor_release(&out[1]);
	mfs_exec_free(e);
	mfs_graph_free(g);
}

static void test_scan_directions(void **state)
{
	static const float fwd[3] = { 1, 3, 6 }, bwd[3] = { 6, 5, 3 };
	(void)state;
	run_scan(0, fwd, 6);
	/* backward: steps see 3, 2, 1; rows are written from the end */
	run_scan(1, bwd, 6);
}

/* Three levels: a Loop whose body holds an If reading x (two graphs up)
 * and a Scan with its own body reading w (an initializer of the main
 * graph).  The model is the fuzz seed built with onnx.helper; the values
 * were computed by hand (tests/fuzz/corpus/engine/, FUZZING.md):
 * s = s0 - x, then s + x twice; each iteration's tot is a running
 * acc = acc * 0.5 + e over s. */
static void test_nested_scopes(void **state)
{
	mfs_graph *g = NULL;
	mfs_exec *e;
	mfs_error err;
	int64_t m = 3;
	float x[2] = { 1, 2 }, s0[2] = { 10, 20 };
	static const int64_t d2[] = { 2 };
	mfs_tensor in[3] = {
		{ .dtype = MFS_DT_INT64, .data = &m, .nbytes = 8 },
		f32(1, d2, x), f32(1, d2, s0),
	}, out[2];
	static const float tots[3] = { 22.5f, 25.0f, 27.5f };
	(void)state;

	if (mfs_graph_load("tests/fuzz/corpus/engine/nested_loop_if_scan.onnx",
			   "nested", &g, &err))
		fail_msg("load failed: %s", err.msg);
	assert_int_equal(mfs_exec_new(g, NULL, &e, NULL), 0);
	if (mfs_exec_run(e, in, out, &err))
		fail_msg("run failed: %s", err.msg);
	assert_float_equal(((float *)out[0].data)[0], 11, 1e-6);
	assert_float_equal(((float *)out[0].data)[1], 22, 1e-6);
	assert_int_equal(out[1].shape.rank, 1);
	assert_int_equal(out[1].shape.dims[0], 3);
	for (int i = 0; i < 3; i++)
		assert_float_equal(((float *)out[1].data)[i], tots[i], 1e-5);
	mfs_tensor_release(&out[0]);
	mfs_tensor_release(&out[1]);
	mfs_exec_free(e);
	mfs_graph_free(g);
}

/* The OpenCL backend refuses control flow (bodies run on the CPU
 * backend), naming the node, so the router places such a model on the
 * CPU with that reason. */
static void test_opencl_refuses_control_flow(void **state)
{
	mfs_backend *ocl = NULL;
	mfs_graph *g;
	mfs_exec *e = NULL;
	mfs_error err;
	(void)state;

	if (mfs_backend_opencl_new(NULL, &ocl, &err)) {
		print_message("no OpenCL device: %s\n", err.msg);
		skip();
	}
	g = compile_ok(if_model());
	assert_int_equal(mfs_exec_new(g, ocl, &e, &err), -ENOTSUP);
	assert_null(e);
	assert_non_null(strstr(err.msg, "If 'if'"));
	mfs_graph_free(g);
	mfs_backend_opencl_free(ocl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_if_reads_outer_scope),
		cmocka_unit_test(test_outer_value_lifetime),
		cmocka_unit_test(test_undefined_outer_name),
		cmocka_unit_test(test_graph_attr_of_other_ops_ignored),
		cmocka_unit_test(test_loop_carried_and_scan),
		cmocka_unit_test(test_scan_directions),
		cmocka_unit_test(test_nested_scopes),
		cmocka_unit_test(test_opencl_refuses_control_flow),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for exec/graph/fusion.c: which Conv + activation pairs become
 * FusedConv, and that everything else is left alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <math.h>

#include "engine.h"
#include "fusion.h"
#include "graph.h"

/* Nodes are written "Op:in1,in2>out" with malloc'd strings, as the reader
 * makes them (the rewrite frees and replaces some). */
static void make_node(onnx_node *n, const char *spec)
{
	char buf[256], *ins, *outs, *p;
	memset(n, 0, sizeof(*n));
	strcpy(buf, spec);
	ins = strchr(buf, ':');
	*ins++ = 0;
	outs = strchr(ins, '>');
	*outs++ = 0;
	n->op_type = strdup(buf);
	n->domain = strdup("");
	n->name = strdup(outs);
	n->inputs = calloc(4, sizeof(char *));
	for (p = strtok(ins, ","); p; p = strtok(NULL, ","))
		n->inputs[n->n_inputs++] = strdup(strcmp(p, "-") ? p : "");
	n->outputs = calloc(1, sizeof(char *));
	n->outputs[n->n_outputs++] = strdup(outs);
}

static onnx_model *make_model(const char *const *specs, int n, const char *output, int64_t opset)
{
	onnx_model *m = calloc(1, sizeof(*m));
	m->graph = calloc(1, sizeof(onnx_graph));
	m->opsets = calloc(1, sizeof(onnx_opset));
	m->opsets[0].domain = strdup("");
	m->opsets[0].version = opset;
	m->n_opsets = 1;
	m->graph->nodes = calloc((size_t)n, sizeof(onnx_node));
	for (int i = 0; i < n; i++)
		make_node(&m->graph->nodes[i], specs[i]);
	m->graph->n_nodes = n;
	m->graph->outputs = calloc(1, sizeof(onnx_value_info));
	m->graph->outputs[0].name = strdup(output);
	m->graph->n_outputs = 1;
	return m;
}

/* A Constant node's value: a float scalar. */
static void constant_value(onnx_node *n, float v)
{
	mfs_error err;
	mfs_shape s = { .rank = 0 };
	n->attrs = calloc(1, sizeof(onnx_attr));
	n->n_attrs = 1;
	n->attrs[0].name = strdup("value");
	n->attrs[0].type = ONNX_ATTR_TENSOR;
	assert_int_equal(mfs_tensor_alloc(&n->attrs[0].t, MFS_DT_FLOAT, &s, &err), 0);
	((float *)n->attrs[0].t.data)[0] = v;
}

static void test_conv_relu_fused(void **st)
{
	(void)st;
	const char *g[] = { "Conv:x,w,b>c", "Relu:c>r", "Conv:r,w2>c2", "LeakyRelu:c2>y" };
	onnx_model *m = make_model(g, 4, "y", 13);
	mfs_error err = { 0 };

	assert_int_equal(mfs_fuse_graph(m, &err), 2);
	assert_int_equal(m->graph->n_nodes, 2);
	onnx_node *a = &m->graph->nodes[0], *b = &m->graph->nodes[1];
	assert_string_equal(a->op_type, "FusedConv");
	assert_string_equal(a->domain, "com.modelfs");
	assert_string_equal(a->outputs[0], "r");
	assert_string_equal(onnx_attr_string(a, "activation", ""), "Relu");
	assert_string_equal(b->inputs[0], "r");
	assert_string_equal(b->outputs[0], "y");
	assert_string_equal(onnx_attr_string(b, "activation", ""), "LeakyRelu");
	const onnx_attr *pa = onnx_node_attr(b, "activation_params");
	assert_non_null(pa);
	assert_true(pa->n_floats == 1 && pa->floats[0] == 0.01f);
	assert_int_equal(onnx_model_opset(m, "com.modelfs"), 1);
	onnx_model_free(m);
}

static void test_clip_bounds(void **st)
{
	(void)st;
	const char *g[] = { "Constant:>lo", "Constant:>hi", "Conv:x,w>c", "Clip:c,lo,hi>y" };
	onnx_model *m = make_model(g, 4, "y", 13);
	mfs_error err = { 0 };
	constant_value(&m->graph->nodes[0], 0.0f);
	constant_value(&m->graph->nodes[1], 6.0f);

	assert_int_equal(mfs_fuse_graph(m, &err), 1);
	assert_int_equal(m->graph->n_nodes, 3);
	onnx_node *f = &m->graph->nodes[2];
	assert_string_equal(f->op_type, "FusedConv");
	const onnx_attr *pa = onnx_node_attr(f, "activation_params");
	assert_true(pa && pa->n_floats == 2 && pa->floats[0] == 0.0f && pa->floats[1] == 6.0f);
	onnx_model_free(m);

	/* a bound computed at run time: no fusion */
	const char *g2[] = { "Conv:x,w>c", "Clip:c,lo>y" };
	m = make_model(g2, 2, "y", 13);
	assert_int_equal(mfs_fuse_graph(m, &err), 0);
	assert_string_equal(m->graph->nodes[0].op_type, "Conv");
	onnx_model_free(m);
}

static void test_not_fused(void **st)
{
	(void)st;
	mfs_error err = { 0 };
	/* the Conv output is also a graph output */
	const char *g1[] = { "Conv:x,w>c", "Relu:c>y" };
	onnx_model *m = make_model(g1, 2, "c", 13);
	assert_int_equal(mfs_fuse_graph(m, &err), 0);
	onnx_model_free(m);
	/* two readers */
	const char *g2[] = { "Conv:x,w>c", "Relu:c>r", "Add:r,c>y" };
	m = make_model(g2, 3, "y", 13);
	assert_int_equal(mfs_fuse_graph(m, &err), 0);
	assert_int_equal(m->graph->n_nodes, 3);
	onnx_model_free(m);
	/* Conv that is the graph's only node */
	const char *g3[] = { "Conv:x,w>y" };
	m = make_model(g3, 1, "y", 13);
	assert_int_equal(mfs_fuse_graph(m, &err), 0);
	onnx_model_free(m);
	/* turned off */
	const char *g4[] = { "Conv:x,w>c", "Relu:c>y" };
	m = make_model(g4, 2, "y", 13);
	setenv("MFS_FUSE", "0", 1);
	assert_int_equal(mfs_fuse_graph(m, &err), 0);
	unsetenv("MFS_FUSE");
	assert_int_equal(m->graph->n_nodes, 2);
	onnx_model_free(m);
}

/* Through the engine: Conv(pads 1) -> Relu compiles to one FusedConv node
 * and gives what the unfused graph gives. */
static onnx_model *conv_relu_model(void)
{
	const char *g[] = { "Conv:x,w,b>c", "Relu:c>y" };
	onnx_model *m = make_model(g, 2, "y", 13);
	onnx_graph *gr = m->graph;
	mfs_error err;
	onnx_node *conv = &gr->nodes[0];
	conv->attrs = calloc(1, sizeof(onnx_attr));
	conv->n_attrs = 1;
	conv->attrs[0].name = strdup("pads");
	conv->attrs[0].type = ONNX_ATTR_INTS;
	conv->attrs[0].ints = malloc(4 * sizeof(int64_t));
	for (int i = 0; i < 4; i++)
		conv->attrs[0].ints[i] = 1;
	conv->attrs[0].n_ints = 4;

	gr->inputs = calloc(1, sizeof(onnx_value_info));
	gr->n_inputs = 1;
	gr->inputs[0].name = strdup("x");
	gr->inputs[0].dtype = MFS_DT_FLOAT;
	gr->inputs[0].has_shape = true;
	gr->inputs[0].rank = 4;
	const int64_t xd[4] = { 1, 2, 5, 5 };
	memcpy(gr->inputs[0].dims, xd, sizeof(xd));
	gr->outputs[0].dtype = MFS_DT_FLOAT;

	gr->initializers = calloc(2, sizeof(onnx_initializer));
	gr->n_initializers = 2;
	mfs_shape ws = { 4, { 3, 2, 3, 3 } }, bs = { 1, { 3 } };
	gr->initializers[0].name = strdup("w");
	gr->initializers[1].name = strdup("b");
	assert_int_equal(mfs_tensor_alloc(&gr->initializers[0].tensor, MFS_DT_FLOAT, &ws, &err), 0);
	assert_int_equal(mfs_tensor_alloc(&gr->initializers[1].tensor, MFS_DT_FLOAT, &bs, &err), 0);
	for (int i = 0; i < 54; i++)
		((float *)gr->initializers[0].tensor.data)[i] = (float)((i * 7) % 11) / 5.0f - 1.0f;
	for (int i = 0; i < 3; i++)
		((float *)gr->initializers[1].tensor.data)[i] = 0.1f * (float)i - 0.1f;
	return m;
}

static void run_model(bool fuse, float *out, int *n_nodes)
{
	mfs_error err;
	mfs_graph *m;
	mfs_exec *e;
	mfs_tensor in = { 0 }, y = { 0 };
	mfs_shape xs = { 4, { 1, 2, 5, 5 } };

	if (!fuse)
		setenv("MFS_FUSE", "0", 1);
	int rc = mfs_graph_compile(conv_relu_model(), "conv_relu", &m, &err);
	unsetenv("MFS_FUSE");
	if (rc)
		print_error("%s\n", err.msg);
	assert_int_equal(rc, 0);
	*n_nodes = m->n_nodes;
	assert_int_equal(mfs_exec_new(m, NULL, &e, &err), 0);
	assert_int_equal(mfs_tensor_alloc(&in, MFS_DT_FLOAT, &xs, &err), 0);
	for (int i = 0; i < 50; i++)
		((float *)in.data)[i] = (float)((i * 3) % 13) / 6.0f - 1.0f;
	rc = mfs_exec_run(e, &in, &y, &err);
	if (rc)
		print_error("%s\n", err.msg);
	assert_int_equal(rc, 0);
	assert_int_equal(mfs_shape_numel(&y.shape), 75);
	memcpy(out, y.data, 75 * sizeof(float));
	mfs_tensor_release(&in);
	mfs_tensor_release(&y);
	mfs_exec_free(e);
	mfs_graph_free(m);
}

static void test_engine_fused_equals_unfused(void **st)
{
	(void)st;
	float a[75], b[75];
	int na, nb;
	run_model(true, a, &na);
	run_model(false, b, &nb);
	assert_int_equal(na, 1);
	assert_int_equal(nb, 2);
	bool some_zero = false, some_pos = false;
	for (int i = 0; i < 75; i++) {
		assert_true(fabsf(a[i] - b[i]) <= 1e-5f);
		some_zero |= a[i] == 0.0f;
		some_pos |= a[i] > 0.0f;
	}
	assert_true(some_zero && some_pos);   /* the Relu did something */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conv_relu_fused),
		cmocka_unit_test(test_clip_bounds),
		cmocka_unit_test(test_not_fused),
		cmocka_unit_test(test_engine_fused_equals_unfused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

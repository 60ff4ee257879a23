/* test_initializer_input.c - an initializer made an input
 * (onnx_model_initializers_as_inputs, mfs_graph_load_inputs; Triton's
 * L0_initializer_as_input): the compiled graph offers it as an input with
 * the stored value as default, folds nothing through it, runs with a fed
 * value or, left out, with the stored one; and the initializers ONNX
 * Runtime could not feed are refused by name.  Graphs are built by hand
 * (graph_builder.h) with the registry's Neg and Add. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "graph.h"

#include "graph_builder.h"

static const int64_t dims55[2] = { 5, 5 };

/* OUTPUT = INPUT + Neg(INITIALIZER), INITIALIZER a [5,5] initializer of
 * ones that the graph lists among its inputs (as Triton's test model,
 * with a Neg that a compile would fold if it were a constant). */
static onnx_model *model(void)
{
	onnx_model *m = gb_new(13);
	float ones[25];

	for (int i = 0; i < 25; i++)
		ones[i] = 1.0f;
	gb_input(m, "INPUT", MFS_DT_FLOAT, 2, dims55);
	gb_input(m, "INITIALIZER", MFS_DT_FLOAT, 2, dims55);
	gb_init_f32(m, "INITIALIZER", 2, dims55, ones);
	gb_node(m, "", "Neg", "neg", "INITIALIZER", "NEG");
	gb_node(m, "", "Add", "add", "INPUT,NEG", "OUTPUT");
	gb_output(m, "OUTPUT");
	return m;
}

static mfs_tensor filled(float v)
{
	mfs_tensor t;
	mfs_shape s = { .rank = 2, .dims = { 5, 5 } };

	assert_int_equal(mfs_tensor_alloc(&t, MFS_DT_FLOAT, &s, NULL), 0);
	for (int i = 0; i < 25; i++)
		((float *)t.data)[i] = v;
	return t;
}

static const char *const init_name[] = { "INITIALIZER" };

/* Run e on INPUT = 3 and in[1]; every element of OUTPUT must be want. */
static void run_expect(mfs_exec *e, mfs_tensor *in, float want)
{
	mfs_tensor out = { 0 };
	mfs_error err;

	in[0] = filled(3.0f);
	assert_int_equal(mfs_exec_run(e, in, &out, &err), 0);
	assert_int_equal(out.dtype, MFS_DT_FLOAT);
	assert_int_equal(out.shape.rank, 2);
	for (int i = 0; i < 25; i++)
		assert_true(((float *)out.data)[i] == want);
	mfs_tensor_release(&out);
	mfs_tensor_release(&in[0]);
}

static void test_constant_without_the_option(void **state)
{
	(void)state;
	mfs_graph *g;
	mfs_error err;

	assert_int_equal(mfs_graph_compile(model(), "m", &g, &err), 0);
	assert_int_equal(mfs_graph_n_inputs(g), 1);
	assert_string_equal(mfs_graph_input(g, 0)->name, "INPUT");
	assert_null(mfs_graph_input(g, 0)->default_value);
	assert_int_equal(g->n_folded, 1);            /* Neg of a constant */
	mfs_graph_free(g);
}

static void test_fed_and_left_out(void **state)
{
	(void)state;
	onnx_model *o = model();
	mfs_graph *g;
	mfs_exec *e;
	mfs_error err;
	mfs_tensor in[2] = { { 0 } };
	const mfs_io_desc *d;

	assert_int_equal(onnx_model_initializers_as_inputs(o, init_name, 1, &err), 0);
	assert_int_equal(o->graph->n_initializers, 0);
	assert_int_equal(o->graph->n_defaults, 1);
	assert_int_equal(mfs_graph_compile(o, "m", &g, &err), 0);
	assert_int_equal(mfs_graph_n_inputs(g), 2);
	d = mfs_graph_input(g, 1);
	assert_string_equal(d->name, "INITIALIZER");
	assert_int_equal(d->dtype, MFS_DT_FLOAT);
	assert_int_equal(d->rank, 2);
	assert_non_null(d->default_value);
	assert_true(((const float *)d->default_value->data)[24] == 1.0f);
	assert_null(mfs_graph_input(g, 0)->default_value);
	/* nothing folded through it: Neg runs */
	assert_int_equal(g->n_folded, 0);
	assert_int_equal(g->n_nodes, 2);

	assert_int_equal(mfs_exec_new(g, NULL, &e, &err), 0);
	/* fed: 3 + -(2) */
	in[1] = filled(2.0f);
	run_expect(e, in, 1.0f);
	mfs_tensor_release(&in[1]);
	/* left out (zeroed): the stored ones, 3 + -(1) */
	run_expect(e, in, 2.0f);
	/* fed again after: the fed value, not a kept default */
	in[1] = filled(-4.0f);
	run_expect(e, in, 7.0f);
	mfs_tensor_release(&in[1]);
	/* fed with the wrong shape: refused as any input is */
	mfs_shape s3 = { .rank = 1, .dims = { 3 } };
	mfs_tensor out = { 0 };
	in[0] = filled(3.0f);
	assert_int_equal(mfs_tensor_alloc(&in[1], MFS_DT_FLOAT, &s3, NULL), 0);
	assert_int_equal(mfs_exec_run(e, in, &out, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "input 'INITIALIZER' has shape [3]"));
	mfs_tensor_release(&in[0]);
	mfs_tensor_release(&in[1]);
	/* the stored value is unharmed by the runs */
	assert_true(((const float *)d->default_value->data)[0] == 1.0f);
	/* an input without a default is still required */
	assert_int_equal(mfs_exec_run(e, in, &out, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "input 'INPUT'"));
	mfs_exec_free(e);
	mfs_graph_free(g);
}

static void refused(onnx_model *o, const char *msg)
{
	mfs_error err;

	mfs_error_clear(&err);
	assert_int_equal(onnx_model_initializers_as_inputs(o, init_name, 1, &err), -EINVAL);
	if (!strstr(err.msg, msg))
		fail_msg("'%s' lacks '%s'", err.msg, msg);
	assert_int_equal(o->graph->n_initializers, 1);
	assert_int_equal(o->graph->n_defaults, 0);
	onnx_model_free(o);
}

/* Where ONNX Runtime could not feed it, the initializer stays a constant
 * and the call says why; a name that is no initializer is left alone. */
static void test_refusals(void **state)
{
	(void)state;
	onnx_model *o = model();
	mfs_error err;
	const char *const plain[] = { "INPUT", "NOSUCH" };

	/* not listed among the graph's inputs (IR >= 4: a constant) */
	free(o->graph->inputs[1].name);
	o->graph->inputs[1].name = strdup("OTHER");
	refused(o, "initializer 'INITIALIZER' is not an input: the graph does not list it among its inputs");
	/* IR version 3: initializers are constants */
	o = model();
	o->ir_version = 3;
	refused(o, "in a model of IR version 3 initializers are constants");
	/* the declared input says another type, or another shape */
	o = model();
	o->graph->inputs[1].dtype = MFS_DT_INT64;
	refused(o, "initializer 'INITIALIZER' (float [5,5]) does not fit the graph input of that name (int64 [5,5])");
	o = model();
	o->graph->inputs[1].dims[1] = 4;
	refused(o, "does not fit the graph input of that name (float [5,4])");

	o = model();
	assert_int_equal(onnx_model_initializers_as_inputs(o, plain, 2, &err), 0);
	assert_int_equal(o->graph->n_initializers, 1);
	assert_int_equal(o->graph->n_defaults, 0);
	onnx_model_free(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_constant_without_the_option),
		cmocka_unit_test(test_fed_and_left_out),
		cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

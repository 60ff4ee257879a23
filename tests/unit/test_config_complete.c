/* test_config_complete.c - auto-complete and checking of a config against
 * a graph.  The graph here is a stand-in: this file defines the four
 * engine.h accessors config_complete.c uses, so the rules are tested
 * without compiling ONNX (test_model_load.c does it with a real model). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codec.h"
#include "config.h"

struct mfs_graph {
	mfs_io_desc in[4], out[4];
	int n_in, n_out;
};

int mfs_graph_n_inputs(const mfs_graph *m) { return m->n_in; }
int mfs_graph_n_outputs(const mfs_graph *m) { return m->n_out; }
const mfs_io_desc *mfs_graph_input(const mfs_graph *m, int i) { return &m->in[i]; }
const mfs_io_desc *mfs_graph_output(const mfs_graph *m, int i) { return &m->out[i]; }

static mfs_io_desc desc(const char *name, mfs_dtype dt, int rank, int64_t d0,
			int64_t d1)
{
	mfs_io_desc d = { .name = (char *)name, .dtype = dt, .rank = rank };
	d.dims[0] = d0;
	d.dims[1] = d1;
	return d;
}

/* add_sub with a batch dim: INPUT0/INPUT1 [-1,16] -> OUTPUT0/OUTPUT1. */
static mfs_graph batched(void)
{
	mfs_graph m = { .n_in = 2, .n_out = 2 };
	m.in[0] = desc("INPUT0", MFS_DT_FLOAT, 2, -1, 16);
	m.in[1] = desc("INPUT1", MFS_DT_FLOAT, 2, -1, 16);
	m.out[0] = desc("OUTPUT0", MFS_DT_FLOAT, 2, -1, 16);
	m.out[1] = desc("OUTPUT1", MFS_DT_FLOAT, 2, -1, 16);
	return m;
}

static int complete(const char *pbtxt, const mfs_graph *m, mfs_model_config *c,
		    mfs_error *err)
{
	mfs_error_clear(err);
	if (mfs_config_parse_pbtxt(pbtxt, strlen(pbtxt), "config.pbtxt", c, err))
		fail_msg("parse: %s", err->msg);
	return mfs_config_complete(c, "add_sub", m, err);
}

static void complete_fails(const char *pbtxt, const mfs_graph *m, const char *msg)
{
	mfs_model_config c;
	mfs_error err;

	assert_int_equal(complete(pbtxt, m, &c, &err), -EINVAL);
	assert_string_equal(err.msg, msg);
	mfs_config_release(&c);
}

static void test_no_config(void **state)
{
	(void)state;
	mfs_graph m = batched();
	mfs_model_config c;
	mfs_error err;
	mfs_tensor_spec spec;

	mfs_config_set_default_max_batch_size(0);
	assert_int_equal(complete("", &m, &c, &err), 0);
	mfs_config_set_default_max_batch_size(MFS_DEFAULT_MAX_BATCH_SIZE);
	assert_string_equal(c.name, "add_sub");
	assert_string_equal(c.platform, "onnxruntime_onnx");
	assert_string_equal(c.backend, "onnxruntime");
	assert_int_equal(c.max_batch_size, 0);
	assert_false(c.has_dynamic_batching);
	assert_int_equal(c.n_inputs, 2);
	assert_int_equal(c.n_outputs, 2);
	/* max_batch_size 0: the dims are the graph's, batch dim included. */
	assert_int_equal(c.inputs[1].rank, 2);
	assert_int_equal(c.inputs[1].dims[0], -1);
	assert_int_equal(c.inputs[1].dims[1], 16);
	assert_int_equal(c.inputs[1].graph_index, 1);
	assert_int_equal(c.outputs[0].dtype, MFS_DT_FLOAT);
	assert_int_equal(c.n_instance_groups, 1);
	assert_int_equal(c.instance_groups[0].kind, MFS_KIND_AUTO);
	mfs_config_input_spec(&c, 0, &spec);
	assert_string_equal(spec.name, "INPUT0");
	assert_int_equal(spec.rank, 2);
	assert_int_equal(spec.dims[1], 16);
	mfs_config_release(&c);
}

/* A partial config keeps its order; the rest follows in graph order. */
static void test_partial_with_batch(void **state)
{
	(void)state;
	mfs_graph m = batched();
	mfs_model_config c;
	mfs_error err;
	mfs_tensor_spec spec;

	assert_int_equal(complete("max_batch_size: 8 input { name: \"INPUT1\" data_type: TYPE_FP32 }\n"
				  "input { name: \"INPUT0\" data_type: TYPE_FP32 }\n"
				  "output { name: \"OUTPUT1\" data_type: TYPE_FP32 dims: 16 }",
				  &m, &c, &err), 0);
	assert_int_equal(c.n_inputs, 2);
	assert_string_equal(c.inputs[0].name, "INPUT1");
	assert_int_equal(c.inputs[0].graph_index, 1);
	assert_string_equal(c.inputs[1].name, "INPUT0");
	assert_int_equal(c.inputs[1].graph_index, 0);
	/* The batch dim is not in dims. */
	assert_int_equal(c.inputs[0].rank, 1);
	assert_int_equal(c.inputs[0].dims[0], 16);
	assert_int_equal(c.outputs[0].graph_index, 1);
	assert_string_equal(c.outputs[1].name, "OUTPUT0");
	/* ... but in what a request sees. */
	mfs_config_output_spec(&c, 1, &spec);
	assert_int_equal(spec.rank, 2);
	assert_int_equal(spec.dims[0], -1);
	assert_int_equal(spec.dims[1], 16);
	assert_int_equal(mfs_config_find_input(&c, "INPUT0"), 1);
	assert_int_equal(mfs_config_find_output(&c, "nope"), -1);
	mfs_config_release(&c);
}

static void test_config_may_fix_a_variable_dim(void **state)
{
	(void)state;
	mfs_graph m = { .n_in = 1, .n_out = 1 };
	mfs_model_config c;
	mfs_error err;

	m.in[0] = desc("x", MFS_DT_INT64, 2, -1, -1);
	m.out[0] = desc("y", MFS_DT_INT64, 1, -1, 0);
	assert_int_equal(complete("max_batch_size: 0\n"
				  "input { name: \"x\" data_type: TYPE_INT64 dims: [3, 4] }", &m, &c, &err), 0);
	assert_int_equal(c.inputs[0].dims[0], 3);
	assert_int_equal(c.inputs[0].dtype, MFS_DT_INT64);
	mfs_config_release(&c);
}

static void test_reshape(void **state)
{
	(void)state;
	mfs_graph m = batched();
	mfs_model_config c;
	mfs_error err;
	mfs_shape req = { .rank = 3, .dims = { 5, 4, 4 } }, model, back;

	assert_int_equal(complete("max_batch_size: 8\n"
				  "input { name: \"INPUT0\" data_type: TYPE_FP32 dims: [4, 4] reshape { shape: [16] } }\n"
				  "input { name: \"INPUT1\" data_type: TYPE_FP32 dims: [16] }\n"
				  "output { name: \"OUTPUT0\" data_type: TYPE_FP32 dims: [2, 8] reshape { shape: [16] } }",
				  &m, &c, &err), 0);
	assert_int_equal(mfs_config_input_to_model(&c, 0, &req, &model, &err), 0);
	assert_int_equal(model.rank, 2);
	assert_int_equal(model.dims[0], 5);
	assert_int_equal(model.dims[1], 16);
	/* Output: the model's [5,16] is shown as the config's [5,2,8]. */
	assert_int_equal(mfs_config_output_from_model(&c, 0, &model, &back, &err), 0);
	assert_int_equal(back.rank, 3);
	assert_int_equal(back.dims[1], 2);
	assert_int_equal(back.dims[2], 8);
	/* No reshape: unchanged. */
	assert_int_equal(mfs_config_input_to_model(&c, 1, &model, &back, &err), 0);
	assert_true(mfs_shape_equal(&model, &back));
	/* Element counts that cannot agree. */
	req.dims[2] = 3;
	assert_int_equal(mfs_config_input_to_model(&c, 0, &req, &model, &err), -EINVAL);
	assert_string_equal(err.msg, "input 'INPUT0': 12 elements, the reshape needs 16");
	/* The batch a request sends: at most max_batch_size (8). */
	req.dims[0] = 8;
	assert_int_equal(mfs_config_check_batch(&c, 0, &req, &err), 0);
	req.dims[0] = 9;
	assert_int_equal(mfs_config_check_batch(&c, 0, &req, &err), -EINVAL);
	assert_string_equal(err.msg, "input 'INPUT0': batch of 9 exceeds max_batch_size 8");
	c.max_batch_size = 0;   /* no batch dim: nothing to check */
	assert_int_equal(mfs_config_check_batch(&c, 0, &req, &err), 0);
	mfs_config_release(&c);
}

static void test_disagreements(void **state)
{
	(void)state;
	mfs_graph m = batched();

	complete_fails("name: \"other\"", &m,
		       "config name 'other' does not match the model directory 'add_sub'");
	complete_fails("input { name: \"INPUT9\" data_type: TYPE_FP32 }", &m,
		       "config input 'INPUT9' is not in the graph (its inputs: 'INPUT0', 'INPUT1')");
	complete_fails("output { name: \"INPUT0\" data_type: TYPE_FP32 }", &m,
		       "config output 'INPUT0' is not in the graph (its outputs: 'OUTPUT0', 'OUTPUT1')");
	complete_fails("input { name: \"INPUT0\" data_type: TYPE_INT32 }", &m,
		       "input 'INPUT0': the config says data_type TYPE_INT32, the graph has TYPE_FP32");
	complete_fails("max_batch_size: 0 input { name: \"INPUT0\" data_type: TYPE_FP32 dims: [16] }", &m,
		       "input 'INPUT0': the config's dims [16] do not match the graph's [-1,16]");
	complete_fails("max_batch_size: 4 input { name: \"INPUT0\" data_type: TYPE_FP32 dims: [17] }", &m,
		       "input 'INPUT0': the config's dims [17] (after the batch dim) do not match the graph's [16] (batch dim left out)");
	complete_fails("max_batch_size: 2 input { name: \"INPUT0\" data_type: TYPE_FP32 dims: [2, 8] reshape { shape: [15] } }", &m,
		       "input 'INPUT0' has different size for dims and reshape (dims [2,8], reshape [15])");
	complete_fails("max_batch_size: 2 input { name: \"INPUT0\" data_type: TYPE_FP32 reshape { shape: [16] } }", &m,
		       "input 'INPUT0': reshape needs dims");

	/* The graph fixes what the config leaves variable. */
	mfs_graph fixed = { .n_in = 1, .n_out = 1 };
	fixed.in[0] = desc("x", MFS_DT_FLOAT, 2, 1, 16);
	fixed.out[0] = desc("y", MFS_DT_FLOAT, 2, 1, 16);
	complete_fails("input { name: \"x\" data_type: TYPE_FP32 dims: [1, -1] }", &fixed,
		       "input 'x': the config's dims [1,-1] do not match the graph's [1,16]");
	complete_fails("max_batch_size: 4", &fixed,
		       "max_batch_size 4, but the graph fixes the batch dim of input 'x' at 1");
	fixed.in[0].rank = 0;
	complete_fails("max_batch_size: 1", &fixed,
		       "input 'x' is a scalar in the graph, so it has no batch dim for max_batch_size 1");
}

/* Triton's ONNX Runtime backend: a model that can batch gets
 * max_batch_size 4 and dynamic batching when the config sets no
 * max_batch_size and leaves a side unlisted. */
static void test_default_max_batch(void **state)
{
	(void)state;
	mfs_graph m = batched(), fixed = { .n_in = 1, .n_out = 1 };
	mfs_model_config c;
	mfs_error err;

	assert_int_equal(complete("", &m, &c, &err), 0);
	assert_int_equal(c.max_batch_size, 4);
	assert_true(c.has_dynamic_batching);
	assert_int_equal(c.inputs[0].rank, 1);
	assert_int_equal(c.inputs[0].dims[0], 16);
	mfs_config_release(&c);
	/* Outputs listed, inputs not: still completed. */
	assert_int_equal(complete("output { name: \"OUTPUT0\" data_type: TYPE_FP32 dims: [16] }",
				  &m, &c, &err), 0);
	assert_int_equal(c.max_batch_size, 4);
	mfs_config_release(&c);
	/* Both sides listed, or max_batch_size given (0 too): left alone. */
	assert_int_equal(complete("input { name: \"INPUT0\" data_type: TYPE_FP32 dims: [-1, 16] }\n"
				  "input { name: \"INPUT1\" data_type: TYPE_FP32 dims: [-1, 16] }\n"
				  "output { name: \"OUTPUT0\" data_type: TYPE_FP32 dims: [-1, 16] }",
				  &m, &c, &err), 0);
	assert_int_equal(c.max_batch_size, 0);
	mfs_config_release(&c);
	assert_int_equal(complete("max_batch_size: 0", &m, &c, &err), 0);
	assert_int_equal(c.max_batch_size, 0);
	assert_false(c.has_dynamic_batching);
	mfs_config_release(&c);
	/* --backend-config=onnxruntime,default-max-batch-size=1: no batcher. */
	mfs_config_set_default_max_batch_size(1);
	assert_int_equal(complete("", &m, &c, &err), 0);
	mfs_config_set_default_max_batch_size(MFS_DEFAULT_MAX_BATCH_SIZE);
	assert_int_equal(c.max_batch_size, 1);
	assert_false(c.has_dynamic_batching);
	mfs_config_release(&c);
	/* A fixed first dim: the model cannot batch. */
	fixed.in[0] = desc("x", MFS_DT_FLOAT, 2, 1, 16);
	fixed.out[0] = desc("y", MFS_DT_FLOAT, 2, -1, 16);
	assert_int_equal(complete("", &fixed, &c, &err), 0);
	assert_int_equal(c.max_batch_size, 0);
	mfs_config_release(&c);
}

/* A KIND_CPU group without a count: 2 (Triton's ONNX Runtime count). */
static void test_cpu_instance_count(void **state)
{
	(void)state;
	mfs_graph m = batched();
	mfs_model_config c;
	mfs_error err;

	assert_int_equal(complete("instance_group { kind: KIND_CPU }\n"
				  "instance_group { kind: KIND_CPU count: 3 }\n"
				  "instance_group { kind: KIND_AUTO }", &m, &c, &err), 0);
	assert_int_equal(c.instance_groups[0].count, 2);
	assert_int_equal(c.instance_groups[1].count, 3);
	assert_int_equal(c.instance_groups[2].count, 1);
	mfs_config_release(&c);
}

/* Triton's refusals where modelfs used to complete. */
static void test_triton_refusals(void **state)
{
	(void)state;
	mfs_graph m = batched();

	complete_fails("input { name: \"INPUT0\" dims: [16] }", &m,
		       "model input 'INPUT0' must specify 'data_type'");
	complete_fails("max_batch_size: 4 output { name: \"OUTPUT0\" dims: [16] }", &m,
		       "model output 'OUTPUT0' must specify 'data_type'");
	complete_fails("max_batch_size: 1 input { name: \"INPUT1\" data_type: TYPE_FP32 dims: [16] }", &m,
		       "configuration expects 1 inputs, model provides 2: input 'INPUT0' is not in the config "
		       "(a config that lists inputs lists them all)");
	complete_fails("max_batch_size: 4 input { name: \"INPUT0\" data_type: TYPE_FP32 dims: [2, -1] "
		       "reshape { shape: [2, 8] } }", &m,
		       "input 'INPUT0' has different size for dims and reshape (dims [2,-1], reshape [2,8])");
	complete_fails("max_batch_size: 4 output { name: \"OUTPUT0\" data_type: TYPE_FP32 dims: [2, -1] "
		       "reshape { shape: [-1, 2, -1] } }", &m,
		       "output 'OUTPUT0' has different number of variable-size dimensions for dims and reshape "
		       "(dims [2,-1], reshape [-1,2,-1])");
	complete_fails("max_batch_size: 0 output { name: \"OUTPUT0\" data_type: TYPE_FP32 dims: [1] "
		       "reshape { shape: [] } }", &m,
		       "output 'OUTPUT0' cannot have empty reshape for non-batching model as scalar tensors are not supported");
	complete_fails("max_batch_size: 4 input { name: \"INPUT0\" data_type: TYPE_FP32 format: FORMAT_NCHW }\n"
		       "input { name: \"INPUT1\" data_type: TYPE_FP32 }", &m,
		       "input 'INPUT0': model input NHWC/NCHW require 3 dims (format FORMAT_NCHW, dims [16] after the batch dim)");
}

/* Variable dims that agree run by run are fine: [2,4,-1,6] -> [8,-1,1,6];
 * an image format with 3 dims is shown. */
static void test_triton_acceptances(void **state)
{
	(void)state;
	mfs_graph m = { .n_in = 1, .n_out = 1 };
	mfs_model_config c;
	mfs_error err;

	m.in[0] = desc("x", MFS_DT_FLOAT, 4, 8, -1);
	m.in[0].dims[2] = 1;
	m.in[0].dims[3] = 6;
	m.out[0] = desc("y", MFS_DT_FLOAT, 4, 3, 5);
	m.out[0].dims[2] = 7;
	m.out[0].dims[3] = 1;
	assert_int_equal(complete("input { name: \"x\" data_type: TYPE_FP32 format: FORMAT_NONE dims: [2, 4, -1, 6] "
				  "reshape { shape: [8, -1, 1, 6] } }\n"
				  "output { name: \"y\" data_type: TYPE_FP32 dims: [3, 5, 7] "
				  "reshape { shape: [3, 5, 7, 1] } }", &m, &c, &err), 0);
	mfs_config_release(&c);
	m.out[0].rank = 3;
	assert_int_equal(complete("input { name: \"x\" data_type: TYPE_FP32 format: FORMAT_NHWC dims: [8, 3, 6] "
				  "reshape { shape: [8, -1, 1, 6] } }", &m, &c, &err), -EINVAL);
	mfs_config_release(&c);
	assert_int_equal(complete("input { name: \"x\" data_type: TYPE_FP32 format: FORMAT_NHWC dims: [8, 3, 6] "
				  "reshape { shape: [8, 3, 1, 6] } }", &m, &c, &err), 0);
	assert_int_equal(c.inputs[0].format, MFS_FORMAT_NHWC);
	json_t *j = mfs_config_to_json(&c);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(j, "input"), 0),
							      "format")), "FORMAT_NHWC");
	json_decref(j);
	mfs_config_release(&c);
}

/* An input the config lists with -1 where the graph has -1 is fine; a
 * fixed batch dim with max_batch_size 1 is fine. */
static void test_batch_one_model(void **state)
{
	(void)state;
	mfs_graph fixed = { .n_in = 1, .n_out = 1 };
	mfs_model_config c;
	mfs_error err;

	fixed.in[0] = desc("x", MFS_DT_FLOAT, 2, 1, 16);
	fixed.out[0] = desc("y", MFS_DT_FLOAT, 2, 1, 16);
	assert_int_equal(complete("max_batch_size: 1", &fixed, &c, &err), 0);
	assert_int_equal(c.inputs[0].rank, 1);
	assert_int_equal(c.inputs[0].dims[0], 16);
	mfs_config_release(&c);
}

static void test_version_policy(void **state)
{
	(void)state;
	mfs_model_config c;
	mfs_error err;
	int64_t v[] = { 7, 2, 10, 3 };

	assert_int_equal(mfs_config_parse_pbtxt("", 0, "c", &c, &err), 0);
	assert_int_equal(mfs_config_apply_version_policy(&c, v, 4), 1);
	assert_int_equal(v[0], 10);
	mfs_config_release(&c);

	int64_t w[] = { 7, 2, 10, 3 };
	const char *latest2 = "version_policy { latest { num_versions: 2 } }";
	assert_int_equal(mfs_config_parse_pbtxt(latest2, strlen(latest2), "c", &c, &err), 0);
	assert_int_equal(mfs_config_apply_version_policy(&c, w, 4), 2);
	assert_int_equal(w[0], 7);
	assert_int_equal(w[1], 10);
	assert_int_equal(mfs_config_apply_version_policy(&c, w, 0), 0);
	mfs_config_release(&c);

	int64_t x[] = { 7, 2, 10, 3 };
	const char *spec = "version_policy { specific { versions: [3, 4, 10] } }";
	assert_int_equal(mfs_config_parse_pbtxt(spec, strlen(spec), "c", &c, &err), 0);
	assert_int_equal(mfs_config_apply_version_policy(&c, x, 4), 2);
	assert_int_equal(x[0], 3);
	assert_int_equal(x[1], 10);
	mfs_config_release(&c);

	int64_t y[] = { 7, 2, 10, 3 };
	const char *all = "version_policy { all { } }";
	assert_int_equal(mfs_config_parse_pbtxt(all, strlen(all), "c", &c, &err), 0);
	assert_int_equal(mfs_config_apply_version_policy(&c, y, 4), 4);
	assert_int_equal(y[0], 2);
	assert_int_equal(y[3], 10);
	mfs_config_release(&c);
}

/* A custom backend's config: nothing to complete from, so everything
 * must be declared (docs/BACKENDS.md). */
static void declared_fails(const char *pbtxt, const char *msg)
{
	mfs_model_config c;
	mfs_error err;

	mfs_config_init(&c);
	assert_int_equal(mfs_config_parse_pbtxt(pbtxt, strlen(pbtxt), "config.pbtxt", &c, &err), 0);
	assert_int_equal(mfs_config_complete_declared(&c, "m", &err), -EINVAL);
	if (!strstr(err.msg, msg))
		fail_msg("'%s' does not contain '%s'", err.msg, msg);
	mfs_config_release(&c);
}

/* Triton's L0_initializer_as_input: INITIALIZER is an initializer the
 * load made an input (it has a default value): listed with optional:
 * true it is an input with a default; without optional, or where the
 * model batches, Triton's ONNX Runtime backend refuses it. */
static void test_initializer_as_input(void **state)
{
	(void)state;
	static const float ones[25] = { 1 };
	mfs_tensor stored = { .dtype = MFS_DT_FLOAT, .shape = { 2, { 5, 5 } },
			      .data = (void *)ones, .nbytes = sizeof(ones) };
	mfs_graph m = { .n_in = 2, .n_out = 1 };
	mfs_model_config c;
	mfs_error err;
	const char *io =
		"input [ { name: \"INPUT\" data_type: TYPE_FP32 dims: [5, 5] },\n"
		"  { name: \"INITIALIZER\" data_type: TYPE_FP32 dims: [5, 5] %s } ]\n"
		"output [ { name: \"OUTPUT\" data_type: TYPE_FP32 dims: [5, 5] } ]\n";
	char cfg[512];

	m.in[0] = desc("INPUT", MFS_DT_FLOAT, 2, 5, 5);
	m.in[1] = desc("INITIALIZER", MFS_DT_FLOAT, 2, 5, 5);
	m.in[1].default_value = &stored;
	m.out[0] = desc("OUTPUT", MFS_DT_FLOAT, 2, 5, 5);

	snprintf(cfg, sizeof(cfg), io, "optional: true");
	assert_int_equal(complete(cfg, &m, &c, &err), 0);
	assert_true(c.inputs[1].optional);
	assert_true(c.inputs[1].has_default);
	assert_false(c.inputs[0].has_default);
	mfs_config_release(&c);

	snprintf(cfg, sizeof(cfg), io, "");
	complete_fails(cfg, &m,
		       "input 'INITIALIZER' is an initializer of the graph: it may be an input only with optional: true, as in Triton (a request that leaves it out runs with the stored value)");

	/* batched: [-1, 5] in the graph, dims [5] after the batch dim */
	m.in[0].dims[0] = m.in[1].dims[0] = m.out[0].dims[0] = -1;
	complete_fails("max_batch_size: 4\n"
		       "input [ { name: \"INPUT\" data_type: TYPE_FP32 dims: [5] },\n"
		       "  { name: \"INITIALIZER\" data_type: TYPE_FP32 dims: [5] optional: true } ]\n",
		       &m,
		       "optional input 'INITIALIZER' is not supported for models that support batching (max_batch_size 4; Triton's rule)");
}

static void test_custom_backend_declares_everything(void **state)
{
	(void)state;
	static const char ok[] =
		"backend: \"x\" max_batch_size: 4\n"
		"input [ { name: \"A\" data_type: TYPE_UINT8 dims: [ -1, 3 ] } ]\n"
		"output [ { name: \"B\" data_type: TYPE_FP32 dims: [ 3 ] } ]\n";
	mfs_model_config c;
	mfs_error err;

	mfs_config_init(&c);
	assert_int_equal(mfs_config_parse_pbtxt(ok, strlen(ok), "config.pbtxt", &c, &err), 0);
	assert_true(mfs_config_custom_backend(&c));
	assert_int_equal(mfs_config_complete_declared(&c, "m", &err), 0);
	assert_string_equal(c.name, "m");
	assert_null(c.platform);
	assert_int_equal(c.inputs[0].graph_index, 0);
	assert_int_equal(c.outputs[0].graph_index, 0);
	assert_int_equal(c.n_instance_groups, 1);
	mfs_config_release(&c);

	declared_fails("backend: \"x\" input [ { name: \"A\" dims: [ 1 ] } ] "
		       "output [ { name: \"B\" data_type: TYPE_FP32 dims: [ 1 ] } ]",
		       "input 'A' needs a data_type");
	declared_fails("backend: \"x\" input [ { name: \"A\" data_type: TYPE_FP32 dims: [ 1 ] } ] "
		       "output [ { name: \"B\" data_type: TYPE_FP32 } ]",
		       "output 'B' needs dims");
	declared_fails("backend: \"x\" input [ { name: \"A\" data_type: TYPE_FP32 dims: [ 1 ] "
		       "reshape { shape: [ 1 ] } } ] output [ { name: \"B\" data_type: TYPE_FP32 dims: [ 1 ] } ]",
		       "reshape is not supported with a custom backend");
	declared_fails("backend: \"x\" output [ { name: \"B\" data_type: TYPE_FP32 dims: [ 1 ] } ]",
		       "must list its inputs and outputs");
	declared_fails("platform: \"onnxruntime_onnx\" backend: \"x\" "
		       "input [ { name: \"A\" data_type: TYPE_FP32 dims: [ 1 ] } ] "
		       "output [ { name: \"B\" data_type: TYPE_FP32 dims: [ 1 ] } ]",
		       "platform 'onnxruntime_onnx' and backend 'x' cannot both be given");
	declared_fails("backend: \"x\" instance_group [ { kind: KIND_GPU } ] "
		       "input [ { name: \"A\" data_type: TYPE_FP32 dims: [ 1 ] } ] "
		       "output [ { name: \"B\" data_type: TYPE_FP32 dims: [ 1 ] } ]",
		       "instance_group kind KIND_GPU: backend 'x' runs in a worker process");
	declared_fails("backend: \"x\" model_warmup [ { name: \"w\" inputs { key: \"A\" value: "
		       "{ data_type: TYPE_FP32 dims: [ 1 ] zero_data: true } } } ] "
		       "input [ { name: \"A\" data_type: TYPE_FP32 dims: [ 1 ] } ] "
		       "output [ { name: \"B\" data_type: TYPE_FP32 dims: [ 1 ] } ]",
		       "model_warmup is not supported with backend 'x'");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_config),
		cmocka_unit_test(test_partial_with_batch),
		cmocka_unit_test(test_config_may_fix_a_variable_dim),
		cmocka_unit_test(test_reshape),
		cmocka_unit_test(test_disagreements),
		cmocka_unit_test(test_default_max_batch),
		cmocka_unit_test(test_cpu_instance_count),
		cmocka_unit_test(test_triton_refusals),
		cmocka_unit_test(test_triton_acceptances),
		cmocka_unit_test(test_batch_one_model),
		cmocka_unit_test(test_version_policy),
		cmocka_unit_test(test_custom_backend_declares_everything),
		cmocka_unit_test(test_initializer_as_input),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

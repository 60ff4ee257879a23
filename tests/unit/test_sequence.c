/* test_sequence.c - sequences and optionals: the operators of
 * exec/cpu/ops/sequence.c, sequence_split.c, optional.c and identity.c run
 * through hand-built graphs on the CPU engine (so the engine's side is
 * under test too: container outputs built by run(), freed at their last
 * use, refused where a tensor belongs), the SequenceProto/OptionalProto
 * codec (exec/onnx/onnx_value.c), the reader's sequence/optional types, the
 * one-file forms of the mount (src/core/codec/codec_value.c) and config
 * completion of such inputs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codec.h"
#include "config.h"
#include "engine.h"
#include "graph_builder.h"

#define DATA "/usr/share/libonnx-testdata/data"

static mfs_tensor f32(int rank, const int64_t *dims, const float *data)
{
	mfs_tensor t = { .dtype = MFS_DT_FLOAT, .shape.rank = rank };
	if (rank)
		memcpy(t.shape.dims, dims, (size_t)rank * sizeof(int64_t));
	t.nbytes = (size_t)mfs_shape_numel(&t.shape) * sizeof(float);
	t.data = (void *)data;
	return t;
}

static mfs_tensor i64s(int rank, const int64_t *dims, const int64_t *data)
{
	mfs_tensor t = { .dtype = MFS_DT_INT64, .shape.rank = rank };
	if (rank)
		memcpy(t.shape.dims, dims, (size_t)rank * sizeof(int64_t));
	t.nbytes = (size_t)mfs_shape_numel(&t.shape) * sizeof(int64_t);
	t.data = (void *)data;
	return t;
}

/* Compile o and run it once on in; 0 or the error, err filled. */
static int run_graph(onnx_model *o, const mfs_tensor *in, mfs_tensor *out,
		     mfs_error *err)
{
	mfs_graph *m = NULL;
	mfs_exec *e = NULL;
	int rc = mfs_graph_compile(o, "m", &m, err);

	if (!rc)
		rc = mfs_exec_new(m, NULL, &e, err);
	/* twice: the second run reuses slots the first one's containers
	 * left (ASan sees a leak or a double free) */
	if (!rc)
		rc = mfs_exec_run(e, in, out, err);
	for (int k = 0; !rc && m && k < mfs_graph_n_outputs(m); k++)
		mfs_tensor_release(&out[k]);
	if (!rc)
		rc = mfs_exec_run(e, in, out, err);
	mfs_exec_free(e);
	mfs_graph_free(m);
	return rc;
}

static void assert_f32s(const mfs_tensor *t, int n, ...)
{
	va_list ap;
	assert_int_equal(t->kind, MFS_KIND_TENSOR);
	assert_int_equal(t->dtype, MFS_DT_FLOAT);
	assert_int_equal(mfs_shape_numel(&t->shape), n);
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		assert_true(((const float *)t->data)[i] == (float)va_arg(ap, double));
	va_end(ap);
}

static const int64_t d2[] = { 2 }, d1[] = { 1 }, d23[] = { 2, 3 };
static const float xa[] = { 1, 2 }, xb[] = { 3, 4 }, xc[] = { 5 };

/* SequenceConstruct, SequenceLength, SequenceAt (negative position),
 * SequenceInsert (front and, without a position, back), SequenceErase. */
static void test_construct_insert_erase_at(void **st)
{
	onnx_model *o = gb_new(13);
	int64_t pos0 = 0, neg1 = -1;
	mfs_tensor in[4] = { f32(1, d2, xa), f32(1, d2, xb), f32(1, d1, xc),
			     i64s(0, NULL, &pos0) }, out[4];
	mfs_error err;
	(void)st;

	gb_input(o, "a", MFS_DT_FLOAT, 1, d2);
	gb_input(o, "b", MFS_DT_FLOAT, 1, d2);
	gb_input(o, "c", MFS_DT_FLOAT, 1, d1);
	gb_input(o, "p", MFS_DT_INT64, 0, NULL);
	gb_node(o, "", "SequenceConstruct", "sc", "a,b", "s");
	gb_node(o, "", "SequenceInsert", "front", "s,c,p", "s1");   /* c a b */
	gb_node(o, "", "SequenceInsert", "back", "s1,a", "s2");     /* c a b a */
	gb_node(o, "", "SequenceErase", "erase", "s2,p", "s3");     /* a b a */
	gb_node(o, "", "SequenceErase", "erase_last", "s3", "s4");  /* a b */
	gb_node(o, "", "SequenceLength", "len", "s2", "n");
	gb_node(o, "", "SequenceAt", "at", "s4,q", "last");
	gb_init_f32(o, "unused", 1, d1, xc);
	{
		onnx_graph *g = o->graph;
		g->initializers = realloc(g->initializers, (size_t)(g->n_initializers + 1) *
					  sizeof(*g->initializers));
		onnx_initializer *q = &g->initializers[g->n_initializers++];
		mfs_tensor t = i64s(0, NULL, &neg1);
		q->name = strdup("q");
		assert_int_equal(mfs_tensor_copy(&q->tensor, &t, NULL), 0);
	}
	gb_output(o, "n");
	gb_output(o, "last");
	gb_output(o, "s4");
	assert_int_equal(run_graph(o, in, out, &err), 0);
	assert_int_equal(*(int64_t *)out[0].data, 4);
	assert_f32s(&out[1], 2, 3.0, 4.0);
	assert_int_equal(out[2].kind, MFS_KIND_SEQUENCE);
	assert_int_equal(out[2].n_items, 2);
	assert_f32s(&out[2].items[0], 2, 1.0, 2.0);
	assert_f32s(&out[2].items[1], 2, 3.0, 4.0);
	for (int k = 0; k < 3; k++)
		mfs_tensor_release(&out[k]);
}

/* A graph of inputs a (float [2]) and second (dtype, [1] or scalar), a
 * sequence s made by maker ("SequenceConstruct" of a, or
 * "SequenceEmpty"), and op 'n' reading ins into y: it must fail with
 * EINVAL and a message holding msg. */
static void expect_failure(const char *maker, mfs_dtype second, const char *op,
			   const char *ins, const mfs_tensor *in, const char *msg)
{
	onnx_model *o = gb_new(13);
	mfs_tensor out[1];
	mfs_error err;

	gb_input(o, "a", MFS_DT_FLOAT, 1, d2);
	gb_input(o, "p", second, second == MFS_DT_INT64 ? 0 : 1, d1);
	gb_node(o, "", maker, "m", strcmp(maker, "SequenceEmpty") ? "a" : "", "s");
	gb_node(o, "", op, "n", ins, "y");
	gb_output(o, "y");
	assert_int_equal(run_graph(o, in, out, &err), -EINVAL);
	if (!strstr(err.msg, msg))
		fail_msg("'%s' lacks '%s'", err.msg, msg);
}

/* Positions out of range, a tensor of another type, a sequence where a
 * tensor belongs (at run and folded at load) fail with the node named;
 * nothing leaks. */
static void test_sequence_errors(void **st)
{
	static const int64_t far = 5;
	static const int32_t xi[] = { 1 };
	mfs_tensor in[2] = { f32(1, d2, xa), i64s(0, NULL, &far) };
	mfs_tensor in32[2] = { f32(1, d2, xa), { .dtype = MFS_DT_INT32,
						  .shape = { 1, { 1 } },
						  .data = (void *)xi, .nbytes = 4 } };
	(void)st;

	expect_failure("SequenceConstruct", MFS_DT_INT64, "SequenceAt", "s,p", in,
		       "SequenceAt 'n': position 5 is out of range [-1, 0]");
	expect_failure("SequenceConstruct", MFS_DT_INT32, "SequenceInsert", "s,p", in32,
		       "the tensor is int32, the sequence holds float");
	expect_failure("SequenceConstruct", MFS_DT_INT64, "Relu", "s", in,
		       "Relu 'n': input 0 ('s') is a sequence; the operator takes tensors");
	expect_failure("SequenceEmpty", MFS_DT_INT64, "Relu", "s", in,
		       "Relu 'n': input 0 ('s') is a sequence; the operator takes tensors");
	expect_failure("SequenceEmpty", MFS_DT_INT64, "SequenceErase", "s", in,
		       "nothing to erase");
}

/* SplitToSequence: without split (keepdims 0 squeezes), a scalar split
 * with a short last part, lengths; ConcatFromSequence back, and stacked
 * on a new axis. */
static void test_split_concat(void **st)
{
	static const float x[] = { 0, 1, 2, 3, 4, 5 };
	static const int64_t two = 2, lens[] = { 1, 2 };
	mfs_tensor in[3] = { f32(2, d23, x), i64s(0, NULL, &two), i64s(1, d2, lens) };
	mfs_tensor out[5];
	mfs_error err;
	onnx_model *o = gb_new(13);
	onnx_node *n;
	(void)st;

	gb_input(o, "x", MFS_DT_FLOAT, 2, d23);
	gb_input(o, "two", MFS_DT_INT64, 0, NULL);
	gb_input(o, "lens", MFS_DT_INT64, 1, d2);
	n = gb_node(o, "", "SplitToSequence", "cols", "x", "c");
	attr_int(n, "axis", 1);
	attr_int(n, "keepdims", 0);                      /* 3 x [2] */
	n = gb_node(o, "", "SplitToSequence", "by2", "x,two", "b");
	attr_int(n, "axis", -1);                         /* [2,2] [2,1] */
	n = gb_node(o, "", "SplitToSequence", "bylen", "x,lens", "l");
	attr_int(n, "axis", 1);                          /* [2,1] [2,2] */
	n = gb_node(o, "", "ConcatFromSequence", "cat", "b", "y");
	attr_int(n, "axis", 1);                          /* x again */
	n = gb_node(o, "", "ConcatFromSequence", "stack", "c", "z");
	attr_int(n, "axis", 0);
	attr_int(n, "new_axis", 1);                      /* x transposed */
	gb_output(o, "c");
	gb_output(o, "b");
	gb_output(o, "l");
	gb_output(o, "y");
	gb_output(o, "z");
	assert_int_equal(run_graph(o, in, out, &err), 0);
	assert_int_equal(out[0].n_items, 3);
	assert_int_equal(out[0].items[2].shape.rank, 1);
	assert_f32s(&out[0].items[2], 2, 2.0, 5.0);
	assert_int_equal(out[1].n_items, 2);
	assert_f32s(&out[1].items[0], 4, 0.0, 1.0, 3.0, 4.0);
	assert_f32s(&out[1].items[1], 2, 2.0, 5.0);
	assert_int_equal(out[2].n_items, 2);
	assert_f32s(&out[2].items[1], 4, 1.0, 2.0, 4.0, 5.0);
	assert_f32s(&out[3], 6, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0);
	assert_int_equal(out[4].shape.rank, 2);
	assert_int_equal(out[4].shape.dims[0], 3);
	assert_f32s(&out[4], 6, 0.0, 3.0, 1.0, 4.0, 2.0, 5.0);
	for (int k = 0; k < 5; k++)
		mfs_tensor_release(&out[k]);

	/* lengths that do not add up; concatenating mismatched shapes */
	o = gb_new(13);
	gb_input(o, "x", MFS_DT_FLOAT, 2, d23);
	gb_input(o, "two", MFS_DT_INT64, 0, NULL);
	gb_input(o, "lens", MFS_DT_INT64, 1, d2);
	gb_node(o, "", "SplitToSequence", "bad", "x,lens", "l");
	gb_output(o, "l");
	assert_int_equal(run_graph(o, in, out, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "split lengths add up to 3, the axis is 2"));
	o = gb_new(13);
	gb_input(o, "x", MFS_DT_FLOAT, 2, d23);
	gb_input(o, "two", MFS_DT_INT64, 0, NULL);
	gb_input(o, "lens", MFS_DT_INT64, 1, d2);
	n = gb_node(o, "", "SplitToSequence", "by2", "x,two", "b");
	attr_int(n, "axis", 1);
	n = gb_node(o, "", "ConcatFromSequence", "cat", "b", "y");
	attr_int(n, "axis", 0);
	gb_output(o, "y");
	assert_int_equal(run_graph(o, in, out, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "tensor 1 has shape [2,1], tensor 0 [2,2]"));
}

/* Optional with and without a value (the 'type' attribute),
 * OptionalHasElement, OptionalGetElement, Identity on an optional. */
static void test_optional(void **st)
{
	mfs_tensor in[1] = { f32(1, d2, xa) }, out[5];
	mfs_error err;
	onnx_model *o = gb_new(18);
	onnx_attr *tp;
	(void)st;

	gb_input(o, "a", MFS_DT_FLOAT, 1, d2);
	gb_node(o, "", "Optional", "some", "a", "oa");
	tp = gb_attr(gb_node(o, "", "Optional", "none", "", "on"), "type",
		     ONNX_ATTR_TYPE_PROTO);
	tp->tp_kind = MFS_KIND_SEQUENCE;
	tp->tp_dtype = MFS_DT_FLOAT;
	gb_node(o, "", "OptionalHasElement", "has_a", "oa", "ha");
	gb_node(o, "", "OptionalHasElement", "has_n", "on", "hn");
	gb_node(o, "", "OptionalHasElement", "has_omitted", "", "ho");
	gb_node(o, "", "Identity", "id", "oa", "oa2");
	gb_node(o, "", "OptionalGetElement", "get", "oa2", "y");
	gb_output(o, "ha");
	gb_output(o, "hn");
	gb_output(o, "ho");
	gb_output(o, "y");
	gb_output(o, "on");
	assert_int_equal(run_graph(o, in, out, &err), 0);
	assert_int_equal(*(uint8_t *)out[0].data, 1);
	assert_int_equal(*(uint8_t *)out[1].data, 0);
	assert_int_equal(*(uint8_t *)out[2].data, 0);
	assert_f32s(&out[3], 2, 1.0, 2.0);
	assert_int_equal(out[4].kind, MFS_KIND_OPTIONAL);
	assert_int_equal(out[4].elem_kind, MFS_KIND_SEQUENCE);
	assert_int_equal(out[4].n_items, 0);
	for (int k = 0; k < 5; k++)
		mfs_tensor_release(&out[k]);

	/* the element of an empty optional */
	o = gb_new(18);
	gb_input(o, "a", MFS_DT_FLOAT, 1, d2);
	tp = gb_attr(gb_node(o, "", "Optional", "none", "", "on"), "type",
		     ONNX_ATTR_TYPE_PROTO);
	tp->tp_kind = MFS_KIND_TENSOR;
	tp->tp_dtype = MFS_DT_FLOAT;
	gb_node(o, "", "OptionalGetElement", "get", "on", "y");
	gb_output(o, "y");
	assert_int_equal(run_graph(o, in, out, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "OptionalGetElement 'get': input 0 ('on') is an empty optional"));
}

/* Graph inputs of container kinds: checked against the model's type
 * before the run; Identity copies a sequence input out. */
static void test_container_inputs(void **st)
{
	onnx_model *o = gb_new(16);
	mfs_tensor seq, wrong = f32(1, d2, xa), out[1];
	mfs_error err;
	mfs_graph *m;
	mfs_exec *e;
	(void)st;

	gb_input(o, "s", MFS_DT_FLOAT, -1, NULL);
	o->graph->inputs[0].kind = MFS_KIND_SEQUENCE;
	gb_node(o, "", "Identity", "id", "s", "y");
	gb_output(o, "y");
	assert_int_equal(mfs_graph_compile(o, "m", &m, &err), 0);
	assert_true(mfs_graph_has_containers(m));
	assert_int_equal(mfs_graph_input(m, 0)->kind, MFS_KIND_SEQUENCE);
	assert_int_equal(mfs_exec_new(m, NULL, &e, &err), 0);
	assert_int_equal(mfs_container_init(&seq, MFS_KIND_SEQUENCE, MFS_KIND_TENSOR,
					    MFS_DT_FLOAT, 2, &err), 0);
	assert_int_equal(mfs_tensor_copy(&seq.items[0], &wrong, &err), 0);
	assert_int_equal(mfs_tensor_copy(&seq.items[1], &wrong, &err), 0);
	assert_int_equal(mfs_exec_run(e, &seq, out, &err), 0);
	assert_int_equal(out[0].n_items, 2);
	assert_ptr_not_equal(out[0].items, seq.items);
	assert_f32s(&out[0].items[1], 2, 1.0, 2.0);
	mfs_tensor_release(&out[0]);
	assert_int_equal(mfs_exec_run(e, &wrong, out, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "input 's' is a tensor(float), the model expects a sequence(float)"));
	seq.items[1].dtype = MFS_DT_INT32;
	seq.items[1].nbytes = 8;
	assert_int_equal(mfs_exec_run(e, &seq, out, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "input 's' has data type int32, the model expects float"));
	mfs_tensor_release(&seq);
	mfs_exec_free(e);
	mfs_graph_free(m);
}

/* SequenceProto / OptionalProto: encode and decode back, empty ones
 * taking their type from the model; the reader's types on a real file. */
static void test_value_codec_and_reader(void **st)
{
	mfs_tensor seq, opt, back, like = { .kind = MFS_KIND_SEQUENCE,
					     .dtype = MFS_DT_FLOAT };
	mfs_tensor a = f32(1, d2, xa);
	mfs_error err;
	mfs_graph *m;
	void *buf;
	size_t len;
	(void)st;

	assert_int_equal(mfs_container_init(&seq, MFS_KIND_SEQUENCE, MFS_KIND_TENSOR,
					    MFS_DT_FLOAT, 1, &err), 0);
	assert_int_equal(mfs_tensor_copy(&seq.items[0], &a, &err), 0);
	assert_int_equal(onnx_value_encode(&seq, "s", &buf, &len, &err), 0);
	assert_int_equal(onnx_value_decode(buf, len, NULL, &like, &back, &err), 0);
	free(buf);
	assert_int_equal(back.kind, MFS_KIND_SEQUENCE);
	assert_int_equal(back.n_items, 1);
	assert_f32s(&back.items[0], 2, 1.0, 2.0);
	mfs_tensor_release(&back);

	/* optional of that sequence, and an empty optional */
	assert_int_equal(mfs_container_init(&opt, MFS_KIND_OPTIONAL, MFS_KIND_SEQUENCE,
					    MFS_DT_FLOAT, 1, &err), 0);
	opt.items[0] = seq;
	like.kind = MFS_KIND_OPTIONAL;
	assert_int_equal(onnx_value_encode(&opt, NULL, &buf, &len, &err), 0);
	assert_int_equal(onnx_value_decode(buf, len, NULL, &like, &back, &err), 0);
	free(buf);
	assert_int_equal(back.elem_kind, MFS_KIND_SEQUENCE);
	assert_int_equal(back.items[0].n_items, 1);
	assert_f32s(&back.items[0].items[0], 2, 1.0, 2.0);
	mfs_tensor_release(&back);
	mfs_tensor_release(&opt);
	assert_int_equal(onnx_value_decode("", 0, NULL, &like, &back, &err), 0);
	assert_int_equal(back.kind, MFS_KIND_OPTIONAL);
	assert_int_equal(back.n_items, 0);
	assert_int_equal(back.dtype, MFS_DT_FLOAT);
	mfs_tensor_release(&back);
	/* a sequence of maps (elem_type 4) is refused in words */
	assert_int_equal(onnx_value_decode("\x10\x04", 2, NULL,
					   &(mfs_tensor){ .kind = MFS_KIND_SEQUENCE },
					   &back, &err), -ENOTSUP);

	assert_int_equal(mfs_graph_load(DATA "/node/test_optional_get_element_sequence/model.onnx",
					 "m", &m, &err), 0);
	assert_int_equal(mfs_graph_input(m, 0)->kind, MFS_KIND_OPTIONAL);
	assert_int_equal(mfs_graph_input(m, 0)->elem_kind, MFS_KIND_SEQUENCE);
	assert_int_equal(mfs_graph_input(m, 0)->dtype, MFS_DT_INT32);
	assert_int_equal(mfs_graph_output(m, 0)->kind, MFS_KIND_SEQUENCE);
	mfs_graph_free(m);
}

/* The mount's one-file forms: an optional of a tensor in any format (an
 * empty file: no value), a sequence as .pb only. */
static void test_value_files(void **st)
{
	mfs_tensor_spec spec = { .name = "o", .dtype = MFS_DT_FLOAT, .rank = -1 };
	mfs_tensor v, back, a = f32(1, d2, xa);
	mfs_error err;
	char *buf;
	size_t len;
	(void)st;

	assert_int_equal(mfs_value_decode(MFS_FMT_TXT, "1 2", 3, &spec, MFS_KIND_OPTIONAL,
					  MFS_KIND_TENSOR, &v, &err), 0);
	assert_int_equal(v.n_items, 1);
	assert_f32s(&v.items[0], 2, 1.0, 2.0);
	assert_int_equal(mfs_value_encode(MFS_FMT_NPY, &v, "o", &buf, &len, &err), 0);
	assert_int_equal(mfs_value_decode(MFS_FMT_NPY, buf, len, &spec, MFS_KIND_OPTIONAL,
					  MFS_KIND_TENSOR, &back, &err), 0);
	free(buf);
	assert_f32s(&back.items[0], 2, 1.0, 2.0);
	mfs_tensor_release(&back);
	mfs_tensor_release(&v);
	assert_int_equal(mfs_value_decode(MFS_FMT_NPY, "", 0, &spec, MFS_KIND_OPTIONAL,
					  MFS_KIND_TENSOR, &v, &err), 0);
	assert_int_equal(v.n_items, 0);
	assert_int_equal(mfs_value_encode(MFS_FMT_TXT, &v, "o", &buf, &len, &err), 0);
	assert_int_equal(len, 0);
	free(buf);
	mfs_tensor_release(&v);
	/* a sequence: .pb, and nothing else */
	assert_int_equal(mfs_container_init(&v, MFS_KIND_SEQUENCE, MFS_KIND_TENSOR,
					    MFS_DT_FLOAT, 1, &err), 0);
	assert_int_equal(mfs_tensor_copy(&v.items[0], &a, &err), 0);
	assert_int_equal(mfs_value_encode(MFS_FMT_NPY, &v, "s", &buf, &len, &err), -EINVAL);
	assert_string_equal(err.msg, "'s' is a sequence(undefined): its file is s.pb (an ONNX SequenceProto)");
	assert_int_equal(mfs_value_encode(MFS_FMT_PB, &v, "s", &buf, &len, &err), 0);
	assert_int_equal(mfs_value_decode(MFS_FMT_PB, buf, len, &spec, MFS_KIND_SEQUENCE,
					  MFS_KIND_TENSOR, &back, &err), 0);
	assert_f32s(&back.items[0], 2, 1.0, 2.0);
	mfs_tensor_release(&back);
	spec.dtype = MFS_DT_INT64;   /* the model's tensors are another type */
	assert_int_equal(mfs_value_decode(MFS_FMT_PB, buf, len, &spec, MFS_KIND_SEQUENCE,
					  MFS_KIND_TENSOR, &back, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "holds float tensors, the model's are int64"));
	free(buf);
	mfs_tensor_release(&v);
}

/* Config completion takes a sequence's kind from the graph; the config
 * may say dims [-1] and nothing else. */
static void test_config_completion(void **st)
{
	static const char *const texts[] = {
		"", "input [ { name: \"s\" data_type: TYPE_FP32 dims: [ -1 ] } ]",
		"input [ { name: \"s\" data_type: TYPE_FP32 dims: [ 2 ] } ]",
		"max_batch_size: 4",
	};
	static const int want[] = { 0, 0, -EINVAL, -EINVAL };
	(void)st;

	for (int i = 0; i < 4; i++) {
		onnx_model *o = gb_new(16);
		mfs_model_config c;
		mfs_graph *m;
		mfs_error err;
		gb_input(o, "s", MFS_DT_FLOAT, -1, NULL);
		o->graph->inputs[0].kind = MFS_KIND_SEQUENCE;
		gb_node(o, "", "SequenceLength", "n", "s", "y");
		gb_output(o, "y");
		o->graph->outputs[0].dtype = MFS_DT_INT64;
		assert_int_equal(mfs_graph_compile(o, "m", &m, &err), 0);
		assert_int_equal(mfs_config_parse_pbtxt(texts[i], strlen(texts[i]),
							"config.pbtxt", &c, &err), 0);
		assert_int_equal(mfs_config_complete(&c, "m", m, &err), want[i]);
		if (!want[i]) {
			assert_int_equal(c.inputs[0].kind, MFS_KIND_SEQUENCE);
			assert_int_equal(c.inputs[0].rank, -1);
		} else {
			assert_non_null(strstr(err.msg, "input 's' is a sequence(float)"));
		}
		mfs_config_release(&c);
		mfs_graph_free(m);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_construct_insert_erase_at),
		cmocka_unit_test(test_sequence_errors),
		cmocka_unit_test(test_split_concat),
		cmocka_unit_test(test_optional),
		cmocka_unit_test(test_container_inputs),
		cmocka_unit_test(test_value_codec_and_reader),
		cmocka_unit_test(test_value_files),
		cmocka_unit_test(test_config_completion),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_onnx_reader.c - the ONNX reader (exec/onnx/onnx_reader.c,
 * exec/onnx/onnx_tensor.c, exec/onnx/pb_wire.c) and the .pb codec on real ONNX test
 * files and on hand-built protobuf messages: typed fields, raw_data,
 * external data, hostile and truncated input, round trips. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "codec_impl.h"
#include "file_util.h"
#include "onnx.h"

#define DATA "/usr/share/libonnx-testdata/data"

/* A growable protobuf writer for building test messages. */
typedef struct pbw {
	uint8_t *b;
	size_t n, cap;
} pbw;

static void w_bytes(pbw *w, const void *p, size_t n)
{
	if (w->n + n > w->cap) {
		w->cap = (w->n + n) * 2 + 64;
		w->b = realloc(w->b, w->cap);
		assert_non_null(w->b);
	}
	if (n)
		memcpy(w->b + w->n, p, n);
	w->n += n;
}

static void w_varint(pbw *w, uint64_t v)
{
	uint8_t t[10];
	int k = 0;
	while (v >= 0x80) {
		t[k++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	t[k++] = (uint8_t)v;
	w_bytes(w, t, (size_t)k);
}

static void w_tag(pbw *w, uint32_t field, int wt)
{
	w_varint(w, (uint64_t)field << 3 | (uint64_t)wt);
}

static void w_int(pbw *w, uint32_t field, int64_t v)
{
	w_tag(w, field, 0);
	w_varint(w, (uint64_t)v);
}

static void w_len(pbw *w, uint32_t field, const void *p, size_t n)
{
	w_tag(w, field, 2);
	w_varint(w, n);
	w_bytes(w, p, n);
}

static void w_str(pbw *w, uint32_t field, const char *s)
{
	w_len(w, field, s, strlen(s));
}

static void w_msg(pbw *w, uint32_t field, pbw *sub)
{
	w_len(w, field, sub->b, sub->n);
	free(sub->b);
	memset(sub, 0, sizeof(*sub));
}

static void w_fixed32(pbw *w, uint32_t field, uint32_t v)
{
	uint8_t t[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16),
			 (uint8_t)(v >> 24) };
	w_tag(w, field, 5);
	w_bytes(w, t, 4);
}

static void *read_all(const char *path, size_t *len)
{
	char *buf;
	mfs_error err;
	if (mfs_read_file(path, (size_t)1 << 30, &buf, len, &err) < 0)
		fail_msg("%s: %s", path, err.msg);
	return buf;
}

static void decode_file(const char *path, mfs_tensor *t, char **name)
{
	size_t len;
	void *buf = read_all(path, &len);
	mfs_error err = { 0 };
	int rc = onnx_tensor_decode(buf, len, NULL, t, name, &err);
	if (rc)
		fail_msg("%s: %s", path, err.msg);
	free(buf);
}

/* Real files ----------------------------------------------------------- */

static void test_add_model(void **state)
{
	onnx_model *m;
	mfs_error err = { 0 };
	(void)state;

	assert_int_equal(onnx_model_load_file(DATA "/node/test_add/model.onnx",
					      &m, &err), 0);
	assert_int_equal(onnx_model_opset(m, ""), 14);
	assert_int_equal(onnx_model_opset(m, "ai.onnx"), 14);
	assert_int_equal(onnx_model_opset(m, "ai.onnx.ml"), 0);
	assert_string_equal(m->producer_name, "backend-test");
	onnx_graph *g = m->graph;
	assert_string_equal(g->name, "test_add");
	assert_int_equal(g->n_nodes, 1);
	assert_string_equal(g->nodes[0].op_type, "Add");
	assert_string_equal(g->nodes[0].domain, "");
	assert_int_equal(g->nodes[0].n_inputs, 2);
	assert_string_equal(g->nodes[0].inputs[0], "x");
	assert_string_equal(g->nodes[0].inputs[1], "y");
	assert_string_equal(g->nodes[0].outputs[0], "sum");
	assert_int_equal(g->n_inputs, 2);
	assert_string_equal(g->inputs[1].name, "y");
	assert_int_equal(g->inputs[1].dtype, MFS_DT_FLOAT);
	assert_true(g->inputs[1].has_shape);
	assert_int_equal(g->inputs[1].rank, 3);
	assert_int_equal(g->inputs[1].dims[0], 3);
	assert_int_equal(g->inputs[1].dims[2], 5);
	assert_int_equal(g->n_outputs, 1);
	assert_string_equal(g->outputs[0].name, "sum");
	onnx_model_free(m);
}

static void test_add_data(void **state)
{
	mfs_tensor x, y, s;
	char *name = NULL;
	(void)state;

	decode_file(DATA "/node/test_add/test_data_set_0/input_0.pb", &x, &name);
	assert_string_equal(name, "x");
	free(name);
	decode_file(DATA "/node/test_add/test_data_set_0/input_1.pb", &y, NULL);
	decode_file(DATA "/node/test_add/test_data_set_0/output_0.pb", &s, NULL);
	assert_int_equal(x.dtype, MFS_DT_FLOAT);
	assert_int_equal(x.shape.rank, 3);
	assert_int_equal(x.nbytes, 60 * 4);
	const float *a = x.data, *b = y.data, *c = s.data;
	for (int i = 0; i < 60; i++)
		assert_float_equal(a[i] + b[i], c[i], 1e-6);
	mfs_tensor_release(&x);
	mfs_tensor_release(&y);
	mfs_tensor_release(&s);
}

static void test_initializers_and_attrs(void **state)
{
	onnx_model *m;
	mfs_error err = { 0 };
	const int64_t *ints;
	(void)state;

	assert_int_equal(onnx_model_load_file(
		DATA "/pytorch-converted/test_Linear/model.onnx", &m, &err), 0);
	onnx_graph *g = m->graph;
	assert_int_equal(m->ir_version, 3);
	assert_int_equal(onnx_model_opset(m, ""), 6);
	assert_int_equal(g->n_initializers, 2);
	assert_string_equal(g->initializers[0].name, "1");
	mfs_tensor *w = &g->initializers[0].tensor;
	assert_int_equal(w->dtype, MFS_DT_FLOAT);
	assert_int_equal(w->shape.rank, 2);
	assert_int_equal(w->shape.dims[0], 8);
	assert_int_equal(w->shape.dims[1], 10);
	assert_float_equal(((float *)w->data)[0], 0.09606448f, 1e-7);
	assert_float_equal(((float *)w->data)[79], -0.018705457f, 1e-7);
	const onnx_node *n = &g->nodes[0];
	assert_string_equal(n->op_type, "Gemm");
	assert_int_equal(onnx_attr_int(n, "transB", 0), 1);
	assert_int_equal(onnx_attr_int(n, "transA", 7), 7);
	assert_float_equal(onnx_attr_float(n, "alpha", 0), 1.0, 0);
	/* A getter of the wrong type returns the default. */
	assert_int_equal(onnx_attr_int(n, "alpha", -3), -3);
	assert_null(onnx_node_attr(n, "nope"));
	assert_int_equal(onnx_attr_ints(n, "transB", &ints), 0);
	onnx_model_free(m);

	assert_int_equal(onnx_model_load_file(
		DATA "/node/test_transpose_all_permutations_1/model.onnx", &m,
		&err), 0);
	assert_int_equal(onnx_attr_ints(&m->graph->nodes[0], "perm", &ints), 3);
	assert_int_equal(ints[0], 0);
	assert_int_equal(ints[1], 2);
	assert_int_equal(ints[2], 1);
	onnx_model_free(m);

	assert_int_equal(onnx_model_load_file(
		DATA "/node/test_leakyrelu/model.onnx", &m, &err), 0);
	assert_float_equal(onnx_attr_float(&m->graph->nodes[0], "alpha", 0),
			   0.1f, 0);
	onnx_model_free(m);

	assert_int_equal(onnx_model_load_file(
		DATA "/node/test_constant/model.onnx", &m, &err), 0);
	const onnx_attr *a = onnx_node_attr(&m->graph->nodes[0], "value");
	assert_non_null(a);
	assert_int_equal(a->type, ONNX_ATTR_TENSOR);
	assert_int_equal(a->t.shape.rank, 2);
	assert_int_equal(a->t.shape.dims[0], 5);
	onnx_model_free(m);
}

static void test_if_subgraphs(void **state)
{
	onnx_model *m;
	mfs_error err = { 0 };
	(void)state;

	assert_int_equal(onnx_model_load_file(DATA "/node/test_if/model.onnx",
					      &m, &err), 0);
	const onnx_node *n = &m->graph->nodes[0];
	assert_string_equal(n->op_type, "If");
	const onnx_attr *t = onnx_node_attr(n, "then_branch");
	assert_non_null(t);
	assert_int_equal(t->type, ONNX_ATTR_GRAPH);
	assert_string_equal(t->g->name, "then_body");
	assert_int_equal(t->g->n_nodes, 1);
	assert_string_equal(t->g->nodes[0].op_type, "Constant");
	assert_string_equal(t->g->outputs[0].name, "then_out");
	onnx_model_free(m);
}

static void test_sweep_testdata_dir(const char *dir)
{
	/* Every node test model that is not a string/sequence/optional case
	 * loads; checked over the first cases of the folder. */
	char path[512];
	int loaded = 0;
	static const char *cases[] = {
		"test_conv_with_strides_padding", "test_gather_0",
		"test_reshape_reduced_dims", "test_loop11", "test_scan9_sum",
		"test_cast_FLOAT_to_FLOAT16", "test_bitshift_left_uint16",
		"test_cast_FLOAT16_to_DOUBLE", "test_clip_default_int8_inbounds",
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		onnx_model *m;
		mfs_error err = { 0 };
		snprintf(path, sizeof(path), "%s/%s/model.onnx", dir, cases[i]);
		if (access(path, R_OK))
			continue;
		if (onnx_model_load_file(path, &m, &err))
			fail_msg("%s", err.msg);
		onnx_model_free(m);
		for (int k = 0; k < 3; k++) {
			mfs_tensor t;
			snprintf(path, sizeof(path),
				 "%s/%s/test_data_set_0/input_%d.pb", dir, cases[i], k);
			if (access(path, R_OK))
				break;
			decode_file(path, &t, NULL);
			mfs_tensor_release(&t);
		}
		loaded++;
	}
	assert_true(loaded >= 7);
}

static void test_sweep(void **state)
{
	(void)state;
	test_sweep_testdata_dir(DATA "/node");
}

static void test_fp16_typed_file(void **state)
{
	mfs_tensor t;
	(void)state;
	/* float16 test data uses int32_data or raw_data; either way the
	 * values are the same as the float input converted. */
	decode_file(DATA "/node/test_cast_FLOAT_to_FLOAT16/test_data_set_0/output_0.pb",
		    &t, NULL);
	mfs_tensor f;
	decode_file(DATA "/node/test_cast_FLOAT_to_FLOAT16/test_data_set_0/input_0.pb",
		    &f, NULL);
	assert_int_equal(t.dtype, MFS_DT_FLOAT16);
	assert_true(mfs_shape_equal(&t.shape, &f.shape));
	int64_t n = mfs_shape_numel(&t.shape);
	for (int64_t i = 0; i < n; i++) {
		float want = ((float *)f.data)[i];
		float got = mfs_half_to_float(((uint16_t *)t.data)[i]);
		if (want == want && want < 65504 && want > -65504)
			assert_float_equal(got, want, 1e-3 * (want < 0 ? -want : want) + 1e-4);
	}
	mfs_tensor_release(&t);
	mfs_tensor_release(&f);
}

/* Hand-built TensorProtos ---------------------------------------------- */

static int decode_pbw(pbw *w, mfs_tensor *t, mfs_error *err)
{
	int rc = onnx_tensor_decode(w->b, w->n, NULL, t, NULL, err);
	free(w->b);
	memset(w, 0, sizeof(*w));
	return rc;
}

static void tensor_head(pbw *w, int dt, int rank, const int64_t *dims, bool packed)
{
	if (packed) {
		pbw d = { 0 };
		for (int i = 0; i < rank; i++)
			w_varint(&d, (uint64_t)dims[i]);
		w_msg(w, 1, &d);
	} else {
		for (int i = 0; i < rank; i++)
			w_int(w, 1, dims[i]);
	}
	w_int(w, 2, dt);
}

static void test_typed_fields(void **state)
{
	pbw w = { 0 };
	mfs_tensor t;
	mfs_error err = { 0 };
	int64_t d23[2] = { 2, 3 }, d3[1] = { 3 };
	(void)state;

	/* float_data packed, dims unpacked. */
	tensor_head(&w, MFS_DT_FLOAT, 2, d23, false);
	{
		float v[6] = { 1, 2, 3, 4, 5, -6.5f };
		w_len(&w, 4, v, sizeof(v));
	}
	assert_int_equal(decode_pbw(&w, &t, &err), 0);
	assert_int_equal(t.shape.rank, 2);
	assert_float_equal(((float *)t.data)[5], -6.5f, 0);
	mfs_tensor_release(&t);

	/* float_data unpacked (one fixed32 per element), split in two runs. */
	tensor_head(&w, MFS_DT_FLOAT, 1, d3, true);
	float f1 = 1.5f, f2 = -2.0f;
	uint32_t b1, b2;
	memcpy(&b1, &f1, 4);
	memcpy(&b2, &f2, 4);
	w_fixed32(&w, 4, b1);
	{
		float v[2] = { 7, 8 };
		w_len(&w, 4, v, sizeof(v));
	}
	(void)b2;
	assert_int_equal(decode_pbw(&w, &t, &err), 0);
	assert_float_equal(((float *)t.data)[0], 1.5f, 0);
	assert_float_equal(((float *)t.data)[2], 8.0f, 0);
	mfs_tensor_release(&t);

	/* int32_data carrying int8 with negative values (sign-extended). */
	tensor_head(&w, MFS_DT_INT8, 1, d3, true);
	w_int(&w, 5, -128);
	w_int(&w, 5, 127);
	w_int(&w, 5, -1);
	assert_int_equal(decode_pbw(&w, &t, &err), 0);
	assert_int_equal(((int8_t *)t.data)[0], -128);
	assert_int_equal(((int8_t *)t.data)[1], 127);
	assert_int_equal(((int8_t *)t.data)[2], -1);
	mfs_tensor_release(&t);

	/* int32_data packed carrying uint16 / fp16 bits / bool / uint8 / int16. */
	struct { int dt; int64_t v[3]; } cases[] = {
		{ MFS_DT_UINT16, { 0, 65535, 300 } },
		{ MFS_DT_FLOAT16, { 0x3c00, 0xc000, 0 } },
		{ MFS_DT_BFLOAT16, { 0x3f80, 0, 0xffff } },
		{ MFS_DT_BOOL, { 1, 0, 1 } },
		{ MFS_DT_UINT8, { 255, 0, 7 } },
		{ MFS_DT_INT16, { -32768, 32767, -5 } },
		{ MFS_DT_INT32, { INT32_MIN, INT32_MAX, 0 } },
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		pbw p = { 0 };
		tensor_head(&w, cases[c].dt, 1, d3, true);
		for (int i = 0; i < 3; i++)
			w_varint(&p, (uint64_t)cases[c].v[i]);
		w_msg(&w, 5, &p);
		assert_int_equal(decode_pbw(&w, &t, &err), 0);
		for (int i = 0; i < 3; i++)
			assert_int_equal(mfs_tensor_get_i64(&t, i) ==
					 cases[c].v[i] ||
					 cases[c].dt == MFS_DT_FLOAT16 ||
					 cases[c].dt == MFS_DT_BFLOAT16, 1);
		if (cases[c].dt == MFS_DT_FLOAT16)
			assert_int_equal(((uint16_t *)t.data)[1], 0xc000);
		if (cases[c].dt == MFS_DT_BFLOAT16)
			assert_int_equal(((uint16_t *)t.data)[2], 0xffff);
		mfs_tensor_release(&t);
	}

	/* int64_data, double_data, uint64_data (uint32 and uint64). */
	tensor_head(&w, MFS_DT_INT64, 1, d3, true);
	w_int(&w, 7, INT64_MIN);
	w_int(&w, 7, -1);
	w_int(&w, 7, INT64_MAX);
	assert_int_equal(decode_pbw(&w, &t, &err), 0);
	assert_true(((int64_t *)t.data)[0] == INT64_MIN);
	assert_true(((int64_t *)t.data)[2] == INT64_MAX);
	mfs_tensor_release(&t);

	tensor_head(&w, MFS_DT_DOUBLE, 1, d3, true);
	{
		double v[3] = { 1e300, -0.25, 3 };
		w_len(&w, 10, v, sizeof(v));
	}
	assert_int_equal(decode_pbw(&w, &t, &err), 0);
	assert_true(((double *)t.data)[0] == 1e300);
	assert_true(((double *)t.data)[1] == -0.25);
	mfs_tensor_release(&t);

	tensor_head(&w, MFS_DT_UINT32, 1, d3, true);
	w_int(&w, 11, 0);
	w_int(&w, 11, 4294967295LL);
	w_int(&w, 11, 5);
	assert_int_equal(decode_pbw(&w, &t, &err), 0);
	assert_true(((uint32_t *)t.data)[1] == 4294967295u);
	mfs_tensor_release(&t);

	tensor_head(&w, MFS_DT_UINT64, 1, d3, true);
	w_int(&w, 11, 0);
	w_int(&w, 11, -1);   /* 2^64-1 */
	w_int(&w, 11, 5);
	assert_int_equal(decode_pbw(&w, &t, &err), 0);
	assert_true(((uint64_t *)t.data)[1] == UINT64_MAX);
	mfs_tensor_release(&t);

	/* Scalar (no dims) and empty tensor (a zero dim, no data). */
	w_int(&w, 2, MFS_DT_INT64);
	w_int(&w, 7, 42);
	assert_int_equal(decode_pbw(&w, &t, &err), 0);
	assert_int_equal(t.shape.rank, 0);
	assert_int_equal(*(int64_t *)t.data, 42);
	mfs_tensor_release(&t);
	{
		int64_t d[2] = { 0, 4 };
		tensor_head(&w, MFS_DT_FLOAT, 2, d, true);
	}
	assert_int_equal(decode_pbw(&w, &t, &err), 0);
	assert_int_equal(t.nbytes, 0);
	mfs_tensor_release(&t);

	/* Unknown fields of every wire type are skipped. */
	tensor_head(&w, MFS_DT_INT32, 1, d3, true);
	w_int(&w, 99, 5);
	w_fixed32(&w, 98, 5);
	w_tag(&w, 97, 1);
	w_bytes(&w, "12345678", 8);
	w_str(&w, 12, "doc string");
	{
		int32_t v[3] = { 1, 2, 3 };
		w_len(&w, 9, v, sizeof(v));
	}
	assert_int_equal(decode_pbw(&w, &t, &err), 0);
	assert_int_equal(((int32_t *)t.data)[2], 3);
	mfs_tensor_release(&t);
}

static void expect_tensor_error(pbw *w, int code, const char *substr)
{
	mfs_tensor t;
	mfs_error err = { 0 };
	int rc = decode_pbw(w, &t, &err);
	if (rc != -code)
		fail_msg("expected %d, got %d (%s)", -code, rc, err.msg);
	if (!strstr(err.msg, substr))
		fail_msg("message '%s' lacks '%s'", err.msg, substr);
	assert_null(t.data);
}

static void test_tensor_errors(void **state)
{
	pbw w = { 0 };
	int64_t d23[2] = { 2, 3 }, d3[1] = { 3 };
	(void)state;

	/* Declared shape larger than the data. */
	tensor_head(&w, MFS_DT_FLOAT, 2, d23, true);
	{
		float v[5] = { 0 };
		w_len(&w, 9, v, sizeof(v));
	}
	expect_tensor_error(&w, EINVAL, "raw_data has 20 bytes");

	/* A huge declared shape with little data: no huge allocation. */
	{
		int64_t big[3] = { 1 << 30, 1 << 30, 1 << 20 };
		tensor_head(&w, MFS_DT_FLOAT, 3, big, true);
		w_int(&w, 5, 1);
	}
	expect_tensor_error(&w, EINVAL, "overflow");
	{
		int64_t big[2] = { 1 << 30, 1 << 20 };
		tensor_head(&w, MFS_DT_INT32, 2, big, true);
		w_int(&w, 5, 1);
	}
	expect_tensor_error(&w, EINVAL, "int32_data has 1 elements");

	/* Typed count mismatch. */
	tensor_head(&w, MFS_DT_INT64, 1, d3, true);
	w_int(&w, 7, 1);
	expect_tensor_error(&w, EINVAL, "int64_data has 1 elements, but shape [3]");

	/* Wrong typed field for the dtype. */
	tensor_head(&w, MFS_DT_FLOAT, 1, d3, true);
	w_int(&w, 7, 1);
	w_int(&w, 7, 1);
	w_int(&w, 7, 1);
	expect_tensor_error(&w, EINVAL, "int64_data cannot carry float");

	/* Two data sources. */
	tensor_head(&w, MFS_DT_INT64, 1, d3, true);
	w_len(&w, 9, "012345678901234567890123", 24);
	w_int(&w, 7, 1);
	w_int(&w, 7, 1);
	w_int(&w, 7, 1);
	expect_tensor_error(&w, EINVAL, "more than one field");

	/* Out-of-range int32_data for int8 / bool. */
	tensor_head(&w, MFS_DT_INT8, 1, d3, true);
	w_int(&w, 5, 1);
	w_int(&w, 5, 128);
	w_int(&w, 5, 1);
	expect_tensor_error(&w, EINVAL, "out of range for int8");
	tensor_head(&w, MFS_DT_INT32, 1, d3, true);
	w_int(&w, 5, 1);
	w_int(&w, 5, 1LL << 40);
	w_int(&w, 5, 1);
	expect_tensor_error(&w, EINVAL, "does not fit in int32");
	tensor_head(&w, MFS_DT_UINT32, 1, d3, true);
	w_int(&w, 11, 1);
	w_int(&w, 11, 1LL << 32);
	w_int(&w, 11, 1);
	expect_tensor_error(&w, EINVAL, "out of range for uint32");
	tensor_head(&w, MFS_DT_BOOL, 1, d3, true);
	w_int(&w, 5, 1);
	w_int(&w, 5, 2);
	w_int(&w, 5, 1);
	expect_tensor_error(&w, EINVAL, "out of range for bool");
	tensor_head(&w, MFS_DT_BOOL, 1, d3, true);
	w_len(&w, 9, "\x01\x02\x00", 3);
	expect_tensor_error(&w, EINVAL, "bool element 1 is 2");

	/* A string tensor without its string_data (test_tensor_string.c has
	 * the good ones); unsupported: complex, no data_type, negative dims. */
	tensor_head(&w, MFS_DT_STRING, 1, d3, true);
	expect_tensor_error(&w, EINVAL, "tensor string [3] carries no data");
	tensor_head(&w, 14, 1, d3, true);
	expect_tensor_error(&w, ENOTSUP, "data type 14");
	w_int(&w, 1, 3);
	expect_tensor_error(&w, EINVAL, "no valid data_type");
	tensor_head(&w, MFS_DT_FLOAT, 1, d3, false);
	w_len(&w, 6, "abc", 3);
	expect_tensor_error(&w, EINVAL, "not an ONNX TensorProto of float: it carries string_data");
	{
		int64_t neg[1] = { -2 };
		tensor_head(&w, MFS_DT_FLOAT, 1, neg, false);
	}
	expect_tensor_error(&w, EINVAL, "negative");

	/* Rank beyond MFS_MAX_RANK. */
	{
		int64_t d9[9] = { 1, 1, 1, 1, 1, 1, 1, 1, 1 };
		tensor_head(&w, MFS_DT_FLOAT, 9, d9, true);
	}
	expect_tensor_error(&w, ENOTSUP, "more than 8 dims");

	/* Missing data. */
	tensor_head(&w, MFS_DT_FLOAT, 1, d3, true);
	expect_tensor_error(&w, EINVAL, "carries no data");

	/* Wire-level damage: overflowing varint, bad wire type, length past
	 * the end, group wire type, packed float not a multiple of 4. */
	w_bytes(&w, "\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 11);
	expect_tensor_error(&w, EINVAL, "overflows");
	w_bytes(&w, "\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12);
	expect_tensor_error(&w, EINVAL, "varint");
	w_bytes(&w, "\x4a\x05\x01", 3);
	expect_tensor_error(&w, EINVAL, "past the end");
	w_bytes(&w, "\x13\x14", 2);
	expect_tensor_error(&w, EINVAL, "group");
	w_bytes(&w, "\x15\x01\x02\x03\x04", 5); /* data_type as fixed32 */
	expect_tensor_error(&w, EINVAL, "wire type 32-bit");
	tensor_head(&w, MFS_DT_FLOAT, 1, d3, true);
	w_len(&w, 4, "12345", 5);
	expect_tensor_error(&w, EINVAL, "multiple of 4");
	tensor_head(&w, MFS_DT_INT32, 1, d3, true);
	w_len(&w, 5, "\x01\x02\x83", 3);
	expect_tensor_error(&w, EINVAL, "truncated varint");

	/* External data in a .pb without a base directory is refused. */
	{
		pbw e = { 0 };
		tensor_head(&w, MFS_DT_FLOAT, 1, d3, true);
		w_str(&e, 1, "location");
		w_str(&e, 2, "x.bin");
		w_msg(&w, 13, &e);
		w_int(&w, 14, 1);
	}
	expect_tensor_error(&w, EINVAL, "not allowed");
}

/* Round trip through onnx_tensor_encode and the .pb codec, every dtype. */
static void test_round_trip(void **state)
{
	static const mfs_dtype dts[] = {
		MFS_DT_FLOAT, MFS_DT_UINT8, MFS_DT_INT8, MFS_DT_UINT16,
		MFS_DT_INT16, MFS_DT_INT32, MFS_DT_INT64, MFS_DT_BOOL,
		MFS_DT_FLOAT16, MFS_DT_DOUBLE, MFS_DT_UINT32, MFS_DT_UINT64,
		MFS_DT_BFLOAT16,
	};
	static const mfs_shape shapes[] = {
		{ 0, { 0 } }, { 1, { 7 } }, { 3, { 2, 3, 4 } }, { 2, { 0, 5 } },
		{ 8, { 1, 2, 1, 2, 1, 2, 1, 300 } },
	};
	mfs_error err = { 0 };
	(void)state;

	for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
		for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
			mfs_tensor t, back;
			char *buf, *name;
			size_t len;
			assert_int_equal(mfs_tensor_alloc(&t, dts[d], &shapes[s], &err), 0);
			uint8_t *p = t.data;
			for (size_t i = 0; i < t.nbytes; i++)
				p[i] = dts[d] == MFS_DT_BOOL ? (uint8_t)(i & 1)
							     : (uint8_t)(i * 37 + d);
			assert_int_equal(mfs_codec_pb_encode(&t, "T0", &buf, &len, &err), 0);
			assert_int_equal(onnx_tensor_decode(buf, len, NULL, &back,
							    &name, &err), 0);
			assert_string_equal(name, "T0");
			assert_int_equal(back.dtype, dts[d]);
			assert_true(mfs_shape_equal(&back.shape, &t.shape));
			assert_int_equal(back.nbytes, t.nbytes);
			if (t.nbytes)
				assert_memory_equal(back.data, t.data, t.nbytes);
			mfs_tensor_release(&back);
			mfs_tensor_spec spec = { .name = "T0", .dtype = dts[d], .rank = -1 };
			assert_int_equal(mfs_codec_pb_decode(buf, len, &spec, &back, &err), 0);
			assert_int_equal(back.nbytes, t.nbytes);
			mfs_tensor_release(&back);
			free(name);
			free(buf);
			mfs_tensor_release(&t);
		}
	}
	/* Encoding refuses what it cannot represent. */
	mfs_tensor bad = { .dtype = MFS_DT_UNDEFINED };
	void *b;
	size_t l;
	assert_int_equal(onnx_tensor_encode(&bad, NULL, &b, &l, &err), -ENOTSUP);
	mfs_shape sh = { 1, { 4 } };
	assert_int_equal(mfs_tensor_alloc(&bad, MFS_DT_FLOAT, &sh, &err), 0);
	bad.nbytes = 12;
	assert_int_equal(onnx_tensor_encode(&bad, NULL, &b, &l, &err), -EINVAL);
	bad.nbytes = 16;
	bad.layout = MFS_LAYOUT_NHWC;
	assert_int_equal(onnx_tensor_encode(&bad, NULL, &b, &l, &err), -EINVAL);
	mfs_tensor_release(&bad);
}

/* Models built by hand ------------------------------------------------- */

/* A one-node model: Relu(X) -> Y, with an optional initializer/attribute
 * message and graph wrapping. */
static void build_model(pbw *m, pbw *graph_extra, pbw *node_extra)
{
	pbw g = { 0 }, n = { 0 }, o = { 0 }, vi = { 0 }, tp = { 0 }, tt = { 0 },
	    sh = { 0 }, dim = { 0 };

	w_int(m, 1, 8);
	w_str(m, 2, "unit-test");
	w_str(&o, 1, "");
	w_int(&o, 2, 13);
	w_msg(m, 8, &o);
	w_str(&n, 1, "X");
	w_str(&n, 2, "Y");
	w_str(&n, 3, "relu0");
	w_str(&n, 4, "Relu");
	if (node_extra)
		w_bytes(&n, node_extra->b, node_extra->n);
	w_msg(&g, 1, &n);
	w_str(&g, 2, "g");
	if (graph_extra)
		w_bytes(&g, graph_extra->b, graph_extra->n);
	w_str(&vi, 1, "X");
	w_int(&tt, 1, MFS_DT_FLOAT);
	w_int(&dim, 1, 4);
	w_msg(&sh, 1, &dim);
	w_str(&dim, 2, "batch");
	w_msg(&sh, 1, &dim);
	w_msg(&tt, 2, &sh);
	w_msg(&tp, 1, &tt);
	w_msg(&vi, 2, &tp);
	w_msg(&g, 11, &vi);
	w_str(&vi, 1, "Y");
	w_msg(&g, 12, &vi);
	w_msg(m, 7, &g);
}

static void test_value_info_and_dims(void **state)
{
	pbw m = { 0 };
	onnx_model *model;
	mfs_error err = { 0 };
	(void)state;

	build_model(&m, NULL, NULL);
	assert_int_equal(onnx_model_load_buffer(m.b, m.n, NULL, &model, &err), 0);
	onnx_value_info *x = &model->graph->inputs[0];
	assert_int_equal(x->dtype, MFS_DT_FLOAT);
	assert_int_equal(x->rank, 2);
	assert_int_equal(x->dims[0], 4);
	assert_null(x->dim_params[0]);
	assert_int_equal(x->dims[1], -1);
	assert_string_equal(x->dim_params[1], "batch");
	/* Y has no type at all. */
	assert_int_equal(model->graph->outputs[0].dtype, MFS_DT_UNDEFINED);
	assert_false(model->graph->outputs[0].has_shape);
	assert_string_equal(model->graph->nodes[0].name, "relu0");
	onnx_model_free(model);
	free(m.b);
}

static int load_with(pbw *graph_extra, pbw *node_extra, mfs_error *err)
{
	pbw m = { 0 };
	onnx_model *model = NULL;
	int rc;

	build_model(&m, graph_extra, node_extra);
	rc = onnx_model_load_buffer(m.b, m.n, NULL, &model, err);
	onnx_model_free(model);
	free(m.b);
	if (graph_extra) {
		free(graph_extra->b);
		memset(graph_extra, 0, sizeof(*graph_extra));
	}
	if (node_extra) {
		free(node_extra->b);
		memset(node_extra, 0, sizeof(*node_extra));
	}
	return rc;
}

static void test_model_errors(void **state)
{
	pbw x = { 0 }, a = { 0 };
	mfs_error err = { 0 };
	onnx_model *model;
	(void)state;

	/* Sparse initializer. */
	w_str(&x, 15, "whatever");
	assert_int_equal(load_with(&x, NULL, &err), -ENOTSUP);
	assert_non_null(strstr(err.msg, "sparse"));

	/* ref_attr_name. */
	w_str(&a, 1, "alpha");
	w_str(&a, 21, "outer_alpha");
	w_int(&a, 20, ONNX_ATTR_FLOAT);
	w_msg(&x, 5, &a);
	assert_int_equal(load_with(NULL, &x, &err), -ENOTSUP);
	assert_non_null(strstr(err.msg, "ref_attr_name"));
	assert_non_null(strstr(err.msg, "node 0 (Relu 'relu0')"));
	assert_non_null(strstr(err.msg, "graph 'g'"));

	/* An attribute without a name; one with an unsupported type. */
	w_int(&a, 20, ONNX_ATTR_INT);
	w_msg(&x, 5, &a);
	assert_int_equal(load_with(NULL, &x, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "without a name"));
	w_str(&a, 1, "ts");
	w_int(&a, 20, 9);
	w_msg(&x, 5, &a);
	assert_int_equal(load_with(NULL, &x, &err), -ENOTSUP);

	/* Attribute types inferred when type is absent (IR v1). */
	w_str(&a, 1, "ks");
	w_int(&a, 8, 3);
	w_int(&a, 8, 5);
	w_msg(&x, 5, &a);
	w_str(&a, 1, "fl");
	w_fixed32(&a, 2, 0x40490fdb);
	w_msg(&x, 5, &a);
	w_str(&a, 1, "mode");
	w_str(&a, 4, "constant");
	w_msg(&x, 5, &a);
	{
		pbw m = { 0 };
		build_model(&m, NULL, &x);
		free(x.b);
		memset(&x, 0, sizeof(x));
		assert_int_equal(onnx_model_load_buffer(m.b, m.n, NULL, &model, &err), 0);
		const onnx_node *n = &model->graph->nodes[0];
		const int64_t *v;
		assert_int_equal(onnx_attr_ints(n, "ks", &v), 2);
		assert_int_equal(v[1], 5);
		assert_float_equal(onnx_attr_float(n, "fl", 0), 3.14159265f, 1e-6);
		assert_string_equal(onnx_attr_string(n, "mode", "x"), "constant");
		assert_string_equal(onnx_attr_string(n, "none", "dflt"), "dflt");
		onnx_model_free(model);
		free(m.b);
	}

	/* Initializer whose shape does not match its data names itself. */
	{
		pbw t = { 0 };
		int64_t d[1] = { 4 };
		tensor_head(&t, MFS_DT_FLOAT, 1, d, true);
		w_str(&t, 8, "W");
		w_len(&t, 9, "12345678", 8);
		w_msg(&x, 5, &t);
	}
	assert_int_equal(load_with(&x, NULL, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "initializer 0 'W'"));
	assert_non_null(strstr(err.msg, "raw_data has 8 bytes"));

	/* No graph; not protobuf at all. */
	assert_int_equal(onnx_model_load_buffer("\x08\x07", 2, NULL, &model, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "no graph"));
	assert_null(model);
	assert_int_equal(onnx_model_load_buffer("hello world", 11, NULL, &model, &err),
			 -EINVAL);

	/* A value_info of rank 9 is refused by name. */
	{
		pbw vi = { 0 }, tp = { 0 }, tt = { 0 }, sh = { 0 }, dim = { 0 };
		w_str(&vi, 1, "deep");
		w_int(&tt, 1, MFS_DT_FLOAT);
		for (int i = 0; i < 9; i++) {
			w_int(&dim, 1, 1);
			w_msg(&sh, 1, &dim);
		}
		w_msg(&tt, 2, &sh);
		w_msg(&tp, 1, &tt);
		w_msg(&vi, 2, &tp);
		w_msg(&x, 13, &vi);
	}
	assert_int_equal(load_with(&x, NULL, &err), -ENOTSUP);
	assert_non_null(strstr(err.msg, "value_info 0 'deep'"));

	/* Files: missing, a directory; the error names the file. */
	assert_int_equal(onnx_model_load_file("/tmp", &model, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "/tmp: not a regular file"));
	assert_int_equal(onnx_model_load_file("/nonexistent/m.onnx", &model, &err),
			 -ENOENT);
	assert_non_null(strstr(err.msg, "/nonexistent/m.onnx"));
}

/* If nodes nested 40 deep: bounded, not a stack overflow. */
static void test_nesting_depth(void **state)
{
	pbw g = { 0 };
	mfs_error err = { 0 };
	onnx_model *model;
	(void)state;

	w_str(&g, 2, "leaf");
	for (int i = 0; i < 40; i++) {
		pbw a = { 0 }, n = { 0 }, outer = { 0 };
		w_str(&a, 1, "then_branch");
		w_int(&a, 20, ONNX_ATTR_GRAPH);
		w_msg(&a, 6, &g);
		w_str(&n, 4, "If");
		w_msg(&n, 5, &a);
		w_msg(&outer, 1, &n);
		w_str(&outer, 2, "level");
		g = outer;
	}
	pbw m = { 0 };
	w_msg(&m, 7, &g);
	assert_int_equal(onnx_model_load_buffer(m.b, m.n, NULL, &model, &err),
			 -EINVAL);
	if (!strstr(err.msg, "nested more than"))
		fail_msg("%s", err.msg);
	free(m.b);
}

/* Every prefix of a real model, and every single-byte corruption of a
 * small one, either loads or fails with a message: never a crash (this
 * test runs under ASan/UBSan in `make test`). */
static void test_truncation_and_corruption(void **state)
{
	size_t len;
	uint8_t *buf = read_all(DATA "/pytorch-converted/test_Linear/model.onnx",
				&len);
	(void)state;

	int ok = 0;
	for (size_t n = 0; n <= len; n++) {
		onnx_model *m = NULL;
		mfs_error err = { 0 };
		uint8_t *copy = malloc(n ? n : 1);   /* exact size for ASan */
		memcpy(copy, buf, n);
		int rc = onnx_model_load_buffer(copy, n, NULL, &m, &err);
		if (rc == 0) {
			ok++;
			onnx_model_free(m);
		} else {
			assert_true(rc < 0);
			assert_true(err.msg[0] != '\0');
			assert_null(m);
		}
		free(copy);
	}
	/* The full model loads; most prefixes cannot. */
	assert_true(ok >= 1 && ok < (int)len / 2);

	for (size_t i = 0; i < len; i++) {
		for (int bit = 0; bit < 8; bit += 3) {
			onnx_model *m = NULL;
			mfs_error err = { 0 };
			buf[i] ^= (uint8_t)(1u << bit);
			if (onnx_model_load_buffer(buf, len, NULL, &m, &err) == 0)
				onnx_model_free(m);
			else
				assert_true(err.msg[0] != '\0');
			buf[i] ^= (uint8_t)(1u << bit);
		}
	}
	free(buf);
}

/* External data ------------------------------------------------------- */

static char tmpdir[64];

static void write_file(const char *name, const void *data, size_t n)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, n, f), n);
	fclose(f);
}

/* Model file with `copies` external initializers W (float[4]). */
static int load_external_n(int copies, const char *location,
			   const char *offset, const char *length,
			   mfs_error *err, onnx_model **out)
{
	pbw x = { 0 }, t = { 0 }, e = { 0 }, m = { 0 };
	int64_t d[1] = { 4 };
	char path[256];

	for (int k = 0; k < copies; k++) {
	tensor_head(&t, MFS_DT_FLOAT, 1, d, true);
	w_str(&t, 8, "W");
	w_str(&e, 1, "location");
	w_str(&e, 2, location);
	w_msg(&t, 13, &e);
	if (offset) {
		w_str(&e, 1, "offset");
		w_str(&e, 2, offset);
		w_msg(&t, 13, &e);
	}
	if (length) {
		w_str(&e, 1, "length");
		w_str(&e, 2, length);
		w_msg(&t, 13, &e);
	}
	w_int(&t, 14, 1);
	w_msg(&x, 5, &t);
	}
	build_model(&m, &x, NULL);
	free(x.b);
	write_file("model.onnx", m.b, m.n);
	free(m.b);
	snprintf(path, sizeof(path), "%s/model.onnx", tmpdir);
	return onnx_model_load_file(path, out, err);
}

static int load_external(const char *location, const char *offset,
			 const char *length, mfs_error *err, onnx_model **out)
{
	return load_external_n(1, location, offset, length, err, out);
}

static void test_external_data(void **state)
{
	mfs_error err = { 0 };
	onnx_model *m;
	char path[256];
	float vals[6] = { 9, 1, 2, 3, 4, 9 };
	(void)state;

	strcpy(tmpdir, "/tmp/mfs_onnx_XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	write_file("w.bin", vals, sizeof(vals));
	snprintf(path, sizeof(path), "%s/sub", tmpdir);
	assert_int_equal(mkdir(path, 0700), 0);
	write_file("sub/w2.bin", vals + 1, 16);

	assert_int_equal(load_external("w.bin", "4", "16", &err, &m), 0);
	const mfs_tensor *w = &m->graph->initializers[0].tensor;
	assert_int_equal(w->nbytes, 16);
	assert_float_equal(((float *)w->data)[0], 1, 0);
	assert_float_equal(((float *)w->data)[3], 4, 0);
	onnx_model_free(m);

	/* No length: the rest of the file from offset. */
	assert_int_equal(load_external("sub/w2.bin", NULL, NULL, &err, &m), 0);
	assert_float_equal(((float *)m->graph->initializers[0].tensor.data)[2], 3, 0);
	onnx_model_free(m);
	assert_int_equal(load_external("./sub//w2.bin", "0", "16", &err, &m), 0);
	onnx_model_free(m);

	/* Two tensors reading the same bytes: refused (no amplification). */
	assert_int_equal(load_external_n(2, "w.bin", "4", "16", &err, &m), -EINVAL);
	assert_non_null(strstr(err.msg, "overlapping"));
	assert_null(m);

	/* Size mismatch, runs past the end, bad numbers. */
	assert_int_equal(load_external("w.bin", NULL, NULL, &err, &m), -EINVAL);
	assert_non_null(strstr(err.msg, "holds 24 bytes"));
	assert_non_null(strstr(err.msg, "model.onnx"));
	assert_int_equal(load_external("w.bin", "16", "16", &err, &m), -EINVAL);
	assert_non_null(strstr(err.msg, "runs past"));
	assert_int_equal(load_external("w.bin", "100", NULL, &err, &m), -EINVAL);
	assert_int_equal(load_external("w.bin", "-4", "16", &err, &m), -EINVAL);
	assert_int_equal(load_external("w.bin", "99999999999999999999999", "16",
				       &err, &m), -EINVAL);

	/* Escapes: .., absolute, symlink pointing out; missing file; a dir. */
	assert_int_equal(load_external("../w.bin", NULL, NULL, &err, &m), -EINVAL);
	assert_non_null(strstr(err.msg, "leaves the model's directory"));
	assert_int_equal(load_external("sub/../../x", NULL, NULL, &err, &m), -EINVAL);
	assert_int_equal(load_external("/etc/passwd", NULL, NULL, &err, &m), -EINVAL);
	assert_non_null(strstr(err.msg, "absolute"));
	snprintf(path, sizeof(path), "%s/link.bin", tmpdir);
	assert_int_equal(symlink("/etc/hostname", path), 0);
	assert_int_equal(load_external("link.bin", NULL, NULL, &err, &m), -EINVAL);
	assert_non_null(strstr(err.msg, "outside"));
	assert_int_equal(load_external("missing.bin", NULL, NULL, &err, &m), -ENOENT);
	assert_int_equal(load_external("sub", NULL, NULL, &err, &m), -EINVAL);
	assert_int_equal(load_external("", NULL, NULL, &err, &m), -EINVAL);

	/* Clean up the temp dir. */
	const char *files[] = { "link.bin", "model.onnx", "w.bin", "sub/w2.bin" };
	for (size_t i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s/%s", tmpdir, files[i]);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/sub", tmpdir);
	rmdir(path);
	rmdir(tmpdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_model),
		cmocka_unit_test(test_add_data),
		cmocka_unit_test(test_initializers_and_attrs),
		cmocka_unit_test(test_if_subgraphs),
		cmocka_unit_test(test_sweep),
		cmocka_unit_test(test_fp16_typed_file),
		cmocka_unit_test(test_typed_fields),
		cmocka_unit_test(test_tensor_errors),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_value_info_and_dims),
		cmocka_unit_test(test_model_errors),
		cmocka_unit_test(test_nesting_depth),
		cmocka_unit_test(test_truncation_and_corruption),
		cmocka_unit_test(test_external_data),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

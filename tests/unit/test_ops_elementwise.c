/* Unit tests of the elementwise operators (exec/cpu/ops/elementwise.c and the
 * op files using it), called through the registry with hand-built nodes:
 * broadcasting against a naive reference, every dtype path, integer
 * division by zero, Clip's versions, float16, layouts and the errors. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "op.h"
#include "ops/vmath.h"

/* ---- calling an operator ------------------------------------------- */

typedef struct call {
	const char *op;
	int64_t opset;
	int n_in;
	mfs_tensor in[4];
	mfs_tensor *inp[4];
	onnx_attr attrs[4];
	int n_attrs;
	mfs_tensor out;
	mfs_error err;
} call;

static call *call_new(const char *op, int64_t opset)
{
	call *c = calloc(1, sizeof(*c));
	assert_non_null(c);
	c->op = op;
	c->opset = opset;
	return c;
}

/* Input k: a tensor of dt and shape dims (rank from the count) holding a
 * copy of data; data NULL = an omitted optional input. */
static void call_in(call *c, mfs_dtype dt, const void *data, int rank, ...)
{
	mfs_tensor *t = &c->in[c->n_in];
	mfs_shape s = { .rank = rank };
	va_list ap;

	if (!data) {
		c->inp[c->n_in++] = NULL;
		return;
	}
	va_start(ap, rank);
	for (int d = 0; d < rank; d++)
		s.dims[d] = va_arg(ap, int);
	va_end(ap);
	assert_int_equal(mfs_tensor_alloc(t, dt, &s, NULL), 0);
	memcpy(t->data, data, t->nbytes);
	c->inp[c->n_in++] = t;
}

static void call_attr_f(call *c, const char *name, float v)
{
	onnx_attr *a = &c->attrs[c->n_attrs++];
	a->name = (char *)name;
	a->type = ONNX_ATTR_FLOAT;
	a->f = v;
}

static void call_attr_i(call *c, const char *name, int64_t v)
{
	onnx_attr *a = &c->attrs[c->n_attrs++];
	a->name = (char *)name;
	a->type = ONNX_ATTR_INT;
	a->i = v;
}

static void call_attr_s(call *c, const char *name, const char *v)
{
	onnx_attr *a = &c->attrs[c->n_attrs++];
	a->name = (char *)name;
	a->type = ONNX_ATTR_STRING;
	a->s = (char *)v;
	a->s_len = strlen(v);
}

/* infer, allocate, run; returns the first failure (0 on success). */
static int call_run(call *c)
{
	char *outs[1] = { (char *)"y" };
	onnx_node node = { .name = (char *)"t", .op_type = (char *)c->op,
			   .domain = (char *)"", .outputs = outs, .n_outputs = 1,
			   .attrs = c->attrs, .n_attrs = c->n_attrs };
	mfs_tensor *outp = &c->out;
	void *state = NULL;
	mfs_op_ctx ctx = { .node = &node, .opset = c->opset, .n_in = c->n_in,
			   .in = c->inp, .n_out = 1, .out = &outp,
			   .state = &state, .err = &c->err };
	int rc;

	ctx.def = mfs_op_find("", c->op, c->opset);
	assert_non_null(ctx.def);
	rc = ctx.def->infer(&ctx);
	if (rc < 0)
		return rc;
	mfs_shape s = c->out.shape;
	mfs_layout layout = c->out.layout;
	assert_int_equal(mfs_tensor_alloc(&c->out, c->out.dtype, &s, NULL), 0);
	c->out.layout = layout;
	return ctx.def->run(&ctx);
}

static void call_free(call *c)
{
	for (int k = 0; k < c->n_in; k++)
		mfs_tensor_release(&c->in[k]);
	mfs_tensor_release(&c->out);
	free(c);
}

/* Run a unary or binary float op and compare with expected values. */
static void check_f32(const char *op, int64_t opset, int n, const float *a,
		      const float *b, const float *want, float tol)
{
	call *c = call_new(op, opset);
	call_in(c, MFS_DT_FLOAT, a, 1, n);
	if (b)
		call_in(c, MFS_DT_FLOAT, b, 1, n);
	assert_int_equal(call_run(c), 0);
	for (int i = 0; i < n; i++) {
		float y = ((float *)c->out.data)[i];
		if (isnan(want[i]))
			assert_true(isnan(y));
		else
			assert_float_equal(y, want[i], tol);
	}
	call_free(c);
}

/* ---- broadcasting against a naive reference ------------------------- */

/* index of out element i (shape o) into an input of shape s */
static int64_t bcast_index(const mfs_shape *o, const mfs_shape *s, int64_t i)
{
	int64_t idx = 0, mul = 1;
	for (int d = o->rank - 1; d >= 0; d--) {
		int64_t c = i % o->dims[d];
		int sd = d - (o->rank - s->rank);
		i /= o->dims[d];
		if (sd >= 0) {
			if (s->dims[sd] != 1)
				idx += c * mul;
			mul *= s->dims[sd];
		}
	}
	return idx;
}

static void check_bcast(const mfs_shape *sa, const mfs_shape *sb)
{
	call *c = call_new("Sub", 14);
	mfs_tensor *a = &c->in[0], *b = &c->in[1];

	assert_int_equal(mfs_tensor_alloc(a, MFS_DT_FLOAT, sa, NULL), 0);
	assert_int_equal(mfs_tensor_alloc(b, MFS_DT_FLOAT, sb, NULL), 0);
	for (int64_t i = 0; i < mfs_shape_numel(sa); i++)
		((float *)a->data)[i] = (float)(i % 1000) * 0.5f;
	for (int64_t i = 0; i < mfs_shape_numel(sb); i++)
		((float *)b->data)[i] = (float)(i % 777) * 0.25f + 1;
	c->inp[0] = a;
	c->inp[1] = b;
	c->n_in = 2;
	assert_int_equal(call_run(c), 0);
	for (int64_t i = 0; i < mfs_shape_numel(&c->out.shape); i++) {
		float x = ((float *)a->data)[bcast_index(&c->out.shape, sa, i)];
		float y = ((float *)b->data)[bcast_index(&c->out.shape, sb, i)];
		assert_true(((float *)c->out.data)[i] == x - y);
	}
	call_free(c);
}

static void test_broadcast(void **st)
{
	(void)st;
	static const mfs_shape cases[][2] = {
		{ { 2, { 3, 4 } }, { 2, { 3, 4 } } },          /* same shape */
		{ { 2, { 3, 4 } }, { 0, { 0 } } },             /* scalar */
		{ { 0, { 0 } }, { 3, { 2, 3, 4 } } },          /* scalar first */
		{ { 2, { 5, 6 } }, { 1, { 6 } } },             /* row */
		{ { 4, { 2, 3, 4, 5 } }, { 3, { 3, 1, 1 } } }, /* per channel */
		{ { 3, { 2, 1, 4 } }, { 3, { 1, 3, 1 } } },    /* both sides */
		{ { 4, { 2, 3, 1, 5 } }, { 2, { 4, 1 } } },    /* general */
		{ { 2, { 7, 1 } }, { 2, { 1, 9 } } },          /* outer product */
		{ { 4, { 8, 16, 32, 33 } }, { 3, { 16, 1, 1 } } }, /* threads */
		{ { 3, { 64, 32, 33 } }, { 3, { 64, 1, 33 } } },   /* threads */
		{ { 1, { 0 } }, { 1, { 1 } } },                /* empty */
		/* short repeated rows (tiled), thread chunks ending mid-row */
		{ { 2, { 3001, 13 } }, { 1, { 13 } } },
		{ { 3, { 7, 900, 5 } }, { 3, { 7, 1, 5 } } },
		{ { 3, { 7, 900, 5 } }, { 3, { 1, 900, 5 } } },
		{ { 2, { 5, 3 } }, { 2, { 5, 3 } } },
		{ { 1, { 9 } }, { 2, { 4, 1 } } },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_bcast(&cases[i][0], &cases[i][1]);
}

/* float16 runs through the float kernels in stack blocks: rows longer
 * than a block, a broadcast row and a scalar. */
static void test_half_blocks(void **st)
{
	(void)st;
	enum { R = 3, C = 700 };
	uint16_t a[R * C], b[C], one = mfs_float_to_half(0.5f);

	for (int i = 0; i < R * C; i++)
		a[i] = mfs_float_to_half((float)(i % 97) - 40);
	for (int i = 0; i < C; i++)
		b[i] = mfs_float_to_half((float)(i % 13) * 0.25f);
	for (int k = 0; k < 2; k++) {
		call *c = call_new("Mul", 14);
		call_in(c, MFS_DT_FLOAT16, a, 2, R, C);
		if (k)
			call_in(c, MFS_DT_FLOAT16, &one, 0);
		else
			call_in(c, MFS_DT_FLOAT16, b, 1, C);
		assert_int_equal(call_run(c), 0);
		for (int i = 0; i < R * C; i++) {
			float want = mfs_half_to_float(a[i]) *
				     mfs_half_to_float(k ? one : b[i % C]);
			uint16_t got = ((uint16_t *)c->out.data)[i];
			assert_int_equal(got, mfs_float_to_half(want));
		}
		call_free(c);
	}
	/* every float16 and bfloat16 bit pattern survives the conversions
	 * (Max(x, x) = x; NaN stays NaN) */
	static uint16_t all[65536];
	for (int i = 0; i < 65536; i++)
		all[i] = (uint16_t)i;
	for (int t = 0; t < 2; t++) {
		mfs_dtype dt = t ? MFS_DT_BFLOAT16 : MFS_DT_FLOAT16;
		call *c = call_new("Max", 13);
		call_in(c, dt, all, 1, 65536);
		call_in(c, dt, all, 1, 65536);
		assert_int_equal(call_run(c), 0);
		for (int i = 0; i < 65536; i++) {
			uint16_t got = ((uint16_t *)c->out.data)[i];
			float w = t ? mfs_bf16_to_float(all[i]) : mfs_half_to_float(all[i]);
			float g = t ? mfs_bf16_to_float(got) : mfs_half_to_float(got);
			if (isnan(w))
				assert_true(isnan(g));
			else
				assert_int_equal(got, all[i]);
		}
		call_free(c);
	}

	call *c = call_new("Less", 13);     /* half in, bool out */
	call_in(c, MFS_DT_FLOAT16, a, 2, R, C);
	call_in(c, MFS_DT_FLOAT16, b, 1, C);
	assert_int_equal(call_run(c), 0);
	for (int i = 0; i < R * C; i++)
		assert_int_equal(((uint8_t *)c->out.data)[i],
				 mfs_half_to_float(a[i]) < mfs_half_to_float(b[i % C]));
	call_free(c);
}

/* Where over random three-way broadcasts (ranks up to 6, dims that are
 * the output's or 1, sizes up to 4^6 elements) against the naive index
 * map: every collapse/merge path of the driver. */
static uint32_t lcg(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s >> 8;
}

static void test_broadcast_random(void **st)
{
	(void)st;
	uint32_t seed = 12345;
	for (int iter = 0; iter < 400; iter++) {
		mfs_shape o = { .rank = 1 + (int)(lcg(&seed) % 6) }, sh[3];
		call *c = call_new("Where", 16);
		for (int d = 0; d < o.rank; d++)
			o.dims[d] = 1 + lcg(&seed) % 4;
		for (int k = 0; k < 3; k++) {
			sh[k].rank = (int)(lcg(&seed) % (o.rank + 1));
			for (int d = 0; d < sh[k].rank; d++)
				sh[k].dims[d] = lcg(&seed) % 3 == 0 ? 1
						: o.dims[o.rank - sh[k].rank + d];
			assert_int_equal(mfs_tensor_alloc(&c->in[k], k ? MFS_DT_FLOAT : MFS_DT_BOOL,
							  &sh[k], NULL), 0);
			for (int64_t i = 0; i < mfs_shape_numel(&sh[k]); i++) {
				if (k)
					((float *)c->in[k].data)[i] = (float)(k * 1000 + i);
				else
					((uint8_t *)c->in[k].data)[i] = lcg(&seed) & 1;
			}
			c->inp[k] = &c->in[k];
		}
		c->n_in = 3;
		assert_int_equal(call_run(c), 0);
		for (int64_t i = 0; i < mfs_shape_numel(&c->out.shape); i++) {
			uint8_t cond = ((uint8_t *)c->in[0].data)[bcast_index(&c->out.shape, &sh[0], i)];
			int k = cond ? 1 : 2;
			float want = ((float *)c->in[k].data)[bcast_index(&c->out.shape, &sh[k], i)];
			assert_true(((float *)c->out.data)[i] == want);
		}
		call_free(c);
	}
}

static void test_broadcast_errors(void **st)
{
	(void)st;
	float a[6] = { 0 }, b[4] = { 0 };
	int64_t i[2] = { 0 };
	call *c = call_new("Add", 14);
	call_in(c, MFS_DT_FLOAT, a, 2, 2, 3);
	call_in(c, MFS_DT_FLOAT, b, 1, 4);
	assert_int_equal(call_run(c), -EINVAL);
	assert_non_null(strstr(c->err.msg, "broadcast"));
	call_free(c);

	c = call_new("Mul", 14);    /* mismatched types */
	call_in(c, MFS_DT_FLOAT, a, 1, 2);
	call_in(c, MFS_DT_INT64, i, 1, 2);
	assert_int_equal(call_run(c), -EINVAL);
	assert_non_null(strstr(c->err.msg, "differ"));
	call_free(c);

	c = call_new("Add", 14);    /* bool is not arithmetic */
	call_in(c, MFS_DT_BOOL, "\1\0", 1, 2);
	call_in(c, MFS_DT_BOOL, "\1\1", 1, 2);
	assert_int_equal(call_run(c), -ENOTSUP);
	call_free(c);

	c = call_new("Add", 14);    /* one input only */
	call_in(c, MFS_DT_FLOAT, a, 1, 2);
	assert_int_not_equal(call_run(c), 0);
	call_free(c);
}

/* Legacy (opset < 7) broadcast=1 with axis: B [3] against A [2,3,2]. */
static void test_legacy_broadcast(void **st)
{
	(void)st;
	float a[12] = { 0 }, b[3] = { 1, 2, 3 };
	call *c = call_new("Add", 6);
	call_in(c, MFS_DT_FLOAT, a, 3, 2, 3, 2);
	call_in(c, MFS_DT_FLOAT, b, 1, 3);
	call_attr_i(c, "broadcast", 1);
	call_attr_i(c, "axis", 1);
	assert_int_equal(call_run(c), 0);
	for (int i = 0; i < 12; i++)
		assert_true(((float *)c->out.data)[i] == b[(i / 2) % 3]);
	call_free(c);
}

/* ---- dtypes ---------------------------------------------------------- */

/* Add, Sub, Mul, Div, Max, Min of {6,7,8,9} and {1,2,3,4} in every
 * numeric type (float16 and bfloat16 through float). */
static void fill(mfs_tensor *x, int i, double v)
{
	switch (x->dtype) {
	case MFS_DT_FLOAT: ((float *)x->data)[i] = (float)v; break;
	case MFS_DT_DOUBLE: ((double *)x->data)[i] = v; break;
	case MFS_DT_FLOAT16: ((uint16_t *)x->data)[i] = mfs_float_to_half((float)v); break;
	case MFS_DT_BFLOAT16: ((uint16_t *)x->data)[i] = mfs_float_to_bf16((float)v); break;
	default: {
		int64_t iv = (int64_t)v;   /* little-endian: low bytes first */
		memcpy((char *)x->data + i * mfs_dtype_size(x->dtype), &iv,
		       mfs_dtype_size(x->dtype));
	}
	}
}

static void test_all_dtypes(void **st)
{
	(void)st;
	static const mfs_dtype dts[] = {
		MFS_DT_FLOAT, MFS_DT_DOUBLE, MFS_DT_INT8, MFS_DT_INT16,
		MFS_DT_INT32, MFS_DT_INT64, MFS_DT_UINT8, MFS_DT_UINT16,
		MFS_DT_UINT32, MFS_DT_UINT64, MFS_DT_FLOAT16, MFS_DT_BFLOAT16,
	};
	static const char *ops[] = { "Add", "Sub", "Mul", "Div", "Max", "Min" };
	mfs_shape s = { 1, { 4 } };

	for (size_t t = 0; t < sizeof(dts) / sizeof(dts[0]); t++) {
		bool is_int = dts[t] != MFS_DT_FLOAT && dts[t] != MFS_DT_DOUBLE &&
			      dts[t] != MFS_DT_FLOAT16 && dts[t] != MFS_DT_BFLOAT16;
		for (int op = 0; op < 6; op++) {
			call *c = call_new(ops[op], 13);
			for (int k = 0; k < 2; k++) {
				assert_int_equal(mfs_tensor_alloc(&c->in[k], dts[t], &s, NULL), 0);
				for (int i = 0; i < 4; i++)
					fill(&c->in[k], i, k ? i + 1 : i + 6);
				c->inp[k] = &c->in[k];
			}
			c->n_in = 2;
			assert_int_equal(call_run(c), 0);
			assert_int_equal(c->out.dtype, dts[t]);
			for (int i = 0; i < 4; i++) {
				double x = i + 6, y = i + 1;
				double want[6] = { x + y, x - y, x * y, x / y, x, y };
				double w = is_int ? trunc(want[op]) : want[op];
				assert_float_equal(mfs_tensor_get_f64(&c->out, i), w,
						   fabs(w) * 1e-2);
			}
			call_free(c);
		}
	}
}

/* Integer division and modulo by zero: defined as 0, never SIGFPE; the
 * most negative value divided by -1 wraps. */
static void test_int_div_zero(void **st)
{
	(void)st;
	int32_t a[5] = { 7, -7, 5, INT32_MIN, -7 }, b[5] = { 0, 2, 0, -1, -2 };
	int32_t q[5] = { 0, -3, 0, INT32_MIN, 3 };
	int64_t a64[3] = { INT64_MIN, 9, -9 }, b64[3] = { -1, 0, 4 }, q64[3] = { INT64_MIN, 0, -2 };
	uint8_t ua[2] = { 200, 9 }, ub[2] = { 0, 4 }, uq[2] = { 0, 2 };
	call *c = call_new("Div", 14);

	call_in(c, MFS_DT_INT32, a, 1, 5);
	call_in(c, MFS_DT_INT32, b, 1, 5);
	assert_int_equal(call_run(c), 0);
	assert_memory_equal(c->out.data, q, sizeof(q));
	call_free(c);

	c = call_new("Div", 14);
	call_in(c, MFS_DT_INT64, a64, 1, 3);
	call_in(c, MFS_DT_INT64, b64, 1, 3);
	assert_int_equal(call_run(c), 0);
	assert_memory_equal(c->out.data, q64, sizeof(q64));
	call_free(c);

	c = call_new("Div", 14);
	call_in(c, MFS_DT_UINT8, ua, 1, 2);
	call_in(c, MFS_DT_UINT8, ub, 1, 2);
	assert_int_equal(call_run(c), 0);
	assert_memory_equal(c->out.data, uq, sizeof(uq));
	call_free(c);

	/* Mod: fmod=0 takes the divisor's sign, fmod=1 the dividend's; % 0 = 0 */
	int32_t m0[5] = { 0, 1, 0, 0, -1 }, m1[5] = { 0, -1, 0, 0, -1 };
	for (int f = 0; f < 2; f++) {
		c = call_new("Mod", 13);
		call_in(c, MFS_DT_INT32, a, 1, 5);
		call_in(c, MFS_DT_INT32, b, 1, 5);
		call_attr_i(c, "fmod", f);
		assert_int_equal(call_run(c), 0);
		assert_memory_equal(c->out.data, f ? m1 : m0, sizeof(m0));
		call_free(c);
	}
	float fa[3] = { -4.3f, 7.2f, 5.0f }, fb[3] = { 2.1f, -3.4f, 0 };
	float fm1[3] = { fmodf(-4.3f, 2.1f), fmodf(7.2f, -3.4f), NAN };
	float fm0[3] = { fmodf(-4.3f, 2.1f) + 2.1f, fmodf(7.2f, -3.4f) - 3.4f, NAN };
	c = call_new("Mod", 13);
	call_in(c, MFS_DT_FLOAT, fa, 1, 3);
	call_in(c, MFS_DT_FLOAT, fb, 1, 3);
	call_attr_i(c, "fmod", 1);
	assert_int_equal(call_run(c), 0);
	for (int i = 0; i < 2; i++)
		assert_float_equal(((float *)c->out.data)[i], fm1[i], 1e-5);
	assert_true(isnan(((float *)c->out.data)[2]));
	call_free(c);
	c = call_new("Mod", 13);
	call_in(c, MFS_DT_FLOAT, fa, 1, 3);
	call_in(c, MFS_DT_FLOAT, fb, 1, 3);
	assert_int_equal(call_run(c), 0);
	for (int i = 0; i < 2; i++)
		assert_float_equal(((float *)c->out.data)[i], fm0[i], 1e-5);
	call_free(c);
}

static void test_compare_logical(void **st)
{
	(void)st;
	float a[4] = { 1, 2, NAN, 4 }, b[1] = { 2 };
	static const struct { const char *op; uint8_t want[4]; } cases[] = {
		{ "Equal", { 0, 1, 0, 0 } }, { "Less", { 1, 0, 0, 0 } },
		{ "LessOrEqual", { 1, 1, 0, 0 } }, { "Greater", { 0, 0, 0, 1 } },
		{ "GreaterOrEqual", { 0, 1, 0, 1 } },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		call *c = call_new(cases[i].op, 16);
		call_in(c, MFS_DT_FLOAT, a, 1, 4);
		call_in(c, MFS_DT_FLOAT, b, 0);
		assert_int_equal(call_run(c), 0);
		assert_int_equal(c->out.dtype, MFS_DT_BOOL);
		assert_memory_equal(c->out.data, cases[i].want, 4);
		call_free(c);
	}
	uint8_t p[4] = { 0, 0, 1, 1 }, q[4] = { 0, 1, 0, 1 };
	static const struct { const char *op; uint8_t want[4]; } lg[] = {
		{ "And", { 0, 0, 0, 1 } }, { "Or", { 0, 1, 1, 1 } },
		{ "Xor", { 0, 1, 1, 0 } }, { "Equal", { 1, 0, 0, 1 } },
	};
	for (size_t i = 0; i < sizeof(lg) / sizeof(lg[0]); i++) {
		call *c = call_new(lg[i].op, 13);
		call_in(c, MFS_DT_BOOL, p, 1, 4);
		call_in(c, MFS_DT_BOOL, q, 1, 4);
		assert_int_equal(call_run(c), 0);
		assert_memory_equal(c->out.data, lg[i].want, 4);
		call_free(c);
	}
	call *c = call_new("Not", 1);
	call_in(c, MFS_DT_BOOL, p, 1, 4);
	assert_int_equal(call_run(c), 0);
	assert_memory_equal(c->out.data, ((uint8_t[4]){ 1, 1, 0, 0 }), 4);
	call_free(c);

	c = call_new("And", 7);     /* And is for bool only */
	call_in(c, MFS_DT_FLOAT, a, 1, 4);
	call_in(c, MFS_DT_FLOAT, a, 1, 4);
	assert_int_equal(call_run(c), -ENOTSUP);
	call_free(c);
}

static void test_bitwise(void **st)
{
	(void)st;
	uint8_t x[4] = { 1, 2, 255, 7 }, s[4] = { 1, 7, 1, 9 };
	uint8_t l[4] = { 2, 0, 254, 0 }, r[4] = { 0, 0, 127, 0 };
	for (int d = 0; d < 2; d++) {
		call *c = call_new("BitShift", 11);
		call_in(c, MFS_DT_UINT8, x, 1, 4);
		call_in(c, MFS_DT_UINT8, s, 1, 4);
		call_attr_s(c, "direction", d ? "RIGHT" : "LEFT");
		assert_int_equal(call_run(c), 0);
		assert_memory_equal(c->out.data, d ? r : l, 4);
		call_free(c);
	}
	call *c = call_new("BitShift", 11);
	call_in(c, MFS_DT_UINT8, x, 1, 4);
	call_in(c, MFS_DT_UINT8, s, 1, 4);
	call_attr_s(c, "direction", "UP");
	assert_int_equal(call_run(c), -EINVAL);
	call_free(c);

	int16_t a[3] = { 12, -1, 5 }, b[3] = { 10, 3, -6 };
	static const struct { const char *op; int16_t want[3]; } cases[] = {
		{ "BitwiseAnd", { 8, 3, 0 } }, { "BitwiseOr", { 14, -1, -1 } },
		{ "BitwiseXor", { 6, -4, -1 } },
	};
	for (size_t i = 0; i < 3; i++) {
		c = call_new(cases[i].op, 18);
		call_in(c, MFS_DT_INT16, a, 1, 3);
		call_in(c, MFS_DT_INT16, b, 1, 3);
		assert_int_equal(call_run(c), 0);
		assert_memory_equal(c->out.data, cases[i].want, sizeof(a));
		call_free(c);
	}
	c = call_new("BitwiseNot", 18);
	call_in(c, MFS_DT_INT16, a, 1, 3);
	assert_int_equal(call_run(c), 0);
	assert_memory_equal(c->out.data, ((int16_t[3]){ -13, 0, -6 }), sizeof(a));
	call_free(c);
}

static void test_variadic(void **st)
{
	(void)st;
	float a[6] = { 1, 2, 3, 4, 5, 6 }, b[3] = { 10, 20, 30 }, d[1] = { 100 };
	call *c = call_new("Sum", 13);
	call_in(c, MFS_DT_FLOAT, a, 2, 2, 3);
	call_in(c, MFS_DT_FLOAT, b, 1, 3);
	call_in(c, MFS_DT_FLOAT, d, 0);
	assert_int_equal(call_run(c), 0);
	for (int i = 0; i < 6; i++)
		assert_true(((float *)c->out.data)[i] == a[i] + b[i % 3] + 100);
	call_free(c);

	c = call_new("Mean", 13);   /* output shape from a later input */
	call_in(c, MFS_DT_FLOAT, d, 0);
	call_in(c, MFS_DT_FLOAT, b, 1, 3);
	call_in(c, MFS_DT_FLOAT, a, 2, 2, 3);
	assert_int_equal(call_run(c), 0);
	assert_int_equal(c->out.shape.rank, 2);
	for (int i = 0; i < 6; i++)
		assert_float_equal(((float *)c->out.data)[i], (a[i] + b[i % 3] + 100) / 3, 1e-5);
	call_free(c);

	float n[3] = { 1, NAN, 3 }, m[3] = { 2, 2, NAN };
	c = call_new("Max", 13);    /* NaN propagates either side */
	call_in(c, MFS_DT_FLOAT, n, 1, 3);
	call_in(c, MFS_DT_FLOAT, m, 1, 3);
	assert_int_equal(call_run(c), 0);
	assert_true(((float *)c->out.data)[0] == 2);
	assert_true(isnan(((float *)c->out.data)[1]) && isnan(((float *)c->out.data)[2]));
	call_free(c);

	c = call_new("Min", 13);    /* one input: a copy */
	call_in(c, MFS_DT_FLOAT, a, 1, 6);
	assert_int_equal(call_run(c), 0);
	assert_memory_equal(c->out.data, a, sizeof(a));
	call_free(c);

	uint16_t h[2] = { mfs_float_to_half(1.5f), mfs_float_to_half(-2) };
	c = call_new("Sum", 13);    /* float16 through float */
	call_in(c, MFS_DT_FLOAT16, h, 1, 2);
	call_in(c, MFS_DT_FLOAT16, h, 1, 2);
	call_in(c, MFS_DT_FLOAT16, h, 0);
	assert_int_equal(call_run(c), 0);
	assert_float_equal(mfs_half_to_float(((uint16_t *)c->out.data)[0]), 4.5, 1e-3);
	assert_float_equal(mfs_half_to_float(((uint16_t *)c->out.data)[1]), -2.5, 1e-3);
	call_free(c);
}

static void test_where_prelu(void **st)
{
	(void)st;
	uint8_t cond[2] = { 1, 0 };
	int64_t x[3] = { 1, 2, 3 }, y[1] = { -9 };
	call *c = call_new("Where", 16);
	call_in(c, MFS_DT_BOOL, cond, 2, 2, 1);
	call_in(c, MFS_DT_INT64, x, 1, 3);
	call_in(c, MFS_DT_INT64, y, 0);
	assert_int_equal(call_run(c), 0);
	assert_int_equal(c->out.shape.rank, 2);
	assert_memory_equal(c->out.data, ((int64_t[6]){ 1, 2, 3, -9, -9, -9 }), 48);
	call_free(c);

	/* the step patterns with loops of their own: all full, Y or X scalar */
	uint8_t m[4] = { 1, 0, 0, 1 };
	float fx[4] = { 1, 2, 3, 4 }, fy[4] = { -1, -2, -3, -4 }, s0 = 9;
	float w_full[4] = { 1, -2, -3, 4 }, w_ys[4] = { 1, 9, 9, 4 }, w_xs[4] = { 9, -2, -3, 9 };
	for (int k = 0; k < 3; k++) {
		c = call_new("Where", 16);
		call_in(c, MFS_DT_BOOL, m, 1, 4);
		if (k == 2)
			call_in(c, MFS_DT_FLOAT, &s0, 0);
		else
			call_in(c, MFS_DT_FLOAT, fx, 1, 4);
		if (k == 1)
			call_in(c, MFS_DT_FLOAT, &s0, 0);
		else
			call_in(c, MFS_DT_FLOAT, fy, 1, 4);
		assert_int_equal(call_run(c), 0);
		assert_memory_equal(c->out.data, k == 0 ? w_full : k == 1 ? w_ys : w_xs, 16);
		call_free(c);
	}

	c = call_new("Where", 16);  /* condition must be bool */
	call_in(c, MFS_DT_INT64, x, 1, 3);
	call_in(c, MFS_DT_INT64, x, 1, 3);
	call_in(c, MFS_DT_INT64, x, 1, 3);
	assert_int_equal(call_run(c), -EINVAL);
	call_free(c);

	/* PRelu opset 6: a 1-D slope applies per channel (dim 1) */
	float px[8] = { -1, 1, -1, 1, -2, 2, -2, 2 }, slope[2] = { 0.5f, 0.25f };
	c = call_new("PRelu", 6);
	call_in(c, MFS_DT_FLOAT, px, 3, 1, 2, 4);
	call_in(c, MFS_DT_FLOAT, slope, 1, 2);
	assert_int_equal(call_run(c), 0);
	assert_memory_equal(c->out.data,
			    ((float[8]){ -0.5f, 1, -0.5f, 1, -0.5f, 2, -0.5f, 2 }), 32);
	call_free(c);

	c = call_new("PRelu", 16);  /* numpy rules: [2] does not fit [1,2,4] */
	call_in(c, MFS_DT_FLOAT, px, 3, 1, 2, 4);
	call_in(c, MFS_DT_FLOAT, slope, 1, 2);
	assert_int_equal(call_run(c), -EINVAL);
	call_free(c);
}

static void test_pow(void **st)
{
	(void)st;
	int32_t b[3] = { 1, 2, 3 };
	float e[3] = { 4, 5, 0.5f };
	int64_t ie[3] = { 3, -1, 2 };
	call *c = call_new("Pow", 15);
	call_in(c, MFS_DT_INT32, b, 1, 3);
	call_in(c, MFS_DT_FLOAT, e, 1, 3);
	assert_int_equal(call_run(c), 0);
	assert_int_equal(c->out.dtype, MFS_DT_INT32);
	assert_memory_equal(c->out.data, ((int32_t[3]){ 1, 32, 1 }), 12);
	call_free(c);

	c = call_new("Pow", 15);
	call_in(c, MFS_DT_INT32, b, 1, 3);
	call_in(c, MFS_DT_INT64, ie, 1, 3);
	assert_int_equal(call_run(c), 0);
	assert_memory_equal(c->out.data, ((int32_t[3]){ 1, 0, 9 }), 12);
	call_free(c);

	float fb[3] = { 2, -2, 9 };
	c = call_new("Pow", 15);
	call_in(c, MFS_DT_FLOAT, fb, 1, 3);
	call_in(c, MFS_DT_INT64, ie, 1, 3);
	assert_int_equal(call_run(c), 0);
	assert_memory_equal(c->out.data, ((float[3]){ 8, -0.5f, 81 }), 12);
	call_free(c);

	check_f32("Pow", 15, 3, fb, e, (float[3]){ 16, -32, 3 }, 1e-5f);

	/* a scalar exponent 2 squares (any exponent type); the output takes
	 * the broadcast shape */
	int64_t two = 2;
	c = call_new("Pow", 15);
	call_in(c, MFS_DT_FLOAT, fb, 1, 3);
	call_in(c, MFS_DT_INT64, &two, 2, 1, 1);
	assert_int_equal(call_run(c), 0);
	assert_int_equal(c->out.shape.rank, 2);
	assert_memory_equal(c->out.data, ((float[3]){ 4, 4, 81 }), 12);
	call_free(c);
}

static void test_clip(void **st)
{
	(void)st;
	float x[5] = { -3, -1, 0, 2, NAN }, lo = -1.5f, hi = 1;
	call *c = call_new("Clip", 6);     /* attributes */
	call_in(c, MFS_DT_FLOAT, x, 1, 5);
	call_attr_f(c, "min", -1.5f);
	call_attr_f(c, "max", 1);
	assert_int_equal(call_run(c), 0);
	assert_memory_equal(c->out.data, ((float[4]){ -1.5f, -1, 0, 1 }), 16);
	assert_true(isnan(((float *)c->out.data)[4]));
	call_free(c);

	c = call_new("Clip", 11);          /* min only; max omitted */
	call_in(c, MFS_DT_FLOAT, x, 1, 4);
	call_in(c, MFS_DT_FLOAT, &lo, 0);
	assert_int_equal(call_run(c), 0);
	assert_memory_equal(c->out.data, ((float[4]){ -1.5f, -1, 0, 2 }), 16);
	call_free(c);

	c = call_new("Clip", 11);          /* max only (min given as "") */
	call_in(c, MFS_DT_FLOAT, x, 1, 4);
	call_in(c, MFS_DT_FLOAT, NULL, 0);
	call_in(c, MFS_DT_FLOAT, &hi, 0);
	assert_int_equal(call_run(c), 0);
	assert_memory_equal(c->out.data, ((float[4]){ -3, -1, 0, 1 }), 16);
	call_free(c);

	c = call_new("Clip", 13);          /* no bounds: a copy */
	call_in(c, MFS_DT_FLOAT, x, 1, 4);
	assert_int_equal(call_run(c), 0);
	assert_memory_equal(c->out.data, x, 16);
	call_free(c);

	int32_t ix[4] = { -5, 0, 5, 10 }, ilo = 7, ihi = 3;
	c = call_new("Clip", 13);          /* ints; min > max gives max */
	call_in(c, MFS_DT_INT32, ix, 1, 4);
	call_in(c, MFS_DT_INT32, &ilo, 0);
	call_in(c, MFS_DT_INT32, &ihi, 0);
	assert_int_equal(call_run(c), 0);
	assert_memory_equal(c->out.data, ((int32_t[4]){ 3, 3, 3, 3 }), 16);
	call_free(c);

	c = call_new("Clip", 11);          /* opset 11: float only */
	call_in(c, MFS_DT_INT32, ix, 1, 4);
	assert_int_equal(call_run(c), -ENOTSUP);
	call_free(c);

	c = call_new("Clip", 13);          /* bound type must match */
	call_in(c, MFS_DT_FLOAT, x, 1, 4);
	call_in(c, MFS_DT_INT32, &ilo, 0);
	assert_int_equal(call_run(c), -EINVAL);
	call_free(c);

	c = call_new("Clip", 6);           /* float16 with attributes */
	uint16_t hx[2] = { mfs_float_to_half(-4), mfs_float_to_half(0.25f) };
	call_in(c, MFS_DT_FLOAT16, hx, 1, 2);
	call_attr_f(c, "min", -1);
	assert_int_equal(call_run(c), 0);
	assert_float_equal(mfs_half_to_float(((uint16_t *)c->out.data)[0]), -1, 0);
	assert_float_equal(mfs_half_to_float(((uint16_t *)c->out.data)[1]), 0.25, 0);
	call_free(c);
}

static void test_unary_values(void **st)
{
	(void)st;
	float x[5] = { -2, -0.5f, 0, 0.5f, 2.5f };
	float sig[5], gelu[5], rnd[5] = { -2, -0, 0, 0, 2 };
	for (int i = 0; i < 5; i++) {
		sig[i] = 1 / (1 + expf(-x[i]));
		gelu[i] = 0.5f * x[i] * (1 + erff(x[i] / sqrtf(2)));
	}
	check_f32("Sigmoid", 13, 5, x, NULL, sig, 1e-6f);
	check_f32("Gelu", 20, 5, x, NULL, gelu, 1e-6f);
	check_f32("Round", 11, 5, x, NULL, rnd, 0);
	check_f32("Relu", 14, 5, x, NULL, (float[5]){ 0, 0, 0, 0.5f, 2.5f }, 0);
	check_f32("Sign", 13, 5, x, NULL, (float[5]){ -1, -1, 0, 1, 1 }, 0);
	check_f32("HardSwish", 14, 5, x, NULL,
		  (float[5]){ -2 * (0.5f - 2 / 6.0f), -0.5f * (0.5f - 1 / 12.0f), 0,
			      0.5f * (0.5f + 1 / 12.0f), 2.5f * (0.5f + 2.5f / 6) }, 1e-6f);
	check_f32("Softplus", 1, 5, x, NULL,
		  (float[5]){ log1pf(expf(-2)), log1pf(expf(-0.5f)), logf(2),
			      log1pf(expf(0.5f)), log1pf(expf(2.5f)) }, 1e-6f);
	check_f32("Abs", 13, 5, x, NULL, (float[5]){ 2, 0.5f, 0, 0.5f, 2.5f }, 0);
	check_f32("Reciprocal", 13, 2, (float[2]){ 4, 0 }, NULL, (float[2]){ 0.25f, INFINITY }, 0);
	check_f32("Sqrt", 13, 2, (float[2]){ 4, -1 }, NULL, (float[2]){ 2, NAN }, 0);

	call *c = call_new("LeakyRelu", 16);
	call_in(c, MFS_DT_DOUBLE, (double[2]){ -2, 3 }, 1, 2);
	call_attr_f(c, "alpha", 0.5f);
	assert_int_equal(call_run(c), 0);
	assert_memory_equal(c->out.data, ((double[2]){ -1, 3 }), 16);
	call_free(c);

	c = call_new("Gelu", 20);
	call_in(c, MFS_DT_FLOAT, x, 1, 5);
	call_attr_s(c, "approximate", "tanh");
	assert_int_equal(call_run(c), 0);
	for (int i = 0; i < 5; i++) {
		float v = x[i], t = 0.5f * v * (1 + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
		assert_float_equal(((float *)c->out.data)[i], t, 1e-6);
	}
	call_free(c);

	c = call_new("IsInf", 10);
	call_in(c, MFS_DT_FLOAT, (float[4]){ INFINITY, -INFINITY, NAN, 1 }, 1, 4);
	call_attr_i(c, "detect_positive", 0);
	assert_int_equal(call_run(c), 0);
	assert_memory_equal(c->out.data, ((uint8_t[4]){ 0, 1, 0, 0 }), 4);
	call_free(c);

	c = call_new("Neg", 13);    /* ints wrap, never trap */
	call_in(c, MFS_DT_INT8, (int8_t[3]){ -128, 5, 0 }, 1, 3);
	assert_int_equal(call_run(c), 0);
	assert_memory_equal(c->out.data, ((int8_t[3]){ -128, -5, 0 }), 3);
	call_free(c);

	c = call_new("Exp", 13);    /* ints are refused */
	call_in(c, MFS_DT_INT32, (int32_t[1]){ 1 }, 1, 1);
	assert_int_equal(call_run(c), -ENOTSUP);
	call_free(c);

	c = call_new("Relu", 14);   /* float16 through float */
	call_in(c, MFS_DT_FLOAT16, ((uint16_t[2]){ mfs_float_to_half(-1), mfs_float_to_half(3) }), 1, 2);
	assert_int_equal(call_run(c), 0);
	assert_int_equal(c->out.dtype, MFS_DT_FLOAT16);
	assert_float_equal(mfs_half_to_float(((uint16_t *)c->out.data)[0]), 0, 0);
	assert_float_equal(mfs_half_to_float(((uint16_t *)c->out.data)[1]), 3, 0);
	call_free(c);
}

static void test_cast(void **st)
{
	(void)st;
	float x[6] = { 1.9f, -1.9f, 300, -300, NAN, 0 };
	call *c = call_new("Cast", 13);
	call_in(c, MFS_DT_FLOAT, x, 1, 6);
	call_attr_i(c, "to", MFS_DT_INT8);
	assert_int_equal(call_run(c), 0);
	assert_int_equal(c->out.dtype, MFS_DT_INT8);
	assert_memory_equal(c->out.data, ((int8_t[6]){ 1, -1, 127, -128, 0, 0 }), 6);
	call_free(c);

	c = call_new("Cast", 13);
	call_in(c, MFS_DT_FLOAT, x, 1, 6);
	call_attr_i(c, "to", MFS_DT_BOOL);
	assert_int_equal(call_run(c), 0);
	assert_memory_equal(c->out.data, ((uint8_t[6]){ 1, 1, 1, 1, 1, 0 }), 6);
	call_free(c);

	uint64_t big[2] = { UINT64_MAX, 5 };
	c = call_new("Cast", 13);
	call_in(c, MFS_DT_UINT64, big, 1, 2);
	call_attr_i(c, "to", MFS_DT_DOUBLE);
	assert_int_equal(call_run(c), 0);
	assert_true(((double *)c->out.data)[0] == 18446744073709551615.0);
	assert_true(((double *)c->out.data)[1] == 5);
	call_free(c);

	int64_t wide[2] = { 257, -1 };
	c = call_new("Cast", 13);   /* integers narrow by wrapping */
	call_in(c, MFS_DT_INT64, wide, 1, 2);
	call_attr_i(c, "to", MFS_DT_UINT8);
	assert_int_equal(call_run(c), 0);
	assert_memory_equal(c->out.data, ((uint8_t[2]){ 1, 255 }), 2);
	call_free(c);

	/* float -> float16 -> bfloat16 -> float */
	c = call_new("Cast", 13);
	call_in(c, MFS_DT_FLOAT, (float[2]){ 1.5f, -3.25f }, 1, 2);
	call_attr_i(c, "to", MFS_DT_FLOAT16);
	assert_int_equal(call_run(c), 0);
	call *c2 = call_new("Cast", 13);
	call_in(c2, MFS_DT_FLOAT16, c->out.data, 1, 2);
	call_attr_i(c2, "to", MFS_DT_BFLOAT16);
	assert_int_equal(call_run(c2), 0);
	call *c3 = call_new("CastLike", 15);
	call_in(c3, MFS_DT_BFLOAT16, c2->out.data, 1, 2);
	call_in(c3, MFS_DT_FLOAT, x, 0);
	assert_int_equal(call_run(c3), 0);
	assert_memory_equal(c3->out.data, ((float[2]){ 1.5f, -3.25f }), 8);
	call_free(c);
	call_free(c2);
	call_free(c3);

	/* float -> float16/bfloat16 rounds like mfs_float_to_half/bf16 over
	 * normals, subnormals, ties and overflow */
	enum { NS = 200000 };
	float *sw = malloc(NS * sizeof(float));
	assert_non_null(sw);
	for (int i = 0; i < NS; i++)
		sw[i] = ldexpf(1 + (i % 4096) / 4096.0f, i / 4096 - 26) * (i & 1 ? -1 : 1);
	for (int t = 0; t < 2; t++) {
		c = call_new("Cast", 13);
		c->in[0].dtype = MFS_DT_FLOAT;
		assert_int_equal(mfs_tensor_alloc(&c->in[0], MFS_DT_FLOAT,
						  &(mfs_shape){ 1, { NS } }, NULL), 0);
		memcpy(c->in[0].data, sw, NS * sizeof(float));
		c->inp[0] = &c->in[0];
		c->n_in = 1;
		call_attr_i(c, "to", t ? MFS_DT_BFLOAT16 : MFS_DT_FLOAT16);
		assert_int_equal(call_run(c), 0);
		for (int i = 0; i < NS; i++)
			assert_int_equal(((uint16_t *)c->out.data)[i],
					 t ? mfs_float_to_bf16(sw[i]) : mfs_float_to_half(sw[i]));
		call_free(c);
	}
	free(sw);

	c = call_new("Cast", 13);
	call_in(c, MFS_DT_FLOAT, x, 1, 6);
	call_attr_i(c, "to", 17);   /* FLOAT8E4M3FN */
	assert_int_equal(call_run(c), -ENOTSUP);   /* strings: test_ops_string.c */
	call_free(c);

	c = call_new("Cast", 13);
	call_in(c, MFS_DT_FLOAT, x, 1, 6);
	assert_int_equal(call_run(c), -EINVAL);        /* no 'to' */
	call_free(c);
}

/* NHWC passes through when every input has the output's shape or one
 * element; other mixes are refused. */
static void test_layout(void **st)
{
	(void)st;
	float a[8] = { 0 }, b[2] = { 1, 2 };
	call *c = call_new("Add", 14);
	call_in(c, MFS_DT_FLOAT, a, 4, 1, 2, 2, 2);
	call_in(c, MFS_DT_FLOAT, a, 4, 1, 2, 2, 2);
	c->in[0].layout = c->in[1].layout = MFS_LAYOUT_NHWC;
	assert_int_equal(call_run(c), 0);
	assert_int_equal(c->out.layout, MFS_LAYOUT_NHWC);
	call_free(c);

	c = call_new("Mul", 14);
	call_in(c, MFS_DT_FLOAT, a, 4, 1, 2, 2, 2);
	call_in(c, MFS_DT_FLOAT, b, 0);
	c->in[0].layout = MFS_LAYOUT_NHWC;
	assert_int_equal(call_run(c), 0);
	assert_int_equal(c->out.layout, MFS_LAYOUT_NHWC);
	call_free(c);

	/* a plain per-channel operand broadcasts along NHWC's inner C */
	float v[8] = { 0, 1, 2, 3, 4, 5, 6, 7 }, ch[2] = { 10, 20 };
	c = call_new("Add", 14);
	call_in(c, MFS_DT_FLOAT, v, 4, 1, 2, 2, 2);
	call_in(c, MFS_DT_FLOAT, ch, 3, 2, 1, 1);
	c->in[0].layout = MFS_LAYOUT_NHWC;
	assert_int_equal(call_run(c), 0);
	assert_int_equal(c->out.layout, MFS_LAYOUT_NHWC);
	for (int i = 0; i < 8; i++)
		assert_true(((float *)c->out.data)[i] == v[i] + ch[i % 2]);
	call_free(c);

	/* ... and one constant over channels broadcasts along H and W */
	float hw[4] = { 100, 200, 300, 400 };
	c = call_new("Sub", 14);
	call_in(c, MFS_DT_FLOAT, v, 4, 1, 2, 2, 2);
	call_in(c, MFS_DT_FLOAT, hw, 4, 1, 1, 2, 2);
	c->in[0].layout = MFS_LAYOUT_NHWC;
	assert_int_equal(call_run(c), 0);
	for (int i = 0; i < 8; i++)
		assert_true(((float *)c->out.data)[i] == v[i] - hw[i / 2]);
	call_free(c);

	/* other plain operands would need a transpose: refused */
	c = call_new("Add", 14);
	call_in(c, MFS_DT_FLOAT, a, 4, 1, 2, 2, 2);
	call_in(c, MFS_DT_FLOAT, b, 3, 2, 1, 1);
	c->in[1].shape = (mfs_shape){ 3, { 2, 2, 1 } };
	c->in[0].layout = MFS_LAYOUT_NHWC;
	assert_int_equal(call_run(c), -ENOTSUP);
	call_free(c);

	c = call_new("Add", 14);    /* NHWC needs a rank-4 result */
	call_in(c, MFS_DT_FLOAT, a, 4, 1, 2, 2, 2);
	call_in(c, MFS_DT_FLOAT, b, 5, 1, 1, 1, 1, 2);
	c->in[0].layout = MFS_LAYOUT_NHWC;
	assert_int_equal(call_run(c), -ENOTSUP);
	call_free(c);
}

/* The vectorisable float functions against libm in double. */
static void test_vmath_accuracy(void **st)
{
	(void)st;
	double worst[4] = { 0 };
	for (int i = -2000000; i <= 2000000; i++) {
		float x = (float)i * 1e-5f * (i % 3 == 0 ? 10 : 1);
		double e = exp((double)x), th = tanh((double)x), er = erf((double)x);
		double sg = 1 / (1 + exp(-(double)x));
		if (e > 1e-37 && e < 1e38) {
			double r = fabs(ew_expf(x) - e) / e;
			worst[0] = r > worst[0] ? r : worst[0];
		}
		double rt = fabs(ew_tanhf(x) - th) / (fabs(th) + 1e-30);
		worst[1] = rt > worst[1] ? rt : worst[1];
		double ae = fabs(ew_erff(x) - er);
		worst[2] = ae > worst[2] ? ae : worst[2];
		if (sg > 1e-37) {
			double rs = fabs(ew_sigmoidf(x) - sg) / sg;
			worst[3] = rs > worst[3] ? rs : worst[3];
		}
	}
	print_message("vmath worst: exp %.3g rel, tanh %.3g rel, erf %.3g abs, sigmoid %.3g rel\n",
		      worst[0], worst[1], worst[2], worst[3]);
	assert_true(worst[0] < 2.5e-7);
	assert_true(worst[1] < 1e-6);
	assert_true(worst[2] < 2e-7);
	assert_true(worst[3] < 5e-7);
	assert_true(isnan(ew_expf(NAN)) && isnan(ew_tanhf(NAN)) && isnan(ew_erff(NAN)));
	assert_true(ew_expf(INFINITY) > 1e38f && ew_expf(-INFINITY) == 0);
	/* underflow is 0, never a denormal or FLT_MIN (a masked attention
	 * score, -1e4 below the row's maximum, must not leave denormals for
	 * the product with V: 28x slower on Intel cores) */
	assert_true(ew_expf(-1e4f) == 0 && ew_expf(-100.0f) == 0 && ew_expf(-87.4f) == 0);
	assert_true(ew_expf(-87.3f) >= 1.1754944e-38f);
	assert_true(ew_tanhf(INFINITY) == 1 && ew_tanhf(-INFINITY) == -1);
	assert_true(ew_erff(INFINITY) == 1 && ew_erff(-INFINITY) == -1);
	assert_true(ew_erff(0) == 0 && ew_tanhf(-0.0f) == 0);

	/* log over every binade (denormals included) and around 1 */
	double wl = 0, wsp = 0;
	for (int i = 0; i < 3000000; i++) {
		float x = i < 2000000 ? ldexpf(1 + (i % 1000) / 1000.0f, i / 1000 % 2000 - 1000 + 851)
				      : 1 + (i - 2500000) * 1e-7f;
		if (!(x > 0) || isinf(x))
			continue;
		double ref = log((double)x);
		double err = fabs(ew_logf(x) - ref) / (fabs(ref) > 1e-3 ? fabs(ref) : 1e-3);
		wl = err > wl ? err : wl;
	}
	for (int i = -300000; i <= 300000; i++) {
		float x = i * 1e-4f;
		double ref = log1p(exp((double)x));
		double err = fabs(ew_softplusf(x) - ref) / ref;
		wsp = err > wsp ? err : wsp;
	}
	print_message("vmath worst: log %.3g rel, softplus %.3g rel\n", wl, wsp);
	assert_true(wl < 3e-7);
	assert_true(wsp < 5e-7);
	assert_true(ew_logf(0) == -INFINITY && ew_logf(INFINITY) == INFINITY);
	assert_true(isnan(ew_logf(-1)) && isnan(ew_logf(NAN)) && ew_logf(1) == 0);
	assert_float_equal(ew_logf(1e-45f), log((double)1e-45f), 1e-4);
	assert_float_equal(ew_log1pf(1e-10f), 1e-10, 1e-17);
	assert_true(ew_softplusf(200) == 200 && ew_softplusf(-200) >= 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_broadcast),
		cmocka_unit_test(test_broadcast_random),
		cmocka_unit_test(test_half_blocks),
		cmocka_unit_test(test_broadcast_errors),
		cmocka_unit_test(test_legacy_broadcast),
		cmocka_unit_test(test_all_dtypes),
		cmocka_unit_test(test_int_div_zero),
		cmocka_unit_test(test_compare_logical),
		cmocka_unit_test(test_bitwise),
		cmocka_unit_test(test_variadic),
		cmocka_unit_test(test_where_prelu),
		cmocka_unit_test(test_pow),
		cmocka_unit_test(test_clip),
		cmocka_unit_test(test_unary_values),
		cmocka_unit_test(test_cast),
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_vmath_accuracy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Cast (opset 6; `to` as a dtype number) and CastLike (opset 15; the type
 * of input 1) between every numeric type, bool, float16, bfloat16 and
 * string (cast_string.c).  The float8 types are refused with ENOTSUP.
 *
 * Each block of elements is loaded into a double, int64 or uint64 buffer
 * (exact for every source of that class) and stored from there, so n
 * types need 2n loops, not n*n.  Float to integer saturates at the
 * target's range and maps NaN to 0 (C leaves both undefined); bool is
 * "nonzero"; integers narrow by wrapping, as numpy does.  Casts to and
 * from STRING are cast_string.c's. */
#include <string.h>

#include "elementwise.h"
#include "string_util.h"

#define CAST_BLOCK 256

typedef enum { CLS_F, CLS_S, CLS_U } cast_class;

static cast_class class_of(mfs_dtype dt)
{
	switch (dt) {
	case MFS_DT_FLOAT: case MFS_DT_DOUBLE:
	case MFS_DT_FLOAT16: case MFS_DT_BFLOAT16:
		return CLS_F;
	case MFS_DT_UINT8: case MFS_DT_UINT16:
	case MFS_DT_UINT32: case MFS_DT_UINT64:
		return CLS_U;
	default:
		return CLS_S;   /* signed integers and bool */
	}
}

static bool castable(mfs_dtype dt)
{
	return dt > 0 && dt < EW_NDT && mfs_dtype_size(dt) > 0;
}

#define LOAD(T, EXPR)                                                       \
	for (int64_t j = 0; j < n; j++) {                                   \
		T x = ((const T *)src)[j * step];                           \
		v[j] = (EXPR);                                              \
	}                                                                   \
	break

static void load_f(const char *src, mfs_dtype dt, int64_t step, int64_t n, double *v)
{
	switch (dt) {
	case MFS_DT_FLOAT: LOAD(float, x);
	case MFS_DT_DOUBLE: LOAD(double, x);
	case MFS_DT_FLOAT16: LOAD(uint16_t, mfs_half_to_float(x));
	default: LOAD(uint16_t, mfs_bf16_to_float(x));
	}
}

static void load_s(const char *src, mfs_dtype dt, int64_t step, int64_t n, int64_t *v)
{
	switch (dt) {
	case MFS_DT_INT8: LOAD(int8_t, x);
	case MFS_DT_INT16: LOAD(int16_t, x);
	case MFS_DT_INT32: LOAD(int32_t, x);
	case MFS_DT_INT64: LOAD(int64_t, x);
	default: LOAD(uint8_t, x != 0);      /* bool */
	}
}

static void load_u(const char *src, mfs_dtype dt, int64_t step, int64_t n, uint64_t *v)
{
	switch (dt) {
	case MFS_DT_UINT8: LOAD(uint8_t, x);
	case MFS_DT_UINT16: LOAD(uint16_t, x);
	case MFS_DT_UINT32: LOAD(uint32_t, x);
	default: LOAD(uint64_t, x);
	}
}

static int64_t sat_s(double v, int64_t lo, int64_t hi)
{
	if (v != v)
		return 0;
	if (v <= (double)lo)
		return lo;
	if (v >= (double)hi)
		return hi;
	return (int64_t)v;
}

static uint64_t sat_u(double v, uint64_t hi)
{
	if (v != v || v <= 0)
		return 0;
	if (v >= (double)hi)
		return hi;
	return (uint64_t)v;
}

#define STORE(T, EXPR)                                                      \
	for (int64_t j = 0; j < n; j++) {                                   \
		((T *)dst)[j] = (T)(EXPR);                                  \
	}                                                                   \
	break

/* Stores shared by every class: V is the buffer's element. */
#define STORE_COMMON(V)                                                     \
	case MFS_DT_FLOAT: STORE(float, V);                                 \
	case MFS_DT_DOUBLE: STORE(double, V);                               \
	case MFS_DT_FLOAT16: STORE(uint16_t, mfs_float_to_half((float)(V))); \
	case MFS_DT_BFLOAT16: STORE(uint16_t, mfs_float_to_bf16((float)(V))); \
	case MFS_DT_BOOL: STORE(uint8_t, (V) != 0)

#define STORE_WRAP(V)                                                       \
	case MFS_DT_INT8: STORE(int8_t, V);                                 \
	case MFS_DT_INT16: STORE(int16_t, V);                               \
	case MFS_DT_INT32: STORE(int32_t, V);                               \
	case MFS_DT_INT64: STORE(int64_t, V);                               \
	case MFS_DT_UINT8: STORE(uint8_t, V);                               \
	case MFS_DT_UINT16: STORE(uint16_t, V);                             \
	case MFS_DT_UINT32: STORE(uint32_t, V);                             \
	case MFS_DT_UINT64: STORE(uint64_t, V)

static void store_f(char *dst, mfs_dtype dt, const double *v, int64_t n)
{
	switch (dt) {
	STORE_COMMON(v[j]);
	case MFS_DT_INT8: STORE(int8_t, sat_s(v[j], INT8_MIN, INT8_MAX));
	case MFS_DT_INT16: STORE(int16_t, sat_s(v[j], INT16_MIN, INT16_MAX));
	case MFS_DT_INT32: STORE(int32_t, sat_s(v[j], INT32_MIN, INT32_MAX));
	case MFS_DT_INT64: STORE(int64_t, sat_s(v[j], INT64_MIN, INT64_MAX));
	case MFS_DT_UINT8: STORE(uint8_t, sat_u(v[j], UINT8_MAX));
	case MFS_DT_UINT16: STORE(uint16_t, sat_u(v[j], UINT16_MAX));
	case MFS_DT_UINT32: STORE(uint32_t, sat_u(v[j], UINT32_MAX));
	case MFS_DT_UINT64: STORE(uint64_t, sat_u(v[j], UINT64_MAX));
	default: break;
	}
}

static void store_s(char *dst, mfs_dtype dt, const int64_t *v, int64_t n)
{
	switch (dt) {
	STORE_COMMON(v[j]);
	STORE_WRAP(v[j]);
	default: break;
	}
}

static void store_u(char *dst, mfs_dtype dt, const uint64_t *v, int64_t n)
{
	switch (dt) {
	STORE_COMMON(v[j]);
	STORE_WRAP(v[j]);
	default: break;
	}
}

/* p->dt_a: source type, p->dt_b: target type. */
static void cast_kernel(char *out, const char *const *in, const int64_t *step,
			int64_t n, const ew_params *p)
{
	size_t is = mfs_dtype_size(p->dt_a), os = mfs_dtype_size(p->dt_b);
	union {
		double f[CAST_BLOCK];
		int64_t s[CAST_BLOCK];
		uint64_t u[CAST_BLOCK];
	} buf;

	/* float <-> float16/bfloat16 directly (the common Casts of mixed
	 * precision models) */
	if (step[0] && p->dt_a == MFS_DT_FLOAT && ew_is_half(p->dt_b)) {
		ew_half_store((uint16_t *)out, (const float *)in[0], n, p->dt_b);
		return;
	}
	if (step[0] && ew_is_half(p->dt_a) && p->dt_b == MFS_DT_FLOAT) {
		ew_half_load((float *)out, (const uint16_t *)in[0], n, p->dt_a);
		return;
	}
	for (int64_t j = 0; j < n; j += CAST_BLOCK) {
		int64_t m = n - j < CAST_BLOCK ? n - j : CAST_BLOCK;
		const char *s = in[0] + j * step[0] * (int64_t)is;
		char *d = out + j * (int64_t)os;
		switch (class_of(p->dt_a)) {
		case CLS_F:
			load_f(s, p->dt_a, step[0], m, buf.f);
			store_f(d, p->dt_b, buf.f, m);
			break;
		case CLS_S:
			load_s(s, p->dt_a, step[0], m, buf.s);
			store_s(d, p->dt_b, buf.s, m);
			break;
		case CLS_U:
			load_u(s, p->dt_a, step[0], m, buf.u);
			store_u(d, p->dt_b, buf.u, m);
			break;
		}
	}
}

static int cast_infer_to(mfs_op_ctx *ctx, int64_t to)
{
	const mfs_tensor *x = ctx->n_in >= 1 ? ctx->in[0] : NULL;

	if (!x)
		return mfs_op_fail(ctx, EINVAL, "input is missing");
	if (!castable(x->dtype))
		return mfs_op_fail(ctx, ENOTSUP, "cannot cast from %s",
				   mfs_dtype_onnx_name(x->dtype));
	if (to < 0 || to >= EW_NDT || !castable((mfs_dtype)to))
		return mfs_op_fail(ctx, ENOTSUP, "cannot cast to %s (type %lld)",
				   mfs_dtype_onnx_name((mfs_dtype)to), (long long)to);
	ctx->out[0]->dtype = (mfs_dtype)to;
	ctx->out[0]->shape = x->shape;
	ctx->out[0]->layout = x->layout;
	return 0;
}

static int cast_run_to(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];
	mfs_tensor *y = ctx->out[0];
	ew_params p = { .dt_a = x->dtype, .dt_b = y->dtype };

	if (x->dtype == MFS_DT_STRING || y->dtype == MFS_DT_STRING)
		return cast_string_run(ctx);
	if (x->dtype == y->dtype) {
		if (y->data != x->data && x->nbytes)
			memcpy(y->data, x->data, x->nbytes);
		return 0;
	}
	ew_apply(cast_kernel, &x, 1, y, &p);
	return 0;
}

static int cast_infer(mfs_op_ctx *ctx)
{
	const onnx_attr *to = onnx_node_attr(ctx->node, "to");

	if (!to || to->type != ONNX_ATTR_INT)
		return mfs_op_fail(ctx, EINVAL, "attribute 'to' (an int) is required");
	return cast_infer_to(ctx, to->i);
}

static int castlike_infer(mfs_op_ctx *ctx)
{
	if (ctx->n_in != 2 || !ctx->in[1])
		return mfs_op_fail(ctx, EINVAL, "needs inputs input and target_type");
	return cast_infer_to(ctx, ctx->in[1]->dtype);
}

MFS_OP(Cast, 6, .flags = MFS_OP_NHWC_OK | MFS_OP_STRINGS, .infer = cast_infer, .run = cast_run_to);
MFS_OP(CastLike, 15, .flags = MFS_OP_NHWC_OK | MFS_OP_STRINGS, .infer = castlike_infer, .run = cast_run_to);

/* Pow: base ^ exponent with broadcasting; the output has the base's type.
 * Since opset 12 the exponent may have another numeric type than the base.
 * Same-type float pairs run a vectorisable kernel; every other pair goes
 * through a generic one that loads each operand by dtype: an integer base
 * with an integer exponent is raised exactly (wrapping like C unsigned
 * arithmetic; a negative exponent gives 0 unless the base is 1 or -1), an
 * integer base with a float exponent is computed in double and truncated
 * (saturating at the type's range). */
#include <tgmath.h>

#include "elementwise.h"

EW_T_FLOAT(EW_DEF_BINARY, powf, pow(x, y))
/* x^2 (LayerNorm written out as ops squares a whole activation): x * x is
 * what pow returns, correctly rounded, and it vectorises */
EW_T_FLOAT(EW_DEF_UNARY, square, x * x)

static const ew_table same_tab = { 2, { EW_T_FLOAT(EW_ENTRY, powf) } };
static const ew_table square_tab = { 1, { EW_T_FLOAT(EW_ENTRY, square) } };

static double load_f64(const char *s, mfs_dtype dt)
{
	switch (dt) {
	case MFS_DT_FLOAT: return *(const float *)s;
	case MFS_DT_DOUBLE: return *(const double *)s;
	case MFS_DT_FLOAT16: return mfs_half_to_float(*(const uint16_t *)s);
	case MFS_DT_BFLOAT16: return mfs_bf16_to_float(*(const uint16_t *)s);
	case MFS_DT_INT8: return *(const int8_t *)s;
	case MFS_DT_INT16: return *(const int16_t *)s;
	case MFS_DT_INT32: return *(const int32_t *)s;
	case MFS_DT_INT64: return (double)*(const int64_t *)s;
	case MFS_DT_UINT8: return *(const uint8_t *)s;
	case MFS_DT_UINT16: return *(const uint16_t *)s;
	case MFS_DT_UINT32: return *(const uint32_t *)s;
	case MFS_DT_UINT64: return (double)*(const uint64_t *)s;
	default: return 0;
	}
}

static int64_t load_i64(const char *s, mfs_dtype dt)
{
	switch (dt) {
	case MFS_DT_INT8: return *(const int8_t *)s;
	case MFS_DT_INT16: return *(const int16_t *)s;
	case MFS_DT_INT32: return *(const int32_t *)s;
	case MFS_DT_INT64: return *(const int64_t *)s;
	case MFS_DT_UINT8: return *(const uint8_t *)s;
	case MFS_DT_UINT16: return *(const uint16_t *)s;
	case MFS_DT_UINT32: return *(const uint32_t *)s;
	case MFS_DT_UINT64: return (int64_t)*(const uint64_t *)s;
	default: return 0;
	}
}

static int64_t ipow(int64_t x, int64_t e)
{
	uint64_t r = 1, b = (uint64_t)x;

	if (e < 0)
		return x == 1 ? 1 : x == -1 ? (e & 1 ? -1 : 1) : 0;
	for (; e; e >>= 1, b *= b)
		if (e & 1)
			r *= b;
	return (int64_t)r;
}

static int64_t sat_i64(double v)
{
	if (v != v)
		return 0;
	if (v >= 9223372036854775807.0)
		return INT64_MAX;
	if (v <= -9223372036854775808.0)
		return INT64_MIN;
	return (int64_t)v;
}

static void store(char *o, mfs_dtype dt, double v, int64_t iv)
{
	switch (dt) {
	case MFS_DT_FLOAT: *(float *)o = (float)v; break;
	case MFS_DT_DOUBLE: *(double *)o = v; break;
	case MFS_DT_FLOAT16: *(uint16_t *)o = mfs_float_to_half((float)v); break;
	case MFS_DT_BFLOAT16: *(uint16_t *)o = mfs_float_to_bf16((float)v); break;
	case MFS_DT_INT8: *(int8_t *)o = (int8_t)iv; break;
	case MFS_DT_INT16: *(int16_t *)o = (int16_t)iv; break;
	case MFS_DT_INT32: *(int32_t *)o = (int32_t)iv; break;
	case MFS_DT_INT64: *(int64_t *)o = iv; break;
	case MFS_DT_UINT8: *(uint8_t *)o = (uint8_t)iv; break;
	case MFS_DT_UINT16: *(uint16_t *)o = (uint16_t)iv; break;
	case MFS_DT_UINT32: *(uint32_t *)o = (uint32_t)iv; break;
	case MFS_DT_UINT64: *(uint64_t *)o = (uint64_t)iv; break;
	default: break;
	}
}

static void pow_mixed(char *out, const char *const *in, const int64_t *step,
		      int64_t n, const ew_params *p)
{
	size_t sa = mfs_dtype_size(p->dt_a), sb = mfs_dtype_size(p->dt_b);
	bool int_base = !ew_is_float(p->dt_a), int_exp = !ew_is_float(p->dt_b);

	for (int64_t j = 0; j < n; j++) {
		const char *x = in[0] + j * step[0] * (int64_t)sa;
		const char *y = in[1] + j * step[1] * (int64_t)sb;
		char *o = out + j * (int64_t)sa;
		if (int_base && int_exp) {
			store(o, p->dt_a, 0, ipow(load_i64(x, p->dt_a), load_i64(y, p->dt_b)));
		} else {
			double v = pow(load_f64(x, p->dt_a), load_f64(y, p->dt_b));
			store(o, p->dt_a, v, int_base ? sat_i64(v) : 0);
		}
	}
}

static bool pow_type_ok(mfs_dtype dt)
{
	return dt != MFS_DT_BOOL && mfs_dtype_size(dt) > 0;
}

static int pow_infer(mfs_op_ctx *ctx)
{
	if (ctx->n_in != 2 || !ctx->in[0] || !ctx->in[1])
		return mfs_op_fail(ctx, EINVAL, "needs two inputs");
	for (int k = 0; k < 2; k++)
		if (!pow_type_ok(ctx->in[k]->dtype))
			return mfs_op_fail(ctx, ENOTSUP, "input type %s is not supported",
					   mfs_dtype_onnx_name(ctx->in[k]->dtype));
	return ew_infer_shape(ctx, 0, ctx->in[0]->dtype);
}

static int pow_run(mfs_op_ctx *ctx)
{
	mfs_tensor b = ew_legacy_operand(ctx, ctx->in[0], ctx->in[1]);
	const mfs_tensor *in[2] = { ctx->in[0], &b };
	ew_params p = { .dt_a = in[0]->dtype, .dt_b = in[1]->dtype };

	if (ew_is_float(p.dt_a) && mfs_shape_numel(&b.shape) == 1 &&
	    mfs_tensor_get_f64(&b, 0) == 2)
		return ew_run(ctx, &square_tab, in, 1, ctx->out[0], &p);
	if (p.dt_a == p.dt_b && ew_table_has(&same_tab, p.dt_a))
		return ew_run(ctx, &same_tab, in, 2, ctx->out[0], &p);
	ew_apply(pow_mixed, in, 2, ctx->out[0], &p);
	return 0;
}

MFS_OP(Pow, 1, .flags = MFS_OP_NHWC_OK, .infer = pow_infer, .run = pow_run);

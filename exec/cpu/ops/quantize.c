/* QuantizeLinear (10, 13), DequantizeLinear (10, 13),
 * DynamicQuantizeLinear (11): the conversions around the 8-bit operators.
 *
 * QuantizeLinear:   y = saturate(rint(x / y_scale) + y_zero_point)
 *                   x float or int32; y uint8 (default, no zero point given)
 *                   or int8, the zero point's type.
 * DequantizeLinear: y = (x - x_zero_point) * x_scale, x int8/uint8/int32,
 *                   y float.
 * From opset 13 scale and zero point may be 1-D, one value per slice along
 * `axis` (default 1); before, they are scalars.  rint rounds half to even,
 * as the ONNX reference (numpy) does.
 * DynamicQuantizeLinear: uint8 with scale = (max(0, max x) - min(0, min x))
 * / 255 and zero point = saturate(rint(-min / scale)); outputs y, y_scale,
 * y_zero_point.  An all-zero x gives scale 0, zero point 0, y 0.
 */
#include <math.h>
#include <string.h>

#include "elementwise.h"
#include "qlinear_util.h"

/* Per-tensor fast paths (the QDQ graphs' activations): vectorised loops
 * in float, the same arithmetic as the general loops below (a float
 * quotient rounded half to even; an exact product). pa: scale, pb: zero
 * point. */
EW_UNARY_KERNEL(q_f32_u8, float, uint8_t,
		mfs_q_round(x / (float)pa, -(float)pb, 255.0f - (float)pb) + (float)pb)
EW_UNARY_KERNEL(q_f32_s8, float, int8_t,
		mfs_q_round(x / (float)pa, -128.0f - (float)pb, 127.0f - (float)pb) + (float)pb)
EW_UNARY_KERNEL(dq_u8_f32, uint8_t, float, ((float)x - (float)pb) * (float)pa)
EW_UNARY_KERNEL(dq_s8_f32, int8_t, float, ((float)x - (float)pb) * (float)pa)

static double q_get(const mfs_tensor *t, int64_t i)
{
	switch (t->dtype) {
	case MFS_DT_FLOAT: return ((const float *)t->data)[i];
	case MFS_DT_INT32: return ((const int32_t *)t->data)[i];
	case MFS_DT_INT8: return ((const int8_t *)t->data)[i];
	case MFS_DT_UINT8: return ((const uint8_t *)t->data)[i];
	default: return 0;
	}
}

/* Shared checks: scale (float) and zero point, scalar or per axis. */
static int q_check(mfs_op_ctx *ctx, const mfs_tensor *x, int *axis, int64_t *per)
{
	const mfs_tensor *s = ctx->n_in > 1 ? ctx->in[1] : NULL;
	const mfs_tensor *z = ctx->n_in > 2 ? ctx->in[2] : NULL;
	int rc;

	if (!x || !s)
		return mfs_op_fail(ctx, EINVAL, "needs inputs x and scale");
	if (x->layout != MFS_LAYOUT_PLAIN)
		return mfs_op_fail(ctx, EINVAL, "x must be in plain layout");
	if (s->dtype != MFS_DT_FLOAT)
		return mfs_op_fail(ctx, ENOTSUP, "scale of type %s is not supported (float only)",
				   mfs_dtype_onnx_name(s->dtype));
	int64_t ns = mfs_shape_numel(&s->shape);
	*axis = 0;
	*per = 1;
	if (s->shape.rank == 1 && ns != 1) {
		if (ctx->opset < 13)
			return mfs_op_fail(ctx, EINVAL, "per-axis scale needs opset 13");
		if ((rc = mfs_norm_axis(onnx_attr_int(ctx->node, "axis", 1), x->shape.rank, axis,
					ctx->err)) < 0)
			return mfs_op_fail(ctx, EINVAL, "%s", ctx->err->msg);
		if (x->shape.dims[*axis] != ns)
			return mfs_op_fail(ctx, EINVAL, "scale has %lld values, axis %d of x has %lld",
					   (long long)ns, *axis, (long long)x->shape.dims[*axis]);
		*per = ns;
	} else if (s->shape.rank > 1 || ns != 1) {
		return mfs_op_fail(ctx, EINVAL, "scale must be a scalar or 1-D");
	}
	if (z && mfs_shape_numel(&z->shape) != *per)
		return mfs_op_fail(ctx, EINVAL, "zero point has %lld values, scale %lld",
				   (long long)mfs_shape_numel(&z->shape), (long long)*per);
	return 0;
}

/* Index of the scale for element i. */
static int64_t q_slot(const mfs_shape *xs, int axis, int64_t per, int64_t i)
{
	if (per == 1)
		return 0;
	int64_t inner = 1;
	for (int d = axis + 1; d < xs->rank; d++)
		inner *= xs->dims[d];
	return i / inner % per;
}

static int ql_infer(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0], *z = ctx->n_in > 2 ? ctx->in[2] : NULL;
	int axis;
	int64_t per;
	int rc = q_check(ctx, x, &axis, &per);
	if (rc < 0)
		return rc;
	if (x->dtype != MFS_DT_FLOAT && x->dtype != MFS_DT_INT32)
		return mfs_op_fail(ctx, ENOTSUP, "x of type %s is not supported",
				   mfs_dtype_onnx_name(x->dtype));
	mfs_dtype yt = z ? z->dtype : MFS_DT_UINT8;
	if (yt != MFS_DT_UINT8 && yt != MFS_DT_INT8)
		return mfs_op_fail(ctx, ENOTSUP, "output type %s is not supported (uint8, int8)",
				   mfs_dtype_onnx_name(yt));
	ctx->out[0]->dtype = yt;
	ctx->out[0]->shape = x->shape;
	return 0;
}

static int ql_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0], *s = ctx->in[1];
	const mfs_tensor *z = ctx->n_in > 2 ? ctx->in[2] : NULL;
	mfs_tensor *y = ctx->out[0];
	int axis;
	int64_t per;
	int rc = q_check(ctx, x, &axis, &per);
	if (rc < 0)
		return rc;
	bool s8 = y->dtype == MFS_DT_INT8;
	double lo = s8 ? -128 : 0, hi = s8 ? 127 : 255;
	int64_t n = mfs_shape_numel(&x->shape);
	if (per == 1 && x->dtype == MFS_DT_FLOAT) {
		ew_params ep = { .a = ((const float *)s->data)[0], .b = z ? q_get(z, 0) : 0 };
		ew_apply(s8 ? q_f32_s8 : q_f32_u8, &x, 1, y, &ep);
		return 0;
	}
	for (int64_t i = 0; i < n; i++) {
		int64_t k = q_slot(&x->shape, axis, per, i);
		/* float32 division, as the reference: a double quotient can
		 * land on the other side of a .5 tie. */
		float qf = (float)q_get(x, i) / ((const float *)s->data)[k];
		double v = rint(qf) + (z ? q_get(z, k) : 0);
		v = isnan(v) ? 0 : v < lo ? lo : v > hi ? hi : v;
		if (s8)
			((int8_t *)y->data)[i] = (int8_t)v;
		else
			((uint8_t *)y->data)[i] = (uint8_t)v;
	}
	return 0;
}

static int dql_infer(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0], *z = ctx->n_in > 2 ? ctx->in[2] : NULL;
	int axis;
	int64_t per;
	int rc = q_check(ctx, x, &axis, &per);
	if (rc < 0)
		return rc;
	if (x->dtype != MFS_DT_UINT8 && x->dtype != MFS_DT_INT8 && x->dtype != MFS_DT_INT32)
		return mfs_op_fail(ctx, ENOTSUP, "x of type %s is not supported",
				   mfs_dtype_onnx_name(x->dtype));
	if (z && z->dtype != x->dtype)
		return mfs_op_fail(ctx, EINVAL, "zero point type %s differs from x's %s",
				   mfs_dtype_onnx_name(z->dtype), mfs_dtype_onnx_name(x->dtype));
	ctx->out[0]->dtype = MFS_DT_FLOAT;
	ctx->out[0]->shape = x->shape;
	return 0;
}

static int dql_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0], *s = ctx->in[1];
	const mfs_tensor *z = ctx->n_in > 2 ? ctx->in[2] : NULL;
	float *y = ctx->out[0]->data;
	int axis;
	int64_t per;
	int rc = q_check(ctx, x, &axis, &per);
	if (rc < 0)
		return rc;
	int64_t n = mfs_shape_numel(&x->shape);
	if (per == 1 && x->dtype != MFS_DT_INT32) {
		ew_params ep = { .a = ((const float *)s->data)[0], .b = z ? q_get(z, 0) : 0 };
		ew_apply(x->dtype == MFS_DT_INT8 ? dq_s8_f32 : dq_u8_f32, &x, 1, ctx->out[0], &ep);
		return 0;
	}
	for (int64_t i = 0; i < n; i++) {
		int64_t k = q_slot(&x->shape, axis, per, i);
		y[i] = (float)((q_get(x, i) - (z ? q_get(z, k) : 0)) * ((const float *)s->data)[k]);
	}
	return 0;
}

static int dyn_infer(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];
	if (!x || x->dtype != MFS_DT_FLOAT)
		return mfs_op_fail(ctx, ENOTSUP, "x must be float");
	if (x->layout != MFS_LAYOUT_PLAIN)
		return mfs_op_fail(ctx, EINVAL, "x must be in plain layout");
	ctx->out[0]->dtype = MFS_DT_UINT8;
	ctx->out[0]->shape = x->shape;
	for (int i = 1; i < 3 && i < ctx->n_out; i++)
		if (ctx->out[i]) {
			ctx->out[i]->dtype = i == 1 ? MFS_DT_FLOAT : MFS_DT_UINT8;
			ctx->out[i]->shape = (mfs_shape){ .rank = 0 };
		}
	return 0;
}

static int dyn_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];
	const float *xd = x->data;
	uint8_t *y = ctx->out[0]->data;
	int64_t n = mfs_shape_numel(&x->shape);
	float mn = 0, mx = 0;

	#pragma omp simd reduction(min:mn) reduction(max:mx)
	for (int64_t i = 0; i < n; i++) {
		mn = xd[i] < mn ? xd[i] : mn;
		mx = xd[i] > mx ? xd[i] : mx;
	}
	float scale = (mx - mn) / 255.0f;
	double zp = 0;
	if (scale > 0) {
		zp = rint(-mn / scale);
		zp = zp < 0 ? 0 : zp > 255 ? 255 : zp;
	}
	if (scale > 0) {
		ew_params ep = { .a = scale, .b = zp };   /* float quotient, as QuantizeLinear */
		ew_apply(q_f32_u8, &x, 1, ctx->out[0], &ep);
	} else {
		memset(y, 0, (size_t)n);
	}
	if (ctx->n_out > 1 && ctx->out[1])
		((float *)ctx->out[1]->data)[0] = scale;
	if (ctx->n_out > 2 && ctx->out[2])
		((uint8_t *)ctx->out[2]->data)[0] = (uint8_t)zp;
	return 0;
}

MFS_OP(QuantizeLinear, 10, .infer = ql_infer, .run = ql_run);
MFS_OP(QuantizeLinear, 13, .infer = ql_infer, .run = ql_run);
MFS_OP(DequantizeLinear, 10, .infer = dql_infer, .run = dql_run);
MFS_OP(DequantizeLinear, 13, .infer = dql_infer, .run = dql_run);
MFS_OP(DynamicQuantizeLinear, 11, .infer = dyn_infer, .run = dyn_run);

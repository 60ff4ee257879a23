/* QAdd (com.modelfs 1): Add on 8-bit values, what the QDQ rewrite
 * (exec/graph/rewrite_qdq.c) makes of DequantizeLinear x2 -> Add [-> Relu]
 * -> QuantizeLinear.  Inputs: a, a_scale, a_zero_point, b, b_scale,
 * b_zero_point, y_scale, y_zero_point (scales float scalars, zero points
 * scalars of a's type or absent; a, b and y all uint8 or all int8);
 * numpy broadcasting; activation "Relu".
 *
 *   y = saturate(rint(a * as/ys + b * bs/ys + (yz - az*as/ys - bz*bs/ys)))
 * clamped below at yz with Relu: ONNX Runtime's QLinearAdd, in float.
 * MFS_OP_NHWC_OK: a and b both NHWC of one shape (a ResNet block's sum).
 */
#include <math.h>
#include <string.h>

#include "elementwise.h"
#include "qlinear_util.h"

/* pa = as / ys, pb = bs / ys, pc the offset; p->i the lower bound. */
EW_BINARY_KERNEL(qadd_u8, uint8_t, uint8_t,
		 mfs_q_round((float)x * (float)pa + (float)y * (float)pb + (float)pc,
			     (float)p->i, 255.0f))
EW_BINARY_KERNEL(qadd_s8, int8_t, int8_t,
		 mfs_q_round((float)x * (float)pa + (float)y * (float)pb + (float)pc,
			     (float)p->i, 127.0f))

static const mfs_tensor *opt(mfs_op_ctx *ctx, int i)
{
	return i < ctx->n_in ? ctx->in[i] : NULL;
}

static int qadd_check(mfs_op_ctx *ctx, mfs_dtype *dt)
{
	const mfs_tensor *a = opt(ctx, 0), *b = opt(ctx, 3);
	if (!a || !b || !opt(ctx, 1) || !opt(ctx, 4) || !opt(ctx, 6))
		return mfs_op_fail(ctx, EINVAL, "needs a, a_scale, b, b_scale and y_scale");
	*dt = a->dtype;
	if ((*dt != MFS_DT_UINT8 && *dt != MFS_DT_INT8) || b->dtype != *dt)
		return mfs_op_fail(ctx, ENOTSUP, "a and b must both be uint8 or both int8");
	/* NHWC (the QConvs' channels-last values): elementwise in storage
	 * order, so both inputs so stored with one shape. */
	if ((a->layout != MFS_LAYOUT_PLAIN || b->layout != MFS_LAYOUT_PLAIN) &&
	    (a->layout != b->layout || a->layout != MFS_LAYOUT_NHWC ||
	     !mfs_shape_equal(&a->shape, &b->shape)))
		return mfs_op_fail(ctx, EINVAL, "NHWC inputs must both be NHWC of one shape");
	for (int i = 1; i < 8; i++) {
		const mfs_tensor *t = opt(ctx, i);
		if (i == 3 || !t)
			continue;
		bool scale = i == 1 || i == 4 || i == 6;
		if (mfs_shape_numel(&t->shape) != 1 || !t->data ||
		    (scale ? t->dtype != MFS_DT_FLOAT : t->dtype != *dt))
			return mfs_op_fail(ctx, EINVAL, "input %d must be one constant %s", i,
					   scale ? "float" : mfs_dtype_onnx_name(*dt));
	}
	const char *act = onnx_attr_string(ctx->node, "activation", "");
	if (*act && strcmp(act, "Relu"))
		return mfs_op_fail(ctx, EINVAL, "activation '%s' is not supported (Relu only)", act);
	return 0;
}

static int qadd_infer(mfs_op_ctx *ctx)
{
	mfs_dtype dt;
	int rc = qadd_check(ctx, &dt);
	if (rc < 0)
		return rc;
	if (mfs_broadcast_shape(&ctx->in[0]->shape, &ctx->in[3]->shape, &ctx->out[0]->shape,
				ctx->err) < 0)
		return mfs_op_fail(ctx, EINVAL, "%s", ctx->err->msg);
	ctx->out[0]->dtype = dt;
	return 0;
}

static double zp(mfs_op_ctx *ctx, int i)
{
	const mfs_tensor *t = opt(ctx, i);
	return t ? (double)mfs_tensor_get_i64(t, 0) : 0;
}

static int qadd_run(mfs_op_ctx *ctx)
{
	mfs_dtype dt;
	int rc = qadd_check(ctx, &dt);
	if (rc < 0)
		return rc;
	double ys = ((const float *)ctx->in[6]->data)[0];
	double ra = ((const float *)ctx->in[1]->data)[0] / ys;
	double rb = ((const float *)ctx->in[4]->data)[0] / ys;
	double yz = zp(ctx, 7);
	bool relu = *onnx_attr_string(ctx->node, "activation", "");
	ew_params ep = { .a = ra, .b = rb, .c = yz - zp(ctx, 2) * ra - zp(ctx, 5) * rb,
			 .i = relu ? (int64_t)yz : dt == MFS_DT_INT8 ? -128 : 0 };
	const mfs_tensor *in[2] = { ctx->in[0], ctx->in[3] };
	ew_apply(dt == MFS_DT_INT8 ? qadd_s8 : qadd_u8, in, 2, ctx->out[0], &ep);
	return 0;
}

MFS_OP_DOMAIN("com.modelfs", QAdd, 1, .flags = MFS_OP_NHWC_OK, .infer = qadd_infer, .run = qadd_run);

/* PRelu: x < 0 ? slope * x : x, slope broadcast to X (unidirectionally:
 * the output has X's shape).  Before opset 7 a 1-D slope of X's channel
 * count applies per channel (dim 1), as old PyTorch exports expect. */
#include "elementwise.h"

EW_T_FLOAT(EW_DEF_BINARY, prelu, x < 0 ? y * x : x)
EW_T_SINT(EW_DEF_BINARY, prelu, x < 0 ? y * x : x)

static const ew_table prelu_tab = { 2, { EW_T_FLOAT(EW_ENTRY, prelu) EW_T_SINT(EW_ENTRY, prelu) } };

/* The slope as the kernel sees it. */
static mfs_tensor slope_view(const mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];
	mfs_tensor s = *ctx->in[1];

	if (ctx->opset < 7 && s.shape.rank == 1 && x->shape.rank > 2 &&
	    s.shape.dims[0] == x->shape.dims[1] && s.shape.dims[0] != 1) {
		s.shape.rank = x->shape.rank - 1;
		for (int d = 1; d < s.shape.rank; d++)
			s.shape.dims[d] = 1;
	}
	return s;
}

static int prelu_infer(mfs_op_ctx *ctx)
{
	mfs_tensor s;
	const mfs_tensor *in[2];
	mfs_shape shape;
	mfs_layout layout;
	int rc;

	if (ctx->n_in != 2 || !ctx->in[0] || !ctx->in[1])
		return mfs_op_fail(ctx, EINVAL, "needs inputs X and slope");
	if (ctx->in[0]->dtype != ctx->in[1]->dtype)
		return mfs_op_fail(ctx, EINVAL, "input types %s and %s differ",
				   mfs_dtype_onnx_name(ctx->in[0]->dtype),
				   mfs_dtype_onnx_name(ctx->in[1]->dtype));
	if (!ew_table_has(&prelu_tab, ctx->in[0]->dtype))
		return mfs_op_fail(ctx, ENOTSUP, "input type %s is not supported",
				   mfs_dtype_onnx_name(ctx->in[0]->dtype));
	s = slope_view(ctx);
	in[0] = ctx->in[0];
	in[1] = &s;
	rc = mfs_broadcast_shape(&in[0]->shape, &s.shape, &shape, ctx->err);
	if (rc < 0 || !mfs_shape_equal(&shape, &in[0]->shape))
		return mfs_op_fail(ctx, EINVAL, "slope does not broadcast to X's shape");
	rc = ew_check_layout(ctx, in, 2, &shape, &layout);
	if (rc < 0)
		return rc;
	ctx->out[0]->dtype = in[0]->dtype;
	ctx->out[0]->shape = shape;
	ctx->out[0]->layout = layout;
	return 0;
}

static int prelu_run(mfs_op_ctx *ctx)
{
	mfs_tensor s = slope_view(ctx);
	const mfs_tensor *in[2] = { ctx->in[0], &s };
	ew_params p = { 0 };

	return ew_run(ctx, &prelu_tab, in, 2, ctx->out[0], &p);
}

MFS_OP(PRelu, 1, .flags = MFS_OP_NHWC_OK, .infer = prelu_infer, .run = prelu_run);

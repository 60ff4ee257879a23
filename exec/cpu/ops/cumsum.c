/* CumSum (11): running sums along the axis given by input 1, optionally
 * exclusive (shifted by one) and/or reversed. */
#include "op_common.h"

typedef struct cs_args {
	bool exclusive, reverse;
} cs_args;

static void cs_row(double *x, int64_t n, int64_t r, void *user)
{
	const cs_args *a = user;
	double acc = 0;

	(void)r;
	for (int64_t k = 0; k < n; k++) {
		int64_t i = a->reverse ? n - 1 - k : k;
		double v = x[i];
		if (a->exclusive) {
			x[i] = acc;
			acc += v;
		} else {
			acc += v;
			x[i] = acc;
		}
	}
}

static int cs_axis(mfs_op_ctx *ctx, int *axis)
{
	const mfs_tensor *a;
	int rc = oc_need(ctx, 1);

	if (rc)
		return rc;
	a = ctx->in[1];
	if (mfs_shape_numel(&a->shape) != 1 || !oc_is_int(a->dtype))
		return mfs_op_fail(ctx, EINVAL, "axis must be one integer");
	if (!a->data)
		return 0;  /* only run needs it */
	return oc_axis(ctx, mfs_tensor_get_i64(a, 0), ctx->in[0]->shape.rank, axis);
}

static int cs_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 2, true);
	int axis, rc;

	if (ctx->in[0]->shape.rank < 1)
		return mfs_op_fail(ctx, EINVAL, "input must have rank >= 1");
	if ((rc = cs_axis(ctx, &axis)) || (rc = oc_need_numeric(ctx, ctx->in[0], true)))
		return rc;
	oc_set_out(ctx, 0, ctx->in[0]->dtype, &ctx->in[0]->shape);
	return 0;
}

static int cs_run(mfs_op_ctx *ctx)
{
	cs_args a = { onnx_attr_int(ctx->node, "exclusive", 0) != 0,
		      onnx_attr_int(ctx->node, "reverse", 0) != 0 };
	int axis = 0, rc = cs_axis(ctx, &axis);

	return rc ? rc : oc_row_map(ctx, ctx->in[0], ctx->out[0], 1u << axis, cs_row, &a);
}

MFS_OP(CumSum, 11, .infer = cs_infer, .run = cs_run);

/* Dropout at inference: the output is the input and the optional mask is
 * all true.  Training mode with a non-zero ratio would need random numbers,
 * which a server must not produce silently: that is refused. */
#include "op_common.h"

/* Refuse training mode with a non-zero ratio.  Checked in infer as well
 * as run: the engine may skip run for a view, so infer asks to be called
 * again at run time while training_mode is unknown. */
static int check_training(mfs_op_ctx *ctx)
{
	const mfs_tensor *ratio = oc_in(ctx, 1), *training = oc_in(ctx, 2);
	double r = 0.5;

	if (!training || mfs_shape_numel(&training->shape) < 1)
		return 0;
	if (!training->data || (ratio && !ratio->data))
		return MFS_SHAPE_DEPENDS_ON_DATA;
	if (!mfs_tensor_get_i64(training, 0))
		return 0;
	if (ratio && mfs_shape_numel(&ratio->shape) >= 1)
		r = mfs_tensor_get_f64(ratio, 0);
	if (r != 0)
		return mfs_op_fail(ctx, ENOTSUP, "training mode with ratio %g is not supported", r);
	return 0;
}

static int dropout_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 1, true);
	const mfs_tensor *in = ctx->in[0];
	int rc = check_training(ctx);

	if (rc < 0)
		return rc;
	oc_set_out(ctx, 0, in->dtype, &in->shape);
	/* The mask is bool from opset 10, the input's type before. */
	oc_set_out(ctx, 1, ctx->opset >= 10 ? MFS_DT_BOOL : in->dtype, &in->shape);
	return rc;
}

static int dropout_run(mfs_op_ctx *ctx)
{
	mfs_tensor *mask = oc_out(ctx, 1);
	int rc = check_training(ctx);

	if (rc)
		return rc < 0 ? rc : mfs_op_fail(ctx, EINVAL, "training_mode unknown at run");
	oc_copy_through(ctx);
	if (mask) {
		int64_t n = mfs_shape_numel(&mask->shape);
		for (int64_t i = 0; i < n; i++)
			oc_store(mask->dtype, mask->data, i, 1);
	}
	return 0;
}

MFS_OP(Dropout, 1, .flags = MFS_OP_VIEW, .infer = dropout_infer, .run = dropout_run);

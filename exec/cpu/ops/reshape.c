/* Reshape (5; allowzero from 14) and Flatten: new shape, same bytes (views). */
#include "op_common.h"

static int reshape_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 2, true);
	const mfs_tensor *in = ctx->in[0];
	int64_t want[MFS_MAX_RANK], known = 1, total;
	int n = 0, infer_at = -1, rc;
	bool allowzero = ctx->opset >= 14 &&
			 onnx_attr_int(ctx->node, "allowzero", 0) != 0;
	mfs_shape out = { 0 };

	if ((rc = oc_need(ctx, 1)))
		return rc;
	rc = oc_read_ints(ctx, 1, want, MFS_MAX_RANK, &n);
	if (rc)
		return rc;
	out.rank = n;
	for (int i = 0; i < n; i++) {
		int64_t d = want[i];
		if (d == -1) {
			if (infer_at >= 0)
				return mfs_op_fail(ctx, EINVAL, "more than one -1 in the shape");
			infer_at = i;
			d = 1;
		} else if (d == 0 && !allowzero) {
			if (i >= in->shape.rank)
				return mfs_op_fail(ctx, EINVAL,
						   "shape[%d] is 0 but the input has rank %d",
						   i, in->shape.rank);
			d = in->shape.dims[i];
		} else if (d < 0) {
			return mfs_op_fail(ctx, EINVAL, "shape[%d] is %lld", i, (long long)d);
		}
		out.dims[i] = d;
	}
	if ((rc = oc_check_shape(ctx, &out)))
		return rc;
	known = mfs_shape_numel(&out);
	total = mfs_shape_numel(&in->shape);
	if (infer_at >= 0) {
		if (known == 0 || total % known)
			return mfs_op_fail(ctx, EINVAL,
					   "cannot infer the -1 dimension: %lld elements into %lld",
					   (long long)total, (long long)known);
		out.dims[infer_at] = total / known;
	} else if (known != total) {
		char a[160], b[160];
		return mfs_op_fail(ctx, EINVAL, "cannot reshape %s to %s",
				   mfs_shape_format(&in->shape, a, sizeof(a)),
				   mfs_shape_format(&out, b, sizeof(b)));
	}
	oc_set_out(ctx, 0, in->dtype, &out);
	return 0;
}

static int flatten_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 1, true);
	const mfs_tensor *in = ctx->in[0];
	int64_t axis = onnx_attr_int(ctx->node, "axis", 1), outer, n, inner;
	mfs_shape out = { .rank = 2 };

	if (axis < -(int64_t)in->shape.rank || axis > in->shape.rank)
		return mfs_op_fail(ctx, EINVAL, "axis %lld is out of range for rank %d",
				   (long long)axis, in->shape.rank);
	if (axis < 0)
		axis += in->shape.rank;
	oc_split_at(&in->shape, (int)axis, &outer, &n, &inner);
	out.dims[0] = outer;
	out.dims[1] = n * inner;
	oc_set_out(ctx, 0, in->dtype, &out);
	return 0;
}

MFS_OP(Reshape, 5, .flags = MFS_OP_VIEW | MFS_OP_STRINGS, .infer = reshape_infer, .run = oc_copy_through);
MFS_OP(Flatten, 1, .flags = MFS_OP_VIEW | MFS_OP_STRINGS, .infer = flatten_infer, .run = oc_copy_through);

/* Squeeze and Unsqueeze: add or drop unit dims (views).  Axes are an
 * attribute up to opset 12 and an input from 13. */
#include "op_common.h"

/* Axes from the attribute (attr_ver) or from optional input 1. */
static int get_axes(mfs_op_ctx *ctx, bool from_input, int64_t *axes, int *n)
{
	if (from_input) {
		*n = 0;
		return oc_in(ctx, 1) ? oc_read_ints(ctx, 1, axes, MFS_MAX_RANK, n) : 0;
	}
	int rc = oc_attr_ints(ctx, "axes", axes, MFS_MAX_RANK, n);
	if (*n < 0)
		*n = 0;
	return rc;
}

static int squeeze_common(mfs_op_ctx *ctx, bool from_input)
{
	OC_CHECK_IO(ctx, 1, true);
	const mfs_tensor *in = ctx->in[0];
	int64_t axes[MFS_MAX_RANK];
	int n, rc;
	unsigned mask = 0;
	mfs_shape out = { 0 };

	if ((rc = get_axes(ctx, from_input, axes, &n)))
		return rc;
	if ((rc = oc_axes_mask(ctx, axes, n, in->shape.rank, &mask, NULL)))
		return rc;
	for (int i = 0; i < in->shape.rank; i++) {
		bool drop = n ? (mask >> i) & 1 : in->shape.dims[i] == 1;
		if (drop && in->shape.dims[i] != 1)
			return mfs_op_fail(ctx, EINVAL, "cannot squeeze axis %d of size %lld",
					   i, (long long)in->shape.dims[i]);
		if (!drop)
			out.dims[out.rank++] = in->shape.dims[i];
	}
	oc_set_out(ctx, 0, in->dtype, &out);
	return 0;
}

static int unsqueeze_common(mfs_op_ctx *ctx, bool from_input)
{
	OC_CHECK_IO(ctx, 1, true);
	const mfs_tensor *in = ctx->in[0];
	int64_t axes[MFS_MAX_RANK];
	int n, rc, rank, j = 0;
	unsigned mask = 0;
	mfs_shape out = { 0 };

	if ((rc = get_axes(ctx, from_input, axes, &n)))
		return rc;
	if (!n)
		return mfs_op_fail(ctx, EINVAL, "axes are required");
	rank = in->shape.rank + n;
	if (rank > MFS_MAX_RANK)
		return mfs_op_fail(ctx, EINVAL, "rank %d is not supported", rank);
	if ((rc = oc_axes_mask(ctx, axes, n, rank, &mask, NULL)))
		return rc;
	out.rank = rank;
	for (int i = 0; i < rank; i++)
		out.dims[i] = (mask >> i) & 1 ? 1 : in->shape.dims[j++];
	oc_set_out(ctx, 0, in->dtype, &out);
	return 0;
}

static int squeeze1_infer(mfs_op_ctx *ctx) { return squeeze_common(ctx, false); }
static int squeeze13_infer(mfs_op_ctx *ctx) { return squeeze_common(ctx, true); }
static int unsqueeze1_infer(mfs_op_ctx *ctx) { return unsqueeze_common(ctx, false); }
static int unsqueeze13_infer(mfs_op_ctx *ctx) { return unsqueeze_common(ctx, true); }

MFS_OP(Squeeze, 1, .flags = MFS_OP_VIEW | MFS_OP_STRINGS, .infer = squeeze1_infer, .run = oc_copy_through);
MFS_OP(Squeeze, 13, .flags = MFS_OP_VIEW | MFS_OP_STRINGS, .infer = squeeze13_infer, .run = oc_copy_through);
MFS_OP(Unsqueeze, 1, .flags = MFS_OP_VIEW | MFS_OP_STRINGS, .infer = unsqueeze1_infer, .run = oc_copy_through);
MFS_OP(Unsqueeze, 13, .flags = MFS_OP_VIEW | MFS_OP_STRINGS, .infer = unsqueeze13_infer, .run = oc_copy_through);

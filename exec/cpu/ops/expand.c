/* Expand (numpy broadcast to a shape given as input) and Tile (repeat
 * along each axis).  Both are strided copies: a broadcast dim reads with
 * stride 0, and Tile reads the input through [r0,d0,r1,d1,...] with the
 * repeat dims at stride 0. */
#include "op_common.h"

static int read_shape_input(mfs_op_ctx *ctx, int64_t *v, int *n)
{
	int rc = oc_need(ctx, 1);
	return rc ? rc : oc_read_ints(ctx, 1, v, MFS_MAX_RANK, n);
}

static int expand_shape(mfs_op_ctx *ctx, mfs_shape *out)
{
	const mfs_tensor *in = ctx->in[0];
	int64_t v[MFS_MAX_RANK];
	int n = 0, rc;
	mfs_shape want = { 0 };

	if ((rc = read_shape_input(ctx, v, &n)))
		return rc;
	want.rank = n;
	for (int i = 0; i < n; i++) {
		if (v[i] < 0)
			return mfs_op_fail(ctx, EINVAL, "shape[%d] is %lld", i, (long long)v[i]);
		want.dims[i] = v[i];
	}
	if ((rc = mfs_broadcast_shape(&in->shape, &want, out, ctx->err)))
		return mfs_op_fail(ctx, rc ? -rc : EINVAL, "%s", ctx->err->msg);
	return oc_check_shape(ctx, out);
}

static int expand_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 2, true);
	mfs_shape out;
	int rc = expand_shape(ctx, &out);
	if (rc)
		return rc;
	oc_set_out(ctx, 0, ctx->in[0]->dtype, &out);
	return 0;
}

static int expand_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *in = ctx->in[0];
	mfs_tensor *out = ctx->out[0];
	int64_t ist[MFS_MAX_RANK], st[MFS_MAX_RANK];
	int lead = out->shape.rank - in->shape.rank, rc;
	size_t es;

	if ((rc = oc_elem_size(ctx, in, &es)))
		return rc;
	oc_strides(&in->shape, ist);
	for (int i = 0; i < out->shape.rank; i++) {
		int j = i - lead;
		st[i] = j < 0 || in->shape.dims[j] == 1 ? 0 : ist[j];
	}
	oc_copy_view(out->data, in->data, es, out->shape.rank, out->shape.dims, st, 0);
	return 0;
}

static int tile_shape(mfs_op_ctx *ctx, int64_t *reps, mfs_shape *out)
{
	const mfs_tensor *in = ctx->in[0];
	int n = 0, rc;

	if ((rc = read_shape_input(ctx, reps, &n)))
		return rc;
	if (n != in->shape.rank)
		return mfs_op_fail(ctx, EINVAL, "%d repeats for rank %d", n, in->shape.rank);
	*out = in->shape;
	for (int i = 0; i < n; i++) {
		if (reps[i] < 0)
			return mfs_op_fail(ctx, EINVAL, "repeat %lld is negative",
					   (long long)reps[i]);
		if (reps[i] > OC_MAX_NUMEL || (out->dims[i] && reps[i] > OC_MAX_NUMEL / out->dims[i]))
			return mfs_op_fail(ctx, EINVAL, "output is too large");
		out->dims[i] *= reps[i];
	}
	return oc_check_shape(ctx, out);
}

static int tile_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 2, true);
	int64_t reps[MFS_MAX_RANK];
	mfs_shape out;
	int rc = tile_shape(ctx, reps, &out);
	if (rc)
		return rc;
	oc_set_out(ctx, 0, ctx->in[0]->dtype, &out);
	return 0;
}

static int tile_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *in = ctx->in[0];
	int64_t reps[MFS_MAX_RANK], ist[MFS_MAX_RANK];
	int64_t dims[OC_MAX_VIEW_RANK], st[OC_MAX_VIEW_RANK];
	mfs_shape out;
	size_t es;
	int rc;

	if ((rc = tile_shape(ctx, reps, &out)) || (rc = oc_elem_size(ctx, in, &es)))
		return rc < 0 ? rc : mfs_op_fail(ctx, EINVAL, "repeats unknown at run");
	oc_strides(&in->shape, ist);
	for (int i = 0; i < in->shape.rank; i++) {
		dims[2 * i] = reps[i];
		st[2 * i] = 0;
		dims[2 * i + 1] = in->shape.dims[i];
		st[2 * i + 1] = ist[i];
	}
	oc_copy_view(ctx->out[0]->data, in->data, es, 2 * in->shape.rank, dims, st, 0);
	return 0;
}

MFS_OP(Expand, 8, .flags = MFS_OP_STRINGS, .infer = expand_infer, .run = expand_run);
MFS_OP(Tile, 6, .flags = MFS_OP_STRINGS, .infer = tile_infer, .run = tile_run);

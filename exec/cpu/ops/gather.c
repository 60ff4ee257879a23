/* Gather: take slices of data along an axis at the given indices
 * (negative indices count from the end; out of range is an error). */
#include <string.h>

#include "op_common.h"

static int gather_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 2, true);
	const mfs_tensor *data = ctx->in[0], *idx;
	int axis, rc;
	mfs_shape out = { 0 };

	if ((rc = oc_need(ctx, 1)))
		return rc;
	idx = ctx->in[1];
	if (!oc_is_int(idx->dtype))
		return mfs_op_fail(ctx, EINVAL, "indices must be integers");
	if ((rc = oc_axis(ctx, onnx_attr_int(ctx->node, "axis", 0), data->shape.rank, &axis)))
		return rc;
	if (data->shape.rank - 1 + idx->shape.rank > MFS_MAX_RANK)
		return mfs_op_fail(ctx, EINVAL, "output rank is too large");
	for (int i = 0; i < axis; i++)
		out.dims[out.rank++] = data->shape.dims[i];
	for (int i = 0; i < idx->shape.rank; i++)
		out.dims[out.rank++] = idx->shape.dims[i];
	for (int i = axis + 1; i < data->shape.rank; i++)
		out.dims[out.rank++] = data->shape.dims[i];
	if ((rc = oc_check_shape(ctx, &out)))
		return rc;
	oc_set_out(ctx, 0, data->dtype, &out);
	return 0;
}

static int gather_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *data = ctx->in[0], *idx = ctx->in[1];
	mfs_tensor *out = ctx->out[0];
	int axis, rc;
	int64_t outer, n, inner, ni = mfs_shape_numel(&idx->shape);
	size_t es, row;

	if ((rc = oc_axis(ctx, onnx_attr_int(ctx->node, "axis", 0), data->shape.rank, &axis)) ||
	    (rc = oc_elem_size(ctx, data, &es)))
		return rc;
	oc_split_at(&data->shape, axis, &outer, &n, &inner);
	row = (size_t)inner * es;
	for (int64_t i = 0; i < ni; i++) {
		int64_t k = mfs_tensor_get_i64(idx, i);
		if (k < -n || k >= n)
			return mfs_op_fail(ctx, EINVAL, "index %lld is out of range [-%lld, %lld)",
					   (long long)k, (long long)n, (long long)n);
		if (k < 0)
			k += n;
		for (int64_t o = 0; o < outer && row; o++)
			memcpy((char *)out->data + (o * ni + i) * row,
			       (const char *)data->data + (o * n + k) * row, row);
	}
	return 0;
}

MFS_OP(Gather, 1, .flags = MFS_OP_STRINGS, .infer = gather_infer, .run = gather_run);

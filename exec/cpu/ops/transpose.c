/* Transpose: permute dims (default: reverse them).  The copy is
 * oc_copy_view's, which merges dims that stay contiguous and tiles the
 * 2-D core of real transposes so reads and writes both stay in cache. */
#include "op_common.h"

static int get_perm(mfs_op_ctx *ctx, int rank, int *perm)
{
	const int64_t *p;
	size_t n = onnx_attr_ints(ctx->node, "perm", &p);
	unsigned mask = 0;

	if (!onnx_node_attr(ctx->node, "perm")) {
		for (int i = 0; i < rank; i++)
			perm[i] = rank - 1 - i;
		return 0;
	}
	if ((int64_t)n != rank)
		return mfs_op_fail(ctx, EINVAL, "perm has %zu entries for rank %d", n, rank);
	return oc_axes_mask(ctx, p, (int)n, rank, &mask, perm);
}

static int transpose_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 1, true);
	const mfs_tensor *in = ctx->in[0];
	int perm[MFS_MAX_RANK], rc;
	mfs_shape out = { .rank = in->shape.rank };

	if ((rc = get_perm(ctx, in->shape.rank, perm)))
		return rc;
	for (int i = 0; i < out.rank; i++)
		out.dims[i] = in->shape.dims[perm[i]];
	oc_set_out(ctx, 0, in->dtype, &out);
	return 0;
}

static int transpose_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *in = ctx->in[0];
	mfs_tensor *out = ctx->out[0];
	int perm[MFS_MAX_RANK], rc;
	int64_t ist[MFS_MAX_RANK], st[MFS_MAX_RANK];
	size_t es;

	if ((rc = get_perm(ctx, in->shape.rank, perm)) ||
	    (rc = oc_elem_size(ctx, in, &es)))
		return rc;
	oc_strides(&in->shape, ist);
	for (int i = 0; i < in->shape.rank; i++)
		st[i] = ist[perm[i]];
	oc_copy_view(out->data, in->data, es, out->shape.rank, out->shape.dims, st, 0);
	return 0;
}

MFS_OP(Transpose, 1, .flags = MFS_OP_STRINGS, .infer = transpose_infer, .run = transpose_run);

/* NonZero (9) and Compress (9): outputs whose length depends on the
 * input's values, so both infer from data (MFS_SHAPE_DEPENDS_ON_DATA
 * while it is unknown). */
#include <string.h>

#include "op_common.h"

static bool is_set(const mfs_tensor *t, int64_t i)
{
	return oc_load(t->dtype, t->data, i) != 0;  /* NaN != 0 too */
}

static int64_t count_set(const mfs_tensor *t, int64_t n)
{
	int64_t c = 0;
	for (int64_t i = 0; i < n; i++)
		c += is_set(t, i);
	return c;
}

static int nonzero_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 1, true);
	const mfs_tensor *in = ctx->in[0];
	mfs_shape out = { .rank = 2 };
	int rc;

	if (in->dtype != MFS_DT_BOOL && (rc = oc_need_numeric(ctx, in, true)))
		return rc;
	if (!in->data && mfs_shape_numel(&in->shape))
		return MFS_SHAPE_DEPENDS_ON_DATA;
	out.dims[0] = in->shape.rank ? in->shape.rank : 1;
	out.dims[1] = count_set(in, mfs_shape_numel(&in->shape));
	oc_set_out(ctx, 0, MFS_DT_INT64, &out);
	return 0;
}

static int nonzero_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *in = ctx->in[0];
	int64_t *o = ctx->out[0]->data, n = mfs_shape_numel(&in->shape);
	int64_t nnz = ctx->out[0]->shape.dims[1], k = 0, c[MFS_MAX_RANK] = { 0 };
	int r = in->shape.rank;

	for (int64_t i = 0; i < n && k < nnz; i++) {
		if (is_set(in, i)) {
			for (int j = 0; j < (r ? r : 1); j++)
				o[j * nnz + k] = r ? c[j] : 0;
			k++;
		}
		for (int j = r - 1; j >= 0; j--) {
			if (++c[j] < in->shape.dims[j])
				break;
			c[j] = 0;
		}
	}
	return 0;
}

/* Compress: the axis (or the flattened input when absent) and the number
 * of selected slices. */
static int compress_geom(mfs_op_ctx *ctx, int *axis, int64_t *count, mfs_shape *out)
{
	const mfs_tensor *in = ctx->in[0], *cond;
	const onnx_attr *a = onnx_node_attr(ctx->node, "axis");
	int64_t dim, n;
	int rc;

	if ((rc = oc_need(ctx, 1)))
		return rc;
	cond = ctx->in[1];
	if (cond->shape.rank != 1)
		return mfs_op_fail(ctx, EINVAL, "condition must be 1-D");
	*axis = -1;
	if (a && (rc = oc_axis(ctx, a->i, in->shape.rank, axis)))
		return rc;
	dim = *axis < 0 ? mfs_shape_numel(&in->shape) : in->shape.dims[*axis];
	n = cond->shape.dims[0];
	if (n && !cond->data)
		return MFS_SHAPE_DEPENDS_ON_DATA;
	*count = 0;
	for (int64_t i = 0; i < n; i++) {
		if (!is_set(cond, i))
			continue;
		if (i >= dim)
			return mfs_op_fail(ctx, EINVAL, "condition selects %lld of %lld",
					   (long long)i, (long long)dim);
		(*count)++;
	}
	if (*axis < 0) {
		out->rank = 1;
		out->dims[0] = *count;
	} else {
		*out = in->shape;
		out->dims[*axis] = *count;
	}
	return 0;
}

static int compress_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 2, true);
	int axis, rc;
	int64_t count;
	mfs_shape out;

	if ((rc = compress_geom(ctx, &axis, &count, &out)))
		return rc;
	oc_set_out(ctx, 0, ctx->in[0]->dtype, &out);
	return 0;
}

static int compress_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *in = ctx->in[0], *cond = ctx->in[1];
	int axis, rc;
	int64_t count, outer = 1, n, inner = 1, k = 0;
	mfs_shape out;
	size_t es;

	if ((rc = compress_geom(ctx, &axis, &count, &out)) || (rc = oc_elem_size(ctx, in, &es)))
		return rc < 0 ? rc : mfs_op_fail(ctx, EINVAL, "condition unknown at run");
	if (axis < 0)
		n = mfs_shape_numel(&in->shape);
	else
		oc_split_at(&in->shape, axis, &outer, &n, &inner);
	if (!inner || !outer)
		return 0;
	for (int64_t i = 0; i < cond->shape.dims[0] && i < n; i++) {
		if (!is_set(cond, i))
			continue;
		for (int64_t o = 0; o < outer; o++)
			memcpy((char *)ctx->out[0]->data + ((o * count + k) * inner) * (int64_t)es,
			       (const char *)in->data + ((o * n + i) * inner) * (int64_t)es,
			       (size_t)inner * es);
		k++;
	}
	return 0;
}

MFS_OP(NonZero, 9, .infer = nonzero_infer, .run = nonzero_run);
MFS_OP(Compress, 9, .infer = compress_infer, .run = compress_run);

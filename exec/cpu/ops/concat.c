/* Concat: join inputs along one axis (dtype-agnostic byte copies). */
#include <string.h>

#include "op_common.h"

static int concat_axis(mfs_op_ctx *ctx, int rank, int *axis)
{
	const onnx_attr *a = onnx_node_attr(ctx->node, "axis");

	/* Opset 1 defaults the axis to 1; from 4 it is required. */
	if (!a && ctx->opset >= 4)
		return mfs_op_fail(ctx, EINVAL, "attribute 'axis' is required");
	return oc_axis(ctx, a ? a->i : 1, rank, axis);
}

static int concat_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 0, true);
	const mfs_tensor *first = NULL;
	int axis, rc;
	mfs_shape out;

	for (int i = 0; i < ctx->n_in; i++) {
		const mfs_tensor *t = ctx->in[i];
		if (!t)
			return mfs_op_fail(ctx, EINVAL, "input %d is missing", i);
		if (!first) {
			first = t;
			if ((rc = concat_axis(ctx, t->shape.rank, &axis)))
				return rc;
			out = t->shape;
			continue;
		}
		if (t->dtype != first->dtype || t->shape.rank != first->shape.rank)
			return mfs_op_fail(ctx, EINVAL, "input %d differs in type or rank", i);
		for (int d = 0; d < out.rank; d++) {
			if (d == axis)
				out.dims[d] += t->shape.dims[d];
			else if (t->shape.dims[d] != out.dims[d])
				return mfs_op_fail(ctx, EINVAL,
						   "input %d has dim %d = %lld, expected %lld",
						   i, d, (long long)t->shape.dims[d],
						   (long long)out.dims[d]);
		}
	}
	if (!first)
		return mfs_op_fail(ctx, EINVAL, "no inputs");
	if ((rc = oc_check_shape(ctx, &out)))
		return rc;
	oc_set_out(ctx, 0, first->dtype, &out);
	return 0;
}

static int concat_run(mfs_op_ctx *ctx)
{
	mfs_tensor *out = ctx->out[0];
	int axis, rc;
	int64_t outer, n, inner, pos = 0;
	size_t es;

	if ((rc = concat_axis(ctx, out->shape.rank, &axis)) ||
	    (rc = oc_elem_size(ctx, out, &es)))
		return rc;
	oc_split_at(&out->shape, axis, &outer, &n, &inner);
	for (int i = 0; i < ctx->n_in; i++) {
		const mfs_tensor *t = ctx->in[i];
		size_t row = (size_t)(t->shape.dims[axis] * inner) * es;
		if (!row)
			continue;
		for (int64_t o = 0; o < outer; o++)
			memcpy((char *)out->data + ((size_t)(o * n + pos) * inner) * es,
			       (const char *)t->data + o * row, row);
		pos += t->shape.dims[axis];
	}
	return 0;
}

MFS_OP(Concat, 1, .flags = MFS_OP_STRINGS, .infer = concat_infer, .run = concat_run);

/* Concat: join inputs along one axis (dtype-agnostic byte copies).
 *
 * Rank-4 float inputs may be stored NHWC (MFS_OP_NHWC_OK with
 * MFS_OP_NHWC_ANY_INPUT: every input, whatever its channel count) when
 * all of them are and the axis is the batch or the channels; the output
 * takes input 0's layout.  Why: Inception's, GoogLeNet's and SqueezeNet's
 * blocks join convolutions' outputs along the channels, and a plain
 * Concat between them cost a reorder at each convolution's edges and
 * left the pools after it on their plain loop (GoogLeNet's 13 MaxPools
 * 36% of the run).  Per pixel, each input's channels are one contiguous
 * run of the output's. */
#include <string.h>

#include "op_common.h"

/* Whether ctx's inputs are stored NHWC; -EINVAL when only some are, or
 * along an axis or a type NHWC is not joined in. */
static int concat_nhwc(mfs_op_ctx *ctx, int axis)
{
	int nhwc = 0, n = 0;

	for (int i = 0; i < ctx->n_in; i++) {
		const mfs_tensor *t = ctx->in[i];
		n += t != NULL;
		nhwc += t && t->layout == MFS_LAYOUT_NHWC;
	}
	if (!nhwc)
		return 0;
	if (nhwc != n || (axis != 0 && axis != 1) || ctx->in[0]->dtype != MFS_DT_FLOAT)
		return mfs_op_fail(ctx, EINVAL, "NHWC inputs are joined only all NHWC, float, along axis 0 or 1");
	return 1;
}

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
	if ((rc = oc_check_shape(ctx, &out)) || (rc = concat_nhwc(ctx, axis)) < 0)
		return rc;
	oc_set_out(ctx, 0, first->dtype, &out);
	return 0;
}

/* NHWC inputs into the NHWC output along the channels: per pixel, each
 * input's channels after the ones before it. */
static void concat_channels_nhwc(mfs_op_ctx *ctx, float *y)
{
	const mfs_shape *s = &ctx->out[0]->shape;
	int64_t pixels = s->dims[0] * s->dims[2] * s->dims[3], ct = s->dims[1], pos = 0;

	for (int i = 0; i < ctx->n_in; i++) {
		const float *x = ctx->in[i]->data;
		int64_t ci = ctx->in[i]->shape.dims[1];
		if (!ci)
			continue;
		#pragma omp parallel for schedule(static) if (pixels * ci >= 65536)
		for (int64_t p = 0; p < pixels; p++)
			memcpy(y + p * ct + pos, x + p * ci, sizeof(float) * (size_t)ci);
		pos += ci;
	}
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
	if ((rc = concat_nhwc(ctx, axis)) < 0)
		return rc;
	if (rc && out->layout != MFS_LAYOUT_NHWC)
		return mfs_op_fail(ctx, EINVAL, "NHWC inputs need an NHWC output");
	if (!rc && out->layout != MFS_LAYOUT_PLAIN)
		return mfs_op_fail(ctx, EINVAL, "plain inputs need a plain output");
	if (rc && axis == 1) {
		concat_channels_nhwc(ctx, out->data);
		return 0;
	}
	/* plain, or NHWC along the batch: whole images in turn */
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

MFS_OP(Concat, 1, .flags = MFS_OP_STRINGS | MFS_OP_NHWC_OK | MFS_OP_NHWC_ANY_INPUT,
       .infer = concat_infer, .run = concat_run);

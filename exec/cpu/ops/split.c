/* Split: cut input 0 along an axis into the node's outputs.  Sizes come
 * from the 'split' attribute (opset 2-12), the optional 'split' input (13+),
 * or equal parts; opset 18 adds num_outputs with a smaller last part. */
#include <string.h>

#include "op_common.h"

#define SPLIT_MAX 1024

typedef enum { SIZES_ATTR, SIZES_INPUT, SIZES_INPUT_NUM } sizes_src;

static int split_sizes(mfs_op_ctx *ctx, sizes_src src, int axis, int64_t *sz)
{
	const mfs_tensor *in = ctx->in[0];
	int64_t dim = in->shape.dims[axis], sum = 0;
	int n = ctx->n_out, cnt = 0, rc;

	if (n < 1 || n > SPLIT_MAX)
		return mfs_op_fail(ctx, EINVAL, "%d outputs is not supported", n);
	if (src == SIZES_ATTR && onnx_node_attr(ctx->node, "split")) {
		if ((rc = oc_attr_ints(ctx, "split", sz, SPLIT_MAX, &cnt)))
			return rc;
	} else if (src != SIZES_ATTR && oc_in(ctx, 1)) {
		if ((rc = oc_read_ints(ctx, 1, sz, SPLIT_MAX, &cnt)))
			return rc;
	} else {
		int64_t parts = n, chunk;
		if (src == SIZES_INPUT_NUM && onnx_node_attr(ctx->node, "num_outputs")) {
			parts = onnx_attr_int(ctx->node, "num_outputs", n);
			if (parts != n)
				return mfs_op_fail(ctx, EINVAL,
						   "num_outputs %lld but %d outputs",
						   (long long)parts, n);
			chunk = (dim + parts - 1) / parts;
		} else {
			if (dim % parts)
				return mfs_op_fail(ctx, EINVAL,
						   "axis of size %lld does not split into %d equal parts",
						   (long long)dim, n);
			chunk = dim / parts;
		}
		for (int i = 0; i < n; i++) {
			int64_t left = dim - chunk * i;
			sz[i] = left < 0 ? 0 : left < chunk ? left : chunk;
		}
		return 0;
	}
	if (cnt != n)
		return mfs_op_fail(ctx, EINVAL, "%d split sizes for %d outputs", cnt, n);
	for (int i = 0; i < n; i++) {
		if (sz[i] < 0 || sz[i] > dim)
			return mfs_op_fail(ctx, EINVAL, "split size %lld is invalid",
					   (long long)sz[i]);
		sum += sz[i];
	}
	if (sum != dim)
		return mfs_op_fail(ctx, EINVAL, "split sizes add up to %lld, axis is %lld",
				   (long long)sum, (long long)dim);
	return 0;
}

static int split_infer_common(mfs_op_ctx *ctx, sizes_src src)
{
	OC_CHECK_IO(ctx, 1, false);
	const mfs_tensor *in = ctx->in[0];
	int64_t sz[SPLIT_MAX];
	int axis, rc;

	if ((rc = oc_axis(ctx, onnx_attr_int(ctx->node, "axis", 0), in->shape.rank, &axis)) ||
	    (rc = split_sizes(ctx, src, axis, sz)))
		return rc;
	for (int i = 0; i < ctx->n_out; i++) {
		mfs_shape s = in->shape;
		s.dims[axis] = sz[i];
		oc_set_out(ctx, i, in->dtype, &s);
	}
	return 0;
}

/* Sizes are recomputed at run: a skipped output has no tensor to read its
 * size from, yet still takes its part of the axis. */
static int split_run_sizes(mfs_op_ctx *ctx, sizes_src src)
{
	const mfs_tensor *in = ctx->in[0];
	int64_t sz[SPLIT_MAX], outer, n, inner, pos = 0;
	int axis, rc;
	size_t es;

	if ((rc = oc_axis(ctx, onnx_attr_int(ctx->node, "axis", 0), in->shape.rank, &axis)) ||
	    (rc = oc_elem_size(ctx, in, &es)) ||
	    (rc = split_sizes(ctx, src, axis, sz)))
		return rc;
	oc_split_at(&in->shape, axis, &outer, &n, &inner);
	for (int i = 0; i < ctx->n_out; i++) {
		mfs_tensor *o = ctx->out[i];
		size_t row = (size_t)(sz[i] * inner) * es;
		for (int64_t j = 0; o && row && j < outer; j++)
			memcpy((char *)o->data + j * row,
			       (const char *)in->data + ((size_t)(j * n + pos) * inner) * es, row);
		pos += sz[i];
	}
	return 0;
}

static int split2_infer(mfs_op_ctx *ctx) { return split_infer_common(ctx, SIZES_ATTR); }
static int split13_infer(mfs_op_ctx *ctx) { return split_infer_common(ctx, SIZES_INPUT); }
static int split18_infer(mfs_op_ctx *ctx) { return split_infer_common(ctx, SIZES_INPUT_NUM); }
static int split2_run(mfs_op_ctx *ctx) { return split_run_sizes(ctx, SIZES_ATTR); }
static int split13_run(mfs_op_ctx *ctx) { return split_run_sizes(ctx, SIZES_INPUT); }
static int split18_run(mfs_op_ctx *ctx) { return split_run_sizes(ctx, SIZES_INPUT_NUM); }

MFS_OP(Split, 2, .flags = MFS_OP_STRINGS, .infer = split2_infer, .run = split2_run);
MFS_OP(Split, 13, .flags = MFS_OP_STRINGS, .infer = split13_infer, .run = split13_run);
MFS_OP(Split, 18, .flags = MFS_OP_STRINGS, .infer = split18_infer, .run = split18_run);

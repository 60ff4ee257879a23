/* MaxUnpool (9, 11): the partial inverse of MaxPool.  Y starts as zeros and
 * each X value goes to the flat position its MaxPool index names (indices
 * over the whole N, C, spatial tensor, as MaxPool's Indices output gives).
 * Y's shape is output_shape (input 2, opset 11) when given, else
 *   out = (in - 1) * stride + kernel - pad_begin - pad_end.
 * An index outside Y is an error, not a write out of bounds.  Float and
 * double values, plain layout. */
#include <string.h>

#include "dense_util.h"

/* ys: the output shape; def: the shape the attributes give (the indices
 * count in it). */
static int unpool_shape(mfs_op_ctx *ctx, mfs_shape *ys, mfs_shape *def)
{
	const mfs_tensor *x = ctx->in[0], *ind = ctx->n_in > 1 ? ctx->in[1] : NULL;
	const mfs_tensor *os = ctx->n_in > 2 ? ctx->in[2] : NULL;

	if (!x || !ind)
		return mfs_op_fail(ctx, EINVAL, "needs inputs X and I");
	if (x->dtype != MFS_DT_FLOAT && x->dtype != MFS_DT_DOUBLE)
		return mfs_op_fail(ctx, ENOTSUP, "type %s is not supported", mfs_dtype_onnx_name(x->dtype));
	if (ind->dtype != MFS_DT_INT64 || !mfs_shape_equal(&ind->shape, &x->shape))
		return mfs_op_fail(ctx, EINVAL, "I must be int64 with X's shape");
	if (x->layout != MFS_LAYOUT_PLAIN || ind->layout != MFS_LAYOUT_PLAIN)
		return mfs_op_fail(ctx, EINVAL, "inputs must be in plain layout");
	int nsp = x->shape.rank - 2;
	if (nsp < 1 || nsp > 3)
		return mfs_op_fail(ctx, ENOTSUP, "X of rank %d: only 1-D to 3-D", x->shape.rank);
	const int64_t *k, *st, *pads;
	if (onnx_attr_ints(ctx->node, "kernel_shape", &k) != (size_t)nsp)
		return mfs_op_fail(ctx, EINVAL, "kernel_shape with %d values is required", nsp);
	size_t nst = onnx_attr_ints(ctx->node, "strides", &st);
	size_t np = onnx_attr_ints(ctx->node, "pads", &pads);
	if ((nst && nst != (size_t)nsp) || (np && np != (size_t)(2 * nsp)))
		return mfs_op_fail(ctx, EINVAL, "strides or pads have the wrong length");
	*def = x->shape;
	for (int i = 0; i < nsp; i++) {
		int64_t s = nst ? st[i] : 1, pb = np ? pads[i] : 0, pe = np ? pads[nsp + i] : 0;
		if (s < 1 || k[i] < 1 || pb < 0 || pe < 0 || s > (int64_t)1 << 30 || k[i] > (int64_t)1 << 30)
			return mfs_op_fail(ctx, EINVAL, "bad kernel_shape, strides or pads");
		def->dims[2 + i] = (x->shape.dims[2 + i] - 1) * s + k[i] - pb - pe;
		if (def->dims[2 + i] < 0)
			return mfs_op_fail(ctx, EINVAL, "negative output extent");
	}
	*ys = *def;
	if (os) {
		/* A larger output_shape keeps the indices' coordinates (the
		 * ONNX reference places them top-left aligned). */
		if (os->dtype != MFS_DT_INT64 || os->shape.rank != 1 || os->shape.dims[0] != x->shape.rank)
			return mfs_op_fail(ctx, EINVAL, "output_shape must be int64 [%d]", x->shape.rank);
		if (!os->data)
			return MFS_SHAPE_DEPENDS_ON_DATA;
		for (int i = 0; i < ys->rank; i++) {
			ys->dims[i] = ((const int64_t *)os->data)[i];
			if (ys->dims[i] < 0 || ys->dims[i] > (int64_t)1 << 40)
				return mfs_op_fail(ctx, EINVAL, "output_shape[%d] = %lld", i,
						   (long long)ys->dims[i]);
		}
	}
	return 0;
}

static int unpool_infer(mfs_op_ctx *ctx)
{
	mfs_shape ys, def;
	int rc = unpool_shape(ctx, &ys, &def);
	if (rc != 0)
		return rc;
	ctx->out[0]->dtype = ctx->in[0]->dtype;
	ctx->out[0]->shape = ys;
	return 0;
}

static int unpool_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0], *ind = ctx->in[1];
	mfs_tensor *y = ctx->out[0];
	mfs_shape ys, def;
	int rc = unpool_shape(ctx, &ys, &def);
	if (rc != 0)
		return rc < 0 ? rc : mfs_op_fail(ctx, EINVAL, "output_shape is unknown at run");
	int64_t n = mfs_shape_numel(&x->shape), total = mfs_shape_numel(&def);
	const int64_t *iv = ind->data;
	size_t es = mfs_dtype_size(x->dtype);
	bool same = mfs_shape_equal(&def, &y->shape);

	if (y->nbytes)
		memset(y->data, 0, y->nbytes);
	for (int64_t i = 0; i < n; i++) {
		int64_t at = iv[i];
		if (at < 0 || at >= total)
			return mfs_op_fail(ctx, EINVAL, "index %lld is outside the output (%lld elements)",
					   (long long)at, (long long)total);
		if (!same) {
			/* coordinates in def, position in y */
			int64_t rem = at, pos = 0, mul = 1;
			for (int d = def.rank - 1; d >= 0; d--) {
				int64_t c = rem % def.dims[d];
				rem /= def.dims[d];
				if (c >= y->shape.dims[d])
					return mfs_op_fail(ctx, EINVAL, "index %lld falls outside output_shape",
							   (long long)at);
				pos += c * mul;
				mul *= y->shape.dims[d];
			}
			at = pos;
		}
		memcpy((char *)y->data + at * es, (const char *)x->data + i * es, es);
	}
	return 0;
}

MFS_OP(MaxUnpool, 9, .flags = MFS_OP_HALF_VIA_FLOAT, .infer = unpool_infer, .run = unpool_run);
MFS_OP(MaxUnpool, 11, .flags = MFS_OP_HALF_VIA_FLOAT, .infer = unpool_infer, .run = unpool_run);

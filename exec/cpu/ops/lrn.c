/* LRN (1, 13): local response normalisation across channels,
 *   Y[n,c,...] = X[n,c,...] / (bias + alpha / size * sum(X[n,i,...]^2))^beta
 * over i in [c - floor((size-1)/2), c + ceil((size-1)/2)] clipped to the
 * channels.  Float, plain layout, rank >= 3; OpenMP over N*C planes. */
#include <math.h>

#include "op.h"

static int lrn_infer(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];
	const onnx_attr *size = onnx_node_attr(ctx->node, "size");

	if (!x)
		return mfs_op_fail(ctx, EINVAL, "needs input X");
	if (!size || size->type != ONNX_ATTR_INT || size->i < 1)
		return mfs_op_fail(ctx, EINVAL, "attribute size (a positive int) is required");
	if (x->dtype != MFS_DT_FLOAT)
		return mfs_op_fail(ctx, ENOTSUP, "type %s is not supported (float only)",
				   mfs_dtype_onnx_name(x->dtype));
	if (x->layout != MFS_LAYOUT_PLAIN)
		return mfs_op_fail(ctx, EINVAL, "X must be in plain layout");
	if (x->shape.rank < 3)
		return mfs_op_fail(ctx, EINVAL, "X must have rank >= 3, got %d", x->shape.rank);
	ctx->out[0]->dtype = MFS_DT_FLOAT;
	ctx->out[0]->shape = x->shape;
	return 0;
}

static int lrn_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];
	const float *xd = x->data;
	float *yd = ctx->out[0]->data;
	int64_t size = onnx_attr_int(ctx->node, "size", 1);
	float alpha = onnx_attr_float(ctx->node, "alpha", 1e-4f);
	float beta = onnx_attr_float(ctx->node, "beta", 0.75f);
	float bias = onnx_attr_float(ctx->node, "bias", 1.0f);
	int64_t c = x->shape.dims[1], planes = x->shape.dims[0] * c, sp = 1;
	int64_t lo = (size - 1) / 2, hi = size - 1 - lo;

	for (int i = 2; i < x->shape.rank; i++)
		sp *= x->shape.dims[i];
	#pragma omp parallel for schedule(static)
	for (int64_t pl = 0; pl < planes; pl++) {
		int64_t n = pl / c, ch = pl % c;
		int64_t c0 = ch - lo < 0 ? 0 : ch - lo, c1 = ch + hi >= c ? c - 1 : ch + hi;
		const float *xp = xd + pl * sp;
		float *yp = yd + pl * sp;
		for (int64_t i = 0; i < sp; i++) {
			double sq = 0;
			for (int64_t k = c0; k <= c1; k++) {
				double v = xd[(n * c + k) * sp + i];
				sq += v * v;
			}
			yp[i] = (float)(xp[i] / pow(bias + alpha / (double)size * sq, beta));
		}
	}
	return 0;
}

MFS_OP(LRN, 1, .flags = MFS_OP_HALF_VIA_FLOAT, .infer = lrn_infer, .run = lrn_run);
MFS_OP(LRN, 13, .flags = MFS_OP_HALF_VIA_FLOAT, .infer = lrn_infer, .run = lrn_run);

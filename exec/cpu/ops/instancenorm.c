/* InstanceNormalization (1, 6): per (n, c) plane over the spatial dims,
 * Y = scale[c] * (X - mean) / sqrt(var + epsilon) + B[c] (population
 * variance).  Float, plain layout; OpenMP over the N*C planes.  Opset 1's
 * consumed_inputs attribute has no effect on inference. */
#include <math.h>

#include "op.h"

static int in_infer(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];

	if (ctx->n_in < 3 || !ctx->in[0] || !ctx->in[1] || !ctx->in[2])
		return mfs_op_fail(ctx, EINVAL, "needs inputs X, scale and B");
	if (x->shape.rank < 3)
		return mfs_op_fail(ctx, EINVAL, "X must have rank >= 3 (N, C, D1, ...), got %d",
				   x->shape.rank);
	for (int i = 0; i < 3; i++) {
		if (ctx->in[i]->dtype != MFS_DT_FLOAT)
			return mfs_op_fail(ctx, ENOTSUP, "type %s is not supported (float only)",
					   mfs_dtype_onnx_name(ctx->in[i]->dtype));
		if (ctx->in[i]->layout != MFS_LAYOUT_PLAIN)
			return mfs_op_fail(ctx, EINVAL, "inputs must be in plain layout");
	}
	for (int i = 1; i < 3; i++)
		if (ctx->in[i]->shape.rank != 1 || ctx->in[i]->shape.dims[0] != x->shape.dims[1])
			return mfs_op_fail(ctx, EINVAL, "input %d must have shape [%lld]", i,
					   (long long)x->shape.dims[1]);
	ctx->out[0]->dtype = MFS_DT_FLOAT;
	ctx->out[0]->shape = x->shape;
	return 0;
}

static int in_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];
	const float *xd = x->data, *sc = ctx->in[1]->data, *bi = ctx->in[2]->data;
	float *yd = ctx->out[0]->data;
	float eps = onnx_attr_float(ctx->node, "epsilon", 1e-5f);
	int64_t c = x->shape.dims[1], planes = x->shape.dims[0] * c, sp = 1;

	for (int i = 2; i < x->shape.rank; i++)
		sp *= x->shape.dims[i];
	#pragma omp parallel for schedule(static)
	for (int64_t pl = 0; pl < planes; pl++) {
		const float *xp = xd + pl * sp;
		float *yp = yd + pl * sp;
		double sum = 0, sq = 0;
		for (int64_t i = 0; i < sp; i++)
			sum += xp[i];
		double mean = sp ? sum / (double)sp : 0;
		for (int64_t i = 0; i < sp; i++)
			sq += (xp[i] - mean) * (xp[i] - mean);
		double var = sp ? sq / (double)sp : 0;
		float a = (float)(sc[pl % c] / sqrt(var + eps));
		float b = bi[pl % c] - (float)mean * a;
		for (int64_t i = 0; i < sp; i++)
			yp[i] = xp[i] * a + b;
	}
	return 0;
}

MFS_OP(InstanceNormalization, 1, .flags = MFS_OP_HALF_VIA_FLOAT, .infer = in_infer, .run = in_run);
MFS_OP(InstanceNormalization, 6, .flags = MFS_OP_HALF_VIA_FLOAT, .infer = in_infer, .run = in_run);

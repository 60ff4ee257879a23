/* BatchNormalization (1, 6, 7, 9, 14, 15).
 *
 * Inference: Y = (X - mean) / sqrt(var + epsilon) * scale + B per channel
 * (dim 1 of X [N, C, ...]), folded into Y = X * a[c] + b[c].  Folding is
 * O(C) and done on every run (cheaper than proving the statistics
 * constant); prepare() only allocates the per-channel factors.
 *
 * training_mode = 1 (opset 14+): Y uses the batch statistics (mean and
 * population variance over N and the spatial dims), and the optional
 * outputs running_mean / running_var are input * momentum + batch *
 * (1 - momentum), as the ONNX reference does.  Before opset 14 the extra
 * outputs (training statistics of opsets 6-9) are refused.
 *
 * Opsets < 9 have `spatial`; spatial = 0 (per-element statistics) is
 * refused unless the statistics are per channel anyway.  Float only (the
 * spec's double/float16 are refused with ENOTSUP).  Rank-4 X may be NHWC.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dense_util.h"

typedef struct bn_state {
	int64_t c;
	float *a, *b;                 /* folded per-channel factors */
} bn_state;

static bool bn_training(mfs_op_ctx *ctx)
{
	return ctx->opset >= 14 && onnx_attr_int(ctx->node, "training_mode", 0) != 0;
}

static int bn_infer(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];
	int rc;

	if (ctx->n_in < 5)
		return mfs_op_fail(ctx, EINVAL, "needs 5 inputs (X, scale, B, mean, var), got %d",
				   ctx->n_in);
	for (int i = 0; i < 5; i++)
		if (!ctx->in[i])
			return mfs_op_fail(ctx, EINVAL, "input %d is missing", i);
	if ((rc = mfs_check_layout(ctx, x, "X")) < 0)
		return rc;
	if (x->shape.rank < 2)
		return mfs_op_fail(ctx, EINVAL, "X must have rank >= 2, got %d", x->shape.rank);
	int64_t c = x->shape.dims[1];
	for (int i = 0; i < 5; i++) {
		if (ctx->in[i]->dtype != MFS_DT_FLOAT)
			return mfs_op_fail(ctx, ENOTSUP, "input %d: type %s is not supported (float only)",
					   i, mfs_dtype_onnx_name(ctx->in[i]->dtype));
		if (i && (mfs_shape_numel(&ctx->in[i]->shape) != c ||
			  ctx->in[i]->layout != MFS_LAYOUT_PLAIN))
			return mfs_op_fail(ctx, i && ctx->opset < 9 &&
					   onnx_attr_int(ctx->node, "spatial", 1) == 0 ? ENOTSUP : EINVAL,
					   "input %d must hold %lld values (one per channel)", i,
					   (long long)c);
	}
	bool train = bn_training(ctx);
	for (int i = 1; i < ctx->n_out; i++)
		if (ctx->out[i] && (!train || i > 2))
			return mfs_op_fail(ctx, ENOTSUP, "output %d (training statistics) is only "
					   "supported with training_mode = 1, outputs 1 and 2", i);
	ctx->out[0]->dtype = MFS_DT_FLOAT;
	ctx->out[0]->shape = x->shape;
	for (int i = 1; i < ctx->n_out && i < 3; i++)
		if (ctx->out[i]) {
			ctx->out[i]->dtype = MFS_DT_FLOAT;
			ctx->out[i]->shape = (mfs_shape){ .rank = 1, .dims = { c } };
		}
	return 0;
}

static void bn_release(void *state)
{
	bn_state *s = state;
	if (!s)
		return;
	free(s->a);
	free(s->b);
	free(s);
}

/* Fold scale/B/mean/var into a, b. */
static void bn_fold(const float *sc, const float *bi, const float *mean, const float *var,
		    float eps, int64_t c, float *a, float *b)
{
	for (int64_t i = 0; i < c; i++) {
		float inv = 1.0f / sqrtf(var[i] + eps);
		a[i] = sc[i] * inv;
		b[i] = bi[i] - mean[i] * sc[i] * inv;
	}
}

static int bn_state_get(mfs_op_ctx *ctx, int64_t c, bn_state **out)
{
	bn_state *s = *ctx->state;
	if (s && s->c != c) {
		bn_release(s);
		*ctx->state = s = NULL;
	}
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s || !(s->a = malloc(sizeof(float) * (size_t)(c ? c : 1))) ||
		    !(s->b = malloc(sizeof(float) * (size_t)(c ? c : 1)))) {
			bn_release(s);
			return mfs_op_fail(ctx, ENOMEM, "out of memory");
		}
		s->c = c;
		*ctx->state = s;
	}
	*out = s;
	return 0;
}

static int bn_prepare(mfs_op_ctx *ctx)
{
	bn_state *s;
	return bn_state_get(ctx, ctx->in[0]->shape.dims[1], &s);
}

/* Y = X * a + b over N, C, S (plain or NHWC storage). */
static void bn_apply(const float *x, float *y, const float *a, const float *b, int64_t n,
		     int64_t c, int64_t sp, bool nhwc)
{
	if (nhwc) {
		#pragma omp parallel for schedule(static)
		for (int64_t r = 0; r < n * sp; r++) {
			const float *xr = x + r * c;
			float *yr = y + r * c;
			for (int64_t ch = 0; ch < c; ch++)
				yr[ch] = xr[ch] * a[ch] + b[ch];
		}
	} else {
		#pragma omp parallel for schedule(static)
		for (int64_t pl = 0; pl < n * c; pl++) {
			int64_t ch = pl % c;
			const float *xr = x + pl * sp;
			float *yr = y + pl * sp;
			float aa = a[ch], bb = b[ch];
			for (int64_t i = 0; i < sp; i++)
				yr[i] = xr[i] * aa + bb;
		}
	}
}

static int bn_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];
	mfs_tensor *y = ctx->out[0];
	float eps = onnx_attr_float(ctx->node, "epsilon", 1e-5f);
	int64_t n = x->shape.dims[0], c = x->shape.dims[1], sp = 1;
	bool nhwc = x->layout == MFS_LAYOUT_NHWC;
	const float *sc = ctx->in[1]->data, *bi = ctx->in[2]->data;
	const float *mean = ctx->in[3]->data, *var = ctx->in[4]->data;
	bn_state *s;
	int rc;

	if (y->layout != x->layout)
		return mfs_op_fail(ctx, EINVAL, "output layout %d differs from the input's %d",
				   (int)y->layout, (int)x->layout);
	for (int i = 2; i < x->shape.rank; i++)
		sp *= x->shape.dims[i];
	if ((rc = bn_state_get(ctx, c, &s)) < 0)
		return rc;

	if (!bn_training(ctx)) {
		bn_fold(sc, bi, mean, var, eps, c, s->a, s->b);
		bn_apply(x->data, y->data, s->a, s->b, n, c, sp, nhwc);
		return 0;
	}

	/* Training mode: batch statistics. */
	float momentum = onnx_attr_float(ctx->node, "momentum", 0.9f);
	const float *xd = x->data;
	int64_t cnt = n * sp;
	for (int64_t ch = 0; ch < c; ch++) {
		double sum = 0, sq = 0;
		for (int64_t b = 0; b < n; b++)
			for (int64_t i = 0; i < sp; i++) {
				double v = nhwc ? xd[(b * sp + i) * c + ch] : xd[(b * c + ch) * sp + i];
				sum += v;
				sq += v * v;
			}
		double m = cnt ? sum / (double)cnt : 0, v = cnt ? sq / (double)cnt - m * m : 0;
		if (v < 0)
			v = 0;
		float inv = 1.0f / sqrtf((float)v + eps);
		s->a[ch] = sc[ch] * inv;
		s->b[ch] = bi[ch] - (float)m * sc[ch] * inv;
		if (ctx->n_out > 1 && ctx->out[1])
			((float *)ctx->out[1]->data)[ch] = mean[ch] * momentum + (float)m * (1 - momentum);
		if (ctx->n_out > 2 && ctx->out[2])
			((float *)ctx->out[2]->data)[ch] = var[ch] * momentum + (float)v * (1 - momentum);
	}
	bn_apply(x->data, y->data, s->a, s->b, n, c, sp, nhwc);
	return 0;
}

MFS_OP(BatchNormalization, 1, .flags = MFS_OP_NHWC_OK | MFS_OP_HALF_VIA_FLOAT, .infer = bn_infer,
       .prepare = bn_prepare, .run = bn_run, .release = bn_release);
MFS_OP(BatchNormalization, 6, .flags = MFS_OP_NHWC_OK | MFS_OP_HALF_VIA_FLOAT, .infer = bn_infer,
       .prepare = bn_prepare, .run = bn_run, .release = bn_release);
MFS_OP(BatchNormalization, 7, .flags = MFS_OP_NHWC_OK | MFS_OP_HALF_VIA_FLOAT, .infer = bn_infer,
       .prepare = bn_prepare, .run = bn_run, .release = bn_release);
MFS_OP(BatchNormalization, 9, .flags = MFS_OP_NHWC_OK | MFS_OP_HALF_VIA_FLOAT, .infer = bn_infer,
       .prepare = bn_prepare, .run = bn_run, .release = bn_release);
MFS_OP(BatchNormalization, 14, .flags = MFS_OP_NHWC_OK | MFS_OP_HALF_VIA_FLOAT, .infer = bn_infer,
       .prepare = bn_prepare, .run = bn_run, .release = bn_release);
MFS_OP(BatchNormalization, 15, .flags = MFS_OP_NHWC_OK | MFS_OP_HALF_VIA_FLOAT, .infer = bn_infer,
       .prepare = bn_prepare, .run = bn_run, .release = bn_release);

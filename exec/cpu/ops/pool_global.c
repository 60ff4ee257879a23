/* GlobalAveragePool (1), GlobalMaxPool (1), GlobalLpPool (1, 2): reduce
 * every spatial dim of X [N, C, ...] to 1 -> Y [N, C, 1, ...].
 *
 * Float and double; rank-4 float X may be NHWC (MFS_OP_NHWC_OK).  Y holds
 * one value per (n, c), and [N, 1, 1, C] (NHWC) and [N, C, 1, 1] (plain)
 * are the same bytes: the output layout needs no transposition.  OpenMP
 * over N*C planes.
 */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "dense_util.h"

enum gkind { G_AVG, G_MAX, G_LP };

static int global_infer(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];
	int rc;

	if (!x)
		return mfs_op_fail(ctx, EINVAL, "needs input X");
	if ((rc = mfs_check_layout(ctx, x, "X")) < 0)
		return rc;
	if (x->shape.rank < 2)
		return mfs_op_fail(ctx, EINVAL, "X must have rank >= 2 (N, C, ...), got %d",
				   x->shape.rank);
	if (x->dtype != MFS_DT_FLOAT && x->dtype != MFS_DT_DOUBLE)
		return mfs_op_fail(ctx, ENOTSUP, "type %s is not supported",
				   mfs_dtype_onnx_name(x->dtype));
	if (x->layout == MFS_LAYOUT_NHWC && x->dtype != MFS_DT_FLOAT)
		return mfs_op_fail(ctx, EINVAL, "NHWC layout only for float");
	ctx->out[0]->dtype = x->dtype;
	ctx->out[0]->shape = x->shape;
	for (int i = 2; i < x->shape.rank; i++)
		ctx->out[0]->shape.dims[i] = 1;
	return 0;
}

static double lp_term(double v, double p)
{
	double a = fabs(v);
	return p == 1 ? a : p == 2 ? a * a : pow(a, p);
}

static double lp_final(double acc, double p)
{
	return p == 1 ? acc : p == 2 ? sqrt(acc) : pow(acc, 1.0 / p);
}

#define GLOBAL_PLAIN(T, NAME)                                                   \
static void NAME(enum gkind k, double p, const T *x, T *y, int64_t planes,      \
		 int64_t s)                                                     \
{                                                                               \
	_Pragma("omp parallel for schedule(static)")                            \
	for (int64_t pl = 0; pl < planes; pl++) {                               \
		const T *xp = x + pl * s;                                       \
		double acc = 0;                                                 \
		T best = s ? xp[0] : 0;                                         \
		for (int64_t i = 0; i < s; i++) {                               \
			if (k == G_AVG)                                         \
				acc += xp[i];                                   \
			else if (k == G_MAX)                                    \
				best = xp[i] > best ? xp[i] : best;             \
			else                                                    \
				acc += lp_term(xp[i], p);                       \
		}                                                               \
		y[pl] = k == G_MAX ? best : k == G_AVG ? (T)(s ? acc / (double)s : 0) \
			: (T)lp_final(acc, p);                                  \
	}                                                                       \
}
GLOBAL_PLAIN(float, global_f32)
GLOBAL_PLAIN(double, global_f64)

/* Average or max over NHWC pixels, channels innermost: each pixel's row
 * of channels is added into a block of per-channel accumulators, one
 * vector operation per row, instead of one strided scalar chain per
 * channel (MobileNetV2's pool: 1280 channels of 49 pixels, 60-70 us
 * that way).  Each channel still sums its pixels in order, in double:
 * the same result as the loop below. */
#define GLOBAL_CBLOCK 256
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static void global_nhwc_rows(bool avg, const float *x, float *y, int64_t n, int64_t c,
			     int64_t s)
{
	const int64_t blocks = (c + GLOBAL_CBLOCK - 1) / GLOBAL_CBLOCK;

	#pragma omp parallel for collapse(2) schedule(static) if (n * c * s > 262144)
	for (int64_t b = 0; b < n; b++)
		for (int64_t cb = 0; cb < blocks; cb++) {
			const int64_t c0 = cb * GLOBAL_CBLOCK;
			const int64_t cn = c - c0 < GLOBAL_CBLOCK ? c - c0 : GLOBAL_CBLOCK;
			const float *xb = x + b * s * c + c0;
			double acc[GLOBAL_CBLOCK];
			float best[GLOBAL_CBLOCK];
			for (int64_t ch = 0; ch < cn; ch++) {
				acc[ch] = 0;
				best[ch] = xb[ch];
			}
			for (int64_t i = 0; i < s; i++) {
				const float *row = xb + i * c;
				if (avg) {
					#pragma omp simd
					for (int64_t ch = 0; ch < cn; ch++)
						acc[ch] += row[ch];
				} else {
					#pragma omp simd
					for (int64_t ch = 0; ch < cn; ch++)
						best[ch] = row[ch] > best[ch] ? row[ch] : best[ch];
				}
			}
			for (int64_t ch = 0; ch < cn; ch++)
				y[b * c + c0 + ch] = avg ? (float)(acc[ch] / (double)s) : best[ch];
		}
}

static void global_nhwc(enum gkind k, double p, const float *x, float *y, int64_t n,
			int64_t c, int64_t s)
{
	if (k != G_LP && s > 0) {
		global_nhwc_rows(k == G_AVG, x, y, n, c, s);
		return;
	}
	#pragma omp parallel for collapse(2) schedule(static)
	for (int64_t b = 0; b < n; b++)
		for (int64_t ch = 0; ch < c; ch++) {
			const float *xp = x + b * s * c + ch;
			double acc = 0;
			float best = s ? xp[0] : 0;
			for (int64_t i = 0; i < s; i++) {
				float v = xp[i * c];
				if (k == G_AVG)
					acc += v;
				else if (k == G_MAX)
					best = v > best ? v : best;
				else
					acc += lp_term(v, p);
			}
			y[b * c + ch] = k == G_MAX ? best : k == G_AVG ? (float)(s ? acc / (double)s : 0)
				: (float)lp_final(acc, p);
		}
}

static int global_run(mfs_op_ctx *ctx, enum gkind k)
{
	const mfs_tensor *x = ctx->in[0];
	int64_t n = x->shape.dims[0], c = x->shape.dims[1], s = 1;
	double p = 2;

	for (int i = 2; i < x->shape.rank; i++)
		s *= x->shape.dims[i];
	if (k == G_LP) {
		const onnx_attr *pa = onnx_node_attr(ctx->node, "p");
		p = !pa ? 2 : pa->type == ONNX_ATTR_FLOAT ? pa->f : (double)pa->i;
		if (!(p >= 1))
			return mfs_op_fail(ctx, EINVAL, "p must be >= 1");
	}
	if (x->layout == MFS_LAYOUT_NHWC)
		global_nhwc(k, p, x->data, ctx->out[0]->data, n, c, s);
	else if (x->dtype == MFS_DT_FLOAT)
		global_f32(k, p, x->data, ctx->out[0]->data, n * c, s);
	else
		global_f64(k, p, x->data, ctx->out[0]->data, n * c, s);
	return 0;
}

static int gavg_run(mfs_op_ctx *ctx) { return global_run(ctx, G_AVG); }
static int gmax_run(mfs_op_ctx *ctx) { return global_run(ctx, G_MAX); }
static int glp_run(mfs_op_ctx *ctx) { return global_run(ctx, G_LP); }

MFS_OP(GlobalAveragePool, 1, .flags = MFS_OP_NHWC_OK | MFS_OP_HALF_VIA_FLOAT, .infer = global_infer, .run = gavg_run);
MFS_OP(GlobalMaxPool, 1, .flags = MFS_OP_NHWC_OK | MFS_OP_HALF_VIA_FLOAT, .infer = global_infer, .run = gmax_run);
MFS_OP(GlobalLpPool, 1, .flags = MFS_OP_NHWC_OK | MFS_OP_HALF_VIA_FLOAT, .infer = global_infer, .run = glp_run);
MFS_OP(GlobalLpPool, 2, .flags = MFS_OP_NHWC_OK | MFS_OP_HALF_VIA_FLOAT, .infer = global_infer, .run = glp_run);

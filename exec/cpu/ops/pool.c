/* MaxPool (1, 8, 10, 11, 12), AveragePool (1, 7, 10, 11, 19), LpPool (1, 2,
 * 11, 18): sliding-window pools over 1-D, 2-D and 3-D inputs.
 *
 * Window geometry (kernel_shape, strides, pads, auto_pad, dilations,
 * ceil_mode) comes from dense_util.c; an attribute a version does not have
 * is refused if present (dilations on MaxPool < 10, AveragePool < 19,
 * LpPool < 18; ceil_mode likewise), never silently ignored.
 *
 * MaxPool: float, double, int8, uint8; optional second output Indices
 * (int64, flat index into X including batch and channel; storage_order 1
 * indexes the spatial part column-major).  Padding never wins a max.
 * AveragePool: count_include_pad counts the explicit padding (but not the
 * extra positions ceil_mode adds past it, as ONNX Runtime and the ONNX
 * reference do).  LpPool: (sum |x|^p)^(1/p), padding counts as zero.
 *
 * Loops of our own, parallel (OpenMP) over N*C planes, or for NHWC data
 * over output rows with channels innermost (contiguous, vectorisable).
 * Rank-4 float input may be NHWC (MFS_OP_NHWC_OK); the output takes the
 * layout the engine set on ctx->out[0].
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dense_util.h"

enum pool_kind { POOL_MAX, POOL_AVG, POOL_LP };

typedef struct pool_params {
	enum pool_kind kind;
	mfs_window w;
	int64_t n, c, isize, osize;
	bool count_include_pad;
	bool col_major;          /* MaxPool storage_order 1 */
	int64_t p;               /* LpPool */
} pool_params;

/* Widened 3-D geometry used by the loops. */
typedef struct win3 {
	int64_t in[3], k[3], st[3], dl[3], pb[3], pe[3], out[3];
} win3;

static void to_win3(const mfs_window *w, win3 *g)
{
	int off = 3 - w->nsp;
	for (int i = 0; i < 3; i++) {
		int j = i - off;
		g->in[i] = j >= 0 ? w->in[j] : 1;
		g->k[i] = j >= 0 ? w->k[j] : 1;
		g->st[i] = j >= 0 ? w->stride[j] : 1;
		g->dl[i] = j >= 0 ? w->dil[j] : 1;
		g->pb[i] = j >= 0 ? w->pad_b[j] : 0;
		g->pe[i] = j >= 0 ? w->pad_e[j] : 0;
		g->out[i] = j >= 0 ? w->out[j] : 1;
	}
}

static int pool_params_get(mfs_op_ctx *ctx, enum pool_kind kind, pool_params *p)
{
	const mfs_tensor *x = ctx->in[0];
	const char *op = ctx->node->op_type;
	int64_t since_dil = kind == POOL_MAX ? 10 : kind == POOL_AVG ? 19 : 18;
	int rc;

	memset(p, 0, sizeof(*p));
	p->kind = kind;
	if (!x)
		return mfs_op_fail(ctx, EINVAL, "needs input X");
	if ((rc = mfs_check_layout(ctx, x, "X")) < 0)
		return rc;
	if (x->shape.rank < 3 || x->shape.rank > 5)
		return mfs_op_fail(ctx, ENOTSUP, "X of rank %d: only 1-D, 2-D and 3-D pooling",
				   x->shape.rank);
	mfs_dtype dt = x->dtype;
	if (kind == POOL_MAX) {
		if (dt != MFS_DT_FLOAT && dt != MFS_DT_DOUBLE && dt != MFS_DT_INT8 && dt != MFS_DT_UINT8)
			return mfs_op_fail(ctx, ENOTSUP, "type %s is not supported", mfs_dtype_onnx_name(dt));
	} else if (dt != MFS_DT_FLOAT && dt != MFS_DT_DOUBLE) {
		return mfs_op_fail(ctx, ENOTSUP, "type %s is not supported", mfs_dtype_onnx_name(dt));
	}
	if (x->layout == MFS_LAYOUT_NHWC && dt != MFS_DT_FLOAT)
		return mfs_op_fail(ctx, EINVAL, "NHWC layout only for float");
	if (ctx->opset < since_dil && onnx_node_attr(ctx->node, "dilations"))
		return mfs_op_fail(ctx, EINVAL, "attribute dilations needs opset %lld (model has %lld)",
				   (long long)since_dil, (long long)ctx->opset);
	int64_t ceil_mode = onnx_attr_int(ctx->node, "ceil_mode", 0);
	if (ceil_mode && kind != POOL_LP && ctx->opset < 10)
		return mfs_op_fail(ctx, EINVAL, "attribute ceil_mode needs opset 10");
	if (ceil_mode && kind == POOL_LP && ctx->opset < 18)
		return mfs_op_fail(ctx, EINVAL, "attribute ceil_mode needs opset 18");
	if (ceil_mode != 0 && ceil_mode != 1)
		return mfs_op_fail(ctx, EINVAL, "ceil_mode must be 0 or 1");
	if ((rc = mfs_window_init(ctx, &x->shape, NULL, true, ceil_mode != 0, &p->w)) < 0)
		return rc;
	p->n = x->shape.dims[0];
	p->c = x->shape.dims[1];
	p->isize = 1;
	for (int i = 0; i < p->w.nsp; i++)
		p->isize *= p->w.in[i];
	p->osize = mfs_window_out_size(&p->w);
	p->count_include_pad = onnx_attr_int(ctx->node, "count_include_pad", 0) != 0;
	int64_t so = onnx_attr_int(ctx->node, "storage_order", 0);
	if (so != 0 && so != 1)
		return mfs_op_fail(ctx, EINVAL, "storage_order must be 0 or 1");
	p->col_major = so == 1;
	if (kind == POOL_LP) {
		/* LpPool-1 had p as a float attribute. */
		const onnx_attr *pa = onnx_node_attr(ctx->node, "p");
		p->p = !pa ? 2 : pa->type == ONNX_ATTR_FLOAT ? (int64_t)pa->f : pa->i;
		if (p->p < 1)
			return mfs_op_fail(ctx, EINVAL, "p = %lld must be positive", (long long)p->p);
	}
	if (ctx->n_out > 1 && ctx->out[1] && kind != POOL_MAX)
		return mfs_op_fail(ctx, EINVAL, "%s has one output", op);
	return 0;
}

static int pool_infer_kind(mfs_op_ctx *ctx, enum pool_kind kind)
{
	pool_params p;
	int rc = pool_params_get(ctx, kind, &p);
	if (rc < 0)
		return rc;
	mfs_shape ys = { .rank = 2 + p.w.nsp, .dims = { p.n, p.c } };
	for (int i = 0; i < p.w.nsp; i++)
		ys.dims[2 + i] = p.w.out[i];
	ctx->out[0]->dtype = ctx->in[0]->dtype;
	ctx->out[0]->shape = ys;
	if (ctx->n_out > 1 && ctx->out[1]) {
		ctx->out[1]->dtype = MFS_DT_INT64;
		ctx->out[1]->shape = ys;
	}
	return 0;
}

/* One (n, c) plane, plain layout.  T: element type; the max keeps the
 * first position of the maximum (as numpy's argmax and the ONNX reference). */
#define POOL_PLANE(T, NAME)                                                          \
static void NAME(const pool_params *p, const win3 *g, const T *x, T *y, int64_t *ind, \
		 int64_t ioff, double (*lp)(double, int64_t))                        \
{                                                                                    \
	for (int64_t od = 0; od < g->out[0]; od++)                                   \
	for (int64_t oh = 0; oh < g->out[1]; oh++)                                   \
	for (int64_t ow = 0; ow < g->out[2]; ow++) {                                 \
		int64_t d0 = od * g->st[0] - g->pb[0], h0 = oh * g->st[1] - g->pb[1];   \
		int64_t w0 = ow * g->st[2] - g->pb[2];                               \
		double acc = 0;                                                      \
		T best = 0;                                                          \
		int64_t besti = -1, cnt = 0, cnt_pad = 0;                            \
		for (int64_t kd = 0; kd < g->k[0]; kd++) {                           \
			int64_t id = d0 + kd * g->dl[0];                             \
			if (id < -g->pb[0] || id >= g->in[0] + g->pe[0])             \
				continue;                                            \
			bool din = id >= 0 && id < g->in[0];                         \
			for (int64_t kh = 0; kh < g->k[1]; kh++) {                   \
				int64_t ih = h0 + kh * g->dl[1];                     \
				if (ih < -g->pb[1] || ih >= g->in[1] + g->pe[1])     \
					continue;                                    \
				bool hin = din && ih >= 0 && ih < g->in[1];          \
				for (int64_t kw = 0; kw < g->k[2]; kw++) {           \
					int64_t iw = w0 + kw * g->dl[2];             \
					if (iw < -g->pb[2] || iw >= g->in[2] + g->pe[2]) \
						continue;                            \
					cnt_pad++;                                   \
					if (!hin || iw < 0 || iw >= g->in[2])        \
						continue;                            \
					int64_t i = (id * g->in[1] + ih) * g->in[2] + iw; \
					T v = x[i];                                  \
					cnt++;                                       \
					if (p->kind == POOL_MAX) {                   \
						if (besti < 0 || v > best) {         \
							best = v;                    \
							besti = p->col_major ?       \
								(iw * g->in[1] + ih) * g->in[0] + id : i; \
						}                                    \
					} else if (p->kind == POOL_AVG) {            \
						acc += (double)v;                    \
					} else {                                     \
						acc += lp((double)v, p->p);          \
					}                                            \
				}                                                    \
			}                                                            \
		}                                                                    \
		int64_t o = (od * g->out[1] + oh) * g->out[2] + ow;                  \
		if (p->kind == POOL_MAX) {                                           \
			y[o] = besti >= 0 ? best : 0;                                \
			if (ind)                                                     \
				ind[o] = ioff + (besti >= 0 ? besti : 0);            \
		} else if (p->kind == POOL_AVG) {                                    \
			int64_t div = p->count_include_pad ? cnt_pad : cnt;          \
			y[o] = (T)(div ? acc / (double)div : 0.0);                   \
		} else {                                                             \
			y[o] = (T)(p->p == 1 ? acc : p->p == 2 ? sqrt(acc)           \
				   : pow(acc, 1.0 / (double)p->p));                  \
		}                                                                    \
	}                                                                            \
}
POOL_PLANE(float, plane_f32)
POOL_PLANE(double, plane_f64)
POOL_PLANE(int8_t, plane_i8)
POOL_PLANE(uint8_t, plane_u8)

static double lp_pow(double v, int64_t p)
{
	double a = fabs(v);
	return p == 1 ? a : p == 2 ? a * a : pow(a, (double)p);
}

/* MaxPool, NHWC float in and out (a CNN's stem pool): each output pixel
 * is the element-wise max of its window's valid pixels, C contiguous
 * floats each, written straight into y.  The general loop below spent
 * 0.7 ms of ResNet-18's 17 ms here (a per-thread max array, the pool kind
 * tested at every tap, no vectors across channels). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
/* built for AVX-512 and AVX2 too: ResNet's stem pool 0.17 -> 0.10 ms */
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static void maxpool_nhwc(const win3 *g, int64_t N, int64_t C, const float *restrict x,
			 float *restrict y)
{
	#pragma omp parallel for collapse(2) schedule(static)
	for (int64_t n = 0; n < N; n++)
	for (int64_t oh = 0; oh < g->out[1]; oh++)
	for (int64_t ow = 0; ow < g->out[2]; ow++) {
		float *restrict yo = y + ((n * g->out[1] + oh) * g->out[2] + ow) * C;
		int64_t h0 = oh * g->st[1] - g->pb[1], w0 = ow * g->st[2] - g->pb[2];
		bool any = false;
		for (int64_t kh = 0; kh < g->k[1]; kh++) {
			int64_t ih = h0 + kh * g->dl[1];
			if (ih < 0 || ih >= g->in[1])
				continue;
			for (int64_t kw = 0; kw < g->k[2]; kw++) {
				int64_t iw = w0 + kw * g->dl[2];
				if (iw < 0 || iw >= g->in[2])
					continue;
				const float *restrict xv = x + ((n * g->in[1] + ih) * g->in[2] + iw) * C;
				if (!any) {
					/* the first valid pixel, as the plain loop
					 * takes it (a -inf or NaN there stays) */
					memcpy(yo, xv, sizeof(float) * (size_t)C);
					any = true;
					continue;
				}
				#pragma omp simd
				for (int64_t c = 0; c < C; c++)
					yo[c] = xv[c] > yo[c] ? xv[c] : yo[c];
			}
		}
		if (!any)   /* a window of padding only (as the general loop) */
			memset(yo, 0, sizeof(float) * (size_t)C);
	}
}

/* NHWC float: channels innermost; y is NHWC (ynhwc) or plain. */
static void pool_nhwc(const pool_params *p, const win3 *g, const float *x, float *y,
		      bool ynhwc)
{
	int64_t C = p->c;

	#pragma omp parallel
	{
		double *acc = malloc(sizeof(double) * (size_t)(C ? C : 1));
		float *best = malloc(sizeof(float) * (size_t)(C ? C : 1));
		if (acc && best) {
			#pragma omp for collapse(2) schedule(static)
			for (int64_t n = 0; n < p->n; n++)
			for (int64_t oh = 0; oh < g->out[1]; oh++)
			for (int64_t ow = 0; ow < g->out[2]; ow++) {
				int64_t h0 = oh * g->st[1] - g->pb[1], w0 = ow * g->st[2] - g->pb[2];
				int64_t cnt = 0, cnt_pad = 0;
				for (int64_t c = 0; c < C; c++) {
					acc[c] = 0;
					best[c] = -FLT_MAX;
				}
				for (int64_t kh = 0; kh < g->k[1]; kh++) {
					int64_t ih = h0 + kh * g->dl[1];
					if (ih < -g->pb[1] || ih >= g->in[1] + g->pe[1])
						continue;
					for (int64_t kw = 0; kw < g->k[2]; kw++) {
						int64_t iw = w0 + kw * g->dl[2];
						if (iw < -g->pb[2] || iw >= g->in[2] + g->pe[2])
							continue;
						cnt_pad++;
						if (ih < 0 || ih >= g->in[1] || iw < 0 || iw >= g->in[2])
							continue;
						cnt++;
						const float *xv = x + ((n * g->in[1] + ih) * g->in[2] + iw) * C;
						if (p->kind == POOL_MAX)
							for (int64_t c = 0; c < C; c++)
								best[c] = xv[c] > best[c] ? xv[c] : best[c];
						else if (p->kind == POOL_AVG)
							for (int64_t c = 0; c < C; c++)
								acc[c] += xv[c];
						else
							for (int64_t c = 0; c < C; c++)
								acc[c] += lp_pow(xv[c], p->p);
					}
				}
				int64_t opos = oh * g->out[2] + ow, osz = g->out[1] * g->out[2];
				int64_t div = p->count_include_pad ? cnt_pad : cnt;
				for (int64_t c = 0; c < C; c++) {
					float v;
					if (p->kind == POOL_MAX)
						v = cnt ? best[c] : 0.0f;
					else if (p->kind == POOL_AVG)
						v = div ? (float)(acc[c] / (double)div) : 0.0f;
					else
						v = (float)(p->p == 1 ? acc[c] : p->p == 2 ? sqrt(acc[c])
							    : pow(acc[c], 1.0 / (double)p->p));
					if (ynhwc)
						y[(n * osz + opos) * C + c] = v;
					else
						y[(n * C + c) * osz + opos] = v;
				}
			}
		}
		free(acc);
		free(best);
	}
}

static int pool_run_kind(mfs_op_ctx *ctx, enum pool_kind kind)
{
	const mfs_tensor *x = ctx->in[0];
	mfs_tensor *y = ctx->out[0];
	mfs_tensor *ind = ctx->n_out > 1 ? ctx->out[1] : NULL;
	pool_params p;
	win3 g;
	int rc = pool_params_get(ctx, kind, &p);

	if (rc < 0)
		return rc;
	to_win3(&p.w, &g);
	if (y->layout != MFS_LAYOUT_PLAIN && !(y->layout == MFS_LAYOUT_NHWC && p.w.nsp == 2 &&
					       x->dtype == MFS_DT_FLOAT))
		return mfs_op_fail(ctx, EINVAL, "output layout %d is not supported", (int)y->layout);
	/* Nothing to write; or windows over an empty X that would hold only
	 * padding, which no pooling kind gives a value for. */
	if (p.n * p.c == 0 || p.osize == 0)
		return 0;
	if (p.isize == 0)
		return mfs_op_fail(ctx, EINVAL, "X has an empty spatial dim but the output does not");
	if (x->layout == MFS_LAYOUT_NHWC && !ind && kind == POOL_MAX && y->layout == MFS_LAYOUT_NHWC) {
		maxpool_nhwc(&g, p.n, p.c, x->data, y->data);
		return 0;
	}
	if (x->layout == MFS_LAYOUT_NHWC && !ind) {
		pool_nhwc(&p, &g, x->data, y->data, y->layout == MFS_LAYOUT_NHWC);
		return 0;
	}
	if (x->layout == MFS_LAYOUT_NHWC) {
		/* Indices count in NCHW order: pool a plain copy. */
		size_t nb = (size_t)(p.n * p.c * p.isize) * sizeof(float);
		float *tmp = malloc(nb ? nb : 1);
		if (!tmp)
			return mfs_op_fail(ctx, ENOMEM, "out of memory");
		mfs_nhwc_to_nchw(x->data, tmp, p.n, p.c, p.isize);
		mfs_tensor t = *x;
		t.data = tmp;
		t.layout = MFS_LAYOUT_PLAIN;
		mfs_tensor *ins[1] = { &t };
		mfs_op_ctx c2 = *ctx;
		c2.in = ins;
		c2.n_in = 1;
		rc = pool_run_kind(&c2, kind);
		free(tmp);
		return rc;
	}
	if (y->layout == MFS_LAYOUT_NHWC) {
		/* Plain in, NHWC out: pool plain into the output buffer's
		 * twin, then transpose.  Rare (the engine converts at edges). */
		size_t nb = (size_t)(p.n * p.c * p.osize) * sizeof(float);
		float *tmp = malloc(nb ? nb : 1);
		if (!tmp)
			return mfs_op_fail(ctx, ENOMEM, "out of memory");
		mfs_tensor t = *y;
		t.data = tmp;
		t.layout = MFS_LAYOUT_PLAIN;
		mfs_tensor *outs[2] = { &t, ind };
		mfs_op_ctx c2 = *ctx;
		c2.out = outs;
		c2.n_out = ind ? 2 : 1;
		rc = pool_run_kind(&c2, kind);
		if (rc == 0)
			mfs_nchw_to_nhwc(tmp, y->data, p.n, p.c, p.osize);
		free(tmp);
		return rc;
	}

	size_t es = mfs_dtype_size(x->dtype);
	int64_t planes = p.n * p.c;
	#pragma omp parallel for schedule(static)
	for (int64_t pl = 0; pl < planes; pl++) {
		const char *xp = (const char *)x->data + (size_t)(pl * p.isize) * es;
		char *yp = (char *)y->data + (size_t)(pl * p.osize) * es;
		int64_t *ip = ind ? (int64_t *)ind->data + pl * p.osize : NULL;
		switch (x->dtype) {
		case MFS_DT_FLOAT: plane_f32(&p, &g, (const float *)xp, (float *)yp, ip, pl * p.isize, lp_pow); break;
		case MFS_DT_DOUBLE: plane_f64(&p, &g, (const double *)xp, (double *)yp, ip, pl * p.isize, lp_pow); break;
		case MFS_DT_INT8: plane_i8(&p, &g, (const int8_t *)xp, (int8_t *)yp, ip, pl * p.isize, lp_pow); break;
		default: plane_u8(&p, &g, (const uint8_t *)xp, (uint8_t *)yp, ip, pl * p.isize, lp_pow); break;
		}
	}
	return 0;
}

static int maxpool_infer(mfs_op_ctx *ctx) { return pool_infer_kind(ctx, POOL_MAX); }
static int maxpool_run(mfs_op_ctx *ctx) { return pool_run_kind(ctx, POOL_MAX); }
static int avgpool_infer(mfs_op_ctx *ctx) { return pool_infer_kind(ctx, POOL_AVG); }
static int avgpool_run(mfs_op_ctx *ctx) { return pool_run_kind(ctx, POOL_AVG); }
static int lppool_infer(mfs_op_ctx *ctx) { return pool_infer_kind(ctx, POOL_LP); }
static int lppool_run(mfs_op_ctx *ctx) { return pool_run_kind(ctx, POOL_LP); }

MFS_OP(MaxPool, 1, .flags = MFS_OP_NHWC_OK | MFS_OP_HALF_VIA_FLOAT, .infer = maxpool_infer, .run = maxpool_run);
MFS_OP(MaxPool, 8, .flags = MFS_OP_NHWC_OK | MFS_OP_HALF_VIA_FLOAT, .infer = maxpool_infer, .run = maxpool_run);
MFS_OP(MaxPool, 10, .flags = MFS_OP_NHWC_OK | MFS_OP_HALF_VIA_FLOAT, .infer = maxpool_infer, .run = maxpool_run);
MFS_OP(MaxPool, 11, .flags = MFS_OP_NHWC_OK | MFS_OP_HALF_VIA_FLOAT, .infer = maxpool_infer, .run = maxpool_run);
MFS_OP(MaxPool, 12, .flags = MFS_OP_NHWC_OK | MFS_OP_HALF_VIA_FLOAT, .infer = maxpool_infer, .run = maxpool_run);
MFS_OP(AveragePool, 1, .flags = MFS_OP_NHWC_OK | MFS_OP_HALF_VIA_FLOAT, .infer = avgpool_infer, .run = avgpool_run);
MFS_OP(AveragePool, 7, .flags = MFS_OP_NHWC_OK | MFS_OP_HALF_VIA_FLOAT, .infer = avgpool_infer, .run = avgpool_run);
MFS_OP(AveragePool, 10, .flags = MFS_OP_NHWC_OK | MFS_OP_HALF_VIA_FLOAT, .infer = avgpool_infer, .run = avgpool_run);
MFS_OP(AveragePool, 11, .flags = MFS_OP_NHWC_OK | MFS_OP_HALF_VIA_FLOAT, .infer = avgpool_infer, .run = avgpool_run);
MFS_OP(AveragePool, 19, .flags = MFS_OP_NHWC_OK | MFS_OP_HALF_VIA_FLOAT, .infer = avgpool_infer, .run = avgpool_run);
MFS_OP(LpPool, 1, .flags = MFS_OP_NHWC_OK | MFS_OP_HALF_VIA_FLOAT, .infer = lppool_infer, .run = lppool_run);
MFS_OP(LpPool, 2, .flags = MFS_OP_NHWC_OK | MFS_OP_HALF_VIA_FLOAT, .infer = lppool_infer, .run = lppool_run);
MFS_OP(LpPool, 11, .flags = MFS_OP_NHWC_OK | MFS_OP_HALF_VIA_FLOAT, .infer = lppool_infer, .run = lppool_run);
MFS_OP(LpPool, 18, .flags = MFS_OP_NHWC_OK | MFS_OP_HALF_VIA_FLOAT, .infer = lppool_infer, .run = lppool_run);

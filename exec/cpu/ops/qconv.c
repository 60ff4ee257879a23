/* ConvInteger (10) and QLinearConv (10): 8-bit convolutions.
 *
 * ConvInteger: x, w (int8/uint8), optional x_zero_point (scalar) and
 * w_zero_point (scalar or one per output channel) -> int32
 *   Y = conv(x - x_zero_point, w - w_zero_point)
 * QLinearConv: x, x_scale, x_zero_point, w, w_scale, w_zero_point,
 * y_scale, y_zero_point, optional B (int32) ->
 *   Y = saturate(rint((conv + B) * x_scale * w_scale[m] / y_scale) + y_zero_point)
 * in y_zero_point's type (rint: half to even, as the ONNX reference).
 *
 * Padding stands for x_zero_point (contributes 0 after the subtraction).
 * Same attributes as Conv (group, strides, dilations, pads, auto_pad,
 * kernel_shape), 1-D to 3-D, plain layout.  Direct integer loops, exact in
 * int32, parallel over (image, output channel); these ops appear in
 * quantized models and the conformance cases, not on the FP32 fast path.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dense_util.h"

typedef struct qc_params {
	int64_t n, c, m, group, cg, mg, ksize, osize, isize;
	int64_t in[3], k[3], st[3], dl[3], pb[3], out[3];
	mfs_window w;
} qc_params;

static bool is_q8(mfs_dtype dt)
{
	return dt == MFS_DT_UINT8 || dt == MFS_DT_INT8;
}

static int qc_params_get(mfs_op_ctx *ctx, const mfs_tensor *x, const mfs_tensor *wt,
			 qc_params *p)
{
	int rc;

	memset(p, 0, sizeof(*p));
	if (!x || !wt)
		return mfs_op_fail(ctx, EINVAL, "needs inputs x and w");
	if (!is_q8(x->dtype) || !is_q8(wt->dtype))
		return mfs_op_fail(ctx, ENOTSUP, "x and w must be int8 or uint8 (got %s and %s)",
				   mfs_dtype_onnx_name(x->dtype), mfs_dtype_onnx_name(wt->dtype));
	if (x->layout != MFS_LAYOUT_PLAIN || wt->layout != MFS_LAYOUT_PLAIN)
		return mfs_op_fail(ctx, EINVAL, "inputs must be in plain layout");
	if (x->shape.rank < 3 || x->shape.rank > 5 || wt->shape.rank != x->shape.rank)
		return mfs_op_fail(ctx, EINVAL, "x of rank %d and w of rank %d: need equal ranks 3 to 5",
				   x->shape.rank, wt->shape.rank);
	p->n = x->shape.dims[0];
	p->c = x->shape.dims[1];
	p->m = wt->shape.dims[0];
	p->group = onnx_attr_int(ctx->node, "group", 1);
	if (p->group < 1 || p->group > (int64_t)1 << 30 || p->c % p->group || p->m % p->group)
		return mfs_op_fail(ctx, EINVAL, "group %lld does not divide channels %lld and filters %lld",
				   (long long)p->group, (long long)p->c, (long long)p->m);
	p->cg = p->c / p->group;
	p->mg = p->m / p->group;
	if (wt->shape.dims[1] != p->cg)
		return mfs_op_fail(ctx, EINVAL, "w has %lld input channels per group, x gives %lld",
				   (long long)wt->shape.dims[1], (long long)p->cg);
	if ((rc = mfs_window_init(ctx, &x->shape, wt->shape.dims + 2, true, false, &p->w)) < 0)
		return rc;
	int off = 3 - p->w.nsp;
	p->isize = p->osize = p->ksize = 1;
	for (int i = 0; i < 3; i++) {
		int j = i - off;
		p->in[i] = j >= 0 ? p->w.in[j] : 1;
		p->k[i] = j >= 0 ? p->w.k[j] : 1;
		p->st[i] = j >= 0 ? p->w.stride[j] : 1;
		p->dl[i] = j >= 0 ? p->w.dil[j] : 1;
		p->pb[i] = j >= 0 ? p->w.pad_b[j] : 0;
		p->out[i] = j >= 0 ? p->w.out[j] : 1;
		p->isize *= p->in[i];
		p->osize *= p->out[i];
		p->ksize *= p->k[i];
	}
	return 0;
}

static void qc_out_shape(const qc_params *p, mfs_tensor *y, mfs_dtype dt)
{
	y->dtype = dt;
	y->shape.rank = 2 + p->w.nsp;
	y->shape.dims[0] = p->n;
	y->shape.dims[1] = p->m;
	for (int i = 0; i < p->w.nsp; i++)
		y->shape.dims[2 + i] = p->w.out[i];
}

static int zp_check(mfs_op_ctx *ctx, const mfs_tensor *z, mfs_dtype want, int64_t n,
		    const char *what)
{
	if (!z)
		return 0;
	int64_t cnt = mfs_shape_numel(&z->shape);
	if (z->dtype != want)
		return mfs_op_fail(ctx, EINVAL, "%s has type %s, expected %s", what,
				   mfs_dtype_onnx_name(z->dtype), mfs_dtype_onnx_name(want));
	if (cnt != 1 && cnt != n)
		return mfs_op_fail(ctx, EINVAL, "%s has %lld values, expected 1 or %lld", what,
				   (long long)cnt, (long long)n);
	return 0;
}

static int32_t zp_at(const mfs_tensor *z, int64_t i)
{
	if (!z)
		return 0;
	return (int32_t)mfs_tensor_get_i64(z, mfs_shape_numel(&z->shape) == 1 ? 0 : i);
}

/* acc [n, m, out] = conv(x - xzp, w - wzp). */
static void qc_acc(const qc_params *p, const mfs_tensor *x, int32_t xzp, const mfs_tensor *wt,
		   const mfs_tensor *wz, int32_t *acc)
{
	bool xs = x->dtype == MFS_DT_INT8, ws = wt->dtype == MFS_DT_INT8;
	const int8_t *x8 = x->data, *w8 = wt->data;
	const uint8_t *xu = x->data, *wu = wt->data;

	#pragma omp parallel for collapse(2) schedule(static)
	for (int64_t b = 0; b < p->n; b++)
		for (int64_t m = 0; m < p->m; m++) {
			int64_t g = m / p->mg;
			int32_t wzp = zp_at(wz, m);
			int32_t *ac = acc + (b * p->m + m) * p->osize;
			for (int64_t o = 0; o < p->osize; o++) {
				int64_t od = o / (p->out[1] * p->out[2]);
				int64_t oh = o / p->out[2] % p->out[1], ow = o % p->out[2];
				int32_t s = 0;
				for (int64_t ci = 0; ci < p->cg; ci++) {
					int64_t xc = (b * p->c + g * p->cg + ci) * p->isize;
					int64_t wc = (m * p->cg + ci) * p->ksize;
					for (int64_t kk = 0; kk < p->ksize; kk++) {
						int64_t kd = kk / (p->k[1] * p->k[2]);
						int64_t kh = kk / p->k[2] % p->k[1], kw = kk % p->k[2];
						int64_t id = od * p->st[0] - p->pb[0] + kd * p->dl[0];
						int64_t ih = oh * p->st[1] - p->pb[1] + kh * p->dl[1];
						int64_t iw = ow * p->st[2] - p->pb[2] + kw * p->dl[2];
						if (id < 0 || id >= p->in[0] || ih < 0 || ih >= p->in[1] ||
						    iw < 0 || iw >= p->in[2])
							continue;
						int64_t xi = xc + (id * p->in[1] + ih) * p->in[2] + iw;
						int32_t xv = (xs ? x8[xi] : xu[xi]) - xzp;
						int32_t wv = (ws ? w8[wc + kk] : wu[wc + kk]) - wzp;
						s += xv * wv;
					}
				}
				ac[o] = s;
			}
		}
}

static const mfs_tensor *opt_in(mfs_op_ctx *ctx, int i)
{
	return i < ctx->n_in ? ctx->in[i] : NULL;
}

static int ci_infer(mfs_op_ctx *ctx)
{
	qc_params p;
	int rc = qc_params_get(ctx, ctx->in[0], opt_in(ctx, 1), &p);
	if (rc < 0)
		return rc;
	const mfs_tensor *xz = opt_in(ctx, 2);
	if ((rc = zp_check(ctx, xz, ctx->in[0]->dtype, 1, "x_zero_point")) < 0 ||
	    (rc = zp_check(ctx, opt_in(ctx, 3), ctx->in[1]->dtype, p.m, "w_zero_point")) < 0)
		return rc;
	qc_out_shape(&p, ctx->out[0], MFS_DT_INT32);
	return 0;
}

static int ci_run(mfs_op_ctx *ctx)
{
	qc_params p;
	int rc = qc_params_get(ctx, ctx->in[0], ctx->in[1], &p);
	if (rc < 0)
		return rc;
	qc_acc(&p, ctx->in[0], zp_at(opt_in(ctx, 2), 0), ctx->in[1], opt_in(ctx, 3),
	       ctx->out[0]->data);
	return 0;
}

/* QLinearConv: x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, [B] */
static int qlc_infer(mfs_op_ctx *ctx)
{
	qc_params p;
	int rc;

	if (ctx->n_in < 8)
		return mfs_op_fail(ctx, EINVAL, "needs at least 8 inputs, got %d", ctx->n_in);
	for (int i = 0; i < 8; i++)
		if (!ctx->in[i])
			return mfs_op_fail(ctx, EINVAL, "input %d is missing", i);
	if ((rc = qc_params_get(ctx, ctx->in[0], ctx->in[3], &p)) < 0)
		return rc;
	if ((rc = zp_check(ctx, ctx->in[2], ctx->in[0]->dtype, 1, "x_zero_point")) < 0 ||
	    (rc = zp_check(ctx, ctx->in[5], ctx->in[3]->dtype, p.m, "w_zero_point")) < 0)
		return rc;
	const int64_t scale_n[3] = { 1, p.m, 1 };
	const int scale_i[3] = { 1, 4, 6 };
	for (int i = 0; i < 3; i++) {
		const mfs_tensor *s = ctx->in[scale_i[i]];
		int64_t cnt = mfs_shape_numel(&s->shape);
		if (s->dtype != MFS_DT_FLOAT || (cnt != 1 && cnt != scale_n[i]))
			return mfs_op_fail(ctx, EINVAL, "input %d (a scale) must be float with 1%s values",
					   scale_i[i], i == 1 ? " or one per output channel" : "");
	}
	if (!is_q8(ctx->in[7]->dtype) || mfs_shape_numel(&ctx->in[7]->shape) != 1)
		return mfs_op_fail(ctx, EINVAL, "y_zero_point must be one int8 or uint8 value");
	const mfs_tensor *b = opt_in(ctx, 8);
	if (b && (b->dtype != MFS_DT_INT32 || mfs_shape_numel(&b->shape) != p.m))
		return mfs_op_fail(ctx, EINVAL, "B must be int32 with %lld values", (long long)p.m);
	qc_out_shape(&p, ctx->out[0], ctx->in[7]->dtype);
	return 0;
}

static int qlc_run(mfs_op_ctx *ctx)
{
	qc_params p;
	int rc = qc_params_get(ctx, ctx->in[0], ctx->in[3], &p);
	if (rc < 0)
		return rc;
	int64_t total = p.n * p.m * p.osize;
	int32_t *acc = malloc(sizeof(int32_t) * (size_t)(total ? total : 1));
	if (!acc)
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	qc_acc(&p, ctx->in[0], zp_at(ctx->in[2], 0), ctx->in[3], ctx->in[5], acc);

	const mfs_tensor *b = opt_in(ctx, 8), *ws = ctx->in[4];
	mfs_tensor *y = ctx->out[0];
	double xs = ((const float *)ctx->in[1]->data)[0];
	double ys = ((const float *)ctx->in[6]->data)[0];
	int64_t yzp = mfs_tensor_get_i64(ctx->in[7], 0);
	bool s8 = y->dtype == MFS_DT_INT8, wper = mfs_shape_numel(&ws->shape) > 1;
	double lo = s8 ? -128 : 0, hi = s8 ? 127 : 255;
	for (int64_t e = 0; e < total; e++) {
		int64_t m = e / p.osize % p.m;
		double scale = xs * ((const float *)ws->data)[wper ? m : 0] / ys;
		double a = (double)acc[e] + (b ? ((const int32_t *)b->data)[m] : 0);
		double v = rint(a * scale) + (double)yzp;
		v = v < lo ? lo : v > hi ? hi : v;
		if (s8)
			((int8_t *)y->data)[e] = (int8_t)v;
		else
			((uint8_t *)y->data)[e] = (uint8_t)v;
	}
	free(acc);
	return 0;
}

MFS_OP(ConvInteger, 10, .infer = ci_infer, .run = ci_run);
MFS_OP(QLinearConv, 10, .infer = qlc_infer, .run = qlc_run);

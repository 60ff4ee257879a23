/* MatMulInteger (10) and QLinearMatMul (10): 8-bit matrix products.
 *
 * MatMulInteger: Y (int32) = (A - a_zero_point) * (B - b_zero_point),
 * A and B int8 or uint8, numpy matmul shapes (batch broadcast, 1-D
 * operands); a_zero_point is a scalar or one value per row of A,
 * b_zero_point a scalar or one per column of B.
 *
 * QLinearMatMul: Y = saturate(rint(acc * a_scale * b_scale / y_scale) +
 * y_zero_point) with acc the integer product above; scales scalar or per
 * row (a) / per column (b); Y has y_zero_point's type.  Rounding is half
 * to even, as numpy's rint in the ONNX reference.
 *
 * Integer loops (mfs_qgemm in dense_util.c), exact in int32; MatMulInteger
 * with a constant int8 B of zero points 0 (dynamic quantization's) on
 * oneDNN's int8 matmul (qdense_dnnl.c), exact as well.
 */
#include <math.h>
#include <stdlib.h>

#include "qlinear_util.h"

static bool is_q8(mfs_dtype dt)
{
	return dt == MFS_DT_UINT8 || dt == MFS_DT_INT8;
}

/* Read a zero point (or nothing: 0) as n int32 values, stride out. */
static int read_zp(mfs_op_ctx *ctx, const mfs_tensor *z, mfs_dtype want, int64_t n,
		   const char *what, int32_t **vals, int64_t *stride)
{
	int64_t cnt = z ? mfs_shape_numel(&z->shape) : 1;
	if (z && z->dtype != want)
		return mfs_op_fail(ctx, EINVAL, "%s has type %s, expected %s", what,
				   mfs_dtype_onnx_name(z->dtype), mfs_dtype_onnx_name(want));
	if (cnt != 1 && cnt != n)
		return mfs_op_fail(ctx, EINVAL, "%s has %lld values, expected 1 or %lld", what,
				   (long long)cnt, (long long)n);
	*vals = malloc(sizeof(int32_t) * (size_t)cnt);
	if (!*vals)
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	for (int64_t i = 0; i < cnt; i++)
		(*vals)[i] = z ? (int32_t)mfs_tensor_get_i64(z, i) : 0;
	*stride = cnt == 1 ? 0 : 1;
	return 0;
}

static int read_scale(mfs_op_ctx *ctx, const mfs_tensor *s, int64_t n, const char *what)
{
	int64_t cnt = mfs_shape_numel(&s->shape);
	if (s->dtype != MFS_DT_FLOAT)
		return mfs_op_fail(ctx, EINVAL, "%s must be float", what);
	if (cnt != 1 && cnt != n)
		return mfs_op_fail(ctx, EINVAL, "%s has %lld values, expected 1 or %lld", what,
				   (long long)cnt, (long long)n);
	return 0;
}

static int qmm_infer_common(mfs_op_ctx *ctx, const mfs_tensor *a, const mfs_tensor *b,
			    mfs_mm_geom *g)
{
	if (!a || !b)
		return mfs_op_fail(ctx, EINVAL, "needs inputs A and B");
	if (!is_q8(a->dtype) || !is_q8(b->dtype))
		return mfs_op_fail(ctx, ENOTSUP, "A and B must be int8 or uint8 (got %s and %s)",
				   mfs_dtype_onnx_name(a->dtype), mfs_dtype_onnx_name(b->dtype));
	if (a->layout != MFS_LAYOUT_PLAIN || b->layout != MFS_LAYOUT_PLAIN)
		return mfs_op_fail(ctx, EINVAL, "inputs must be in plain layout");
	return mfs_mm_geometry(ctx, &a->shape, &b->shape, g, &ctx->out[0]->shape);
}

static const mfs_tensor *opt_in(mfs_op_ctx *ctx, int i)
{
	return i < ctx->n_in ? ctx->in[i] : NULL;
}

static int mmi_infer(mfs_op_ctx *ctx)
{
	mfs_mm_geom g;
	int rc = qmm_infer_common(ctx, ctx->in[0], opt_in(ctx, 1), &g);
	if (rc < 0)
		return rc;
	ctx->out[0]->dtype = MFS_DT_INT32;
	return 0;
}

/* acc [nbatch * m * n] = integer product with zero points. */
static int qmm_acc(mfs_op_ctx *ctx, const mfs_tensor *a, const mfs_tensor *b,
		   const mfs_tensor *za_t, const mfs_tensor *zb_t, const mfs_mm_geom *g,
		   int32_t *acc)
{
	int32_t *za = NULL, *zb = NULL;
	int64_t zas, zbs;
	int rc;

	if ((rc = read_zp(ctx, za_t, a->dtype, g->m, "a_zero_point", &za, &zas)) < 0 ||
	    (rc = read_zp(ctx, zb_t, b->dtype, g->n, "b_zero_point", &zb, &zbs)) < 0) {
		free(za);
		return rc;
	}
	for (int64_t bi = 0; bi < g->nbatch; bi++) {
		int64_t oa, ob;
		mfs_mm_batch_offsets(g, bi, &oa, &ob);
		mfs_qgemm(g->m, g->n, g->k, (const int8_t *)a->data + oa, a->dtype == MFS_DT_INT8,
			  g->k, za, zas, (const int8_t *)b->data + ob, b->dtype == MFS_DT_INT8,
			  g->n, zb, zbs, acc + bi * g->m * g->n, g->n);
	}
	free(za);
	free(zb);
	return 0;
}

static int mmi_run(mfs_op_ctx *ctx)
{
	mfs_mm_geom g;
	mfs_shape os;
	int rc = mfs_matmul_integer_dnnl(ctx);   /* oneDNN for a constant B */
	if (rc != 0)
		return rc < 0 ? rc : 0;
	if ((rc = mfs_mm_geometry(ctx, &ctx->in[0]->shape, &ctx->in[1]->shape, &g, &os)) < 0)
		return rc;
	return qmm_acc(ctx, ctx->in[0], ctx->in[1], opt_in(ctx, 2), opt_in(ctx, 3), &g,
		       ctx->out[0]->data);
}

/* QLinearMatMul inputs: a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp */
static int qlmm_infer(mfs_op_ctx *ctx)
{
	mfs_mm_geom g;
	int rc;

	if (ctx->n_in < 8)
		return mfs_op_fail(ctx, EINVAL, "needs 8 inputs, got %d", ctx->n_in);
	for (int i = 0; i < 8; i++)
		if (!ctx->in[i])
			return mfs_op_fail(ctx, EINVAL, "input %d is missing", i);
	if ((rc = qmm_infer_common(ctx, ctx->in[0], ctx->in[3], &g)) < 0)
		return rc;
	if ((rc = read_scale(ctx, ctx->in[1], g.m, "a_scale")) < 0 ||
	    (rc = read_scale(ctx, ctx->in[4], g.n, "b_scale")) < 0 ||
	    (rc = read_scale(ctx, ctx->in[6], 1, "y_scale")) < 0)
		return rc;
	if (!is_q8(ctx->in[7]->dtype) || mfs_shape_numel(&ctx->in[7]->shape) != 1)
		return mfs_op_fail(ctx, EINVAL, "y_zero_point must be one int8 or uint8 value");
	ctx->out[0]->dtype = ctx->in[7]->dtype;
	return 0;
}

static int qlmm_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *a = ctx->in[0], *b = ctx->in[3];
	const mfs_tensor *as = ctx->in[1], *bs = ctx->in[4];
	mfs_tensor *y = ctx->out[0];
	mfs_mm_geom g;
	mfs_shape os;
	int rc = mfs_mm_geometry(ctx, &a->shape, &b->shape, &g, &os);
	if (rc < 0)
		return rc;
	int64_t total = g.nbatch * g.m * g.n;
	int32_t *acc = malloc(sizeof(int32_t) * (size_t)(total ? total : 1));
	if (!acc)
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	if ((rc = qmm_acc(ctx, a, b, ctx->in[2], ctx->in[5], &g, acc)) < 0) {
		free(acc);
		return rc;
	}
	const float *asv = as->data, *bsv = bs->data;
	bool a_per = mfs_shape_numel(&as->shape) > 1, b_per = mfs_shape_numel(&bs->shape) > 1;
	double ys = ((const float *)ctx->in[6]->data)[0];
	int64_t yzp = mfs_tensor_get_i64(ctx->in[7], 0);
	bool s8 = y->dtype == MFS_DT_INT8;
	for (int64_t e = 0; e < total; e++) {
		int64_t i = e / g.n % g.m, j = e % g.n;
		double scale = (double)asv[a_per ? i : 0] * bsv[b_per ? j : 0] / ys;
		double v = rint((double)acc[e] * scale) + (double)yzp;
		double lo = s8 ? -128 : 0, hi = s8 ? 127 : 255;
		v = v < lo ? lo : v > hi ? hi : v;
		if (s8)
			((int8_t *)y->data)[e] = (int8_t)v;
		else
			((uint8_t *)y->data)[e] = (uint8_t)v;
	}
	free(acc);
	return 0;
}

MFS_OP(MatMulInteger, 10, .infer = mmi_infer, .run = mmi_run,
       .release = mfs_matmul_integer_release);
MFS_OP(QLinearMatMul, 10, .infer = qlmm_infer, .run = qlmm_run);

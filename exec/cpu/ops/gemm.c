/* Gemm (1, 6, 7, 9, 11, 13): Y = alpha * A' * B' + beta * C.
 *
 * A' is A or its transpose (transA), B' likewise; C is optional (required
 * before opset 11 in the spec, accepted as optional everywhere here) and
 * broadcasts unidirectionally to [M, N].  The opset 1-6 `broadcast`
 * attribute only allowed what unidirectional broadcasting allows, so one
 * implementation serves every version.  FP32 via mfs_sgemm (dense_util.h), FP64 via
 * OpenBLAS' cblas_dgemm through mfs_blas_dgemm (Y is first filled with
 * beta*C, then the product added with BLAS beta = 1);
 * int32/int64/uint32/uint64 via a plain loop.
 */
#include <string.h>

#include "dense_util.h"

typedef struct gemm_geom {
	int64_t m, k, n;
	bool ta, tb;
	int64_t c_rs, c_cs;   /* C strides over rows/cols of Y (0 = broadcast) */
} gemm_geom;

static int gemm_geometry(mfs_op_ctx *ctx, gemm_geom *g)
{
	const mfs_tensor *a = ctx->in[0], *b = ctx->in[1];
	const mfs_tensor *c = ctx->n_in > 2 ? ctx->in[2] : NULL;

	if (!a || !b)
		return mfs_op_fail(ctx, EINVAL, "needs inputs A and B");
	if (a->shape.rank != 2 || b->shape.rank != 2)
		return mfs_op_fail(ctx, EINVAL, "A and B must be matrices (ranks %d and %d)",
				   a->shape.rank, b->shape.rank);
	g->ta = onnx_attr_int(ctx->node, "transA", 0) != 0;
	g->tb = onnx_attr_int(ctx->node, "transB", 0) != 0;
	g->m = a->shape.dims[g->ta ? 1 : 0];
	g->k = a->shape.dims[g->ta ? 0 : 1];
	int64_t kb = b->shape.dims[g->tb ? 1 : 0];
	g->n = b->shape.dims[g->tb ? 0 : 1];
	if (kb != g->k)
		return mfs_op_fail(ctx, EINVAL, "inner dimensions differ: A' is %lldx%lld, B' is %lldx%lld",
				   (long long)g->m, (long long)g->k, (long long)kb, (long long)g->n);
	g->c_rs = g->c_cs = 0;
	if (c) {
		const mfs_shape *cs = &c->shape;
		int64_t cr = 1, cc = 1;
		if (cs->rank > 2)
			return mfs_op_fail(ctx, EINVAL, "C has rank %d, at most 2 allowed", cs->rank);
		if (cs->rank == 2) {
			cr = cs->dims[0];
			cc = cs->dims[1];
		} else if (cs->rank == 1) {
			cc = cs->dims[0];
		}
		if ((cr != 1 && cr != g->m) || (cc != 1 && cc != g->n))
			return mfs_op_fail(ctx, EINVAL,
					   "C of shape [%lld,%lld] does not broadcast to [%lld,%lld]",
					   (long long)cr, (long long)cc, (long long)g->m, (long long)g->n);
		g->c_cs = cc == 1 ? 0 : 1;
		g->c_rs = cr == 1 ? 0 : cc;
	}
	return 0;
}

static int gemm_infer(mfs_op_ctx *ctx)
{
	gemm_geom g;
	int rc = gemm_geometry(ctx, &g);
	if (rc < 0)
		return rc;
	mfs_dtype dt = ctx->in[0]->dtype;
	if (ctx->in[1]->dtype != dt || (ctx->n_in > 2 && ctx->in[2] && ctx->in[2]->dtype != dt))
		return mfs_op_fail(ctx, EINVAL, "inputs must share one type");
	if (dt != MFS_DT_FLOAT && dt != MFS_DT_DOUBLE && dt != MFS_DT_INT32 &&
	    dt != MFS_DT_INT64 && dt != MFS_DT_UINT32 && dt != MFS_DT_UINT64)
		return mfs_op_fail(ctx, ENOTSUP, "type %s is not supported", mfs_dtype_onnx_name(dt));
	for (int i = 0; i < ctx->n_in && i < 3; i++)
		if (ctx->in[i] && ctx->in[i]->layout != MFS_LAYOUT_PLAIN)
			return mfs_op_fail(ctx, EINVAL, "inputs must be in plain layout");
	ctx->out[0]->dtype = dt;
	ctx->out[0]->shape = (mfs_shape){ .rank = 2, .dims = { g.m, g.n } };
	return 0;
}

#define GEMM_INT(T, UT)                                                         \
	static void gemm_##T(const gemm_geom *g, const T *a, const T *b,        \
			     const T *c, T *y, T alpha, T beta)                 \
	{                                                                       \
		for (int64_t i = 0; i < g->m; i++)                              \
			for (int64_t j = 0; j < g->n; j++) {                    \
				UT s = 0;                                       \
				for (int64_t p = 0; p < g->k; p++) {            \
					UT av = (UT)(g->ta ? a[p * g->m + i] : a[i * g->k + p]); \
					UT bv = (UT)(g->tb ? b[j * g->k + p] : b[p * g->n + j]); \
					s += av * bv;                           \
				}                                               \
				s = s * (UT)alpha;                              \
				if (c)                                          \
					s += (UT)beta * (UT)c[i * g->c_rs + j * g->c_cs]; \
				y[i * g->n + j] = (T)s;                         \
			}                                                       \
	}
GEMM_INT(int32_t, uint32_t)
GEMM_INT(int64_t, uint64_t)

static int gemm_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *a = ctx->in[0], *b = ctx->in[1];
	const mfs_tensor *c = ctx->n_in > 2 ? ctx->in[2] : NULL;
	mfs_tensor *y = ctx->out[0];
	float alpha = onnx_attr_float(ctx->node, "alpha", 1.0f);
	float beta = onnx_attr_float(ctx->node, "beta", 1.0f);
	gemm_geom g;
	int rc = gemm_geometry(ctx, &g);

	if (rc < 0)
		return rc;
	if (g.m == 0 || g.n == 0)
		return 0;
	if (g.m > INT32_MAX || g.n > INT32_MAX || g.k > INT32_MAX)
		return mfs_op_fail(ctx, EINVAL, "matrix dimensions exceed the BLAS interface");
	int lda = (int)(g.ta ? g.m : g.k), ldb = (int)(g.tb ? g.k : g.n);
	if (lda < 1) lda = 1;
	if (ldb < 1) ldb = 1;

	switch (a->dtype) {
	case MFS_DT_FLOAT: {
		float *yd = y->data;
		const float *cd = c ? c->data : NULL;
		float bb = 0.0f;
		if (cd && beta != 0.0f) {
			for (int64_t i = 0; i < g.m; i++)
				for (int64_t j = 0; j < g.n; j++)
					yd[i * g.n + j] = beta * cd[i * g.c_rs + j * g.c_cs];
			bb = 1.0f;
		}
		mfs_sgemm(g.ta, g.tb, g.m, g.n, g.k, alpha, a->data, lda, b->data, ldb, bb, yd, g.n);
		break;
	}
	case MFS_DT_DOUBLE: {
		double *yd = y->data;
		const double *cd = c ? c->data : NULL;
		double bb = 0.0;
		if (cd && beta != 0.0f) {
			for (int64_t i = 0; i < g.m; i++)
				for (int64_t j = 0; j < g.n; j++)
					yd[i * g.n + j] = beta * cd[i * g.c_rs + j * g.c_cs];
			bb = 1.0;
		}
		mfs_blas_dgemm(g.ta, g.tb, g.m, g.n, g.k, alpha, a->data, lda, b->data, ldb, bb,
			       yd, g.n);
		break;
	}
	case MFS_DT_INT32:
	case MFS_DT_UINT32:
		gemm_int32_t(&g, a->data, b->data, c ? c->data : NULL, y->data,
			     (int32_t)alpha, (int32_t)beta);
		break;
	default:
		gemm_int64_t(&g, a->data, b->data, c ? c->data : NULL, y->data,
			     (int64_t)alpha, (int64_t)beta);
		break;
	}
	return 0;
}

MFS_OP(Gemm, 1, .flags = MFS_OP_HALF_VIA_FLOAT, .infer = gemm_infer, .run = gemm_run);
MFS_OP(Gemm, 6, .flags = MFS_OP_HALF_VIA_FLOAT, .infer = gemm_infer, .run = gemm_run);
MFS_OP(Gemm, 7, .flags = MFS_OP_HALF_VIA_FLOAT, .infer = gemm_infer, .run = gemm_run);
MFS_OP(Gemm, 9, .flags = MFS_OP_HALF_VIA_FLOAT, .infer = gemm_infer, .run = gemm_run);
MFS_OP(Gemm, 11, .flags = MFS_OP_HALF_VIA_FLOAT, .infer = gemm_infer, .run = gemm_run);
MFS_OP(Gemm, 13, .flags = MFS_OP_HALF_VIA_FLOAT, .infer = gemm_infer, .run = gemm_run);

/* MatMul (1, 13): numpy matmul semantics.
 *
 * A 1-D first operand is a row vector (a 1 is prepended, then dropped from
 * the result), a 1-D second operand a column vector (a 1 appended, then
 * dropped); the leading "batch" dims broadcast.  FP32 goes to
 * mfs_sgemm (oneDNN's sgemm, or OpenBLAS: dense_util.h says why), FP64 to
 * OpenBLAS' cblas_dgemm (mfs_blas_dgemm); the integer types use a plain loop
 * (wrapping arithmetic, as numpy does).
 *
 * When the second operand has no batch (rank <= 2, the usual weight matrix
 * of a linear layer), the batch of the first operand is contiguous rows of
 * one big [batch*M, K] matrix: one sgemm over all of it instead of one per
 * batch item.
 */
#include <omp.h>
#include <string.h>

#include "dense_util.h"

/* multiply-adds of a product up to which a batch's items run apart */
#define MM_ITEM_MAX (1 << 21)

static bool mm_dtype_ok(mfs_dtype dt)
{
	return dt == MFS_DT_FLOAT || dt == MFS_DT_DOUBLE || dt == MFS_DT_INT32 ||
	       dt == MFS_DT_INT64 || dt == MFS_DT_UINT32 || dt == MFS_DT_UINT64;
}

static int matmul_infer(mfs_op_ctx *ctx)
{
	const mfs_tensor *a = ctx->in[0], *b = ctx->in[1];
	mfs_mm_geom g;

	if (!a || !b)
		return mfs_op_fail(ctx, EINVAL, "needs two inputs");
	if (a->dtype != b->dtype)
		return mfs_op_fail(ctx, EINVAL, "operand types differ (%s and %s)",
				   mfs_dtype_onnx_name(a->dtype), mfs_dtype_onnx_name(b->dtype));
	if (!mm_dtype_ok(a->dtype))
		return mfs_op_fail(ctx, ENOTSUP, "type %s is not supported",
				   mfs_dtype_onnx_name(a->dtype));
	if (a->layout != MFS_LAYOUT_PLAIN || b->layout != MFS_LAYOUT_PLAIN)
		return mfs_op_fail(ctx, EINVAL, "operands must be in plain layout");
	ctx->out[0]->dtype = a->dtype;
	return mfs_mm_geometry(ctx, &a->shape, &b->shape, &g, &ctx->out[0]->shape);
}

/* Integer product, C = A * B for one batch item (row-major, wrapping). */
#define MM_INT_LOOP(T, UT)                                                     \
	static void mm_##T(const T *a, const T *b, T *c, int64_t m, int64_t k, \
			   int64_t n)                                          \
	{                                                                      \
		for (int64_t i = 0; i < m; i++) {                              \
			UT *row = (UT *)(c + i * n);                           \
			for (int64_t j = 0; j < n; j++)                        \
				row[j] = 0;                                    \
			for (int64_t p = 0; p < k; p++) {                      \
				UT av = (UT)a[i * k + p];                      \
				const T *brow = b + p * n;                     \
				for (int64_t j = 0; j < n; j++)                \
					row[j] += av * (UT)brow[j];            \
			}                                                      \
		}                                                              \
	}
MM_INT_LOOP(int32_t, uint32_t)
MM_INT_LOOP(int64_t, uint64_t)

static void mm_one(mfs_dtype dt, const void *a, const void *b, void *c,
		   int64_t m, int64_t k, int64_t n)
{
	switch (dt) {
	case MFS_DT_FLOAT:
		mfs_sgemm(false, false, m, n, k, 1.0f, a, k ? k : 1, b, n ? n : 1, 0.0f, c,
			  n ? n : 1);
		break;
	case MFS_DT_DOUBLE:
		mfs_blas_dgemm(false, false, m, n, k, 1.0, a, k ? k : 1, b, n ? n : 1, 0.0, c,
			       n ? n : 1);
		break;
	case MFS_DT_INT32:
	case MFS_DT_UINT32:
		mm_int32_t(a, b, c, m, k, n);
		break;
	default: /* INT64, UINT64 */
		mm_int64_t(a, b, c, m, k, n);
		break;
	}
}

/* Many small float products (attention: a [L, 64] x [64, L] per batch
 * and head): the items split over the team, each one product of
 * oneDNN's sgemm on one thread, instead of one team per product.  Why:
 * at GPT-2's 8-stream prompt the 96 products of a node took ~270 ms
 * through mfs_sgemm, one parallel region each (most of it the main thread
 * waiting for the team to wake, on this shared 2-core VM), against ~2
 * ms.  false: not taken (few items, large ones, or a product oneDNN
 * refused; those are redone by the caller). */
static bool mm_items_apart(const mfs_mm_geom *g, const float *a, const float *b, float *c)
{
	int threads = omp_get_max_threads();
	bool ok = true;

	if (g->nbatch < 2 * threads || g->m * g->n * g->k > MM_ITEM_MAX)
		return false;
	#pragma omp parallel for schedule(static) reduction(&& : ok) if (threads > 1)
	for (int64_t bi = 0; bi < g->nbatch; bi++) {
		int64_t offa, offb;
		mfs_mm_batch_offsets(g, bi, &offa, &offb);
		ok = dnnl_sgemm('N', 'N', g->m, g->n, g->k, 1.0f, a + offa, g->k, b + offb, g->n,
				0.0f, c + bi * g->m * g->n, g->n) == dnnl_success && ok;
	}
	return ok;
}

static int matmul_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *a = ctx->in[0], *b = ctx->in[1];
	mfs_tensor *y = ctx->out[0];
	mfs_shape os;
	mfs_mm_geom g;
	int rc = mfs_mm_geometry(ctx, &a->shape, &b->shape, &g, &os);
	if (rc < 0)
		return rc;
	size_t es = mfs_dtype_size(a->dtype);
	int64_t total = g.nbatch * g.m * g.n;

	if (total == 0)
		return 0;
	if (g.k == 0) {
		memset(y->data, 0, (size_t)total * es);
		return 0;
	}
	if (g.m > INT32_MAX || g.n > INT32_MAX || g.k > INT32_MAX ||
	    g.nbatch * g.m > INT32_MAX)
		return mfs_op_fail(ctx, EINVAL, "matrix dimensions exceed the BLAS interface");

	/* B without a batch and A's batch not broadcast: one product over
	 * all rows at once. */
	bool a_full = true;
	for (int i = 0; i < g.batch_rank; i++)
		if (g.batch[i] != 1 && g.a_bstride[i] == 0)
			a_full = false;
	if (g.b_single && a_full) {
		mm_one(a->dtype, a->data, b->data, y->data, g.nbatch * g.m, g.k, g.n);
		return 0;
	}

	if (a->dtype == MFS_DT_FLOAT && mm_items_apart(&g, a->data, b->data, y->data))
		return 0;
	for (int64_t bi = 0; bi < g.nbatch; bi++) {
		int64_t offa, offb;
		mfs_mm_batch_offsets(&g, bi, &offa, &offb);
		mm_one(a->dtype, (const char *)a->data + offa * es,
		       (const char *)b->data + offb * es,
		       (char *)y->data + bi * g.m * g.n * es, g.m, g.k, g.n);
	}
	return 0;
}

MFS_OP(MatMul, 1, .flags = MFS_OP_HALF_VIA_FLOAT, .infer = matmul_infer, .run = matmul_run);
MFS_OP(MatMul, 13, .flags = MFS_OP_HALF_VIA_FLOAT, .infer = matmul_infer, .run = matmul_run);

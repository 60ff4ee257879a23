/* QDense (com.modelfs 1): a linear layer on 8-bit values, what the QDQ
 * rewrite (exec/graph/rewrite_qdq.c) makes of DequantizeLinear -> MatMul
 * (+ bias Add) or Gemm [-> Relu] [-> QuantizeLinear].  Inputs as
 * qlinear_util.h says, x [..., K], w [K, N] ([N, K] with transB = 1);
 * output [..., N]; activation "Relu".
 *
 *   acc[r,n] = sum_k (x[r,k] - x_zero_point) * w[k,n] + rint(bias[n] / (xs * ws[n]))
 *   y = saturate(rint(act(acc * xs * ws[n] / ys)) + y_zero_point)
 * or, without y_scale, act(acc * xs * ws[n]) in float (ONNX Runtime's
 * QLinearMatMul / QGemm on the same group).
 *
 * How: oneDNN's int8 matmul (weights packed once while constant, VNNI),
 * one primitive per row count, rebuilt when the rows or threads change.
 */
#include <stdlib.h>
#include <string.h>

#include "qlinear_util.h"

typedef struct qdense_state {
	int64_t rows, k, n;
	int threads;
	bool ok, tb;
	mfs_qprim q;                 /* q.wslot: w's input (3, MatMulInteger's 1) */
	dnnl_memory_t src_m, dst_m;
} qdense_state;

static void qdense_prims_free(qdense_state *s)
{
	mfs_qprim_free(&s->q);
	if (s->src_m)
		dnnl_memory_destroy(s->src_m);
	if (s->dst_m)
		dnnl_memory_destroy(s->dst_m);
	s->src_m = s->dst_m = NULL;
	s->ok = false;
}

static void qdense_release(void *state)
{
	qdense_state *s = state;
	if (!s)
		return;
	qdense_prims_free(s);
	mfs_dnnl_weights_free(&s->q.wei);
	free(s);
}

/* Checks x and w; *k and *n of the product. */
static int qdense_dims(mfs_op_ctx *ctx, int64_t *k, int64_t *n, bool *tb)
{
	const mfs_tensor *x = ctx->in[0], *w = ctx->n_in > 3 ? ctx->in[3] : NULL;
	if (!x || !w || (x->dtype != MFS_DT_UINT8 && x->dtype != MFS_DT_INT8) ||
	    w->dtype != MFS_DT_INT8)
		return mfs_op_fail(ctx, ENOTSUP, "needs x uint8 or int8 and w int8");
	if (x->layout != MFS_LAYOUT_PLAIN || w->shape.rank != 2 || x->shape.rank < 1)
		return mfs_op_fail(ctx, EINVAL, "needs a plain x and a rank-2 w");
	*tb = onnx_attr_int(ctx->node, "transB", 0) != 0;
	*k = w->shape.dims[*tb];
	*n = w->shape.dims[!*tb];
	if (x->shape.dims[x->shape.rank - 1] != *k)
		return mfs_op_fail(ctx, EINVAL, "x's last dim %lld is not w's K %lld",
				   (long long)x->shape.dims[x->shape.rank - 1], (long long)*k);
	return 0;
}

static int qdense_infer(mfs_op_ctx *ctx)
{
	int64_t k, n;
	bool tb, relu;
	mfs_qparams qp;
	int rc;

	if ((rc = qdense_dims(ctx, &k, &n, &tb)) < 0 || (rc = mfs_q_relu(ctx, &relu)) < 0 ||
	    (rc = mfs_qparams_read(ctx, ctx->in[0]->dtype, n, &qp)) < 0)
		return rc;
	if ((rc = mfs_qparams_bias_check(ctx, ctx->n_in > 6 ? ctx->in[6] : NULL, n)) < 0)
		return rc;
	ctx->out[0]->dtype = qp.ydt;
	ctx->out[0]->shape = ctx->in[0]->shape;
	ctx->out[0]->shape.dims[ctx->in[0]->shape.rank - 1] = n;
	return 0;
}

static dnnl_status_t qdense_build(mfs_op_ctx *ctx, qdense_state *s, bool relu)
{
	dnnl_engine_t eng = mfs_dnnl_engine(ctx->err);
	dnnl_matmul_desc_t md;
	dnnl_memory_desc_t smd, wany, wplain, bmd, dmd;
	dnnl_status_t st;
	dnnl_dims_t sd = { s->rows, s->k }, wd = { s->k, s->n }, bd = { 1, s->n },
		    dd = { s->rows, s->n };

	if (!eng)
		return dnnl_runtime_error;
	s->q.ch = s->n;
	if ((st = dnnl_memory_desc_init_by_tag(&smd, 2, sd, mfs_q_dnnl_type(ctx->in[0]->dtype), dnnl_ab)) ||
	    (st = dnnl_memory_desc_init_by_tag(&wany, 2, wd, dnnl_s8, dnnl_format_tag_any)) ||
	    (st = dnnl_memory_desc_init_by_tag(&wplain, 2, wd, dnnl_s8, s->tb ? dnnl_ba : dnnl_ab)) ||
	    (st = dnnl_memory_desc_init_by_tag(&bmd, 2, bd, dnnl_s32, dnnl_ab)) ||
	    (st = dnnl_memory_desc_init_by_tag(&dmd, 2, dd, mfs_q_dnnl_type(s->q.qp.ydt), dnnl_ab)) ||
	    (st = dnnl_matmul_desc_init(&md, &smd, &wany, s->q.has_bias ? &bmd : NULL, &dmd)) ||
	    (st = mfs_qprim_build(ctx, &s->q, &md, &wplain, &bmd, relu, eng)) ||
	    (st = dnnl_memory_create(&s->src_m, &smd, eng, DNNL_MEMORY_NONE)) ||
	    (st = dnnl_memory_create(&s->dst_m, &dmd, eng, DNNL_MEMORY_NONE))) {
		qdense_prims_free(s);
		return st;
	}
	s->ok = true;
	return dnnl_success;
}

static int qdense_prepare(mfs_op_ctx *ctx)
{
	qdense_state *s = *ctx->state;
	int64_t k, n;
	bool tb, relu;
	int rc;

	if ((rc = qdense_dims(ctx, &k, &n, &tb)) < 0 || (rc = mfs_q_relu(ctx, &relu)) < 0)
		return rc;
	if (!s && !(s = *ctx->state = calloc(1, sizeof(*s))))
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	int64_t rows = k ? mfs_shape_numel(&ctx->in[0]->shape) / k : 0;
	int threads = mfs_dnnl_threads();
	if (s->ok && s->threads == threads && s->rows == rows)
		return 0;
	qdense_prims_free(s);
	s->rows = rows;
	s->k = k;
	s->n = n;
	s->tb = tb;
	s->threads = threads;
	s->q.has_bias = ctx->n_in > 6 && ctx->in[6];
	s->q.wslot = 3;
	if ((rc = mfs_qparams_read(ctx, ctx->in[0]->dtype, n, &s->q.qp)) < 0)
		return rc;
	if (rows == 0 || k == 0 || n == 0)
		return mfs_op_fail(ctx, ENOTSUP, "empty products are not supported");
	dnnl_status_t st = qdense_build(ctx, s, relu);
	if (st != dnnl_success)
		return mfs_op_fail(ctx, ENOTSUP, "oneDNN has no int8 matmul for this node: %s",
				   mfs_dnnl_status_str(st));
	return 0;
}

static int qdense_exec(mfs_op_ctx *ctx, qdense_state *s);

static int qdense_run(mfs_op_ctx *ctx)
{
	qdense_state *s;
	int rc;

	/* a run given another thread count rebuilds (qconv_dnnl.c says why) */
	if ((rc = qdense_prepare(ctx)) < 0)
		return rc;
	s = *ctx->state;
	if (!s || !s->ok)
		return mfs_op_fail(ctx, EIO, "QDense was not prepared");
	return qdense_exec(ctx, s);
}

/* The product on ctx's inputs with s as built. */
static int qdense_exec(mfs_op_ctx *ctx, qdense_state *s)
{
	dnnl_memory_set_data_handle(s->src_m, ctx->in[0]->data);
	dnnl_memory_set_data_handle(s->dst_m, ctx->out[0]->data);
	return mfs_qprim_exec(ctx, &s->q, s->src_m, s->dst_m, "matmul");
}

MFS_OP_DOMAIN("com.modelfs", QDense, 1, .infer = qdense_infer, .prepare = qdense_prepare,
	      .run = qdense_run, .release = qdense_release);

/* MatMulInteger (qmatmul.c) on oneDNN: the same product with scales 1, an
 * int32 output and no bias, for A uint8/int8 [..., K], B a constant int8
 * [K, N] with zero points 0, a_zero_point a scalar: what ONNX Runtime's
 * dynamic quantization (DynamicQuantizeLinear -> MatMulInteger) writes. */
int mfs_matmul_integer_dnnl(mfs_op_ctx *ctx)
{
	static const float one = 1.0f;
	const mfs_tensor *a = ctx->in[0], *b = ctx->in[1];
	const mfs_tensor *az = ctx->n_in > 2 ? ctx->in[2] : NULL, *bz = ctx->n_in > 3 ? ctx->in[3] : NULL;
	qdense_state *s = *ctx->state;

	if ((a->dtype != MFS_DT_UINT8 && a->dtype != MFS_DT_INT8) || b->dtype != MFS_DT_INT8 ||
	    !((ctx->const_in >> 1) & 1) || a->layout != MFS_LAYOUT_PLAIN || a->shape.rank < 2 ||
	    b->shape.rank != 2 || a->shape.dims[a->shape.rank - 1] != b->shape.dims[0] ||
	    (az && mfs_shape_numel(&az->shape) != 1))
		return 0;
	for (int64_t i = 0; bz && i < mfs_shape_numel(&bz->shape); i++)
		if (mfs_tensor_get_i64(bz, i))
			return 0;
	int64_t k = b->shape.dims[0], n = b->shape.dims[1];
	int64_t rows = k ? mfs_shape_numel(&a->shape) / k : 0;
	int threads = mfs_dnnl_threads();
	if (rows == 0 || k == 0 || n == 0)
		return 0;
	if (!s && !(s = *ctx->state = calloc(1, sizeof(*s))))
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	/* the zero point is a runtime argument (DynamicQuantizeLinear's
	 * changes every run): the primitive only knows there is one */
	if (!s->ok || s->threads != threads || s->rows != rows || s->k != k || s->n != n ||
	    s->q.qp.xz != (az != NULL)) {
		qdense_prims_free(s);
		*s = (qdense_state){ .rows = rows, .k = k, .n = n, .threads = threads,
				     .q = { .wslot = 1, .wei = s->q.wei,
					    .qp = { .xs = 1, .ys = 1, .xz = az != NULL, .ws = &one,
						    .nws = 1, .ydt = MFS_DT_INT32 } } };
		if (qdense_build(ctx, s, false) != dnnl_success)
			return 0;   /* the reference loops */
	}
	s->q.xz = az ? (int32_t)mfs_tensor_get_i64(az, 0) : 0;
	int rc = qdense_exec(ctx, s);
	return rc < 0 ? rc : 1;
}

void mfs_matmul_integer_release(void *state)
{
	qdense_release(state);
}

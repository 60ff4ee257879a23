/* ocl_ops_matmul.c - device implementations of the matrix products: Gemm,
 * MatMul and com.modelfs Dense (CLBlast, or for Dense its own tiled kernel
 * with the bias, the activation and the residual in one pass), and
 * com.modelfs Attention (batched CLBlast products around a masked row
 * softmax, ocl_ops_norm.c's).  Float only; other cases return OCL_HOST
 * (the CPU operator runs).  Geometry comes from the same helpers as the
 * CPU operators (exec/op/op_geometry.h).
 */
#include <stdlib.h>
#include <string.h>

#include "ocl_blast.h"
#include "op_geometry.h"
#include "op_common.h"

/* n floats of zeros into m (an empty product). */
static int fill_zero(ocl_run *r, cl_mem m, int64_t n)
{
	cl_int cn = (cl_int)n;
	cl_uint zero = 0;
	int rc;

	if ((rc = OCL_ARG(r, K_FILL_4, 0, m)) || (rc = OCL_ARG(r, K_FILL_4, 1, cn)) ||
	    (rc = OCL_ARG(r, K_FILL_4, 2, zero)))
		return rc;
	return ocl_launch(r, K_FILL_4, (size_t)n);
}

/* ---- products of few rows (kernels/ops_gemv.cl) ---- */

#define GEMV_MAX_ROWS 8

/* Whether a product of rows rows (per batch item) takes gemv_small_m: on
 * devices with 256-item groups, unless MODELFS_OCL_GEMV=0. */
static bool use_gemv(ocl_run *r, int64_t rows)
{
	const char *env = getenv("MODELFS_OCL_GEMV");

	return rows >= 1 && rows <= GEMV_MAX_ROWS && ocl_max_group(r) >= 256 &&
	       !(env && !strcmp(env, "0"));
}

/* One product of few rows per batch item (ops_gemv.cl's contract). */
typedef struct gemv_args {
	cl_mem a, b, bias, z, y;
	int64_t rows, n, k, sbk, sbn, sa, sb, sy, nbatch;
	cl_int hasb, hasz, op;
} gemv_args;

static int gemv(ocl_run *r, const gemv_args *g)
{
	ocl_kid kk = K_GEMV_SMALL_M;
	cl_int v[9] = { (cl_int)g->rows, (cl_int)g->n, (cl_int)g->k, (cl_int)g->sbk,
			(cl_int)g->sbn, (cl_int)g->sa, (cl_int)g->sb, (cl_int)g->sy, 0 };
	const cl_mem *mems[5] = { &g->a, &g->b, &g->bias, &g->z, &g->y };
	int rc;

	for (int i = 0; i < 5; i++)
		if ((rc = ocl_arg(r, kk, i, sizeof(cl_mem), mems[i])))
			return rc;
	for (int i = 0; i < 8; i++)
		if ((rc = OCL_ARG(r, kk, 5 + i, v[i])))
			return rc;
	if ((rc = OCL_ARG(r, kk, 13, g->hasb)) || (rc = OCL_ARG(r, kk, 14, g->hasz)) ||
	    (rc = OCL_ARG(r, kk, 15, g->op)))
		return rc;
	return ocl_launch_groups(r, kk, (size_t)(((g->n + 7) / 8) * g->nbatch), 256);
}

/* ---- Gemm ---- */

int ocl_op_gemm(ocl_run *r)
{
	mfs_op_ctx *ctx = r->ctx;
	const mfs_tensor *a = ctx->in[0], *b = ctx->in[1];
	const mfs_tensor *c = ctx->n_in > 2 ? ctx->in[2] : NULL;
	mfs_tensor *y = ctx->out[0];
	bool ta = onnx_attr_int(ctx->node, "transA", 0) != 0;
	bool tb = onnx_attr_int(ctx->node, "transB", 0) != 0;
	float alpha = onnx_attr_float(ctx->node, "alpha", 1.0f);
	float beta = onnx_attr_float(ctx->node, "beta", 1.0f);
	int64_t m, n, k;
	cl_mem ma, mb, my;
	int rc;

	if (a->dtype != MFS_DT_FLOAT || b->dtype != MFS_DT_FLOAT || a->shape.rank != 2 ||
	    b->shape.rank != 2 || y->shape.rank != 2 || (c && c->dtype != MFS_DT_FLOAT) ||
	    (c && c->shape.rank > 2) || !ocl_fits_int(mfs_shape_numel(&y->shape)))
		return OCL_HOST;
	m = y->shape.dims[0];
	n = y->shape.dims[1];
	k = ta ? a->shape.dims[0] : a->shape.dims[1];
	if (!(ma = ocl_in(r, 0, &rc)) || !(mb = ocl_in(r, 1, &rc)) ||
	    !(my = ocl_out(r, 0, &rc)))
		return rc;
	if (c && beta != 0.0f && mfs_shape_numel(&c->shape) > 0) {
		/* Y = broadcast(C), then the product accumulates with beta */
		ocl_cp p;
		cl_mem mc;
		int64_t s = 1;
		int off = 2 - c->shape.rank;
		if (!(mc = ocl_in(r, 2, &rc)))
			return rc;
		memset(&p, 0, sizeof(p));
		p.rank = 2;
		p.n = (cl_int)(m * n);
		p.dims[0] = (cl_int)m;
		p.dims[1] = (cl_int)n;
		p.ds[0] = (cl_int)n;
		p.ds[1] = 1;
		for (int d = 1; d >= 0; d--) {
			int dc = d - off;
			if (dc < 0) {
				p.ss[d] = 0;
				continue;
			}
			p.ss[d] = c->shape.dims[dc] == 1 ? 0 : (cl_int)s;
			s *= c->shape.dims[dc];
		}
		if ((rc = OCL_ARG(r, K_COPY_4, 0, mc)) || (rc = OCL_ARG(r, K_COPY_4, 1, my)) ||
		    (rc = OCL_ARG(r, K_COPY_4, 2, p)) || (rc = ocl_launch(r, K_COPY_4, (size_t)p.n)))
			return rc;
	} else {
		beta = 0.0f;
	}
	if (!k) {
		if (beta == 0.0f)
			return fill_zero(r, my, m * n);   /* empty product: zeros */
		return 0;   /* Y = beta*C: CLBlast with k = 0 would be refused */
	}
	if (beta != 0.0f && beta != 1.0f) {
		/* scale C by beta: CLBlast does that with beta itself */
	}
	return ocl_sgemm(r, ta, tb, (size_t)m, (size_t)n, (size_t)k, alpha, ma, 0,
			 (size_t)a->shape.dims[1], mb, 0, (size_t)b->shape.dims[1], beta, my, 0,
			 (size_t)n);
}

/* ---- MatMul ---- */

int ocl_op_matmul(ocl_run *r)
{
	mfs_op_ctx *ctx = r->ctx;
	const mfs_tensor *a = ctx->in[0], *b = ctx->in[1];
	mfs_tensor *y = ctx->out[0];
	mfs_mm_geom g;
	mfs_shape ys;
	cl_mem ma, mb, my;
	int rc;

	if (a->dtype != MFS_DT_FLOAT || b->dtype != MFS_DT_FLOAT ||
	    !ocl_fits_int(mfs_shape_numel(&y->shape)))
		return OCL_HOST;
	if ((rc = mfs_mm_geometry(ctx, &a->shape, &b->shape, &g, &ys)) < 0)
		return rc;
	if (!(ma = ocl_in(r, 0, &rc)) || !(mb = ocl_in(r, 1, &rc)) ||
	    !(my = ocl_out(r, 0, &rc)))
		return rc;
	if (!g.m || !g.n || !g.nbatch)
		return 0;
	if (!g.k)
		return fill_zero(r, my, mfs_shape_numel(&y->shape));
	if (g.b_single && use_gemv(r, g.m * g.nbatch)) {
		int64_t offa, offb;
		bool contiguous = true;
		for (int64_t bi = 0; bi < g.nbatch && contiguous; bi++) {
			mfs_mm_batch_offsets(&g, bi, &offa, &offb);
			contiguous = offa == bi * g.m * g.k;
		}
		gemv_args ga = { .a = ma, .b = mb, .bias = my, .z = my, .y = my,
				 .rows = g.m * g.nbatch, .n = g.n, .k = g.k, .sbk = g.n, .sbn = 1,
				 .nbatch = 1, .op = OCL_U_COPY };
		if (contiguous)
			return gemv(r, &ga);
	}
	if (g.b_single) {
		/* A's batch folds into its rows: one product */
		int64_t offa, offb;
		bool contiguous = true;
		for (int64_t bi = 0; bi < g.nbatch && contiguous; bi++) {
			mfs_mm_batch_offsets(&g, bi, &offa, &offb);
			contiguous = offa == bi * g.m * g.k;
		}
		if (contiguous)
			return ocl_sgemm(r, false, false, (size_t)(g.m * g.nbatch), (size_t)g.n,
					 (size_t)g.k, 1.0f, ma, 0, (size_t)g.k, mb, 0, (size_t)g.n, 0.0f,
					 my, 0, (size_t)g.n);
	}
	{
		/* regular strides: one strided-batched call */
		int64_t sa = -1, sb = -1, offa, offb;
		bool regular = true;
		for (int64_t bi = 0; bi < g.nbatch && regular; bi++) {
			mfs_mm_batch_offsets(&g, bi, &offa, &offb);
			if (bi == 1) {
				sa = offa;
				sb = offb;
			}
			if (bi >= 1)
				regular = offa == bi * sa && offb == bi * sb;
			else
				regular = offa == 0 && offb == 0;
		}
		gemv_args ga = { .a = ma, .b = mb, .bias = my, .z = my, .y = my, .rows = g.m,
				 .n = g.n, .k = g.k, .sbk = g.n, .sbn = 1, .sa = sa, .sb = sb,
				 .sy = g.m * g.n, .nbatch = g.nbatch, .op = OCL_U_COPY };
		if (regular && g.nbatch > 1 && sa >= 0 && sb >= 0 && use_gemv(r, g.m) &&
		    ocl_fits_int(sa * g.nbatch) && ocl_fits_int(sb * g.nbatch))
			return gemv(r, &ga);
		if (regular && g.nbatch > 1 && sa > 0 && sb > 0)
			return ocl_sgemm_batched(r, (size_t)g.m, (size_t)g.n, (size_t)g.k, 1.0f,
						 ma, (size_t)g.k, (size_t)sa, mb, (size_t)g.n,
						 (size_t)sb, my, (size_t)g.n, (size_t)(g.m * g.n),
						 (size_t)g.nbatch);
	}
	for (int64_t bi = 0; bi < g.nbatch; bi++) {
		int64_t offa, offb;
		mfs_mm_batch_offsets(&g, bi, &offa, &offb);
		if ((rc = ocl_sgemm(r, false, false, (size_t)g.m, (size_t)g.n, (size_t)g.k, 1.0f,
				    ma, (size_t)offa, (size_t)g.k, mb, (size_t)offb, (size_t)g.n, 0.0f,
				    my, (size_t)(bi * g.m * g.n), (size_t)g.n)))
			return rc;
	}
	return 0;
}

/* ---- Dense (com.modelfs): act(A W + bias) ---- */

/* Y's rows as one GEMM of A's rows by W (CLBlast, as Gemm), then one
 * in-place epilogue pass for the bias and the activation. */
/* Whether a Dense takes dense_gemm_64 (product, bias and activation in
 * one kernel) instead of CLBlast + dense_epilogue: on devices with
 * 256-item groups, where its 64 x 64 tiles give every compute unit one.
 * MODELFS_OCL_DENSE=clblast or =own forces one (A/B runs). */
static bool dense_use_own_gemm(ocl_run *r, int64_t rows, int64_t n)
{
	const char *env = getenv("MODELFS_OCL_DENSE");

	if (ocl_max_group(r) < 256 || (env && !strcmp(env, "clblast")))
		return false;
	if (env && !strcmp(env, "own"))
		return true;
	return ((rows + 63) / 64) * ((n + 63) / 64) >= (int64_t)ocl_compute_units(r);
}

int ocl_op_dense(ocl_run *r)
{
	static const char *const names[] = { "", "Relu", "Gelu", "GeluTanh" };
	static const cl_int ops[] = { OCL_U_COPY, OCL_U_RELU, OCL_U_GELU, OCL_U_GELU_TANH };
	mfs_op_ctx *ctx = r->ctx;
	const mfs_tensor *a = ctx->in[0], *w = ctx->in[1];
	const mfs_tensor *b = ctx->n_in > 2 ? ctx->in[2] : NULL;
	const mfs_tensor *z = ctx->n_in > 3 ? ctx->in[3] : NULL;
	mfs_tensor *y = ctx->out[0];
	const char *act = onnx_attr_string(ctx->node, "activation", "");
	bool tb = onnx_attr_int(ctx->node, "transB", 0) != 0;
	int64_t k, n, rows, ny = mfs_shape_numel(&y->shape);
	cl_int op = -1, hasb = b != NULL, hasz = z != NULL, cn, cols;
	cl_mem ma, mw, mb, mz, my;
	int rc;

	for (int i = 0; i < 4; i++)
		if (!strcmp(act, names[i]))
			op = ops[i];
	if (op < 0 || a->dtype != MFS_DT_FLOAT || w->dtype != MFS_DT_FLOAT ||
	    w->shape.rank != 2 || a->shape.rank < 1 || (b && b->dtype != MFS_DT_FLOAT) ||
	    !ocl_fits_int(ny) || !ocl_fits_int(mfs_shape_numel(&a->shape)))
		return OCL_HOST;   /* the CPU operator reports or computes it */
	k = w->shape.dims[tb];
	n = w->shape.dims[!tb];
	/* a residual Z of another shape than the product (Add's broadcast)
	 * is the CPU operator's */
	mfs_shape prod = a->shape;
	prod.dims[prod.rank - 1] = n;
	if (z && (z->dtype != MFS_DT_FLOAT || !mfs_shape_equal(&z->shape, &prod) ||
		  !mfs_shape_equal(&y->shape, &prod)))
		return OCL_HOST;
	rows = n ? ny / n : 0;
	if (!(ma = ocl_in(r, 0, &rc)) || !(mw = ocl_in(r, 1, &rc)) ||
	    !(my = ocl_out(r, 0, &rc)))
		return rc;
	mb = mz = my;
	if ((b && !(mb = ocl_in(r, 2, &rc))) || (z && !(mz = ocl_in(r, 3, &rc))))
		return rc;
	if (!ny)
		return 0;
	if (k && use_gemv(r, rows)) {
		gemv_args ga = { .a = ma, .b = mw, .bias = mb, .z = mz, .y = my, .rows = rows,
				 .n = n, .k = k, .sbk = tb ? 1 : n, .sbn = tb ? k : 1, .nbatch = 1,
				 .hasb = hasb, .hasz = hasz, .op = op };
		return gemv(r, &ga);
	}
	if (k && dense_use_own_gemm(r, rows, n)) {
		ocl_kid kg = K_DENSE_GEMM_64;
		cl_int crows = (cl_int)rows, cn64 = (cl_int)n, ck = (cl_int)k, ctb = tb;
		if ((rc = OCL_ARG(r, kg, 0, ma)) || (rc = OCL_ARG(r, kg, 1, mw)) ||
		    (rc = OCL_ARG(r, kg, 2, mb)) || (rc = OCL_ARG(r, kg, 3, mz)) ||
		    (rc = OCL_ARG(r, kg, 4, my)) || (rc = OCL_ARG(r, kg, 5, crows)) ||
		    (rc = OCL_ARG(r, kg, 6, cn64)) || (rc = OCL_ARG(r, kg, 7, ck)) ||
		    (rc = OCL_ARG(r, kg, 8, ctb)) || (rc = OCL_ARG(r, kg, 9, hasb)) ||
		    (rc = OCL_ARG(r, kg, 10, hasz)) || (rc = OCL_ARG(r, kg, 11, op)))
			return rc;
		return ocl_launch_groups(r, kg, (size_t)(((rows + 63) / 64) * ((n + 63) / 64)), 256);
	}
	rc = k ? ocl_sgemm(r, false, tb, (size_t)rows, (size_t)n, (size_t)k, 1.0f, ma, 0,
			   (size_t)k, mw, 0, (size_t)(tb ? k : n), 0.0f, my, 0, (size_t)n)
	       : fill_zero(r, my, ny);
	if (rc || (!hasb && !hasz && op == OCL_U_COPY))
		return rc;
	cn = (cl_int)ny;
	cols = (cl_int)n;
	ocl_kid kk = K_DENSE_EPILOGUE;
	if ((rc = OCL_ARG(r, kk, 0, my)) || (rc = OCL_ARG(r, kk, 1, mb)) ||
	    (rc = OCL_ARG(r, kk, 2, mz)) || (rc = OCL_ARG(r, kk, 3, cn)) ||
	    (rc = OCL_ARG(r, kk, 4, cols)) || (rc = OCL_ARG(r, kk, 5, hasb)) ||
	    (rc = OCL_ARG(r, kk, 6, hasz)) || (rc = OCL_ARG(r, kk, 7, op)))
		return rc;
	return ocl_launch(r, kk, (size_t)ny);
}

/* ---- Attention (com.modelfs): softmax(mask(scale Q Kt)) V ---- */

/* c_i = alpha a_i b_i (b_i transposed when tb) for the nb items of g,
 * each at its own offsets (layout 1: items are (batch, head) pairs whose
 * matrices interleave in the projections' rows). */
static int sgemm_items(ocl_run *r, const mfs_attn_geom *g, bool tb, size_t m, size_t n,
		       size_t k, float alpha, cl_mem a, const mfs_attn_mat *am, cl_mem b,
		       const mfs_attn_mat *bm, cl_mem c, const mfs_attn_mat *cm)
{
	size_t nb = (size_t)g->nb, *off = malloc(3 * nb * sizeof(size_t));
	float *ab = malloc(2 * nb * sizeof(float));
	CLBlastStatusCode s = CLBlastSuccess;
	cl_event ev;

	if (!off || !ab) {
		free(off);
		free(ab);
		return mfs_op_fail(r->ctx, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < nb; i++) {
		int64_t bi = (int64_t)i / g->heads, h = (int64_t)i % g->heads;
		off[i] = (size_t)mfs_attn_offset(am, bi, h);
		off[nb + i] = (size_t)mfs_attn_offset(bm, bi, h);
		off[2 * nb + i] = (size_t)mfs_attn_offset(cm, bi, h);
		ab[i] = alpha;
		ab[nb + i] = 0.0f;
	}
	if (m && n && nb) {
		ocl_blast_lock();
		s = CLBlastSgemmBatched(CLBlastLayoutRowMajor, CLBlastTransposeNo,
					tb ? CLBlastTransposeYes : CLBlastTransposeNo, m, n, k, ab, a,
					off, (size_t)am->ld, b, off + nb, (size_t)bm->ld, ab + nb, c,
					off + 2 * nb, (size_t)cm->ld, nb, ocl_queue(r),
					ocl_prof_event(r, &ev));
		ocl_blast_unlock();
	}
	free(off);
	free(ab);
	if (s != CLBlastSuccess)
		return ocl_blast_fail(r, s, "SgemmBatched");
	if (m && n && nb)
		ocl_prof_add(r, ev, K_COUNT);
	return 0;
}

/* Per batch item (layout 0: Q's leading dims; layout 1: batch and head):
 * the scores by one batched GEMM with alpha = scale into scratch, the
 * mask and the softmax in place by one work group per score row, then one
 * more batched GEMM by V.  Layout 0 items are evenly strided, layout 1
 * items are addressed one by one (op_geometry.h). */
int ocl_op_attention(ocl_run *r)
{
	mfs_op_ctx *ctx = r->ctx;
	const mfs_tensor *q = ctx->in[0], *kt = ctx->in[1], *v = ctx->in[2];
	const mfs_tensor *c = ctx->n_in > 3 ? ctx->in[3] : NULL;
	float scale = onnx_attr_float(ctx->node, "scale", 1.0f);
	float fill = onnx_attr_float(ctx->node, "fill", 0.0f);
	cl_int keep = onnx_attr_int(ctx->node, "keep_if", 1) != 0;
	int64_t nb, s, t, dk, dv;
	mfs_attn_geom g;
	mfs_shape ss;
	ocl_bc p;
	cl_mem mq, mk, mv, mc = NULL, my, sc;
	int rc;

	if (q->dtype != MFS_DT_FLOAT || kt->dtype != MFS_DT_FLOAT || v->dtype != MFS_DT_FLOAT ||
	    (c && c->dtype != MFS_DT_BOOL) || q->shape.rank < 2 || q->shape.rank > OCL_MAXR ||
	    mfs_attn_geometry(ctx, &g) < 0)
		return OCL_HOST;   /* the CPU operator's error */
	nb = g.nb;
	s = g.s;
	t = g.t;
	dk = g.dk;
	dv = g.dv;
	ss.rank = g.srank;
	memcpy(ss.dims, g.sdims, sizeof(ss.dims));   /* the scores' shape */
	if (!t || !dk || !ocl_fits_int(nb * s * t) || !ocl_fits_int(mfs_shape_numel(&q->shape)) ||
	    !ocl_fits_int(mfs_shape_numel(&kt->shape)) || !ocl_fits_int(mfs_shape_numel(&v->shape)) ||
	    !ocl_fits_int(mfs_shape_numel(&ctx->out[0]->shape)) ||
	    (c && !ocl_bc_make(&p, &ss, &c->shape, NULL, NULL)))
		return OCL_HOST;   /* empty keys: the CPU operator's error */
	if (!(my = ocl_out(r, 0, &rc)))
		return rc;
	if (!nb || !s || !dv)
		return 0;
	if (!(mq = ocl_in(r, 0, &rc)) || !(mk = ocl_in(r, 1, &rc)) ||
	    !(mv = ocl_in(r, 2, &rc)) || (c && !(mc = ocl_in(r, 3, &rc))) ||
	    !(sc = ocl_scratch(r, sizeof(float) * (size_t)(nb * s * t), &rc)))
		return rc;
	if (g.layout == 1) {
		mfs_attn_mat sm = { 0, g.heads * s * t, s * t, t };
		if ((rc = sgemm_items(r, &g, true, (size_t)s, (size_t)t, (size_t)dk, scale, mq,
				      &g.q, mk, &g.k, sc, &sm)) ||
		    (rc = ocl_softmax_rows(r, sc, sc, nb * s, t, 0, mc, &p, keep, fill)))
			return rc;
		return sgemm_items(r, &g, false, (size_t)s, (size_t)dv, (size_t)t, 1.0f, sc, &sm,
				   mv, &g.v, my, &g.y);
	}
	if ((rc = ocl_sgemm_batched(r, (size_t)s, (size_t)t, (size_t)dk, scale, mq, (size_t)dk,
				    (size_t)(s * dk), mk, (size_t)t, (size_t)(dk * t), sc, (size_t)t,
				    (size_t)(s * t), (size_t)nb)) ||
	    (rc = ocl_softmax_rows(r, sc, sc, nb * s, t, 0, mc, &p, keep, fill)))
		return rc;
	return ocl_sgemm_batched(r, (size_t)s, (size_t)dv, (size_t)t, 1.0f, sc, (size_t)t,
				 (size_t)(s * t), mv, (size_t)dv, (size_t)(t * dv), my, (size_t)dv,
				 (size_t)(s * dv), (size_t)nb);
}

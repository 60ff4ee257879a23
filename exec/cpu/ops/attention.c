/* Attention (com.modelfs 1): Y = softmax(mask(scale * Q Kt)) V over the
 * last two dims, the scaled dot-product attention the attention rewrite
 * (exec/graph/rewrite_attention.c) makes of MatMul, Div/Mul, Where, Softmax,
 * MatMul.
 *
 * Inputs Q, K, V (float) in one of two layouts (exec/op/op_geometry.h): layout 0,
 * Q [..., S, Dk], Kt [..., Dk, T], V [..., T, Dv] with the same leading
 * "batch" dims (typically batch and heads); layout 1, Q [B, S, H, Dk], K
 * [B, T, H, Dk], V [B, T, H, Dv] (or a packed [B, L, P, H, D] with
 * q_part, k_part, v_part), read where the projections wrote them, which
 * spares the Transposes and the Split around attention.  Optional Cond
 * (bool, broadcastable to the scores [..., S, T], [B, H, S, T] in layout
 * 1).  Output [..., S, Dv], or [B, S, H, Dv] in layout 1.  Attributes:
 * scale (float, default 1); fill (float) and keep_if (int): with Cond, a
 * score whose Cond equals keep_if stays, the others become fill
 * (Where(Cond, x, fill) is keep_if 1, Where(Cond, fill, x) keep_if 0);
 * layout (int, 0 or 1) and the parts.
 *
 * How: each batch item's S x T scores live in a per-thread scratch row
 * block (prepared once) while they are scaled, masked, normalised and
 * multiplied by V, instead of four tensors written and read back.  Batch
 * items run in parallel, each product on one thread; a single item lets
 * the GEMM use every thread instead.  In layout 1 the scores' product
 * reads K transposed (rows ld apart); copying each item's K transposed
 * into the scratch first was no faster (docs/PERFORMANCE.md).
 */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "op_geometry.h"
#include "dense_util.h"
#include "vmath.h"

typedef struct attn_state {
	float *scratch;          /* threads x per_thread */
	size_t per_thread;       /* S * T */
	int threads;
} attn_state;

static int attn_infer(mfs_op_ctx *ctx)
{
	mfs_attn_geom g;
	int rc = mfs_attn_geometry(ctx, &g);
	mfs_shape *y = &ctx->out[0]->shape;

	if (rc < 0)
		return rc;
	ctx->out[0]->dtype = MFS_DT_FLOAT;
	if (g.layout == 1) {
		*y = (mfs_shape){ 4, { g.sdims[0], g.s, g.heads, g.dv } };
		return 0;
	}
	*y = ctx->in[0]->shape;
	y->dims[y->rank - 1] = g.dv;
	return 0;
}

static int attn_prepare(mfs_op_ctx *ctx)
{
	attn_state *s = *ctx->state;
	mfs_attn_geom g;
	int rc = mfs_attn_geometry(ctx, &g), threads = omp_get_max_threads();

	if (rc < 0)
		return rc;
	size_t need = (size_t)(g.s * g.t);
	if (s && s->per_thread == need && s->threads == threads)
		return 0;
	if (!s && !(s = *ctx->state = calloc(1, sizeof(*s))))
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	free(s->scratch);
	s->scratch = NULL;
	s->per_thread = need;
	s->threads = threads;
	if (need > ((size_t)1 << 32) / (size_t)threads)   /* 16 GiB of scores */
		return mfs_op_fail(ctx, EFBIG, "scores of %lld x %lld are too large",
				   (long long)g.s, (long long)g.t);
	if (need && !(s->scratch = malloc(need * (size_t)threads * sizeof(float))))
		return mfs_op_fail(ctx, ENOMEM, "out of memory for the scores");
	return 0;
}

/* c [m, n] (rows ldc apart) = alpha a [m, k] (lda) b [k, n] (ldb; b [n,
 * k] read transposed when tb) */
static void gemm(bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
		 int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc)
{
	if (dnnl_sgemm('N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, 0.0f, c, ldc) !=
	    dnnl_success)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m,
			    (int)n, (int)k, alpha, a, (int)lda, b, (int)ldb, 0.0f, c, (int)ldc);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static void softmax_row(float *x, int64_t n)
{
	float mx = -INFINITY, sum = 0;
	for (int64_t i = 0; i < n; i++)
		mx = x[i] > mx ? x[i] : mx;
	#pragma omp simd reduction(+:sum)
	for (int64_t i = 0; i < n; i++) {
		x[i] = ew_expf(x[i] - mx);
		sum += x[i];
	}
	float inv = 1.0f / sum;
	#pragma omp simd
	for (int64_t i = 0; i < n; i++)
		x[i] *= inv;
}

static const float *at(const float *base, const mfs_attn_mat *m, int64_t b, int64_t h)
{
	return base + mfs_attn_offset(m, b, h);
}

/* One batch item: scores into sc, then the output rows. */
static void attn_item(const mfs_attn_geom *g, int64_t bi, const float *q, const float *k,
		      const float *v, const uint8_t *cond, float scale, float fill, int keep,
		      float *sc, float *y)
{
	int64_t b = bi / g->heads, h = bi % g->heads;

	/* K's rows are the scores' columns in layout 1 */
	gemm(g->layout == 1, g->s, g->t, g->dk, scale, at(q, &g->q, b, h), g->q.ld,
	     at(k, &g->k, b, h), g->k.ld, sc, g->t);
	if (cond) {
		int64_t base = 0, rem = bi;
		int64_t si = g->cstride[g->srank - 2], sj = g->cstride[g->srank - 1];
		for (int d = g->srank - 3; d >= 0; d--) {   /* bi's batch coordinates */
			base += (rem % g->sdims[d]) * g->cstride[d];
			rem /= g->sdims[d];
		}
		for (int64_t i = 0; i < g->s; i++)
			for (int64_t j = 0; j < g->t; j++)
				if ((cond[base + i * si + j * sj] != 0) != keep)
					sc[i * g->t + j] = fill;
	}
	for (int64_t i = 0; i < g->s; i++)
		softmax_row(sc + i * g->t, g->t);
	gemm(false, g->s, g->dv, g->t, 1.0f, sc, g->t, at(v, &g->v, b, h), g->v.ld,
	     (float *)at(y, &g->y, b, h), g->y.ld);
}

static int attn_run(mfs_op_ctx *ctx)
{
	attn_state *s = *ctx->state;
	const mfs_tensor *c = ctx->n_in > 3 ? ctx->in[3] : NULL;
	const float *q = ctx->in[0]->data, *k = ctx->in[1]->data, *v = ctx->in[2]->data;
	float *y = ctx->out[0]->data;
	float scale = onnx_attr_float(ctx->node, "scale", 1.0f);
	float fill = onnx_attr_float(ctx->node, "fill", 0.0f);
	int keep = onnx_attr_int(ctx->node, "keep_if", 1) != 0;
	mfs_attn_geom g;
	int rc = mfs_attn_geometry(ctx, &g);

	if (rc < 0)
		return rc;
	if (g.nb == 0 || g.s == 0 || g.dv == 0)
		return 0;
	if (g.t == 0 || g.dk == 0 || !s || !s->scratch)
		return mfs_op_fail(ctx, EINVAL, "empty key dimension: softmax over nothing");
	const uint8_t *cd = c ? c->data : NULL;
	if (g.nb == 1) {
		attn_item(&g, 0, q, k, v, cd, scale, fill, keep, s->scratch, y);
		return 0;
	}
	/* the threads this run may use (overlapping runs share them), at
	 * most those the scratch was sized for */
	int nt = omp_get_max_threads() < s->threads ? omp_get_max_threads() : s->threads;
	#pragma omp parallel for schedule(static) num_threads(nt)
	for (int64_t bi = 0; bi < g.nb; bi++)
		attn_item(&g, bi, q, k, v, cd, scale, fill, keep,
			  s->scratch + (size_t)omp_get_thread_num() * s->per_thread, y);
	return 0;
}

static void attn_release(void *state)
{
	attn_state *s = state;
	if (s)
		free(s->scratch);
	free(s);
}

MFS_OP_DOMAIN("com.modelfs", Attention, 1, .flags = MFS_OP_HALF_VIA_FLOAT, .infer = attn_infer,
	      .prepare = attn_prepare, .run = attn_run, .release = attn_release);

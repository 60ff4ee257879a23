/* Attention (com.modelfs 1): Y = softmax(mask(scale * Q Kt)) V over the
 * last two dims, the scaled dot-product attention the attention rewrite
 * (exec/rewrite_attention.c) makes of MatMul, Div/Mul, Where, Softmax,
 * MatMul.
 *
 * Inputs: Q [..., S, Dk], Kt [..., Dk, T], V [..., T, Dv] (float, the same
 * leading "batch" dims, typically batch and heads), optional Cond (bool,
 * broadcastable to [..., S, T]).  Output [..., S, Dv].  Attributes: scale
 * (float, default 1); fill (float) and keep_if (int): with Cond, a score
 * whose Cond equals keep_if stays, the others become fill (Where(Cond, x,
 * fill) is keep_if 1, Where(Cond, fill, x) keep_if 0).
 *
 * How: each batch item's S x T scores live in a per-thread scratch row
 * block (prepared once) while they are scaled, masked, normalised and
 * multiplied by V, instead of four tensors written and read back.  Batch
 * items run in parallel, each product on one thread; a single item lets
 * the GEMM use every thread instead.
 */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "dense_util.h"
#include "vmath.h"

typedef struct attn_state {
	float *scratch;          /* threads x S x T */
	size_t per_thread;       /* S * T */
	int threads;
} attn_state;

typedef struct attn_geom {
	int rank;
	int64_t nb, s, t, dk, dv;
	int64_t bdims[MFS_MAX_RANK];     /* the batch dims (Q's leading dims) */
	int64_t cstride[MFS_MAX_RANK];   /* Cond's element strides per output dim (0: broadcast) */
} attn_geom;

static int attn_geometry(mfs_op_ctx *ctx, attn_geom *g)
{
	const mfs_tensor *q = ctx->in[0], *k = ctx->n_in > 1 ? ctx->in[1] : NULL;
	const mfs_tensor *v = ctx->n_in > 2 ? ctx->in[2] : NULL;
	const mfs_tensor *c = ctx->n_in > 3 ? ctx->in[3] : NULL;
	int r = q->shape.rank;

	if (!k || !v)
		return mfs_op_fail(ctx, EINVAL, "needs Q, Kt and V");
	if (q->dtype != MFS_DT_FLOAT || k->dtype != MFS_DT_FLOAT || v->dtype != MFS_DT_FLOAT)
		return mfs_op_fail(ctx, ENOTSUP, "Q, Kt and V must be float");
	if (q->layout != MFS_LAYOUT_PLAIN || k->layout != MFS_LAYOUT_PLAIN ||
	    v->layout != MFS_LAYOUT_PLAIN || (c && c->layout != MFS_LAYOUT_PLAIN))
		return mfs_op_fail(ctx, EINVAL, "inputs must be in plain layout");
	if (r < 2 || k->shape.rank != r || v->shape.rank != r)
		return mfs_op_fail(ctx, EINVAL, "Q, Kt and V must have one rank >= 2");
	g->rank = r;
	g->nb = 1;
	for (int i = 0; i < r - 2; i++) {
		if (k->shape.dims[i] != q->shape.dims[i] || v->shape.dims[i] != q->shape.dims[i])
			return mfs_op_fail(ctx, EINVAL, "Q, Kt and V differ in dim %d", i);
		g->nb *= q->shape.dims[i];
		g->bdims[i] = q->shape.dims[i];
	}
	g->s = q->shape.dims[r - 2];
	g->dk = q->shape.dims[r - 1];
	g->t = k->shape.dims[r - 1];
	g->dv = v->shape.dims[r - 1];
	if (k->shape.dims[r - 2] != g->dk || v->shape.dims[r - 2] != g->t)
		return mfs_op_fail(ctx, EINVAL, "Q [.., %lld, %lld], Kt [.., %lld, %lld], V [.., %lld, %lld] do not chain",
				   (long long)g->s, (long long)g->dk, (long long)k->shape.dims[r - 2],
				   (long long)g->t, (long long)v->shape.dims[r - 2], (long long)g->dv);
	memset(g->cstride, 0, sizeof(g->cstride));
	if (!c)
		return 0;
	if (c->dtype != MFS_DT_BOOL || c->shape.rank > r)
		return mfs_op_fail(ctx, EINVAL, "Cond must be bool of rank <= %d", r);
	int64_t st = 1;
	for (int i = c->shape.rank - 1, d = r - 1; i >= 0; i--, d--) {
		int64_t want = d == r - 2 ? g->s : d == r - 1 ? g->t : q->shape.dims[d];
		if (c->shape.dims[i] != 1 && c->shape.dims[i] != want)
			return mfs_op_fail(ctx, EINVAL, "Cond does not broadcast to the scores");
		g->cstride[d] = c->shape.dims[i] == 1 ? 0 : st;
		st *= c->shape.dims[i];
	}
	return 0;
}

static int attn_infer(mfs_op_ctx *ctx)
{
	attn_geom g;
	int rc = attn_geometry(ctx, &g);
	if (rc < 0)
		return rc;
	ctx->out[0]->dtype = MFS_DT_FLOAT;
	ctx->out[0]->shape = ctx->in[0]->shape;
	ctx->out[0]->shape.dims[g.rank - 1] = g.dv;
	return 0;
}

static int attn_prepare(mfs_op_ctx *ctx)
{
	attn_state *s = *ctx->state;
	attn_geom g;
	int rc = attn_geometry(ctx, &g), threads = omp_get_max_threads();

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

static void gemm(int64_t m, int64_t n, int64_t k, float alpha, const float *a, const float *b,
		 float *c)
{
	if (dnnl_sgemm('N', 'N', m, n, k, alpha, a, k, b, n, 0.0f, c, n) != dnnl_success)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k,
			    alpha, a, (int)k, b, (int)n, 0.0f, c, (int)n);
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

/* One batch item: scores into sc, then the output rows. */
static void attn_item(const attn_geom *g, int64_t bi, const float *q, const float *k,
		      const float *v, const uint8_t *cond, float scale, float fill, int keep,
		      float *sc, float *y)
{
	gemm(g->s, g->t, g->dk, scale, q + bi * g->s * g->dk, k + bi * g->dk * g->t, sc);
	if (cond) {
		int64_t base = 0, rem = bi;
		int64_t si = g->cstride[g->rank - 2], sj = g->cstride[g->rank - 1];
		for (int d = g->rank - 3; d >= 0; d--) {   /* bi's batch coordinates */
			base += (rem % g->bdims[d]) * g->cstride[d];
			rem /= g->bdims[d];
		}
		for (int64_t i = 0; i < g->s; i++)
			for (int64_t j = 0; j < g->t; j++)
				if ((cond[base + i * si + j * sj] != 0) != keep)
					sc[i * g->t + j] = fill;
	}
	for (int64_t i = 0; i < g->s; i++)
		softmax_row(sc + i * g->t, g->t);
	gemm(g->s, g->dv, g->t, 1.0f, sc, v + bi * g->t * g->dv, y + bi * g->s * g->dv);
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
	attn_geom g;
	int rc = attn_geometry(ctx, &g);

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

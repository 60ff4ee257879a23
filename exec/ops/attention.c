/* Attention (com.modelfs 1): Y = softmax(mask(scale * Q Kt)) V over the
 * last two dims, the scaled dot-product attention the attention rewrite
 * (exec/rewrite_attention.c) makes of MatMul, Div/Mul, Where, Softmax,
 * MatMul.
 *
 * Inputs Q, K, V (float) in one of two layouts (attention.h): layout 0,
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

#include "attention.h"
#include "dense_util.h"
#include "vmath.h"

typedef struct attn_state {
	float *scratch;          /* threads x per_thread */
	size_t per_thread;       /* S * T */
	int threads;
} attn_state;

/* A layout 1 operand x ([B, L, H, D], or [B, L, P, H, D] with the
 * attribute part_attr and, when a Split made the parts, parts_attr): its
 * matrix addressing, and dims B, L, H, D. */
static int bshd_operand(mfs_op_ctx *ctx, const char *what, const mfs_tensor *x,
			const char *part_attr, const char *parts_attr, mfs_attn_mat *m,
			int64_t dims[4])
{
	int r = x->shape.rank;
	int64_t part = onnx_attr_int(ctx->node, part_attr, -1);
	/* the parts a Split made: the packed dim must have them all */
	int64_t parts = onnx_attr_int(ctx->node, parts_attr, 0);

	if (r != 4 && r != 5)
		return mfs_op_fail(ctx, EINVAL, "%s must be [B, L, H, D] or [B, L, P, H, D] in layout 1, not of rank %d",
				   what, r);
	if ((r == 5) != (part >= 0) || (r == 5 && part >= x->shape.dims[2]))
		return mfs_op_fail(ctx, EINVAL, "%s: part %lld of %s", what, (long long)part,
				   r == 5 ? "a packed input with fewer parts" : "an input that is not packed");
	if (r == 5 && parts > 0 && x->shape.dims[2] != parts)
		return mfs_op_fail(ctx, EINVAL, "%s: %lld parts packed where the graph split %lld",
				   what, (long long)x->shape.dims[2], (long long)parts);
	dims[0] = x->shape.dims[0];
	dims[1] = x->shape.dims[1];
	dims[2] = x->shape.dims[r - 2];
	dims[3] = x->shape.dims[r - 1];
	m->hstride = dims[3];
	m->ld = dims[2] * dims[3] * (r == 5 ? x->shape.dims[2] : 1);
	m->off = r == 5 ? part * dims[2] * dims[3] : 0;
	m->bstride = dims[1] * m->ld;
	return 0;
}

static int geometry_bshd(mfs_op_ctx *ctx, mfs_attn_geom *g)
{
	int64_t q[4], k[4], v[4];
	int rc;

	if ((rc = bshd_operand(ctx, "Q", ctx->in[0], "q_part", "q_parts", &g->q, q)) < 0 ||
	    (rc = bshd_operand(ctx, "K", ctx->in[1], "k_part", "k_parts", &g->k, k)) < 0 ||
	    (rc = bshd_operand(ctx, "V", ctx->in[2], "v_part", "v_parts", &g->v, v)) < 0)
		return rc;
	if (k[0] != q[0] || v[0] != q[0] || k[2] != q[2] || v[2] != q[2] || k[3] != q[3] ||
	    v[1] != k[1])
		return mfs_op_fail(ctx, EINVAL, "Q [%lld, %lld, %lld, %lld], K [%lld, %lld, %lld, %lld], V [%lld, %lld, %lld, %lld] do not fit",
				   (long long)q[0], (long long)q[1], (long long)q[2], (long long)q[3],
				   (long long)k[0], (long long)k[1], (long long)k[2], (long long)k[3],
				   (long long)v[0], (long long)v[1], (long long)v[2], (long long)v[3]);
	g->heads = q[2];
	g->nb = q[0] * q[2];
	g->s = q[1];
	g->t = k[1];
	g->dk = q[3];
	g->dv = v[3];
	g->y = (mfs_attn_mat){ 0, g->s * g->heads * g->dv, g->dv, g->heads * g->dv };
	g->srank = 4;
	g->sdims[0] = q[0];
	g->sdims[1] = q[2];
	g->sdims[2] = g->s;
	g->sdims[3] = g->t;
	return 0;
}

static int geometry_plain(mfs_op_ctx *ctx, mfs_attn_geom *g)
{
	const mfs_tensor *q = ctx->in[0], *k = ctx->in[1], *v = ctx->in[2];
	int r = q->shape.rank;

	if (r < 2 || k->shape.rank != r || v->shape.rank != r)
		return mfs_op_fail(ctx, EINVAL, "Q, Kt and V must have one rank >= 2");
	g->nb = 1;
	for (int i = 0; i < r - 2; i++) {
		if (k->shape.dims[i] != q->shape.dims[i] || v->shape.dims[i] != q->shape.dims[i])
			return mfs_op_fail(ctx, EINVAL, "Q, Kt and V differ in dim %d", i);
		g->nb *= q->shape.dims[i];
		g->sdims[i] = q->shape.dims[i];
	}
	g->heads = 1;
	g->s = q->shape.dims[r - 2];
	g->dk = q->shape.dims[r - 1];
	g->t = k->shape.dims[r - 1];
	g->dv = v->shape.dims[r - 1];
	if (k->shape.dims[r - 2] != g->dk || v->shape.dims[r - 2] != g->t)
		return mfs_op_fail(ctx, EINVAL, "Q [.., %lld, %lld], Kt [.., %lld, %lld], V [.., %lld, %lld] do not chain",
				   (long long)g->s, (long long)g->dk, (long long)k->shape.dims[r - 2],
				   (long long)g->t, (long long)v->shape.dims[r - 2], (long long)g->dv);
	g->q = (mfs_attn_mat){ 0, g->s * g->dk, 0, g->dk };
	g->k = (mfs_attn_mat){ 0, g->dk * g->t, 0, g->t };
	g->v = (mfs_attn_mat){ 0, g->t * g->dv, 0, g->dv };
	g->y = (mfs_attn_mat){ 0, g->s * g->dv, 0, g->dv };
	g->srank = r;
	g->sdims[r - 2] = g->s;
	g->sdims[r - 1] = g->t;
	return 0;
}

int mfs_attn_geometry(mfs_op_ctx *ctx, mfs_attn_geom *g)
{
	const mfs_tensor *q = ctx->in[0], *k = ctx->n_in > 1 ? ctx->in[1] : NULL;
	const mfs_tensor *v = ctx->n_in > 2 ? ctx->in[2] : NULL;
	const mfs_tensor *c = ctx->n_in > 3 ? ctx->in[3] : NULL;
	int rc;

	memset(g, 0, sizeof(*g));
	g->layout = (int)onnx_attr_int(ctx->node, "layout", 0);
	if (!k || !v)
		return mfs_op_fail(ctx, EINVAL, "needs Q, K and V");
	if (g->layout != 0 && g->layout != 1)
		return mfs_op_fail(ctx, ENOTSUP, "layout %d is unsupported (0 or 1)", g->layout);
	if (q->dtype != MFS_DT_FLOAT || k->dtype != MFS_DT_FLOAT || v->dtype != MFS_DT_FLOAT)
		return mfs_op_fail(ctx, ENOTSUP, "Q, K and V must be float");
	if (q->layout != MFS_LAYOUT_PLAIN || k->layout != MFS_LAYOUT_PLAIN ||
	    v->layout != MFS_LAYOUT_PLAIN || (c && c->layout != MFS_LAYOUT_PLAIN))
		return mfs_op_fail(ctx, EINVAL, "inputs must be in plain layout");
	if ((rc = g->layout ? geometry_bshd(ctx, g) : geometry_plain(ctx, g)) < 0)
		return rc;
	if (!c)
		return 0;
	if (c->dtype != MFS_DT_BOOL || c->shape.rank > g->srank)
		return mfs_op_fail(ctx, EINVAL, "Cond must be bool of rank <= %d", g->srank);
	int64_t st = 1;
	for (int i = c->shape.rank - 1, d = g->srank - 1; i >= 0; i--, d--) {
		if (c->shape.dims[i] != 1 && c->shape.dims[i] != g->sdims[d])
			return mfs_op_fail(ctx, EINVAL, "Cond does not broadcast to the scores");
		g->cstride[d] = c->shape.dims[i] == 1 ? 0 : st;
		st *= c->shape.dims[i];
	}
	return 0;
}

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

/* op_geometry.c - window, matmul and attention geometry (op_geometry.h). */
#include <string.h>

#include "op_geometry.h"

static int read_ints(mfs_op_ctx *ctx, const char *name, size_t want,
		     int64_t def, int64_t min, int64_t *out)
{
	const int64_t *v;
	size_t n = onnx_attr_ints(ctx->node, name, &v);

	if (n == 0) {
		for (size_t i = 0; i < want; i++)
			out[i] = def;
		return 0;
	}
	if (n != want)
		return mfs_op_fail(ctx, EINVAL, "attribute %s has %zu values, expected %zu",
				   name, n, want);
	for (size_t i = 0; i < n; i++) {
		if (v[i] < min || v[i] > (int64_t)1 << 40)
			return mfs_op_fail(ctx, EINVAL, "attribute %s[%zu] = %lld is out of range",
					   name, i, (long long)v[i]);
		out[i] = v[i];
	}
	return 0;
}

static int64_t ceil_div(int64_t a, int64_t b)
{
	return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

int mfs_window_init(mfs_op_ctx *ctx, const mfs_shape *x, const int64_t *kernel,
		    bool allow_dilations, bool ceil_mode, mfs_window *w)
{
	int nsp = x->rank - 2;
	int64_t pads[2 * MFS_WIN_MAX], kattr[MFS_WIN_MAX];
	const int64_t *kv;
	int rc;

	memset(w, 0, sizeof(*w));
	if (nsp < 1 || nsp > MFS_WIN_MAX)
		return mfs_op_fail(ctx, ENOTSUP,
				   "input of rank %d: only 1-D, 2-D and 3-D windows (rank 3 to 5) are supported",
				   x->rank);
	w->nsp = nsp;
	for (int i = 0; i < nsp; i++) {
		w->in[i] = x->dims[2 + i];
		if (w->in[i] < 0)
			return mfs_op_fail(ctx, EINVAL, "spatial dimension %d is unknown", i);
	}

	size_t nk = onnx_attr_ints(ctx->node, "kernel_shape", &kv);
	if (nk && nk != (size_t)nsp)
		return mfs_op_fail(ctx, EINVAL,
				   "kernel_shape has %zu values for %d spatial dims", nk, nsp);
	if (!kernel && !nk)
		return mfs_op_fail(ctx, EINVAL, "attribute kernel_shape is required");
	if (nk && (rc = read_ints(ctx, "kernel_shape", nsp, 1, 1, kattr)) < 0)
		return rc;
	for (int i = 0; i < nsp; i++) {
		if (kernel && nk && kernel[i] != kattr[i])
			return mfs_op_fail(ctx, EINVAL,
					   "kernel_shape[%d] = %lld but the weights have %lld",
					   i, (long long)kattr[i], (long long)kernel[i]);
		w->k[i] = kernel ? kernel[i] : kattr[i];
		if (w->k[i] < 1)
			return mfs_op_fail(ctx, EINVAL, "kernel extent %lld is not positive",
					   (long long)w->k[i]);
	}
	if ((rc = read_ints(ctx, "strides", nsp, 1, 1, w->stride)) < 0)
		return rc;
	if (allow_dilations) {
		if ((rc = read_ints(ctx, "dilations", nsp, 1, 1, w->dil)) < 0)
			return rc;
	} else {
		for (int i = 0; i < nsp; i++)
			w->dil[i] = 1;
	}
	if ((rc = read_ints(ctx, "pads", 2 * nsp, 0, 0, pads)) < 0)
		return rc;

	const char *ap = onnx_attr_string(ctx->node, "auto_pad", "NOTSET");
	bool same_upper = !strcmp(ap, "SAME_UPPER"), same_lower = !strcmp(ap, "SAME_LOWER");
	bool valid = !strcmp(ap, "VALID");
	if (!same_upper && !same_lower && !valid && strcmp(ap, "NOTSET") && *ap)
		return mfs_op_fail(ctx, EINVAL, "auto_pad '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", ap);

	for (int i = 0; i < nsp; i++) {
		int64_t dk = (w->k[i] - 1) * w->dil[i] + 1;
		if (same_upper || same_lower) {
			w->out[i] = ceil_div(w->in[i], w->stride[i]);
			int64_t total = (w->out[i] - 1) * w->stride[i] + dk - w->in[i];
			if (total < 0)
				total = 0;
			w->pad_b[i] = same_upper ? total / 2 : total - total / 2;
			w->pad_e[i] = total - w->pad_b[i];
		} else {
			w->pad_b[i] = valid ? 0 : pads[i];
			w->pad_e[i] = valid ? 0 : pads[nsp + i];
			int64_t span = w->in[i] + w->pad_b[i] + w->pad_e[i] - dk;
			if (span < 0)
				return mfs_op_fail(ctx, EINVAL,
						   "spatial dim %d: input %lld (padded %lld) is smaller than the window %lld",
						   i, (long long)w->in[i],
						   (long long)(w->in[i] + w->pad_b[i] + w->pad_e[i]),
						   (long long)dk);
			if (ceil_mode) {
				w->out[i] = ceil_div(span, w->stride[i]) + 1;
				/* The last window must start inside the input or
				 * its leading padding. */
				if ((w->out[i] - 1) * w->stride[i] >= w->in[i] + w->pad_b[i])
					w->out[i]--;
			} else {
				w->out[i] = span / w->stride[i] + 1;
			}
		}
		if (w->out[i] < 1 && w->in[i] > 0)
			return mfs_op_fail(ctx, EINVAL, "spatial dim %d: empty output", i);
	}
	return 0;
}

int64_t mfs_window_out_size(const mfs_window *w)
{
	int64_t n = 1;
	for (int i = 0; i < w->nsp; i++)
		n *= w->out[i];
	return n;
}

int64_t mfs_window_k_size(const mfs_window *w)
{
	int64_t n = 1;
	for (int i = 0; i < w->nsp; i++)
		n *= w->k[i];
	return n;
}



/* Shapes of A and B -> geometry and output shape. */
int mfs_mm_geometry(mfs_op_ctx *ctx, const mfs_shape *as, const mfs_shape *bs,
		    mfs_mm_geom *g, mfs_shape *out)
{
	mfs_shape a = *as, b = *bs;
	bool a_vec = a.rank == 1, b_vec = b.rank == 1;

	if (a.rank < 1 || b.rank < 1)
		return mfs_op_fail(ctx, EINVAL, "operands must have rank >= 1 (got %d and %d)",
				   a.rank, b.rank);
	if (a_vec) {
		a.rank = 2;
		a.dims[1] = a.dims[0];
		a.dims[0] = 1;
	}
	if (b_vec) {
		b.rank = 2;
		b.dims[1] = 1;
	}
	memset(g, 0, sizeof(*g));
	g->m = a.dims[a.rank - 2];
	g->k = a.dims[a.rank - 1];
	g->n = b.dims[b.rank - 1];
	if (b.dims[b.rank - 2] != g->k) {
		char sa[128], sb[128];
		return mfs_op_fail(ctx, EINVAL, "shapes %s and %s: inner dimensions differ",
				   mfs_shape_format(as, sa, sizeof(sa)),
				   mfs_shape_format(bs, sb, sizeof(sb)));
	}
	mfs_shape ab = { .rank = a.rank - 2 }, bb = { .rank = b.rank - 2 }, ob;
	memcpy(ab.dims, a.dims, sizeof(int64_t) * ab.rank);
	memcpy(bb.dims, b.dims, sizeof(int64_t) * bb.rank);
	int rc = mfs_broadcast_shape(&ab, &bb, &ob, ctx->err);
	if (rc < 0)
		return mfs_op_fail(ctx, EINVAL, "batch dimensions: %s", ctx->err->msg);
	if (ob.rank + 2 > MFS_MAX_RANK)
		return mfs_op_fail(ctx, EINVAL, "result rank exceeds %d", MFS_MAX_RANK);

	g->batch_rank = ob.rank;
	g->nbatch = 1;
	g->b_single = true;
	int64_t sa = g->m * g->k, sb = g->k * g->n;
	for (int i = ob.rank - 1; i >= 0; i--) {
		int ia = i - (ob.rank - ab.rank), ib = i - (ob.rank - bb.rank);
		int64_t da = ia >= 0 ? ab.dims[ia] : 1, db = ib >= 0 ? bb.dims[ib] : 1;
		g->batch[i] = ob.dims[i];
		g->a_bstride[i] = da == 1 ? 0 : sa;
		g->b_bstride[i] = db == 1 ? 0 : sb;
		if (db != 1)
			g->b_single = false;
		sa *= da;
		sb *= db;
		g->nbatch *= ob.dims[i];
	}

	out->rank = 0;
	for (int i = 0; i < ob.rank; i++)
		out->dims[out->rank++] = ob.dims[i];
	if (!a_vec)
		out->dims[out->rank++] = g->m;
	if (!b_vec)
		out->dims[out->rank++] = g->n;
	return 0;
}


void mfs_mm_batch_offsets(const mfs_mm_geom *g, int64_t bi, int64_t *offa, int64_t *offb)
{
	int64_t rem = bi, oa = 0, ob = 0;
	for (int i = g->batch_rank - 1; i >= 0; i--) {
		int64_t idx = rem % g->batch[i];
		rem /= g->batch[i];
		oa += idx * g->a_bstride[i];
		ob += idx * g->b_bstride[i];
	}
	*offa = oa;
	*offb = ob;
}

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

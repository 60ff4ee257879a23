/* ConvTranspose (1, 11): the gradient of Conv with respect to its input,
 * used as a learned upsampler.  FP32, 1-D/2-D/3-D, plain layout.
 *
 * X [N, C, in...], W [C, M/group, k...], optional B [M] -> Y [N, M, out...]
 *   out = stride * (in - 1) + output_padding + (k - 1) * dilation + 1
 *         - pad_begin - pad_end
 * With output_shape (or auto_pad SAME_*, where output_shape = in * stride)
 * the pads are derived: total = stride * (in - 1) + output_padding + dk -
 * output_shape, split total/2 at the start for SAME_UPPER, and the larger
 * half at the start otherwise (the ONNX spec's rule).
 *
 * Computed per image and group as col = W_g^T * X_g (one sgemm, col is
 * [M/group * prod(k), prod(in)]) followed by col2im, a scatter-add into Y
 * (parallel over output channels, so no two threads touch one plane).
 * Not through oneDNN: its deconvolution has no output_padding and ONNX
 * models with ConvTranspose are rare among the targets; this path is
 * exact for every attribute combination.  The col buffer lives in the
 * node's state (allocated in prepare, reused every run).
 */
#include <stdlib.h>
#include <string.h>


#include "dense_util.h"

typedef struct ct_params {
	int64_t n, c, m, group, cg, mg;
	int nsp;
	int64_t in[3], k[3], st[3], dl[3], pb[3], out[3];   /* widened to 3-D */
	int64_t isize, osize, ksize;
} ct_params;

typedef struct ct_state {
	float *col;
	size_t col_n;
} ct_state;

static int ct_ints(mfs_op_ctx *ctx, const char *name, int n, int64_t def, int64_t min,
		   int64_t *out)
{
	const int64_t *v;
	size_t got = onnx_attr_ints(ctx->node, name, &v);
	if (!got) {
		for (int i = 0; i < n; i++)
			out[i] = def;
		return 0;
	}
	if (got != (size_t)n)
		return mfs_op_fail(ctx, EINVAL, "attribute %s has %zu values, expected %d",
				   name, got, n);
	for (int i = 0; i < n; i++) {
		if (v[i] < min || v[i] > (int64_t)1 << 32)
			return mfs_op_fail(ctx, EINVAL, "attribute %s[%d] = %lld is out of range",
					   name, i, (long long)v[i]);
		out[i] = v[i];
	}
	return 0;
}

static int ct_params_get(mfs_op_ctx *ctx, ct_params *p)
{
	const mfs_tensor *x = ctx->in[0], *w = ctx->n_in > 1 ? ctx->in[1] : NULL;
	const mfs_tensor *b = ctx->n_in > 2 ? ctx->in[2] : NULL;
	int64_t k[3], st[3], dl[3], pads[6], opad[3], oshape[3];
	int rc;

	memset(p, 0, sizeof(*p));
	if (!x || !w)
		return mfs_op_fail(ctx, EINVAL, "needs inputs X and W");
	if (x->dtype != MFS_DT_FLOAT || w->dtype != MFS_DT_FLOAT || (b && b->dtype != MFS_DT_FLOAT))
		return mfs_op_fail(ctx, ENOTSUP, "only float tensors are supported");
	for (int i = 0; i < 3 && i < ctx->n_in; i++)
		if (ctx->in[i] && ctx->in[i]->layout != MFS_LAYOUT_PLAIN)
			return mfs_op_fail(ctx, EINVAL, "inputs must be in plain layout");
	int nsp = x->shape.rank - 2;
	if (nsp < 1 || nsp > 3)
		return mfs_op_fail(ctx, ENOTSUP, "X of rank %d: only 1-D, 2-D, 3-D", x->shape.rank);
	if (w->shape.rank != x->shape.rank)
		return mfs_op_fail(ctx, EINVAL, "W has rank %d, X rank %d", w->shape.rank,
				   x->shape.rank);
	p->nsp = nsp;
	p->n = x->shape.dims[0];
	p->c = x->shape.dims[1];
	p->group = onnx_attr_int(ctx->node, "group", 1);
	if (p->group < 1 || p->group > (int64_t)1 << 30 || p->c % p->group)
		return mfs_op_fail(ctx, EINVAL, "group %lld does not divide the %lld channels",
				   (long long)p->group, (long long)p->c);
	if (w->shape.dims[0] != p->c)
		return mfs_op_fail(ctx, EINVAL, "W has %lld input channels, X has %lld",
				   (long long)w->shape.dims[0], (long long)p->c);
	p->cg = p->c / p->group;
	p->mg = w->shape.dims[1];
	p->m = p->mg * p->group;
	if (b && (b->shape.rank != 1 || b->shape.dims[0] != p->m))
		return mfs_op_fail(ctx, EINVAL, "B must have shape [%lld]", (long long)p->m);

	const int64_t *ks;
	size_t nk = onnx_attr_ints(ctx->node, "kernel_shape", &ks);
	if (nk && nk != (size_t)nsp)
		return mfs_op_fail(ctx, EINVAL, "kernel_shape has %zu values", nk);
	for (int i = 0; i < nsp; i++) {
		k[i] = w->shape.dims[2 + i];
		if (nk && ks[i] != k[i])
			return mfs_op_fail(ctx, EINVAL, "kernel_shape[%d] = %lld but W has %lld", i,
					   (long long)ks[i], (long long)k[i]);
	}
	if ((rc = ct_ints(ctx, "strides", nsp, 1, 1, st)) < 0 ||
	    (rc = ct_ints(ctx, "dilations", nsp, 1, 1, dl)) < 0 ||
	    (rc = ct_ints(ctx, "pads", 2 * nsp, 0, 0, pads)) < 0 ||
	    (rc = ct_ints(ctx, "output_padding", nsp, 0, 0, opad)) < 0)
		return rc;
	const int64_t *os;
	size_t nos = onnx_attr_ints(ctx->node, "output_shape", &os);
	/* output_shape may list only the spatial dims or all of them. */
	if (nos && nos != (size_t)nsp && nos != (size_t)nsp + 2)
		return mfs_op_fail(ctx, EINVAL, "output_shape has %zu values", nos);
	const char *ap = onnx_attr_string(ctx->node, "auto_pad", "NOTSET");
	bool upper = !strcmp(ap, "SAME_UPPER"), lower = !strcmp(ap, "SAME_LOWER");
	bool valid = !strcmp(ap, "VALID");
	if (!upper && !lower && !valid && strcmp(ap, "NOTSET") && *ap)
		return mfs_op_fail(ctx, EINVAL, "auto_pad '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", ap);

	int off = 3 - nsp;
	for (int i = 0; i < 3; i++) {
		p->in[i] = p->k[i] = p->st[i] = p->dl[i] = p->out[i] = 1;
		p->pb[i] = 0;
	}
	p->isize = p->osize = p->ksize = 1;
	for (int i = 0; i < nsp; i++) {
		int64_t in = x->shape.dims[2 + i], dk, full, out, pb;
		/* Attributes are bounded by ct_ints, but an empty X may carry any
		 * dim: compute the full output size with overflow checks. */
		if (__builtin_mul_overflow(k[i] - 1, dl[i], &dk) ||
		    __builtin_add_overflow(dk, 1, &dk) ||
		    __builtin_mul_overflow(st[i], in > 0 ? in - 1 : 0, &full) ||
		    __builtin_add_overflow(full, opad[i], &full) ||
		    __builtin_add_overflow(full, dk, &full))
			return mfs_op_fail(ctx, EINVAL, "spatial dim %d: output size overflows", i);
		if (opad[i] >= st[i] && opad[i] >= dl[i])
			return mfs_op_fail(ctx, EINVAL, "output_padding[%d] = %lld must be smaller than the stride or dilation",
					   i, (long long)opad[i]);
		if (nos || upper || lower) {
			if (nos && (os[nos - nsp + i] < 0 || os[nos - nsp + i] > (int64_t)1 << 40))
				return mfs_op_fail(ctx, EINVAL, "output_shape[%d] is out of range", i);
			if (!nos && __builtin_mul_overflow(in, st[i], &oshape[i]))
				return mfs_op_fail(ctx, EINVAL, "spatial dim %d: output size overflows", i);
			if (nos)
				oshape[i] = os[nos - nsp + i];
			int64_t total = full - oshape[i];
			if (total < 0)
				total = 0;  /* the spec clamps; extra outputs stay bias-only */
			pb = upper ? total / 2 : total - total / 2;
			if (nos && !upper && !lower)
				pb = total - total / 2;
			out = oshape[i];
		} else {
			pb = valid ? 0 : pads[i];
			int64_t pe = valid ? 0 : pads[nsp + i];
			out = full - pb - pe;
		}
		if (out < 1)
			return mfs_op_fail(ctx, EINVAL, "spatial dim %d: output size %lld", i,
					   (long long)out);
		p->in[off + i] = in;
		p->k[off + i] = k[i];
		p->st[off + i] = st[i];
		p->dl[off + i] = dl[i];
		p->pb[off + i] = pb;
		p->out[off + i] = out;
		p->isize *= in;
		p->osize *= out;
		p->ksize *= k[i];
	}
	return 0;
}

static int ct_infer(mfs_op_ctx *ctx)
{
	ct_params p;
	int rc = ct_params_get(ctx, &p);
	if (rc < 0)
		return rc;
	mfs_tensor *y = ctx->out[0];
	y->dtype = MFS_DT_FLOAT;
	y->shape.rank = 2 + p.nsp;
	y->shape.dims[0] = p.n;
	y->shape.dims[1] = p.m;
	for (int i = 0; i < p.nsp; i++)
		y->shape.dims[2 + i] = p.out[3 - p.nsp + i];
	return 0;
}

static void ct_release(void *state)
{
	ct_state *s = state;
	if (s)
		free(s->col);
	free(s);
}

static int ct_prepare(mfs_op_ctx *ctx)
{
	ct_params p;
	int rc = ct_params_get(ctx, &p);
	if (rc < 0)
		return rc;
	ct_state *s = *ctx->state;
	size_t need = (size_t)(p.mg * p.ksize * p.isize);
	if (!s) {
		if (!(s = calloc(1, sizeof(*s))))
			return mfs_op_fail(ctx, ENOMEM, "out of memory");
		*ctx->state = s;
	}
	if (s->col_n < need) {
		free(s->col);
		s->col_n = 0;
		if (!(s->col = malloc(need * sizeof(float))))
			return mfs_op_fail(ctx, ENOMEM, "out of memory for %zu floats", need);
		s->col_n = need;
	}
	return 0;
}

/* y [mg, out] += scatter of col [mg * ksize, in]. */
static void col2im3(const float *col, float *y, const ct_params *p)
{
	#pragma omp parallel for schedule(static)
	for (int64_t m = 0; m < p->mg; m++) {
		float *ym = y + m * p->osize;
		for (int64_t kr = 0; kr < p->ksize; kr++) {
			int64_t kd = kr / (p->k[1] * p->k[2]), kh = kr / p->k[2] % p->k[1];
			int64_t kw = kr % p->k[2];
			const float *cr = col + (m * p->ksize + kr) * p->isize;
			for (int64_t id = 0; id < p->in[0]; id++) {
				int64_t od = id * p->st[0] - p->pb[0] + kd * p->dl[0];
				if (od < 0 || od >= p->out[0])
					continue;
				for (int64_t ih = 0; ih < p->in[1]; ih++) {
					int64_t oh = ih * p->st[1] - p->pb[1] + kh * p->dl[1];
					if (oh < 0 || oh >= p->out[1])
						continue;
					const float *c = cr + (id * p->in[1] + ih) * p->in[2];
					float *yr = ym + (od * p->out[1] + oh) * p->out[2];
					for (int64_t iw = 0; iw < p->in[2]; iw++) {
						int64_t ow = iw * p->st[2] - p->pb[2] + kw * p->dl[2];
						if (ow >= 0 && ow < p->out[2])
							yr[ow] += c[iw];
					}
				}
			}
		}
	}
}

static int ct_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0], *w = ctx->in[1];
	const mfs_tensor *b = ctx->n_in > 2 ? ctx->in[2] : NULL;
	float *y = ctx->out[0]->data;
	ct_params p;
	int rc;

	if ((rc = ct_prepare(ctx)) < 0 || (rc = ct_params_get(ctx, &p)) < 0)
		return rc;
	ct_state *s = *ctx->state;
	const float *bias = b ? b->data : NULL;
	int64_t rows = p.mg * p.ksize;

	for (int64_t bi = 0; bi < p.n; bi++)
		for (int64_t g = 0; g < p.group; g++) {
			float *yg = y + (bi * p.m + g * p.mg) * p.osize;
			for (int64_t m = 0; m < p.mg; m++) {
				float v = bias ? bias[g * p.mg + m] : 0.0f;
				for (int64_t i = 0; i < p.osize; i++)
					yg[m * p.osize + i] = v;
			}
			if (p.isize == 0 || rows == 0)
				continue;
			/* col [rows, in] = W_g^T [rows, cg] * X_g [cg, in] */
			mfs_sgemm(true, false, rows, p.isize, p.cg, 1.0f,
				  (const float *)w->data + g * p.cg * rows, rows,
				  (const float *)x->data + (bi * p.c + g * p.cg) * p.isize,
				  p.isize, 0.0f, s->col, p.isize);
			col2im3(s->col, yg, &p);
		}
	return 0;
}

MFS_OP(ConvTranspose, 1, .flags = MFS_OP_HALF_VIA_FLOAT, .infer = ct_infer, .prepare = ct_prepare, .run = ct_run,
       .release = ct_release);
MFS_OP(ConvTranspose, 11, .flags = MFS_OP_HALF_VIA_FLOAT, .infer = ct_infer, .prepare = ct_prepare, .run = ct_run,
       .release = ct_release);

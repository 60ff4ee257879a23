/* conv_im2col.c - Conv's im2col + sgemm path (conv_internal.h): per image
 * and group, unfold X into col [C/group * prod(kernel), prod(out)] and
 * multiply W_g by it with one sgemm on OpenBLAS (mfs_blas_sgemm); a 1x1
 * kernel of stride 1 without padding uses X itself.  Stored NHWC or
 * BLOCK16 tensors go through plain scratch buffers; FusedConv's Z and
 * activation follow in one pass.  When conv.c takes this path: its
 * header comment.
 */
#include <string.h>

#include "conv_internal.h"

/* Unfold one image's group (cg channels of x, plain [cg, D, H, W]) into
 * col [cg * kd*kh*kw, od*oh*ow].  Spatial dims are taken as 3-D, with
 * missing leading dims of extent 1. */
static void im2col3(const float *x, float *col, int64_t cg, const int64_t in[3],
		    const int64_t k[3], const int64_t st[3], const int64_t dl[3],
		    const int64_t pb[3], const int64_t out[3])
{
	int64_t ksz = k[0] * k[1] * k[2], osz = out[0] * out[1] * out[2];
	int64_t isz = in[0] * in[1] * in[2];

	#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < cg * ksz; r++) {
		int64_t c = r / ksz, kr = r % ksz;
		int64_t kd = kr / (k[1] * k[2]), kh = kr / k[2] % k[1], kw = kr % k[2];
		const float *xc = x + c * isz;
		float *dst = col + r * osz;
		/* Output columns whose input column is inside the row:
		 * 0 <= ow*st - pb + kw*dl < in, i.e. [ow0, ow1). */
		int64_t base = kw * dl[2] - pb[2];
		int64_t ow0 = base >= 0 ? 0 : (-base + st[2] - 1) / st[2];
		int64_t ow1 = in[2] - base <= 0 ? 0 : (in[2] - base + st[2] - 1) / st[2];
		if (ow1 > out[2])
			ow1 = out[2];
		if (ow0 > ow1)
			ow0 = ow1;
		for (int64_t od = 0; od < out[0]; od++) {
			int64_t id = od * st[0] - pb[0] + kd * dl[0];
			for (int64_t oh = 0; oh < out[1]; oh++) {
				int64_t ih = oh * st[1] - pb[1] + kh * dl[1];
				float *d = dst + (od * out[1] + oh) * out[2];
				if (id < 0 || id >= in[0] || ih < 0 || ih >= in[1]) {
					memset(d, 0, sizeof(float) * out[2]);
					continue;
				}
				const float *xr = xc + (id * in[1] + ih) * in[2] + base;
				for (int64_t ow = 0; ow < ow0; ow++)
					d[ow] = 0.0f;
				if (st[2] == 1)
					memcpy(d + ow0, xr + ow0, sizeof(float) * (ow1 - ow0));
				else
					for (int64_t ow = ow0; ow < ow1; ow++)
						d[ow] = xr[ow * st[2]];
				for (int64_t ow = ow1; ow < out[2]; ow++)
					d[ow] = 0.0f;
			}
		}
	}
}

/* Widen the window to 3-D: leading spatial dims of extent 1. */
static void win3(const mfs_window *w, int64_t in[3], int64_t k[3], int64_t st[3],
		 int64_t dl[3], int64_t pb[3], int64_t out[3])
{
	int off = 3 - w->nsp;
	for (int i = 0; i < 3; i++) {
		int j = i - off;
		in[i] = j >= 0 ? w->in[j] : 1;
		k[i] = j >= 0 ? w->k[j] : 1;
		st[i] = j >= 0 ? w->stride[j] : 1;
		dl[i] = j >= 0 ? w->dil[j] : 1;
		pb[i] = j >= 0 ? w->pad_b[j] : 0;
		out[i] = j >= 0 ? w->out[j] : 1;
	}
}

bool conv_is_pointwise(const conv_params *p)
{
	for (int i = 0; i < p->w.nsp; i++)
		if (p->w.k[i] != 1 || p->w.stride[i] != 1 || p->w.pad_b[i] || p->w.pad_e[i])
			return false;
	return true;
}

/* Plain-layout convolution of x into y with col as scratch (may be NULL
 * for a pointwise convolution). */
static void conv_im2col_plain(const conv_params *p, const float *x, const float *wt,
			      const float *bias, float *y, float *col)
{
	int64_t in[3], k[3], st[3], dl[3], pb[3], out[3];
	int64_t kdim = p->cg * p->ksize;
	bool pointwise = conv_is_pointwise(p);

	win3(&p->w, in, k, st, dl, pb, out);
	for (int64_t b = 0; b < p->n; b++) {
		for (int64_t g = 0; g < p->group; g++) {
			const float *xg = x + (b * p->c + g * p->cg) * p->isize;
			float *yg = y + (b * p->m + g * p->mg) * p->osize;
			const float *src = xg;
			if (!pointwise) {
				im2col3(xg, col, p->cg, in, k, st, dl, pb, out);
				src = col;
			}
			mfs_blas_sgemm(false, false, p->mg, p->osize, kdim, 1.0f,
				       wt + g * p->mg * kdim, kdim, src, p->osize, 0.0f, yg,
				       p->osize);
		}
	}
	if (bias) {
		#pragma omp parallel for collapse(2) schedule(static)
		for (int64_t b = 0; b < p->n; b++)
			for (int64_t m = 0; m < p->m; m++) {
				float *yr = y + (b * p->m + m) * p->osize;
				for (int64_t i = 0; i < p->osize; i++)
					yr[i] += bias[m];
			}
	}
}

/* conv_internal.h */
void conv_im2col_compute(conv_state *s, const conv_params *pp, const mfs_tensor *x,
			 const mfs_tensor *wt, const mfs_tensor *b, float *ydata,
			 mfs_layout ylay)
{
	const conv_params p = *pp;
	const float *xp = x->data, *zin = p.z ? p.z->data : NULL;
	float *yp = ydata;
	if (p.z && p.z->layout == MFS_LAYOUT_PLAIN && zin == ydata) {
		/* Y's memory is Z's and the product below writes it first */
		memcpy(s->ztmp, zin, (size_t)(p.n * p.m * p.osize) * sizeof(float));
		zin = s->ztmp;
	}
	if (x->layout != MFS_LAYOUT_PLAIN) {
		layout_copy(xp, s->xtmp, x->layout, p.n, p.c, p.isize, true);
		xp = s->xtmp;
	}
	if (ylay != MFS_LAYOUT_PLAIN)
		yp = s->ytmp;
	conv_im2col_plain(&p, xp, wt->data, b ? b->data : NULL, yp, s->col);
	if (p.z || p.act != ACT_NONE) {
		const float *zp = zin;
		int64_t total = p.n * p.m * p.osize;
		if (p.z && p.z->layout != MFS_LAYOUT_PLAIN) {
			layout_copy(zp, s->ztmp, p.z->layout, p.n, p.m, p.osize, true);
			zp = s->ztmp;
		}
		#pragma omp parallel for schedule(static)
		for (int64_t i = 0; i < total; i++)
			yp[i] = act_apply(&p, zp ? yp[i] + zp[i] : yp[i]);
	}
	if (ylay != MFS_LAYOUT_PLAIN)
		layout_copy(yp, ydata, ylay, p.n, p.m, p.osize, false);
}

/* GridSample (16), 4-D input: sample X [N,C,H,W] at the normalised (x, y)
 * positions of grid [N,Ho,Wo,2].  Modes bilinear/nearest/bicubic, padding
 * zeros/border/reflection, align_corners; the arithmetic follows
 * PyTorch's grid_sample, which the ONNX tests were made with.
 * AffineGrid (20) makes such grids: theta [N,2,3] (or [N,3,4] in 3-D)
 * applied to the normalised coordinates of size [N,C,H,W] ([N,C,D,H,W]). */
#include <math.h>
#include <string.h>

#include "op_common.h"

enum { G_BILINEAR, G_NEAREST, G_BICUBIC };
enum { P_ZEROS, P_BORDER, P_REFLECTION };

typedef struct gs_cfg {
	int mode, pad;
	bool align;
} gs_cfg;

static int gs_config(mfs_op_ctx *ctx, gs_cfg *c)
{
	const char *m = onnx_attr_string(ctx->node, "mode", "bilinear");
	const char *p = onnx_attr_string(ctx->node, "padding_mode", "zeros");
	const mfs_tensor *x = ctx->in[0], *g;
	int rc;

	if ((rc = oc_need(ctx, 1)) || (rc = oc_need_numeric(ctx, x, false)))
		return rc;
	g = ctx->in[1];
	/* Opset 20 renamed bilinear/bicubic to linear/cubic. */
	c->mode = !strcmp(m, "bilinear") || !strcmp(m, "linear") ? G_BILINEAR
		  : !strcmp(m, "nearest") ? G_NEAREST
		  : !strcmp(m, "bicubic") || !strcmp(m, "cubic") ? G_BICUBIC : -1;
	c->pad = !strcmp(p, "zeros") ? P_ZEROS : !strcmp(p, "border") ? P_BORDER
		 : !strcmp(p, "reflection") ? P_REFLECTION : -1;
	c->align = onnx_attr_int(ctx->node, "align_corners", 0) != 0;
	if (c->mode < 0 || c->pad < 0)
		return mfs_op_fail(ctx, ENOTSUP, "mode '%s' / padding_mode '%s' not supported", m, p);
	if (x->shape.rank != 4 || g->shape.rank != 4 || g->shape.dims[3] != 2 ||
	    g->shape.dims[0] != x->shape.dims[0] || !oc_is_float(g->dtype))
		return mfs_op_fail(ctx, EINVAL, "expected X [N,C,H,W] and grid [N,Ho,Wo,2]");
	return 0;
}

static int gs_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 2, true);
	gs_cfg c;
	int rc = gs_config(ctx, &c);
	mfs_shape s;

	if (rc)
		return rc;
	s = ctx->in[0]->shape;
	s.dims[2] = ctx->in[1]->shape.dims[1];
	s.dims[3] = ctx->in[1]->shape.dims[2];
	oc_set_out(ctx, 0, ctx->in[0]->dtype, &s);
	return 0;
}

static double unnormalize(double v, int64_t size, bool align)
{
	return align ? (v + 1) / 2 * (double)(size - 1) : ((v + 1) * (double)size - 1) / 2;
}

static double reflect(double v, double twice_lo, double twice_hi)
{
	double lo, span, extra, flips;

	if (twice_lo == twice_hi)
		return 0;
	lo = twice_lo / 2;
	span = (twice_hi - twice_lo) / 2;
	v = fabs(v - lo);
	extra = fmod(v, span);
	flips = floor(v / span);
	return fmod(flips, 2) == 0 ? extra + lo : span - extra + lo;
}

/* Padding applied to a source coordinate (PyTorch's compute_coordinates). */
static double pad_coord(const gs_cfg *c, double v, int64_t size)
{
	if (c->pad == P_BORDER) {
		v = fmin(fmax(v, 0), (double)(size - 1));
	} else if (c->pad == P_REFLECTION) {
		v = c->align ? reflect(v, 0, 2.0 * (double)(size - 1))
			     : reflect(v, -1, 2.0 * (double)size - 1);
		v = fmin(fmax(v, 0), (double)(size - 1));
	}
	return v;
}

/* Pixel (y, x) of plane p, 0 outside. */
static double pixel(const mfs_tensor *t, int64_t p, int64_t H, int64_t W, int64_t y, int64_t x)
{
	if (y < 0 || y >= H || x < 0 || x >= W)
		return 0;
	return oc_load(t->dtype, t->data, (p * H + y) * W + x);
}

static double sample(const gs_cfg *c, const mfs_tensor *x, int64_t p, int64_t H, int64_t W,
		     double gx, double gy)
{
	double ix = unnormalize(gx, W, c->align), iy = unnormalize(gy, H, c->align);

	/* Keep every later int64 conversion defined. */
	ix = fmin(fmax(ix, -1e15), 1e15);
	iy = fmin(fmax(iy, -1e15), 1e15);

	if (c->mode == G_BICUBIC) {
		double x0 = floor(ix), y0 = floor(iy), wx[4], wy[4], acc = 0;
		oc_cubic_coeffs(ix - x0, -0.75, wx);
		oc_cubic_coeffs(iy - y0, -0.75, wy);
		for (int i = 0; i < 4; i++)
			for (int j = 0; j < 4; j++) {
				/* Each tap is padded on its own, then read with bounds. */
				double yy = pad_coord(c, y0 - 1 + i, H), xx = pad_coord(c, x0 - 1 + j, W);
				acc += wy[i] * wx[j] * pixel(x, p, H, W, (int64_t)yy, (int64_t)xx);
			}
		return acc;
	}
	ix = pad_coord(c, ix, W);
	iy = pad_coord(c, iy, H);
	if (c->mode == G_NEAREST)
		return pixel(x, p, H, W, (int64_t)nearbyint(iy), (int64_t)nearbyint(ix));
	double x0 = floor(ix), y0 = floor(iy), tx = ix - x0, ty = iy - y0;
	int64_t xi = (int64_t)x0, yi = (int64_t)y0;
	return pixel(x, p, H, W, yi, xi) * (1 - tx) * (1 - ty) +
	       pixel(x, p, H, W, yi, xi + 1) * tx * (1 - ty) +
	       pixel(x, p, H, W, yi + 1, xi) * (1 - tx) * ty +
	       pixel(x, p, H, W, yi + 1, xi + 1) * tx * ty;
}

static int gs_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0], *g = ctx->in[1];
	mfs_tensor *out = ctx->out[0];
	gs_cfg c;
	int rc = gs_config(ctx, &c);
	int64_t N = x->shape.dims[0], C = x->shape.dims[1], H = x->shape.dims[2],
		W = x->shape.dims[3], Ho = g->shape.dims[1], Wo = g->shape.dims[2];

	if (rc)
		return rc;
	for (int64_t n = 0; n < N; n++)
		for (int64_t i = 0; i < Ho * Wo; i++) {
			double gx = oc_load(g->dtype, g->data, (n * Ho * Wo + i) * 2);
			double gy = oc_load(g->dtype, g->data, (n * Ho * Wo + i) * 2 + 1);
			if (!isfinite(gx) || !isfinite(gy))
				gx = gy = -1e9;  /* far outside: zeros or the border */
			for (int64_t ch = 0; ch < C; ch++)
				oc_store(out->dtype, out->data, (n * C + ch) * Ho * Wo + i,
					 sample(&c, x, n * C + ch, H, W, gx, gy));
		}
	return 0;
}

/* AffineGrid: spatial rank 2 or 3 and the size input read as ints. */
static int ag_geom(mfs_op_ctx *ctx, int64_t *size, int *nd)
{
	const mfs_tensor *th = ctx->in[0];
	int n = 0, rc;

	if ((rc = oc_need_numeric(ctx, th, false)) ||
	    (rc = oc_read_ints(ctx, 1, size, MFS_MAX_RANK, &n)))
		return rc;
	*nd = n - 2;
	if ((n != 4 && n != 5) || th->shape.rank != 3 || th->shape.dims[0] != size[0] ||
	    th->shape.dims[1] != *nd || th->shape.dims[2] != *nd + 1)
		return mfs_op_fail(ctx, EINVAL, "expected theta [N,2,3] with size [N,C,H,W] "
				   "(or [N,3,4] with [N,C,D,H,W])");
	for (int i = 0; i < n; i++)
		if (size[i] < 0)
			return mfs_op_fail(ctx, EINVAL, "size %lld is negative", (long long)size[i]);
	return 0;
}

static int ag_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 2, true);
	int64_t size[MFS_MAX_RANK];
	int nd, rc = ag_geom(ctx, size, &nd);
	mfs_shape s = { .rank = nd + 2 };

	if (rc)
		return rc;
	s.dims[0] = size[0];
	for (int i = 0; i < nd; i++)
		s.dims[1 + i] = size[2 + i];
	s.dims[nd + 1] = nd;
	if ((rc = oc_check_shape(ctx, &s)))
		return rc;
	oc_set_out(ctx, 0, ctx->in[0]->dtype, &s);
	return 0;
}

/* Normalised coordinate of index i along a dim of n. */
static double base_coord(int64_t i, int64_t n, bool align)
{
	if (align)
		return n > 1 ? -1 + 2.0 * (double)i / (double)(n - 1) : 0;
	return (2.0 * (double)i + 1) / (double)n - 1;
}

static int ag_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *th = ctx->in[0];
	mfs_tensor *out = ctx->out[0];
	bool align = onnx_attr_int(ctx->node, "align_corners", 0) != 0;
	int64_t size[MFS_MAX_RANK], pts, o = 0;
	int nd, rc = ag_geom(ctx, size, &nd);

	if (rc)
		return rc < 0 ? rc : mfs_op_fail(ctx, EINVAL, "size unknown at run");
	pts = 1;
	for (int i = 0; i < nd; i++)
		pts *= size[2 + i];
	for (int64_t n = 0; n < size[0]; n++)
		for (int64_t p = 0; p < pts; p++) {
			/* Coordinates in (x, y[, z]) order: the innermost dim is x. */
			double c[4] = { 0, 0, 0, 1 };
			int64_t rem = p;
			for (int k = 0; k < nd; k++) {
				int64_t dim = size[2 + nd - 1 - k];
				c[k] = base_coord(rem % dim, dim, align);
				rem /= dim;
			}
			c[nd] = 1;
			for (int row = 0; row < nd; row++) {
				double acc = 0;
				for (int k = 0; k <= nd; k++)
					acc += oc_load(th->dtype, th->data,
						       (n * nd + row) * (nd + 1) + k) * c[k];
				oc_store(out->dtype, out->data, o++, acc);
			}
		}
	return 0;
}

MFS_OP(GridSample, 16, .infer = gs_infer, .run = gs_run);
MFS_OP(AffineGrid, 20, .infer = ag_infer, .run = ag_run);

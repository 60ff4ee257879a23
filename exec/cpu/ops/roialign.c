/* RoiAlign (10, 16): pool each region of interest to a fixed grid by
 * bilinear sampling (Mask R-CNN).
 *
 * X [N, C, H, W], rois [R, 4] (x1, y1, x2, y2 in input coordinates times
 * 1/spatial_scale), batch_indices [R] (int64) -> Y [R, C, output_height,
 * output_width].  Each output bin averages (mode avg) or takes the maximum
 * (mode max) of sampling_ratio^2 bilinear samples (0: ceil(roi extent /
 * bins) per axis).  coordinate_transformation_mode (16) half_pixel shifts
 * by -0.5 and allows small ROIs; output_half_pixel (the only mode of opset
 * 10) does not shift and makes ROIs at least 1x1.  The sampling and the
 * max mode (the largest weighted corner, not the largest interpolated
 * value) follow ONNX Runtime and the ONNX reference exactly.
 * Float, plain layout; OpenMP over ROIs x channels.
 */
#include <math.h>
#include <string.h>

#include "op.h"

typedef struct roi_params {
	int64_t n, c, h, w, r, oh, ow, sr;
	float scale;
	bool max_mode, half_pixel;
} roi_params;

static int roi_params_get(mfs_op_ctx *ctx, roi_params *p)
{
	const mfs_tensor *x = ctx->in[0], *rois = ctx->n_in > 1 ? ctx->in[1] : NULL;
	const mfs_tensor *bi = ctx->n_in > 2 ? ctx->in[2] : NULL;

	if (!x || !rois || !bi)
		return mfs_op_fail(ctx, EINVAL, "needs inputs X, rois and batch_indices");
	if (x->dtype != MFS_DT_FLOAT || rois->dtype != MFS_DT_FLOAT || bi->dtype != MFS_DT_INT64)
		return mfs_op_fail(ctx, ENOTSUP, "X and rois must be float, batch_indices int64");
	if (x->layout != MFS_LAYOUT_PLAIN)
		return mfs_op_fail(ctx, EINVAL, "X must be in plain layout");
	if (x->shape.rank != 4)
		return mfs_op_fail(ctx, EINVAL, "X must have rank 4");
	if (rois->shape.rank != 2 || rois->shape.dims[1] != 4)
		return mfs_op_fail(ctx, EINVAL, "rois must have shape [R, 4]");
	if (bi->shape.rank != 1 || bi->shape.dims[0] != rois->shape.dims[0])
		return mfs_op_fail(ctx, EINVAL, "batch_indices must have shape [%lld]",
				   (long long)rois->shape.dims[0]);
	p->n = x->shape.dims[0];
	p->c = x->shape.dims[1];
	p->h = x->shape.dims[2];
	p->w = x->shape.dims[3];
	p->r = rois->shape.dims[0];
	int64_t plane;
	/* Offsets are y * W + x within a plane: an empty X may carry any
	 * dims, so the plane size must fit before anything indexes it. */
	if (__builtin_mul_overflow(p->h, p->w, &plane))
		return mfs_op_fail(ctx, EINVAL, "X's spatial size overflows");
	p->oh = onnx_attr_int(ctx->node, "output_height", 1);
	p->ow = onnx_attr_int(ctx->node, "output_width", 1);
	p->sr = onnx_attr_int(ctx->node, "sampling_ratio", 0);
	p->scale = onnx_attr_float(ctx->node, "spatial_scale", 1.0f);
	if (p->oh < 1 || p->ow < 1 || p->oh > 1 << 20 || p->ow > 1 << 20 || p->sr < 0 || p->sr > 1 << 16)
		return mfs_op_fail(ctx, EINVAL, "output_height, output_width or sampling_ratio out of range");
	const char *mode = onnx_attr_string(ctx->node, "mode", "avg");
	if (strcmp(mode, "avg") && strcmp(mode, "max"))
		return mfs_op_fail(ctx, EINVAL, "mode '%s' is not avg or max", mode);
	p->max_mode = !strcmp(mode, "max");
	const char *ctm = onnx_attr_string(ctx->node, "coordinate_transformation_mode",
					   ctx->opset >= 16 ? "half_pixel" : "output_half_pixel");
	if (strcmp(ctm, "half_pixel") && strcmp(ctm, "output_half_pixel"))
		return mfs_op_fail(ctx, EINVAL, "coordinate_transformation_mode '%s' is unknown", ctm);
	p->half_pixel = !strcmp(ctm, "half_pixel");
	return 0;
}

static int roi_infer(mfs_op_ctx *ctx)
{
	roi_params p;
	int rc = roi_params_get(ctx, &p);
	if (rc < 0)
		return rc;
	ctx->out[0]->dtype = MFS_DT_FLOAT;
	ctx->out[0]->shape = (mfs_shape){ 4, { p.r, p.c, p.oh, p.ow } };
	return 0;
}

/* Bilinear sample: corner offsets and weights, or false when outside. */
static bool roi_sample(float y, float x, int64_t H, int64_t W, int64_t off[4], float wt[4])
{
	if (y < -1.0f || y > (float)H || x < -1.0f || x > (float)W)
		return false;
	if (y <= 0)
		y = 0;
	if (x <= 0)
		x = 0;
	int64_t yl = (int64_t)y, xl = (int64_t)x, yh, xh;
	if (yl >= H - 1) {
		yh = yl = H - 1;
		y = (float)yl;
	} else {
		yh = yl + 1;
	}
	if (xl >= W - 1) {
		xh = xl = W - 1;
		x = (float)xl;
	} else {
		xh = xl + 1;
	}
	float ly = y - (float)yl, lx = x - (float)xl, hy = 1 - ly, hx = 1 - lx;
	off[0] = yl * W + xl; off[1] = yl * W + xh;
	off[2] = yh * W + xl; off[3] = yh * W + xh;
	wt[0] = hy * hx; wt[1] = hy * lx; wt[2] = ly * hx; wt[3] = ly * lx;
	return true;
}

static int roi_run(mfs_op_ctx *ctx)
{
	roi_params p;
	int rc = roi_params_get(ctx, &p);
	if (rc < 0)
		return rc;
	const float *x = ctx->in[0]->data, *rois = ctx->in[1]->data;
	const int64_t *bidx = ctx->in[2]->data;
	float *y = ctx->out[0]->data;

	for (int64_t r = 0; r < p.r; r++)
		if (bidx[r] < 0 || bidx[r] >= p.n)
			return mfs_op_fail(ctx, EINVAL, "batch_indices[%lld] = %lld is outside [0, %lld)",
					   (long long)r, (long long)bidx[r], (long long)p.n);
	if (p.h < 1 || p.w < 1) {
		memset(y, 0, ctx->out[0]->nbytes);
		return 0;
	}
	float off = p.half_pixel ? 0.5f : 0.0f;
	#pragma omp parallel for collapse(2) schedule(static)
	for (int64_t r = 0; r < p.r; r++)
		for (int64_t c = 0; c < p.c; c++) {
			const float *rr = rois + r * 4;
			float sw = rr[0] * p.scale - off, sh = rr[1] * p.scale - off;
			float rw = rr[2] * p.scale - off - sw, rh = rr[3] * p.scale - off - sh;
			if (!p.half_pixel) {
				rw = rw > 1 ? rw : 1;
				rh = rh > 1 ? rh : 1;
			}
			float bh = rh / (float)p.oh, bw = rw / (float)p.ow;
			int64_t gh = p.sr > 0 ? p.sr : (int64_t)ceilf(rh / (float)p.oh);
			int64_t gw = p.sr > 0 ? p.sr : (int64_t)ceilf(rw / (float)p.ow);
			float count = (float)(gh * gw > 1 ? gh * gw : 1);
			const float *xp = x + (bidx[r] * p.c + c) * p.h * p.w;
			float *yp = y + (r * p.c + c) * p.oh * p.ow;
			for (int64_t i = 0; i < p.oh; i++)
				for (int64_t j = 0; j < p.ow; j++) {
					float acc = 0;
					bool first = true;
					for (int64_t iy = 0; iy < gh; iy++) {
						float yy = sh + (float)i * bh + ((float)iy + 0.5f) * bh / (float)gh;
						for (int64_t ix = 0; ix < gw; ix++) {
							float xx = sw + (float)j * bw + ((float)ix + 0.5f) * bw / (float)gw;
							int64_t o[4];
							float wt[4] = { 0, 0, 0, 0 };
							bool in = roi_sample(yy, xx, p.h, p.w, o, wt);
							if (!p.max_mode) {
								if (in)
									acc += wt[0] * xp[o[0]] + wt[1] * xp[o[1]] +
									       wt[2] * xp[o[2]] + wt[3] * xp[o[3]];
								continue;
							}
							float v = 0;
							if (in) {
								v = wt[0] * xp[o[0]];
								for (int k = 1; k < 4; k++)
									v = wt[k] * xp[o[k]] > v ? wt[k] * xp[o[k]] : v;
							}
							acc = first || v > acc ? v : acc;
							first = false;
						}
					}
					yp[i * p.ow + j] = p.max_mode ? acc : acc / count;
				}
		}
	return 0;
}

MFS_OP(RoiAlign, 10, .infer = roi_infer, .run = roi_run);
MFS_OP(RoiAlign, 16, .infer = roi_infer, .run = roi_run);

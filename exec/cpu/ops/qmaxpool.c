/* QMaxPool (com.modelfs 1): 2-D MaxPool on uint8 or int8 values, what the
 * QDQ rewrite (exec/graph/rewrite_qdq.c) makes of DequantizeLinear ->
 * MaxPool -> QuantizeLinear with the same scale and zero point (the max
 * commutes with the monotone dequantization, so no value changes).
 * MaxPool's attributes (kernel_shape, strides, pads, auto_pad, dilations,
 * ceil_mode); one output; padding never wins.
 *
 * Plain or NHWC (MFS_OP_NHWC_OK: the QConv around it computes
 * channels-last, and the channels are then the contiguous inner loop).
 */
#include <string.h>

#include "dense_util.h"

static int qmp_window(mfs_op_ctx *ctx, mfs_window *w)
{
	const mfs_tensor *x = ctx->in[0];
	if (!x || (x->dtype != MFS_DT_UINT8 && x->dtype != MFS_DT_INT8) || x->shape.rank != 4)
		return mfs_op_fail(ctx, ENOTSUP, "needs a rank-4 uint8 or int8 input");
	if (x->layout != MFS_LAYOUT_PLAIN && x->layout != MFS_LAYOUT_NHWC)
		return mfs_op_fail(ctx, EINVAL, "input must be plain or NHWC");
	if (ctx->n_out > 1)
		return mfs_op_fail(ctx, ENOTSUP, "the Indices output is not supported");
	return mfs_window_init(ctx, &x->shape, NULL, true,
			       onnx_attr_int(ctx->node, "ceil_mode", 0) != 0, w);
}

static int qmp_infer(mfs_op_ctx *ctx)
{
	mfs_window w;
	int rc = qmp_window(ctx, &w);
	if (rc < 0)
		return rc;
	mfs_tensor *y = ctx->out[0];
	y->dtype = ctx->in[0]->dtype;
	y->shape = ctx->in[0]->shape;
	y->shape.dims[2] = w.out[0];
	y->shape.dims[3] = w.out[1];
	return 0;
}

/* The pool over element type T (LO its least value), X's pixel and
 * channel strides XP, XC and Y's YP, YC: for NHWC both channel strides are
 * the literal 1, so the loops over a pixel's channels vectorise. */
#define QMP_LOOP(T, LO, XP, XC, YP, YC)                                            \
	do {                                                                      \
		const T *xd = x->data;                                            \
		T *yd = y->data;                                                  \
		_Pragma("omp parallel for collapse(2) schedule(static)")         \
		for (int64_t b = 0; b < n; b++)                                   \
			for (int64_t oh = 0; oh < oh_n; oh++)                     \
				for (int64_t ow = 0; ow < ow_n; ow++)             \
				for (int64_t cb = 0; cb < c; cb += 1024) {        \
					T acc[1024];                              \
					int64_t cn = c - cb < 1024 ? c - cb : 1024; \
					for (int64_t k = 0; k < cn; k++)          \
						acc[k] = LO;                      \
					for (int64_t kh = 0; kh < w.k[0]; kh++) { \
						int64_t ih = oh * w.stride[0] - w.pad_b[0] + kh * w.dil[0]; \
						if (ih < 0 || ih >= h) continue;  \
						for (int64_t kw = 0; kw < w.k[1]; kw++) { \
							int64_t iw = ow * w.stride[1] - w.pad_b[1] + kw * w.dil[1]; \
							if (iw < 0 || iw >= wd) continue; \
							const T *px = xd + b * c * h * wd + (ih * wd + iw) * (XP) + cb * (XC); \
							for (int64_t k = 0; k < cn; k++) \
								acc[k] = px[k * (XC)] > acc[k] ? px[k * (XC)] : acc[k]; \
						}                                 \
					}                                         \
					T *py = yd + b * c * oh_n * ow_n + (oh * ow_n + ow) * (YP) + cb * (YC); \
					for (int64_t k = 0; k < cn; k++)          \
						py[k * (YC)] = acc[k];            \
				}                                                 \
	} while (0)

static int qmp_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];
	mfs_tensor *y = ctx->out[0];
	mfs_window w;
	int rc = qmp_window(ctx, &w);
	if (rc < 0)
		return rc;
	int64_t n = x->shape.dims[0], c = x->shape.dims[1], h = x->shape.dims[2], wd = x->shape.dims[3];
	int64_t oh_n = w.out[0], ow_n = w.out[1];
	bool xn = x->layout == MFS_LAYOUT_NHWC, yn = y->layout == MFS_LAYOUT_NHWC;
	/* element strides of a pixel and of a channel in each layout */
	int64_t xs_p = xn ? c : 1, xs_c = xn ? 1 : h * wd;
	int64_t ys_p = yn ? c : 1, ys_c = yn ? 1 : oh_n * ow_n;
	if (xn && yn && x->dtype == MFS_DT_UINT8)
		QMP_LOOP(uint8_t, 0, c, 1, c, 1);
	else if (xn && yn)
		QMP_LOOP(int8_t, -128, c, 1, c, 1);
	else if (x->dtype == MFS_DT_UINT8)
		QMP_LOOP(uint8_t, 0, xs_p, xs_c, ys_p, ys_c);
	else
		QMP_LOOP(int8_t, -128, xs_p, xs_c, ys_p, ys_c);
	return 0;
}

MFS_OP_DOMAIN("com.modelfs", QMaxPool, 1, .flags = MFS_OP_NHWC_OK, .infer = qmp_infer,
	      .run = qmp_run);

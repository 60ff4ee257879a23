/* HannWindow, HammingWindow, BlackmanWindow (17): a window of `size`
 * samples, periodic (default) or symmetric, as output_datatype (float by
 * default).  Generalised cosine windows: a0 - a1 cos(2 pi n / N) +
 * a2 cos(4 pi n / N), N = size (periodic) or size - 1 (symmetric). */
#include <math.h>

#include "op_common.h"

typedef struct cosine_win {
	double a0, a1, a2;
} cosine_win;

static int win_size(mfs_op_ctx *ctx, int64_t *n, mfs_dtype *dt)
{
	const mfs_tensor *s = ctx->in[0];

	*dt = (mfs_dtype)onnx_attr_int(ctx->node, "output_datatype", MFS_DT_FLOAT);
	if (!oc_is_float(*dt) && !oc_is_int(*dt))
		return mfs_op_fail(ctx, ENOTSUP, "output_datatype %d is not supported", (int)*dt);
	if (mfs_shape_numel(&s->shape) != 1 || !oc_is_int(s->dtype))
		return mfs_op_fail(ctx, EINVAL, "size must be one integer");
	if (!s->data)
		return MFS_SHAPE_DEPENDS_ON_DATA;
	*n = mfs_tensor_get_i64(s, 0);
	if (*n < 0 || *n > OC_MAX_NUMEL)
		return mfs_op_fail(ctx, EINVAL, "size %lld is invalid", (long long)*n);
	return 0;
}

static int win_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 1, true);
	int64_t n = 0;
	mfs_dtype dt;
	mfs_shape s = { .rank = 1 };
	int rc = win_size(ctx, &n, &dt);

	if (rc)
		return rc;
	s.dims[0] = n;
	oc_set_out(ctx, 0, dt, &s);
	return 0;
}

static int win_run(mfs_op_ctx *ctx, cosine_win w)
{
	mfs_tensor *out = ctx->out[0];
	int64_t n = out->shape.dims[0];
	double N = onnx_attr_int(ctx->node, "periodic", 1) ? (double)n : (double)(n - 1);

	for (int64_t i = 0; i < n; i++) {
		double p = N > 0 ? 2 * M_PI * (double)i / N : 0;
		oc_store(out->dtype, out->data, i, w.a0 - w.a1 * cos(p) + w.a2 * cos(2 * p));
	}
	return 0;
}

static int hann_run(mfs_op_ctx *ctx)
{
	return win_run(ctx, (cosine_win){ 0.5, 0.5, 0 });
}

static int hamming_run(mfs_op_ctx *ctx)
{
	return win_run(ctx, (cosine_win){ 25.0 / 46, 1 - 25.0 / 46, 0 });
}

static int blackman_run(mfs_op_ctx *ctx)
{
	return win_run(ctx, (cosine_win){ 0.42, 0.5, 0.08 });
}

MFS_OP(HannWindow, 17, .infer = win_infer, .run = hann_run);
MFS_OP(HammingWindow, 17, .infer = win_infer, .run = hamming_run);
MFS_OP(BlackmanWindow, 17, .infer = win_infer, .run = blackman_run);

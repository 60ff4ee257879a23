/* Where(cond, X, Y): cond ? X : Y, all three broadcast together.  X and Y
 * share one type of any size; elements are copied, never converted, so
 * every dtype (float16 included) takes the same path. */
#include "elementwise.h"

/* Masking (X or Y a scalar, the other and cond full rows) is the common
 * case in attention masks: those step patterns get loops of their own. */
#define EW_DEF_WHERE(T, name)                                               \
	EW_TARGETS static void name(char *out, const char *const *in,       \
				    const int64_t *step, int64_t n,         \
				    const ew_params *p)                     \
	{                                                                   \
		const uint8_t *c = (const uint8_t *)in[0];                  \
		const T *x = (const T *)in[1], *y = (const T *)in[2];       \
		T *o = (T *)out;                                            \
		(void)p;                                                    \
		if (step[0] && step[1] && step[2]) {                        \
			EW_SIMD                                             \
			for (int64_t j = 0; j < n; j++)                     \
				o[j] = c[j] ? x[j] : y[j];                  \
		} else if (step[0] && step[1]) {                            \
			T yv = y[0];                                        \
			EW_SIMD                                             \
			for (int64_t j = 0; j < n; j++)                     \
				o[j] = c[j] ? x[j] : yv;                    \
		} else if (step[0] && step[2]) {                            \
			T xv = x[0];                                        \
			EW_SIMD                                             \
			for (int64_t j = 0; j < n; j++)                     \
				o[j] = c[j] ? xv : y[j];                    \
		} else {                                                    \
			for (int64_t j = 0; j < n; j++)                     \
				o[j] = c[j * step[0]] ? x[j * step[1]]      \
						      : y[j * step[2]];     \
		}                                                           \
	}
EW_DEF_WHERE(uint8_t, where_1)
EW_DEF_WHERE(uint16_t, where_2)
EW_DEF_WHERE(uint32_t, where_4)
EW_DEF_WHERE(uint64_t, where_8)

static ew_fn where_kernel(size_t size)
{
	switch (size) {
	case 1: return where_1;
	case 2: return where_2;
	case 4: return where_4;
	case 8: return where_8;
	default: return NULL;
	}
}

static int where_infer(mfs_op_ctx *ctx)
{
	if (ctx->n_in != 3 || !ctx->in[0] || !ctx->in[1] || !ctx->in[2])
		return mfs_op_fail(ctx, EINVAL, "needs inputs condition, X and Y");
	if (ctx->in[0]->dtype != MFS_DT_BOOL)
		return mfs_op_fail(ctx, EINVAL, "condition must be bool, not %s",
				   mfs_dtype_onnx_name(ctx->in[0]->dtype));
	if (ctx->in[1]->dtype != ctx->in[2]->dtype)
		return mfs_op_fail(ctx, EINVAL, "X and Y types %s and %s differ",
				   mfs_dtype_onnx_name(ctx->in[1]->dtype),
				   mfs_dtype_onnx_name(ctx->in[2]->dtype));
	if (!where_kernel(mfs_dtype_size(ctx->in[1]->dtype)))
		return mfs_op_fail(ctx, ENOTSUP, "type %s is not supported",
				   mfs_dtype_onnx_name(ctx->in[1]->dtype));
	return ew_infer_shape(ctx, 0, ctx->in[1]->dtype);
}

static int where_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *in[3] = { ctx->in[0], ctx->in[1], ctx->in[2] };
	ew_params p = { 0 };

	ew_apply(where_kernel(mfs_dtype_size(in[1]->dtype)), in, 3, ctx->out[0], &p);
	return 0;
}

MFS_OP(Where, 9, .flags = MFS_OP_NHWC_OK, .infer = where_infer, .run = where_run);

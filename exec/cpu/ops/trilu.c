/* Trilu (14) keeps the upper (default) or lower triangle of the last two
 * dims, shifted by the optional diagonal k; EyeLike (9) writes ones on
 * diagonal k of a 2-D tensor.  Zero bytes are zero in every dtype. */
#include <string.h>

#include "op_common.h"

static int trilu_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 1, true);
	const mfs_tensor *in = ctx->in[0];
	size_t es;
	int rc;

	if (in->shape.rank < 2)
		return mfs_op_fail(ctx, EINVAL, "input must have rank >= 2");
	if ((rc = oc_elem_size(ctx, in, &es)))
		return rc;
	oc_set_out(ctx, 0, in->dtype, &in->shape);
	return 0;
}

static int trilu_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *in = ctx->in[0], *kt = oc_in(ctx, 1);
	mfs_tensor *out = ctx->out[0];
	int r = in->shape.rank;
	int64_t rows = in->shape.dims[r - 2], cols = in->shape.dims[r - 1], k = 0;
	int64_t mats = rows && cols ? mfs_shape_numel(&in->shape) / (rows * cols) : 0;
	bool upper = onnx_attr_int(ctx->node, "upper", 1) != 0;
	size_t es = mfs_dtype_size(in->dtype);

	if (kt && mfs_shape_numel(&kt->shape) >= 1)
		k = mfs_tensor_get_i64(kt, 0);
	if (!rows || !cols)
		return 0;
	for (int64_t m = 0; m < mats; m++)
		for (int64_t i = 0; i < rows; i++) {
			size_t off = (size_t)((m * rows + i) * cols) * es;
			char *d = (char *)out->data + off;
			const char *s = (const char *)in->data + off;
			/* Keep columns j with j - i >= k (upper) or <= k (lower). */
			for (int64_t j = 0; j < cols; j++) {
				bool keep = upper ? j - i >= k : j - i <= k;
				if (keep)
					memcpy(d + j * (int64_t)es, s + j * (int64_t)es, es);
				else
					memset(d + j * (int64_t)es, 0, es);
			}
		}
	return 0;
}

static int eyelike_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 1, true);
	const mfs_tensor *in = ctx->in[0];
	mfs_dtype dt = (mfs_dtype)onnx_attr_int(ctx->node, "dtype", in->dtype);

	if (in->shape.rank != 2)
		return mfs_op_fail(ctx, EINVAL, "input must be 2-D");
	if (!mfs_dtype_size(dt) || dt == MFS_DT_STRING)
		return mfs_op_fail(ctx, ENOTSUP, "dtype %d is not supported", (int)dt);
	oc_set_out(ctx, 0, dt, &in->shape);
	return 0;
}

static int eyelike_run(mfs_op_ctx *ctx)
{
	mfs_tensor *out = ctx->out[0];
	int64_t rows = out->shape.dims[0], cols = out->shape.dims[1];
	int64_t k = onnx_attr_int(ctx->node, "k", 0);

	if (out->nbytes)
		memset(out->data, 0, out->nbytes);
	for (int64_t i = 0; i < rows; i++) {
		/* Column i + k, formed only where it cannot overflow. */
		if ((k >= 0 && i < cols - k) || (k < 0 && i + k >= 0 && i + k < cols))
			oc_store(out->dtype, out->data, i * cols + i + k, 1);
	}
	return 0;
}

MFS_OP(Trilu, 14, .infer = trilu_infer, .run = trilu_run);
MFS_OP(EyeLike, 9, .infer = eyelike_infer, .run = eyelike_run);

/* ReverseSequence (10): for each batch entry b, reverse the first
 * sequence_lens[b] steps along the time axis; later steps are copied. */
#include <string.h>

#include "op_common.h"

static int rs_axes(mfs_op_ctx *ctx, int *ta, int *ba)
{
	const mfs_tensor *x = ctx->in[0], *lens;
	int rc;

	if ((rc = oc_need(ctx, 1)) || (rc = oc_elem_size(ctx, x, &(size_t){ 0 })))
		return rc;
	lens = ctx->in[1];
	*ta = (int)onnx_attr_int(ctx->node, "time_axis", 0);
	*ba = (int)onnx_attr_int(ctx->node, "batch_axis", 1);
	if (x->shape.rank < 2 || !((*ta == 0 && *ba == 1) || (*ta == 1 && *ba == 0)))
		return mfs_op_fail(ctx, EINVAL, "time_axis and batch_axis must be 0 and 1");
	if (lens->shape.rank != 1 || lens->shape.dims[0] != x->shape.dims[*ba] ||
	    !oc_is_int(lens->dtype))
		return mfs_op_fail(ctx, EINVAL, "sequence_lens must be [batch] integers");
	return 0;
}

static int rs_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 2, true);
	int ta, ba, rc = rs_axes(ctx, &ta, &ba);
	if (rc)
		return rc;
	oc_set_out(ctx, 0, ctx->in[0]->dtype, &ctx->in[0]->shape);
	return 0;
}

static int rs_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0], *lens = ctx->in[1];
	mfs_tensor *out = ctx->out[0];
	int ta, ba, rc = rs_axes(ctx, &ta, &ba);
	int64_t T, B, inner = 1;
	size_t es = mfs_dtype_size(x->dtype), row;

	if (rc)
		return rc;
	T = x->shape.dims[ta];
	B = x->shape.dims[ba];
	for (int i = 2; i < x->shape.rank; i++)
		inner *= x->shape.dims[i];
	row = (size_t)inner * es;
	for (int64_t b = 0; b < B; b++) {
		int64_t len = mfs_tensor_get_i64(lens, b);
		if (len < 0 || len > T)
			return mfs_op_fail(ctx, EINVAL, "sequence length %lld outside [0, %lld]",
					   (long long)len, (long long)T);
	}
	for (int64_t b = 0; b < B; b++) {
		int64_t len = mfs_tensor_get_i64(lens, b);
		for (int64_t t = 0; t < T && row; t++) {
			int64_t from = t < len ? len - 1 - t : t;
			int64_t d = ta == 0 ? t * B + b : b * T + t;
			int64_t s = ta == 0 ? from * B + b : b * T + from;
			memcpy((char *)out->data + d * (int64_t)row,
			       (const char *)x->data + s * (int64_t)row, row);
		}
	}
	return 0;
}

MFS_OP(ReverseSequence, 10, .infer = rs_infer, .run = rs_run);

/* ArgMax and ArgMin: int64 index of the extreme value along `axis`
 * (first occurrence, or last with select_last_index from opset 12). */
#include <stdlib.h>

#include "op_common.h"

static int arg_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 1, true);
	const mfs_tensor *in = ctx->in[0];
	int axis, rc;
	mfs_shape out = in->shape;

	if ((rc = oc_need_numeric(ctx, in, true)) ||
	    (rc = oc_axis(ctx, onnx_attr_int(ctx->node, "axis", 0), in->shape.rank, &axis)))
		return rc;
	if (in->shape.dims[axis] == 0)
		return mfs_op_fail(ctx, EINVAL, "cannot take the arg of an empty axis");
	if (onnx_attr_int(ctx->node, "keepdims", 1)) {
		out.dims[axis] = 1;
	} else {
		for (int i = axis; i < out.rank - 1; i++)
			out.dims[i] = out.dims[i + 1];
		out.rank--;
	}
	oc_set_out(ctx, 0, MFS_DT_INT64, &out);
	return 0;
}

static int arg_run(mfs_op_ctx *ctx, bool max)
{
	const mfs_tensor *in = ctx->in[0];
	int64_t *o = ctx->out[0]->data, nrows, len;
	bool last = onnx_attr_int(ctx->node, "select_last_index", 0) != 0;
	const void *rows;
	void *tmp;
	int axis, rc;

	if ((rc = oc_axis(ctx, onnx_attr_int(ctx->node, "axis", 0), in->shape.rank, &axis)) ||
	    (rc = oc_rows_gather(ctx, in, 1u << axis, &rows, &tmp, &nrows, &len)))
		return rc;
	for (int64_t r = 0; r < nrows; r++) {
		int64_t best = 0;
		double bv = oc_load(in->dtype, rows, r * len);
		for (int64_t j = 1; j < len; j++) {
			double v = oc_load(in->dtype, rows, r * len + j);
			bool better = max ? (v > bv || (last && v == bv))
					  : (v < bv || (last && v == bv));
			if (better) {
				bv = v;
				best = j;
			}
		}
		o[r] = best;
	}
	free(tmp);
	return 0;
}

static int argmax_run(mfs_op_ctx *ctx) { return arg_run(ctx, true); }
static int argmin_run(mfs_op_ctx *ctx) { return arg_run(ctx, false); }

MFS_OP(ArgMax, 1, .infer = arg_infer, .run = argmax_run);
MFS_OP(ArgMin, 1, .infer = arg_infer, .run = argmin_run);

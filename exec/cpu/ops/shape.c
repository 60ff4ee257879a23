/* Shape (start/end from opset 15) and Size: facts about the input's shape
 * as int64 tensors.  The output is known whenever the shape is, so the
 * engine can fold it at load. */
#include "op_common.h"

static void shape_range(mfs_op_ctx *ctx, int rank, int64_t *b, int64_t *e)
{
	int64_t s = onnx_attr_int(ctx->node, "start", 0);
	int64_t t = onnx_attr_int(ctx->node, "end", rank);

	if (s < 0)
		s += rank;
	if (t < 0)
		t += rank;
	*b = s < 0 ? 0 : s > rank ? rank : s;
	*e = t < 0 ? 0 : t > rank ? rank : t;
	if (*e < *b)
		*e = *b;
}

static int shape_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 1, true);
	int64_t b, e;
	mfs_shape out = { .rank = 1 };

	shape_range(ctx, ctx->in[0]->shape.rank, &b, &e);
	out.dims[0] = e - b;
	oc_set_out(ctx, 0, MFS_DT_INT64, &out);
	return 0;
}

static int shape_run(mfs_op_ctx *ctx)
{
	int64_t b, e, *o = ctx->out[0]->data;

	shape_range(ctx, ctx->in[0]->shape.rank, &b, &e);
	for (int64_t i = b; i < e; i++)
		o[i - b] = ctx->in[0]->shape.dims[i];
	return 0;
}

static int size_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 1, true);
	mfs_shape out = { .rank = 0 };
	oc_set_out(ctx, 0, MFS_DT_INT64, &out);
	return 0;
}

static int size_run(mfs_op_ctx *ctx)
{
	*(int64_t *)ctx->out[0]->data = mfs_shape_numel(&ctx->in[0]->shape);
	return 0;
}

MFS_OP(Shape, 1, .flags = MFS_OP_STRINGS, .infer = shape_infer, .run = shape_run);
MFS_OP(Size, 1, .flags = MFS_OP_STRINGS, .infer = size_infer, .run = size_run);

/* Optional operators (opset 15, with opset 18's wider inputs): Optional
 * wraps a tensor or a sequence, or makes an empty optional of the 'type'
 * attribute; OptionalHasElement says whether one holds a value;
 * OptionalGetElement takes the value out.  Opset 18 lets the last two
 * read a plain tensor or sequence (a value that is there) and
 * OptionalHasElement an omitted input (none): accepted at every opset,
 * since no opset 15 model can depend on their refusal.
 */
#include <string.h>

#include "container.h"

static int optional_infer(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->n_in > 0 ? ctx->in[0] : NULL;
	const onnx_attr *tp = onnx_node_attr(ctx->node, "type");

	if (!ctx->n_out || !ctx->out[0])
		return mfs_op_fail(ctx, EINVAL, "output 0 is required");
	if (x) {
		if (x->kind == MFS_KIND_OPTIONAL)
			return mfs_op_fail(ctx, EINVAL, "input 0 is already an optional");
		ct_set_out(ctx, MFS_KIND_OPTIONAL, x->kind, x->dtype);
		return 0;
	}
	if (!tp || tp->type != ONNX_ATTR_TYPE_PROTO)
		return mfs_op_fail(ctx, EINVAL,
				   "without an input, the 'type' attribute is required");
	if (tp->tp_kind == MFS_KIND_OPTIONAL || !mfs_dtype_size(tp->tp_dtype))
		return mfs_op_fail(ctx, ENOTSUP,
				   "'type' must be a tensor or a sequence of tensors");
	ct_set_out(ctx, MFS_KIND_OPTIONAL, tp->tp_kind, tp->tp_dtype);
	return 0;
}

static int optional_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->n_in > 0 ? ctx->in[0] : NULL;
	mfs_tensor *o = ctx->out[0];
	int rc = mfs_container_init(o, MFS_KIND_OPTIONAL, o->elem_kind, o->dtype,
				    x ? 1 : 0, ctx->err);

	if (!rc && x)
		rc = mfs_tensor_copy(&o->items[0], x, ctx->err);
	return rc;
}

static int has_infer(mfs_op_ctx *ctx)
{
	if (!ctx->n_out || !ctx->out[0])
		return mfs_op_fail(ctx, EINVAL, "output 0 is required");
	ctx->out[0]->dtype = MFS_DT_BOOL;
	ctx->out[0]->shape.rank = 0;
	return 0;
}

static int has_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->n_in > 0 ? ctx->in[0] : NULL;
	uint8_t has = x && (x->kind != MFS_KIND_OPTIONAL || x->n_items > 0);

	memcpy(ctx->out[0]->data, &has, 1);
	return 0;
}

/* The value an OptionalGetElement input holds: the optional's item, or
 * the input itself when it is not an optional. */
static int get_value(mfs_op_ctx *ctx, const mfs_tensor **v)
{
	const mfs_tensor *x = ctx->in[0];

	if (x->kind != MFS_KIND_OPTIONAL) {
		*v = x;
		return 0;
	}
	if (!x->n_items)
		return mfs_op_fail(ctx, EINVAL, "input 0 ('%s') is an empty optional",
				   ctx->node->inputs[0]);
	*v = &x->items[0];
	return 0;
}

static int get_infer(mfs_op_ctx *ctx)
{
	const mfs_tensor *v = NULL;
	int rc;

	if ((rc = get_value(ctx, &v)))
		return rc;
	ct_set_like(ctx, v);
	return 0;
}

static int get_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *v = NULL;
	int rc = get_value(ctx, &v);

	return rc ? rc : ct_copy_out(ctx, v);
}

MFS_OP(Optional, 15, .flags = MFS_OP_CONTAINERS, .infer = optional_infer, .run = optional_run);
MFS_OP(OptionalHasElement, 15, .flags = MFS_OP_CONTAINERS, .infer = has_infer, .run = has_run);
MFS_OP(OptionalGetElement, 15, .flags = MFS_OP_CONTAINERS, .infer = get_infer, .run = get_run);

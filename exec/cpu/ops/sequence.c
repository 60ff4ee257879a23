/* Sequence operators (opset 11): SequenceConstruct, SequenceEmpty,
 * SequenceInsert, SequenceErase, SequenceAt, SequenceLength.  A sequence
 * is an mfs_tensor of kind SEQUENCE whose items are tensors of one dtype
 * (tensor.h); every operator here builds a new one (the engine never
 * shares a container between values), copying the tensors it keeps.
 * Any dtype the engine has is accepted; strings are refused by the
 * reader before they get here.
 */
#include <string.h>

#include "container.h"

static int construct_infer(mfs_op_ctx *ctx)
{
	const mfs_tensor *t;
	int rc;

	if (ctx->n_in < 1)
		return mfs_op_fail(ctx, EINVAL, "needs at least one input");
	for (int i = 0; i < ctx->n_in; i++) {
		if ((rc = ct_tensor_in(ctx, i, &t)))
			return rc;
		if (t->dtype != ctx->in[0]->dtype)
			return mfs_op_fail(ctx, EINVAL,
					   "input %d is %s, input 0 is %s: a sequence holds one type",
					   i, mfs_dtype_onnx_name(t->dtype),
					   mfs_dtype_onnx_name(ctx->in[0]->dtype));
	}
	ct_set_out(ctx, MFS_KIND_SEQUENCE, MFS_KIND_TENSOR, ctx->in[0]->dtype);
	return 0;
}

static int construct_run(mfs_op_ctx *ctx)
{
	mfs_tensor *o = ctx->out[0];
	int rc = mfs_container_init(o, MFS_KIND_SEQUENCE, MFS_KIND_TENSOR,
				    ctx->in[0]->dtype, ctx->n_in, ctx->err);

	for (int i = 0; !rc && i < ctx->n_in; i++)
		rc = mfs_tensor_copy(&o->items[i], ctx->in[i], ctx->err);
	return rc;
}

/* dtype attribute (SequenceEmpty): default float. */
static int empty_dtype(mfs_op_ctx *ctx, mfs_dtype *dt)
{
	int64_t v = onnx_attr_int(ctx->node, "dtype", MFS_DT_FLOAT);

	if (v < 0 || v > 255 || !mfs_dtype_size((mfs_dtype)v))
		return mfs_op_fail(ctx, ENOTSUP, "dtype %lld is not supported",
				   (long long)v);
	*dt = (mfs_dtype)v;
	return 0;
}

static int empty_infer(mfs_op_ctx *ctx)
{
	mfs_dtype dt = MFS_DT_FLOAT;
	int rc;

	if (!ctx->n_out || !ctx->out[0])
		return mfs_op_fail(ctx, EINVAL, "output 0 is required");
	if ((rc = empty_dtype(ctx, &dt)))
		return rc;
	ct_set_out(ctx, MFS_KIND_SEQUENCE, MFS_KIND_TENSOR, dt);
	return 0;
}

static int empty_run(mfs_op_ctx *ctx)
{
	return mfs_container_init(ctx->out[0], MFS_KIND_SEQUENCE, MFS_KIND_TENSOR,
				  ctx->out[0]->dtype, 0, ctx->err);
}

/* Copy seq's items into a new sequence in output 0, leaving out item
 * skip (-1: none) and leaving a zeroed gap at position gap (-1: none). */
static int copy_items(mfs_op_ctx *ctx, const mfs_tensor *seq, int skip, int gap)
{
	mfs_tensor *o = ctx->out[0];
	int n = seq->n_items - (skip >= 0) + (gap >= 0), j = 0;
	int rc = mfs_container_init(o, MFS_KIND_SEQUENCE, MFS_KIND_TENSOR,
				    seq->dtype, n, ctx->err);

	for (int i = 0; !rc && i < seq->n_items; i++) {
		if (i == skip)
			continue;
		if (j == gap)
			j++;
		rc = mfs_tensor_copy(&o->items[j++], &seq->items[i], ctx->err);
	}
	return rc;
}

static int insert_infer(mfs_op_ctx *ctx)
{
	const mfs_tensor *seq, *t;
	int pos, rc;

	if ((rc = ct_sequence_in(ctx, 0, &seq)) || (rc = ct_tensor_in(ctx, 1, &t)))
		return rc;
	if (t->dtype != seq->dtype)
		return mfs_op_fail(ctx, EINVAL,
				   "the tensor is %s, the sequence holds %s",
				   mfs_dtype_onnx_name(t->dtype),
				   mfs_dtype_onnx_name(seq->dtype));
	rc = ct_position(ctx, 2, seq->n_items, true, seq->n_items, &pos);
	if (rc < 0)
		return rc;
	ct_set_out(ctx, MFS_KIND_SEQUENCE, MFS_KIND_TENSOR, seq->dtype);
	return 0;
}

static int insert_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *seq = ctx->in[0];
	int pos, rc = ct_position(ctx, 2, seq->n_items, true, seq->n_items, &pos);

	if (rc)
		return rc < 0 ? rc : -EIO;
	if ((rc = copy_items(ctx, seq, -1, pos)))
		return rc;
	return mfs_tensor_copy(&ctx->out[0]->items[pos], ctx->in[1], ctx->err);
}

static int erase_infer(mfs_op_ctx *ctx)
{
	const mfs_tensor *seq;
	int pos, rc;

	if ((rc = ct_sequence_in(ctx, 0, &seq)))
		return rc;
	if (!seq->n_items)
		return mfs_op_fail(ctx, EINVAL, "the sequence is empty: nothing to erase");
	rc = ct_position(ctx, 1, seq->n_items, false, seq->n_items - 1, &pos);
	if (rc < 0)
		return rc;
	ct_set_out(ctx, MFS_KIND_SEQUENCE, MFS_KIND_TENSOR, seq->dtype);
	return 0;
}

static int erase_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *seq = ctx->in[0];
	int pos, rc = ct_position(ctx, 1, seq->n_items, false, seq->n_items - 1,
				  &pos);

	if (rc)
		return rc < 0 ? rc : -EIO;
	return copy_items(ctx, seq, pos, -1);
}

static int at_infer(mfs_op_ctx *ctx)
{
	const mfs_tensor *seq;
	int pos, rc;

	if ((rc = ct_sequence_in(ctx, 0, &seq)))
		return rc;
	if (!(ctx->n_in > 1 && ctx->in[1]))
		return mfs_op_fail(ctx, EINVAL, "input 1 (position) is required");
	if ((rc = ct_position(ctx, 1, seq->n_items, false, 0, &pos)))
		return rc;
	ct_set_like(ctx, &seq->items[pos]);
	return 0;
}

static int at_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *seq = ctx->in[0];
	int pos, rc = ct_position(ctx, 1, seq->n_items, false, 0, &pos);

	if (rc)
		return rc < 0 ? rc : -EIO;
	return ct_copy_out(ctx, &seq->items[pos]);
}

static int length_infer(mfs_op_ctx *ctx)
{
	const mfs_tensor *seq;
	int rc;

	if ((rc = ct_sequence_in(ctx, 0, &seq)))
		return rc;
	ctx->out[0]->dtype = MFS_DT_INT64;
	ctx->out[0]->shape.rank = 0;
	return 0;
}

static int length_run(mfs_op_ctx *ctx)
{
	int64_t n = ctx->in[0]->n_items;

	memcpy(ctx->out[0]->data, &n, sizeof(n));
	return 0;
}

MFS_OP(SequenceConstruct, 11, .flags = MFS_OP_CONTAINERS, .infer = construct_infer, .run = construct_run);
MFS_OP(SequenceEmpty, 11, .flags = MFS_OP_CONTAINERS, .infer = empty_infer, .run = empty_run);
MFS_OP(SequenceInsert, 11, .flags = MFS_OP_CONTAINERS, .infer = insert_infer, .run = insert_run);
MFS_OP(SequenceErase, 11, .flags = MFS_OP_CONTAINERS, .infer = erase_infer, .run = erase_run);
MFS_OP(SequenceAt, 11, .flags = MFS_OP_CONTAINERS, .infer = at_infer, .run = at_run);
MFS_OP(SequenceLength, 11, .flags = MFS_OP_CONTAINERS, .infer = length_infer, .run = length_run);

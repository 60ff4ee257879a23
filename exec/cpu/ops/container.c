/* container.c - see container.h. */
#include <string.h>

#include "container.h"

/* Input i, failing unless it is present and of kind. */
static int kind_in(mfs_op_ctx *ctx, int i, mfs_kind kind, const mfs_tensor **t)
{
	const mfs_tensor *v = i < ctx->n_in ? ctx->in[i] : NULL;

	if (!v)
		return mfs_op_fail(ctx, EINVAL, "input %d is required", i);
	if (v->kind != kind)
		return mfs_op_fail(ctx, EINVAL, "input %d ('%s') is a %s, not a %s",
				   i, ctx->node->inputs[i], mfs_kind_name(v->kind),
				   mfs_kind_name(kind));
	*t = v;
	return 0;
}

int ct_sequence_in(mfs_op_ctx *ctx, int i, const mfs_tensor **seq)
{
	return kind_in(ctx, i, MFS_KIND_SEQUENCE, seq);
}

int ct_tensor_in(mfs_op_ctx *ctx, int i, const mfs_tensor **t)
{
	return kind_in(ctx, i, MFS_KIND_TENSOR, t);
}

int ct_position(mfs_op_ctx *ctx, int i, int n, bool end_ok, int dflt, int *pos)
{
	const mfs_tensor *p = i < ctx->n_in ? ctx->in[i] : NULL;
	int64_t v, hi = end_ok ? n : n - 1;

	if (!p) {
		*pos = dflt;
		return 0;
	}
	if (p->kind != MFS_KIND_TENSOR ||
	    (p->dtype != MFS_DT_INT32 && p->dtype != MFS_DT_INT64) ||
	    mfs_shape_numel(&p->shape) != 1)
		return mfs_op_fail(ctx, EINVAL,
				   "position must be one int32 or int64 value");
	if (!p->data)
		return MFS_SHAPE_DEPENDS_ON_DATA;
	v = mfs_tensor_get_i64(p, 0);
	if (v < -(int64_t)n || v > hi)
		return mfs_op_fail(ctx, EINVAL,
				   "position %lld is out of range [%d, %lld] for a sequence of %d tensors",
				   (long long)v, -n, (long long)hi, n);
	*pos = (int)(v < 0 ? v + n : v);
	return 0;
}

void ct_set_out(mfs_op_ctx *ctx, mfs_kind kind, mfs_kind elem_kind,
		mfs_dtype dt)
{
	mfs_tensor *o = ctx->out[0];

	o->kind = kind;
	o->elem_kind = kind == MFS_KIND_OPTIONAL ? elem_kind : MFS_KIND_TENSOR;
	o->dtype = dt;
	o->shape.rank = 0;
}

void ct_set_like(mfs_op_ctx *ctx, const mfs_tensor *v)
{
	ct_set_out(ctx, v->kind, v->elem_kind, v->dtype);
	if (v->kind == MFS_KIND_TENSOR)
		ctx->out[0]->shape = v->shape;
}

int ct_copy_out(mfs_op_ctx *ctx, const mfs_tensor *v)
{
	mfs_tensor *o = ctx->out[0];

	if (v->kind != MFS_KIND_TENSOR)
		return mfs_tensor_copy(o, v, ctx->err);
	if (o->data != v->data && v->nbytes)
		memcpy(o->data, v->data, v->nbytes);
	return 0;
}

/* GatherElements, ScatterElements (reduction none/add/mul from 16,
 * max/min from 18) and the older Scatter (9): index one element per
 * position of `indices` along `axis`.  Out-of-range indices are an error
 * before anything is written. */
#include <string.h>

#include "op_common.h"

/* Walk indices' positions: calls fn with the offset of that position in a
 * tensor of shape `data` (dense strides), with the axis coordinate replaced
 * by the (validated) index.  Returns 0 or -EINVAL on a bad index. */
typedef void (*elem_fn)(int64_t pos, int64_t off, void *user);

static int walk(mfs_op_ctx *ctx, const mfs_shape *data, const mfs_tensor *idx,
		int axis, elem_fn fn, void *user)
{
	int64_t st[MFS_MAX_RANK], c[MFS_MAX_RANK] = { 0 }, n = mfs_shape_numel(&idx->shape);
	int rank = idx->shape.rank;
	int64_t dim = data->dims[axis];

	oc_strides(data, st);
	for (int64_t p = 0; p < n; p++) {
		int64_t k = mfs_tensor_get_i64(idx, p), off = 0;
		if (k < -dim || k >= dim)
			return mfs_op_fail(ctx, EINVAL, "index %lld is out of range for axis of %lld",
					   (long long)k, (long long)dim);
		if (k < 0)
			k += dim;
		for (int j = 0; j < rank; j++)
			off += (j == axis ? k : c[j]) * st[j];
		if (fn)
			fn(p, off, user);
		for (int j = rank - 1; j >= 0; j--) {
			if (++c[j] < idx->shape.dims[j])
				break;
			c[j] = 0;
		}
	}
	return 0;
}

static int check_ranks(mfs_op_ctx *ctx, const mfs_tensor *data, const mfs_tensor *idx,
		       bool scatter, int *axis)
{
	int rc;

	if ((rc = oc_need(ctx, 1)) || (scatter && (rc = oc_need(ctx, 2))))
		return rc;
	if (!oc_is_int(idx->dtype))
		return mfs_op_fail(ctx, EINVAL, "indices must be integers");
	if (idx->shape.rank != data->shape.rank || data->shape.rank == 0)
		return mfs_op_fail(ctx, EINVAL, "indices rank %d, data rank %d",
				   idx->shape.rank, data->shape.rank);
	if ((rc = oc_axis(ctx, onnx_attr_int(ctx->node, "axis", 0), data->shape.rank, axis)))
		return rc;
	for (int i = 0; i < data->shape.rank; i++) {
		if (i != *axis && idx->shape.dims[i] > data->shape.dims[i])
			return mfs_op_fail(ctx, EINVAL, "indices dim %d exceeds data's", i);
	}
	if (scatter && !mfs_shape_equal(&ctx->in[2]->shape, &idx->shape))
		return mfs_op_fail(ctx, EINVAL, "updates and indices differ in shape");
	return 0;
}

static int ge_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 2, true);
	int axis, rc = check_ranks(ctx, ctx->in[0], ctx->in[1], false, &axis);
	if (rc)
		return rc;
	oc_set_out(ctx, 0, ctx->in[0]->dtype, &ctx->in[1]->shape);
	return 0;
}

typedef struct copy_args {
	char *dst;
	const char *src;
	size_t es;
	bool gather;
	int red;           /* OC_RED_* */
	mfs_dtype dt;
} copy_args;

static void elem_copy(int64_t pos, int64_t off, void *user)
{
	copy_args *a = user;

	if (a->gather) {
		memcpy(a->dst + pos * (int64_t)a->es, a->src + off * (int64_t)a->es, a->es);
		return;
	}
	if (a->red == OC_RED_NONE) {
		memcpy(a->dst + off * (int64_t)a->es, a->src + pos * (int64_t)a->es, a->es);
		return;
	}
	oc_reduce_into(a->red, a->dt, a->dst, off, a->src, pos);
}

static int ge_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *data = ctx->in[0];
	int axis, rc;
	copy_args a = { .dst = ctx->out[0]->data, .src = data->data, .gather = true };

	if ((rc = check_ranks(ctx, data, ctx->in[1], false, &axis)) ||
	    (rc = oc_elem_size(ctx, data, &a.es)))
		return rc;
	return walk(ctx, &data->shape, ctx->in[1], axis, elem_copy, &a);
}

static int se_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 3, true);
	int axis, red, rc;

	if ((rc = check_ranks(ctx, ctx->in[0], ctx->in[1], true, &axis)) ||
	    (rc = oc_scatter_reduction(ctx, &red)))
		return rc;
	if (red != OC_RED_NONE && (rc = oc_need_numeric(ctx, ctx->in[0], true)))
		return rc;
	oc_set_out(ctx, 0, ctx->in[0]->dtype, &ctx->in[0]->shape);
	return 0;
}

static int se_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *data = ctx->in[0];
	mfs_tensor *out = ctx->out[0];
	int axis, rc;
	copy_args a = { .dst = out->data, .src = ctx->in[2]->data, .dt = data->dtype };

	if ((rc = check_ranks(ctx, data, ctx->in[1], true, &axis)) ||
	    (rc = oc_scatter_reduction(ctx, &a.red)) ||
	    (rc = oc_elem_size(ctx, data, &a.es)))
		return rc;
	/* Validate every index before writing anything. */
	if ((rc = walk(ctx, &data->shape, ctx->in[1], axis, NULL, NULL)))
		return rc;
	if (out->data != data->data && data->nbytes)
		memcpy(out->data, data->data, data->nbytes);
	return walk(ctx, &data->shape, ctx->in[1], axis, elem_copy, &a);
}

MFS_OP(GatherElements, 11, .infer = ge_infer, .run = ge_run);
MFS_OP(ScatterElements, 11, .infer = se_infer, .run = se_run);
MFS_OP(Scatter, 9, .infer = se_infer, .run = se_run);

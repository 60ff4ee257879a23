/* OneHot (9; negative indices from 11): a new axis of size `depth` holding
 * values[1] at each index and values[0] elsewhere.  Indices outside
 * [-depth, depth) give an all-off row, as ONNX says. */
#include <math.h>
#include <string.h>

#include "op_common.h"

static int onehot_geom(mfs_op_ctx *ctx, int64_t *depth, int *axis, mfs_shape *out)
{
	const mfs_tensor *idx = ctx->in[0], *d, *v;
	int rc;

	if ((rc = oc_need(ctx, 1)) || (rc = oc_need(ctx, 2)))
		return rc;
	d = ctx->in[1];
	v = ctx->in[2];
	if (mfs_shape_numel(&d->shape) != 1 || mfs_shape_numel(&v->shape) != 2)
		return mfs_op_fail(ctx, EINVAL, "depth must be one value, values two");
	if (idx->shape.rank + 1 > MFS_MAX_RANK)
		return mfs_op_fail(ctx, EINVAL, "rank is too large");
	if (!d->data)
		return MFS_SHAPE_DEPENDS_ON_DATA;
	double dd = mfs_tensor_get_f64(d, 0);
	if (!(dd >= 1) || dd > (double)OC_MAX_NUMEL)
		return mfs_op_fail(ctx, EINVAL, "depth %g is invalid", dd);
	*depth = (int64_t)dd;
	if ((rc = oc_axis(ctx, onnx_attr_int(ctx->node, "axis", -1), idx->shape.rank + 1, axis)))
		return rc;
	out->rank = idx->shape.rank + 1;
	for (int i = 0, j = 0; i < out->rank; i++)
		out->dims[i] = i == *axis ? *depth : idx->shape.dims[j++];
	return oc_check_shape(ctx, out);
}

static int onehot_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 3, true);
	int64_t depth;
	int axis, rc;
	mfs_shape out;

	if ((rc = onehot_geom(ctx, &depth, &axis, &out)))
		return rc;
	oc_set_out(ctx, 0, ctx->in[2]->dtype, &out);
	return 0;
}

static int onehot_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *idx = ctx->in[0], *v = ctx->in[2];
	mfs_tensor *out = ctx->out[0];
	int64_t depth, outer, n, inner;
	int axis, rc;
	size_t es;
	mfs_shape s;

	if ((rc = onehot_geom(ctx, &depth, &axis, &s)) || (rc = oc_elem_size(ctx, v, &es)))
		return rc < 0 ? rc : mfs_op_fail(ctx, EINVAL, "depth unknown at run");
	oc_split_at(&out->shape, axis, &outer, &n, &inner);
	for (int64_t i = 0; i < outer * n * inner; i++)
		memcpy((char *)out->data + i * (int64_t)es, v->data, es);
	for (int64_t o = 0; o < outer; o++)
		for (int64_t in = 0; in < inner; in++) {
			double k = floor(mfs_tensor_get_f64(idx, o * inner + in));
			if (k < 0)
				k += (double)depth;
			if (!(k >= 0 && k < (double)depth))
				continue;
			memcpy((char *)out->data + ((o * n + (int64_t)k) * inner + in) * (int64_t)es,
			       (const char *)v->data + es, es);
		}
	return 0;
}

MFS_OP(OneHot, 9, .infer = onehot_infer, .run = onehot_run);

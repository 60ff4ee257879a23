/* Range (11): start, start+delta, ... below limit (above it for a negative
 * delta).  The length depends on the inputs' values. */
#include <math.h>

#include "op_common.h"

static int scalar_in(mfs_op_ctx *ctx, int i, const mfs_tensor **t)
{
	int rc = oc_need(ctx, i);
	if (rc)
		return rc;
	*t = ctx->in[i];
	if (mfs_shape_numel(&(*t)->shape) != 1)
		return mfs_op_fail(ctx, EINVAL, "input %d must be a scalar", i);
	if ((*t)->dtype != ctx->in[0]->dtype)
		return mfs_op_fail(ctx, EINVAL, "inputs differ in type");
	return (*t)->data ? 0 : MFS_SHAPE_DEPENDS_ON_DATA;
}

static int range_count(mfs_op_ctx *ctx, int64_t *n)
{
	const mfs_tensor *s, *l, *d;
	mfs_dtype dt = ctx->in[0] ? ctx->in[0]->dtype : MFS_DT_UNDEFINED;
	int rc;

	if ((rc = scalar_in(ctx, 0, &s)) || (rc = scalar_in(ctx, 1, &l)) ||
	    (rc = scalar_in(ctx, 2, &d)))
		return rc;
	if (oc_is_float(dt)) {
		double a = oc_load(dt, s->data, 0), b = oc_load(dt, l->data, 0),
		       dl = oc_load(dt, d->data, 0), c;
		if (dl == 0 || !isfinite(a) || !isfinite(b) || !isfinite(dl))
			return mfs_op_fail(ctx, EINVAL, "start, limit and delta must be finite, "
					   "delta non-zero");
		c = ceil((b - a) / dl);
		*n = c <= 0 ? 0 : c > (double)OC_MAX_NUMEL ? OC_MAX_NUMEL + 1 : (int64_t)c;
	} else if (oc_is_int(dt) && dt != MFS_DT_UINT64) {
		int64_t a = mfs_tensor_get_i64(s, 0), b = mfs_tensor_get_i64(l, 0),
			dl = mfs_tensor_get_i64(d, 0);
		if (dl == 0)
			return mfs_op_fail(ctx, EINVAL, "delta is 0");
		/* In long double: b - a may overflow int64. */
		long double c = ceill(((long double)b - a) / dl);
		*n = c <= 0 ? 0 : c > OC_MAX_NUMEL ? OC_MAX_NUMEL + 1 : (int64_t)c;
	} else {
		return mfs_op_fail(ctx, ENOTSUP, "data type %s is not supported",
				   mfs_dtype_onnx_name(dt));
	}
	if (*n > OC_MAX_NUMEL)
		return mfs_op_fail(ctx, EINVAL, "range is too long");
	return 0;
}

static int range_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 3, true);
	int64_t n = 0;
	int rc = range_count(ctx, &n);
	mfs_shape s = { .rank = 1 };

	if (rc)
		return rc;
	s.dims[0] = n;
	oc_set_out(ctx, 0, ctx->in[0]->dtype, &s);
	return 0;
}

static int range_run(mfs_op_ctx *ctx)
{
	mfs_tensor *out = ctx->out[0];
	mfs_dtype dt = out->dtype;
	int64_t n = mfs_shape_numel(&out->shape);

	if (oc_is_float(dt)) {
		double a = oc_load(dt, ctx->in[0]->data, 0), d = oc_load(dt, ctx->in[2]->data, 0);
		for (int64_t i = 0; i < n; i++)
			oc_store(dt, out->data, i, a + (double)i * d);
	} else {
		int64_t a = mfs_tensor_get_i64(ctx->in[0], 0), d = mfs_tensor_get_i64(ctx->in[2], 0);
		for (int64_t i = 0; i < n; i++) {
			if (dt == MFS_DT_INT64)  /* exact beyond 2^53 */
				((int64_t *)out->data)[i] = a + i * d;
			else
				oc_store(dt, out->data, i, (double)(a + i * d));
		}
	}
	return 0;
}

MFS_OP(Range, 11, .infer = range_infer, .run = range_run);

/* LayerNormalization (17): normalise over the dims from `axis` on, then
 * scale and shift (Scale and B broadcast to those dims); optional Mean and
 * InvStdDev outputs keep X's leading dims with 1s after.  And
 * MeanVarianceNormalization (9): (X - mean) / sqrt(var + 1e-9) over `axes`
 * (default [0, 2, 3]). */
#include <math.h>
#include <stdlib.h>

#include "op_common.h"

typedef struct ln_args {
	double eps;
	const double *scale, *bias;   /* expanded to the row length */
	mfs_tensor *mean, *invstd;
} ln_args;

static void ln_row(double *x, int64_t n, int64_t r, void *user)
{
	ln_args *a = user;
	double m = 0, v = 0, inv;

	for (int64_t i = 0; i < n; i++)
		m += x[i];
	m /= (double)n;
	for (int64_t i = 0; i < n; i++)
		v += (x[i] - m) * (x[i] - m);
	v /= (double)n;
	inv = 1.0 / sqrt(v + a->eps);
	for (int64_t i = 0; i < n; i++) {
		x[i] = (x[i] - m) * inv;
		if (a->scale)
			x[i] = x[i] * a->scale[i] + (a->bias ? a->bias[i] : 0);
	}
	if (a->mean)
		oc_store(a->mean->dtype, a->mean->data, r, m);
	if (a->invstd)
		oc_store(a->invstd->dtype, a->invstd->data, r, inv);
}

/* Does t broadcast (numpy, right-aligned) to dims[axis..rank)? */
static bool bcast_ok(const mfs_tensor *t, const mfs_shape *x, int axis)
{
	int n = x->rank - axis;
	if (t->shape.rank > n)
		return false;
	for (int i = 0; i < t->shape.rank; i++) {
		int64_t d = t->shape.dims[t->shape.rank - 1 - i];
		if (d != 1 && d != x->dims[x->rank - 1 - i])
			return false;
	}
	return true;
}

static int ln_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 2, true);
	const mfs_tensor *x = ctx->in[0];
	int axis, rc;
	mfs_shape st = x->shape;

	if ((rc = oc_need(ctx, 1)) || (rc = oc_need_numeric(ctx, x, false)) ||
	    (rc = oc_axis(ctx, onnx_attr_int(ctx->node, "axis", -1), x->shape.rank, &axis)))
		return rc;
	for (int i = 1; i < 3; i++)
		if (oc_in(ctx, i) && !bcast_ok(ctx->in[i], &x->shape, axis))
			return mfs_op_fail(ctx, EINVAL, "input %d does not broadcast to the "
					   "normalised dims", i);
	for (int i = axis; i < st.rank; i++)
		st.dims[i] = 1;
	if (!oc_is_float((mfs_dtype)onnx_attr_int(ctx->node, "stash_type", 1)))
		return mfs_op_fail(ctx, EINVAL, "stash_type must be a float type");
	oc_set_out(ctx, 0, x->dtype, &x->shape);
	/* Mean and InvStdDev use stash_type (float by default). */
	oc_set_out(ctx, 1, (mfs_dtype)onnx_attr_int(ctx->node, "stash_type", 1), &st);
	oc_set_out(ctx, 2, (mfs_dtype)onnx_attr_int(ctx->node, "stash_type", 1), &st);
	return 0;
}

/* Expand t (broadcastable to the trailing n dims of x) into dst[0..len). */
static void expand_param(const mfs_tensor *t, const mfs_shape *x, int axis,
			 double *dst, int64_t len)
{
	for (int64_t j = 0; j < len; j++) {
		int64_t rem = j, idx = 0, mul = 1;
		for (int d = x->rank - 1, k = t->shape.rank - 1; d >= axis; d--, k--) {
			int64_t c = rem % x->dims[d];
			rem /= x->dims[d];
			if (k >= 0) {
				if (t->shape.dims[k] != 1)
					idx += c * mul;
				mul *= t->shape.dims[k];
			}
		}
		dst[j] = oc_load(t->dtype, t->data, idx);
	}
}

static int ln_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];
	int axis, rc;
	int64_t len = 1;
	ln_args a = { .eps = onnx_attr_float(ctx->node, "epsilon", 1e-5f),
		      .mean = oc_out(ctx, 1), .invstd = oc_out(ctx, 2) };
	double *params;

	if ((rc = oc_axis(ctx, onnx_attr_int(ctx->node, "axis", -1), x->shape.rank, &axis)))
		return rc;
	for (int i = axis; i < x->shape.rank; i++)
		len *= x->shape.dims[i];
	params = malloc(2 * (size_t)len * sizeof(double) + 1);
	if (!params)
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	expand_param(ctx->in[1], &x->shape, axis, params, len);
	a.scale = params;
	if (oc_in(ctx, 2)) {
		expand_param(ctx->in[2], &x->shape, axis, params + len, len);
		a.bias = params + len;
	}
	rc = oc_row_map(ctx, x, ctx->out[0], oc_mask_from(axis, x->shape.rank), ln_row, &a);
	free(params);
	return rc;
}

static int mvn_mask(mfs_op_ctx *ctx, unsigned *mask)
{
	static const int64_t def[] = { 0, 2, 3 };
	const int64_t *axes = def;
	size_t n = 3;

	if (onnx_node_attr(ctx->node, "axes"))
		n = onnx_attr_ints(ctx->node, "axes", &axes);
	if (n > MFS_MAX_RANK)
		return mfs_op_fail(ctx, EINVAL, "too many axes");
	return oc_axes_mask(ctx, axes, (int)n, ctx->in[0]->shape.rank, mask, NULL);
}

static int mvn_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 1, true);
	unsigned mask;
	int rc;

	if ((rc = mvn_mask(ctx, &mask)) || (rc = oc_need_numeric(ctx, ctx->in[0], false)))
		return rc;
	oc_set_out(ctx, 0, ctx->in[0]->dtype, &ctx->in[0]->shape);
	return 0;
}

static int mvn_run(mfs_op_ctx *ctx)
{
	unsigned mask;
	ln_args a = { .eps = 1e-9 };
	int rc = mvn_mask(ctx, &mask);

	return rc ? rc : oc_row_map(ctx, ctx->in[0], ctx->out[0], mask, ln_row, &a);
}

MFS_OP(LayerNormalization, 17, .infer = ln_infer, .run = ln_run);
MFS_OP(MeanVarianceNormalization, 9, .infer = mvn_infer, .run = mvn_run);

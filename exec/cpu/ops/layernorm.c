/* LayerNormalization (17): normalise over the dims from `axis` on, then
 * scale and shift (Scale and B broadcast to those dims); optional Mean and
 * InvStdDev outputs keep X's leading dims with 1s after.
 * MeanVarianceNormalization (9): (X - mean) / sqrt(var + 1e-9) over `axes`
 * (default [0, 2, 3]).  GroupNormalization (18): X [N, C, ...] normalised
 * per sample over each of num_groups channel groups, then scaled and
 * shifted per group (opset 18) or per channel (the opset 21 form, taken
 * when Scale has C values). */
#include <math.h>
#include <stdlib.h>

#include "op_common.h"

typedef struct ln_args {
	double eps;
	const double *scale, *bias;   /* expanded to the row length */
	mfs_tensor *mean, *invstd;
} ln_args;

/* Mean and 1 / sqrt(variance + eps) of a row. */
static void moments(const double *x, int64_t n, double eps, double *mean, double *inv)
{
	double m = 0, v = 0;

	for (int64_t i = 0; i < n; i++)
		m += x[i];
	m /= (double)n;
	for (int64_t i = 0; i < n; i++)
		v += (x[i] - m) * (x[i] - m);
	*mean = m;
	*inv = 1.0 / sqrt(v / (double)n + eps);
}

static void ln_row(double *x, int64_t n, int64_t r, void *user)
{
	ln_args *a = user;
	double m, inv;

	moments(x, n, a->eps, &m, &inv);
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

/* y = (x - m) * inv * scale + bias over one row, vectorised and built
 * for AVX-512 and AVX2 as well as the baseline. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static void ln_apply(const float *x, float *y, int64_t n, float m, float inv,
		     const float *scale, const float *bias)
{
	if (bias) {
		#pragma omp simd
		for (int64_t i = 0; i < n; i++)
			y[i] = (x[i] - m) * inv * scale[i] + bias[i];
	} else {
		#pragma omp simd
		for (int64_t i = 0; i < n; i++)
			y[i] = (x[i] - m) * inv * scale[i];
	}
}

/* Mean and variance of one row, in double, as vector reductions (the
 * plain loop is a chain of dependent scalar adds: 80 us for a 128 x 256
 * encoder input on the 16-core host, 8 such nodes a run); built for
 * AVX-512 and AVX2 as well as the baseline. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static void ln_stats(const float *x, int64_t n, double *mean, double *var)
{
	double m = 0, v = 0;
	#pragma omp simd reduction(+:m)
	for (int64_t i = 0; i < n; i++)
		m += x[i];
	m /= (double)n;
	#pragma omp simd reduction(+:v)
	for (int64_t i = 0; i < n; i++)
		v += ((double)x[i] - m) * ((double)x[i] - m);
	*mean = m;
	*var = v / (double)n;
}

/* The common case: float data, Scale and B exactly the normalised shape. */
static bool ln_float_fast(mfs_op_ctx *ctx, int64_t rows, int64_t len, double eps)
{
	const mfs_tensor *x = ctx->in[0], *sc = ctx->in[1], *b = oc_in(ctx, 2);
	mfs_tensor *mean = oc_out(ctx, 1), *invstd = oc_out(ctx, 2);
	const float *xd = x->data, *sd = sc->data, *bd = b ? b->data : NULL;
	float *yd = ctx->out[0]->data;

	if (x->dtype != MFS_DT_FLOAT || sc->dtype != MFS_DT_FLOAT ||
	    mfs_shape_numel(&sc->shape) != len || (b && (b->dtype != MFS_DT_FLOAT ||
	    mfs_shape_numel(&b->shape) != len)) || (mean && mean->dtype != MFS_DT_FLOAT) ||
	    (invstd && invstd->dtype != MFS_DT_FLOAT))
		return false;
	#pragma omp parallel for if (rows * len > 65536 && rows > 1) schedule(static)
	for (int64_t r = 0; r < rows; r++) {
		const float *xr = xd + r * len;
		double m, v;
		ln_stats(xr, len, &m, &v);
		double inv = 1.0 / sqrt(v + eps);
		ln_apply(xr, yd + r * len, len, (float)m, (float)inv, sd, bd);
		if (mean)
			((float *)mean->data)[r] = (float)m;
		if (invstd)
			((float *)invstd->data)[r] = (float)inv;
	}
	return true;
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
	if (len && ln_float_fast(ctx, mfs_shape_numel(&x->shape) / len, len, a.eps))
		return 0;
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

typedef struct gn_args {
	double eps;
	int64_t groups, per_group_ch, spatial;
	bool per_channel;
	double *scale, *bias;       /* expanded: one value per channel or group */
} gn_args;

static void gn_row(double *x, int64_t n, int64_t r, void *user)
{
	const gn_args *a = user;
	int64_t g = r % a->groups;
	double m, inv;

	moments(x, n, a->eps, &m, &inv);
	for (int64_t i = 0; i < n; i++) {
		int64_t k = a->per_channel ? g * a->per_group_ch + i / a->spatial : g;
		x[i] = (x[i] - m) * inv * a->scale[k] + a->bias[k];
	}
}

static int gn_check(mfs_op_ctx *ctx, gn_args *a)
{
	const mfs_tensor *x = ctx->in[0], *sc = ctx->in[1], *b = ctx->in[2];
	int64_t c, ns;
	int rc;

	if ((rc = oc_need_numeric(ctx, x, false)))
		return rc;
	if (x->shape.rank < 2)
		return mfs_op_fail(ctx, EINVAL, "input must be [N, C, ...]");
	c = x->shape.dims[1];
	a->groups = onnx_attr_int(ctx->node, "num_groups", 0);
	if (a->groups < 1 || c % a->groups)
		return mfs_op_fail(ctx, EINVAL, "num_groups %lld does not divide %lld channels",
				   (long long)a->groups, (long long)c);
	ns = mfs_shape_numel(&sc->shape);
	if (ns != mfs_shape_numel(&b->shape) || (ns != a->groups && ns != c))
		return mfs_op_fail(ctx, EINVAL, "scale and bias need num_groups or C values");
	a->per_channel = ns == c;
	a->per_group_ch = c / a->groups;
	a->spatial = 1;
	for (int i = 2; i < x->shape.rank; i++)
		a->spatial *= x->shape.dims[i];
	a->eps = onnx_attr_float(ctx->node, "epsilon", 1e-5f);
	return 0;
}

static int gn_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 3, true);
	gn_args a;
	int rc = gn_check(ctx, &a);

	if (rc)
		return rc;
	oc_set_out(ctx, 0, ctx->in[0]->dtype, &ctx->in[0]->shape);
	return 0;
}

static int gn_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0], *sc = ctx->in[1], *b = ctx->in[2];
	mfs_tensor xv = *x, yv = *ctx->out[0];
	int64_t ns = mfs_shape_numel(&sc->shape);
	gn_args a;
	int rc = gn_check(ctx, &a);

	if (rc)
		return rc;
	a.scale = malloc(2 * (size_t)ns * sizeof(double) + 1);
	if (!a.scale)
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	a.bias = a.scale + ns;
	for (int64_t i = 0; i < ns; i++) {
		a.scale[i] = oc_load(sc->dtype, sc->data, i);
		a.bias[i] = oc_load(b->dtype, b->data, i);
	}
	/* Rows of one (sample, group): [N * G, C / G * spatial]. */
	xv.shape.rank = yv.shape.rank = 2;
	xv.shape.dims[0] = yv.shape.dims[0] = x->shape.dims[0] * a.groups;
	xv.shape.dims[1] = yv.shape.dims[1] = a.per_group_ch * a.spatial;
	rc = oc_row_map(ctx, &xv, &yv, 1u << 1, gn_row, &a);
	free(a.scale);
	return rc;
}

MFS_OP(LayerNormalization, 17, .infer = ln_infer, .run = ln_run);
/* What the LayerNorm rewrite (exec/graph/rewrite_layernorm.c) emits for models
 * below opset 17, which spell it as ReduceMean, Sub, Pow, Sqrt, Div ... */
MFS_OP_DOMAIN("com.modelfs", LayerNormalization, 1, .infer = ln_infer, .run = ln_run);
MFS_OP(MeanVarianceNormalization, 9, .infer = mvn_infer, .run = mvn_run);
MFS_OP(GroupNormalization, 18, .infer = gn_infer, .run = gn_run);

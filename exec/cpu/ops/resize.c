/* Resize (10; coordinate modes, cubic, roi from 11; axes from 18) and
 * Upsample (7 scales attribute, 9 scales input).  Interpolation is
 * separable: per dim and output coordinate, up to four (index, weight)
 * taps are computed once, following the ONNX reference (neighbours of the
 * source coordinate, edge-clamped; exclude_outside renormalises), and each
 * output element sums the products of its taps (float data resized on its
 * last two dims: plane by plane, separably, rs_planes). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "op_common.h"

enum { M_NEAREST, M_LINEAR, M_CUBIC };
enum { C_HALF_PIXEL, C_PYTORCH_HALF_PIXEL, C_ALIGN_CORNERS, C_ASYMMETRIC,
       C_TF_CROP_AND_RESIZE, C_TF_HALF_PIXEL_FOR_NN, C_HALF_PIXEL_SYMMETRIC };
enum { N_ROUND_FLOOR, N_ROUND_CEIL, N_FLOOR, N_CEIL };

typedef struct rs_cfg {
	int mode, coord, nearest;
	double cubic_a, extrapolation;
	bool exclude_outside;
	double scale[MFS_MAX_RANK];     /* output/input per dim */
	double roi[2 * MFS_MAX_RANK];   /* starts then ends; tf_crop only */
	mfs_shape out;
} rs_cfg;

static int pick(mfs_op_ctx *ctx, const char *attr, const char *def,
		const char *const *names, int n, int *out)
{
	const char *s = onnx_attr_string(ctx->node, attr, def);
	for (int i = 0; i < n; i++)
		if (strcmp(s, names[i]) == 0) {
			*out = i;
			return 0;
		}
	return mfs_op_fail(ctx, ENOTSUP, "%s '%s' is not supported", attr, s);
}

/* Read a float tensor input (scales, roi) into v; count in *n (0 when
 * absent or empty). */
static int read_floats(mfs_op_ctx *ctx, int idx, double *v, int max, int *n)
{
	const mfs_tensor *t = oc_in(ctx, idx);
	int64_t cnt = t ? mfs_shape_numel(&t->shape) : 0;

	*n = 0;
	if (cnt <= 0)
		return 0;
	if (cnt > max)
		return mfs_op_fail(ctx, EINVAL, "input %d has too many values", idx);
	if (!t->data)
		return MFS_SHAPE_DEPENDS_ON_DATA;
	for (int64_t i = 0; i < cnt; i++)
		v[i] = mfs_tensor_get_f64(t, i);
	*n = (int)cnt;
	return 0;
}

/* version: 7 (Upsample attr), 9 (Upsample input), 10, 11 (Resize). */
static int rs_config(mfs_op_ctx *ctx, int version, rs_cfg *c)
{
	static const char *const modes[] = { "nearest", "linear", "cubic" };
	static const char *const coords[] = { "half_pixel", "pytorch_half_pixel",
		"align_corners", "asymmetric", "tf_crop_and_resize",
		"tf_half_pixel_for_nn", "half_pixel_symmetric" };
	static const char *const nearests[] = { "round_prefer_floor",
		"round_prefer_ceil", "floor", "ceil" };
	const mfs_tensor *x = ctx->in[0];
	int r = x->shape.rank, rc, ns = 0, nz = 0, nr = 0, nax = r, ax[MFS_MAX_RANK];
	double scales[MFS_MAX_RANK];
	int64_t sizes[MFS_MAX_RANK];

	memset(c, 0, sizeof(*c));
	if ((rc = oc_need_numeric(ctx, x, true)))
		return rc;
	if (version <= 10) {
		/* Upsample and Resize-10: asymmetric coordinates, floor. */
		const char *m = onnx_attr_string(ctx->node, "mode", "nearest");
		c->mode = strcmp(m, "nearest") == 0 ? M_NEAREST : M_LINEAR;
		if (strcmp(m, "nearest") && strcmp(m, "linear") && strcmp(m, "bilinear"))
			return mfs_op_fail(ctx, ENOTSUP, "mode '%s' is not supported", m);
		c->coord = C_ASYMMETRIC;
		c->nearest = N_FLOOR;
	} else if ((rc = pick(ctx, "mode", "nearest", modes, 3, &c->mode)) ||
		   (rc = pick(ctx, "coordinate_transformation_mode", "half_pixel",
			      coords, 7, &c->coord)) ||
		   (rc = pick(ctx, "nearest_mode", "round_prefer_floor", nearests, 4,
			      &c->nearest))) {
		return rc;
	}
	c->cubic_a = onnx_attr_float(ctx->node, "cubic_coeff_a", -0.75f);
	c->exclude_outside = onnx_attr_int(ctx->node, "exclude_outside", 0) != 0;
	c->extrapolation = onnx_attr_float(ctx->node, "extrapolation_value", 0);
	if (onnx_attr_int(ctx->node, "antialias", 0))
		return mfs_op_fail(ctx, ENOTSUP, "antialias is not supported");
	const char *policy = onnx_attr_string(ctx->node, "keep_aspect_ratio_policy", "stretch");
	int keep = !strcmp(policy, "stretch") ? 0 : !strcmp(policy, "not_larger") ? 1
		   : !strcmp(policy, "not_smaller") ? 2 : -1;
	if (keep < 0)
		return mfs_op_fail(ctx, EINVAL, "unknown keep_aspect_ratio_policy '%s'", policy);
	if ((rc = oc_attr_axes(ctx, r, ax, &nax)))
		return rc;

	if (version == 7) {
		const onnx_attr *a = onnx_node_attr(ctx->node, "scales");
		if (!a || (int)a->n_floats != r)
			return mfs_op_fail(ctx, EINVAL, "scales must have one value per dim");
		for (int i = 0; i < r; i++)
			scales[i] = a->floats[i];
		ns = r;
	} else if (version <= 10) {
		if ((rc = read_floats(ctx, 1, scales, MFS_MAX_RANK, &ns)))
			return rc;
	} else {
		if ((rc = read_floats(ctx, 1, c->roi, 2 * MFS_MAX_RANK, &nr)) ||
		    (rc = read_floats(ctx, 2, scales, MFS_MAX_RANK, &ns)))
			return rc;
		if (oc_in(ctx, 3) && mfs_shape_numel(&ctx->in[3]->shape) > 0 &&
		    (rc = oc_read_ints(ctx, 3, sizes, MFS_MAX_RANK, &nz)))
			return rc;
	}
	if ((ns > 0) == (nz > 0))
		return mfs_op_fail(ctx, EINVAL, "exactly one of scales and sizes is needed");
	if ((ns && ns != nax) || (nz && nz != nax))
		return mfs_op_fail(ctx, EINVAL, "scales or sizes do not match the rank");
	c->out = x->shape;
	for (int i = 0; i < r; i++)
		c->scale[i] = 1;
	/* keep_aspect_ratio_policy (18): one scale for every listed axis, the
	 * smallest (not_larger) or largest (not_smaller) of sizes/input. */
	if (nz && keep) {
		double k = keep == 1 ? INFINITY : 0;
		for (int i = 0; i < nax; i++) {
			int64_t in = x->shape.dims[ax[i]];
			if (sizes[i] < 0 || in == 0)
				return mfs_op_fail(ctx, EINVAL, "size %lld is invalid",
						   (long long)sizes[i]);
			double q = (double)sizes[i] / (double)in;
			k = keep == 1 ? fmin(k, q) : fmax(k, q);
		}
		for (int i = 0; i < nax; i++) {
			double o = nearbyint(k * (double)x->shape.dims[ax[i]]);
			if (o > (double)OC_MAX_NUMEL)
				return mfs_op_fail(ctx, EINVAL, "output is too large");
			c->out.dims[ax[i]] = (int64_t)o;
			c->scale[ax[i]] = k;
		}
	}
	for (int i = 0; !(nz && keep) && i < nax; i++) {
		int d = ax[i];
		int64_t in = x->shape.dims[d];
		if (ns) {
			double o = scales[i] * (double)in;
			if (!(scales[i] > 0) || o > (double)OC_MAX_NUMEL)
				return mfs_op_fail(ctx, EINVAL, "scale %g is invalid", scales[i]);
			c->scale[d] = scales[i];
			c->out.dims[d] = (int64_t)o;
		} else {
			if (sizes[i] < 0 || in == 0)
				return mfs_op_fail(ctx, EINVAL, "size %lld is invalid",
						   (long long)sizes[i]);
			c->out.dims[d] = sizes[i];
			c->scale[d] = (double)sizes[i] / (double)in;
		}
	}
	/* roi defaults to the whole input. */
	if (c->coord == C_TF_CROP_AND_RESIZE) {
		if (nr && nr != 2 * r)
			return mfs_op_fail(ctx, EINVAL, "roi must have 2 x rank values");
		for (int i = 0; !nr && i < r; i++) {
			c->roi[i] = 0;
			c->roi[r + i] = 1;
		}
	}
	for (int i = 0; i < r; i++)
		if (c->out.dims[i] > 0 && x->shape.dims[i] == 0)
			return mfs_op_fail(ctx, EINVAL, "cannot resize an empty dim");
	return oc_check_shape(ctx, &c->out);
}

#define MAX_TAPS 4

typedef struct taps {
	int n;                   /* 0: extrapolate */
	int64_t idx[MAX_TAPS];
	double w[MAX_TAPS];
} taps;

static void coeffs(const rs_cfg *c, double t, double *w, int *n)
{
	double A = c->cubic_a;

	switch (c->mode) {
	case M_NEAREST: {
		bool hi;
		if (t == 1)
			hi = true;
		else if (c->nearest == N_ROUND_FLOOR)
			hi = t > 0.5;
		else if (c->nearest == N_ROUND_CEIL)
			hi = t >= 0.5;
		else
			hi = c->nearest == N_CEIL;
		w[0] = !hi;
		w[1] = hi;
		*n = 2;
		break;
	}
	case M_LINEAR:
		w[0] = 1 - t;
		w[1] = t;
		*n = 2;
		break;
	default:
		oc_cubic_coeffs(t, A, w);
		*n = 4;
	}
}

/* Taps of output coordinate x along dim d. */
static void make_taps(const rs_cfg *c, int d, int r, int64_t in, int64_t x, taps *tp)
{
	double s = c->scale[d], ow = s * (double)in, xo, w[MAX_TAPS], sum = 0;
	int n;
	int64_t i0;

	switch (c->coord) {
	case C_ALIGN_CORNERS:
		xo = ow == 1 ? 0 : (double)x * (double)(in - 1) / (ow - 1);
		break;
	case C_ASYMMETRIC:
		xo = (double)x / s;
		break;
	case C_TF_CROP_AND_RESIZE: {
		double a = c->roi[d], b = c->roi[r + d];
		xo = ow == 1 ? (b - a) * (double)(in - 1) / 2
			     : (double)x * (b - a) * (double)(in - 1) / (ow - 1);
		xo += a * (double)(in - 1);
		if (xo < 0 || xo > (double)(in - 1)) {
			tp->n = 0;
			return;
		}
		break;
	}
	case C_HALF_PIXEL_SYMMETRIC: {
		/* Centre the sampled window when the size was rounded. */
		double adjust = (double)c->out.dims[d] / ow;
		xo = (double)in / 2 * (1 - adjust) + ((double)x + 0.5) / s - 0.5;
		break;
	}
	case C_TF_HALF_PIXEL_FOR_NN:
		xo = ((double)x + 0.5) / s;
		break;
	case C_PYTORCH_HALF_PIXEL:
		xo = ow == 1 ? -0.5 : ((double)x + 0.5) / s - 0.5;
		break;
	default:
		xo = ((double)x + 0.5) / s - 0.5;
	}
	/* A NaN or huge roi must not reach the int64 conversions below. */
	if (isnan(xo))
		xo = 0;
	xo = fmin(fmax(xo, -1e15), 1e15);
	/* Neighbours prefer the left: i0 = ceil(xo) - 1, t in (0, 1]. */
	i0 = (int64_t)ceil(xo) - 1;
	coeffs(c, xo - (double)i0, w, &n);
	if (n == 4)
		i0--;
	tp->n = 0;
	for (int k = 0; k < n; k++) {
		int64_t idx = i0 + k;
		if (c->exclude_outside && (idx < 0 || idx >= in))
			w[k] = 0;
		sum += w[k];
	}
	for (int k = 0; k < n; k++) {
		int64_t idx = i0 + k;
		double wk = c->exclude_outside && sum != 0 ? w[k] / sum : w[k];
		if (wk == 0)
			continue;
		tp->idx[tp->n] = idx < 0 ? 0 : idx >= in ? in - 1 : idx;
		tp->w[tp->n++] = wk;
	}
	if (!tp->n) {  /* every weight zero: keep one tap so the sum is 0 */
		tp->idx[0] = 0;
		tp->w[0] = 0;
		tp->n = 1;
	}
}

/* Whether dim d's taps copy it as it is (one tap of weight 1 at each
 * output's own index). */
static bool taps_identity(const taps *t, int64_t in, int64_t out)
{
	if (in != out)
		return false;
	for (int64_t i = 0; i < out; i++)
		if (t[i].n != 1 || t[i].idx[0] != i || t[i].w[0] != 1)
			return false;
	return true;
}

/* Float data resized on its last two dims only (every leading dim's taps
 * the identity, no extrapolation): each plane separably, the rows along
 * the width into a buffer of [in rows, out width], then those along the
 * height, planes in parallel.  Same taps and weights as the general loop,
 * summed in double in another order.  Why: LRASPP's two upsamplings to
 * 224x224 spent 256 ms a run in the general loop (an odometer over every
 * dim and tap for each element); false where this does not apply. */
static bool rs_planes(const mfs_tensor *x, mfs_tensor *out, taps *const *tp)
{
	int r = x->shape.rank;
	if (r < 2 || x->dtype != MFS_DT_FLOAT)
		return false;
	int64_t planes = 1, ih = x->shape.dims[r - 2], iw = x->shape.dims[r - 1];
	int64_t oh = out->shape.dims[r - 2], ow = out->shape.dims[r - 1];
	for (int d = 0; d < r - 2; d++) {
		if (!taps_identity(tp[d], x->shape.dims[d], out->shape.dims[d]))
			return false;
		planes *= x->shape.dims[d];
	}
	for (int64_t i = 0; i < oh; i++)
		if (!tp[r - 2][i].n)
			return false;
	for (int64_t i = 0; i < ow; i++)
		if (!tp[r - 1][i].n)
			return false;
	bool ok = true;
	#pragma omp parallel reduction(&& : ok)
	{
		size_t nrows = (size_t)(ih * ow);
		double *rows = malloc(sizeof(double) * (nrows ? nrows : 1));
		ok = rows != NULL;
		#pragma omp for schedule(static)
		for (int64_t p = 0; p < planes; p++) {
			const float *xp = (const float *)x->data + p * ih * iw;
			float *yp = (float *)out->data + p * oh * ow;
			if (!rows)
				continue;
			for (int64_t i = 0; i < ih; i++)
				for (int64_t j = 0; j < ow; j++) {
					const taps *t = &tp[r - 1][j];
					double acc = 0;
					for (int k = 0; k < t->n; k++)
						acc += t->w[k] * xp[i * iw + t->idx[k]];
					rows[i * ow + j] = acc;
				}
			for (int64_t i = 0; i < oh; i++) {
				const taps *t = &tp[r - 2][i];
				for (int64_t j = 0; j < ow; j++) {
					double acc = 0;
					for (int k = 0; k < t->n; k++)
						acc += t->w[k] * rows[t->idx[k] * ow + j];
					yp[i * ow + j] = (float)acc;
				}
			}
		}
		free(rows);
	}
	return ok;
}

static int rs_infer(mfs_op_ctx *ctx, int version)
{
	OC_CHECK_IO(ctx, version == 9 ? 2 : 1, true);
	rs_cfg c;
	int rc = rs_config(ctx, version, &c);
	if (rc)
		return rc;
	oc_set_out(ctx, 0, ctx->in[0]->dtype, &c.out);
	return 0;
}

static int rs_run(mfs_op_ctx *ctx, int version)
{
	const mfs_tensor *x = ctx->in[0];
	mfs_tensor *out = ctx->out[0];
	rs_cfg c;
	int r = x->shape.rank, rc = rs_config(ctx, version, &c);
	int64_t total = mfs_shape_numel(&out->shape), ist[MFS_MAX_RANK];
	taps *tp[MFS_MAX_RANK] = { 0 };

	if (rc)
		return rc < 0 ? rc : mfs_op_fail(ctx, EINVAL, "scales unknown at run");
	if (!total)
		return 0;
	oc_strides(&x->shape, ist);
	for (int d = 0; d < r; d++) {
		tp[d] = malloc((size_t)out->shape.dims[d] * sizeof(taps));
		if (!tp[d]) {
			rc = mfs_op_fail(ctx, ENOMEM, "out of memory");
			goto done;
		}
		for (int64_t i = 0; i < out->shape.dims[d]; i++)
			make_taps(&c, d, r, x->shape.dims[d], i, &tp[d][i]);
	}
	if (rs_planes(x, out, tp))
		goto done;
	int64_t pos[MFS_MAX_RANK] = { 0 };
	for (int64_t e = 0; e < total; e++) {
		const taps *t[MFS_MAX_RANK];
		int k[MFS_MAX_RANK] = { 0 };
		double acc = 0;
		bool extrap = false;
		for (int d = 0; d < r; d++) {
			t[d] = &tp[d][pos[d]];
			extrap |= t[d]->n == 0;
		}
		if (extrap) {
			acc = c.extrapolation;
		} else {
			/* Sum over every combination of taps (odometer over k). */
			for (;;) {
				double w = 1;
				int64_t off = 0;
				for (int d = 0; d < r; d++) {
					w *= t[d]->w[k[d]];
					off += t[d]->idx[k[d]] * ist[d];
				}
				acc += w * oc_load(x->dtype, x->data, off);
				int d = r - 1;
				for (; d >= 0; d--) {
					if (++k[d] < t[d]->n)
						break;
					k[d] = 0;
				}
				if (d < 0)
					break;
			}
		}
		oc_store(out->dtype, out->data, e, acc);
		for (int d = r - 1; d >= 0; d--) {
			if (++pos[d] < out->shape.dims[d])
				break;
			pos[d] = 0;
		}
	}
done:
	for (int d = 0; d < r; d++)
		free(tp[d]);
	return rc;
}

static int up7_infer(mfs_op_ctx *ctx) { return rs_infer(ctx, 7); }
static int up9_infer(mfs_op_ctx *ctx) { return rs_infer(ctx, 9); }
static int rs10_infer(mfs_op_ctx *ctx) { return rs_infer(ctx, 10); }
static int rs11_infer(mfs_op_ctx *ctx) { return rs_infer(ctx, 11); }
static int up7_run(mfs_op_ctx *ctx) { return rs_run(ctx, 7); }
static int up9_run(mfs_op_ctx *ctx) { return rs_run(ctx, 9); }
static int rs10_run(mfs_op_ctx *ctx) { return rs_run(ctx, 10); }
static int rs11_run(mfs_op_ctx *ctx) { return rs_run(ctx, 11); }

MFS_OP(Upsample, 7, .infer = up7_infer, .run = up7_run);
MFS_OP(Upsample, 9, .infer = up9_infer, .run = up9_run);
MFS_OP(Resize, 10, .infer = rs10_infer, .run = rs10_run);
MFS_OP(Resize, 11, .infer = rs11_infer, .run = rs11_run);

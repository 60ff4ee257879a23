/* DFT and STFT (17).  Signals are real ([..., 1]) or complex ([..., 2]);
 * outputs are complex.  The transform is a direct O(L^2) sum over a
 * twiddle table (exact index k*n mod L, so no phase drift): simple and
 * precise, meant for the short transforms models carry, not for long
 * signal processing. */
#include <math.h>
#include <stdlib.h>

#include "op_common.h"

typedef struct twiddle {
	int64_t L;
	double *c, *s;
} twiddle;

static int tw_init(mfs_op_ctx *ctx, twiddle *t, int64_t L)
{
	t->L = L;
	t->c = malloc((size_t)(L + 1) * sizeof(double));
	t->s = malloc((size_t)(L + 1) * sizeof(double));
	if (!t->c || !t->s) {
		free(t->c);
		free(t->s);
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	}
	for (int64_t i = 0; i < L; i++) {
		t->c[i] = cos(2 * M_PI * (double)i / (double)L);
		t->s[i] = sin(2 * M_PI * (double)i / (double)L);
	}
	return 0;
}

static void tw_free(twiddle *t)
{
	free(t->c);
	free(t->s);
}

/* out[2k], out[2k+1] for k < K from x[2n], x[2n+1] for n < L. */
static void dft_line(const twiddle *t, const double *x, int64_t K, bool inverse, double *out)
{
	int64_t L = t->L;
	double sign = inverse ? 1 : -1, scale = inverse ? 1.0 / (double)L : 1;

	for (int64_t k = 0; k < K; k++) {
		double re = 0, im = 0;
		for (int64_t n = 0, idx = 0; n < L; n++, idx = (idx + k) % L) {
			double c = t->c[idx], s = sign * t->s[idx];
			re += x[2 * n] * c - x[2 * n + 1] * s;
			im += x[2 * n] * s + x[2 * n + 1] * c;
		}
		out[2 * k] = re * scale;
		out[2 * k + 1] = im * scale;
	}
}

static int opt_len(mfs_op_ctx *ctx, int i, int64_t *v)
{
	const mfs_tensor *t = oc_in(ctx, i);

	if (!t || mfs_shape_numel(&t->shape) == 0)
		return 0;
	if (mfs_shape_numel(&t->shape) != 1 || !oc_is_int(t->dtype))
		return mfs_op_fail(ctx, EINVAL, "input %d must be one integer", i);
	if (!t->data)
		return MFS_SHAPE_DEPENDS_ON_DATA;
	*v = mfs_tensor_get_i64(t, 0);
	if (*v < 1 || *v > (1 << 24))
		return mfs_op_fail(ctx, EINVAL, "length %lld is invalid", (long long)*v);
	return 0;
}

static int complex_last(mfs_op_ctx *ctx, const mfs_tensor *x, int min_rank)
{
	int r = x->shape.rank, rc;

	if ((rc = oc_need_numeric(ctx, x, false)))
		return rc;
	if (r < min_rank || (x->shape.dims[r - 1] != 1 && x->shape.dims[r - 1] != 2))
		return mfs_op_fail(ctx, EINVAL, "signal must end in a dim of 1 (real) or 2 (complex)");
	return 0;
}

/* DFT geometry: axis, input length n, transform length L, outputs K. */
static int dft_geom(mfs_op_ctx *ctx, int *axis, int64_t *n, int64_t *L, int64_t *K)
{
	const mfs_tensor *x = ctx->in[0];
	int rc;

	if ((rc = complex_last(ctx, x, 3)) ||
	    (rc = oc_axis(ctx, onnx_attr_int(ctx->node, "axis", 1), x->shape.rank - 1, axis)))
		return rc;
	*n = *L = x->shape.dims[*axis];
	if ((rc = opt_len(ctx, 1, L)))
		return rc;
	if (*L < 1)
		return mfs_op_fail(ctx, EINVAL, "empty transform");
	*K = onnx_attr_int(ctx->node, "onesided", 0) ? *L / 2 + 1 : *L;
	if (onnx_attr_int(ctx->node, "onesided", 0) && onnx_attr_int(ctx->node, "inverse", 0))
		return mfs_op_fail(ctx, ENOTSUP, "onesided inverse DFT is not supported");
	return 0;
}

static int dft_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 1, true);
	int axis, rc;
	int64_t n, L, K;
	mfs_shape s;

	if ((rc = dft_geom(ctx, &axis, &n, &L, &K)))
		return rc;
	s = ctx->in[0]->shape;
	s.dims[axis] = K;
	s.dims[s.rank - 1] = 2;
	oc_set_out(ctx, 0, ctx->in[0]->dtype, &s);
	return 0;
}

static int dft_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];
	mfs_tensor *out = ctx->out[0];
	int axis, rc;
	int64_t n, L, K, outer, d, inner, comp = x->shape.dims[x->shape.rank - 1];
	bool inverse = onnx_attr_int(ctx->node, "inverse", 0) != 0;
	twiddle t;
	double *buf;

	if ((rc = dft_geom(ctx, &axis, &n, &L, &K)))
		return rc < 0 ? rc : mfs_op_fail(ctx, EINVAL, "dft_length unknown at run");
	if ((rc = tw_init(ctx, &t, L)))
		return rc;
	buf = malloc((size_t)(2 * L + 2 * K) * sizeof(double));
	if (!buf) {
		tw_free(&t);
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	}
	oc_split_at(&x->shape, axis, &outer, &d, &inner);
	inner /= comp;  /* complex elements after the axis */
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			for (int64_t j = 0; j < L; j++) {
				int64_t e = ((o * n + j) * inner + i) * comp;
				buf[2 * j] = j < n ? oc_load(x->dtype, x->data, e) : 0;
				buf[2 * j + 1] = j < n && comp == 2 ? oc_load(x->dtype, x->data, e + 1) : 0;
			}
			dft_line(&t, buf, K, inverse, buf + 2 * L);
			for (int64_t k = 0; k < K; k++) {
				int64_t e = ((o * K + k) * inner + i) * 2;
				oc_store(out->dtype, out->data, e, buf[2 * L + 2 * k]);
				oc_store(out->dtype, out->data, e + 1, buf[2 * L + 2 * k + 1]);
			}
		}
	free(buf);
	tw_free(&t);
	return 0;
}

/* STFT geometry: frame step, frame length L, frames, bins K. */
static int stft_geom(mfs_op_ctx *ctx, int64_t *step, int64_t *L, int64_t *frames, int64_t *K)
{
	const mfs_tensor *x = ctx->in[0], *w = oc_in(ctx, 2);
	int64_t T;
	int rc;

	if ((rc = complex_last(ctx, x, 3)))
		return rc;
	if (x->shape.rank != 3)
		return mfs_op_fail(ctx, EINVAL, "signal must be [batch, length, 1|2]");
	T = x->shape.dims[1];
	*step = 0;
	*L = w && mfs_shape_numel(&w->shape) ? mfs_shape_numel(&w->shape) : 0;
	if ((rc = oc_need(ctx, 1)) || (rc = opt_len(ctx, 1, step)) || (rc = opt_len(ctx, 3, L)))
		return rc;
	if (w && w->shape.rank != 1)
		return mfs_op_fail(ctx, EINVAL, "window must be 1-D");
	if (*step < 1 || *L < 1 || *L > T ||
	    (w && mfs_shape_numel(&w->shape) && mfs_shape_numel(&w->shape) != *L))
		return mfs_op_fail(ctx, EINVAL, "frame_step, window and frame_length do not fit");
	*frames = (T - *L) / *step + 1;
	*K = onnx_attr_int(ctx->node, "onesided", 1) ? *L / 2 + 1 : *L;
	return 0;
}

static int stft_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 2, true);
	int64_t step, L, frames, K;
	int rc = stft_geom(ctx, &step, &L, &frames, &K);
	mfs_shape s = { .rank = 4 };

	if (rc)
		return rc;
	s.dims[0] = ctx->in[0]->shape.dims[0];
	s.dims[1] = frames;
	s.dims[2] = K;
	s.dims[3] = 2;
	oc_set_out(ctx, 0, ctx->in[0]->dtype, &s);
	return 0;
}

static int stft_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0], *w = oc_in(ctx, 2);
	mfs_tensor *out = ctx->out[0];
	int64_t step, L, frames, K, B = x->shape.dims[0], T = x->shape.dims[1],
		comp = x->shape.dims[2];
	int rc = stft_geom(ctx, &step, &L, &frames, &K);
	twiddle t;
	double *buf;

	if (rc)
		return rc < 0 ? rc : mfs_op_fail(ctx, EINVAL, "lengths unknown at run");
	if (w && !mfs_shape_numel(&w->shape))
		w = NULL;
	if ((rc = tw_init(ctx, &t, L)))
		return rc;
	buf = malloc((size_t)(2 * L + 2 * K) * sizeof(double));
	if (!buf) {
		tw_free(&t);
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	}
	for (int64_t b = 0; b < B; b++)
		for (int64_t f = 0; f < frames; f++) {
			for (int64_t j = 0; j < L; j++) {
				int64_t e = (b * T + f * step + j) * comp;
				double wj = w ? oc_load(w->dtype, w->data, j) : 1;
				buf[2 * j] = oc_load(x->dtype, x->data, e) * wj;
				buf[2 * j + 1] = comp == 2 ? oc_load(x->dtype, x->data, e + 1) * wj : 0;
			}
			dft_line(&t, buf, K, false, buf + 2 * L);
			for (int64_t k = 0; k < 2 * K; k++)
				oc_store(out->dtype, out->data, ((b * frames + f) * K) * 2 + k,
					 buf[2 * L + k]);
		}
	free(buf);
	tw_free(&t);
	return 0;
}

MFS_OP(DFT, 17, .infer = dft_infer, .run = dft_run);
MFS_OP(STFT, 17, .infer = stft_infer, .run = stft_run);

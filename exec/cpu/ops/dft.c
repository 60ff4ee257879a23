/* DFT and STFT (17).  Signals are real ([..., 1]) or complex ([..., 2]);
 * outputs are complex.  Power-of-two lengths use an iterative radix-2 FFT;
 * other lengths a direct O(L^2) sum over a twiddle table (exact index
 * k*n mod L, so no phase drift), capped at MAX_DIRECT so a model cannot
 * ask for hours of work. */
#include <math.h>
#include <stdlib.h>

#include "op_common.h"

#define MAX_DIRECT 65536

typedef struct twiddle {
	int64_t L;
	double *c, *s;
	double *buf;      /* scratch: L complex inputs, then K complex outputs */
} twiddle;

static int tw_init(mfs_op_ctx *ctx, twiddle *t, int64_t L)
{
	t->buf = NULL;
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
	free(t->buf);
}

/* Twiddles for length L and scratch for K outputs. */
static int tw_setup(mfs_op_ctx *ctx, twiddle *t, int64_t L, int64_t K)
{
	int rc = tw_init(ctx, t, L);

	if (rc)
		return rc;
	t->buf = malloc((size_t)(2 * L + 2 * K) * sizeof(double));
	if (!t->buf) {
		tw_free(t);
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	}
	return 0;
}

/* In-place radix-2 FFT of x (L complex values, L a power of two). */
static void fft_pow2(const twiddle *t, double *x, double sign)
{
	int64_t L = t->L;

	for (int64_t i = 1, j = 0; i < L; i++) {  /* bit-reversal permutation */
		int64_t bit = L >> 1;
		for (; j & bit; bit >>= 1)
			j ^= bit;
		j |= bit;
		if (i < j) {
			double re = x[2 * i], im = x[2 * i + 1];
			x[2 * i] = x[2 * j];
			x[2 * i + 1] = x[2 * j + 1];
			x[2 * j] = re;
			x[2 * j + 1] = im;
		}
	}
	for (int64_t len = 2; len <= L; len <<= 1) {
		int64_t stride = L / len;
		for (int64_t i = 0; i < L; i += len)
			for (int64_t k = 0; k < len / 2; k++) {
				double c = t->c[k * stride], s = sign * t->s[k * stride];
				double *a = x + 2 * (i + k), *b = x + 2 * (i + k + len / 2);
				double re = b[0] * c - b[1] * s, im = b[0] * s + b[1] * c;
				b[0] = a[0] - re;
				b[1] = a[1] - im;
				a[0] += re;
				a[1] += im;
			}
	}
}

/* out[2k], out[2k+1] for k < K from x[2n], x[2n+1] for n < L (x may be
 * overwritten). */
static void dft_line(const twiddle *t, double *x, int64_t K, bool inverse, double *out)
{
	int64_t L = t->L;
	double sign = inverse ? 1 : -1, scale = inverse ? 1.0 / (double)L : 1;

	if ((L & (L - 1)) == 0) {
		fft_pow2(t, x, sign);
		for (int64_t k = 0; k < 2 * K; k++)
			out[k] = x[k] * scale;
		return;
	}
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

/* Refuse direct transforms too long to finish in reasonable time. */
static int check_len(mfs_op_ctx *ctx, int64_t L)
{
	if ((L & (L - 1)) && L > MAX_DIRECT)
		return mfs_op_fail(ctx, ENOTSUP, "transform length %lld is not a power of two "
				   "and above %d", (long long)L, MAX_DIRECT);
	return 0;
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

/* The signal axis: an attribute (default 1) before opset 20, an optional
 * scalar input (default -2) from 20.  Negative counts from the back of the
 * full rank; the last (complex) dim is not a signal axis. */
static int dft_axis(mfs_op_ctx *ctx, bool axis_input, int *axis)
{
	const mfs_tensor *t = oc_in(ctx, 2);
	int r = ctx->in[0]->shape.rank;
	int64_t v = onnx_attr_int(ctx->node, "axis", 1);

	if (axis_input) {
		v = -2;
		if (t && mfs_shape_numel(&t->shape) > 0) {
			if (mfs_shape_numel(&t->shape) != 1 || !oc_is_int(t->dtype))
				return mfs_op_fail(ctx, EINVAL, "axis must be one integer");
			if (!t->data)
				return MFS_SHAPE_DEPENDS_ON_DATA;
			v = mfs_tensor_get_i64(t, 0);
		}
	}
	if (v < 0)
		v += r;
	if (v < 0 || v > r - 2)
		return mfs_op_fail(ctx, EINVAL, "axis is out of range for rank %d", r);
	*axis = (int)v;
	return 0;
}

/* DFT geometry: axis, input length n, transform length L, outputs K. */
static int dft_geom(mfs_op_ctx *ctx, bool axis_input, int *axis, int64_t *n, int64_t *L,
		    int64_t *K)
{
	const mfs_tensor *x = ctx->in[0];
	int rc;

	if ((rc = complex_last(ctx, x, 3)) || (rc = dft_axis(ctx, axis_input, axis)))
		return rc;
	*n = *L = x->shape.dims[*axis];
	if ((rc = opt_len(ctx, 1, L)))
		return rc;
	if (*L < 1)
		return mfs_op_fail(ctx, EINVAL, "empty transform");
	if ((rc = check_len(ctx, *L)))
		return rc;
	*K = onnx_attr_int(ctx->node, "onesided", 0) ? *L / 2 + 1 : *L;
	if (onnx_attr_int(ctx->node, "onesided", 0) && onnx_attr_int(ctx->node, "inverse", 0))
		return mfs_op_fail(ctx, ENOTSUP, "onesided inverse DFT is not supported");
	return 0;
}

static int dft_infer(mfs_op_ctx *ctx, bool axis_input)
{
	OC_CHECK_IO(ctx, 1, true);
	int axis, rc;
	int64_t n, L, K;
	mfs_shape s;

	if ((rc = dft_geom(ctx, axis_input, &axis, &n, &L, &K)))
		return rc;
	s = ctx->in[0]->shape;
	s.dims[axis] = K;
	s.dims[s.rank - 1] = 2;
	if ((rc = oc_check_shape(ctx, &s)))
		return rc;
	oc_set_out(ctx, 0, ctx->in[0]->dtype, &s);
	return 0;
}

static int dft_run(mfs_op_ctx *ctx, bool axis_input)
{
	const mfs_tensor *x = ctx->in[0];
	mfs_tensor *out = ctx->out[0];
	int axis, rc;
	int64_t n, L, K, outer, d, inner, comp = x->shape.dims[x->shape.rank - 1];
	bool inverse = onnx_attr_int(ctx->node, "inverse", 0) != 0;
	twiddle t;
	double *buf;

	if ((rc = dft_geom(ctx, axis_input, &axis, &n, &L, &K)))
		return rc < 0 ? rc : mfs_op_fail(ctx, EINVAL, "dft_length unknown at run");
	if ((rc = tw_setup(ctx, &t, L, K)))
		return rc;
	buf = t.buf;
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
	if ((rc = check_len(ctx, *L)))
		return rc;
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
	if ((rc = oc_check_shape(ctx, &s)))
		return rc;
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
	if ((rc = tw_setup(ctx, &t, L, K)))
		return rc;
	buf = t.buf;
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
	tw_free(&t);
	return 0;
}

static int dft17_infer(mfs_op_ctx *ctx) { return dft_infer(ctx, false); }
static int dft20_infer(mfs_op_ctx *ctx) { return dft_infer(ctx, true); }
static int dft17_run(mfs_op_ctx *ctx) { return dft_run(ctx, false); }
static int dft20_run(mfs_op_ctx *ctx) { return dft_run(ctx, true); }

MFS_OP(DFT, 17, .infer = dft17_infer, .run = dft17_run);
MFS_OP(DFT, 20, .infer = dft20_infer, .run = dft20_run);
MFS_OP(STFT, 17, .infer = stft_infer, .run = stft_run);

/* MelWeightMatrix (17): [dft_length/2 + 1, num_mel_bins] triangular
 * filters mapping linear frequency bins to the mel scale, as the ONNX
 * reference builds them (mel = 2595 log10(1 + f/700), band edges rounded
 * down to bins).  Inputs are scalars whose values set the shape. */
#include <math.h>
#include <stdlib.h>

#include "op_common.h"

typedef struct mel_args {
	int64_t mels, dft, rate;
	double lo, hi;
	mfs_dtype dt;
} mel_args;

static int mel_args_read(mfs_op_ctx *ctx, mel_args *a)
{
	for (int i = 0; i < 5; i++) {
		const mfs_tensor *t = oc_in(ctx, i);
		if (!t || mfs_shape_numel(&t->shape) != 1)
			return mfs_op_fail(ctx, EINVAL, "input %d must be a scalar", i);
		if (!t->data)
			return MFS_SHAPE_DEPENDS_ON_DATA;
	}
	a->mels = mfs_tensor_get_i64(ctx->in[0], 0);
	a->dft = mfs_tensor_get_i64(ctx->in[1], 0);
	a->rate = mfs_tensor_get_i64(ctx->in[2], 0);
	a->lo = mfs_tensor_get_f64(ctx->in[3], 0);
	a->hi = mfs_tensor_get_f64(ctx->in[4], 0);
	a->dt = (mfs_dtype)onnx_attr_int(ctx->node, "output_datatype", MFS_DT_FLOAT);
	if (a->mels < 1 || a->mels > 65536 || a->dft < 1 || a->dft > (1 << 24) || a->rate < 1 ||
	    !(a->lo >= 0) || !(a->hi >= a->lo) || !isfinite(a->hi))
		return mfs_op_fail(ctx, EINVAL, "invalid mel parameters");
	if (!oc_is_float(a->dt) && !oc_is_int(a->dt))
		return mfs_op_fail(ctx, ENOTSUP, "output_datatype %d is not supported", (int)a->dt);
	return 0;
}

static int mel_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 5, true);
	mel_args a;
	mfs_shape s = { .rank = 2 };
	int rc = mel_args_read(ctx, &a);

	if (rc)
		return rc;
	s.dims[0] = a.dft / 2 + 1;
	s.dims[1] = a.mels;
	if ((rc = oc_check_shape(ctx, &s)))
		return rc;
	oc_set_out(ctx, 0, a.dt, &s);
	return 0;
}

static int mel_run(mfs_op_ctx *ctx)
{
	mfs_tensor *out = ctx->out[0];
	mel_args a;
	int rc = mel_args_read(ctx, &a);
	int64_t bins, *edge;
	double lo_mel, step;

	if (rc)
		return rc < 0 ? rc : mfs_op_fail(ctx, EINVAL, "inputs unknown at run");
	bins = a.dft / 2 + 1;
	edge = malloc((size_t)(a.mels + 2) * sizeof(int64_t));
	if (!edge)
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	lo_mel = 2595 * log10(1 + a.lo / 700);
	step = (2595 * log10(1 + a.hi / 700) - lo_mel) / (double)(a.mels + 2);
	for (int64_t i = 0; i < a.mels + 2; i++) {
		double hz = 700 * (pow(10, ((double)i * step + lo_mel) / 2595) - 1);
		double b = floor((double)(a.dft + 1) * hz / (double)a.rate);
		/* Clamp into the matrix: the reference can index past it. */
		edge[i] = b < 0 ? 0 : b > (double)(bins - 1) ? bins - 1 : (int64_t)b;
	}
	for (int64_t i = 0; i < bins * a.mels; i++)
		oc_store(out->dtype, out->data, i, 0);
	for (int64_t m = 0; m < a.mels; m++) {
		int64_t l = edge[m], c = edge[m + 1], h = edge[m + 2];
		if (c == l)
			oc_store(out->dtype, out->data, c * a.mels + m, 1);
		else
			for (int64_t j = l; j <= c; j++)
				oc_store(out->dtype, out->data, j * a.mels + m,
					 (double)(j - l) / (double)(c - l));
		for (int64_t j = c; j < h; j++)
			oc_store(out->dtype, out->data, j * a.mels + m,
				 (double)(h - j) / (double)(h - c));
	}
	free(edge);
	return 0;
}

MFS_OP(MelWeightMatrix, 17, .infer = mel_infer, .run = mel_run);

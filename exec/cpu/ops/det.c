/* Det (11): determinants of the trailing square matrices, by LU
 * decomposition with partial pivoting in double. */
#include <math.h>
#include <stdlib.h>

#include "op_common.h"

static int det_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 1, true);
	const mfs_tensor *x = ctx->in[0];
	int r = x->shape.rank, rc;
	mfs_shape s = x->shape;

	if ((rc = oc_need_numeric(ctx, x, false)))
		return rc;
	if (r < 2 || x->shape.dims[r - 1] != x->shape.dims[r - 2])
		return mfs_op_fail(ctx, EINVAL, "input must end in square matrices");
	s.rank = r - 2;
	oc_set_out(ctx, 0, x->dtype, &s);
	return 0;
}

static double lu_det(double *a, int64_t n)
{
	double det = 1;

	for (int64_t k = 0; k < n; k++) {
		int64_t p = k;
		for (int64_t i = k + 1; i < n; i++)
			if (fabs(a[i * n + k]) > fabs(a[p * n + k]))
				p = i;
		if (a[p * n + k] == 0)
			return 0;
		if (p != k) {
			for (int64_t j = 0; j < n; j++) {
				double t = a[k * n + j];
				a[k * n + j] = a[p * n + j];
				a[p * n + j] = t;
			}
			det = -det;
		}
		det *= a[k * n + k];
		for (int64_t i = k + 1; i < n; i++) {
			double f = a[i * n + k] / a[k * n + k];
			for (int64_t j = k + 1; j < n; j++)
				a[i * n + j] -= f * a[k * n + j];
		}
	}
	return det;
}

static int det_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];
	mfs_tensor *out = ctx->out[0];
	int64_t n = x->shape.dims[x->shape.rank - 1], mats = mfs_shape_numel(&out->shape);
	double *a = malloc((size_t)(n * n + 1) * sizeof(double));

	if (!a)
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	for (int64_t m = 0; m < mats; m++) {
		for (int64_t i = 0; i < n * n; i++)
			a[i] = oc_load(x->dtype, x->data, m * n * n + i);
		oc_store(out->dtype, out->data, m, lu_det(a, n));
	}
	free(a);
	return 0;
}

MFS_OP(Det, 11, .infer = det_infer, .run = det_run);

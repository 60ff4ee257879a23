/* Softmax, LogSoftmax, Hardmax.  Opset 1-12 coerce the input to 2-D at
 * `axis` (default 1) and normalise each row of the flattened trailing
 * dims; opset 13 normalises along the single `axis` (default -1). */
#include <math.h>

#include "op_common.h"
#include "vmath.h"

typedef enum { SOFTMAX, LOGSOFTMAX, HARDMAX } sm_kind;

typedef struct sm_args {
	sm_kind kind;
	bool single;     /* float data: expf is precise enough and much faster */
} sm_args;

static void sm_row(double *x, int64_t n, int64_t r, void *user)
{
	const sm_args *a = user;
	sm_kind kind = a->kind;
	double mx = -INFINITY, sum = 0;
	int64_t arg = 0;

	(void)r;
	for (int64_t i = 0; i < n; i++)
		if (x[i] > mx) {
			mx = x[i];
			arg = i;
		}
	if (kind == HARDMAX) {
		for (int64_t i = 0; i < n; i++)
			x[i] = i == arg;
		return;
	}
	if (kind == LOGSOFTMAX) {
		for (int64_t i = 0; i < n; i++)
			sum += exp(x[i] - mx);
		double l = log(sum);
		for (int64_t i = 0; i < n; i++)
			x[i] = x[i] - mx - l;
		return;
	}
	if (a->single) {
		for (int64_t i = 0; i < n; i++)
			sum += x[i] = expf((float)(x[i] - mx));
	} else {
		for (int64_t i = 0; i < n; i++)
			sum += x[i] = exp(x[i] - mx);
	}
	for (int64_t i = 0; i < n; i++)
		x[i] /= sum;
}

static int sm_mask(mfs_op_ctx *ctx, bool coerce, unsigned *mask)
{
	int rank = ctx->in[0]->shape.rank, axis, rc;

	if (rank == 0)
		return mfs_op_fail(ctx, EINVAL, "input must have rank >= 1");
	rc = oc_axis(ctx, onnx_attr_int(ctx->node, "axis", coerce ? 1 : -1), rank, &axis);
	if (rc)
		return rc;
	*mask = coerce ? oc_mask_from(axis, rank) : 1u << axis;
	return 0;
}

static int sm_infer(mfs_op_ctx *ctx, bool coerce)
{
	OC_CHECK_IO(ctx, 1, true);
	unsigned mask;
	int rc;

	if ((rc = sm_mask(ctx, coerce, &mask)) ||
	    (rc = oc_need_numeric(ctx, ctx->in[0], false)))
		return rc;
	oc_set_out(ctx, 0, ctx->in[0]->dtype, &ctx->in[0]->shape);
	return 0;
}

/* y[i] = exp(x[i] - mx), vectorised (omp simd) and built for AVX-512 and
 * AVX2 as well as the baseline, as the elementwise kernels are. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static void exp_shifted(const float *x, float *y, int64_t n, float mx)
{
	#pragma omp simd
	for (int64_t i = 0; i < n; i++)
		y[i] = ew_expf(x[i] - mx);
}

/* Float rows along the innermost dims: straight on the buffers, with the
 * vectorising exp and no scratch. */
static void sm_float_rows(const float *x, float *y, int64_t rows, int64_t n, sm_kind kind)
{
	#pragma omp parallel for if (rows * n > 65536 && rows > 1) schedule(static)
	for (int64_t r = 0; r < rows; r++) {
		const float *xr = x + r * n;
		float *yr = y + r * n, mx = -INFINITY;
		double sum = 0;
		for (int64_t i = 0; i < n; i++)
			mx = xr[i] > mx ? xr[i] : mx;
		if (kind == LOGSOFTMAX) {
			for (int64_t i = 0; i < n; i++)
				sum += ew_expf(xr[i] - mx);
			float l = (float)log(sum);
			for (int64_t i = 0; i < n; i++)
				yr[i] = xr[i] - mx - l;
			continue;
		}
		exp_shifted(xr, yr, n, mx);
		for (int64_t i = 0; i < n; i++)
			sum += yr[i];
		float inv = (float)(1.0 / sum);
		for (int64_t i = 0; i < n; i++)
			yr[i] *= inv;
	}
}

static int sm_run(mfs_op_ctx *ctx, bool coerce, sm_kind kind)
{
	unsigned mask;
	int rc = sm_mask(ctx, coerce, &mask);
	sm_args a = { kind, ctx->in[0]->dtype == MFS_DT_FLOAT };
	const mfs_tensor *in = ctx->in[0];
	int rank = in->shape.rank, axis = 0;

	if (rc)
		return rc;
	while (axis < rank && !((mask >> axis) & 1))
		axis++;
	if (in->dtype == MFS_DT_FLOAT && kind != HARDMAX && mask == oc_mask_from(axis, rank)) {
		int64_t outer, n, inner;
		oc_split_at(&in->shape, axis, &outer, &n, &inner);
		if (outer && n && inner)
			sm_float_rows(in->data, ctx->out[0]->data, outer, n * inner, kind);
		return 0;
	}
	return oc_row_map(ctx, in, ctx->out[0], mask, sm_row, &a);
}

static int sm1_infer(mfs_op_ctx *ctx) { return sm_infer(ctx, true); }
static int sm13_infer(mfs_op_ctx *ctx) { return sm_infer(ctx, false); }
static int softmax1_run(mfs_op_ctx *ctx) { return sm_run(ctx, true, SOFTMAX); }
static int softmax13_run(mfs_op_ctx *ctx) { return sm_run(ctx, false, SOFTMAX); }
static int logsoftmax1_run(mfs_op_ctx *ctx) { return sm_run(ctx, true, LOGSOFTMAX); }
static int logsoftmax13_run(mfs_op_ctx *ctx) { return sm_run(ctx, false, LOGSOFTMAX); }
static int hardmax1_run(mfs_op_ctx *ctx) { return sm_run(ctx, true, HARDMAX); }
static int hardmax13_run(mfs_op_ctx *ctx) { return sm_run(ctx, false, HARDMAX); }

MFS_OP(Softmax, 1, .infer = sm1_infer, .run = softmax1_run);
MFS_OP(Softmax, 13, .infer = sm13_infer, .run = softmax13_run);
MFS_OP(LogSoftmax, 1, .infer = sm1_infer, .run = logsoftmax1_run);
MFS_OP(LogSoftmax, 13, .infer = sm13_infer, .run = logsoftmax13_run);
MFS_OP(Hardmax, 1, .infer = sm1_infer, .run = hardmax1_run);
MFS_OP(Hardmax, 13, .infer = sm13_infer, .run = hardmax13_run);

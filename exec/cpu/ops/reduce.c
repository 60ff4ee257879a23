/* The Reduce* family: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/
 * SumSquare over `axes` with keepdims.  Axes are an attribute before opset
 * 13 (ReduceSum) or 18 (the others) and an optional input from then on,
 * where noop_with_empty_axes makes "no axes" mean "no reduction".  Values
 * accumulate in double whatever the dtype. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "op_common.h"

typedef enum {
	R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_L1, R_L2, R_LOGSUM, R_LOGSUMEXP,
	R_SUMSQ
} rkind;

static double reduce_row(rkind k, mfs_dtype dt, const void *p, int64_t n)
{
	double acc = k == R_PROD ? 1 : k == R_MAX || k == R_LOGSUMEXP ? -INFINITY
		     : k == R_MIN ? INFINITY : 0;

	if (k == R_LOGSUMEXP) {
		double mx = -INFINITY, s = 0;
		for (int64_t i = 0; i < n; i++) {
			double v = oc_load(dt, p, i);
			mx = v > mx ? v : mx;
		}
		if (isinf(mx))
			return mx;
		for (int64_t i = 0; i < n; i++)
			s += exp(oc_load(dt, p, i) - mx);
		return mx + log(s);
	}
	/* One loop per kind, so the kind is not re-tested per element; float
	 * data is read directly. */
#define ACCUMULATE(expr)                                                     \
	do {                                                                  \
		if (dt == MFS_DT_FLOAT) {                                     \
			const float *f = p;                                   \
			for (int64_t i = 0; i < n; i++) {                     \
				double v = f[i];                              \
				expr;                                         \
			}                                                     \
		} else {                                                      \
			for (int64_t i = 0; i < n; i++) {                     \
				double v = oc_load(dt, p, i);                 \
				expr;                                         \
			}                                                     \
		}                                                             \
	} while (0)
	switch (k) {
	case R_MAX: ACCUMULATE(acc = v > acc || isnan(v) ? v : acc); break;
	case R_MIN: ACCUMULATE(acc = v < acc || isnan(v) ? v : acc); break;
	case R_PROD: ACCUMULATE(acc *= v); break;
	case R_L1: ACCUMULATE(acc += fabs(v)); break;
	case R_L2: case R_SUMSQ: ACCUMULATE(acc += v * v); break;
	default: ACCUMULATE(acc += v); break;
	}
#undef ACCUMULATE
	switch (k) {
	case R_MEAN: return acc / (double)n;
	case R_L2: return sqrt(acc);
	case R_LOGSUM: return log(acc);
	default: return acc;
	}
}

/* Reduction mask; *noop when nothing is reduced. */
static int reduce_mask(mfs_op_ctx *ctx, bool axes_input, unsigned *mask, bool *noop)
{
	int64_t axes[MFS_MAX_RANK];
	int n = 0, rank = ctx->in[0]->shape.rank, rc;

	if (axes_input) {
		if (oc_in(ctx, 1) && (rc = oc_read_ints(ctx, 1, axes, MFS_MAX_RANK, &n)))
			return rc;
	} else {
		if ((rc = oc_attr_ints(ctx, "axes", axes, MFS_MAX_RANK, &n)))
			return rc;
		n = n < 0 ? 0 : n;
	}
	*noop = false;
	if (!n) {
		*noop = axes_input && onnx_attr_int(ctx->node, "noop_with_empty_axes", 0);
		*mask = *noop ? 0 : (1u << rank) - 1;
		return 0;
	}
	return oc_axes_mask(ctx, axes, n, rank, mask, NULL);
}

static int reduce_infer(mfs_op_ctx *ctx, bool axes_input)
{
	OC_CHECK_IO(ctx, 1, true);
	const mfs_tensor *in = ctx->in[0];
	bool keep = onnx_attr_int(ctx->node, "keepdims", 1) != 0, noop;
	unsigned mask;
	mfs_shape out = { 0 };
	int rc;

	/* bool is a valid input of ReduceMax/ReduceMin (opset 20): any/all. */
	bool minmax = !strcmp(ctx->node->op_type, "ReduceMax") ||
		      !strcmp(ctx->node->op_type, "ReduceMin");
	if (!(minmax && in->dtype == MFS_DT_BOOL) && (rc = oc_need_numeric(ctx, in, true)))
		return rc;
	if ((rc = reduce_mask(ctx, axes_input, &mask, &noop)))
		return rc;
	for (int i = 0; i < in->shape.rank; i++) {
		if (!((mask >> i) & 1))
			out.dims[out.rank++] = in->shape.dims[i];
		else if (keep)
			out.dims[out.rank++] = 1;
	}
	oc_set_out(ctx, 0, in->dtype, &out);
	return 0;
}

static int reduce_run(mfs_op_ctx *ctx, bool axes_input, rkind k)
{
	const mfs_tensor *in = ctx->in[0];
	mfs_tensor *out = ctx->out[0];
	const void *rows;
	void *tmp;
	int64_t nrows, len;
	size_t es = mfs_dtype_size(in->dtype);
	unsigned mask;
	bool noop;
	int rc;

	if ((rc = reduce_mask(ctx, axes_input, &mask, &noop)))
		return rc < 0 ? rc : mfs_op_fail(ctx, EINVAL, "axes unknown at run");
	if ((rc = oc_rows_gather(ctx, in, mask, &rows, &tmp, &nrows, &len)))
		return rc;
	#pragma omp parallel for if (nrows * len > 65536 && nrows > 1) schedule(static)
	for (int64_t r = 0; r < nrows; r++)
		oc_store(out->dtype, out->data, r,
			 reduce_row(k, in->dtype, rows ? (const char *)rows + (size_t)(r * len) * es
						       : NULL, len));   /* empty input: no data */
	free(tmp);
	return 0;
}

static int reduce_attr_infer(mfs_op_ctx *ctx) { return reduce_infer(ctx, false); }
static int reduce_input_infer(mfs_op_ctx *ctx) { return reduce_infer(ctx, true); }

/* One run callback per (kind, where the axes come from). */
#define REDUCE_RUNS(name, kind)                                                  \
	static int name##_attr_run(mfs_op_ctx *ctx) { return reduce_run(ctx, false, kind); } \
	static int name##_input_run(mfs_op_ctx *ctx) { return reduce_run(ctx, true, kind); }

REDUCE_RUNS(sum, R_SUM)
REDUCE_RUNS(mean, R_MEAN)
REDUCE_RUNS(max, R_MAX)
REDUCE_RUNS(min, R_MIN)
REDUCE_RUNS(prod, R_PROD)
REDUCE_RUNS(l1, R_L1)
REDUCE_RUNS(l2, R_L2)
REDUCE_RUNS(logsum, R_LOGSUM)
REDUCE_RUNS(logsumexp, R_LOGSUMEXP)
REDUCE_RUNS(sumsq, R_SUMSQ)

MFS_OP(ReduceSum, 1, .infer = reduce_attr_infer, .run = sum_attr_run);
MFS_OP(ReduceSum, 13, .infer = reduce_input_infer, .run = sum_input_run);
MFS_OP(ReduceMean, 1, .infer = reduce_attr_infer, .run = mean_attr_run);
MFS_OP(ReduceMean, 18, .infer = reduce_input_infer, .run = mean_input_run);
MFS_OP(ReduceMax, 1, .infer = reduce_attr_infer, .run = max_attr_run);
MFS_OP(ReduceMax, 18, .infer = reduce_input_infer, .run = max_input_run);
MFS_OP(ReduceMin, 1, .infer = reduce_attr_infer, .run = min_attr_run);
MFS_OP(ReduceMin, 18, .infer = reduce_input_infer, .run = min_input_run);
MFS_OP(ReduceProd, 1, .infer = reduce_attr_infer, .run = prod_attr_run);
MFS_OP(ReduceProd, 18, .infer = reduce_input_infer, .run = prod_input_run);
MFS_OP(ReduceL1, 1, .infer = reduce_attr_infer, .run = l1_attr_run);
MFS_OP(ReduceL1, 18, .infer = reduce_input_infer, .run = l1_input_run);
MFS_OP(ReduceL2, 1, .infer = reduce_attr_infer, .run = l2_attr_run);
MFS_OP(ReduceL2, 18, .infer = reduce_input_infer, .run = l2_input_run);
MFS_OP(ReduceLogSum, 1, .infer = reduce_attr_infer, .run = logsum_attr_run);
MFS_OP(ReduceLogSum, 18, .infer = reduce_input_infer, .run = logsum_input_run);
MFS_OP(ReduceLogSumExp, 1, .infer = reduce_attr_infer, .run = logsumexp_attr_run);
MFS_OP(ReduceLogSumExp, 18, .infer = reduce_input_infer, .run = logsumexp_input_run);
MFS_OP(ReduceSumSquare, 1, .infer = reduce_attr_infer, .run = sumsq_attr_run);
MFS_OP(ReduceSumSquare, 18, .infer = reduce_input_infer, .run = sumsq_input_run);

/* Max, Min, Sum, Mean: variadic, every input broadcast to the common
 * shape.  Max and Min propagate NaN (as numpy.maximum does). */
#include "elementwise.h"

EW_T_NUM(EW_DEF_BINARY, max, (x != x || x > y) ? x : y)
EW_T_NUM(EW_DEF_BINARY, min, (x != x || x < y) ? x : y)
EW_T_NUM(EW_DEF_BINARY, sum, x + y)
EW_T_FLOAT(EW_DEF_UNARY, mean, x / (ew_t)pa)

static const ew_table max_tab = { 0, { EW_T_NUM(EW_ENTRY, max) } };
static const ew_table min_tab = { 0, { EW_T_NUM(EW_ENTRY, min) } };
static const ew_table sum_tab = { 0, { EW_T_NUM(EW_ENTRY, sum) } };
static const ew_table sumf_tab = { 0, { EW_T_FLOAT(EW_ENTRY, sum) } };
static const ew_table mean_tab = { 1, { EW_T_FLOAT(EW_ENTRY, mean) } };

static int max_infer(mfs_op_ctx *ctx) { return ew_infer(ctx, &max_tab, 0); }
static int min_infer(mfs_op_ctx *ctx) { return ew_infer(ctx, &min_tab, 0); }
static int sum_infer(mfs_op_ctx *ctx) { return ew_infer(ctx, &sum_tab, 0); }
static int mean_infer(mfs_op_ctx *ctx) { return ew_infer(ctx, &sumf_tab, 0); }

static int fold_run(mfs_op_ctx *ctx, const ew_table *tab, const ew_table *post)
{
	ew_params p = { .a = ctx->n_in };

	return ew_run_fold(ctx, tab, post, &p);
}

static int max_run(mfs_op_ctx *ctx) { return fold_run(ctx, &max_tab, NULL); }
static int min_run(mfs_op_ctx *ctx) { return fold_run(ctx, &min_tab, NULL); }
static int sum_run(mfs_op_ctx *ctx) { return fold_run(ctx, &sum_tab, NULL); }
static int mean_run(mfs_op_ctx *ctx) { return fold_run(ctx, &sumf_tab, &mean_tab); }

MFS_OP(Max, 1, .flags = MFS_OP_NHWC_OK, .infer = max_infer, .run = max_run);
MFS_OP(Min, 1, .flags = MFS_OP_NHWC_OK, .infer = min_infer, .run = min_run);
MFS_OP(Sum, 1, .flags = MFS_OP_NHWC_OK, .infer = sum_infer, .run = sum_run);
MFS_OP(Mean, 1, .flags = MFS_OP_NHWC_OK, .infer = mean_infer, .run = mean_run);

/* Softmax, LogSoftmax, Hardmax.  Opset 1-12 coerce the input to 2-D at
 * `axis` (default 1) and normalise each row of the flattened trailing
 * dims; opset 13 normalises along the single `axis` (default -1). */
#include <math.h>

#include "op_common.h"

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

static int sm_run(mfs_op_ctx *ctx, bool coerce, sm_kind kind)
{
	unsigned mask;
	int rc = sm_mask(ctx, coerce, &mask);
	sm_args a = { kind, ctx->in[0]->dtype == MFS_DT_FLOAT };

	return rc ? rc : oc_row_map(ctx, ctx->in[0], ctx->out[0], mask, sm_row, &a);
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

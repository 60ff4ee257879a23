/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (12): classes on
 * axis 1 of [N, C, d1...], int targets [N, d1...], optional class weights,
 * ignore_index, reduction none/sum/mean (mean divides by the summed
 * weights of the counted targets).  SCE is NLL over LogSoftmax(axis 1) and
 * can also return that log-probability tensor. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "op_common.h"

typedef enum { LOSS_NONE, LOSS_SUM, LOSS_MEAN } loss_red;

static int loss_check(mfs_op_ctx *ctx, loss_red *red)
{
	const mfs_tensor *x = ctx->in[0], *t, *w = oc_in(ctx, 2);
	const char *r = onnx_attr_string(ctx->node, "reduction", "mean");
	int rc;

	if ((rc = oc_need(ctx, 1)) || (rc = oc_need_numeric(ctx, x, false)))
		return rc;
	t = ctx->in[1];
	if (strcmp(r, "none") == 0)
		*red = LOSS_NONE;
	else if (strcmp(r, "sum") == 0)
		*red = LOSS_SUM;
	else if (strcmp(r, "mean") == 0)
		*red = LOSS_MEAN;
	else
		return mfs_op_fail(ctx, EINVAL, "unknown reduction '%s'", r);
	if (x->shape.rank < 2 || t->shape.rank != x->shape.rank - 1 || !oc_is_int(t->dtype))
		return mfs_op_fail(ctx, EINVAL, "expected input [N,C,...] and int target [N,...]");
	for (int i = 0; i < t->shape.rank; i++)
		if (t->shape.dims[i] != x->shape.dims[i ? i + 1 : 0])
			return mfs_op_fail(ctx, EINVAL, "target dim %d does not match the input", i);
	if (w && (w->shape.rank != 1 || w->shape.dims[0] != x->shape.dims[1] ||
		  w->dtype != x->dtype))
		return mfs_op_fail(ctx, EINVAL, "weight must be [C] of the input's type");
	return 0;
}

static int loss_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 2, true);
	loss_red red;
	mfs_shape scalar = { 0 };
	int rc = loss_check(ctx, &red);

	if (rc)
		return rc;
	oc_set_out(ctx, 0, ctx->in[0]->dtype, red == LOSS_NONE ? &ctx->in[1]->shape : &scalar);
	oc_set_out(ctx, 1, ctx->in[0]->dtype, &ctx->in[0]->shape);  /* SCE log_prob */
	return 0;
}

/* The loss from log-probabilities logp (dtype dt, shape of input 0). */
static int nll(mfs_op_ctx *ctx, mfs_dtype dt, const void *logp, loss_red red)
{
	const mfs_tensor *x = ctx->in[0], *t = ctx->in[1], *w = oc_in(ctx, 2);
	mfs_tensor *out = ctx->out[0];
	const onnx_attr *ig = onnx_node_attr(ctx->node, "ignore_index");
	int64_t n = x->shape.dims[0], c = x->shape.dims[1], d = 1;
	double sum = 0, wsum = 0;

	for (int i = 2; i < x->shape.rank; i++)
		d *= x->shape.dims[i];
	for (int64_t i = 0; i < n; i++)
		for (int64_t j = 0; j < d; j++) {
			int64_t k = mfs_tensor_get_i64(t, i * d + j);
			double l = 0, wt = 0;
			if (!ig || k != ig->i) {
				if (k < 0 || k >= c)
					return mfs_op_fail(ctx, EINVAL, "target %lld is not a class "
							   "in [0, %lld)", (long long)k, (long long)c);
				wt = w ? oc_load(w->dtype, w->data, k) : 1;
				l = -oc_load(dt, logp, (i * c + k) * d + j) * wt;
			}
			if (red == LOSS_NONE)
				oc_store(out->dtype, out->data, i * d + j, l);
			sum += l;
			wsum += wt;
		}
	if (red != LOSS_NONE)
		oc_store(out->dtype, out->data, 0, red == LOSS_SUM ? sum : sum / wsum);
	return 0;
}

static int nll_run(mfs_op_ctx *ctx)
{
	loss_red red;
	int rc = loss_check(ctx, &red);
	return rc ? rc : nll(ctx, ctx->in[0]->dtype, ctx->in[0]->data, red);
}

static void logsoftmax_row(double *x, int64_t n, int64_t r, void *user)
{
	double mx = -INFINITY, s = 0;

	(void)r;
	(void)user;
	for (int64_t i = 0; i < n; i++)
		mx = x[i] > mx ? x[i] : mx;
	for (int64_t i = 0; i < n; i++)
		s += exp(x[i] - mx);
	s = log(s);
	for (int64_t i = 0; i < n; i++)
		x[i] = x[i] - mx - s;
}

static int sce_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];
	mfs_tensor *lp = oc_out(ctx, 1), tmp = { 0 };
	loss_red red;
	int rc = loss_check(ctx, &red);

	if (rc)
		return rc;
	if (!lp) {
		if ((rc = mfs_tensor_alloc(&tmp, x->dtype, &x->shape, ctx->err)))
			return rc;
		lp = &tmp;
	}
	rc = oc_row_map(ctx, x, lp, 1u << 1, logsoftmax_row, NULL);
	if (!rc)
		rc = nll(ctx, lp->dtype, lp->data, red);
	mfs_tensor_release(&tmp);
	return rc;
}

MFS_OP(NegativeLogLikelihoodLoss, 12, .infer = loss_infer, .run = nll_run);
MFS_OP(SoftmaxCrossEntropyLoss, 12, .infer = loss_infer, .run = sce_run);

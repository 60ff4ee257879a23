/* op_util.c - small helpers every operator shares (see op.h). */
#include <stdarg.h>
#include <stdio.h>

#include "op.h"

int mfs_broadcast_shape(const mfs_shape *a, const mfs_shape *b, mfs_shape *out,
			mfs_error *err)
{
	int rank = a->rank > b->rank ? a->rank : b->rank;
	mfs_shape r = { .rank = rank };

	for (int i = 0; i < rank; i++) {
		int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
		int64_t da = ia >= 0 ? a->dims[ia] : 1;
		int64_t db = ib >= 0 ? b->dims[ib] : 1;
		if (da == db || db == 1)
			r.dims[i] = da;
		else if (da == 1)
			r.dims[i] = db;
		else {
			char sa[128], sb[128];
			return mfs_fail(err, EINVAL,
					"shapes %s and %s do not broadcast",
					mfs_shape_format(a, sa, sizeof(sa)),
					mfs_shape_format(b, sb, sizeof(sb)));
		}
	}
	*out = r;
	return 0;
}

int mfs_norm_axis(int64_t axis, int rank, int *out, mfs_error *err)
{
	if (axis < -(int64_t)rank || axis >= rank)
		return mfs_fail(err, EINVAL, "axis %lld is out of range for rank %d",
				(long long)axis, rank);
	*out = (int)(axis < 0 ? axis + rank : axis);
	return 0;
}

int mfs_op_fail(mfs_op_ctx *ctx, int code, const char *fmt, ...)
{
	char msg[MFS_ERROR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return mfs_fail(ctx->err, code, "%s '%s': %s", ctx->node->op_type,
			onnx_node_label(ctx->node), msg);
}

int mfs_op_check_strings(mfs_op_ctx *ctx)
{
	if (ctx->def->flags & MFS_OP_STRINGS)
		return 0;
	for (int k = 0; k < ctx->n_in; k++)
		if (ctx->in[k] && ctx->in[k]->dtype == MFS_DT_STRING)
			return mfs_op_fail(ctx, ENOTSUP,
					   "input %d ('%s') is a string tensor; the operator takes no strings",
					   k, k < ctx->node->n_inputs ? ctx->node->inputs[k] : "");
	for (int k = 0; k < ctx->n_out; k++)
		if (ctx->out[k] && ctx->out[k]->dtype == MFS_DT_STRING)
			return mfs_op_fail(ctx, ENOTSUP,
					   "output %d would be a string tensor; the operator makes no strings",
					   k);
	return 0;
}

/* Identity: output 0 is input 0 (a view). */
#include <string.h>

#include "op_common.h"

static int identity_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 1, true);
	ctx->out[0]->dtype = ctx->in[0]->dtype;
	ctx->out[0]->shape = ctx->in[0]->shape;
	return 0;
}

static int identity_run(mfs_op_ctx *ctx)
{
	if (ctx->out[0]->data != ctx->in[0]->data && ctx->in[0]->nbytes)
		memcpy(ctx->out[0]->data, ctx->in[0]->data, ctx->in[0]->nbytes);
	return 0;
}

MFS_OP(Identity, 1, .flags = MFS_OP_VIEW, .infer = identity_infer, .run = identity_run);

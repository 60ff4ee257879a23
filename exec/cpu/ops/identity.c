/* Identity: output 0 is input 0 (a view).  Opsets 14 and 16 let it pass
 * a sequence or an optional: those are copied (the engine never shares a
 * container between two values). */
#include <string.h>

#include "container.h"
#include "op_common.h"

static int identity_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 1, true);
	ct_set_like(ctx, ctx->in[0]);
	return 0;
}

static int identity_run(mfs_op_ctx *ctx)
{
	return ct_copy_out(ctx, ctx->in[0]);
}

MFS_OP(Identity, 1, .flags = MFS_OP_VIEW | MFS_OP_CONTAINERS | MFS_OP_STRINGS, .infer = identity_infer, .run = identity_run);

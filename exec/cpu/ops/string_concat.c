/* StringConcat (opset 20): the element-wise concatenation of two string
 * tensors, numpy-broadcast. */
#include <string.h>

#include "string_util.h"

static int sconcat_infer(mfs_op_ctx *ctx)
{
	return str_binary_infer(ctx, MFS_DT_STRING);
}

static int sconcat_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *a = ctx->in[0], *b = ctx->in[1];
	mfs_tensor *y = ctx->out[0];
	int64_t n = mfs_shape_numel(&y->shape);

	for (int64_t i = 0; i < n; i++) {
		const mfs_string *sa = mfs_string_at(a, str_bcast_index(&y->shape, &a->shape, i));
		const mfs_string *sb = mfs_string_at(b, str_bcast_index(&y->shape, &b->shape, i));
		char *p = mfs_string_alloc(y, i, sa->len + sb->len, ctx->err);
		if (!p)
			return -ENOMEM;
		if (sa->len)
			memcpy(p, sa->ptr, sa->len);
		if (sb->len)
			memcpy(p + sa->len, sb->ptr, sb->len);
	}
	return 0;
}

MFS_OP(StringConcat, 20, .flags = MFS_OP_STRINGS, .infer = sconcat_infer, .run = sconcat_run);

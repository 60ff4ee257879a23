/* op_half.h - the wrapper that runs an MFS_OP_HALF_VIA_FLOAT operator on
 * FP16/BFLOAT16 data by converting to and from FP32 (see op_half.c). */
#ifndef MFS_OP_HALF_H
#define MFS_OP_HALF_H

#include "op.h"

typedef struct mfs_half_def {
	mfs_op_def def;              /* first: ctx->def points here */
	const mfs_op_def *inner;     /* the FP32-only definition */
} mfs_half_def;

/* Fill *w as the wrapper of inner (flags, names and version copied). */
void mfs_op_half_wrap(mfs_half_def *w, const mfs_op_def *inner);

#endif

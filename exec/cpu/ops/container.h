/* container.h - helpers shared by the operators on sequences and
 * optionals (sequence.c, sequence_split.c, optional.c, identity.c); see
 * tensor.h (mfs_kind) for how such values are held and op.h
 * (MFS_OP_CONTAINERS) for the engine's side of the contract.
 */
#ifndef MFS_OPS_CONTAINER_H
#define MFS_OPS_CONTAINER_H

#include "op.h"

/* Input i as a sequence: fail (EINVAL, naming the input) when it is
 * absent or not a sequence. */
int ct_sequence_in(mfs_op_ctx *ctx, int i, const mfs_tensor **seq);

/* Fail unless input i is present and a tensor (a container where a tensor
 * belongs is the model's error). */
int ct_tensor_in(mfs_op_ctx *ctx, int i, const mfs_tensor **t);

/* The position input i (a one-element int32/int64 tensor) normalised
 * against a sequence of n items: a negative position counts from the
 * end; valid positions are [-n, n-1], or [-n, n] when end_ok (insert
 * may append).  Absent: *pos = dflt.  MFS_SHAPE_DEPENDS_ON_DATA while
 * the data is not known; EINVAL out of range. */
int ct_position(mfs_op_ctx *ctx, int i, int n, bool end_ok, int dflt, int *pos);

/* Set output 0 to be a container of kind holding dtype (infer). */
void ct_set_out(mfs_op_ctx *ctx, mfs_kind kind, mfs_kind elem_kind,
		mfs_dtype dt);

/* Set output 0 (at infer) to what copying v makes: v's kinds and dtype,
 * and its shape for a tensor. */
void ct_set_like(mfs_op_ctx *ctx, const mfs_tensor *v);

/* Copy v into output 0.  A tensor goes into the buffer the engine
 * allocated (to infer's shape); a container is built deep. */
int ct_copy_out(mfs_op_ctx *ctx, const mfs_tensor *v);

#endif

/* attention.h - the geometry of a com.modelfs Attention node
 * (exec/ops/attention.c), shared with the OpenCL engine so both address
 * Q, K and V alike.
 *
 * Scores are computed per batch item bi in [0, nb): item bi is batch b =
 * bi / heads and head h = bi % heads, and a matrix X of the item starts
 * at X's data + off + b * bstride + h * hstride (floats), rows ld apart.
 *
 * layout 0 (default): Q [..., S, Dk], Kt [..., Dk, T], V [..., T, Dv],
 *   Y [..., S, Dv]: every leading dim is a batch dim (heads 1); K comes
 *   transposed (Kt), ready for Q Kt.
 * layout 1: Q [B, S, H, Dk], K [B, T, H, Dk], V [B, T, H, Dv], Y [B, S,
 *   H, Dv]: a projection's output reshaped, before the Transpose that
 *   makes heads a batch dim; K is not transposed.  Q, K or V may instead
 *   be [B, L, P, H, D], one packed projection (QKV), with the part
 *   picked by the attribute q_part, k_part or v_part.  The scores are
 *   [B, H, S, T], which is what Cond broadcasts to.
 */
#ifndef MFS_OPS_ATTENTION_H
#define MFS_OPS_ATTENTION_H

#include <stdint.h>

#include "op.h"

typedef struct mfs_attn_mat {
	int64_t off, bstride, hstride, ld;
} mfs_attn_mat;

typedef struct mfs_attn_geom {
	int layout;
	int64_t nb, heads, s, t, dk, dv;
	mfs_attn_mat q, k, v, y;
	int srank;                       /* the scores' rank */
	int64_t sdims[MFS_MAX_RANK];     /* the scores' shape */
	int64_t cstride[MFS_MAX_RANK];   /* Cond's element strides per score dim (0: broadcast) */
} mfs_attn_geom;

/* Where item (b, h)'s matrix of m starts, in floats from its tensor's
 * data. */
static inline int64_t mfs_attn_offset(const mfs_attn_mat *m, int64_t b, int64_t h)
{
	return m->off + b * m->bstride + h * m->hstride;
}

/* Check the node's inputs and fill g; 0, or mfs_op_fail's negative errno
 * (the message names what does not fit). */
int mfs_attn_geometry(mfs_op_ctx *ctx, mfs_attn_geom *g);

#endif

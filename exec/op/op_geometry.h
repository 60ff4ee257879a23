/* op_geometry.h - the shape rules that both engines apply alike: the
 * sliding window of Conv and the pools, numpy matmul broadcasting, and the
 * operands of a com.modelfs Attention node.  The CPU operators
 * (exec/cpu/ops/) and the OpenCL engine (exec/opencl/) both read a node's
 * attributes and shapes through these, so they can never disagree.
 *
 * Window geometry follows the ONNX operator spec:
 *   dk  = (k - 1) * dilation + 1
 *   NOTSET      out = floor((in + pad_b + pad_e - dk) / stride) + 1
 *               (ceil instead of floor with ceil_mode, minus one when the
 *               last window would start in the end padding, as PyTorch and
 *               ONNX Runtime do)
 *   VALID       pads 0, out = floor((in - dk) / stride) + 1
 *   SAME_UPPER  out = ceil(in / stride), total pad = max(0, (out-1)*stride
 *   SAME_LOWER  + dk - in), the odd element at the end (UPPER) or the
 *               beginning (LOWER).
 *
 * Attention (com.modelfs, exec/cpu/ops/attention.c and the OpenCL
 * engine's): scores are computed per batch item bi in [0, nb): item bi is batch b =
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
#ifndef MFS_OP_GEOMETRY_H
#define MFS_OP_GEOMETRY_H

#include <stdbool.h>
#include <stdint.h>

#include "op.h"

#define MFS_WIN_MAX 3   /* spatial dims supported: 1-D, 2-D, 3-D */

typedef struct mfs_window {
	int nsp;                       /* number of spatial dims */
	int64_t in[MFS_WIN_MAX];       /* input spatial extent */
	int64_t k[MFS_WIN_MAX];        /* kernel extent */
	int64_t stride[MFS_WIN_MAX];
	int64_t dil[MFS_WIN_MAX];      /* ONNX dilation (1 = dense) */
	int64_t pad_b[MFS_WIN_MAX];    /* padding before / after */
	int64_t pad_e[MFS_WIN_MAX];
	int64_t out[MFS_WIN_MAX];      /* output spatial extent */
} mfs_window;

/* Fill w for input shape x (N, C, spatial...).  kernel: the kernel extents
 * (from the weights for Conv), or NULL to read the required kernel_shape
 * attribute.  When kernel is given and kernel_shape is present they must
 * agree.  Reads strides, dilations (when allow_dilations), pads, auto_pad.
 * Every bad attribute is a clear -EINVAL naming the node; an output extent
 * below 1 too. */
int mfs_window_init(mfs_op_ctx *ctx, const mfs_shape *x, const int64_t *kernel,
		    bool allow_dilations, bool ceil_mode, mfs_window *w);

/* Product of the output extents / kernel extents. */
int64_t mfs_window_out_size(const mfs_window *w);
int64_t mfs_window_k_size(const mfs_window *w);

/* numpy matmul geometry (MatMul, MatMulInteger, QLinearMatMul): a 1-D
 * first operand is a row vector, a 1-D second operand a column vector
 * (the added 1 is dropped from the result), batch dims broadcast.  Fills g
 * and the result shape; -EINVAL naming the node when the shapes do not fit. */
typedef struct mfs_mm_geom {
	int64_t m, k, n;
	int batch_rank;                   /* rank of the broadcast batch */
	int64_t batch[MFS_MAX_RANK];      /* broadcast batch dims */
	int64_t a_bstride[MFS_MAX_RANK];  /* matrix strides per batch dim (0 = broadcast) */
	int64_t b_bstride[MFS_MAX_RANK];
	int64_t nbatch;
	bool b_single;                    /* B has no batch of its own */
} mfs_mm_geom;
int mfs_mm_geometry(mfs_op_ctx *ctx, const mfs_shape *a, const mfs_shape *b,
		    mfs_mm_geom *g, mfs_shape *out);
/* Element offsets (in A and in B) of batch item bi. */
void mfs_mm_batch_offsets(const mfs_mm_geom *g, int64_t bi, int64_t *offa, int64_t *offb);

/* ---- Attention ---- */

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

/* conv_internal.h - what the parts of Conv and FusedConv share: their
 * parameters, the per-node state, and the two ways to compute.
 *
 * conv.c         the operators: parameters, infer, prepare (which path,
 *                Winograd or direct), run, the Z-apart pass, MFS_OP lines;
 * conv_dnnl.c    the oneDNN path: building the primitive (formats,
 *                post-ops, edge reorders, weight packings) and running it;
 * conv_im2col.c  the im2col + sgemm path.
 *
 * The header comment of conv.c describes both paths and why.  Private to
 * exec/cpu/ops/.
 */
#ifndef MFS_CONV_INTERNAL_H
#define MFS_CONV_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "dense_util.h"
#include "graph.h"

enum conv_act { ACT_NONE, ACT_RELU, ACT_LEAKY, ACT_CLIP, ACT_SWISH, ACT_HARDSWISH };

typedef struct conv_params {
	int64_t n, c, m, group, cg, mg;
	mfs_window w;
	int64_t ksize, osize, isize;     /* prod(kernel), prod(out), prod(in) */
	/* FusedConv only */
	const mfs_tensor *z;             /* added before the activation */
	bool z_apart;                    /* z does not have the conv's output shape */
	enum conv_act act;
	float act_a, act_b;              /* LeakyRelu alpha; Clip min, max */
} conv_params;

typedef struct conv_state {
	/* What the state was built for (rebuilt when any of it changes). */
	mfs_shape xs, ws;
	mfs_layout xl, yl, zl;
	bool has_bias, has_z, z_apart;
	bool z_in_y;                     /* Y's memory is Z's (op.h:
					    MFS_OP_OUT0_OVER_IN3) */
	mfs_shape zs, ys;                /* Z's and Y's shapes when z_apart */
	bool forced_im2col;              /* MFS_CONV=im2col when built */
	int threads;                     /* mfs_dnnl_threads() when built */
	bool built;                      /* false: a variant not built yet */
	bool use_dnnl;
	char why_im2col[160];

	/* oneDNN */
	dnnl_stream_t stream;
	mfs_dnnl_prim prim;
	dnnl_memory_t src_m, bias_m, dst_m;   /* what the primitive reads/writes */
	mfs_dnnl_weights wei;                 /* W, packed once when constant */
	/* The packing kept beside wei for another shape (conv_weights_pick) */
	mfs_dnnl_weights wei_alt;
	/* The packing prim reads, for conv_weights_move (wei and wei_alt
	 * are the node's: only its current variant holds them). */
	dnnl_memory_desc_t wei_want, wei_plain;
	/* Winograd built for one image runs images times, X, Y and Z moving
	 * by one image's bytes in their own layouts; 1 otherwise. */
	int64_t images;
	size_t x_img, y_img, z_img;
	/* Plain (NCHW) activations: the primitive still runs channels-last
	 * (its fastest kernels; in plain layout oneDNN falls back to its
	 * gemm or reference kernels, about 1.6x slower), with a oneDNN
	 * reorder into/out of scratch buffers at the edge. */
	mfs_dnnl_prim xreorder, yreorder;
	dnnl_memory_t xplain_m, yplain_m;
	void *xcl_buf, *ycl_buf;
	/* FusedConv's Z: a binary-add post-op reading channels-last memory
	 * (plain Z goes through zreorder into zcl_buf first); or, when Y's
	 * memory holds Z and the primitive writes it directly, a sum
	 * post-op onto the destination (z_sum: no Z argument). */
	bool z_sum;
	dnnl_memory_t z_m, zplain_m;
	mfs_dnnl_prim zreorder;
	void *zcl_buf;

	/* im2col */
	float *col;                      /* [cg*ksize, osize] */
	float *xtmp, *ytmp, *ztmp;       /* plain copies for NHWC tensors */

	/* Z apart (broadcast): the convolution's plain output, and plain
	 * copies of an NHWC Z and Y of their own sizes. */
	float *cbuf, *zatmp, *yatmp;
} conv_state;

/* A node's states, one per set of shapes and thread count lately run
 * (the batch sizes of dynamic batching; one thread or the team,
 * cpu_contention.h), so that going back to either rebuilds no primitive:
 * each change of size rebuilt every convolution's primitives (21-24
 * builds and 320-736 ms a ResNet-18 run on 2 cores under 8 clients).
 * The least lately used goes when all are taken.  The weight
 * packings (at most two, conv_weights_pick) are the node's and move to
 * the variant about to run (conv_weights_move); what a variant holds
 * beside its primitives is its own scratch (edge and im2col buffers,
 * sized for its batch).  Bound: CONV_VARIANTS sets of primitives and
 * scratch a node, two packings.  Dense keeps variants by shape alone
 * (dense.c). */
#define CONV_VARIANTS 16
typedef struct conv_node {
	conv_state *var[CONV_VARIANTS];
	uint64_t used[CONV_VARIANTS], clock;
	conv_state *cur;                 /* prepared last; holds the packings */
} conv_node;

static inline float act_apply(const conv_params *p, float v)
{
	switch (p->act) {
	case ACT_RELU: return v > 0 ? v : 0;
	case ACT_LEAKY: return v >= 0 ? v : v * p->act_a;
	case ACT_CLIP: return v < p->act_a ? p->act_a : v > p->act_b ? p->act_b : v;
	case ACT_SWISH: return v / (1.0f + expf(-v));
	case ACT_HARDSWISH: return v * fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f;
	default: return v;
	}
}

/* Plain copies of stored tensors and back, for the im2col path: [n, c,
 * hw] floats in layout l (NHWC or BLOCK16) to plain, or the other way,
 * through the engine's converter (graph.h). */
static inline void layout_copy(const float *src, float *dst, mfs_layout l, int64_t n,
			       int64_t c, int64_t hw, bool to_plain)
{
	mfs_tensor st = { .dtype = MFS_DT_FLOAT, .shape = { .rank = 4, .dims = { n, c, hw, 1 } },
			  .layout = to_plain ? l : MFS_LAYOUT_PLAIN, .data = (void *)src,
			  .nbytes = (size_t)(n * c * hw) * sizeof(float) };
	mfs_tensor dt = st;
	dt.data = dst;
	mfs_layout_convert(&dt, &st, to_plain ? MFS_LAYOUT_PLAIN : l);
}

/* How conv_prepare asks oneDNN, in the order it tries: Winograd (where
 * conv_winograd_how says how: for one image, run image by image, or for
 * the whole batch), then the direct algorithm reading X as it is stored,
 * then the direct algorithm with X reordered at the edge, then computing
 * channels-last whatever the layouts (every BLOCK16 tensor reordered at
 * the edge): the builds before it refuse oneDNN's reference kernel for
 * nChw16c, which is all it has for groups of other than 16k channels
 * (RegNetY's 8-channel groups ran 200x slower than on nhwc). */
enum conv_build { BUILD_WINOGRAD_IMAGE, BUILD_WINOGRAD, BUILD_DIRECT_X, BUILD_REORDER_X,
		  BUILD_CL };

/* conv_dnnl.c: build s's primitive for p (X stored in xl, Y in yl) the
 * way `how` says; on failure return a dnnl status and leave s without
 * primitives, its weight packings kept for the next try (the caller
 * tries the next way, and falls back to im2col). */
dnnl_status_t conv_dnnl_build(conv_state *s, const conv_params *p,
			      mfs_layout xl, mfs_layout yl, bool has_bias,
			      enum conv_build how, mfs_error *err);
/* conv_dnnl.c: free everything oneDNN but the weight packings, which a
 * rebuild keeps when their layout stays (mfs_dnnl_weights_init). */
void conv_prims_free(conv_state *s);
/* conv_dnnl.c: ... and the packings too. */
void conv_dnnl_free(conv_state *s);
/* conv_dnnl.c: move the node's weight packings from `from` (NULL: none)
 * to `to`, and make to->wei the packing to's primitive reads (when to
 * runs oneDNN), packing it anew if neither is it; a dnnl status (on
 * failure the caller rebuilds `to`). */
dnnl_status_t conv_weights_move(conv_state *to, conv_state *from);
/* conv_dnnl.c: run the primitive built in s on x into ydata (Y's layout
 * is the one s was built for). */
int conv_dnnl_compute(mfs_op_ctx *ctx, conv_state *s, const conv_params *p,
		      const mfs_tensor *x, const mfs_tensor *wt, const mfs_tensor *b,
		      float *ydata);

/* conv_im2col.c: a 1x1 kernel of stride 1 without padding (X is its own
 * unfolding: no im2col buffer). */
bool conv_is_pointwise(const conv_params *p);
/* conv_im2col.c: the convolution (with p's Z and activation) of x into
 * ydata stored in layout ylay, through s's plain scratch buffers. */
void conv_im2col_compute(conv_state *s, const conv_params *p, const mfs_tensor *x,
			 const mfs_tensor *wt, const mfs_tensor *b, float *ydata,
			 mfs_layout ylay);

#endif

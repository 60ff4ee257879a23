/* Conv (1, 11): N-D convolution, FP32, through oneDNN's convolution
 * primitive, with a plain im2col + cblas_sgemm path beside it.
 *
 * X [N, C, spatial...] (1-D, 2-D, 3-D), W [M, C/group, kernel...], optional
 * B [M] -> Y [N, M, out...].  Attributes: auto_pad, dilations, group,
 * kernel_shape, pads (asymmetric), strides.  Rank-4 X and Y may be stored
 * NHWC (MFS_OP_NHWC_OK): X as ctx->in[0]->layout says, Y as the engine set
 * ctx->out[0]->layout.
 *
 * oneDNN path (the default): prepare() builds the primitive once per node
 * and execution context, with the weights' format left to oneDNN
 * (format_tag any; brgconv picks blocked weights such as Acdb64a) and the
 * weights reordered into it once, kept in the state.  The primitive
 * computes channels-last (nwc/nhwc/ndhwc): oneDNN's fastest kernels
 * (brgconv) want it; or nChw16c when X, Y or Z is stored BLOCK16 (the
 * engine plans that between convolutions where it pays: exec/graph/graph.c,
 * plan_block16; oneDNN's depthwise kernel runs 1.7x faster on it).
 * Tensors in the compute format are handed over in place; the engine
 * keeps NHWC between consecutive NHWC-capable operators.  Plain
 * ones go through a oneDNN reorder into a scratch buffer (NOTES.md: 2.35
 * ms vs 2.82 ms for ResNet-50's layers with a reorder around each; with
 * plain tags instead oneDNN picks its gemm or reference kernels, slower
 * still: see docs/PERFORMANCE.md).
 *
 * A 3x3 convolution of stride 1 with enough work per thread runs oneDNN's
 * Winograd F(4x4, 3x3) instead of the direct algorithm, in nChw16c with
 * reorders at the edges (conv_winograd_how says when and why).
 *
 * Primitives use a user-managed scratchpad from a per-thread buffer
 * (dense_util.h says why), so a node may run on any worker thread.
 *
 * im2col path, used (1) when oneDNN cannot create the primitive for these
 * parameters or the CPU engine (logged once per prepare, the reason kept;
 * no case of the ONNX conformance data or of the exported models needs
 * it: oneDNN 2.6 covers every FP32 group/depthwise/dilation/padding
 * combination they use), and (2) when MFS_CONV=im2col is set in the
 * environment (tests run both paths and compare; also a way out should
 * oneDNN misbehave on some CPU).  It stays on OpenBLAS (cblas_sgemm on
 * the OpenMP team, mfs_blas_sgemm), so it does not depend on oneDNN.
 * Per image and group: unfold X into col [C/group * prod(kernel),
 * prod(out)] and multiply W_g [M/group, C/group * prod(kernel)] by it with
 * one sgemm.  A 1x1 kernel with stride 1 and no padding uses X itself.
 * NHWC tensors are converted to plain scratch buffers around it.
 *
 * Weights are reordered once when the engine marks W a model constant
 * (ctx->const_in bit 1) and its pointer is unchanged; a W computed at run
 * time is reordered on every run.
 *
 * Only FP32 is supported (the ONNX spec also allows float16 and double: a
 * clear ENOTSUP).
 *
 * FusedConv (domain com.modelfs, version 1) is Conv followed by an optional
 * residual add and activation, for the engine's fusion pass to target (as
 * ONNX Runtime's com.microsoft.FusedConv):
 *   Y = act(Conv(X, W, B) + Z)
 * inputs X, W, B (optional), Z (optional, float, plain or NHWC);
 * attributes: Conv's, plus activation ("" = none, "Relu", "LeakyRelu",
 * "Clip") and activation_params (floats: LeakyRelu alpha (0.01); Clip
 * min, max).  When Z has the convolution's output shape (the case the
 * rewrites aim at), oneDNN applies Z and the activation as post-ops
 * (binary add, eltwise) while the output is still in cache; the im2col
 * path applies them in one pass after the product.  Any other Z is added
 * as ONNX Add would, numpy-style broadcast both ways (Y then has the
 * broadcast shape): the convolution goes to a scratch buffer and the sum
 * and activation follow in a separate pass.  That run-time case is what
 * makes the fusion sound before shapes are known: the graph rewrites run
 * on exports whose batch dim is symbolic, so they cannot prove that Z
 * fits (exec/graph/rewrite_residual.c).  Z is only read, never written, so it
 * may have other readers.  exec/graph/fusion.c turns Conv -> Relu/LeakyRelu/Clip
 * into FusedConv, exec/graph/rewrite_residual.c Conv -> Add (-> Relu).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "dense_util.h"
#include "elementwise.h"
#include "graph.h"
#include "log.h"

enum conv_act { ACT_NONE, ACT_RELU, ACT_LEAKY, ACT_CLIP };

/* The broadcast sum of the Z-apart case. */
EW_BINARY_KERNEL(resid_add, float, float, x + y)

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
	bool use_dnnl;
	char why_im2col[160];

	/* oneDNN */
	dnnl_stream_t stream;
	mfs_dnnl_prim prim;
	dnnl_memory_t src_m, bias_m, dst_m;   /* what the primitive reads/writes */
	mfs_dnnl_weights wei;                 /* W, packed once when constant */
	/* The packing kept beside wei for another shape (conv_weights_pick) */
	mfs_dnnl_weights wei_alt;
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

static float act_apply(const conv_params *p, float v)
{
	switch (p->act) {
	case ACT_RELU: return v > 0 ? v : 0;
	case ACT_LEAKY: return v >= 0 ? v : v * p->act_a;
	case ACT_CLIP: return v < p->act_a ? p->act_a : v > p->act_b ? p->act_b : v;
	default: return v;
	}
}

/* FusedConv's extra attributes: activation ("", Relu, LeakyRelu, Clip)
 * and activation_params (LeakyRelu: alpha; Clip: min, max). */
static int fused_params(mfs_op_ctx *ctx, conv_params *p)
{
	const char *a = onnx_attr_string(ctx->node, "activation", "");
	const onnx_attr *pa = onnx_node_attr(ctx->node, "activation_params");
	size_t np = pa && pa->type == ONNX_ATTR_FLOATS ? pa->n_floats : 0;

	p->act = ACT_NONE;
	if (!*a)
		return 0;
	if (!strcmp(a, "Relu")) {
		p->act = ACT_RELU;
	} else if (!strcmp(a, "LeakyRelu")) {
		p->act = ACT_LEAKY;
		p->act_a = np >= 1 ? pa->floats[0] : 0.01f;
	} else if (!strcmp(a, "Clip")) {
		p->act = ACT_CLIP;
		p->act_a = np >= 1 ? pa->floats[0] : -INFINITY;
		p->act_b = np >= 2 ? pa->floats[1] : INFINITY;
		if (!(p->act_a <= p->act_b))
			return mfs_op_fail(ctx, EINVAL, "Clip bounds %g > %g", (double)p->act_a,
					   (double)p->act_b);
	} else {
		return mfs_op_fail(ctx, EINVAL, "activation '%s' is not one of Relu, LeakyRelu, Clip", a);
	}
	return 0;
}

/* X's or Z's storage: mfs_check_layout's, or BLOCK16 (tensor.h). */
static int conv_check_layout(mfs_op_ctx *ctx, const mfs_tensor *t, const char *what)
{
	size_t bytes;
	if (t->layout != MFS_LAYOUT_BLOCK16)
		return mfs_check_layout(ctx, t, what);
	if (t->shape.rank != 4 || t->dtype != MFS_DT_FLOAT)
		return mfs_op_fail(ctx, EINVAL, "%s in the 16-channel blocked layout must be float of rank 4", what);
	if (!mfs_tensor_storage_bytes(t, &bytes) || t->nbytes < bytes)
		return mfs_op_fail(ctx, EINVAL, "%s in the 16-channel blocked layout holds %zu bytes, its padded channels need %zu",
				   what, t->nbytes, bytes);
	return 0;
}

/* Plain copies of stored tensors and back, for the im2col path: [n, c,
 * hw] floats in layout l (NHWC or BLOCK16) to plain, or the other way,
 * through the engine's converter (graph.h). */
static void layout_copy(const float *src, float *dst, mfs_layout l, int64_t n, int64_t c,
			int64_t hw, bool to_plain)
{
	mfs_tensor st = { .dtype = MFS_DT_FLOAT, .shape = { .rank = 4, .dims = { n, c, hw, 1 } },
			  .layout = to_plain ? l : MFS_LAYOUT_PLAIN, .data = (void *)src,
			  .nbytes = (size_t)(n * c * hw) * sizeof(float) };
	mfs_tensor dt = st;
	dt.data = dst;
	mfs_layout_convert(&dt, &st, to_plain ? MFS_LAYOUT_PLAIN : l);
}

/* The convolution's own output shape [N, M, out...]. */
static void conv_out_shape(const conv_params *p, mfs_shape *s)
{
	s->rank = 2 + p->w.nsp;
	s->dims[0] = p->n;
	s->dims[1] = p->m;
	for (int i = 0; i < p->w.nsp; i++)
		s->dims[2 + i] = p->w.out[i];
}

static int conv_params_get(mfs_op_ctx *ctx, conv_params *p)
{
	const mfs_tensor *x = ctx->in[0], *wt = ctx->n_in > 1 ? ctx->in[1] : NULL;
	const mfs_tensor *b = ctx->n_in > 2 ? ctx->in[2] : NULL;
	int rc;

	if (!x || !wt)
		return mfs_op_fail(ctx, EINVAL, "needs inputs X and W");
	if (x->dtype != MFS_DT_FLOAT || wt->dtype != MFS_DT_FLOAT || (b && b->dtype != MFS_DT_FLOAT))
		return mfs_op_fail(ctx, ENOTSUP, "only float tensors are supported (X is %s, W is %s)",
				   mfs_dtype_onnx_name(x->dtype), mfs_dtype_onnx_name(wt->dtype));
	if (x->shape.rank < 3 || x->shape.rank > 5)
		return mfs_op_fail(ctx, ENOTSUP, "X of rank %d: only 1-D, 2-D, 3-D convolutions",
				   x->shape.rank);
	if (wt->shape.rank != x->shape.rank)
		return mfs_op_fail(ctx, EINVAL, "W has rank %d, X rank %d", wt->shape.rank,
				   x->shape.rank);
	if ((rc = conv_check_layout(ctx, x, "X")) < 0)
		return rc;
	if (wt->layout != MFS_LAYOUT_PLAIN || (b && b->layout != MFS_LAYOUT_PLAIN))
		return mfs_op_fail(ctx, EINVAL, "W and B must be in plain layout");
	p->n = x->shape.dims[0];
	p->c = x->shape.dims[1];
	p->m = wt->shape.dims[0];
	p->group = onnx_attr_int(ctx->node, "group", 1);
	if (p->group < 1 || p->group > (int64_t)1 << 30)
		return mfs_op_fail(ctx, EINVAL, "group %lld must be positive", (long long)p->group);
	if (p->c % p->group || p->m % p->group)
		return mfs_op_fail(ctx, EINVAL, "channels %lld and filters %lld are not divisible by group %lld",
				   (long long)p->c, (long long)p->m, (long long)p->group);
	p->cg = p->c / p->group;
	p->mg = p->m / p->group;
	if (wt->shape.dims[1] != p->cg)
		return mfs_op_fail(ctx, EINVAL, "W has %lld input channels per group, X gives %lld",
				   (long long)wt->shape.dims[1], (long long)p->cg);
	if (b && (b->shape.rank != 1 || b->shape.dims[0] != p->m))
		return mfs_op_fail(ctx, EINVAL, "B must have shape [%lld]", (long long)p->m);
	if ((rc = mfs_window_init(ctx, &x->shape, wt->shape.dims + 2, true, false, &p->w)) < 0)
		return rc;
	p->ksize = mfs_window_k_size(&p->w);
	p->osize = mfs_window_out_size(&p->w);
	p->isize = 1;
	for (int i = 0; i < p->w.nsp; i++)
		p->isize *= p->w.in[i];
	p->z = NULL;
	p->z_apart = false;
	p->act = ACT_NONE;
	if (strcmp(ctx->node->op_type, "FusedConv") == 0) {
		if ((rc = fused_params(ctx, p)) < 0)
			return rc;
		p->z = ctx->n_in > 3 ? ctx->in[3] : NULL;
		if (p->z) {
			mfs_shape cs, bs;
			conv_out_shape(p, &cs);
			if (p->z->dtype != MFS_DT_FLOAT)
				return mfs_op_fail(ctx, EINVAL, "Z must be float");
			if ((rc = conv_check_layout(ctx, p->z, "Z")) < 0)
				return rc;
			if (!mfs_shape_equal(&p->z->shape, &cs)) {
				if ((rc = mfs_broadcast_shape(&cs, &p->z->shape, &bs, ctx->err)) < 0)
					return rc;
				p->z_apart = true;
			}
		}
	}
	return 0;
}

static int conv_infer(mfs_op_ctx *ctx)
{
	conv_params p;
	int rc = conv_params_get(ctx, &p);
	if (rc < 0)
		return rc;
	mfs_tensor *y = ctx->out[0];
	y->dtype = MFS_DT_FLOAT;
	conv_out_shape(&p, &y->shape);
	if (p.z_apart) {
		mfs_shape cs = y->shape;
		return mfs_broadcast_shape(&cs, &p.z->shape, &y->shape, ctx->err);
	}
	return 0;
}

/* ---- im2col path -------------------------------------------------------- */

/* Unfold one image's group (cg channels of x, plain [cg, D, H, W]) into
 * col [cg * kd*kh*kw, od*oh*ow].  Spatial dims are taken as 3-D, with
 * missing leading dims of extent 1. */
static void im2col3(const float *x, float *col, int64_t cg, const int64_t in[3],
		    const int64_t k[3], const int64_t st[3], const int64_t dl[3],
		    const int64_t pb[3], const int64_t out[3])
{
	int64_t ksz = k[0] * k[1] * k[2], osz = out[0] * out[1] * out[2];
	int64_t isz = in[0] * in[1] * in[2];

	#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < cg * ksz; r++) {
		int64_t c = r / ksz, kr = r % ksz;
		int64_t kd = kr / (k[1] * k[2]), kh = kr / k[2] % k[1], kw = kr % k[2];
		const float *xc = x + c * isz;
		float *dst = col + r * osz;
		/* Output columns whose input column is inside the row:
		 * 0 <= ow*st - pb + kw*dl < in, i.e. [ow0, ow1). */
		int64_t base = kw * dl[2] - pb[2];
		int64_t ow0 = base >= 0 ? 0 : (-base + st[2] - 1) / st[2];
		int64_t ow1 = in[2] - base <= 0 ? 0 : (in[2] - base + st[2] - 1) / st[2];
		if (ow1 > out[2])
			ow1 = out[2];
		if (ow0 > ow1)
			ow0 = ow1;
		for (int64_t od = 0; od < out[0]; od++) {
			int64_t id = od * st[0] - pb[0] + kd * dl[0];
			for (int64_t oh = 0; oh < out[1]; oh++) {
				int64_t ih = oh * st[1] - pb[1] + kh * dl[1];
				float *d = dst + (od * out[1] + oh) * out[2];
				if (id < 0 || id >= in[0] || ih < 0 || ih >= in[1]) {
					memset(d, 0, sizeof(float) * out[2]);
					continue;
				}
				const float *xr = xc + (id * in[1] + ih) * in[2] + base;
				for (int64_t ow = 0; ow < ow0; ow++)
					d[ow] = 0.0f;
				if (st[2] == 1)
					memcpy(d + ow0, xr + ow0, sizeof(float) * (ow1 - ow0));
				else
					for (int64_t ow = ow0; ow < ow1; ow++)
						d[ow] = xr[ow * st[2]];
				for (int64_t ow = ow1; ow < out[2]; ow++)
					d[ow] = 0.0f;
			}
		}
	}
}

/* Widen the window to 3-D: leading spatial dims of extent 1. */
static void win3(const mfs_window *w, int64_t in[3], int64_t k[3], int64_t st[3],
		 int64_t dl[3], int64_t pb[3], int64_t out[3])
{
	int off = 3 - w->nsp;
	for (int i = 0; i < 3; i++) {
		int j = i - off;
		in[i] = j >= 0 ? w->in[j] : 1;
		k[i] = j >= 0 ? w->k[j] : 1;
		st[i] = j >= 0 ? w->stride[j] : 1;
		dl[i] = j >= 0 ? w->dil[j] : 1;
		pb[i] = j >= 0 ? w->pad_b[j] : 0;
		out[i] = j >= 0 ? w->out[j] : 1;
	}
}

static bool conv_is_pointwise(const conv_params *p)
{
	for (int i = 0; i < p->w.nsp; i++)
		if (p->w.k[i] != 1 || p->w.stride[i] != 1 || p->w.pad_b[i] || p->w.pad_e[i])
			return false;
	return true;
}

/* Plain-layout convolution of x into y with col as scratch (may be NULL
 * for a pointwise convolution). */
static void conv_im2col_plain(const conv_params *p, const float *x, const float *wt,
			      const float *bias, float *y, float *col)
{
	int64_t in[3], k[3], st[3], dl[3], pb[3], out[3];
	int64_t kdim = p->cg * p->ksize;
	bool pointwise = conv_is_pointwise(p);

	win3(&p->w, in, k, st, dl, pb, out);
	for (int64_t b = 0; b < p->n; b++) {
		for (int64_t g = 0; g < p->group; g++) {
			const float *xg = x + (b * p->c + g * p->cg) * p->isize;
			float *yg = y + (b * p->m + g * p->mg) * p->osize;
			const float *src = xg;
			if (!pointwise) {
				im2col3(xg, col, p->cg, in, k, st, dl, pb, out);
				src = col;
			}
			mfs_blas_sgemm(false, false, p->mg, p->osize, kdim, 1.0f,
				       wt + g * p->mg * kdim, kdim, src, p->osize, 0.0f, yg,
				       p->osize);
		}
	}
	if (bias) {
		#pragma omp parallel for collapse(2) schedule(static)
		for (int64_t b = 0; b < p->n; b++)
			for (int64_t m = 0; m < p->m; m++) {
				float *yr = y + (b * p->m + m) * p->osize;
				for (int64_t i = 0; i < p->osize; i++)
					yr[i] += bias[m];
			}
	}
}

/* ---- oneDNN path -------------------------------------------------------- */

/* Everything oneDNN but the weights, which a rebuild keeps when their
 * layout stays (mfs_dnnl_weights_init). */
static void conv_prims_free(conv_state *s)
{
	mfs_dnnl_prim_destroy(&s->prim);
	mfs_dnnl_prim_destroy(&s->zreorder);
	if (s->z_m) dnnl_memory_destroy(s->z_m);
	if (s->zplain_m) dnnl_memory_destroy(s->zplain_m);
	free(s->zcl_buf);
	s->z_m = s->zplain_m = NULL;
	s->zcl_buf = NULL;
	mfs_dnnl_prim_destroy(&s->xreorder);
	mfs_dnnl_prim_destroy(&s->yreorder);
	if (s->xplain_m) dnnl_memory_destroy(s->xplain_m);
	if (s->yplain_m) dnnl_memory_destroy(s->yplain_m);
	free(s->xcl_buf);
	free(s->ycl_buf);
	s->xplain_m = s->yplain_m = NULL;
	s->xcl_buf = s->ycl_buf = NULL;
	if (s->src_m) dnnl_memory_destroy(s->src_m);
	if (s->bias_m) dnnl_memory_destroy(s->bias_m);
	if (s->dst_m) dnnl_memory_destroy(s->dst_m);
	if (s->stream) dnnl_stream_destroy(s->stream);
	s->src_m = s->bias_m = s->dst_m = NULL;
	s->stream = NULL;
}

static void conv_dnnl_free(conv_state *s)
{
	conv_prims_free(s);
	mfs_dnnl_weights_free(&s->wei);
	mfs_dnnl_weights_free(&s->wei_alt);
}

static size_t mem_bytes(const_dnnl_memory_t m)
{
	const dnnl_memory_desc_t *md = NULL;
	return m && dnnl_memory_get_memory_desc(m, &md) == dnnl_success && md ?
	       dnnl_memory_desc_get_size(md) : 0;
}

static bool weights_winograd(const mfs_dnnl_weights *w)
{
	const dnnl_memory_desc_t *md = NULL;
	return w->mem && dnnl_memory_get_memory_desc(w->mem, &md) == dnnl_success && md &&
	       md->format_kind == dnnl_format_kind_wino;
}

/* Make s->wei the packing wanted, keeping at most one other: oneDNN's
 * Winograd weight format follows the batch size (and the thread count),
 * so a node run at several batch sizes (dynamic batching) would pack its
 * weights anew at each change: ResNet-18's throughput under 8 clients
 * halved.  A packing s holds in either slot is reused; a Winograd build
 * that wants another Winograd format than the one held is refused
 * (dnnl_unimplemented: the caller builds the direct kernel, whose packing
 * goes beside it), so a node keeps one Winograd packing and one direct. */
static dnnl_status_t conv_weights_pick(conv_state *s, const dnnl_memory_desc_t *want,
				       const dnnl_memory_desc_t *plain, bool wino,
				       dnnl_engine_t eng)
{
	mfs_dnnl_weights t;

	if (!mfs_dnnl_weights_hold(&s->wei, want, plain) &&
	    mfs_dnnl_weights_hold(&s->wei_alt, want, plain)) {
		t = s->wei; s->wei = s->wei_alt; s->wei_alt = t;
	}
	if (mfs_dnnl_weights_hold(&s->wei, want, plain))
		return dnnl_success;
	if (wino && (weights_winograd(&s->wei) || weights_winograd(&s->wei_alt)))
		return dnnl_unimplemented;
	if (s->wei.mem) {
		mfs_dnnl_weights_free(&s->wei_alt);
		s->wei_alt = s->wei;
		memset(&s->wei, 0, sizeof(s->wei));
		s->wei.is_const = s->wei_alt.is_const;
	}
	return mfs_dnnl_weights_init(&s->wei, want, plain, eng);
}

static dnnl_format_tag_t plain_tag(int ndims)
{
	return ndims == 3 ? dnnl_ncw : ndims == 4 ? dnnl_nchw : dnnl_ncdhw;
}

static dnnl_format_tag_t cl_tag(int ndims)
{
	return ndims == 3 ? dnnl_nwc : ndims == 4 ? dnnl_nhwc : dnnl_ndhwc;
}

/* oneDNN's name for a tensor stored in layout l. */
static dnnl_format_tag_t tag_of(mfs_layout l, int ndims)
{
	return l == MFS_LAYOUT_BLOCK16 ? dnnl_nChw16c :
	       l == MFS_LAYOUT_NHWC ? cl_tag(ndims) : plain_tag(ndims);
}

/* A reorder between a tensor stored as `outer` says (memory with no
 * handle yet, *plain_m) and a scratch buffer (*buf, memory *cl_m) in the
 * primitive's format cl_md.  to_cl picks the direction. */
static dnnl_status_t edge_reorder(dnnl_engine_t eng, const dnnl_memory_desc_t *cl_md,
				  int nd, const dnnl_dims_t dims, dnnl_format_tag_t outer,
				  bool to_cl, mfs_dnnl_prim *prim, dnnl_memory_t *plain_m,
				  dnnl_memory_t *cl_m, void **buf)
{
	dnnl_memory_desc_t pmd;
	dnnl_status_t st;
	size_t sz = dnnl_memory_desc_get_size(cl_md);

	if (posix_memalign(buf, 64, sz ? sz : 64)) {
		*buf = NULL;
		return dnnl_out_of_memory;
	}
	if ((st = dnnl_memory_desc_init_by_tag(&pmd, nd, dims, dnnl_f32, outer)) ||
	    (st = dnnl_memory_create(plain_m, &pmd, eng, DNNL_MEMORY_NONE)) ||
	    (st = dnnl_memory_create(cl_m, cl_md, eng, *buf)))
		return st;
	return to_cl ? mfs_dnnl_reorder_create(prim, &pmd, cl_md, eng)
		     : mfs_dnnl_reorder_create(prim, cl_md, &pmd, eng);
}

/* The primitive descriptor for cd: oneDNN's first choice, except that a
 * depthwise convolution takes oneDNN's jit_dw kernel when it has one.
 * oneDNN 2.6 lists brdgmm_dw first for channels-last depthwise
 * convolutions, and jit_dw ran every MobileNetV2 depthwise shape faster
 * on AVX-512 (0.045 against 0.074 ms for 32 channels at 112x112, batch
 * 1; docs/PERFORMANCE.md, "Depthwise kernels"). */
static dnnl_status_t conv_pick_impl(dnnl_primitive_desc_t *pd, const dnnl_convolution_desc_t *cd,
				    const_dnnl_primitive_attr_t attr, dnnl_engine_t eng,
				    const conv_params *p)
{
	dnnl_primitive_desc_iterator_t it;
	dnnl_status_t st;

	if (!(p->group > 1 && p->cg == 1 && p->mg == 1))
		return dnnl_primitive_desc_create(pd, cd, attr, eng, NULL);
	if ((st = dnnl_primitive_desc_iterator_create(&it, cd, attr, eng, NULL)) != dnnl_success)
		return st;
	*pd = NULL;
	do {
		dnnl_primitive_desc_t c = dnnl_primitive_desc_iterator_fetch(it);
		const char *impl = NULL;
		if (!c)
			break;
		dnnl_primitive_desc_query(c, dnnl_query_impl_info_str, 0, &impl);
		bool dw = impl && !strncmp(impl, "jit_dw", 6);
		if (*pd && dw)
			dnnl_primitive_desc_destroy(*pd);
		if (!*pd || dw)
			*pd = c;                 /* oneDNN's first choice, or jit_dw */
		else
			dnnl_primitive_desc_destroy(c);
		if (dw)
			break;
	} while (dnnl_primitive_desc_iterator_next(it) == dnnl_success);
	dnnl_primitive_desc_iterator_destroy(it);
	return *pd ? dnnl_success : dnnl_unimplemented;
}

/* How conv_prepare asks oneDNN, in the order it tries: Winograd (where
 * conv_winograd_how says how: for one image, run image by image, or for
 * the whole batch), then the direct algorithm reading X as it is stored,
 * then the direct algorithm with X reordered at the edge. */
enum conv_build { BUILD_WINOGRAD_IMAGE, BUILD_WINOGRAD, BUILD_DIRECT_X, BUILD_REORDER_X };

/* Build the primitive; on failure return a dnnl status and leave s
 * without primitives, its weight packings kept for the next try (the
 * caller tries the next way, and falls back to im2col). */
static dnnl_status_t conv_dnnl_build(conv_state *s, const conv_params *p,
				     mfs_layout xl, mfs_layout yl, bool has_bias,
				     enum conv_build how, mfs_error *err)
{
	dnnl_primitive_attr_t attr = NULL;
	dnnl_post_ops_t po = NULL;
	dnnl_engine_t eng = mfs_dnnl_engine(err);
	int nd = 2 + p->w.nsp;
	dnnl_dims_t sd, wd, bd, dd, strides, dil, pl, pr;
	dnnl_memory_desc_t smd, wmd_any, wmd_plain, bmd, dmd;
	dnnl_convolution_desc_t cd;
	dnnl_primitive_desc_t pd = NULL;
	dnnl_status_t st;
	int wnd;

	if (!eng)
		return dnnl_runtime_error;
	int64_t n = how == BUILD_WINOGRAD_IMAGE ? 1 : p->n;
	sd[0] = n; sd[1] = p->c;
	dd[0] = n; dd[1] = p->m;
	bd[0] = p->m;
	for (int i = 0; i < p->w.nsp; i++) {
		sd[2 + i] = p->w.in[i];
		dd[2 + i] = p->w.out[i];
		strides[i] = p->w.stride[i];
		dil[i] = p->w.dil[i] - 1;      /* oneDNN counts the gaps */
		pl[i] = p->w.pad_b[i];
		pr[i] = p->w.pad_e[i];
	}
	dnnl_format_tag_t wtag;
	if (p->group > 1) {
		wnd = nd + 1;
		wd[0] = p->group; wd[1] = p->mg; wd[2] = p->cg;
		for (int i = 0; i < p->w.nsp; i++)
			wd[3 + i] = p->w.k[i];
		wtag = nd == 3 ? dnnl_goiw : nd == 4 ? dnnl_goihw : dnnl_goidhw;
	} else {
		wnd = nd;
		wd[0] = p->m; wd[1] = p->c;
		for (int i = 0; i < p->w.nsp; i++)
			wd[2 + i] = p->w.k[i];
		wtag = nd == 3 ? dnnl_oiw : nd == 4 ? dnnl_oihw : dnnl_oidhw;
	}
	/* The format the primitive computes in: nChw16c when X, Y or Z is
	 * stored BLOCK16 (graph.c plans it between convolutions), else
	 * channels-last; a tensor stored otherwise is reordered at the edge,
	 * since oneDNN runs mixed formats on its reference kernel.  The one
	 * mix it has a fast kernel for is a plain X of few channels into a
	 * blocked Y (a network's first layer): BUILD_DIRECT_X lets X in as
	 * it is, and the caller tries again without when oneDNN answers with
	 * a reference kernel.  Winograd computes in nChw16c, the one format
	 * oneDNN 2.6 has it for. */
	bool wino = how == BUILD_WINOGRAD || how == BUILD_WINOGRAD_IMAGE;
	bool blocked = nd == 4 && (wino || xl == MFS_LAYOUT_BLOCK16 || yl == MFS_LAYOUT_BLOCK16 ||
				   (p->z && p->z->layout == MFS_LAYOUT_BLOCK16));
	dnnl_format_tag_t ftag = blocked ? dnnl_nChw16c : cl_tag(nd);
	bool x_direct = tag_of(xl, nd) == ftag ||
			(how == BUILD_DIRECT_X && blocked && xl == MFS_LAYOUT_PLAIN && p->c < 16);
#define CK(call) do { if ((st = (call)) != dnnl_success) goto fail; } while (0)
	CK(dnnl_memory_desc_init_by_tag(&smd, nd, sd, dnnl_f32, x_direct ? tag_of(xl, nd) : ftag));
	CK(dnnl_memory_desc_init_by_tag(&dmd, nd, dd, dnnl_f32, ftag));
	CK(dnnl_memory_desc_init_by_tag(&wmd_any, wnd, wd, dnnl_f32, dnnl_format_tag_any));
	CK(dnnl_memory_desc_init_by_tag(&wmd_plain, wnd, wd, dnnl_f32, wtag));
	CK(dnnl_memory_desc_init_by_tag(&bmd, 1, bd, dnnl_f32, dnnl_x));
	CK(dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference,
			wino ? dnnl_convolution_winograd : dnnl_convolution_direct, &smd, &wmd_any, has_bias ? &bmd : NULL,
			&dmd, strides, dil, pl, pr));
	CK(mfs_dnnl_attr_create(&attr));
	if (p->z || p->act != ACT_NONE) {
		/* FusedConv: Y = act(conv + Z) inside the primitive. */
		CK(dnnl_post_ops_create(&po));
		/* Z already in the destination (Y over Z, written without an
		 * edge reorder): add it as the sum post-op, which reads and
		 * writes the destination once, instead of reading Z apart
		 * (40% of a residual 1x1 layer at batch 32 on 16 cores). */
		s->z_sum = p->z && s->z_in_y && tag_of(yl, nd) == ftag &&
			   tag_of(p->z->layout, nd) == ftag;
		if (s->z_sum)
			CK(dnnl_post_ops_append_sum(po, 1.0f));
		else if (p->z)
			CK(dnnl_post_ops_append_binary(po, dnnl_binary_add, &dmd));
		if (p->act == ACT_RELU)
			CK(dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f));
		else if (p->act == ACT_LEAKY)
			CK(dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, p->act_a, 0.0f));
		else if (p->act == ACT_CLIP)
			CK(dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip, p->act_a, p->act_b));
		CK(dnnl_primitive_attr_set_post_ops(attr, po));
	}
	CK(conv_pick_impl(&pd, &cd, attr, eng, p));
	if (x_direct && tag_of(xl, nd) != ftag) {
		const char *impl = NULL;
		dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
		if (!impl || !strncmp(impl, "ref", 3)) {
			st = dnnl_unimplemented;   /* the caller tries without */
			goto fail;
		}
	}
	const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
	CK(mfs_dnnl_prim_create(&s->prim, pd, eng));
	CK(dnnl_stream_create(&s->stream, eng, dnnl_stream_default_flags));
	if (x_direct)
		CK(dnnl_memory_create(&s->src_m, &smd, eng, DNNL_MEMORY_NONE));
	else
		CK(edge_reorder(eng, &smd, nd, sd, tag_of(xl, nd), true, &s->xreorder,
				&s->xplain_m, &s->src_m, &s->xcl_buf));
	if (tag_of(yl, nd) == ftag)
		CK(dnnl_memory_create(&s->dst_m, &dmd, eng, DNNL_MEMORY_NONE));
	else
		CK(edge_reorder(eng, &dmd, nd, dd, tag_of(yl, nd), false, &s->yreorder,
				&s->yplain_m, &s->dst_m, &s->ycl_buf));
	if (s->z_sum)
		;   /* Z is the destination */
	else if (p->z && tag_of(p->z->layout, nd) == ftag)
		CK(dnnl_memory_create(&s->z_m, &dmd, eng, DNNL_MEMORY_NONE));
	else if (p->z)
		CK(edge_reorder(eng, &dmd, nd, dd, tag_of(p->z->layout, nd), true, &s->zreorder,
				&s->zplain_m, &s->z_m, &s->zcl_buf));
	if (has_bias)
		CK(dnnl_memory_create(&s->bias_m, &bmd, eng, DNNL_MEMORY_NONE));
	CK(conv_weights_pick(s, wmd, &wmd_plain, wino, eng));
	s->images = how == BUILD_WINOGRAD_IMAGE ? p->n : 1;
	s->x_img = mem_bytes(s->xreorder.prim ? s->xplain_m : s->src_m);
	s->y_img = mem_bytes(s->yreorder.prim ? s->yplain_m : s->dst_m);
	s->z_img = p->z && !s->z_sum ? mem_bytes(s->zreorder.prim ? s->zplain_m : s->z_m) : 0;
	{
		const char *impl = NULL;
		dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
		mfs_log_debug("Conv: oneDNN implementation %s", impl ? impl : "?");
	}
	dnnl_primitive_desc_destroy(pd);
	if (po)
		dnnl_post_ops_destroy(po);
	if (attr)
		dnnl_primitive_attr_destroy(attr);
	return dnnl_success;
#undef CK
fail:
	if (po)
		dnnl_post_ops_destroy(po);
	if (attr)
		dnnl_primitive_attr_destroy(attr);
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	conv_prims_free(s);   /* the packings stay for the next try */
	return st;
}

/* ---- prepare / run / release ------------------------------------------ */

static void conv_release(void *state)
{
	conv_state *s = state;
	if (!s)
		return;
	conv_dnnl_free(s);
	free(s->col);
	free(s->xtmp);
	free(s->ytmp);
	free(s->ztmp);
	free(s->cbuf);
	free(s->zatmp);
	free(s->yatmp);
	free(s);
}

/* The buffers of the Z-apart pass (conv_state). */
static int apart_alloc(mfs_op_ctx *ctx, conv_state *s, const conv_params *p)
{
	const mfs_tensor *z = ctx->in[3], *y = ctx->out[0];
	size_t cn = (size_t)(p->n * p->m * p->osize);

	s->zs = z->shape;
	s->ys = y->shape;
	if (!(s->cbuf = malloc(cn * sizeof(float) + 1)) ||
	    (z->layout != MFS_LAYOUT_PLAIN &&
	     !(s->zatmp = malloc((size_t)mfs_shape_numel(&z->shape) * sizeof(float) + 1))) ||
	    (y->layout != MFS_LAYOUT_PLAIN &&
	     !(s->yatmp = malloc((size_t)mfs_shape_numel(&y->shape) * sizeof(float) + 1))))
		return mfs_op_fail(ctx, ENOMEM, "out of memory for the residual's buffers");
	return 0;
}

/* Whether and how oneDNN's Winograd F(4x4, 3x3) is tried first, for a
 * 2-D 3x3 convolution of stride 1, no dilation, one group: built for one
 * image and run image by image (BUILD_WINOGRAD_IMAGE) where one image has
 * at least CONV_WINOGRAD_MIN_WORK multiply-adds per thread, else for the
 * whole batch (BUILD_WINOGRAD) where the batch has CONV_WINOGRAD_BATCH_WORK;
 * -1: direct.
 * MFS_WINOGRAD=0 never, =1 image by image and =batch the whole batch
 * whatever the work (A/B runs, tests).
 * Why: it needs 4x fewer multiplications and computes in nChw16c (with
 * reorders at the edges where X, Y or Z is stored otherwise; the layout
 * plan stores its neighbours so, conv_computes_blocked); results stay
 * within 3e-6 of PyTorch's on ResNet-18.  On the 2-core VM (58M per
 * thread for each of ResNet's 3x3 layers at batch 1) ResNet-18 ran 7-9%
 * faster at batch 1, 14-19% at batch 8, ResNet-50 11% at batch 1; on the
 * 16-core host ResNet-50 at batch 32 (231M per thread) 13-20% faster,
 * but at batch 1 (7M per thread) 5-20% slower (docs/PERFORMANCE.md,
 * "Winograd for the 3x3 layers").  Image by image because oneDNN's
 * Winograd weight format follows the batch size: one built per batch
 * size packed the weights anew at every change of batch (dynamic
 * batching halved ResNet-18's throughput), while one image's format
 * serves every batch.  The whole batch only from 4x that work: on the
 * 16-core host, where ResNet-18's batches of up to 8 have 58M per thread,
 * dynamic batching with 8 clients got 175-184 req/s with the batch at
 * 2^24, 196-199 direct.  Its weights take 4x the memory of the 3x3 ones. */
#define CONV_WINOGRAD_MIN_WORK ((int64_t)1 << 24)
#define CONV_WINOGRAD_BATCH_WORK ((int64_t)1 << 26)
static int conv_winograd_how(const conv_params *p)
{
	const char *e = getenv("MFS_WINOGRAD");
	if ((e && strcmp(e, "0") == 0) ||
	    !(p->w.nsp == 2 && p->group == 1 && p->w.k[0] == 3 && p->w.k[1] == 3 &&
	      p->w.stride[0] == 1 && p->w.stride[1] == 1 && p->w.dil[0] == 1 && p->w.dil[1] == 1))
		return -1;
	if (e && strcmp(e, "1") == 0)
		return BUILD_WINOGRAD_IMAGE;
	if (e && strcmp(e, "batch") == 0)
		return BUILD_WINOGRAD;
	int64_t image = p->osize * p->c * p->m * 9 / mfs_dnnl_threads();
	return image >= CONV_WINOGRAD_MIN_WORK ? BUILD_WINOGRAD_IMAGE :
	       image * p->n >= CONV_WINOGRAD_BATCH_WORK ? BUILD_WINOGRAD : -1;
}

static bool conv_force_im2col(void)
{
	const char *e = getenv("MFS_CONV");
	return e && strcmp(e, "im2col") == 0;
}

/* op.h: Winograd computes in nChw16c (conv_dnnl_build). */
static bool conv_computes_blocked(const mfs_op_ctx *ctx)
{
	conv_params p;
	return !conv_force_im2col() && conv_params_get((mfs_op_ctx *)ctx, &p) == 0 &&
	       !p.z_apart && conv_winograd_how(&p) >= 0;
}

static int conv_prepare(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0], *wt = ctx->in[1];
	bool has_bias = ctx->n_in > 2 && ctx->in[2];
	mfs_layout yl = ctx->out[0]->layout;
	conv_state *s = *ctx->state;
	conv_params p;
	int rc = conv_params_get(ctx, &p);

	if (rc < 0)
		return rc;
	if (yl != MFS_LAYOUT_PLAIN && ctx->out[0]->shape.rank != 4)
		return mfs_op_fail(ctx, EINVAL, "output layout %d is not supported for shape rank %d",
				   (int)yl, ctx->out[0]->shape.rank);
	bool z_apart = p.z_apart;
	if (z_apart) {
		/* The state is the plain convolution alone; the sum and the
		 * activation are conv_run's second pass. */
		p.z = NULL;
		p.act = ACT_NONE;
		yl = MFS_LAYOUT_PLAIN;
	}
	bool has_z = p.z != NULL;
	mfs_layout zl = has_z ? p.z->layout : MFS_LAYOUT_PLAIN;
	bool z_in_y = has_z && p.z->data && p.z->data == ctx->out[0]->data;
	bool wconst = (ctx->const_in >> 1) & 1;
	if (s && s->wei.is_const != wconst) {
		s->wei.is_const = s->wei_alt.is_const = wconst;
		s->wei.src = s->wei_alt.src = NULL;
	}
	if (s && mfs_shape_equal(&s->xs, &x->shape) && mfs_shape_equal(&s->ws, &wt->shape) &&
	    s->xl == x->layout && s->yl == yl && s->has_bias == has_bias &&
	    s->has_z == has_z && s->zl == zl && s->z_apart == z_apart && s->z_in_y == z_in_y &&
	    (!z_apart || (mfs_shape_equal(&s->zs, &ctx->in[3]->shape) &&
			  mfs_shape_equal(&s->ys, &ctx->out[0]->shape))) &&
	    s->forced_im2col == conv_force_im2col() &&
	    (!s->use_dnnl || s->threads == mfs_dnnl_threads()))
		return 0;

	if (s) {
		conv_prims_free(s);
		free(s->col);
		free(s->xtmp);
		free(s->ytmp);
		free(s->ztmp);
		free(s->cbuf);
		free(s->zatmp);
		free(s->yatmp);
		s->col = s->xtmp = s->ytmp = s->ztmp = NULL;
		s->cbuf = s->zatmp = s->yatmp = NULL;
	} else {
		s = calloc(1, sizeof(*s));
		if (!s)
			return mfs_op_fail(ctx, ENOMEM, "out of memory");
		*ctx->state = s;
	}
	s->wei.is_const = s->wei_alt.is_const = wconst;
	s->xs = x->shape;
	s->ws = wt->shape;
	s->xl = x->layout;
	s->yl = yl;
	s->has_bias = has_bias;
	s->has_z = has_z;
	s->zl = zl;
	s->z_apart = z_apart;
	s->z_in_y = z_in_y;
	s->z_sum = false;
	if (z_apart && (rc = apart_alloc(ctx, s, &p)) < 0)
		return rc;
	s->use_dnnl = false;
	s->forced_im2col = conv_force_im2col();
	s->threads = mfs_dnnl_threads();
	s->why_im2col[0] = 0;

	if (s->forced_im2col) {
		mfs_dnnl_weights_free(&s->wei);
		mfs_dnnl_weights_free(&s->wei_alt);
		snprintf(s->why_im2col, sizeof(s->why_im2col), "MFS_CONV=im2col");
	} else {
		mfs_error derr = { 0 };
		dnnl_status_t st = dnnl_unimplemented;
		int wino = conv_winograd_how(&p);
		if (wino >= 0)
			st = conv_dnnl_build(s, &p, x->layout, yl, has_bias, (enum conv_build)wino, &derr);
		if (st != dnnl_success)
			st = conv_dnnl_build(s, &p, x->layout, yl, has_bias, BUILD_DIRECT_X, &derr);
		if (st != dnnl_success)
			st = conv_dnnl_build(s, &p, x->layout, yl, has_bias, BUILD_REORDER_X, &derr);
		if (st == dnnl_success) {
			s->use_dnnl = true;
			/* Constant weights: reorder them now, once. */
			if (wt->data && s->wei.is_const &&
			    (rc = mfs_dnnl_weights_set(ctx, &s->wei, wt->data, s->stream)) < 0)
				return rc;
			return 0;
		}
		mfs_dnnl_weights_free(&s->wei);
		mfs_dnnl_weights_free(&s->wei_alt);
		snprintf(s->why_im2col, sizeof(s->why_im2col), "oneDNN: %.120s",
			 derr.code ? derr.msg : mfs_dnnl_status_str(st));
		mfs_log_info("%s '%s': using im2col + sgemm (%s)", ctx->node->op_type,
			     ctx->node->name ? ctx->node->name : "", s->why_im2col);
	}

	/* im2col scratch */
	size_t coln = conv_is_pointwise(&p) ? 0 : (size_t)(p.cg * p.ksize * p.osize);
	if (coln && !(s->col = malloc(coln * sizeof(float))))
		return mfs_op_fail(ctx, ENOMEM, "out of memory for the im2col buffer (%zu floats)", coln);
	if (x->layout != MFS_LAYOUT_PLAIN &&
	    !(s->xtmp = malloc((size_t)(p.n * p.c * p.isize) * sizeof(float) + 1)))
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	if (yl != MFS_LAYOUT_PLAIN &&
	    !(s->ytmp = malloc((size_t)(p.n * p.m * p.osize) * sizeof(float) + 1)))
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	if (has_z && (zl != MFS_LAYOUT_PLAIN || z_in_y) &&
	    !(s->ztmp = malloc((size_t)(p.n * p.m * p.osize) * sizeof(float) + 1)))
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	return 0;
}

/* The convolution (with p's Z and activation) of x into ydata, stored
 * in layout ylay, on the path s was built for. */
static int conv_compute(mfs_op_ctx *ctx, conv_state *s, const conv_params *pp,
			const mfs_tensor *x, const mfs_tensor *wt, const mfs_tensor *b,
			float *ydata, mfs_layout ylay)
{
	const conv_params p = *pp;
	int rc;

	if (s->use_dnnl) {
		dnnl_status_t st;
		if ((rc = mfs_dnnl_weights_set(ctx, &s->wei, wt->data, s->stream)) < 0)
			return rc;
		dnnl_exec_arg_t args[5] = {
			{ DNNL_ARG_SRC, s->src_m }, { DNNL_ARG_WEIGHTS, s->wei.mem },
			{ DNNL_ARG_DST, s->dst_m },
		};
		int nargs = 3;
		if (b)
			args[nargs++] = (dnnl_exec_arg_t){ DNNL_ARG_BIAS, s->bias_m };
		if (p.z && !s->z_sum)
			args[nargs++] = (dnnl_exec_arg_t){
				DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, s->z_m };
		dnnl_exec_arg_t zargs[2] = { { DNNL_ARG_FROM, s->zplain_m }, { DNNL_ARG_TO, s->z_m } };
		dnnl_exec_arg_t xargs[2] = { { DNNL_ARG_FROM, s->xplain_m }, { DNNL_ARG_TO, s->src_m } };
		dnnl_exec_arg_t yargs[2] = { { DNNL_ARG_FROM, s->dst_m }, { DNNL_ARG_TO, s->yplain_m } };
		if (b && (st = dnnl_memory_set_data_handle(s->bias_m, b->data)) != dnnl_success)
			return mfs_op_fail(ctx, EIO, "oneDNN convolution failed: %s",
					   mfs_dnnl_status_str(st));
		/* one pass, or one per image (s->images: Winograd built for
		 * one image) */
		for (int64_t i = 0; i < s->images; i++) {
			char *xi = (char *)x->data + (size_t)i * s->x_img;
			char *yi = (char *)ydata + (size_t)i * s->y_img;
			char *zi = p.z && !s->z_sum ? (char *)p.z->data + (size_t)i * s->z_img : NULL;
			if ((st = dnnl_memory_set_data_handle(s->xreorder.prim ? s->xplain_m : s->src_m,
							      xi)) != dnnl_success ||
			    (st = dnnl_memory_set_data_handle(s->yreorder.prim ? s->yplain_m : s->dst_m,
							      yi)) != dnnl_success ||
			    (zi && (st = dnnl_memory_set_data_handle(s->zreorder.prim ? s->zplain_m : s->z_m,
								     zi)) != dnnl_success) ||
			    (s->xreorder.prim && (st = mfs_dnnl_prim_exec(&s->xreorder, s->stream, 2, xargs)) != dnnl_success) ||
			    (s->zreorder.prim && (st = mfs_dnnl_prim_exec(&s->zreorder, s->stream, 2, zargs)) != dnnl_success) ||
			    (st = mfs_dnnl_prim_exec(&s->prim, s->stream, nargs, args)) != dnnl_success ||
			    (s->yreorder.prim && (st = mfs_dnnl_prim_exec(&s->yreorder, s->stream, 2, yargs)) != dnnl_success))
				return mfs_op_fail(ctx, EIO, "oneDNN convolution failed: %s",
						   mfs_dnnl_status_str(st));
		}
		return 0;
	}

	const float *xp = x->data, *zin = p.z ? p.z->data : NULL;
	float *yp = ydata;
	if (p.z && p.z->layout == MFS_LAYOUT_PLAIN && zin == ydata) {
		/* Y's memory is Z's and the product below writes it first */
		memcpy(s->ztmp, zin, (size_t)(p.n * p.m * p.osize) * sizeof(float));
		zin = s->ztmp;
	}
	if (x->layout != MFS_LAYOUT_PLAIN) {
		layout_copy(xp, s->xtmp, x->layout, p.n, p.c, p.isize, true);
		xp = s->xtmp;
	}
	if (ylay != MFS_LAYOUT_PLAIN)
		yp = s->ytmp;
	conv_im2col_plain(&p, xp, wt->data, b ? b->data : NULL, yp, s->col);
	if (p.z || p.act != ACT_NONE) {
		const float *zp = zin;
		int64_t total = p.n * p.m * p.osize;
		if (p.z && p.z->layout != MFS_LAYOUT_PLAIN) {
			layout_copy(zp, s->ztmp, p.z->layout, p.n, p.m, p.osize, true);
			zp = s->ztmp;
		}
		#pragma omp parallel for schedule(static)
		for (int64_t i = 0; i < total; i++)
			yp[i] = act_apply(&p, zp ? yp[i] + zp[i] : yp[i]);
	}
	if (ylay != MFS_LAYOUT_PLAIN)
		layout_copy(yp, ydata, ylay, p.n, p.m, p.osize, false);
	return 0;
}


/* Y = act(C + Z) broadcast, C the convolution's plain output in s->cbuf:
 * the Z-apart case (header comment). */
static void conv_add_apart(conv_state *s, const conv_params *p, mfs_tensor *y)
{
	mfs_tensor c = { .dtype = MFS_DT_FLOAT, .layout = MFS_LAYOUT_PLAIN, .data = s->cbuf };
	mfs_tensor z = *p->z, yp = *y;

	conv_out_shape(p, &c.shape);
	c.nbytes = (size_t)mfs_shape_numel(&c.shape) * sizeof(float);
	if (z.layout != MFS_LAYOUT_PLAIN) {
		layout_copy(p->z->data, s->zatmp, z.layout, z.shape.dims[0], z.shape.dims[1],
			    z.shape.dims[2] * z.shape.dims[3], true);
		z.data = s->zatmp;
		z.layout = MFS_LAYOUT_PLAIN;
	}
	if (y->layout != MFS_LAYOUT_PLAIN) {
		yp.data = s->yatmp;
		yp.layout = MFS_LAYOUT_PLAIN;
	}
	const mfs_tensor *in[2] = { &c, &z };
	ew_params ep = { 0 };
	ew_apply(resid_add, in, 2, &yp, &ep);
	int64_t total = mfs_shape_numel(&yp.shape);
	float *yd = yp.data;
	if (p->act != ACT_NONE) {
		#pragma omp parallel for schedule(static) if (total >= EW_PAR_MIN)
		for (int64_t i = 0; i < total; i++)
			yd[i] = act_apply(p, yd[i]);
	}
	if (y->layout != MFS_LAYOUT_PLAIN)
		layout_copy(yd, y->data, y->layout, y->shape.dims[0], y->shape.dims[1],
			    y->shape.dims[2] * y->shape.dims[3], false);
}

static int conv_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0], *wt = ctx->in[1];
	const mfs_tensor *b = ctx->n_in > 2 ? ctx->in[2] : NULL;
	mfs_tensor *y = ctx->out[0];
	conv_params p;
	int rc;

	/* The engine calls prepare; run also works without it (tests, and a
	 * shape change the engine did not announce). */
	if ((rc = conv_prepare(ctx)) < 0)
		return rc;
	if ((rc = conv_params_get(ctx, &p)) < 0)
		return rc;
	if (p.n * p.m * p.osize == 0)
		return 0;
	if (y->layout == MFS_LAYOUT_BLOCK16 && (rc = conv_check_layout(ctx, y, "Y")) < 0)
		return rc;
	if (!p.z_apart)
		return conv_compute(ctx, *ctx->state, &p, x, wt, b, y->data, y->layout);
	conv_params q = p;
	q.z = NULL;
	q.act = ACT_NONE;
	conv_state *s = *ctx->state;
	if ((rc = conv_compute(ctx, s, &q, x, wt, b, s->cbuf, MFS_LAYOUT_PLAIN)) < 0)
		return rc;
	conv_add_apart(s, &p, y);
	return 0;
}

MFS_OP(Conv, 1, .flags = MFS_OP_NHWC_OK | MFS_OP_HALF_VIA_FLOAT, .infer = conv_infer, .prepare = conv_prepare,
       .run = conv_run, .release = conv_release, .computes_blocked = conv_computes_blocked);
MFS_OP(Conv, 11, .flags = MFS_OP_NHWC_OK | MFS_OP_HALF_VIA_FLOAT, .infer = conv_infer, .prepare = conv_prepare,
       .run = conv_run, .release = conv_release, .computes_blocked = conv_computes_blocked);
MFS_OP_DOMAIN("com.modelfs", FusedConv, 1,
	      .flags = MFS_OP_NHWC_OK | MFS_OP_NHWC_ANY_INPUT | MFS_OP_HALF_VIA_FLOAT |
		      MFS_OP_OUT0_OVER_IN3, .infer = conv_infer,
	      .prepare = conv_prepare, .run = conv_run, .release = conv_release,
	      .computes_blocked = conv_computes_blocked);

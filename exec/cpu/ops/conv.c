/* Conv (1, 11): N-D convolution, FP32, through oneDNN's convolution
 * primitive, with a plain im2col + cblas_sgemm path beside it.
 *
 * X [N, C, spatial...] (1-D, 2-D, 3-D), W [M, C/group, kernel...], optional
 * B [M] -> Y [N, M, out...].  Attributes: auto_pad, dilations, group,
 * kernel_shape, pads (asymmetric), strides.  Rank-4 X and Y may be stored
 * NHWC (MFS_OP_NHWC_OK): X as ctx->in[0]->layout says, Y as the engine set
 * ctx->out[0]->layout.
 *
 * oneDNN path (the default): prepare() builds the primitive once per node,
 * execution context and set of shapes (a node keeps a variant per batch
 * size lately run, conv_node in conv_internal.h: dynamic batching's mixed
 * sizes rebuild nothing), with the weights' format left to oneDNN
 * (format_tag any; brgconv picks blocked weights such as Acdb64a) and the
 * weights reordered into it once, kept in the state.  The primitive
 * computes channels-last (nwc/nhwc/ndhwc): oneDNN's fastest kernels
 * (brgconv) want it; or nChw16c when X, Y or Z is stored BLOCK16 (the
 * engine plans that between convolutions where it pays:
 * exec/graph/graph_plan.c, plan_block16; oneDNN's depthwise kernel runs
 * 1.7x faster on it).
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
 * "Clip", "Swish" = x * sigmoid(x), "HardSwish" = x * min(max(x + 3, 0),
 * 6) / 6) and activation_params (floats: LeakyRelu alpha (0.01); Clip
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
 *
 * The operators are here (parameters, infer, which path prepare builds,
 * run); the oneDNN path is conv_dnnl.c, the im2col path conv_im2col.c,
 * what they share conv_internal.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv_internal.h"
#include "elementwise.h"
#include "log.h"

/* The broadcast sum of the Z-apart case. */
EW_BINARY_KERNEL(resid_add, float, float, x + y)

/* FusedConv's extra attributes: activation ("", Relu, LeakyRelu, Clip,
 * Swish, HardSwish) and activation_params (LeakyRelu: alpha; Clip: min,
 * max). */
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
	} else if (!strcmp(a, "Swish")) {
		p->act = ACT_SWISH;
	} else if (!strcmp(a, "HardSwish")) {
		p->act = ACT_HARDSWISH;
	} else {
		return mfs_op_fail(ctx, EINVAL, "activation '%s' is not one of Relu, LeakyRelu, Clip, Swish, HardSwish", a);
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

/* ---- prepare / run / release ------------------------------------------ */

/* A variant's own buffers and primitives (not the node's packings). */
static void conv_bufs_free(conv_state *s)
{
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
}

static void conv_release(void *state)
{
	conv_node *node = state;
	if (!node)
		return;
	for (int i = 0; i < CONV_VARIANTS; i++) {
		if (!node->var[i])
			continue;
		conv_bufs_free(node->var[i]);
		conv_dnnl_free(node->var[i]);
		free(node->var[i]);
	}
	free(node);
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

/* What a variant is built for (conv_state's first fields), from ctx. */
static void conv_key(const mfs_op_ctx *ctx, const conv_params *p, mfs_layout yl, bool z_apart,
		     conv_state *k)
{
	memset(k, 0, sizeof(*k));
	k->xs = ctx->in[0]->shape;
	k->ws = ctx->in[1]->shape;
	k->xl = ctx->in[0]->layout;
	k->yl = yl;
	k->has_bias = ctx->n_in > 2 && ctx->in[2];
	k->has_z = p->z != NULL;
	k->zl = k->has_z ? p->z->layout : MFS_LAYOUT_PLAIN;
	k->z_apart = z_apart;
	k->z_in_y = k->has_z && p->z->data && p->z->data == ctx->out[0]->data;
	if (z_apart) {
		k->zs = ctx->in[3]->shape;
		k->ys = ctx->out[0]->shape;
	}
	k->forced_im2col = conv_force_im2col();
}

static bool conv_key_equal(const conv_state *s, const conv_state *k)
{
	return mfs_shape_equal(&s->xs, &k->xs) && mfs_shape_equal(&s->ws, &k->ws) &&
	       s->xl == k->xl && s->yl == k->yl && s->has_bias == k->has_bias &&
	       s->has_z == k->has_z && s->zl == k->zl && s->z_apart == k->z_apart &&
	       s->z_in_y == k->z_in_y &&
	       (!k->z_apart || (mfs_shape_equal(&s->zs, &k->zs) && mfs_shape_equal(&s->ys, &k->ys))) &&
	       s->forced_im2col == k->forced_im2col;
}

/* The node's variant for key k and the thread count a build now is for
 * (an im2col one for any), made current with the node's packings; or a
 * free or the least lately used slot's, emptied and not built.  NULL
 * without memory. */
static conv_state *conv_variant(conv_node *node, const conv_state *k)
{
	int slot = 0, threads = mfs_dnnl_threads();
	for (int i = 0; i < CONV_VARIANTS; i++) {
		conv_state *v = node->var[i];
		if (v && v->built && conv_key_equal(v, k) && (!v->use_dnnl || v->threads == threads)) {
			slot = i;
			goto found;
		}
		if (!v || (node->var[slot] && node->used[i] < node->used[slot]))
			slot = i;
	}
	if (!node->var[slot] && !(node->var[slot] = calloc(1, sizeof(conv_state))))
		return NULL;
	conv_bufs_free(node->var[slot]);
	node->var[slot]->built = false;
found:
	node->used[slot] = ++node->clock;
	conv_state *s = node->var[slot];
	if (conv_weights_move(s, node->cur) != dnnl_success)
		s->built = false;   /* rebuilt, packing anew */
	node->cur = s;
	return s;
}

static int conv_prepare(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0], *wt = ctx->in[1];
	bool has_bias = ctx->n_in > 2 && ctx->in[2];
	mfs_layout yl = ctx->out[0]->layout;
	conv_node *node = *ctx->state;
	conv_params p;
	conv_state key;
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
	bool wconst = (ctx->const_in >> 1) & 1;
	if (!node && !(node = *ctx->state = calloc(1, sizeof(*node))))
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	conv_key(ctx, &p, yl, z_apart, &key);
	conv_state *s = conv_variant(node, &key);
	if (!s)
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	if (s->wei.is_const != wconst) {
		s->wei.is_const = s->wei_alt.is_const = wconst;
		s->wei.src = s->wei_alt.src = NULL;
	}
	if (s->built)
		return 0;

	conv_bufs_free(s);
	s->built = false;   /* until built below */
	s->wei.is_const = s->wei_alt.is_const = wconst;
	s->xs = x->shape;
	s->ws = wt->shape;
	s->xl = x->layout;
	s->yl = yl;
	s->has_bias = has_bias;
	s->has_z = has_z;
	s->zl = zl;
	s->z_apart = z_apart;
	s->z_in_y = key.z_in_y;
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
		if (st != dnnl_success)
			st = conv_dnnl_build(s, &p, x->layout, yl, has_bias, BUILD_CL, &derr);
		if (st == dnnl_success) {
			s->use_dnnl = true;
			/* Constant weights: reorder them now, once. */
			if (wt->data && s->wei.is_const &&
			    (rc = mfs_dnnl_weights_set(ctx, &s->wei, wt->data, s->stream)) < 0)
				return rc;
			s->built = true;
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
	if (has_z && (zl != MFS_LAYOUT_PLAIN || key.z_in_y) &&
	    !(s->ztmp = malloc((size_t)(p.n * p.m * p.osize) * sizeof(float) + 1)))
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	s->built = true;
	return 0;
}

/* The convolution (with p's Z and activation) of x into ydata, stored
 * in layout ylay, on the path s was built for. */
static int conv_compute(mfs_op_ctx *ctx, conv_state *s, const conv_params *p,
			const mfs_tensor *x, const mfs_tensor *wt, const mfs_tensor *b,
			float *ydata, mfs_layout ylay)
{
	if (s->use_dnnl)
		return conv_dnnl_compute(ctx, s, p, x, wt, b, ydata);
	conv_im2col_compute(s, p, x, wt, b, ydata, ylay);
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
		return conv_compute(ctx, ((conv_node *)*ctx->state)->cur, &p, x, wt, b, y->data,
				    y->layout);
	conv_params q = p;
	q.z = NULL;
	q.act = ACT_NONE;
	conv_state *s = ((conv_node *)*ctx->state)->cur;
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

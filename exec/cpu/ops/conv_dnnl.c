/* conv_dnnl.c - Conv's oneDNN path (conv_internal.h): the convolution
 * primitive for a node's shapes and layouts, built once per prepare, with
 * FusedConv's Z and activation as post-ops, reorders at the edges where a
 * tensor is stored in another format than the primitive computes in, and
 * the weights packed once into oneDNN's format (two packings kept: the
 * Winograd one and the direct one); and running it, in one pass or image
 * by image.  conv.c decides which build to try; its header comment says
 * why the formats are what they are.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv_internal.h"
#include "log.h"

/* Everything oneDNN but the weights, which a rebuild keeps when their
 * layout stays (mfs_dnnl_weights_init). */
void conv_prims_free(conv_state *s)
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

void conv_dnnl_free(conv_state *s)
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

/* conv_internal.h */
dnnl_status_t conv_weights_move(conv_state *to, conv_state *from)
{
	mfs_error err = { 0 };
	dnnl_engine_t eng;

	if (from && from != to) {
		mfs_dnnl_weights_free(&to->wei);
		mfs_dnnl_weights_free(&to->wei_alt);
		to->wei = from->wei;
		to->wei_alt = from->wei_alt;
		memset(&from->wei, 0, sizeof(from->wei));
		memset(&from->wei_alt, 0, sizeof(from->wei_alt));
		from->wei.is_const = from->wei_alt.is_const = to->wei.is_const;
	}
	if (!to->use_dnnl)
		return dnnl_success;
	if (!(eng = mfs_dnnl_engine(&err)))
		return dnnl_runtime_error;
	/* Not as a Winograd build: the primitive exists, it gets its
	 * packing whatever the other slot holds. */
	return conv_weights_pick(to, &to->wei_want, &to->wei_plain, false, eng);
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

/* What oneDNN is told of the shapes: X's dims (sd), Y's (dd), B's (bd),
 * W's (wd; with groups, the group split out as oneDNN wants it) and the
 * window's. */
typedef struct conv_dims {
	int nd, wnd;                /* X's rank, W's rank for oneDNN */
	dnnl_dims_t sd, wd, bd, dd, strides, dil, pl, pr;
	dnnl_format_tag_t wtag;     /* W as ONNX stores it */
} conv_dims;

static void conv_dims_get(const conv_params *p, enum conv_build how, conv_dims *d)
{
	int64_t n = how == BUILD_WINOGRAD_IMAGE ? 1 : p->n;
	int nd = 2 + p->w.nsp;

	d->nd = nd;
	d->sd[0] = n; d->sd[1] = p->c;
	d->dd[0] = n; d->dd[1] = p->m;
	d->bd[0] = p->m;
	for (int i = 0; i < p->w.nsp; i++) {
		d->sd[2 + i] = p->w.in[i];
		d->dd[2 + i] = p->w.out[i];
		d->strides[i] = p->w.stride[i];
		d->dil[i] = p->w.dil[i] - 1;      /* oneDNN counts the gaps */
		d->pl[i] = p->w.pad_b[i];
		d->pr[i] = p->w.pad_e[i];
	}
	if (p->group > 1) {
		d->wnd = nd + 1;
		d->wd[0] = p->group; d->wd[1] = p->mg; d->wd[2] = p->cg;
		for (int i = 0; i < p->w.nsp; i++)
			d->wd[3 + i] = p->w.k[i];
		d->wtag = nd == 3 ? dnnl_goiw : nd == 4 ? dnnl_goihw : dnnl_goidhw;
	} else {
		d->wnd = nd;
		d->wd[0] = p->m; d->wd[1] = p->c;
		for (int i = 0; i < p->w.nsp; i++)
			d->wd[2 + i] = p->w.k[i];
		d->wtag = nd == 3 ? dnnl_oiw : nd == 4 ? dnnl_oihw : dnnl_oidhw;
	}
}

/* FusedConv: Y = act(conv + Z) inside the primitive, as post-ops set on
 * attr (*po is the caller's to destroy, also on failure). */
static dnnl_status_t conv_post_ops(conv_state *s, const conv_params *p, mfs_layout yl, int nd,
				   dnnl_format_tag_t ftag, const dnnl_memory_desc_t *dmd,
				   dnnl_primitive_attr_t attr, dnnl_post_ops_t *po)
{
	dnnl_status_t st;

	if ((st = dnnl_post_ops_create(po)) != dnnl_success)
		return st;
	/* Z already in the destination (Y over Z, written without an
	 * edge reorder): add it as the sum post-op, which reads and
	 * writes the destination once, instead of reading Z apart
	 * (40% of a residual 1x1 layer at batch 32 on 16 cores). */
	s->z_sum = p->z && s->z_in_y && tag_of(yl, nd) == ftag &&
		   tag_of(p->z->layout, nd) == ftag;
	if (s->z_sum)
		st = dnnl_post_ops_append_sum(*po, 1.0f);
	else if (p->z)
		st = dnnl_post_ops_append_binary(*po, dnnl_binary_add, dmd);
	if (st != dnnl_success)
		return st;
	if (p->act == ACT_RELU)
		st = dnnl_post_ops_append_eltwise(*po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f);
	else if (p->act == ACT_LEAKY)
		st = dnnl_post_ops_append_eltwise(*po, 1.0f, dnnl_eltwise_relu, p->act_a, 0.0f);
	else if (p->act == ACT_CLIP)
		st = dnnl_post_ops_append_eltwise(*po, 1.0f, dnnl_eltwise_clip, p->act_a, p->act_b);
	else if (p->act == ACT_SWISH)
		st = dnnl_post_ops_append_eltwise(*po, 1.0f, dnnl_eltwise_swish, 1.0f, 0.0f);
	else if (p->act == ACT_HARDSWISH)
		st = dnnl_post_ops_append_eltwise(*po, 1.0f, dnnl_eltwise_hardswish, 0.0f, 0.0f);
	if (st != dnnl_success)
		return st;
	return dnnl_primitive_attr_set_post_ops(attr, *po);
}

/* The memories the primitive reads and writes: a tensor stored in the
 * compute format ftag (or X let in directly) is handed over in place at
 * run, any other goes through a scratch buffer and a reorder at the
 * edge. */
static dnnl_status_t conv_memories(conv_state *s, const conv_params *p, const conv_dims *d,
				   dnnl_engine_t eng, mfs_layout xl, mfs_layout yl, bool has_bias,
				   bool x_direct, dnnl_format_tag_t ftag,
				   const dnnl_memory_desc_t *smd, const dnnl_memory_desc_t *dmd,
				   const dnnl_memory_desc_t *bmd)
{
	int nd = d->nd;
	dnnl_status_t st;

	if (x_direct)
		st = dnnl_memory_create(&s->src_m, smd, eng, DNNL_MEMORY_NONE);
	else
		st = edge_reorder(eng, smd, nd, d->sd, tag_of(xl, nd), true, &s->xreorder,
				  &s->xplain_m, &s->src_m, &s->xcl_buf);
	if (st != dnnl_success)
		return st;
	if (tag_of(yl, nd) == ftag)
		st = dnnl_memory_create(&s->dst_m, dmd, eng, DNNL_MEMORY_NONE);
	else
		st = edge_reorder(eng, dmd, nd, d->dd, tag_of(yl, nd), false, &s->yreorder,
				  &s->yplain_m, &s->dst_m, &s->ycl_buf);
	if (st != dnnl_success)
		return st;
	if (s->z_sum)
		;   /* Z is the destination */
	else if (p->z && tag_of(p->z->layout, nd) == ftag)
		st = dnnl_memory_create(&s->z_m, dmd, eng, DNNL_MEMORY_NONE);
	else if (p->z)
		st = edge_reorder(eng, dmd, nd, d->dd, tag_of(p->z->layout, nd), true, &s->zreorder,
				  &s->zplain_m, &s->z_m, &s->zcl_buf);
	if (st != dnnl_success)
		return st;
	if (has_bias)
		st = dnnl_memory_create(&s->bias_m, bmd, eng, DNNL_MEMORY_NONE);
	return st;
}

/* oneDNN's name for the implementation pd picked (NULL when it says
 * none). */
static const char *conv_impl_name(const_dnnl_primitive_desc_t pd)
{
	const char *impl = NULL;
	dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
	return impl;
}

/* conv_internal.h */
dnnl_status_t conv_dnnl_build(conv_state *s, const conv_params *p,
			      mfs_layout xl, mfs_layout yl, bool has_bias,
			      enum conv_build how, mfs_error *err)
{
	dnnl_primitive_attr_t attr = NULL;
	dnnl_post_ops_t po = NULL;
	dnnl_engine_t eng = mfs_dnnl_engine(err);
	conv_dims d;
	dnnl_memory_desc_t smd, wmd_any, wmd_plain, bmd, dmd;
	dnnl_convolution_desc_t cd;
	dnnl_primitive_desc_t pd = NULL;
	dnnl_status_t st;

	if (!eng)
		return dnnl_runtime_error;
	conv_dims_get(p, how, &d);
	int nd = d.nd;
	/* The format the primitive computes in: nChw16c when X, Y or Z is
	 * stored BLOCK16 (graph_plan.c plans it between convolutions), else
	 * channels-last; a tensor stored otherwise is reordered at the edge,
	 * since oneDNN runs mixed formats on its reference kernel.  The one
	 * mix it has a fast kernel for is a plain X of few channels into a
	 * blocked Y (a network's first layer): BUILD_DIRECT_X lets X in as
	 * it is, and the caller tries again without when oneDNN answers with
	 * a reference kernel.  Winograd computes in nChw16c, the one format
	 * oneDNN 2.6 has it for.  nChw16c answered with a reference kernel
	 * (groups of other than 16k channels) is refused too: BUILD_CL then
	 * computes channels-last with reorders at the edges. */
	bool wino = how == BUILD_WINOGRAD || how == BUILD_WINOGRAD_IMAGE;
	bool blocked = nd == 4 && how != BUILD_CL &&
		       (wino || xl == MFS_LAYOUT_BLOCK16 || yl == MFS_LAYOUT_BLOCK16 ||
			(p->z && p->z->layout == MFS_LAYOUT_BLOCK16));
	dnnl_format_tag_t ftag = blocked ? dnnl_nChw16c : cl_tag(nd);
	bool x_direct = tag_of(xl, nd) == ftag ||
			(how == BUILD_DIRECT_X && blocked && xl == MFS_LAYOUT_PLAIN && p->c < 16);
#define CK(call) do { if ((st = (call)) != dnnl_success) goto fail; } while (0)
	CK(dnnl_memory_desc_init_by_tag(&smd, nd, d.sd, dnnl_f32, x_direct ? tag_of(xl, nd) : ftag));
	CK(dnnl_memory_desc_init_by_tag(&dmd, nd, d.dd, dnnl_f32, ftag));
	CK(dnnl_memory_desc_init_by_tag(&wmd_any, d.wnd, d.wd, dnnl_f32, dnnl_format_tag_any));
	CK(dnnl_memory_desc_init_by_tag(&wmd_plain, d.wnd, d.wd, dnnl_f32, d.wtag));
	CK(dnnl_memory_desc_init_by_tag(&bmd, 1, d.bd, dnnl_f32, dnnl_x));
	CK(dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference,
			wino ? dnnl_convolution_winograd : dnnl_convolution_direct, &smd, &wmd_any,
			has_bias ? &bmd : NULL, &dmd, d.strides, d.dil, d.pl, d.pr));
	CK(mfs_dnnl_attr_create(&attr));
	if (p->z || p->act != ACT_NONE)
		CK(conv_post_ops(s, p, yl, nd, ftag, &dmd, attr, &po));
	CK(conv_pick_impl(&pd, &cd, attr, eng, p));
	if ((x_direct && tag_of(xl, nd) != ftag) || (blocked && !wino)) {
		const char *impl = conv_impl_name(pd);
		if (!impl || !strncmp(impl, "ref", 3)) {
			st = dnnl_unimplemented;   /* the caller tries without */
			goto fail;
		}
	}
	const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
	CK(mfs_dnnl_prim_create(&s->prim, pd, eng));
	CK(dnnl_stream_create(&s->stream, eng, dnnl_stream_default_flags));
	CK(conv_memories(s, p, &d, eng, xl, yl, has_bias, x_direct, ftag, &smd, &dmd, &bmd));
	CK(conv_weights_pick(s, wmd, &wmd_plain, wino, eng));
	s->wei_want = *wmd;
	s->wei_plain = wmd_plain;
	s->images = how == BUILD_WINOGRAD_IMAGE ? p->n : 1;
	s->x_img = mem_bytes(s->xreorder.prim ? s->xplain_m : s->src_m);
	s->y_img = mem_bytes(s->yreorder.prim ? s->yplain_m : s->dst_m);
	s->z_img = p->z && !s->z_sum ? mem_bytes(s->zreorder.prim ? s->zplain_m : s->z_m) : 0;
	const char *impl = conv_impl_name(pd);
	mfs_log_debug("Conv: oneDNN implementation %s", impl ? impl : "?");
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

/* conv_internal.h */
int conv_dnnl_compute(mfs_op_ctx *ctx, conv_state *s, const conv_params *pp,
		      const mfs_tensor *x, const mfs_tensor *wt, const mfs_tensor *b,
		      float *ydata)
{
	const conv_params p = *pp;
	int rc;
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

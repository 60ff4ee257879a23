/* QConv (com.modelfs 1): a 2-D convolution on 8-bit values, what the QDQ
 * rewrite (exec/graph/rewrite_qdq.c) makes of DequantizeLinear -> Conv
 * [-> Relu] [-> QuantizeLinear].  Inputs as qlinear_util.h says; the
 * Conv's attributes (group, strides, dilations, pads, auto_pad) and
 * activation "Relu".
 *
 *   acc[n,m,p] = sum (x - x_zero_point) * w  + rint(bias[m] / (xs * ws[m]))
 *   y = saturate(rint(act(acc * xs * ws[m] / ys)) + y_zero_point)
 * or, without y_scale, y = act(acc * xs * ws[m]) in float: ONNX Runtime's
 * QLinearConv for the same group (padding counts as x_zero_point).
 *
 * How: oneDNN's int8 convolution (u8/s8 source, s8 weights packed once,
 * s32 bias, per-channel output scales, runtime zero points, Relu post-op;
 * VNNI where the CPU has it), computing channels-last.  X and Y may be
 * stored NHWC (MFS_OP_NHWC_OK, and Y in the layout the engine asks, as
 * Conv's: graph_resolve.c), so a chain of QConv/QAdd/QMaxPool stays
 * channels-last; a plain X or Y is reordered at the edge (a u8 reorder
 * cost as much as the convolution, so the plan matters).
 */
#include <stdlib.h>
#include <string.h>

#include "qlinear_util.h"

typedef struct qconv_state {
	int64_t dims[4];             /* x's shape it was built for */
	mfs_layout xl, yl;           /* and the layouts */
	int threads;
	bool ok;
	mfs_qprim q;
	mfs_dnnl_prim xreorder, yreorder;
	dnnl_memory_t xplain, xcl, yplain, ycl;
	void *xbuf, *ybuf;
} qconv_state;

static void qconv_prims_free(qconv_state *s)
{
	mfs_qprim_free(&s->q);
	mfs_dnnl_prim_destroy(&s->xreorder);
	mfs_dnnl_prim_destroy(&s->yreorder);
	dnnl_memory_t *mems[] = { &s->xplain, &s->xcl, &s->yplain, &s->ycl };
	for (size_t i = 0; i < sizeof(mems) / sizeof(mems[0]); i++) {
		if (*mems[i])
			dnnl_memory_destroy(*mems[i]);
		*mems[i] = NULL;
	}
	free(s->xbuf);
	free(s->ybuf);
	s->xbuf = s->ybuf = NULL;
	s->ok = false;
}

static void qconv_release(void *state)
{
	qconv_state *s = state;
	if (!s)
		return;
	qconv_prims_free(s);
	mfs_dnnl_weights_free(&s->q.wei);
	free(s);
}

static int qconv_window(mfs_op_ctx *ctx, mfs_window *w, int64_t *group)
{
	const mfs_tensor *x = ctx->in[0], *wt = ctx->n_in > 3 ? ctx->in[3] : NULL;
	if (!x || !wt || (x->dtype != MFS_DT_UINT8 && x->dtype != MFS_DT_INT8) ||
	    wt->dtype != MFS_DT_INT8)
		return mfs_op_fail(ctx, ENOTSUP, "needs x uint8 or int8 and w int8");
	if ((x->layout != MFS_LAYOUT_PLAIN && x->layout != MFS_LAYOUT_NHWC) ||
	    x->shape.rank != 4 || wt->shape.rank != 4 || wt->layout != MFS_LAYOUT_PLAIN)
		return mfs_op_fail(ctx, EINVAL, "x (plain or NHWC) and w must be rank-4 tensors");
	*group = onnx_attr_int(ctx->node, "group", 1);
	if (*group < 1 || x->shape.dims[1] % *group || wt->shape.dims[0] % *group ||
	    wt->shape.dims[1] * *group != x->shape.dims[1])
		return mfs_op_fail(ctx, EINVAL, "group %lld does not fit x's %lld and w's %lld channels",
				   (long long)*group, (long long)x->shape.dims[1],
				   (long long)wt->shape.dims[1]);
	return mfs_window_init(ctx, &x->shape, wt->shape.dims + 2, true, false, w);
}

static int qconv_infer(mfs_op_ctx *ctx)
{
	mfs_window w;
	mfs_qparams qp;
	int64_t group;
	bool relu;
	int rc;

	if ((rc = qconv_window(ctx, &w, &group)) < 0 || (rc = mfs_q_relu(ctx, &relu)) < 0 ||
	    (rc = mfs_qparams_read(ctx, ctx->in[0]->dtype, ctx->in[3]->shape.dims[0], &qp)) < 0)
		return rc;
	if ((rc = mfs_qparams_bias_check(ctx, ctx->n_in > 6 ? ctx->in[6] : NULL,
					 ctx->in[3]->shape.dims[0])) < 0)
		return rc;
	mfs_tensor *y = ctx->out[0];
	y->dtype = qp.ydt;
	y->shape.rank = 4;
	y->shape.dims[0] = ctx->in[0]->shape.dims[0];
	y->shape.dims[1] = ctx->in[3]->shape.dims[0];
	y->shape.dims[2] = w.out[0];
	y->shape.dims[3] = w.out[1];
	return 0;
}

/* The channels-last memory the primitive reads or writes: the tensor's
 * own (handle set per run) when it is stored NHWC, else a scratch with a
 * memory for the plain tensor and the reorder between them. */
static dnnl_status_t qconv_edge(dnnl_engine_t eng, const dnnl_dims_t d, dnnl_data_type_t dt,
				mfs_layout l, bool to_cl, mfs_dnnl_prim *r, dnnl_memory_t *plain,
				dnnl_memory_t *cl, void **buf)
{
	dnnl_memory_desc_t pmd, cmd;
	dnnl_status_t st;
	if ((st = dnnl_memory_desc_init_by_tag(&pmd, 4, d, dt, dnnl_nchw)) ||
	    (st = dnnl_memory_desc_init_by_tag(&cmd, 4, d, dt, dnnl_nhwc)))
		return st;
	if (l == MFS_LAYOUT_NHWC)
		return dnnl_memory_create(cl, &cmd, eng, DNNL_MEMORY_NONE);
	size_t sz = dnnl_memory_desc_get_size(&cmd);
	if (posix_memalign(buf, 64, sz ? sz : 64)) {
		*buf = NULL;
		return dnnl_out_of_memory;
	}
	if ((st = dnnl_memory_create(plain, &pmd, eng, DNNL_MEMORY_NONE)) ||
	    (st = dnnl_memory_create(cl, &cmd, eng, *buf)))
		return st;
	return to_cl ? mfs_dnnl_reorder_create(r, &pmd, &cmd, eng)
		     : mfs_dnnl_reorder_create(r, &cmd, &pmd, eng);
}

static dnnl_status_t qconv_build(mfs_op_ctx *ctx, qconv_state *s, const mfs_window *w,
				 int64_t group, bool relu)
{
	const mfs_tensor *x = ctx->in[0], *wt = ctx->in[3];
	dnnl_engine_t eng = mfs_dnnl_engine(ctx->err);
	dnnl_convolution_desc_t cd;
	dnnl_memory_desc_t smd, wany, wplain, bmd, dmd;
	dnnl_status_t st;
	int64_t m = wt->shape.dims[0];
	dnnl_dims_t sd = { x->shape.dims[0], x->shape.dims[1], x->shape.dims[2], x->shape.dims[3] };
	dnnl_dims_t dd = { sd[0], m, w->out[0], w->out[1] };
	dnnl_dims_t wd5 = { group, m / group, wt->shape.dims[1], w->k[0], w->k[1] };
	dnnl_dims_t wd4 = { m, wt->shape.dims[1], w->k[0], w->k[1] };
	dnnl_dims_t bd = { m }, st_ = { w->stride[0], w->stride[1] };
	dnnl_dims_t dl = { w->dil[0] - 1, w->dil[1] - 1 }, pl = { w->pad_b[0], w->pad_b[1] };
	dnnl_dims_t pr = { w->pad_e[0], w->pad_e[1] };
	dnnl_data_type_t xt = mfs_q_dnnl_type(x->dtype), yt = mfs_q_dnnl_type(s->q.qp.ydt);
	int wnd = group > 1 ? 5 : 4;

	if (!eng)
		return dnnl_runtime_error;
	s->q.ch = m;
	if ((st = dnnl_memory_desc_init_by_tag(&smd, 4, sd, xt, dnnl_nhwc)) ||
	    (st = dnnl_memory_desc_init_by_tag(&dmd, 4, dd, yt, dnnl_nhwc)) ||
	    (st = dnnl_memory_desc_init_by_tag(&wany, wnd, group > 1 ? wd5 : wd4, dnnl_s8,
					       dnnl_format_tag_any)) ||
	    (st = dnnl_memory_desc_init_by_tag(&wplain, wnd, group > 1 ? wd5 : wd4, dnnl_s8,
					       group > 1 ? dnnl_goihw : dnnl_oihw)) ||
	    (st = dnnl_memory_desc_init_by_tag(&bmd, 1, bd, dnnl_s32, dnnl_a)) ||
	    (st = dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference,
							     dnnl_convolution_direct, &smd, &wany,
							     s->q.has_bias ? &bmd : NULL, &dmd,
							     st_, dl, pl, pr)) ||
	    (st = mfs_qprim_build(ctx, &s->q, &cd, &wplain, &bmd, relu, eng)) ||
	    (st = qconv_edge(eng, sd, xt, s->xl, true, &s->xreorder, &s->xplain, &s->xcl,
			     &s->xbuf)) ||
	    (st = qconv_edge(eng, dd, yt, s->yl, false, &s->yreorder, &s->yplain, &s->ycl,
			     &s->ybuf))) {
		qconv_prims_free(s);
		return st;
	}
	s->ok = true;
	return dnnl_success;
}

static int qconv_prepare(mfs_op_ctx *ctx)
{
	qconv_state *s = *ctx->state;
	mfs_window w;
	int64_t group;
	bool relu;
	int rc;

	if ((rc = qconv_window(ctx, &w, &group)) < 0 || (rc = mfs_q_relu(ctx, &relu)) < 0)
		return rc;
	if (!s && !(s = *ctx->state = calloc(1, sizeof(*s))))
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	const mfs_shape *xs = &ctx->in[0]->shape;
	int threads = mfs_dnnl_threads();
	mfs_layout xl = ctx->in[0]->layout, yl = ctx->out[0]->layout;
	if (yl != MFS_LAYOUT_PLAIN && yl != MFS_LAYOUT_NHWC)
		return mfs_op_fail(ctx, EINVAL, "output layout %d is not supported", (int)yl);
	if (s->ok && s->threads == threads && !memcmp(s->dims, xs->dims, sizeof(s->dims)) &&
	    s->xl == xl && s->yl == yl)
		return 0;
	qconv_prims_free(s);
	s->xl = xl;
	s->yl = yl;
	memcpy(s->dims, xs->dims, sizeof(s->dims));
	s->threads = threads;
	s->q.has_bias = ctx->n_in > 6 && ctx->in[6];
	s->q.wslot = 3;
	if ((rc = mfs_qparams_read(ctx, ctx->in[0]->dtype, ctx->in[3]->shape.dims[0], &s->q.qp)) < 0)
		return rc;
	dnnl_status_t st = qconv_build(ctx, s, &w, group, relu);
	if (st != dnnl_success)
		return mfs_op_fail(ctx, ENOTSUP, "oneDNN has no int8 convolution for this node: %s",
				   mfs_dnnl_status_str(st));
	return 0;
}

static int qconv_run(mfs_op_ctx *ctx)
{
	qconv_state *s;
	dnnl_status_t st;
	int rc;

	/* The engine prepares on a shape change only; a run given another
	 * thread count (one under CPU contention, cpu_contention.h) needs
	 * primitives built for it, as Conv's run checks. */
	if ((rc = qconv_prepare(ctx)) < 0)
		return rc;
	s = *ctx->state;
	if (!s || !s->ok)
		return mfs_op_fail(ctx, EIO, "QConv was not prepared");
	if (s->xl == MFS_LAYOUT_NHWC)
		dnnl_memory_set_data_handle(s->xcl, ctx->in[0]->data);
	else
		dnnl_memory_set_data_handle(s->xplain, ctx->in[0]->data);
	if (s->yl == MFS_LAYOUT_NHWC)
		dnnl_memory_set_data_handle(s->ycl, ctx->out[0]->data);
	else
		dnnl_memory_set_data_handle(s->yplain, ctx->out[0]->data);
	dnnl_exec_arg_t xr[2] = { { DNNL_ARG_FROM, s->xplain }, { DNNL_ARG_TO, s->xcl } };
	dnnl_exec_arg_t yr[2] = { { DNNL_ARG_FROM, s->ycl }, { DNNL_ARG_TO, s->yplain } };
	if (s->xl != MFS_LAYOUT_NHWC && (st = mfs_dnnl_prim_exec(&s->xreorder, s->q.stream, 2, xr)))
		return mfs_op_fail(ctx, EIO, "oneDNN reorder failed: %s", mfs_dnnl_status_str(st));
	if ((rc = mfs_qprim_exec(ctx, &s->q, s->xcl, s->ycl, "convolution")) < 0)
		return rc;
	if (s->yl != MFS_LAYOUT_NHWC && (st = mfs_dnnl_prim_exec(&s->yreorder, s->q.stream, 2, yr)))
		return mfs_op_fail(ctx, EIO, "oneDNN reorder failed: %s", mfs_dnnl_status_str(st));
	return 0;
}

MFS_OP_DOMAIN("com.modelfs", QConv, 1, .flags = MFS_OP_NHWC_OK, .infer = qconv_infer, .prepare = qconv_prepare,
	      .run = qconv_run, .release = qconv_release);

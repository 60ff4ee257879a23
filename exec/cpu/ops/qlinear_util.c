/* qlinear_util.c - see qlinear_util.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qlinear_util.h"

static const mfs_tensor *slot(mfs_op_ctx *ctx, int i)
{
	return i < ctx->n_in ? ctx->in[i] : NULL;
}

static int scalar(mfs_op_ctx *ctx, int i, mfs_dtype want, bool is_zp, const char *what)
{
	const mfs_tensor *t = slot(ctx, i);
	if (!t)
		return 0;
	if (mfs_shape_numel(&t->shape) != 1 || !t->data)
		return mfs_op_fail(ctx, EINVAL, "%s must be one constant value", what);
	if (is_zp ? t->dtype != MFS_DT_UINT8 && t->dtype != MFS_DT_INT8 : t->dtype != want)
		return mfs_op_fail(ctx, EINVAL, "%s has type %s", what, mfs_dtype_onnx_name(t->dtype));
	return 0;
}

int mfs_qparams_read(mfs_op_ctx *ctx, mfs_dtype xdt, int64_t ch, mfs_qparams *p)
{
	const mfs_tensor *xs = slot(ctx, 1), *xz = slot(ctx, 2), *ws = slot(ctx, 4);
	const mfs_tensor *wz = slot(ctx, 5), *ys = slot(ctx, 7), *yz = slot(ctx, 8);
	int rc;

	memset(p, 0, sizeof(*p));
	if (!xs || !ws)
		return mfs_op_fail(ctx, EINVAL, "needs x_scale and w_scale");
	if ((rc = scalar(ctx, 1, MFS_DT_FLOAT, false, "x_scale")) < 0 ||
	    (rc = scalar(ctx, 2, 0, true, "x_zero_point")) < 0 ||
	    (rc = scalar(ctx, 7, MFS_DT_FLOAT, false, "y_scale")) < 0 ||
	    (rc = scalar(ctx, 8, 0, true, "y_zero_point")) < 0)
		return rc;
	if (xz && xz->dtype != xdt)
		return mfs_op_fail(ctx, EINVAL, "x_zero_point's type differs from x's");
	p->nws = mfs_shape_numel(&ws->shape);
	if (ws->dtype != MFS_DT_FLOAT || !ws->data || (p->nws != 1 && p->nws != ch))
		return mfs_op_fail(ctx, EINVAL, "w_scale must be a float constant of 1 or %lld values",
				   (long long)ch);
	for (int64_t i = 0; wz && i < mfs_shape_numel(&wz->shape); i++)
		if (!wz->data || mfs_tensor_get_i64(wz, i))
			return mfs_op_fail(ctx, ENOTSUP, "w_zero_point must be zero");
	p->xs = ((const float *)xs->data)[0];
	p->ws = ws->data;
	p->xz = xz ? (int32_t)mfs_tensor_get_i64(xz, 0) : 0;
	p->yq = ys != NULL;
	p->ys = ys ? ((const float *)ys->data)[0] : 1.0f;
	p->yz = yz ? (int32_t)mfs_tensor_get_i64(yz, 0) : 0;
	p->ydt = !ys ? MFS_DT_FLOAT : yz ? yz->dtype : MFS_DT_UINT8;
	return 0;
}

void mfs_qparams_scales(const mfs_qparams *p, int64_t ch, float *out)
{
	for (int64_t c = 0; c < ch; c++)
		out[c] = p->xs * p->ws[p->nws > 1 ? c : 0] / p->ys;
}

int mfs_qparams_bias_check(mfs_op_ctx *ctx, const mfs_tensor *b, int64_t ch)
{
	if (b && ((b->dtype != MFS_DT_FLOAT && b->dtype != MFS_DT_INT32) ||
		  mfs_shape_numel(&b->shape) != ch))
		return mfs_op_fail(ctx, EINVAL, "bias must be float or int32 with %lld values",
				   (long long)ch);
	return 0;
}

void mfs_qparams_bias(const mfs_qparams *p, const mfs_tensor *bt, int64_t ch, int32_t *out)
{
	const float *b = bt->data;
	if (bt->dtype == MFS_DT_INT32) {
		memcpy(out, bt->data, sizeof(int32_t) * (size_t)ch);
		return;
	}
	for (int64_t c = 0; c < ch; c++) {
		float s = p->xs * p->ws[p->nws > 1 ? c : 0];
		double v = s != 0 ? rint((double)b[c] / s) : 0;
		out[c] = (int32_t)(v > 2147483647.0 ? 2147483647.0 : v < -2147483648.0 ? -2147483648.0 : v);
	}
}

dnnl_data_type_t mfs_q_dnnl_type(mfs_dtype dt)
{
	return dt == MFS_DT_UINT8 ? dnnl_u8 : dt == MFS_DT_INT8 ? dnnl_s8 :
	       dt == MFS_DT_INT32 ? dnnl_s32 : dnnl_f32;
}

dnnl_status_t mfs_q_attr(dnnl_primitive_attr_t attr, const mfs_qparams *p, int64_t ch,
			 int mask, bool relu)
{
	static const int32_t rt = DNNL_RUNTIME_S32_VAL;
	float *sc = malloc(sizeof(float) * (size_t)(ch ? ch : 1));
	dnnl_status_t st;

	if (!sc)
		return dnnl_out_of_memory;
	mfs_qparams_scales(p, ch, sc);
	st = p->nws > 1 ? dnnl_primitive_attr_set_output_scales(attr, ch, mask, sc)
			: dnnl_primitive_attr_set_output_scales(attr, 1, 0, sc);
	free(sc);
	if (st == dnnl_success && p->xz)
		st = dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0, &rt);
	if (st == dnnl_success && p->yz)
		st = dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_DST, 1, 0, &rt);
	if (st == dnnl_success && relu) {
		dnnl_post_ops_t po;
		if ((st = dnnl_post_ops_create(&po)) != dnnl_success)
			return st;
		if ((st = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0, 0)) ==
		    dnnl_success)
			st = dnnl_primitive_attr_set_post_ops(attr, po);
		dnnl_post_ops_destroy(po);
	}
	return st;
}

dnnl_status_t mfs_q_zp_mem(dnnl_memory_t *m, int32_t *v, dnnl_engine_t eng)
{
	dnnl_memory_desc_t md;
	dnnl_dims_t d = { 1 };
	dnnl_status_t st = dnnl_memory_desc_init_by_tag(&md, 1, d, dnnl_s32, dnnl_a);
	return st == dnnl_success ? dnnl_memory_create(m, &md, eng, v) : st;
}

int mfs_q_relu(mfs_op_ctx *ctx, bool *relu)
{
	const char *a = onnx_attr_string(ctx->node, "activation", "");
	*relu = !strcmp(a, "Relu");
	if (*a && !*relu)
		return mfs_op_fail(ctx, EINVAL, "activation '%s' is not supported (Relu only)", a);
	return 0;
}

dnnl_status_t mfs_qprim_build(mfs_op_ctx *ctx, mfs_qprim *q, const_dnnl_op_desc_t op_desc,
			      const dnnl_memory_desc_t *wplain, const dnnl_memory_desc_t *bmd,
			      bool relu, dnnl_engine_t eng)
{
	dnnl_primitive_attr_t attr = NULL;
	dnnl_primitive_desc_t pd = NULL;
	dnnl_status_t st;

#define CK(call) do { if ((st = (call)) != dnnl_success) goto out; } while (0)
	CK(mfs_dnnl_attr_create(&attr));
	CK(mfs_q_attr(attr, &q->qp, q->ch, 1 << 1, relu));
	CK(dnnl_primitive_desc_create(&pd, op_desc, attr, eng, NULL));
	CK(mfs_dnnl_prim_create(&q->prim, pd, eng));
	CK(dnnl_stream_create(&q->stream, eng, dnnl_stream_default_flags));
	q->wei.is_const = (ctx->const_in >> q->wslot) & 1;
	CK(mfs_dnnl_weights_init(&q->wei, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0),
				 wplain, eng));
	if (q->has_bias) {
		CK((q->bias = malloc(sizeof(int32_t) * (size_t)q->ch)) ? dnnl_success
								       : dnnl_out_of_memory);
		CK(dnnl_memory_create(&q->bias_m, bmd, eng, q->bias));
	}
	q->xz = q->qp.xz;
	q->yz = q->qp.yz;
	CK(mfs_q_zp_mem(&q->xz_m, &q->xz, eng));
	CK(mfs_q_zp_mem(&q->yz_m, &q->yz, eng));
#undef CK
out:
	if (attr)
		dnnl_primitive_attr_destroy(attr);
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	return st;
}

void mfs_qprim_free(mfs_qprim *q)
{
	mfs_dnnl_prim_destroy(&q->prim);
	dnnl_memory_t *mems[] = { &q->bias_m, &q->xz_m, &q->yz_m };
	for (size_t i = 0; i < sizeof(mems) / sizeof(mems[0]); i++) {
		if (*mems[i])
			dnnl_memory_destroy(*mems[i]);
		*mems[i] = NULL;
	}
	if (q->stream)
		dnnl_stream_destroy(q->stream);
	q->stream = NULL;
	free(q->bias);
	q->bias = NULL;
}

int mfs_qprim_exec(mfs_op_ctx *ctx, mfs_qprim *q, dnnl_memory_t src, dnnl_memory_t dst,
		   const char *what)
{
	dnnl_status_t st;
	int rc = mfs_dnnl_weights_set(ctx, &q->wei, ctx->in[q->wslot]->data, q->stream);
	if (rc < 0)
		return rc;
	if (q->has_bias)
		mfs_qparams_bias(&q->qp, ctx->in[6], q->ch, q->bias);
	dnnl_exec_arg_t args[6] = {
		{ DNNL_ARG_SRC, src }, { DNNL_ARG_WEIGHTS, q->wei.mem }, { DNNL_ARG_DST, dst },
	};
	int na = 3;
	if (q->has_bias)
		args[na++] = (dnnl_exec_arg_t){ DNNL_ARG_BIAS, q->bias_m };
	if (q->qp.xz)
		args[na++] = (dnnl_exec_arg_t){ DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, q->xz_m };
	if (q->qp.yz)
		args[na++] = (dnnl_exec_arg_t){ DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, q->yz_m };
	if ((st = mfs_dnnl_prim_exec(&q->prim, q->stream, na, args)))
		return mfs_op_fail(ctx, EIO, "oneDNN int8 %s failed: %s", what, mfs_dnnl_status_str(st));
	return 0;
}

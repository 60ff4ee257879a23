/* ocl_ops_norm.c - device implementations of the normalisations and
 * reductions: BatchNormalization (inference), Softmax / LogSoftmax,
 * LayerNormalization (ONNX's and com.modelfs), ReduceMean / ReduceSum.
 * A contiguous row takes one work group (softmax_rows_f32, which
 * Attention uses too, layernorm_f32, reduce_rows_f32), else one work item
 * per output.  Float only; other cases return OCL_HOST (the CPU operator
 * runs).
 */
#include <string.h>

#include "ocl_internal.h"
#include "op_common.h"

/* ---- BatchNormalization (inference) ---- */

/* The inference form from opset 7 on (before: legacy attributes, the
 * host's); opset 7's `spatial` = 0 is the host's too. */
static int batchnorm(ocl_run *r)
{
	mfs_op_ctx *ctx = r->ctx;
	const mfs_tensor *x = ctx->in[0];
	float eps = onnx_attr_float(ctx->node, "epsilon", 1e-5f);
	int64_t c, inner = 1, n = mfs_shape_numel(&x->shape);
	cl_mem m[5], my;
	cl_int a, b, d;
	int rc;

	if (x->dtype != MFS_DT_FLOAT || x->shape.rank < 2 || ctx->n_in < 5 || !ocl_fits_int(n) ||
	    onnx_attr_int(ctx->node, "training_mode", 0))
		return OCL_HOST;
	for (int i = 1; i < ctx->n_out; i++)
		if (ctx->out[i])
			return OCL_HOST;
	c = x->shape.dims[1];
	for (int i = 1; i < 5; i++)
		if (!ctx->in[i] || ctx->in[i]->dtype != MFS_DT_FLOAT ||
		    mfs_shape_numel(&ctx->in[i]->shape) != c)
			return OCL_HOST;
	for (int i = 2; i < x->shape.rank; i++)
		inner *= x->shape.dims[i];
	for (int i = 0; i < 5; i++)
		if (!(m[i] = ocl_in(r, i, &rc)))
			return rc;
	if (!(my = ocl_out(r, 0, &rc)))
		return rc;
	a = (cl_int)n;
	b = (cl_int)c;
	d = (cl_int)inner;
	ocl_kid k = K_BATCHNORM_F32;
	/* kernel order: x, scale, bias, mean, var */
	if ((rc = OCL_ARG(r, k, 0, m[0])) || (rc = OCL_ARG(r, k, 1, m[1])) ||
	    (rc = OCL_ARG(r, k, 2, m[2])) || (rc = OCL_ARG(r, k, 3, m[3])) ||
	    (rc = OCL_ARG(r, k, 4, m[4])) || (rc = OCL_ARG(r, k, 5, my)) ||
	    (rc = OCL_ARG(r, k, 6, a)) || (rc = OCL_ARG(r, k, 7, b)) ||
	    (rc = OCL_ARG(r, k, 8, d)) || (rc = OCL_ARG(r, k, 9, eps)))
		return rc;
	return ocl_launch(r, k, (size_t)n);
}

int ocl_op_batchnorm_7(ocl_run *r)
{
	if (onnx_attr_int(r->ctx->node, "spatial", 1) == 0)
		return OCL_HOST;
	return batchnorm(r);
}

int ocl_op_batchnorm_9(ocl_run *r)
{
	return batchnorm(r);
}

/* ---- Softmax / LogSoftmax ---- */

/* Work-group size for a row kernel: a power of two, at most 256 and at
 * most the row: PoCL corrupted memory with groups wider than the row
 * (len 33, 64 items). */
static size_t row_group(ocl_run *r, int64_t len)
{
	size_t local = 1;

	while (local * 2 <= 256 && local * 2 <= ocl_max_group(r) && (int64_t)local * 2 <= len)
		local *= 2;
	return local;
}

/* Declared in ocl_internal.h (Attention's scores use it too). */
int ocl_softmax_rows(ocl_run *r, cl_mem x, cl_mem y, int64_t rows, int64_t len,
			cl_int logsm, cl_mem c, const ocl_bc *p, cl_int keep, float fill)
{
	size_t local = row_group(r, len);
	ocl_kid k = K_SOFTMAX_ROWS_F32;
	cl_int l = (cl_int)len, hasc = c != NULL;
	ocl_bc none;
	int rc;

	if (!c) {
		memset(&none, 0, sizeof(none));
		p = &none;
		c = x;   /* a valid dummy the kernel never reads */
	}
	if ((rc = OCL_ARG(r, k, 0, x)) || (rc = OCL_ARG(r, k, 1, y)) ||
	    (rc = OCL_ARG(r, k, 2, l)) || (rc = OCL_ARG(r, k, 3, logsm)) ||
	    (rc = ocl_arg(r, k, 4, local * sizeof(float), NULL)) ||
	    (rc = OCL_ARG(r, k, 5, c)) || (rc = ocl_arg(r, k, 6, sizeof(*p), p)) ||
	    (rc = OCL_ARG(r, k, 7, hasc)) || (rc = OCL_ARG(r, k, 8, keep)) ||
	    (rc = OCL_ARG(r, k, 9, fill)))
		return rc;
	return ocl_launch_groups(r, k, (size_t)rows, local);
}

/* v13: along one axis (opset 13 on); else over the input flattened to
 * 2-D at the axis (opsets 1 to 12). */
static int softmax(ocl_run *r, bool v13)
{
	mfs_op_ctx *ctx = r->ctx;
	const mfs_tensor *x = ctx->in[0];
	int rank = x->shape.rank;
	int64_t ax = onnx_attr_int(ctx->node, "axis", v13 ? -1 : 1), outer = 1, len = 1, inner = 1;
	cl_int o, l, in, lg = !strcmp(ctx->node->op_type, "LogSoftmax");
	cl_mem mx, my;
	int rc;

	if (x->dtype != MFS_DT_FLOAT || !ocl_fits_int(mfs_shape_numel(&x->shape)))
		return OCL_HOST;
	if (ax < 0)
		ax += rank;
	if (ax < 0 || ax > rank || (v13 && ax == rank) || rank == 0)
		return OCL_HOST;
	for (int i = 0; i < ax; i++)
		outer *= x->shape.dims[i];
	if (v13) {
		len = x->shape.dims[ax];
		for (int i = (int)ax + 1; i < rank; i++)
			inner *= x->shape.dims[i];
	} else {
		for (int i = (int)ax; i < rank; i++)
			len *= x->shape.dims[i];
	}
	if (!(mx = ocl_in(r, 0, &rc)) || !(my = ocl_out(r, 0, &rc)))
		return rc;
	if (!len)
		return 0;
	o = (cl_int)outer;
	l = (cl_int)len;
	in = (cl_int)inner;
	if (inner == 1 && len >= 32)
		return ocl_softmax_rows(r, mx, my, outer, len, lg, NULL, NULL, 0, 0.0f);
	ocl_kid k = K_SOFTMAX_F32;
	if ((rc = OCL_ARG(r, k, 0, mx)) || (rc = OCL_ARG(r, k, 1, my)) ||
	    (rc = OCL_ARG(r, k, 2, o)) || (rc = OCL_ARG(r, k, 3, l)) ||
	    (rc = OCL_ARG(r, k, 4, in)) || (rc = OCL_ARG(r, k, 5, lg)))
		return rc;
	return ocl_launch(r, k, (size_t)(outer * inner));
}

int ocl_op_softmax_1(ocl_run *r)
{
	return softmax(r, false);
}

int ocl_op_softmax_13(ocl_run *r)
{
	return softmax(r, true);
}

/* ---- LayerNormalization ---- */

int ocl_op_layernorm(ocl_run *r)
{
	mfs_op_ctx *ctx = r->ctx;
	const mfs_tensor *x = ctx->in[0], *sc = ctx->n_in > 1 ? ctx->in[1] : NULL;
	const mfs_tensor *bi = ctx->n_in > 2 ? ctx->in[2] : NULL;
	int rank = x->shape.rank;
	int64_t ax = onnx_attr_int(ctx->node, "axis", -1), rows = 1, len = 1, sn, bn = 1;
	float eps = onnx_attr_float(ctx->node, "epsilon", 1e-5f);
	cl_mem mx, ms, mb, my;
	cl_int a, b, c, d, hb = bi != NULL;
	size_t local;
	int rc;

	if (x->dtype != MFS_DT_FLOAT || !sc || sc->dtype != MFS_DT_FLOAT ||
	    (bi && bi->dtype != MFS_DT_FLOAT) || !ocl_fits_int(mfs_shape_numel(&x->shape)))
		return OCL_HOST;
	for (int i = 1; i < ctx->n_out; i++)
		if (ctx->out[i])
			return OCL_HOST;
	if (ax < 0)
		ax += rank;
	if (ax < 0 || ax >= rank)
		return OCL_HOST;
	for (int i = 0; i < ax; i++)
		rows *= x->shape.dims[i];
	for (int i = (int)ax; i < rank; i++)
		len *= x->shape.dims[i];
	sn = mfs_shape_numel(&sc->shape);
	if (bi)
		bn = mfs_shape_numel(&bi->shape);
	if ((sn != len && sn != 1) || (bn != len && bn != 1) || !len)
		return OCL_HOST;
	if (!(mx = ocl_in(r, 0, &rc)) || !(ms = ocl_in(r, 1, &rc)))
		return rc;
	mb = ms;
	if (bi && !(mb = ocl_in(r, 2, &rc)))
		return rc;
	if (!(my = ocl_out(r, 0, &rc)))
		return rc;
	local = row_group(r, len);
	a = (cl_int)rows;
	b = (cl_int)len;
	c = (cl_int)sn;
	d = (cl_int)bn;
	ocl_kid k = K_LAYERNORM_F32;
	if ((rc = OCL_ARG(r, k, 0, mx)) || (rc = OCL_ARG(r, k, 1, ms)) ||
	    (rc = OCL_ARG(r, k, 2, mb)) || (rc = OCL_ARG(r, k, 3, my)) ||
	    (rc = OCL_ARG(r, k, 4, a)) || (rc = OCL_ARG(r, k, 5, b)) ||
	    (rc = OCL_ARG(r, k, 6, c)) || (rc = OCL_ARG(r, k, 7, d)) ||
	    (rc = OCL_ARG(r, k, 8, hb)) || (rc = OCL_ARG(r, k, 9, eps)) ||
	    (rc = ocl_arg(r, k, 10, local * sizeof(float), NULL)))
		return rc;
	return ocl_launch_groups(r, k, (size_t)rows, local);
}

/* ---- ReduceMean / ReduceSum (float) ---- */

/* The reduced axes as a bit mask: from the `axes` input (axes_input) or
 * attribute; 0 when read, OCL_HOST for a case left to the CPU, else the
 * error. */
static int reduce_mask(ocl_run *r, bool axes_input, int rank, unsigned *mask)
{
	mfs_op_ctx *ctx = r->ctx;
	int64_t axes[MFS_MAX_RANK];
	int n = 0, rc;

	*mask = 0;
	if (axes_input) {
		if (ctx->n_in > 1 && ctx->in[1]) {
			if (!ocl_in_host(r, 1, &rc))
				return rc;
			if ((rc = oc_read_ints(ctx, 1, axes, MFS_MAX_RANK, &n)))
				return rc > 0 ? OCL_HOST : rc;
		}
	} else {
		const int64_t *v;
		size_t c = onnx_attr_ints(ctx->node, "axes", &v);
		if (c > MFS_MAX_RANK)
			return OCL_HOST;
		for (size_t i = 0; i < c; i++)
			axes[i] = v[i];
		n = (int)c;
	}
	if (!n) {
		if (axes_input && onnx_attr_int(ctx->node, "noop_with_empty_axes", 0))
			return OCL_HOST;   /* a copy: rare, let the CPU do it */
		*mask = rank ? (1u << rank) - 1 : 0;
		return 0;
	}
	for (int i = 0; i < n; i++) {
		int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
		if (a < 0 || a >= rank)
			return OCL_HOST;
		*mask |= 1u << a;
	}
	return 0;
}

/* ReduceMean (op 1) or ReduceSum (op 0) over the axes of reduce_mask. */
static int reduce(ocl_run *r, bool axes_input)
{
	mfs_op_ctx *ctx = r->ctx;
	const mfs_tensor *x = ctx->in[0];
	int rank = x->shape.rank, rc;
	int64_t st[MFS_MAX_RANK], count = 1, nout;
	unsigned mask;
	ocl_rd p;
	cl_int op = !strcmp(ctx->node->op_type, "ReduceMean");
	cl_mem mx, my;

	if (x->dtype != MFS_DT_FLOAT || rank > OCL_MAXR || !ocl_fits_int(mfs_shape_numel(&x->shape)))
		return OCL_HOST;
	if ((rc = reduce_mask(r, axes_input, rank, &mask)))
		return rc;
	memset(&p, 0, sizeof(p));
	{
		int64_t s = 1;
		for (int k = rank - 1; k >= 0; k--) {
			st[k] = s;
			s *= x->shape.dims[k];
		}
	}
	for (int k = 0; k < rank; k++) {
		if (mask & (1u << k)) {
			p.rdims[p.rr] = (cl_int)x->shape.dims[k];
			p.rst[p.rr++] = (cl_int)st[k];
			count *= x->shape.dims[k];
		} else {
			p.kdims[p.kr] = (cl_int)x->shape.dims[k];
			p.kst[p.kr++] = (cl_int)st[k];
		}
	}
	nout = mfs_shape_numel(&ctx->out[0]->shape);
	if (!count || !ocl_fits_int(count))
		return OCL_HOST;   /* empty reductions: the CPU's rules */
	p.n = (cl_int)nout;
	p.count = (cl_int)count;
	if (!(mx = ocl_in(r, 0, &rc)) || !(my = ocl_out(r, 0, &rc)))
		return rc;
	/* the trailing dims (LayerNorm's mean at opset < 17): rows */
	if (count >= 32 && mask == ((1u << p.rr) - 1) << (rank - p.rr)) {
		size_t local = row_group(r, count);
		cl_int len = p.count;
		if ((rc = OCL_ARG(r, K_REDUCE_ROWS_F32, 0, mx)) ||
		    (rc = OCL_ARG(r, K_REDUCE_ROWS_F32, 1, my)) ||
		    (rc = OCL_ARG(r, K_REDUCE_ROWS_F32, 2, len)) ||
		    (rc = OCL_ARG(r, K_REDUCE_ROWS_F32, 3, op)) ||
		    (rc = ocl_arg(r, K_REDUCE_ROWS_F32, 4, local * sizeof(float), NULL)))
			return rc;
		return ocl_launch_groups(r, K_REDUCE_ROWS_F32, (size_t)nout, local);
	}
	if ((rc = OCL_ARG(r, K_REDUCE_F32, 0, mx)) || (rc = OCL_ARG(r, K_REDUCE_F32, 1, my)) ||
	    (rc = OCL_ARG(r, K_REDUCE_F32, 2, p)) || (rc = OCL_ARG(r, K_REDUCE_F32, 3, op)))
		return rc;
	return ocl_launch(r, K_REDUCE_F32, (size_t)nout);
}

/* ReduceMean before opset 18, ReduceSum before 13: axes an attribute. */
int ocl_op_reduce_axes_attr(ocl_run *r)
{
	return reduce(r, false);
}

/* ReduceMean from opset 18, ReduceSum from 13: axes an optional input. */
int ocl_op_reduce_axes_input(ocl_run *r)
{
	return reduce(r, true);
}

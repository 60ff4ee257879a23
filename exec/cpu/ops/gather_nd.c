/* GatherND (batch_dims from 12) and ScatterND (reduction from 16): the
 * last dim of `indices` addresses a slice of `data`; slices are copied
 * whole.  Every index tuple is checked before any write. */
#include <string.h>

#include "op_common.h"

/* The geometry both operators share. */
typedef struct nd_plan {
	int k;              /* index tuple length */
	int64_t batches;    /* prod(data[:b]) */
	int64_t tuples;     /* tuples per batch */
	int64_t slice;      /* elements per slice: prod(data[b+k:]) */
	int64_t batch_sz;   /* elements per data batch */
	int64_t dims[MFS_MAX_RANK], st[MFS_MAX_RANK];  /* indexed dims, strides */
} nd_plan;

static int nd_make(mfs_op_ctx *ctx, const mfs_tensor *data, const mfs_tensor *idx,
		   int b, nd_plan *p)
{
	int r = data->shape.rank, q = idx->shape.rank;

	if (!oc_is_int(idx->dtype))
		return mfs_op_fail(ctx, EINVAL, "indices must be integers");
	if (q < 1 || r < 1 || b < 0 || b >= q || b >= r)
		return mfs_op_fail(ctx, EINVAL, "bad ranks (data %d, indices %d, batch_dims %d)",
				   r, q, b);
	p->k = (int)idx->shape.dims[q - 1];
	if (idx->shape.dims[q - 1] < 1 || p->k > r - b)
		return mfs_op_fail(ctx, EINVAL, "index tuples of %lld for data rank %d",
				   (long long)idx->shape.dims[q - 1], r);
	p->batches = 1;
	for (int i = 0; i < b; i++) {
		if (idx->shape.dims[i] != data->shape.dims[i])
			return mfs_op_fail(ctx, EINVAL, "batch dim %d differs", i);
		p->batches *= data->shape.dims[i];
	}
	p->tuples = 1;
	for (int i = b; i < q - 1; i++)
		p->tuples *= idx->shape.dims[i];
	p->slice = 1;
	for (int i = b + p->k; i < r; i++)
		p->slice *= data->shape.dims[i];
	p->batch_sz = p->slice;
	for (int i = b + p->k - 1; i >= b; i--) {
		p->dims[i - b] = data->shape.dims[i];
		p->st[i - b] = p->batch_sz;
		p->batch_sz *= data->shape.dims[i];
	}
	return 0;
}

/* Element offset in data of tuple t of batch bt, or -1 if out of range. */
static int64_t nd_offset(const nd_plan *p, const mfs_tensor *idx, int64_t bt, int64_t t)
{
	int64_t off = bt * p->batch_sz, base = (bt * p->tuples + t) * p->k;
	for (int j = 0; j < p->k; j++) {
		int64_t v = mfs_tensor_get_i64(idx, base + j);
		if (v < -p->dims[j] || v >= p->dims[j])
			return -1;
		off += (v < 0 ? v + p->dims[j] : v) * p->st[j];
	}
	return off;
}

static int nd_check(mfs_op_ctx *ctx, const nd_plan *p, const mfs_tensor *idx)
{
	for (int64_t bt = 0; bt < p->batches; bt++)
		for (int64_t t = 0; t < p->tuples; t++)
			if (nd_offset(p, idx, bt, t) < 0)
				return mfs_op_fail(ctx, EINVAL, "index tuple %lld is out of range",
						   (long long)(bt * p->tuples + t));
	return 0;
}

static int gnd_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 2, true);
	const mfs_tensor *data = ctx->in[0], *idx;
	int b = (int)onnx_attr_int(ctx->node, "batch_dims", 0), rc;
	nd_plan p;
	mfs_shape out = { 0 };

	if ((rc = oc_need(ctx, 1)))
		return rc;
	idx = ctx->in[1];
	if ((rc = nd_make(ctx, data, idx, b, &p)))
		return rc;
	if (idx->shape.rank - 1 + data->shape.rank - b - p.k > MFS_MAX_RANK)
		return mfs_op_fail(ctx, EINVAL, "output rank is too large");
	for (int i = 0; i < idx->shape.rank - 1; i++)
		out.dims[out.rank++] = idx->shape.dims[i];
	for (int i = b + p.k; i < data->shape.rank; i++)
		out.dims[out.rank++] = data->shape.dims[i];
	if ((rc = oc_check_shape(ctx, &out)))
		return rc;
	oc_set_out(ctx, 0, data->dtype, &out);
	return 0;
}

static int gnd_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *data = ctx->in[0], *idx = ctx->in[1];
	char *dst = ctx->out[0]->data;
	nd_plan p;
	size_t es;
	int rc;

	if ((rc = nd_make(ctx, data, idx, (int)onnx_attr_int(ctx->node, "batch_dims", 0), &p)) ||
	    (rc = oc_elem_size(ctx, data, &es)) || (rc = nd_check(ctx, &p, idx)))
		return rc;
	if (!p.slice)
		return 0;
	for (int64_t bt = 0; bt < p.batches; bt++)
		for (int64_t t = 0; t < p.tuples; t++) {
			int64_t off = nd_offset(&p, idx, bt, t);
			memcpy(dst + (bt * p.tuples + t) * p.slice * (int64_t)es,
			       (const char *)data->data + off * (int64_t)es,
			       (size_t)p.slice * es);
		}
	return 0;
}

static int snd_check(mfs_op_ctx *ctx, nd_plan *p, int *red)
{
	const mfs_tensor *data = ctx->in[0], *idx = ctx->in[1], *upd = ctx->in[2];
	mfs_shape want = { 0 };
	int rc;

	if ((rc = nd_make(ctx, data, idx, 0, p)) || (rc = oc_scatter_reduction(ctx, red)))
		return rc;
	for (int i = 0; i < idx->shape.rank - 1; i++)
		want.dims[want.rank++] = idx->shape.dims[i];
	for (int i = p->k; i < data->shape.rank; i++) {
		if (want.rank >= MFS_MAX_RANK)
			return mfs_op_fail(ctx, EINVAL, "updates rank is too large");
		want.dims[want.rank++] = data->shape.dims[i];
	}
	if (!mfs_shape_equal(&want, &upd->shape) || upd->dtype != data->dtype)
		return mfs_op_fail(ctx, EINVAL, "updates do not match data and indices");
	if (*red != OC_RED_NONE)
		return oc_need_numeric(ctx, data, true);
	return 0;
}

static int snd_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 3, true);
	nd_plan p;
	int red, rc;

	if ((rc = oc_need(ctx, 1)) || (rc = oc_need(ctx, 2)) || (rc = snd_check(ctx, &p, &red)))
		return rc;
	oc_set_out(ctx, 0, ctx->in[0]->dtype, &ctx->in[0]->shape);
	return 0;
}

static int snd_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *data = ctx->in[0], *idx = ctx->in[1], *upd = ctx->in[2];
	mfs_tensor *out = ctx->out[0];
	nd_plan p;
	size_t es;
	int red, rc;

	if ((rc = snd_check(ctx, &p, &red)) || (rc = oc_elem_size(ctx, data, &es)) ||
	    (rc = nd_check(ctx, &p, idx)))
		return rc;
	if (out->data != data->data && data->nbytes)
		memcpy(out->data, data->data, data->nbytes);
	for (int64_t t = 0; p.slice && t < p.tuples; t++) {
		int64_t off = nd_offset(&p, idx, 0, t);
		if (red == OC_RED_NONE) {
			memcpy((char *)out->data + off * (int64_t)es,
			       (const char *)upd->data + t * p.slice * (int64_t)es,
			       (size_t)p.slice * es);
			continue;
		}
		for (int64_t j = 0; j < p.slice; j++)
			oc_reduce_into(red, data->dtype, out->data, off + j, upd->data,
				       t * p.slice + j);
	}
	return 0;
}

MFS_OP(GatherND, 11, .infer = gnd_infer, .run = gnd_run);
MFS_OP(ScatterND, 11, .infer = snd_infer, .run = snd_run);

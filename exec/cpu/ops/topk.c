/* TopK: the k largest (or smallest, opset 11) values along an axis with
 * their int64 indices, sorted; ties keep the lower index first.  k is an
 * attribute in opset 1 and an input from 10.  Values are copied as bytes,
 * compared as double. */
#include <stdlib.h>
#include <string.h>

#include "op_common.h"

typedef struct kv {
	double v;
	int64_t i;
} kv;

static int cmp_largest(const void *a, const void *b)
{
	const kv *x = a, *y = b;
	if (x->v != y->v)
		return x->v > y->v ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

static int cmp_smallest(const void *a, const void *b)
{
	const kv *x = a, *y = b;
	if (x->v != y->v)
		return x->v < y->v ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

static int topk_geom(mfs_op_ctx *ctx, bool k_input, int64_t *k, int *axis)
{
	const mfs_tensor *in = ctx->in[0];
	int rc;

	if ((rc = oc_need_numeric(ctx, in, true)) ||
	    (rc = oc_axis(ctx, onnx_attr_int(ctx->node, "axis", -1), in->shape.rank, axis)))
		return rc;
	if (k_input) {
		int64_t v[1];
		int n = 0;
		if ((rc = oc_read_ints(ctx, 1, v, 1, &n)))
			return rc;
		if (n != 1)
			return mfs_op_fail(ctx, EINVAL, "K must hold one value");
		*k = v[0];
	} else {
		*k = onnx_attr_int(ctx->node, "k", -1);
	}
	if (*k < 0 || *k > in->shape.dims[*axis])
		return mfs_op_fail(ctx, EINVAL, "k = %lld for an axis of %lld",
				   (long long)*k, (long long)in->shape.dims[*axis]);
	return 0;
}

static int topk_infer(mfs_op_ctx *ctx, bool k_input)
{
	OC_CHECK_IO(ctx, k_input ? 2 : 1, false);
	int64_t k;
	int axis, rc;
	mfs_shape s = ctx->in[0]->shape;

	if ((rc = topk_geom(ctx, k_input, &k, &axis)))
		return rc;
	s.dims[axis] = k;
	oc_set_out(ctx, 0, ctx->in[0]->dtype, &s);
	oc_set_out(ctx, 1, MFS_DT_INT64, &s);
	return 0;
}

static int topk_run(mfs_op_ctx *ctx, bool k_input)
{
	const mfs_tensor *in = ctx->in[0];
	mfs_tensor *vo = oc_out(ctx, 0), *io = oc_out(ctx, 1);
	int64_t k, outer, n, inner;
	int axis, rc;
	bool largest = ctx->opset < 11 || onnx_attr_int(ctx->node, "largest", 1) != 0;
	size_t es = mfs_dtype_size(in->dtype);
	kv *buf;

	if ((rc = topk_geom(ctx, k_input, &k, &axis)))
		return rc < 0 ? rc : mfs_op_fail(ctx, EINVAL, "K unknown at run");
	oc_split_at(&in->shape, axis, &outer, &n, &inner);
	if (!k || !outer || !inner)
		return 0;
	buf = malloc((size_t)n * sizeof(*buf));
	if (!buf)
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	for (int64_t o = 0; o < outer; o++)
		for (int64_t c = 0; c < inner; c++) {
			int64_t base = o * n * inner + c;
			for (int64_t j = 0; j < n; j++) {
				buf[j].v = oc_load(in->dtype, in->data, base + j * inner);
				buf[j].i = j;
			}
			qsort(buf, (size_t)n, sizeof(*buf), largest ? cmp_largest : cmp_smallest);
			for (int64_t j = 0; j < k; j++) {
				int64_t d = o * k * inner + j * inner + c;
				if (vo)
					memcpy((char *)vo->data + d * (int64_t)es,
					       (const char *)in->data +
					       (base + buf[j].i * inner) * (int64_t)es, es);
				if (io)
					((int64_t *)io->data)[d] = buf[j].i;
			}
		}
	free(buf);
	return 0;
}

static int topk1_infer(mfs_op_ctx *ctx) { return topk_infer(ctx, false); }
static int topk10_infer(mfs_op_ctx *ctx) { return topk_infer(ctx, true); }
static int topk1_run(mfs_op_ctx *ctx) { return topk_run(ctx, false); }
static int topk10_run(mfs_op_ctx *ctx) { return topk_run(ctx, true); }

MFS_OP(TopK, 1, .infer = topk1_infer, .run = topk1_run);
MFS_OP(TopK, 10, .infer = topk10_infer, .run = topk10_run);

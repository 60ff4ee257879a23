/* SplitToSequence and ConcatFromSequence (opset 11): between one tensor
 * and a sequence of its slices along an axis.  Any dtype; the copies are
 * row blocks (memcpy of the contiguous part after the axis).
 */
#include <string.h>

#include "container.h"
#include "op_common.h"

/* A sequence of more tensors than this is refused: each is a separate
 * allocation, and no model needs more. */
#define SEQ_MAX_ITEMS (1 << 20)

typedef struct split_plan {
	int axis;
	int n;                  /* tensors in the sequence */
	int64_t chunk;          /* each one's length, the last one's at most */
	const mfs_tensor *lens; /* or their lengths (a 1-D split input) */
	bool squeeze;           /* no split input and keepdims 0 */
} split_plan;

static int64_t part_len(const split_plan *p, int64_t dim, int i)
{
	int64_t left;

	if (p->lens)
		return mfs_tensor_get_i64(p->lens, i);
	left = dim - p->chunk * i;
	return left < p->chunk ? left : p->chunk;
}

static int plan_split(mfs_op_ctx *ctx, const mfs_tensor *x, split_plan *p)
{
	const mfs_tensor *s = ctx->n_in > 1 ? ctx->in[1] : NULL;
	int64_t dim, sum = 0, n;
	int rc;

	memset(p, 0, sizeof(*p));
	if ((rc = oc_axis(ctx, onnx_attr_int(ctx->node, "axis", 0), x->shape.rank,
			  &p->axis)))
		return rc;
	dim = x->shape.dims[p->axis];
	if (!s) {
		p->chunk = 1;
		p->squeeze = onnx_attr_int(ctx->node, "keepdims", 1) == 0;
		n = dim;
	} else {
		if (s->kind != MFS_KIND_TENSOR ||
		    (s->dtype != MFS_DT_INT32 && s->dtype != MFS_DT_INT64) ||
		    s->shape.rank > 1)
			return mfs_op_fail(ctx, EINVAL,
					   "split must be an int32 or int64 scalar or 1-D tensor");
		if (!s->data && mfs_shape_numel(&s->shape))
			return MFS_SHAPE_DEPENDS_ON_DATA;
		if (s->shape.rank == 0) {
			p->chunk = mfs_tensor_get_i64(s, 0);
			if (p->chunk <= 0)
				return mfs_op_fail(ctx, EINVAL,
						   "split %lld must be positive",
						   (long long)p->chunk);
			n = (dim + p->chunk - 1) / p->chunk;
		} else {
			p->lens = s;
			n = s->shape.dims[0];
			for (int64_t i = 0; i < n; i++) {
				int64_t l = mfs_tensor_get_i64(s, i);
				if (l < 0 || l > dim)
					return mfs_op_fail(ctx, EINVAL,
							   "split length %lld is invalid for an axis of %lld",
							   (long long)l, (long long)dim);
				sum += l;
			}
			if (sum != dim)
				return mfs_op_fail(ctx, EINVAL,
						   "split lengths add up to %lld, the axis is %lld",
						   (long long)sum, (long long)dim);
		}
	}
	if (n > SEQ_MAX_ITEMS)
		return mfs_op_fail(ctx, EINVAL, "%lld tensors in a sequence is more than the %d supported",
				   (long long)n, SEQ_MAX_ITEMS);
	p->n = (int)n;
	return 0;
}

static int split_infer(mfs_op_ctx *ctx)
{
	const mfs_tensor *x;
	split_plan p;
	int rc;

	if ((rc = ct_tensor_in(ctx, 0, &x)))
		return rc;
	if (x->shape.rank < 1)
		return mfs_op_fail(ctx, EINVAL, "input 0 is a scalar: nothing to split");
	if ((rc = plan_split(ctx, x, &p)) < 0)
		return rc;
	ct_set_out(ctx, MFS_KIND_SEQUENCE, MFS_KIND_TENSOR, x->dtype);
	return 0;
}

/* Rows before the axis, and bytes of one step along it. */
static void block_dims(const mfs_shape *s, int axis, size_t es,
		       int64_t *outer, size_t *inner)
{
	*outer = 1;
	*inner = es;
	for (int d = 0; d < axis; d++)
		*outer *= s->dims[d];
	for (int d = axis + 1; d < s->rank; d++)
		*inner *= (size_t)s->dims[d];
}

static int split_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];
	mfs_tensor *o = ctx->out[0];
	size_t es = mfs_dtype_size(x->dtype), inner;
	int64_t outer, dim, off = 0;
	split_plan p;
	int rc = plan_split(ctx, x, &p);

	if (rc)
		return rc < 0 ? rc : -EIO;
	dim = x->shape.dims[p.axis];
	block_dims(&x->shape, p.axis, es, &outer, &inner);
	if ((rc = mfs_container_init(o, MFS_KIND_SEQUENCE, MFS_KIND_TENSOR,
				     x->dtype, p.n, ctx->err)))
		return rc;
	for (int i = 0; i < p.n; i++) {
		mfs_tensor *t = &o->items[i];
		mfs_shape s = x->shape;
		int64_t len = part_len(&p, dim, i);
		size_t row = (size_t)len * inner;

		s.dims[p.axis] = len;
		if ((rc = mfs_tensor_alloc(t, x->dtype, &s, ctx->err)))
			return rc;
		for (int64_t r = 0; row && r < outer; r++)
			memcpy((char *)t->data + (size_t)r * row,
			       (const char *)x->data + ((size_t)r * (size_t)dim + (size_t)off) * inner,
			       row);
		if (p.squeeze) {
			memmove(&t->shape.dims[p.axis], &t->shape.dims[p.axis + 1],
				(size_t)(s.rank - p.axis - 1) * sizeof(int64_t));
			t->shape.rank--;
		}
		off += len;
	}
	return 0;
}

/* The output shape of ConcatFromSequence and its axis: the items'
 * shape with the axis summed, or (new_axis 1) with a new axis of the
 * sequence's length inserted. */
static int concat_shape(mfs_op_ctx *ctx, const mfs_tensor *seq, mfs_shape *out,
			int *axis)
{
	const onnx_attr *a = onnx_node_attr(ctx->node, "axis");
	bool stack = onnx_attr_int(ctx->node, "new_axis", 0) == 1;
	const mfs_shape *s0;
	int rank, rc;

	if (!a)
		return mfs_op_fail(ctx, EINVAL, "attribute 'axis' is required");
	if (!seq->n_items)
		return mfs_op_fail(ctx, EINVAL, "the sequence is empty: nothing to concatenate");
	s0 = &seq->items[0].shape;
	rank = s0->rank + stack;
	if (rank > MFS_MAX_RANK || rank < 1)
		return mfs_op_fail(ctx, EINVAL, "tensors of rank %d cannot be concatenated",
				   s0->rank);
	if ((rc = oc_axis(ctx, onnx_attr_int(ctx->node, "axis", 0), rank, axis)))
		return rc;
	*out = *s0;
	if (stack) {
		memmove(&out->dims[*axis + 1], &out->dims[*axis],
			(size_t)(s0->rank - *axis) * sizeof(int64_t));
		out->rank = rank;
		out->dims[*axis] = 0;
	}
	for (int i = 0; i < seq->n_items; i++) {
		const mfs_shape *si = &seq->items[i].shape;
		bool same = si->rank == s0->rank;
		for (int d = 0; same && d < si->rank; d++)
			same = si->dims[d] == s0->dims[d] || (!stack && d == *axis);
		if (!same) {
			char a0[160], ai[160];
			return mfs_op_fail(ctx, EINVAL, "tensor %d has shape %s, tensor 0 %s",
					   i, mfs_shape_format(si, ai, sizeof(ai)),
					   mfs_shape_format(s0, a0, sizeof(a0)));
		}
		if (i)
			out->dims[*axis] += stack ? 1 : si->dims[*axis];
		else
			out->dims[*axis] = stack ? 1 : si->dims[*axis];
	}
	return oc_check_shape(ctx, out);
}

static int concat_infer(mfs_op_ctx *ctx)
{
	const mfs_tensor *seq;
	mfs_shape s;
	int axis, rc;

	if ((rc = ct_sequence_in(ctx, 0, &seq)) ||
	    (rc = concat_shape(ctx, seq, &s, &axis)))
		return rc;
	ctx->out[0]->dtype = seq->dtype;
	ctx->out[0]->shape = s;
	return 0;
}

static int concat_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *seq = ctx->in[0];
	mfs_tensor *o = ctx->out[0];
	size_t es = mfs_dtype_size(seq->dtype), inner;
	bool stack = onnx_attr_int(ctx->node, "new_axis", 0) == 1;
	int64_t outer, off = 0, dim;
	int axis, rc;

	if ((rc = concat_shape(ctx, seq, &o->shape, &axis)))
		return rc;
	dim = o->shape.dims[axis];
	block_dims(&o->shape, axis, es, &outer, &inner);
	for (int i = 0; i < seq->n_items; i++) {
		const mfs_tensor *t = &seq->items[i];
		int64_t len = stack ? 1 : t->shape.dims[axis];
		size_t row = (size_t)len * inner;

		for (int64_t r = 0; row && r < outer; r++)
			memcpy((char *)o->data + ((size_t)r * (size_t)dim + (size_t)off) * inner,
			       (const char *)t->data + (size_t)r * row, row);
		off += len;
	}
	return 0;
}

MFS_OP(SplitToSequence, 11, .flags = MFS_OP_CONTAINERS, .infer = split_infer, .run = split_run);
MFS_OP(ConcatFromSequence, 11, .flags = MFS_OP_CONTAINERS, .infer = concat_infer, .run = concat_run);

/* Slice: starts/ends/axes as attributes (opset 1) or inputs with steps
 * (10+; negative steps walk backwards).  Bounds are clamped as ONNX says,
 * so INT64_MAX/INT64_MIN "to the end" markers work. */
#include "op_common.h"

typedef struct slice_plan {
	mfs_shape out;
	int64_t start[MFS_MAX_RANK], step[MFS_MAX_RANK];
} slice_plan;

static int read_list(mfs_op_ctx *ctx, bool attrs, const char *name, int idx,
		     int64_t *v, int *n)
{
	if (attrs)
		return oc_attr_ints(ctx, name, v, MFS_MAX_RANK, n);
	*n = -1;
	return oc_in(ctx, idx) ? oc_read_ints(ctx, idx, v, MFS_MAX_RANK, n) : 0;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static int slice_plan_make(mfs_op_ctx *ctx, bool attrs, slice_plan *p)
{
	const mfs_tensor *in = ctx->in[0];
	int64_t starts[MFS_MAX_RANK], ends[MFS_MAX_RANK], axes[MFS_MAX_RANK],
		steps[MFS_MAX_RANK];
	int ns, ne, na, nst, rc, ax[MFS_MAX_RANK];
	unsigned mask;

	if (!attrs && ((rc = oc_need(ctx, 1)) || (rc = oc_need(ctx, 2))))
		return rc;
	if ((rc = read_list(ctx, attrs, "starts", 1, starts, &ns)) ||
	    (rc = read_list(ctx, attrs, "ends", 2, ends, &ne)) ||
	    (rc = read_list(ctx, attrs, "axes", 3, axes, &na)) ||
	    (rc = attrs ? 0 : read_list(ctx, false, NULL, 4, steps, &nst)))
		return rc;
	if (attrs)
		nst = -1;
	if (ns < 0 || ns != ne)
		return mfs_op_fail(ctx, EINVAL, "starts and ends differ in length");
	if (na < 0) {
		if (ns > in->shape.rank)
			return mfs_op_fail(ctx, EINVAL, "more starts than dims");
		for (int i = 0; i < ns; i++)
			axes[i] = i;
	} else if (na != ns) {
		return mfs_op_fail(ctx, EINVAL, "axes and starts differ in length");
	}
	if (nst >= 0 && nst != ns)
		return mfs_op_fail(ctx, EINVAL, "steps and starts differ in length");
	if ((rc = oc_axes_mask(ctx, axes, ns, in->shape.rank, &mask, ax)))
		return rc;

	p->out = in->shape;
	for (int i = 0; i < in->shape.rank; i++) {
		p->start[i] = 0;
		p->step[i] = 1;
	}
	for (int i = 0; i < ns; i++) {
		int a = ax[i];
		int64_t d = in->shape.dims[a], s = starts[i], e = ends[i];
		/* |step| beyond the dim behaves like dim+1 and keeps the
		 * arithmetic below away from overflow. */
		int64_t st = nst >= 0 ? clamp64(steps[i], -(d + 1), d + 1) : 1, cnt;
		if (nst >= 0 && steps[i] == 0)
			return mfs_op_fail(ctx, EINVAL, "step %d is 0", i);
		if (st == 0)
			st = 1;  /* d == 0 and a huge step: nothing to take anyway */
		if (s < 0)
			s = s < -d ? -d - 1 : s + d;
		if (e < 0)
			e = e < -d ? -d - 1 : e + d;
		if (st > 0) {
			s = clamp64(s, 0, d);
			e = clamp64(e, 0, d);
			cnt = e > s ? (e - s + st - 1) / st : 0;
		} else if (d == 0) {
			cnt = 0;  /* [0, d - 1] is empty: nothing to walk back over */
		} else {
			s = clamp64(s, 0, d - 1);
			e = clamp64(e, -1, d - 1);
			cnt = s > e ? (s - e + (-st) - 1) / (-st) : 0;
		}
		p->out.dims[a] = cnt;
		p->start[a] = cnt ? s : 0;
		p->step[a] = st;
	}
	return 0;
}

static int slice_infer_common(mfs_op_ctx *ctx, bool attrs)
{
	OC_CHECK_IO(ctx, attrs ? 1 : 3, true);
	slice_plan p;
	int rc = slice_plan_make(ctx, attrs, &p);
	if (rc)
		return rc;
	oc_set_out(ctx, 0, ctx->in[0]->dtype, &p.out);
	return 0;
}

static int slice_run_common(mfs_op_ctx *ctx, bool attrs)
{
	const mfs_tensor *in = ctx->in[0];
	slice_plan p;
	int64_t ist[MFS_MAX_RANK], st[MFS_MAX_RANK], off = 0;
	size_t es;
	int rc;

	rc = slice_plan_make(ctx, attrs, &p);
	if (rc > 0)
		return mfs_op_fail(ctx, EINVAL, "slice bounds unknown at run");
	if (rc || (rc = oc_elem_size(ctx, in, &es)))
		return rc;
	oc_strides(&in->shape, ist);
	for (int i = 0; i < in->shape.rank; i++) {
		off += p.start[i] * ist[i];
		st[i] = p.step[i] * ist[i];
	}
	oc_copy_view(ctx->out[0]->data, in->data, es, p.out.rank, p.out.dims, st, off);
	return 0;
}

static int slice1_infer(mfs_op_ctx *ctx) { return slice_infer_common(ctx, true); }
static int slice10_infer(mfs_op_ctx *ctx) { return slice_infer_common(ctx, false); }
static int slice1_run(mfs_op_ctx *ctx) { return slice_run_common(ctx, true); }
static int slice10_run(mfs_op_ctx *ctx) { return slice_run_common(ctx, false); }

MFS_OP(Slice, 1, .flags = MFS_OP_STRINGS, .infer = slice1_infer, .run = slice1_run);
MFS_OP(Slice, 10, .flags = MFS_OP_STRINGS, .infer = slice10_infer, .run = slice10_run);

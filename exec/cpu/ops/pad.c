/* Pad: pads as an attribute with a float `value` (opset 2) or as inputs
 * with constant_value (11) and optional axes (18); modes constant, reflect,
 * edge, wrap (19).  Negative pads crop.  Dtype-agnostic: the constant is
 * converted once to the element's bytes.  CenterCropPad (18) is a Pad with
 * zeros whose pads centre the input in the requested shape. */
#include <string.h>

#include "op_common.h"

typedef enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP } pad_mode;

typedef struct pad_plan {
	pad_mode mode;
	int64_t begin[MFS_MAX_RANK];
	mfs_shape out;
} pad_plan;

static int pad_plan_make(mfs_op_ctx *ctx, bool attrs, pad_plan *p)
{
	const mfs_tensor *in = ctx->in[0];
	int r = in->shape.rank, n = 0, rc;
	int64_t pads[2 * MFS_MAX_RANK], axes[MFS_MAX_RANK], end[MFS_MAX_RANK] = { 0 };
	const char *mode = onnx_attr_string(ctx->node, "mode", "constant");
	static const char *modes[] = { "constant", "reflect", "edge", "wrap" };
	int nax = r, ax[MFS_MAX_RANK];
	unsigned mask;

	p->mode = (pad_mode)-1;
	for (int i = 0; i < 4; i++)
		if (strcmp(mode, modes[i]) == 0)
			p->mode = (pad_mode)i;
	if ((int)p->mode < 0)
		return mfs_op_fail(ctx, EINVAL, "unknown mode '%s'", mode);
	if (attrs) {
		if ((rc = oc_attr_ints(ctx, "pads", pads, 2 * MFS_MAX_RANK, &n)))
			return rc;
	} else if ((rc = oc_need(ctx, 1)) ||
		   (rc = oc_read_ints(ctx, 1, pads, 2 * MFS_MAX_RANK, &n))) {
		return rc;
	}
	if (!attrs && oc_in(ctx, 3)) {
		if ((rc = oc_read_ints(ctx, 3, axes, MFS_MAX_RANK, &nax)))
			return rc;
		if ((rc = oc_axes_mask(ctx, axes, nax, r, &mask, ax)))
			return rc;
	} else {
		for (int i = 0; i < r; i++)
			ax[i] = i;
	}
	if (n != 2 * nax)
		return mfs_op_fail(ctx, EINVAL, "%d pads for %d axes", n, nax);
	memset(p->begin, 0, sizeof(p->begin));
	for (int i = 0; i < nax; i++) {
		if (pads[i] < -OC_MAX_NUMEL || pads[i] > OC_MAX_NUMEL ||
		    pads[i + nax] < -OC_MAX_NUMEL || pads[i + nax] > OC_MAX_NUMEL)
			return mfs_op_fail(ctx, EINVAL, "pad value out of range");
		p->begin[ax[i]] = pads[i];
		end[ax[i]] = pads[i + nax];
	}
	p->out = in->shape;
	for (int i = 0; i < r; i++) {
		int64_t d = in->shape.dims[i];
		p->out.dims[i] = d + p->begin[i] + end[i];
		if (p->out.dims[i] < 0)
			return mfs_op_fail(ctx, EINVAL, "pads crop axis %d below zero", i);
		if (p->mode != PAD_CONSTANT && d == 0 && p->out.dims[i] > 0)
			return mfs_op_fail(ctx, EINVAL, "cannot %s-pad an empty axis", mode);
	}
	return oc_check_shape(ctx, &p->out);
}

/* Source coordinate for output coordinate o along a dim of size d, or -1
 * for "the constant". */
static int64_t src_coord(pad_mode m, int64_t o, int64_t begin, int64_t d)
{
	int64_t c = o - begin;

	if (c >= 0 && c < d)
		return c;
	switch (m) {
	case PAD_EDGE:
		return c < 0 ? 0 : d - 1;
	case PAD_WRAP:
		c %= d;
		return c < 0 ? c + d : c;
	case PAD_REFLECT: {
		if (d == 1)
			return 0;
		int64_t period = 2 * (d - 1);
		c %= period;
		if (c < 0)
			c += period;
		return c >= d ? period - c : c;
	}
	default:
		return -1;
	}
}

static int pad_infer_common(mfs_op_ctx *ctx, bool attrs)
{
	OC_CHECK_IO(ctx, attrs ? 1 : 2, true);
	pad_plan p;
	int rc = pad_plan_make(ctx, attrs, &p);
	if (rc)
		return rc;
	oc_set_out(ctx, 0, ctx->in[0]->dtype, &p.out);
	return 0;
}

/* Fill out from in through plan p; fill holds one element's bytes. */
static void pad_execute(const mfs_tensor *in, mfs_tensor *out, const pad_plan *p,
			const char *fill, size_t es)
{
	int64_t ist[MFS_MAX_RANK], c[MFS_MAX_RANK] = { 0 }, total, last_n;
	int r = in->shape.rank;

	total = mfs_shape_numel(&p->out);
	if (total == 0)
		return;
	if (r == 0) {
		memcpy(out->data, in->data, es);
		return;
	}
	oc_strides(&in->shape, ist);
	last_n = p->out.dims[r - 1];
	/* One output row (innermost dim) at a time. */
	for (int64_t row = 0; row < total / last_n; row++) {
		char *dst = (char *)out->data + row * last_n * (int64_t)es;
		int64_t base = 0;
		bool constant = false;
		for (int i = 0; i < r - 1; i++) {
			int64_t s = src_coord(p->mode, c[i], p->begin[i], in->shape.dims[i]);
			if (s < 0)
				constant = true;
			else
				base += s * ist[i];
		}
		for (int64_t j = 0; j < last_n; j++) {
			int64_t s = constant ? -1
				    : src_coord(p->mode, j, p->begin[r - 1], in->shape.dims[r - 1]);
			memcpy(dst + j * (int64_t)es,
			       s < 0 ? fill : (const char *)in->data + (base + s) * (int64_t)es, es);
		}
		for (int i = r - 2; i >= 0; i--) {
			if (++c[i] < p->out.dims[i])
				break;
			c[i] = 0;
		}
	}
}

static int pad_run_common(mfs_op_ctx *ctx, bool attrs)
{
	const mfs_tensor *in = ctx->in[0], *cv = attrs ? NULL : oc_in(ctx, 2);
	pad_plan p;
	char fill[16] = { 0 };
	size_t es;
	int rc;

	rc = pad_plan_make(ctx, attrs, &p);
	if (rc > 0)
		return mfs_op_fail(ctx, EINVAL, "pads unknown at run");
	if (rc || (rc = oc_elem_size(ctx, in, &es)))
		return rc;
	if (attrs)
		oc_store(in->dtype, fill, 0, onnx_attr_float(ctx->node, "value", 0));
	else if (cv && mfs_shape_numel(&cv->shape) >= 1 && cv->nbytes >= es)
		memcpy(fill, cv->data, es);
	pad_execute(in, ctx->out[0], &p, fill, es);
	return 0;
}

/* CenterCropPad: the target shape for `axes` (default all) from input 1. */
static int ccp_plan(mfs_op_ctx *ctx, pad_plan *p)
{
	const mfs_tensor *in = ctx->in[0];
	int64_t want[MFS_MAX_RANK];
	int r = in->shape.rank, n = 0, nax = r, ax[MFS_MAX_RANK], rc;

	if ((rc = oc_elem_size(ctx, in, &(size_t){ 0 })) ||
	    (rc = oc_read_ints(ctx, 1, want, MFS_MAX_RANK, &n)))
		return rc;
	if ((rc = oc_attr_axes(ctx, r, ax, &nax)))
		return rc;
	if (n != nax)
		return mfs_op_fail(ctx, EINVAL, "%d sizes for %d axes", n, nax);
	p->mode = PAD_CONSTANT;
	p->out = in->shape;
	memset(p->begin, 0, sizeof(p->begin));
	for (int i = 0; i < nax; i++) {
		int64_t d = in->shape.dims[ax[i]];
		if (want[i] < 0 || want[i] > OC_MAX_NUMEL)
			return mfs_op_fail(ctx, EINVAL, "size %lld is invalid", (long long)want[i]);
		p->out.dims[ax[i]] = want[i];
		p->begin[ax[i]] = want[i] >= d ? (want[i] - d) / 2 : -((d - want[i]) / 2);
	}
	return oc_check_shape(ctx, &p->out);
}

static int ccp_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 2, true);
	pad_plan p;
	int rc = ccp_plan(ctx, &p);

	if (rc)
		return rc;
	oc_set_out(ctx, 0, ctx->in[0]->dtype, &p.out);
	return 0;
}

static int ccp_run(mfs_op_ctx *ctx)
{
	pad_plan p;
	char fill[16] = { 0 };
	int rc = ccp_plan(ctx, &p);

	if (rc)
		return rc < 0 ? rc : mfs_op_fail(ctx, EINVAL, "shape unknown at run");
	pad_execute(ctx->in[0], ctx->out[0], &p, fill, mfs_dtype_size(ctx->in[0]->dtype));
	return 0;
}

static int pad2_infer(mfs_op_ctx *ctx) { return pad_infer_common(ctx, true); }
static int pad11_infer(mfs_op_ctx *ctx) { return pad_infer_common(ctx, false); }
static int pad2_run(mfs_op_ctx *ctx) { return pad_run_common(ctx, true); }
static int pad11_run(mfs_op_ctx *ctx) { return pad_run_common(ctx, false); }

MFS_OP(Pad, 2, .infer = pad2_infer, .run = pad2_run);
MFS_OP(Pad, 11, .infer = pad11_infer, .run = pad11_run);
MFS_OP(CenterCropPad, 18, .infer = ccp_infer, .run = ccp_run);

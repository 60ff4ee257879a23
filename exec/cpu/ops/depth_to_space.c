/* DepthToSpace (DCR; CRD from opset 11) and SpaceToDepth on NCHW: each is
 * a reshape to 6-D, a transpose and a reshape back, done as one strided
 * copy (oc_copy_view). */
#include <string.h>

#include "op_common.h"

static int d2s_geom(mfs_op_ctx *ctx, bool to_space, int64_t *b, mfs_shape *out)
{
	const mfs_tensor *in = ctx->in[0];
	const int64_t *d = in->shape.dims;
	int rc;

	*b = onnx_attr_int(ctx->node, "blocksize", 0);
	if (in->shape.rank != 4)
		return mfs_op_fail(ctx, EINVAL, "input must be 4-D");
	if (*b < 1 || *b > 65536)
		return mfs_op_fail(ctx, EINVAL, "blocksize %lld is invalid", (long long)*b);
	if ((rc = oc_elem_size(ctx, in, &(size_t){ 0 })))
		return rc;
	*out = in->shape;
	if (to_space) {
		if (d[1] % (*b * *b))
			return mfs_op_fail(ctx, EINVAL, "channels %lld not divisible by %lld",
					   (long long)d[1], (long long)(*b * *b));
		out->dims[1] = d[1] / (*b * *b);
		out->dims[2] = d[2] * *b;
		out->dims[3] = d[3] * *b;
	} else {
		if (d[2] % *b || d[3] % *b)
			return mfs_op_fail(ctx, EINVAL, "height and width must divide by %lld",
					   (long long)*b);
		out->dims[1] = d[1] * *b * *b;
		out->dims[2] = d[2] / *b;
		out->dims[3] = d[3] / *b;
	}
	return oc_check_shape(ctx, out);
}

static int d2s_infer_common(mfs_op_ctx *ctx, bool to_space)
{
	OC_CHECK_IO(ctx, 1, true);
	int64_t b;
	mfs_shape out;
	int rc = d2s_geom(ctx, to_space, &b, &out);
	if (rc)
		return rc;
	if (to_space) {
		const char *m = onnx_attr_string(ctx->node, "mode", "DCR");
		if (strcmp(m, "DCR") && strcmp(m, "CRD"))
			return mfs_op_fail(ctx, EINVAL, "unknown mode '%s'", m);
	}
	oc_set_out(ctx, 0, ctx->in[0]->dtype, &out);
	return 0;
}

static int d2s_infer(mfs_op_ctx *ctx) { return d2s_infer_common(ctx, true); }
static int s2d_infer(mfs_op_ctx *ctx) { return d2s_infer_common(ctx, false); }

static int d2s_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *in = ctx->in[0];
	const int64_t *d = in->shape.dims;
	int64_t b, c, H = d[2], W = d[3];
	bool crd = strcmp(onnx_attr_string(ctx->node, "mode", "DCR"), "CRD") == 0;
	mfs_shape out;
	int rc = d2s_geom(ctx, true, &b, &out);

	if (rc)
		return rc;
	c = out.dims[1];
	/* Output viewed as [N, C', H, b1, W, b2]; source element strides. */
	int64_t s_b1 = crd ? b * H * W : b * c * H * W;
	int64_t s_b2 = crd ? H * W : c * H * W;
	int64_t s_c = crd ? b * b * H * W : H * W;
	int64_t dims[6] = { d[0], c, H, b, W, b };
	int64_t st[6] = { d[1] * H * W, s_c, W, s_b1, 1, s_b2 };
	oc_copy_view(ctx->out[0]->data, in->data, mfs_dtype_size(in->dtype), 6, dims, st, 0);
	return 0;
}

static int s2d_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *in = ctx->in[0];
	const int64_t *d = in->shape.dims;
	int64_t b, C = d[1], H = d[2], W = d[3];
	mfs_shape out;
	int rc = d2s_geom(ctx, false, &b, &out);

	if (rc)
		return rc;
	/* Output viewed as [N, b1, b2, C, H/b, W/b]. */
	int64_t dims[6] = { d[0], b, b, C, H / b, W / b };
	int64_t st[6] = { C * H * W, W, 1, H * W, b * W, b };
	oc_copy_view(ctx->out[0]->data, in->data, mfs_dtype_size(in->dtype), 6, dims, st, 0);
	return 0;
}

MFS_OP(DepthToSpace, 1, .infer = d2s_infer, .run = d2s_run);
MFS_OP(SpaceToDepth, 1, .infer = s2d_infer, .run = s2d_run);

/* Col2Im (18): the inverse of im2col.  Columns [N, C * prod(block), L]
 * are summed back into images [N, C, *image_shape], block positions laid
 * out by strides, dilations and pads as in a convolution.  Sizes come from
 * the image_shape and block_shape inputs. */
#include <string.h>

#include "op_common.h"

typedef struct c2i {
	int nd;
	int64_t image[MFS_MAX_RANK], block[MFS_MAX_RANK], blocks[MFS_MAX_RANK];
	int64_t stride[MFS_MAX_RANK], dil[MFS_MAX_RANK], pad[2 * MFS_MAX_RANK];
	int64_t ksize, L, C;
} c2i;

static int attr_or(mfs_op_ctx *ctx, const char *name, int64_t *v, int n, int64_t def)
{
	int cnt, rc = oc_attr_ints(ctx, name, v, 2 * MFS_MAX_RANK, &cnt);

	if (rc)
		return rc;
	if (cnt < 0) {
		for (int i = 0; i < n; i++)
			v[i] = def;
		return 0;
	}
	if (cnt != n)
		return mfs_op_fail(ctx, EINVAL, "'%s' needs %d values", name, n);
	return 0;
}

static int c2i_geom(mfs_op_ctx *ctx, c2i *g)
{
	const mfs_tensor *x = ctx->in[0];
	int n1 = 0, n2 = 0, rc;
	int64_t L = 1;

	if ((rc = oc_read_ints(ctx, 1, g->image, MFS_MAX_RANK - 2, &n1)) ||
	    (rc = oc_read_ints(ctx, 2, g->block, MFS_MAX_RANK - 2, &n2)))
		return rc;
	if (n1 != n2 || n1 < 1 || x->shape.rank != 3)
		return mfs_op_fail(ctx, EINVAL, "expected input [N, C*k, L] and matching "
				   "image_shape and block_shape");
	g->nd = n1;
	if ((rc = attr_or(ctx, "strides", g->stride, n1, 1)) ||
	    (rc = attr_or(ctx, "dilations", g->dil, n1, 1)) ||
	    (rc = attr_or(ctx, "pads", g->pad, 2 * n1, 0)))
		return rc;
	g->ksize = 1;
	for (int d = 0; d < n1; d++) {
		int64_t span;
		if (g->image[d] < 1 || g->block[d] < 1 || g->stride[d] < 1 || g->dil[d] < 1 ||
		    g->pad[d] < 0 || g->pad[n1 + d] < 0 || g->image[d] > OC_MAX_NUMEL ||
		    g->block[d] > OC_MAX_NUMEL || g->dil[d] > OC_MAX_NUMEL ||
		    g->pad[d] > OC_MAX_NUMEL || g->pad[n1 + d] > OC_MAX_NUMEL)
			return mfs_op_fail(ctx, EINVAL, "invalid sizes, strides, dilations or pads");
		span = g->dil[d] * (g->block[d] - 1) + 1;
		g->blocks[d] = (g->image[d] + g->pad[d] + g->pad[n1 + d] - span) / g->stride[d] + 1;
		if (g->image[d] + g->pad[d] + g->pad[n1 + d] < span)
			return mfs_op_fail(ctx, EINVAL, "block larger than the padded image");
		if (g->ksize > OC_MAX_NUMEL / g->block[d] || L > OC_MAX_NUMEL / g->blocks[d])
			return mfs_op_fail(ctx, EINVAL, "sizes are too large");
		g->ksize *= g->block[d];
		L *= g->blocks[d];
	}
	if (x->shape.dims[1] % g->ksize || x->shape.dims[2] != L)
		return mfs_op_fail(ctx, EINVAL, "input [%lld, %lld, %lld] does not fit the blocks",
				   (long long)x->shape.dims[0], (long long)x->shape.dims[1],
				   (long long)x->shape.dims[2]);
	g->L = L;
	g->C = x->shape.dims[1] / g->ksize;
	return 0;
}

static int c2i_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 3, true);
	c2i g;
	int rc;
	mfs_shape s = { 0 };

	if ((rc = oc_need_numeric(ctx, ctx->in[0], true)) || (rc = c2i_geom(ctx, &g)))
		return rc;
	s.rank = g.nd + 2;
	s.dims[0] = ctx->in[0]->shape.dims[0];
	s.dims[1] = g.C;
	for (int d = 0; d < g.nd; d++)
		s.dims[2 + d] = g.image[d];
	if ((rc = oc_check_shape(ctx, &s)))
		return rc;
	oc_set_out(ctx, 0, ctx->in[0]->dtype, &s);
	return 0;
}

static int c2i_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];
	mfs_tensor *out = ctx->out[0];
	int64_t N = x->shape.dims[0], img = 1;
	c2i g;
	int rc = c2i_geom(ctx, &g);

	if (rc)
		return rc < 0 ? rc : mfs_op_fail(ctx, EINVAL, "shapes unknown at run");
	for (int d = 0; d < g.nd; d++)
		img *= g.image[d];
	for (int64_t i = 0; i < N * g.C * img; i++)
		oc_store(out->dtype, out->data, i, 0);
	for (int64_t nc = 0; nc < N * g.C; nc++)
		for (int64_t k = 0; k < g.ksize; k++)
			for (int64_t l = 0; l < g.L; l++) {
				/* Image position of kernel tap k at block l, per dim. */
				int64_t kr = k, lr = l, off = 0, mul = 1;
				bool inside = true;
				for (int d = g.nd - 1; d >= 0; d--) {
					int64_t kd = kr % g.block[d], ld = lr % g.blocks[d];
					int64_t p = ld * g.stride[d] - g.pad[d] + kd * g.dil[d];
					kr /= g.block[d];
					lr /= g.blocks[d];
					inside &= p >= 0 && p < g.image[d];
					off += p * mul;
					mul *= g.image[d];
				}
				if (!inside)
					continue;
				int64_t o = nc * img + off;
				oc_store(out->dtype, out->data, o, oc_load(out->dtype, out->data, o) +
					 oc_load(x->dtype, x->data, (nc * g.ksize + k) * g.L + l));
			}
	return 0;
}

MFS_OP(Col2Im, 18, .infer = c2i_infer, .run = c2i_run);

/* ocl_ops_conv.c - device implementations of the windowed operators:
 * Conv / FusedConv (Winograd F(4x4, 3x3) or F(2x2, 3x3), an implicit GEMM,
 * or im2col + CLBlast SGEMM for group 1; a direct kernel for grouped and
 * depthwise ones; bias, FusedConv's residual and activation fused),
 * MaxPool, AveragePool and GlobalAveragePool.  Float only, 2-D windows
 * only; other cases return OCL_HOST (the CPU operator runs).  Geometry
 * comes from the same helpers as the CPU operators (exec/op/op_geometry.h),
 * so both engines read attributes alike.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_blast.h"
#include "op_geometry.h"
#include "op_common.h"

/* im2col scratch larger than this is split over several image chunks. */
#define COL_MAX_BYTES ((size_t)256 << 20)
/* Winograd's output tile where MODELFS_OCL_WINOGRAD does not choose: 4x4
 * (H100, ResNet-50 b32, three alternating rounds: 14.1-15.3 ms against
 * 15.0-15.8 for 2x2 and 16.6-18.3 without; batch 1 the same for both). */
#define WINO_DEFAULT_TILE 4

/* ---- Conv / FusedConv ---- */

/* One Conv or FusedConv on the device: its geometry, epilogue and
 * buffers, filled by the steps below. */
typedef struct conv_job {
	ocl_conv p;
	bool pointwise;        /* 1x1, stride 1, no padding: X is already col */
	cl_int act, hasb, hasz;    /* activation: 0 none, 1 Relu, 2 LeakyRelu, 3 Clip */
	float aa, ab;          /* its parameters */
	cl_mem mx, mw, mb, mz, my;
} conv_job;

/* FusedConv's activation as the kernels' code; OCL_HOST for one they do
 * not have. */
static int conv_activation(const onnx_node *node, conv_job *j)
{
	const char *a = onnx_attr_string(node, "activation", "");
	const onnx_attr *pa = onnx_node_attr(node, "activation_params");
	size_t np = pa && pa->type == ONNX_ATTR_FLOATS ? pa->n_floats : 0;

	if (!*a) {
		j->act = 0;
	} else if (!strcmp(a, "Relu")) {
		j->act = 1;
	} else if (!strcmp(a, "LeakyRelu")) {
		j->act = 2;
		j->aa = np >= 1 ? pa->floats[0] : 0.01f;
	} else if (!strcmp(a, "Clip")) {
		j->act = 3;
		j->aa = np >= 1 ? pa->floats[0] : -INFINITY;
		j->ab = np >= 2 ? pa->floats[1] : INFINITY;
	} else {
		return OCL_HOST;
	}
	return 0;
}

/* The kernels' geometry from the window (pads, strides, dilations) and
 * group; OCL_HOST for groups the kernels cannot split. */
static int conv_geometry(mfs_op_ctx *ctx, const mfs_tensor *x,
			 const mfs_tensor *w, conv_job *j)
{
	ocl_conv *p = &j->p;
	mfs_window win;
	int rc;

	if ((rc = mfs_window_init(ctx, &x->shape, w->shape.dims + 2, true, false, &win)) < 0)
		return rc;
	memset(p, 0, sizeof(*p));
	p->n = (cl_int)x->shape.dims[0];
	p->c = (cl_int)x->shape.dims[1];
	p->h = (cl_int)x->shape.dims[2];
	p->w = (cl_int)x->shape.dims[3];
	p->m = (cl_int)w->shape.dims[0];
	p->oh = (cl_int)win.out[0];
	p->ow = (cl_int)win.out[1];
	p->kh = (cl_int)win.k[0];
	p->kw = (cl_int)win.k[1];
	p->sh = (cl_int)win.stride[0];
	p->sw = (cl_int)win.stride[1];
	p->ph = (cl_int)win.pad_b[0];
	p->pw = (cl_int)win.pad_b[1];
	p->dh = (cl_int)win.dil[0];
	p->dw = (cl_int)win.dil[1];
	p->group = (cl_int)onnx_attr_int(ctx->node, "group", 1);
	if (p->group < 1 || p->c % p->group || p->m % p->group)
		return OCL_HOST;
	j->pointwise = p->kh == 1 && p->kw == 1 && p->sh == 1 && p->sw == 1 &&
		       p->ph == 0 && p->pw == 0 && win.pad_e[0] == 0 && win.pad_e[1] == 0;
	return 0;
}

/* Device buffers of X, W, B, Z and Y; an absent B or Z is X (a valid
 * dummy the kernels never read). */
static int conv_buffers(ocl_run *r, conv_job *j)
{
	int rc;

	if (!(j->mx = ocl_in(r, 0, &rc)) || !(j->mw = ocl_in(r, 1, &rc)))
		return rc;
	j->mb = j->mx;
	j->mz = j->mx;
	if (j->hasb && !(j->mb = ocl_in(r, 2, &rc)))
		return rc;
	if (j->hasz && !(j->mz = ocl_in(r, 3, &rc)))
		return rc;
	if (!(j->my = ocl_out(r, 0, &rc)))
		return rc;
	return 0;
}

/* The arguments that conv_direct_f32 and conv_igemm_* share. */
static int conv_args(ocl_run *r, ocl_kid k, const conv_job *j)
{
	int rc;

	if ((rc = OCL_ARG(r, k, 0, j->mx)) || (rc = OCL_ARG(r, k, 1, j->mw)) ||
	    (rc = OCL_ARG(r, k, 2, j->mb)) || (rc = OCL_ARG(r, k, 3, j->mz)) ||
	    (rc = OCL_ARG(r, k, 4, j->my)) || (rc = OCL_ARG(r, k, 5, j->p)) ||
	    (rc = OCL_ARG(r, k, 6, j->hasb)) || (rc = OCL_ARG(r, k, 7, j->hasz)) ||
	    (rc = OCL_ARG(r, k, 8, j->act)) || (rc = OCL_ARG(r, k, 9, j->aa)) ||
	    (rc = OCL_ARG(r, k, 10, j->ab)))
		return rc;
	return 0;
}

/* group > 1: one work item per output element. */
static int conv_direct(ocl_run *r, const conv_job *j, size_t numel)
{
	int rc;

	if ((rc = conv_args(r, K_CONV_DIRECT_F32, j)))
		return rc;
	return ocl_launch(r, K_CONV_DIRECT_F32, numel);
}

/* Group 1 as one implicit GEMM over the whole batch (kernels/ops.cl,
 * conv_igemm_*): no column matrix, the epilogue fused.  128 x 128 tiles
 * where they still give the device about two groups per compute unit,
 * else 64 x 64. */
/* The implicit GEMM's tile (rows of M x columns of N*OH*OW): 64 x 64.
 * On the H100 the wider tiles (8 x 8 or 8 x 4 outputs per item) measured
 * slower on every layer of ResNet-50 and MobileNetV2 at batch 32, also
 * where 128 x 128 tiles gave each compute unit two (ResNet-50: 19.6 ms
 * all 64, 20.0 with those, 24.6 all 128; docs/PERFORMANCE.md).
 * MODELFS_OCL_IGEMM=64, 128x64 or 128 forces one, for A/B runs on other
 * devices. */
static int conv_igemm(ocl_run *r, const conv_job *j)
{
	static const struct { ocl_kid k; int64_t tm, tn; const char *name; } tiles[] = {
		{ K_CONV_IGEMM_64, 64, 64, "64" },
		{ K_CONV_IGEMM_128X64, 128, 64, "128x64" },
		{ K_CONV_IGEMM_128, 128, 128, "128" },
	};
	const ocl_conv *p = &j->p;
	const char *env = getenv("MODELFS_OCL_IGEMM");
	int64_t cols = (int64_t)p->n * p->oh * p->ow;
	int t = 0, rc;

	for (int i = 0; env && i < 3; i++)
		if (!strcmp(env, tiles[i].name))
			t = i;
	/* A 1x1 stride-1 unpadded layer on the 64 tile: the kernel that reads
	 * X as a plain matrix, without the window bookkeeping's registers. */
	ocl_kid k = tiles[t].k;
	if (t == 0 && j->pointwise)
		k = K_CONV_IGEMM_PW_64;
	if ((rc = conv_args(r, k, j)))
		return rc;
	return ocl_launch_groups(r, k,
				 (size_t)(((p->m + tiles[t].tm - 1) / tiles[t].tm) *
					  ((cols + tiles[t].tn - 1) / tiles[t].tn)), 256);
}

/* Winograd F(tile x tile, 3x3), tile 2 or 4 (kernels/ops.cl, wino_* and
 * wino4_*): a constant W's transform U is made once and kept with the
 * node; V and M live in the context's two scratch buffers. */
static int conv_winograd(ocl_run *r, const conv_job *j, int tile)
{
	const ocl_conv *p = &j->p;
	int64_t xis = (int64_t)(tile + 2) * (tile + 2);   /* 16 or 36 products */
	ocl_kid kw = tile == 4 ? K_WINO4_WEIGHTS : K_WINO_WEIGHTS;
	ocl_kid ki = tile == 4 ? K_WINO4_INPUT : K_WINO_INPUT;
	ocl_kid ko = tile == 4 ? K_WINO4_OUTPUT : K_WINO_OUTPUT;
	cl_int th = (p->oh + tile - 1) / tile, tw = (p->ow + tile - 1) / tile;
	int64_t P = (int64_t)p->n * th * tw, kc = (int64_t)p->m * p->c;
	size_t vbytes = (size_t)(xis * p->c * P) * sizeof(float);
	size_t mbytes = (size_t)(xis * p->m * P) * sizeof(float);
	bool fresh;
	cl_mem u, v, mm;
	cl_int ckc = (cl_int)kc;
	int rc;

	if (!(u = ocl_node_buffer(r, (size_t)(xis * kc) * sizeof(float), &fresh, &rc)))
		return rc;
	if ((fresh || !ocl_in_const(r, 1)) &&
	    ((rc = OCL_ARG(r, kw, 0, j->mw)) || (rc = OCL_ARG(r, kw, 1, u)) ||
	     (rc = OCL_ARG(r, kw, 2, ckc)) || (rc = ocl_launch(r, kw, (size_t)kc))))
		return rc;
	if (!(v = ocl_scratch_slot(r, 0, vbytes, &rc)) ||
	    !(mm = ocl_scratch_slot(r, 1, mbytes, &rc)))
		return rc;
	/* the products as the pointwise kernel over one "image" of C
	 * channels by P columns each, no epilogue (B and Z are dummies) */
	conv_job gj = { .p = { .n = 1, .c = p->c, .h = 1, .w = (cl_int)P, .m = p->m,
			       .oh = 1, .ow = (cl_int)P, .kh = 1, .kw = 1, .sh = 1,
			       .sw = 1, .dh = 1, .dw = 1, .group = 1 },
			.mx = v, .mw = u, .mb = u, .mz = v, .my = mm };
	int64_t groups = xis * ((p->m + 63) / 64) * ((P + 63) / 64);
	if (!(rc = OCL_ARG(r, ki, 0, j->mx)) && !(rc = OCL_ARG(r, ki, 1, v)) &&
	    !(rc = OCL_ARG(r, ki, 2, j->p)) && !(rc = OCL_ARG(r, ki, 3, th)) &&
	    !(rc = OCL_ARG(r, ki, 4, tw)) &&
	    !(rc = ocl_launch(r, ki, (size_t)(p->c * P))) &&
	    !(rc = conv_args(r, K_WINO_GEMM_64, &gj)) &&
	    !(rc = ocl_launch_groups(r, K_WINO_GEMM_64, (size_t)groups, 256)) &&
	    !(rc = OCL_ARG(r, ko, 0, mm)) && !(rc = OCL_ARG(r, ko, 1, j->mb)) &&
	    !(rc = OCL_ARG(r, ko, 2, j->mz)) && !(rc = OCL_ARG(r, ko, 3, j->my)) &&
	    !(rc = OCL_ARG(r, ko, 4, j->p)) && !(rc = OCL_ARG(r, ko, 5, th)) &&
	    !(rc = OCL_ARG(r, ko, 6, tw)) && !(rc = OCL_ARG(r, ko, 7, j->hasb)) &&
	    !(rc = OCL_ARG(r, ko, 8, j->hasz)) && !(rc = OCL_ARG(r, ko, 9, j->act)) &&
	    !(rc = OCL_ARG(r, ko, 10, j->aa)) && !(rc = OCL_ARG(r, ko, 11, j->ab)))
		rc = ocl_launch(r, ko, (size_t)(p->m * P));
	return rc;
}

/* The Winograd tile a Conv takes (2 or 4), 0 for none: 3x3, stride 1, no
 * dilation, group 1, on a device with 256-item groups, where the
 * products' indices fit an int and there are channels enough for the
 * products to pay for the transforms (at least 32 in and out; the
 * bench's 3x3 layers have 64 to 512).  MODELFS_OCL_WINOGRAD=0 turns it
 * off; =2 or =4 takes that tile for every such layer (=1: the default
 * tile), also small ones (the tests). */
static int conv_winograd_tile(ocl_run *r, const conv_job *j)
{
	const char *env = getenv("MODELFS_OCL_WINOGRAD");
	const ocl_conv *p = &j->p;
	int tile = WINO_DEFAULT_TILE;
	int64_t P = (int64_t)p->n * ((p->oh + 1) / 2) * ((p->ow + 1) / 2);

	if (env && (!strcmp(env, "2") || !strcmp(env, "4")))
		tile = env[0] - '0';
	if (p->kh != 3 || p->kw != 3 || p->sh != 1 || p->sw != 1 || p->dh != 1 ||
	    p->dw != 1 || p->group != 1 || ocl_max_group(r) < 256 ||
	    !ocl_fits_int(16 * P * (p->c > p->m ? p->c : p->m)))
		return 0;
	if (env && *env)
		return strcmp(env, "0") ? tile : 0;
	return p->c >= 32 && p->m >= 32 ? tile : 0;
}

/* Whether a group-1 Conv takes the implicit GEMM: MODELFS_OCL_CONV=gemm
 * keeps im2col + CLBlast (=igemm forces the kernel), on devices with
 * 256-item work groups.  By default every batch > 1 does (the other path
 * makes one CLBlast call per image for a pointwise Conv: MobileNetV2 b32
 * took 13.7 ms that way against 7.0); a batch-1 one only where its 64 x 64
 * tiles fill the device, at least one per compute unit (with fewer, each
 * group walks a long K alone: ResNet-50 b1 took 6.5 ms against 3.4 on an
 * H100), and never a pointwise one (one CLBlast call). */
static bool conv_use_igemm(ocl_run *r, const conv_job *j)
{
	const char *env = getenv("MODELFS_OCL_CONV");
	const ocl_conv *p = &j->p;
	int64_t cols = (int64_t)p->oh * p->ow;

	if (ocl_max_group(r) < 256)
		return false;
	if (env && !strcmp(env, "gemm"))
		return false;
	if ((env && !strcmp(env, "igemm")) || p->n > 1)
		return true;
	return !j->pointwise &&
	       ((p->m + 63) / 64) * ((cols + 63) / 64) >= (int64_t)ocl_compute_units(r);
}

/* Images n0 .. n0+cnt-1 of a group-1 Conv: im2col into the scratch
 * (pointwise: X is the col matrix), Y[m, cnt*ohw] = W[m, K] x col, then
 * the epilogue (bias, residual, activation; reorders a multi-image
 * product from the scratch's tail into Y). */
static int conv_chunk(ocl_run *r, const conv_job *j, int64_t n0, int64_t cnt)
{
	const ocl_conv *p = &j->p;
	int64_t K = (int64_t)p->c * p->kh * p->kw, ohw = (int64_t)p->oh * p->ow;
	cl_int cn0 = (cl_int)n0, cnb = (cl_int)cnt, cm = p->m, cohw = (cl_int)ohw;
	cl_mem col, tmp;
	size_t tmp_off = 0;
	int rc;

	if (j->pointwise) {
		col = j->mx;
	} else {
		size_t colb = (size_t)(K * ohw * cnt) * sizeof(float);
		size_t tmpb = cnt > 1 ? (size_t)(p->m * ohw * cnt) * sizeof(float) : 0;
		ocl_kid k = K_IM2COL_F32;
		if (!(col = ocl_scratch(r, colb + tmpb, &rc)))
			return rc;
		if ((rc = OCL_ARG(r, k, 0, j->mx)) || (rc = OCL_ARG(r, k, 1, col)) ||
		    (rc = OCL_ARG(r, k, 2, j->p)) || (rc = OCL_ARG(r, k, 3, cn0)) ||
		    (rc = OCL_ARG(r, k, 4, cnb)) ||
		    (rc = ocl_launch(r, k, (size_t)(K * ohw * cnt))))
			return rc;
		tmp_off = colb / sizeof(float);
	}
	/* one image writes straight into y; more into the tail of the
	 * scratch, then the epilogue reorders */
	if (cnt == 1) {
		tmp = j->my;
		rc = ocl_sgemm(r, false, false, (size_t)p->m, (size_t)ohw, (size_t)K, 1.0f,
			       j->mw, 0, (size_t)K, col,
			       j->pointwise ? (size_t)(n0 * K * ohw) : 0, (size_t)ohw,
			       0.0f, j->my, (size_t)(n0 * p->m * ohw), (size_t)ohw);
	} else {
		tmp = col;
		rc = ocl_sgemm(r, false, false, (size_t)p->m, (size_t)(ohw * cnt), (size_t)K,
			       1.0f, j->mw, 0, (size_t)K, col, 0, (size_t)(ohw * cnt), 0.0f,
			       col, tmp_off, (size_t)(ohw * cnt));
	}
	if (rc)
		return rc;
	if (cnt > 1 || j->hasb || j->hasz || j->act) {
		ocl_kid k = K_CONV_EPILOGUE;
		cl_int toff = (cl_int)(cnt > 1 ? tmp_off : (size_t)(n0 * p->m * ohw));
		if ((rc = OCL_ARG(r, k, 0, tmp)) || (rc = OCL_ARG(r, k, 1, j->my)) ||
		    (rc = OCL_ARG(r, k, 2, j->mb)) || (rc = OCL_ARG(r, k, 3, j->mz)) ||
		    (rc = OCL_ARG(r, k, 4, j->hasb)) || (rc = OCL_ARG(r, k, 5, j->hasz)) ||
		    (rc = OCL_ARG(r, k, 6, cm)) || (rc = OCL_ARG(r, k, 7, cohw)) ||
		    (rc = OCL_ARG(r, k, 8, cn0)) || (rc = OCL_ARG(r, k, 9, cnb)) ||
		    (rc = OCL_ARG(r, k, 10, j->act)) || (rc = OCL_ARG(r, k, 11, j->aa)) ||
		    (rc = OCL_ARG(r, k, 12, j->ab)) || (rc = OCL_ARG(r, k, 13, toff)) ||
		    (rc = ocl_launch(r, k, (size_t)(p->m * ohw * cnt))))
			return rc;
	}
	return 0;
}

/* How many images one im2col chunk holds (the col matrix within
 * COL_MAX_BYTES); 0 when the products overflow the kernels' int. */
static int64_t conv_chunk_images(const conv_job *j)
{
	const ocl_conv *p = &j->p;
	int64_t K = (int64_t)p->c * p->kh * p->kw, ohw = (int64_t)p->oh * p->ow;
	int64_t per = K * ohw * (int64_t)sizeof(float);
	int64_t nb = per ? (int64_t)(COL_MAX_BYTES / (size_t)per) : p->n;

	if (nb < 1)
		nb = 1;
	if (nb > p->n)
		nb = p->n;
	if (!ocl_fits_int(K * ohw * nb) || !ocl_fits_int((int64_t)p->m * ohw * nb))
		return 0;
	return nb;
}

int ocl_op_conv(ocl_run *r)
{
	mfs_op_ctx *ctx = r->ctx;
	const mfs_tensor *x = ctx->in[0], *w = ctx->n_in > 1 ? ctx->in[1] : NULL;
	const mfs_tensor *bias = ctx->n_in > 2 ? ctx->in[2] : NULL;
	mfs_tensor *y = ctx->out[0];
	conv_job j = { .hasb = bias != NULL };
	int64_t nb;
	int rc;

	if (!w || x->dtype != MFS_DT_FLOAT || w->dtype != MFS_DT_FLOAT ||
	    x->shape.rank != 4 || w->shape.rank != 4 || (bias && bias->dtype != MFS_DT_FLOAT) ||
	    !ocl_fits_int(mfs_shape_numel(&x->shape)) || !ocl_fits_int(mfs_shape_numel(&y->shape)))
		return OCL_HOST;
	if (!strcmp(ctx->node->op_type, "FusedConv")) {
		j.hasz = ctx->n_in > 3 && ctx->in[3];
		if ((rc = conv_activation(ctx->node, &j)))
			return rc;
	}
	if ((rc = conv_geometry(ctx, x, w, &j)))
		return rc;
	/* The kernels add Z of the output's own shape; FusedConv's broadcast
	 * Z (exec/cpu/ops/conv.c, the residual rewrite's run-time fallback) is
	 * left to the host. */
	if (j.hasz && (y->shape.rank != 4 || y->shape.dims[0] != j.p.n ||
		       y->shape.dims[1] != j.p.m || y->shape.dims[2] != j.p.oh ||
		       y->shape.dims[3] != j.p.ow ||
		       !mfs_shape_equal(&ctx->in[3]->shape, &y->shape)))
		return OCL_HOST;
	/* Decided before any buffer is taken: OCL_HOST must come first. */
	nb = j.p.group > 1 ? 1 : conv_chunk_images(&j);
	if (!nb)
		return OCL_HOST;
	if ((rc = conv_buffers(r, &j)))
		return rc;
	if (j.p.group > 1)
		return conv_direct(r, &j, (size_t)mfs_shape_numel(&y->shape));
	int tile = conv_winograd_tile(r, &j);
	if (tile)
		return conv_winograd(r, &j, tile);
	if (conv_use_igemm(r, &j))
		return conv_igemm(r, &j);
	for (int64_t n0 = 0; n0 < j.p.n; n0 += (j.pointwise ? 1 : nb)) {
		int64_t cnt = j.pointwise ? 1 : (j.p.n - n0 < nb ? j.p.n - n0 : nb);
		if ((rc = conv_chunk(r, &j, n0, cnt)))
			return rc;
	}
	return 0;
}

/* ---- pools ---- */

static int pool2d(ocl_run *r, bool is_max)
{
	mfs_op_ctx *ctx = r->ctx;
	const mfs_tensor *x = ctx->in[0];
	mfs_tensor *y = ctx->out[0];
	int64_t ceil_mode = onnx_attr_int(ctx->node, "ceil_mode", 0);
	ocl_kid k = is_max ? K_MAXPOOL2D_F32 : K_AVGPOOL2D_F32;
	mfs_window w;
	ocl_pool2d p;
	cl_mem mx, my;
	int rc;

	if (x->dtype != MFS_DT_FLOAT || x->shape.rank != 4 || (ctx->n_out > 1 && ctx->out[1]) ||
	    !ocl_fits_int(mfs_shape_numel(&x->shape)) || !ocl_fits_int(mfs_shape_numel(&y->shape)))
		return OCL_HOST;
	if ((rc = mfs_window_init(ctx, &x->shape, NULL, true, ceil_mode != 0, &w)) < 0)
		return rc;
	if (!is_max && (w.dil[0] != 1 || w.dil[1] != 1))
		return OCL_HOST;
	memset(&p, 0, sizeof(p));
	p.n = (cl_int)x->shape.dims[0];
	p.c = (cl_int)x->shape.dims[1];
	p.h = (cl_int)w.in[0];
	p.w = (cl_int)w.in[1];
	p.oh = (cl_int)w.out[0];
	p.ow = (cl_int)w.out[1];
	p.kh = (cl_int)w.k[0];
	p.kw = (cl_int)w.k[1];
	p.sh = (cl_int)w.stride[0];
	p.sw = (cl_int)w.stride[1];
	p.ph = (cl_int)w.pad_b[0];
	p.pw = (cl_int)w.pad_b[1];
	p.dh = (cl_int)w.dil[0];
	p.dw = (cl_int)w.dil[1];
	p.pe_h = (cl_int)w.pad_e[0];
	p.pe_w = (cl_int)w.pad_e[1];
	p.cip = onnx_attr_int(ctx->node, "count_include_pad", 0) != 0;
	if (!(mx = ocl_in(r, 0, &rc)) || !(my = ocl_out(r, 0, &rc)))
		return rc;
	if ((rc = OCL_ARG(r, k, 0, mx)) || (rc = OCL_ARG(r, k, 1, my)) ||
	    (rc = OCL_ARG(r, k, 2, p)))
		return rc;
	return ocl_launch(r, k, (size_t)mfs_shape_numel(&y->shape));
}

int ocl_op_maxpool(ocl_run *r) { return pool2d(r, true); }
int ocl_op_avgpool(ocl_run *r) { return pool2d(r, false); }

int ocl_op_gavgpool(ocl_run *r)
{
	const mfs_tensor *x = r->ctx->in[0];
	int64_t nc, len = 1;
	cl_int a, b;
	cl_mem mx, my;
	int rc;

	if (x->dtype != MFS_DT_FLOAT || x->shape.rank < 3 ||
	    !ocl_fits_int(mfs_shape_numel(&x->shape)))
		return OCL_HOST;
	nc = x->shape.dims[0] * x->shape.dims[1];
	for (int i = 2; i < x->shape.rank; i++)
		len *= x->shape.dims[i];
	if (!len)
		return OCL_HOST;
	if (!(mx = ocl_in(r, 0, &rc)) || !(my = ocl_out(r, 0, &rc)))
		return rc;
	a = (cl_int)nc;
	b = (cl_int)len;
	if ((rc = OCL_ARG(r, K_GAVGPOOL_F32, 0, mx)) || (rc = OCL_ARG(r, K_GAVGPOOL_F32, 1, my)) ||
	    (rc = OCL_ARG(r, K_GAVGPOOL_F32, 2, a)) || (rc = OCL_ARG(r, K_GAVGPOOL_F32, 3, b)))
		return rc;
	return ocl_launch(r, K_GAVGPOOL_F32, (size_t)nc);
}

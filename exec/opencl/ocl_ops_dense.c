/* ocl_ops_dense.c - device implementations of the compute-heavy operators:
 * Conv / FusedConv (im2col + CLBlast SGEMM for group 1, a direct kernel
 * for grouped and depthwise ones), Gemm, MatMul and com.modelfs Dense
 * (CLBlast; Dense's bias and activation in one epilogue pass), com.modelfs
 * Attention (batched CLBlast products around a masked row softmax),
 * MaxPool, AveragePool, GlobalAveragePool, BatchNormalization, Softmax /
 * LogSoftmax, LayerNormalization, ReduceMean / ReduceSum.  Float only,
 * 2-D windows only; other cases return OCL_HOST (the CPU operator runs).
 * Geometry comes from the same helpers as the CPU operators
 * (exec/op/op_geometry.h), so both engines read attributes alike.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_internal.h"   /* first: sets CL_TARGET_OPENCL_VERSION */
#include <clblast_c.h>
#include "op_geometry.h"
#include "op_common.h"

/* im2col scratch larger than this is split over several image chunks. */
#define COL_MAX_BYTES ((size_t)256 << 20)
/* Winograd's output tile where MODELFS_OCL_WINOGRAD does not choose: 4x4
 * (H100, ResNet-50 b32, three alternating rounds: 14.1-15.3 ms against
 * 15.0-15.8 for 2x2 and 16.6-18.3 without; batch 1 the same for both). */
#define WINO_DEFAULT_TILE 4

static const char *clblast_str(CLBlastStatusCode s)
{
	switch (s) {
	case CLBlastSuccess: return "success";
	case CLBlastOpenCLCompilerNotAvailable: return "OpenCL compiler not available";
	case CLBlastTempBufferAllocFailure: return "temporary buffer allocation failed";
	case CLBlastOpenCLOutOfResources: return "out of resources";
	case CLBlastOpenCLOutOfHostMemory: return "out of host memory";
	case CLBlastOpenCLBuildProgramFailure: return "kernel build failed";
	case CLBlastInvalidValue: return "invalid value";
	case CLBlastInvalidCommandQueue: return "invalid command queue";
	case CLBlastInvalidMemObject: return "invalid memory object";
	case CLBlastInvalidBinary: return "invalid binary";
	case CLBlastInvalidBuildOptions: return "invalid build options";
	case CLBlastInvalidProgram: return "invalid program";
	case CLBlastInvalidProgramExecutable: return "invalid program executable";
	case CLBlastInvalidKernelName: return "invalid kernel name";
	case CLBlastInvalidKernelDefinition: return "invalid kernel definition";
	case CLBlastInvalidKernel: return "invalid kernel";
	case CLBlastInvalidArgIndex: return "invalid argument index";
	case CLBlastInvalidArgValue: return "invalid argument value";
	case CLBlastInvalidArgSize: return "invalid argument size";
	case CLBlastInvalidKernelArgs: return "invalid kernel arguments";
	case CLBlastInvalidLocalNumDimensions: return "invalid local dimensions";
	case CLBlastInvalidLocalThreadsTotal: return "too many local threads";
	case CLBlastInvalidLocalThreadsDim: return "invalid local threads";
	case CLBlastInvalidGlobalOffset: return "invalid global offset";
	case CLBlastInvalidEventWaitList: return "invalid event wait list";
	case CLBlastInvalidEvent: return "invalid event";
	case CLBlastInvalidOperation: return "invalid operation";
	case CLBlastInvalidBufferSize: return "invalid buffer size";
	case CLBlastInvalidGlobalWorkSize: return "invalid global work size";
	case CLBlastNotImplemented: return "not implemented";
	case CLBlastInsufficientMemoryA: return "buffer A too small";
	case CLBlastInsufficientMemoryB: return "buffer B too small";
	case CLBlastInsufficientMemoryC: return "buffer C too small";
	case CLBlastInvalidLeadDimA: return "bad leading dimension of A";
	case CLBlastInvalidLeadDimB: return "bad leading dimension of B";
	case CLBlastInvalidLeadDimC: return "bad leading dimension of C";
	case CLBlastInvalidMatrixA: return "invalid matrix A";
	case CLBlastInvalidMatrixB: return "invalid matrix B";
	case CLBlastInvalidMatrixC: return "invalid matrix C";
	case CLBlastInvalidLocalMemUsage: return "too much local memory";
	case CLBlastNoHalfPrecision: return "no half precision";
	case CLBlastNoDoublePrecision: return "no double precision";
	default: return "CLBlast error";
	}
}

static int blast_fail(ocl_run *r, CLBlastStatusCode s, const char *what)
{
	int code = (s == CLBlastTempBufferAllocFailure || s == CLBlastOpenCLOutOfResources ||
		    s == CLBlastOpenCLOutOfHostMemory) ? ENOMEM : EIO;
	return mfs_node_fail(r->nd, r->err, code, "CLBlast %s failed: %s (%d)",
			     what, clblast_str(s), (int)s);
}

/* Row-major C[m,n] = alpha op(A) op(B) + beta C, offsets in floats. */
static int sgemm(ocl_run *r, bool ta, bool tb, size_t m, size_t n, size_t k,
		 float alpha, cl_mem a, size_t aoff, size_t lda, cl_mem b, size_t boff,
		 size_t ldb, float beta, cl_mem c, size_t coff, size_t ldc)
{
	CLBlastStatusCode s;
	cl_event ev;
	if (!m || !n)
		return 0;
	s = CLBlastSgemm(CLBlastLayoutRowMajor, ta ? CLBlastTransposeYes : CLBlastTransposeNo,
			 tb ? CLBlastTransposeYes : CLBlastTransposeNo, m, n, k, alpha,
			 a, aoff, lda, b, boff, ldb, beta, c, coff, ldc, ocl_queue(r),
			 ocl_prof_event(r, &ev));
	if (s != CLBlastSuccess)
		return blast_fail(r, s, "Sgemm");
	ocl_prof_add(r, ev, K_COUNT);
	return 0;
}

static bool fits_int(int64_t v)
{
	return v >= 0 && v <= INT_MAX;
}

/* The same row-major product over batch items of regular strides (sa,
 * sb, sc floats apart): one CLBlast call. */
static int sgemm_batched(ocl_run *r, size_t m, size_t n, size_t k, float alpha,
			 cl_mem a, size_t lda, size_t sa, cl_mem b, size_t ldb, size_t sb,
			 cl_mem c, size_t ldc, size_t sc, size_t batch)
{
	CLBlastStatusCode s;
	cl_event ev;
	if (!m || !n || !batch)
		return 0;
	s = CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, CLBlastTransposeNo,
				       CLBlastTransposeNo, m, n, k, alpha, a, 0, lda, sa, b, 0,
				       ldb, sb, 0.0f, c, 0, ldc, sc, batch, ocl_queue(r),
				       ocl_prof_event(r, &ev));
	if (s != CLBlastSuccess)
		return blast_fail(r, s, "SgemmStridedBatched");
	ocl_prof_add(r, ev, K_COUNT);
	return 0;
}

/* n floats of zeros into m (an empty product). */
static int fill_zero(ocl_run *r, cl_mem m, int64_t n)
{
	cl_int cn = (cl_int)n;
	cl_uint zero = 0;
	int rc;

	if ((rc = OCL_ARG(r, K_FILL_4, 0, m)) || (rc = OCL_ARG(r, K_FILL_4, 1, cn)) ||
	    (rc = OCL_ARG(r, K_FILL_4, 2, zero)))
		return rc;
	return ocl_launch(r, K_FILL_4, (size_t)n);
}

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
	    !fits_int(16 * P * (p->c > p->m ? p->c : p->m)))
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
		rc = sgemm(r, false, false, (size_t)p->m, (size_t)ohw, (size_t)K, 1.0f,
			   j->mw, 0, (size_t)K, col,
			   j->pointwise ? (size_t)(n0 * K * ohw) : 0, (size_t)ohw,
			   0.0f, j->my, (size_t)(n0 * p->m * ohw), (size_t)ohw);
	} else {
		tmp = col;
		rc = sgemm(r, false, false, (size_t)p->m, (size_t)(ohw * cnt), (size_t)K,
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
	if (!fits_int(K * ohw * nb) || !fits_int((int64_t)p->m * ohw * nb))
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
	    !fits_int(mfs_shape_numel(&x->shape)) || !fits_int(mfs_shape_numel(&y->shape)))
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

/* ---- Gemm ---- */

int ocl_op_gemm(ocl_run *r)
{
	mfs_op_ctx *ctx = r->ctx;
	const mfs_tensor *a = ctx->in[0], *b = ctx->in[1];
	const mfs_tensor *c = ctx->n_in > 2 ? ctx->in[2] : NULL;
	mfs_tensor *y = ctx->out[0];
	bool ta = onnx_attr_int(ctx->node, "transA", 0) != 0;
	bool tb = onnx_attr_int(ctx->node, "transB", 0) != 0;
	float alpha = onnx_attr_float(ctx->node, "alpha", 1.0f);
	float beta = onnx_attr_float(ctx->node, "beta", 1.0f);
	int64_t m, n, k;
	cl_mem ma, mb, my;
	int rc;

	if (a->dtype != MFS_DT_FLOAT || b->dtype != MFS_DT_FLOAT || a->shape.rank != 2 ||
	    b->shape.rank != 2 || y->shape.rank != 2 || (c && c->dtype != MFS_DT_FLOAT) ||
	    (c && c->shape.rank > 2) || !fits_int(mfs_shape_numel(&y->shape)))
		return OCL_HOST;
	m = y->shape.dims[0];
	n = y->shape.dims[1];
	k = ta ? a->shape.dims[0] : a->shape.dims[1];
	if (!(ma = ocl_in(r, 0, &rc)) || !(mb = ocl_in(r, 1, &rc)) ||
	    !(my = ocl_out(r, 0, &rc)))
		return rc;
	if (c && beta != 0.0f && mfs_shape_numel(&c->shape) > 0) {
		/* Y = broadcast(C), then the product accumulates with beta */
		ocl_cp p;
		cl_mem mc;
		int64_t s = 1;
		int off = 2 - c->shape.rank;
		if (!(mc = ocl_in(r, 2, &rc)))
			return rc;
		memset(&p, 0, sizeof(p));
		p.rank = 2;
		p.n = (cl_int)(m * n);
		p.dims[0] = (cl_int)m;
		p.dims[1] = (cl_int)n;
		p.ds[0] = (cl_int)n;
		p.ds[1] = 1;
		for (int d = 1; d >= 0; d--) {
			int dc = d - off;
			if (dc < 0) {
				p.ss[d] = 0;
				continue;
			}
			p.ss[d] = c->shape.dims[dc] == 1 ? 0 : (cl_int)s;
			s *= c->shape.dims[dc];
		}
		if ((rc = OCL_ARG(r, K_COPY_4, 0, mc)) || (rc = OCL_ARG(r, K_COPY_4, 1, my)) ||
		    (rc = OCL_ARG(r, K_COPY_4, 2, p)) || (rc = ocl_launch(r, K_COPY_4, (size_t)p.n)))
			return rc;
	} else {
		beta = 0.0f;
	}
	if (!k) {
		if (beta == 0.0f)
			return fill_zero(r, my, m * n);   /* empty product: zeros */
		return 0;   /* Y = beta*C: CLBlast with k = 0 would be refused */
	}
	if (beta != 0.0f && beta != 1.0f) {
		/* scale C by beta: CLBlast does that with beta itself */
	}
	return sgemm(r, ta, tb, (size_t)m, (size_t)n, (size_t)k, alpha, ma, 0,
		     (size_t)a->shape.dims[1], mb, 0, (size_t)b->shape.dims[1], beta, my, 0,
		     (size_t)n);
}

/* ---- MatMul ---- */

int ocl_op_matmul(ocl_run *r)
{
	mfs_op_ctx *ctx = r->ctx;
	const mfs_tensor *a = ctx->in[0], *b = ctx->in[1];
	mfs_tensor *y = ctx->out[0];
	mfs_mm_geom g;
	mfs_shape ys;
	cl_mem ma, mb, my;
	int rc;

	if (a->dtype != MFS_DT_FLOAT || b->dtype != MFS_DT_FLOAT ||
	    !fits_int(mfs_shape_numel(&y->shape)))
		return OCL_HOST;
	if ((rc = mfs_mm_geometry(ctx, &a->shape, &b->shape, &g, &ys)) < 0)
		return rc;
	if (!(ma = ocl_in(r, 0, &rc)) || !(mb = ocl_in(r, 1, &rc)) ||
	    !(my = ocl_out(r, 0, &rc)))
		return rc;
	if (!g.m || !g.n || !g.nbatch)
		return 0;
	if (!g.k)
		return fill_zero(r, my, mfs_shape_numel(&y->shape));
	if (g.b_single) {
		/* A's batch folds into its rows: one product */
		int64_t offa, offb;
		bool contiguous = true;
		for (int64_t bi = 0; bi < g.nbatch && contiguous; bi++) {
			mfs_mm_batch_offsets(&g, bi, &offa, &offb);
			contiguous = offa == bi * g.m * g.k;
		}
		if (contiguous)
			return sgemm(r, false, false, (size_t)(g.m * g.nbatch), (size_t)g.n,
				     (size_t)g.k, 1.0f, ma, 0, (size_t)g.k, mb, 0, (size_t)g.n, 0.0f,
				     my, 0, (size_t)g.n);
	}
	{
		/* regular strides: one strided-batched call */
		int64_t sa = -1, sb = -1, offa, offb;
		bool regular = true;
		for (int64_t bi = 0; bi < g.nbatch && regular; bi++) {
			mfs_mm_batch_offsets(&g, bi, &offa, &offb);
			if (bi == 1) {
				sa = offa;
				sb = offb;
			}
			if (bi >= 1)
				regular = offa == bi * sa && offb == bi * sb;
			else
				regular = offa == 0 && offb == 0;
		}
		if (regular && g.nbatch > 1 && sa > 0 && sb > 0)
			return sgemm_batched(r, (size_t)g.m, (size_t)g.n, (size_t)g.k, 1.0f,
					     ma, (size_t)g.k, (size_t)sa, mb, (size_t)g.n,
					     (size_t)sb, my, (size_t)g.n, (size_t)(g.m * g.n),
					     (size_t)g.nbatch);
	}
	for (int64_t bi = 0; bi < g.nbatch; bi++) {
		int64_t offa, offb;
		mfs_mm_batch_offsets(&g, bi, &offa, &offb);
		if ((rc = sgemm(r, false, false, (size_t)g.m, (size_t)g.n, (size_t)g.k, 1.0f,
				ma, (size_t)offa, (size_t)g.k, mb, (size_t)offb, (size_t)g.n, 0.0f,
				my, (size_t)(bi * g.m * g.n), (size_t)g.n)))
			return rc;
	}
	return 0;
}

/* ---- Dense (com.modelfs): act(A W + bias) ---- */

/* Y's rows as one GEMM of A's rows by W (CLBlast, as Gemm), then one
 * in-place epilogue pass for the bias and the activation. */
/* Whether a Dense takes dense_gemm_64 (product, bias and activation in
 * one kernel) instead of CLBlast + dense_epilogue: on devices with
 * 256-item groups, where its 64 x 64 tiles give every compute unit one.
 * MODELFS_OCL_DENSE=clblast or =own forces one (A/B runs). */
static bool dense_use_own_gemm(ocl_run *r, int64_t rows, int64_t n)
{
	const char *env = getenv("MODELFS_OCL_DENSE");

	if (ocl_max_group(r) < 256 || (env && !strcmp(env, "clblast")))
		return false;
	if (env && !strcmp(env, "own"))
		return true;
	return ((rows + 63) / 64) * ((n + 63) / 64) >= (int64_t)ocl_compute_units(r);
}

int ocl_op_dense(ocl_run *r)
{
	static const char *const names[] = { "", "Relu", "Gelu", "GeluTanh" };
	static const cl_int ops[] = { OCL_U_COPY, OCL_U_RELU, OCL_U_GELU, OCL_U_GELU_TANH };
	mfs_op_ctx *ctx = r->ctx;
	const mfs_tensor *a = ctx->in[0], *w = ctx->in[1];
	const mfs_tensor *b = ctx->n_in > 2 ? ctx->in[2] : NULL;
	const mfs_tensor *z = ctx->n_in > 3 ? ctx->in[3] : NULL;
	mfs_tensor *y = ctx->out[0];
	const char *act = onnx_attr_string(ctx->node, "activation", "");
	bool tb = onnx_attr_int(ctx->node, "transB", 0) != 0;
	int64_t k, n, rows, ny = mfs_shape_numel(&y->shape);
	cl_int op = -1, hasb = b != NULL, hasz = z != NULL, cn, cols;
	cl_mem ma, mw, mb, mz, my;
	int rc;

	for (int i = 0; i < 4; i++)
		if (!strcmp(act, names[i]))
			op = ops[i];
	if (op < 0 || a->dtype != MFS_DT_FLOAT || w->dtype != MFS_DT_FLOAT ||
	    w->shape.rank != 2 || a->shape.rank < 1 || (b && b->dtype != MFS_DT_FLOAT) ||
	    !fits_int(ny) || !fits_int(mfs_shape_numel(&a->shape)))
		return OCL_HOST;   /* the CPU operator reports or computes it */
	k = w->shape.dims[tb];
	n = w->shape.dims[!tb];
	/* a residual Z of another shape than the product (Add's broadcast)
	 * is the CPU operator's */
	mfs_shape prod = a->shape;
	prod.dims[prod.rank - 1] = n;
	if (z && (z->dtype != MFS_DT_FLOAT || !mfs_shape_equal(&z->shape, &prod) ||
		  !mfs_shape_equal(&y->shape, &prod)))
		return OCL_HOST;
	rows = n ? ny / n : 0;
	if (!(ma = ocl_in(r, 0, &rc)) || !(mw = ocl_in(r, 1, &rc)) ||
	    !(my = ocl_out(r, 0, &rc)))
		return rc;
	mb = mz = my;
	if ((b && !(mb = ocl_in(r, 2, &rc))) || (z && !(mz = ocl_in(r, 3, &rc))))
		return rc;
	if (!ny)
		return 0;
	if (k && dense_use_own_gemm(r, rows, n)) {
		ocl_kid kg = K_DENSE_GEMM_64;
		cl_int crows = (cl_int)rows, cn64 = (cl_int)n, ck = (cl_int)k, ctb = tb;
		if ((rc = OCL_ARG(r, kg, 0, ma)) || (rc = OCL_ARG(r, kg, 1, mw)) ||
		    (rc = OCL_ARG(r, kg, 2, mb)) || (rc = OCL_ARG(r, kg, 3, mz)) ||
		    (rc = OCL_ARG(r, kg, 4, my)) || (rc = OCL_ARG(r, kg, 5, crows)) ||
		    (rc = OCL_ARG(r, kg, 6, cn64)) || (rc = OCL_ARG(r, kg, 7, ck)) ||
		    (rc = OCL_ARG(r, kg, 8, ctb)) || (rc = OCL_ARG(r, kg, 9, hasb)) ||
		    (rc = OCL_ARG(r, kg, 10, hasz)) || (rc = OCL_ARG(r, kg, 11, op)))
			return rc;
		return ocl_launch_groups(r, kg, (size_t)(((rows + 63) / 64) * ((n + 63) / 64)), 256);
	}
	rc = k ? sgemm(r, false, tb, (size_t)rows, (size_t)n, (size_t)k, 1.0f, ma, 0,
		       (size_t)k, mw, 0, (size_t)(tb ? k : n), 0.0f, my, 0, (size_t)n)
	       : fill_zero(r, my, ny);
	if (rc || (!hasb && !hasz && op == OCL_U_COPY))
		return rc;
	cn = (cl_int)ny;
	cols = (cl_int)n;
	ocl_kid kk = K_DENSE_EPILOGUE;
	if ((rc = OCL_ARG(r, kk, 0, my)) || (rc = OCL_ARG(r, kk, 1, mb)) ||
	    (rc = OCL_ARG(r, kk, 2, mz)) || (rc = OCL_ARG(r, kk, 3, cn)) ||
	    (rc = OCL_ARG(r, kk, 4, cols)) || (rc = OCL_ARG(r, kk, 5, hasb)) ||
	    (rc = OCL_ARG(r, kk, 6, hasz)) || (rc = OCL_ARG(r, kk, 7, op)))
		return rc;
	return ocl_launch(r, kk, (size_t)ny);
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
	    !fits_int(mfs_shape_numel(&x->shape)) || !fits_int(mfs_shape_numel(&y->shape)))
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
	    !fits_int(mfs_shape_numel(&x->shape)))
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

/* ---- BatchNormalization (inference) ---- */

int ocl_op_batchnorm(ocl_run *r)
{
	mfs_op_ctx *ctx = r->ctx;
	const mfs_tensor *x = ctx->in[0];
	float eps = onnx_attr_float(ctx->node, "epsilon", 1e-5f);
	int64_t c, inner = 1, n = mfs_shape_numel(&x->shape);
	cl_mem m[5], my;
	cl_int a, b, d;
	int rc;

	if (x->dtype != MFS_DT_FLOAT || x->shape.rank < 2 || ctx->n_in < 5 || !fits_int(n) ||
	    onnx_attr_int(ctx->node, "training_mode", 0) || ctx->opset < 7 ||
	    (ctx->opset < 9 && onnx_attr_int(ctx->node, "spatial", 1) == 0))
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

/* softmax_rows_f32 over rows of len from x into y (y may be x); with a
 * mask c (Attention's Cond, broadcast to the rows by p), a score whose
 * Cond differs from keep is fill first. */
static int softmax_rows(ocl_run *r, cl_mem x, cl_mem y, int64_t rows, int64_t len,
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

int ocl_op_softmax(ocl_run *r)
{
	mfs_op_ctx *ctx = r->ctx;
	const mfs_tensor *x = ctx->in[0];
	int rank = x->shape.rank;
	bool v13 = ctx->opset >= 13;
	int64_t ax = onnx_attr_int(ctx->node, "axis", v13 ? -1 : 1), outer = 1, len = 1, inner = 1;
	cl_int o, l, in, lg = !strcmp(ctx->node->op_type, "LogSoftmax");
	cl_mem mx, my;
	int rc;

	if (x->dtype != MFS_DT_FLOAT || !fits_int(mfs_shape_numel(&x->shape)))
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
		return softmax_rows(r, mx, my, outer, len, lg, NULL, NULL, 0, 0.0f);
	ocl_kid k = K_SOFTMAX_F32;
	if ((rc = OCL_ARG(r, k, 0, mx)) || (rc = OCL_ARG(r, k, 1, my)) ||
	    (rc = OCL_ARG(r, k, 2, o)) || (rc = OCL_ARG(r, k, 3, l)) ||
	    (rc = OCL_ARG(r, k, 4, in)) || (rc = OCL_ARG(r, k, 5, lg)))
		return rc;
	return ocl_launch(r, k, (size_t)(outer * inner));
}

/* ---- Attention (com.modelfs): softmax(mask(scale Q Kt)) V ---- */

/* c_i = alpha a_i b_i (b_i transposed when tb) for the nb items of g,
 * each at its own offsets (layout 1: items are (batch, head) pairs whose
 * matrices interleave in the projections' rows). */
static int sgemm_items(ocl_run *r, const mfs_attn_geom *g, bool tb, size_t m, size_t n,
		       size_t k, float alpha, cl_mem a, const mfs_attn_mat *am, cl_mem b,
		       const mfs_attn_mat *bm, cl_mem c, const mfs_attn_mat *cm)
{
	size_t nb = (size_t)g->nb, *off = malloc(3 * nb * sizeof(size_t));
	float *ab = malloc(2 * nb * sizeof(float));
	CLBlastStatusCode s = CLBlastSuccess;
	cl_event ev;

	if (!off || !ab) {
		free(off);
		free(ab);
		return mfs_op_fail(r->ctx, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < nb; i++) {
		int64_t bi = (int64_t)i / g->heads, h = (int64_t)i % g->heads;
		off[i] = (size_t)mfs_attn_offset(am, bi, h);
		off[nb + i] = (size_t)mfs_attn_offset(bm, bi, h);
		off[2 * nb + i] = (size_t)mfs_attn_offset(cm, bi, h);
		ab[i] = alpha;
		ab[nb + i] = 0.0f;
	}
	if (m && n && nb)
		s = CLBlastSgemmBatched(CLBlastLayoutRowMajor, CLBlastTransposeNo,
					tb ? CLBlastTransposeYes : CLBlastTransposeNo, m, n, k, ab, a,
					off, (size_t)am->ld, b, off + nb, (size_t)bm->ld, ab + nb, c,
					off + 2 * nb, (size_t)cm->ld, nb, ocl_queue(r),
					ocl_prof_event(r, &ev));
	free(off);
	free(ab);
	if (s != CLBlastSuccess)
		return blast_fail(r, s, "SgemmBatched");
	if (m && n && nb)
		ocl_prof_add(r, ev, K_COUNT);
	return 0;
}

/* Per batch item (layout 0: Q's leading dims; layout 1: batch and head):
 * the scores by one batched GEMM with alpha = scale into scratch, the
 * mask and the softmax in place by one work group per score row, then one
 * more batched GEMM by V.  Layout 0 items are evenly strided, layout 1
 * items are addressed one by one (op_geometry.h). */
int ocl_op_attention(ocl_run *r)
{
	mfs_op_ctx *ctx = r->ctx;
	const mfs_tensor *q = ctx->in[0], *kt = ctx->in[1], *v = ctx->in[2];
	const mfs_tensor *c = ctx->n_in > 3 ? ctx->in[3] : NULL;
	float scale = onnx_attr_float(ctx->node, "scale", 1.0f);
	float fill = onnx_attr_float(ctx->node, "fill", 0.0f);
	cl_int keep = onnx_attr_int(ctx->node, "keep_if", 1) != 0;
	int64_t nb, s, t, dk, dv;
	mfs_attn_geom g;
	mfs_shape ss;
	ocl_bc p;
	cl_mem mq, mk, mv, mc = NULL, my, sc;
	int rc;

	if (q->dtype != MFS_DT_FLOAT || kt->dtype != MFS_DT_FLOAT || v->dtype != MFS_DT_FLOAT ||
	    (c && c->dtype != MFS_DT_BOOL) || q->shape.rank < 2 || q->shape.rank > OCL_MAXR ||
	    mfs_attn_geometry(ctx, &g) < 0)
		return OCL_HOST;   /* the CPU operator's error */
	nb = g.nb;
	s = g.s;
	t = g.t;
	dk = g.dk;
	dv = g.dv;
	ss.rank = g.srank;
	memcpy(ss.dims, g.sdims, sizeof(ss.dims));   /* the scores' shape */
	if (!t || !dk || !fits_int(nb * s * t) || !fits_int(mfs_shape_numel(&q->shape)) ||
	    !fits_int(mfs_shape_numel(&kt->shape)) || !fits_int(mfs_shape_numel(&v->shape)) ||
	    !fits_int(mfs_shape_numel(&ctx->out[0]->shape)) ||
	    (c && !ocl_bc_make(&p, &ss, &c->shape, NULL, NULL)))
		return OCL_HOST;   /* empty keys: the CPU operator's error */
	if (!(my = ocl_out(r, 0, &rc)))
		return rc;
	if (!nb || !s || !dv)
		return 0;
	if (!(mq = ocl_in(r, 0, &rc)) || !(mk = ocl_in(r, 1, &rc)) ||
	    !(mv = ocl_in(r, 2, &rc)) || (c && !(mc = ocl_in(r, 3, &rc))) ||
	    !(sc = ocl_scratch(r, sizeof(float) * (size_t)(nb * s * t), &rc)))
		return rc;
	if (g.layout == 1) {
		mfs_attn_mat sm = { 0, g.heads * s * t, s * t, t };
		if ((rc = sgemm_items(r, &g, true, (size_t)s, (size_t)t, (size_t)dk, scale, mq,
				      &g.q, mk, &g.k, sc, &sm)) ||
		    (rc = softmax_rows(r, sc, sc, nb * s, t, 0, mc, &p, keep, fill)))
			return rc;
		return sgemm_items(r, &g, false, (size_t)s, (size_t)dv, (size_t)t, 1.0f, sc, &sm,
				   mv, &g.v, my, &g.y);
	}
	if ((rc = sgemm_batched(r, (size_t)s, (size_t)t, (size_t)dk, scale, mq, (size_t)dk,
				(size_t)(s * dk), mk, (size_t)t, (size_t)(dk * t), sc, (size_t)t,
				(size_t)(s * t), (size_t)nb)) ||
	    (rc = softmax_rows(r, sc, sc, nb * s, t, 0, mc, &p, keep, fill)))
		return rc;
	return sgemm_batched(r, (size_t)s, (size_t)dv, (size_t)t, 1.0f, sc, (size_t)t,
			     (size_t)(s * t), mv, (size_t)dv, (size_t)(t * dv), my, (size_t)dv,
			     (size_t)(s * dv), (size_t)nb);
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
	    (bi && bi->dtype != MFS_DT_FLOAT) || !fits_int(mfs_shape_numel(&x->shape)))
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

int ocl_op_reduce(ocl_run *r)
{
	mfs_op_ctx *ctx = r->ctx;
	const mfs_tensor *x = ctx->in[0];
	bool mean = !strcmp(ctx->node->op_type, "ReduceMean");
	bool axes_input = mean ? ctx->opset >= 18 : ctx->opset >= 13;
	int rank = x->shape.rank, n = 0, rc;
	int64_t axes[MFS_MAX_RANK], st[MFS_MAX_RANK], count = 1, nout;
	unsigned mask = 0;
	ocl_rd p;
	cl_int op = mean;
	cl_mem mx, my;

	if (x->dtype != MFS_DT_FLOAT || rank > OCL_MAXR || !fits_int(mfs_shape_numel(&x->shape)))
		return OCL_HOST;
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
		mask = rank ? (1u << rank) - 1 : 0;
	} else {
		for (int i = 0; i < n; i++) {
			int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
			if (a < 0 || a >= rank)
				return OCL_HOST;
			mask |= 1u << a;
		}
	}
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
	if (!count || !fits_int(count))
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

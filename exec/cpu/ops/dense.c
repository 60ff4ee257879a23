/* Dense (com.modelfs 1): Y = act(A W + bias) + Z, the linear layer the
 * dense rewrite (exec/graph/rewrite_dense.c) makes of MatMul + bias Add (+ Relu
 * or GELU, or + a residual Add).
 *
 * Inputs: A [..., K] float, W [K, N] float ([N, K] with transB = 1, as
 * Gemm stores it), optional bias [N], optional Z.  Output [..., N], or,
 * for a Z of another shape, the shape Add would broadcast the two to.
 * Attributes: activation "" (none), "Relu", "Gelu" (erf) or "GeluTanh";
 * transB.  A Z of the product's shape is added in one pass over Y after
 * the product (the sgemm path's activation pass; oneDNN's binary post-op
 * measured slower on GPT-2-like rows, 0.35 against 0.30 ms a run); any
 * other goes through a scratch product and a broadcast Add (never wrong:
 * the rewrite cannot see shapes).
 *
 * How: a oneDNN matmul primitive built at prepare for the rows of A
 * ([rows, K] x [K, N]), weights reordered once into the layout the
 * primitive picks (when W is a constant of the model, as the rewrite
 * requires), bias and activation applied inside it while the output tile
 * is in cache.  When oneDNN refuses, mfs_sgemm plus one pass for bias and
 * activation computes the same.  Each row count lately run keeps its own
 * primitive (dense_node below), the packed weights shared between them.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dense_util.h"
#include "elementwise.h"
#include "gemm_small.h"
#include "vmath.h"

/* Y = product + Z for a Z of another shape (broadcast). */
EW_BINARY_KERNEL(dense_z_add, float, float, x + y)

enum { ACT_NONE, ACT_RELU, ACT_GELU, ACT_GELU_TANH };

#define DENSE_PICKS 17
#define DENSE_ROW_CLASSES 16
#define DENSE_VARIANTS 8
enum { PICK_ONEDNN = 1, PICK_SGEMM = 2 };
/* Products of more multiply-adds keep the primitive unmeasured: it wins
 * at many rows, and timing eight runs of a decoder's LM head at an
 * 8-stream prompt (1024 x 768 x 50257) took longer than the generation. */
#define DENSE_MEASURE_MAX ((int64_t)1 << 31)

/* Packed weights, shared by the variants whose primitives want the same
 * layout. */
typedef struct dense_pack {
	mfs_dnnl_weights w;
	int refs;
} dense_pack;

typedef struct dense_state {
	int64_t rows, k, n;
	int act;
	int threads;            /* mfs_dnnl_threads() when built */
	bool has_bias, dnnl_ok, tb;
	bool wconst;            /* W is a constant of the model */
	bool has_z;             /* Z of the product's shape: added in place */
	bool z_apart;           /* Z of another shape: the product in zbuf */
	bool small;             /* the few-rows path (gemm_small.h) */
	float *zbuf;
	mfs_dnnl_prim prim;
	dnnl_stream_t stream;
	dnnl_memory_t src_m, bias_m, dst_m;
	dense_pack *pack;       /* W, packed once when constant; NULL: none */
} dense_state;

/* A node's state: a variant per row count lately run (a decoder's prompt
 * and its steps, the batch sizes of in-flight batching), so that going
 * back to a row count rebuilds nothing; the least lately used goes when
 * all are taken.  Without it every change of rows rebuilt the primitive,
 * packed the weights again and timed both paths again: GPT-2 small's
 * 128-token prompt after a generation took seconds instead of a fraction.
 * The path measured fastest (dense_measure) is kept per thread count below
 * DENSE_PICKS and per class of rows (their log2), so that a prompt of a
 * new length in a known class is not timed again: 0 not yet, PICK_ONEDNN
 * or PICK_SGEMM. */
typedef struct dense_node {
	dense_state *var[DENSE_VARIANTS];
	uint64_t used[DENSE_VARIANTS], clock;
	dense_state *cur;
	int8_t pick[DENSE_PICKS][DENSE_ROW_CLASSES];
	mfs_smallm_pack small;  /* W packed for the few-rows path; p NULL: not */
} dense_node;

static int dense_act(mfs_op_ctx *ctx, int *act)
{
	const char *a = onnx_attr_string(ctx->node, "activation", "");
	static const char *const names[] = { "", "Relu", "Gelu", "GeluTanh" };
	for (int i = 0; i < 4; i++)
		if (!strcmp(a, names[i])) {
			*act = i;
			return 0;
		}
	return mfs_op_fail(ctx, EINVAL, "activation '%s' is not one of Relu, Gelu, GeluTanh", a);
}

static int dense_infer(mfs_op_ctx *ctx)
{
	const mfs_tensor *a = ctx->in[0], *w = ctx->n_in > 1 ? ctx->in[1] : NULL;
	const mfs_tensor *b = ctx->n_in > 2 ? ctx->in[2] : NULL;
	const mfs_tensor *z = ctx->n_in > 3 ? ctx->in[3] : NULL;
	int act;

	if (!a || !w || !ctx->out[0])
		return mfs_op_fail(ctx, EINVAL, "needs A, W and an output");
	if (a->dtype != MFS_DT_FLOAT || w->dtype != MFS_DT_FLOAT || (b && b->dtype != MFS_DT_FLOAT) ||
	    (z && z->dtype != MFS_DT_FLOAT))
		return mfs_op_fail(ctx, ENOTSUP, "only float inputs are supported");
	if (a->layout != MFS_LAYOUT_PLAIN || w->layout != MFS_LAYOUT_PLAIN ||
	    (z && z->layout != MFS_LAYOUT_PLAIN))
		return mfs_op_fail(ctx, EINVAL, "inputs must be in plain layout");
	int tb = onnx_attr_int(ctx->node, "transB", 0) != 0;
	if (a->shape.rank < 1 || w->shape.rank != 2 ||
	    a->shape.dims[a->shape.rank - 1] != w->shape.dims[tb])
		return mfs_op_fail(ctx, EINVAL, "A's last dim must equal W's K (W of rank 2)");
	if (b && (b->shape.rank != 1 || b->shape.dims[0] != w->shape.dims[!tb]))
		return mfs_op_fail(ctx, EINVAL, "bias must have W's %lld outputs",
				   (long long)w->shape.dims[!tb]);
	int rc = dense_act(ctx, &act);
	if (rc < 0)
		return rc;
	ctx->out[0]->dtype = MFS_DT_FLOAT;
	ctx->out[0]->shape = a->shape;
	ctx->out[0]->shape.dims[a->shape.rank - 1] = w->shape.dims[!tb];
	if (z && !mfs_shape_equal(&z->shape, &ctx->out[0]->shape)) {
		mfs_shape prod = ctx->out[0]->shape;
		return mfs_broadcast_shape(&prod, &z->shape, &ctx->out[0]->shape, ctx->err);
	}
	return 0;
}

/* Everything oneDNN but the weights, which a rebuild keeps when their
 * layout stays (mfs_dnnl_weights_init). */
static void dense_prims_free(dense_state *s)
{
	mfs_dnnl_prim_destroy(&s->prim);
	dnnl_memory_t *mems[] = { &s->src_m, &s->bias_m, &s->dst_m };
	for (size_t i = 0; i < sizeof(mems) / sizeof(mems[0]); i++) {
		if (*mems[i])
			dnnl_memory_destroy(*mems[i]);
		*mems[i] = NULL;
	}
	if (s->stream)
		dnnl_stream_destroy(s->stream);
	s->stream = NULL;
	s->dnnl_ok = false;
}

/* Drop s's share of its packed weights. */
static void dense_pack_put(dense_state *s)
{
	if (s->pack && --s->pack->refs == 0) {
		mfs_dnnl_weights_free(&s->pack->w);
		free(s->pack);
	}
	s->pack = NULL;
}

static void dense_dnnl_free(dense_state *s)
{
	dense_prims_free(s);
	dense_pack_put(s);
}

/* Weights packed as want for s: another variant's packing of that layout
 * (shared), else s's own (kept when it is that layout already: a rebuild
 * for other threads), else a new one. */
static dnnl_status_t dense_pack_get(dense_node *node, dense_state *s,
				    const dnnl_memory_desc_t *want,
				    const dnnl_memory_desc_t *plain, dnnl_engine_t eng)
{
	if (s->pack && mfs_dnnl_weights_hold(&s->pack->w, want, plain))
		return dnnl_success;
	for (int i = 0; s->wconst && i < DENSE_VARIANTS; i++) {
		dense_state *o = node->var[i];
		if (o && o != s && o->pack && o->wconst &&
		    mfs_dnnl_weights_hold(&o->pack->w, want, plain)) {
			dense_pack_put(s);
			s->pack = o->pack;
			s->pack->refs++;
			return dnnl_success;
		}
	}
	if (!s->pack || s->pack->refs > 1) {
		dense_pack_put(s);
		if (!(s->pack = calloc(1, sizeof(*s->pack))))
			return dnnl_out_of_memory;
		s->pack->refs = 1;
	}
	s->pack->w.is_const = s->wconst;
	return mfs_dnnl_weights_init(&s->pack->w, want, plain, eng);
}

static dnnl_status_t dense_dnnl_build(dense_node *node, dense_state *s, mfs_error *err)
{
	dnnl_engine_t eng = mfs_dnnl_engine(err);
	dnnl_primitive_attr_t attr = NULL;
	dnnl_post_ops_t po = NULL;
	dnnl_primitive_desc_t pd = NULL;
	dnnl_memory_desc_t smd, wany, wplain, bmd, dmd;
	dnnl_matmul_desc_t md;
	dnnl_status_t st;
	dnnl_dims_t sd = { s->rows, s->k }, wd = { s->k, s->n }, bd = { 1, s->n },
		    dd = { s->rows, s->n };
	static const dnnl_alg_kind_t alg[] = { dnnl_alg_kind_undef, dnnl_eltwise_relu,
					       dnnl_eltwise_gelu_erf, dnnl_eltwise_gelu_tanh };

	if (!eng)
		return dnnl_runtime_error;
#define CK(call) do { if ((st = (call)) != dnnl_success) goto out; } while (0)
	CK(dnnl_memory_desc_init_by_tag(&smd, 2, sd, dnnl_f32, dnnl_ab));
	CK(dnnl_memory_desc_init_by_tag(&wany, 2, wd, dnnl_f32, dnnl_format_tag_any));
	CK(dnnl_memory_desc_init_by_tag(&wplain, 2, wd, dnnl_f32, s->tb ? dnnl_ba : dnnl_ab));
	CK(dnnl_memory_desc_init_by_tag(&bmd, 2, bd, dnnl_f32, dnnl_ab));
	CK(dnnl_memory_desc_init_by_tag(&dmd, 2, dd, dnnl_f32, dnnl_ab));
	CK(dnnl_matmul_desc_init(&md, &smd, s->wconst ? &wany : &wplain,
				 s->has_bias ? &bmd : NULL, &dmd));
	CK(mfs_dnnl_attr_create(&attr));
	if (s->act != ACT_NONE) {
		CK(dnnl_post_ops_create(&po));
		CK(dnnl_post_ops_append_eltwise(po, 1.0f, alg[s->act], 0.0f, 0.0f));
		CK(dnnl_primitive_attr_set_post_ops(attr, po));
	}
	CK(dnnl_primitive_desc_create(&pd, &md, attr, eng, NULL));
	const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
	CK(mfs_dnnl_prim_create(&s->prim, pd, eng));
	CK(dnnl_stream_create(&s->stream, eng, dnnl_stream_default_flags));
	CK(dnnl_memory_create(&s->src_m, &smd, eng, DNNL_MEMORY_NONE));
	CK(dnnl_memory_create(&s->dst_m, &dmd, eng, DNNL_MEMORY_NONE));
	if (s->has_bias)
		CK(dnnl_memory_create(&s->bias_m, &bmd, eng, DNNL_MEMORY_NONE));
	CK(dense_pack_get(node, s, wmd, &wplain, eng));
	s->dnnl_ok = true;
#undef CK
out:
	if (po)
		dnnl_post_ops_destroy(po);
	if (attr)
		dnnl_primitive_attr_destroy(attr);
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	if (st != dnnl_success)
		dense_dnnl_free(s);
	return st;
}

/* MFS_DENSE=sgemm or =onednn forces one path (tests, comparisons). */
static bool dense_force(const char *path)
{
	const char *e = getenv("MFS_DENSE");
	return e && !strcmp(e, path);
}

static void dense_measure(mfs_op_ctx *ctx, dense_state *s);

/* The class of a row count for the kept picks: its log2. */
static int row_class(int64_t rows)
{
	int c = 0;
	while (rows > 1 && c < DENSE_ROW_CLASSES - 1) {
		rows >>= 1;
		c++;
	}
	return c;
}

/* The variant of node for key's shapes (threads aside), or a free or the
 * least lately used slot's, emptied; NULL without memory. */
static dense_state *dense_variant(dense_node *node, const dense_state *key)
{
	int slot = 0;
	for (int i = 0; i < DENSE_VARIANTS; i++) {
		dense_state *v = node->var[i];
		if (v && v->rows == key->rows && v->k == key->k && v->n == key->n &&
		    v->act == key->act && v->tb == key->tb && v->has_bias == key->has_bias &&
		    v->wconst == key->wconst && v->has_z == key->has_z &&
		    v->z_apart == key->z_apart) {
			slot = i;
			goto found;
		}
		if (!v || (node->var[slot] && node->used[i] < node->used[slot]))
			slot = i;
	}
	if (node->var[slot]) {
		dense_dnnl_free(node->var[slot]);
		free(node->var[slot]->zbuf);
		free(node->var[slot]);
		node->var[slot] = NULL;
	}
	if (!(node->var[slot] = calloc(1, sizeof(dense_state))))
		return NULL;
	*node->var[slot] = *key;
	node->var[slot]->threads = -1;   /* nothing built yet */
found:
	node->used[slot] = ++node->clock;
	return node->var[slot];
}

/* A decoder's step (rows <= MFS_SMALLM_ROWS) on a constant W: the
 * few-rows kernel, each weight read once for all rows (gemm_small.c; at
 * 8 rows of GPT-2 small it beat both other paths, docs/PERFORMANCE.md),
 * W packed once per node for every such variant.  1: s takes it, 0: not
 * (MFS_DENSE forces another path, or the CPU lacks AVX-512), < 0 error. */
static int dense_small_prepare(mfs_op_ctx *ctx, dense_node *node, dense_state *s)
{
	const mfs_tensor *w = ctx->in[1];
	s->small = false;
	if (!s->wconst || s->rows > MFS_SMALLM_ROWS || s->rows < 1 || s->k < 1 || !w->data ||
	    getenv("MFS_DENSE") || !mfs_smallm_usable())
		return 0;
	if (!node->small.p && mfs_smallm_pack_init(&node->small, w->data, s->k, s->n, s->tb))
		return mfs_op_fail(ctx, ENOMEM, "out of memory packing weights");
	dense_pack_put(s);
	s->small = true;
	return 1;
}

static int dense_prepare(mfs_op_ctx *ctx)
{
	const mfs_tensor *a = ctx->in[0], *w = ctx->in[1];
	dense_node *node = *ctx->state;
	bool tb = onnx_attr_int(ctx->node, "transB", 0) != 0;
	int64_t k = w->shape.dims[tb], n = w->shape.dims[!tb];
	int64_t rows = k ? mfs_shape_numel(&a->shape) / k : 0;
	const mfs_tensor *z = ctx->n_in > 3 ? ctx->in[3] : NULL;
	/* Z apart unless of the product's shape (a Z larger than the
	 * product, which Add broadcasts the product to, is of Y's shape but
	 * not the product's) */
	mfs_shape prod = a->shape;
	prod.dims[prod.rank - 1] = n;
	bool z_apart = z && !mfs_shape_equal(&z->shape, &prod);
	int act, rc = dense_act(ctx, &act);

	if (rc < 0)
		return rc;
	if (!node && !(node = *ctx->state = calloc(1, sizeof(*node))))
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	dense_state key = { .rows = rows, .k = k, .n = n, .act = act, .tb = tb,
			    .has_bias = ctx->n_in > 2 && ctx->in[2],
			    .wconst = (ctx->const_in >> 1) & 1, .has_z = z && !z_apart,
			    .z_apart = z_apart };
	dense_state *s = node->cur = dense_variant(node, &key);
	if (!s)
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	int threads = mfs_dnnl_threads();
	if (s->threads == threads)
		return 0;
	/* Another thread count on the same shapes keeps the packed weights
	 * (dense_pack_get) and the zbuf. */
	dense_prims_free(s);
	s->threads = threads;
	if (z_apart && !s->zbuf && rows * n > 0 &&
	    !(s->zbuf = malloc(sizeof(float) * (size_t)(rows * n))))
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	if ((rc = dense_small_prepare(ctx, node, s)) != 0)
		return rc < 0 ? rc : 0;
	int8_t *known = threads < DENSE_PICKS ? &node->pick[threads][row_class(rows)] : NULL;
	if (rows > 0 && k > 0 && n > 0 && !dense_force("sgemm") && (!known || *known != PICK_SGEMM) &&
	    dense_dnnl_build(node, s, ctx->err) == dnnl_success && !dense_force("onednn") &&
	    (!known || !*known) && rows * k * n <= DENSE_MEASURE_MAX) {
		dense_measure(ctx, s);   /* on failure: the sgemm path */
		if (known)
			*known = s->dnnl_ok ? PICK_ONEDNN : PICK_SGEMM;
	}
	if (!s->dnnl_ok)
		dense_pack_put(s);   /* the sgemm path reads W as it is */
	return 0;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static void epilogue(float *y, const float *z, int64_t n, int act)
{
	switch (act) {
	case ACT_RELU:
		#pragma omp simd
		for (int64_t i = 0; i < n; i++)
			y[i] = y[i] > 0 ? y[i] : 0;
		break;
	case ACT_GELU:
		#pragma omp simd
		for (int64_t i = 0; i < n; i++)
			y[i] = ew_geluf(y[i]);
		break;
	case ACT_GELU_TANH:
		#pragma omp simd
		for (int64_t i = 0; i < n; i++)
			y[i] = ew_gelu_tanhf(y[i]);
		break;
	}
	if (z) {
		#pragma omp simd
		for (int64_t i = 0; i < n; i++)
			y[i] += z[i];
	}
}

/* The pass after a product: act (ACT_NONE: none) then + z (NULL: none)
 * over Y's rows; nothing when there is nothing to do. */
static void dense_finish(const dense_state *s, float *y, const float *z, int act)
{
	if (act == ACT_NONE && !z)
		return;
	#pragma omp parallel for if (s->rows * s->n > 32768) schedule(static)
	for (int64_t r = 0; r < s->rows; r++)
		epilogue(y + r * s->n, z ? z + r * s->n : NULL, s->n, act);
}

/* Without oneDNN: rows of Y start as the bias, sgemm adds A W, then the
 * activation and Z (z: of Y's shape, or NULL). */
static void dense_sgemm(const dense_state *s, const float *a, const float *w,
			const float *b, const float *z, float *y)
{
	for (int64_t r = 0; r < s->rows; r++) {
		if (b)
			memcpy(y + r * s->n, b, sizeof(float) * (size_t)s->n);
		else
			memset(y + r * s->n, 0, sizeof(float) * (size_t)s->n);
	}
	if (s->k > 0)
		mfs_sgemm(false, s->tb, s->rows, s->n, s->k, 1.0f, a, s->k, w, s->tb ? s->k : s->n,
			  1.0f, y, s->n);
	dense_finish(s, y, z, s->act);
}

/* The oneDNN primitive (product, bias, activation) on a, w, b into y,
 * then + z. */
static int dense_prim(mfs_op_ctx *ctx, dense_state *s, const float *a, const float *w,
		      const float *b, const float *z, float *y)
{
	dnnl_status_t st;
	int rc = mfs_dnnl_weights_set(ctx, &s->pack->w, w, s->stream);
	if (rc < 0)
		return rc;
	dnnl_memory_set_data_handle(s->src_m, (void *)a);
	dnnl_memory_set_data_handle(s->dst_m, y);
	dnnl_exec_arg_t args[4] = {
		{ DNNL_ARG_SRC, s->src_m }, { DNNL_ARG_WEIGHTS, s->pack->w.mem },
		{ DNNL_ARG_DST, s->dst_m }, { DNNL_ARG_BIAS, s->bias_m },
	};
	if (s->has_bias)
		dnnl_memory_set_data_handle(s->bias_m, (void *)b);
	if ((st = mfs_dnnl_prim_exec(&s->prim, s->stream, s->has_bias ? 4 : 3, args)))
		return mfs_op_fail(ctx, EIO, "oneDNN matmul failed: %s", mfs_dnnl_status_str(st));
	dense_finish(s, y, z, ACT_NONE);
	return 0;
}

static int dense_run(mfs_op_ctx *ctx)
{
	dense_node *node = *ctx->state;
	dense_state *s = node ? node->cur : NULL;
	const float *a = ctx->in[0]->data, *w = ctx->in[1]->data;
	const float *b = ctx->n_in > 2 && ctx->in[2] ? ctx->in[2]->data : NULL;
	const float *z = s && s->has_z ? ctx->in[3]->data : NULL;
	/* Z of another shape: the product first, then Add's broadcast */
	float *y = s && s->z_apart ? s->zbuf : ctx->out[0]->data;
	int rc = 0;

	if (!s)
		return 0;
	if (s->rows > 0 && s->n > 0) {
		if (s->small) {
			mfs_smallm_gemm(&node->small, s->rows, a, s->k, b, y, s->n);
			dense_finish(s, y, z, s->act);
		} else if (!s->dnnl_ok || s->k == 0)
			dense_sgemm(s, a, w, b, z, y);
		else
			rc = dense_prim(ctx, s, a, w, b, z, y);
	}
	if (rc == 0 && s->z_apart) {
		mfs_tensor prod = { .dtype = MFS_DT_FLOAT, .layout = MFS_LAYOUT_PLAIN,
				    .shape = ctx->in[0]->shape, .data = s->zbuf };
		prod.shape.dims[prod.shape.rank - 1] = s->n;
		prod.nbytes = (size_t)(s->rows * s->n) * sizeof(float);
		const mfs_tensor *in[2] = { &prod, ctx->in[3] };
		ew_params ep = { 0 };
		ew_apply(dense_z_add, in, 2, ctx->out[0], &ep);
	}
	return rc;
}

static void dense_release(void *state)
{
	dense_node *node = state;
	if (!node)
		return;
	for (int i = 0; i < DENSE_VARIANTS; i++) {
		dense_state *s = node->var[i];
		if (!s)
			continue;
		dense_dnnl_free(s);
		free(s->zbuf);
		free(s);
	}
	mfs_smallm_pack_free(&node->small);
	free(node);
}

MFS_OP_DOMAIN("com.modelfs", Dense, 1, .flags = MFS_OP_HALF_VIA_FLOAT, .infer = dense_infer,
	      .prepare = dense_prepare, .run = dense_run, .release = dense_release);

/* The primitive against mfs_sgemm plus the epilogue pass, on this node's
 * inputs into a scratch output: three timed rounds each after a warm-up,
 * alternately; the primitive goes when it lost.  Why: at one or a few
 * rows (the MLP at batch 1) the primitive's fixed cost outweighs packed
 * weights; at the encoder's 128 rows it wins (docs/PERFORMANCE.md). */
static void dense_measure(mfs_op_ctx *ctx, dense_state *s)
{
	const float *a = ctx->in[0]->data, *w = ctx->in[1]->data;
	const float *b = s->has_bias ? ctx->in[2]->data : NULL;
	const float *z = s->has_z ? ctx->in[3]->data : NULL;
	double best[2] = { 1e30, 1e30 };
	float *tmp;

	if (!a || !w || (s->has_bias && !b) || (s->has_z && !z) ||
	    !(tmp = malloc(sizeof(float) * (size_t)(s->rows * s->n))))
		return;   /* nothing to time with: keep the primitive */
	for (int round = 0; round < 4; round++)
		for (int path = 0; path < 2; path++) {
			double t0 = mfs_seconds();
			if (path == 0 && dense_prim(ctx, s, a, w, b, z, tmp) < 0) {
				mfs_error_clear(ctx->err);
				best[0] = 1e30;
				round = 4;
				break;
			}
			if (path == 1)
				dense_sgemm(s, a, w, b, z, tmp);
			double t = mfs_seconds() - t0;
			if (round > 0 && t < best[path])
				best[path] = t;
		}
	free(tmp);
	if (best[1] < best[0])
		dense_dnnl_free(s);
}

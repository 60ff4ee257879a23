/* op_half.c - FP16 and BFLOAT16 through operators that compute only in FP32
 * (flag MFS_OP_HALF_VIA_FLOAT in exec/op/op.h).
 *
 * One mechanism for every such operator: the registry (op_registry.c) hands
 * out, for a flagged definition, a wrapper definition whose callbacks
 *   infer   present FP16/BF16 inputs to the operator as FLOAT (data hidden:
 *           no flagged operator derives a shape from float data) and turn
 *           its FLOAT outputs back into the half type;
 *   prepare / run
 *           convert the half inputs into FP32 buffers kept in the node's
 *           state, call the operator on them with FP32 output buffers, and
 *           round the outputs back to the half type.
 *
 * Why conversion at dispatch rather than a load-time graph rewrite with
 * Cast nodes: dtypes of intermediate values are only known once infer has
 * run (and not at all at compile when shapes are dynamic), the compiled
 * graph borrows node and value names from the ONNX model, and every
 * backend (CPU, the OpenCL host fallback, constant folding, the docs'
 * probes) already goes through the definition's callbacks - so wrapping
 * the callbacks covers all of them without touching any call site.
 *
 * Costs: buffers live in the node's per-execution-context state and only
 * grow, so a warm run does no malloc.  Inputs marked constant
 * (ctx->const_in: weights) are converted once and reused while their data
 * pointer and size stay the same.  Operators see ordinary FP32 tensors, so
 * their prepare() packs the converted weights once as for an FP32 model.
 *
 * Rules: only FLOAT16 and BFLOAT16 inputs are converted; integer inputs
 * (Gemm int32, MaxPool int8, indices) pass untouched.  A node mixing a half
 * type with FLOAT/DOUBLE or with the other half type is passed to the
 * operator unchanged, which refuses it (an op with one T must not silently
 * accept mixed inputs).  Nodes without half inputs call the operator
 * directly (one extra indirection). */
#include <stdlib.h>
#include <string.h>

#include "op_half.h"

/* Widest node the wrapper converts (flagged ops have at most 8 inputs). */
#define HALF_MAX_ARGS 24
#define HALF_PAD 8

typedef struct half_state {
	const mfs_op_def *inner_def;
	void *inner;                  /* the operator's own state */
	mfs_tensor in32[HALF_MAX_ARGS];
	size_t in_cap[HALF_MAX_ARGS];
	const void *in_src[HALF_MAX_ARGS]; /* constant converted from */
	size_t in_src_bytes[HALF_MAX_ARGS];
	mfs_tensor out32[HALF_MAX_ARGS];
	size_t out_cap[HALF_MAX_ARGS];
} half_state;

static const mfs_op_def *inner_of(const mfs_op_ctx *ctx)
{
	return ((const mfs_half_def *)ctx->def)->inner;
}

static bool is_half(mfs_dtype dt)
{
	return dt == MFS_DT_FLOAT16 || dt == MFS_DT_BFLOAT16;
}

/* The half type to convert from, or UNDEFINED: no half input, or a mix
 * the operator must judge itself. */
static mfs_dtype half_mode(const mfs_op_ctx *ctx)
{
	mfs_dtype ht = MFS_DT_UNDEFINED;
	bool wide = false;

	for (int k = 0; k < ctx->n_in; k++) {
		mfs_dtype dt;
		if (!ctx->in[k])
			continue;
		dt = ctx->in[k]->dtype;
		if (is_half(dt)) {
			if (ht != MFS_DT_UNDEFINED && ht != dt)
				return MFS_DT_UNDEFINED;
			ht = dt;
		} else if (dt == MFS_DT_FLOAT || dt == MFS_DT_DOUBLE) {
			wide = true;
		}
	}
	if (wide || ctx->n_in > HALF_MAX_ARGS || ctx->n_out > HALF_MAX_ARGS)
		return MFS_DT_UNDEFINED;
	return ht;
}

static size_t numel_of(const mfs_tensor *t)
{
	int64_t n = mfs_shape_numel(&t->shape);
	return n > 0 ? (size_t)n : 0;
}

static void to_float(float *dst, const uint16_t *src, size_t n, mfs_dtype ht)
{
	if (ht == MFS_DT_FLOAT16) {
#pragma omp parallel for if (n > 65536) schedule(static)
		for (size_t i = 0; i < n; i++)
			dst[i] = mfs_half_to_float(src[i]);
	} else {
#pragma omp parallel for if (n > 65536) schedule(static)
		for (size_t i = 0; i < n; i++)
			dst[i] = mfs_bf16_to_float(src[i]);
	}
}

static void from_float(uint16_t *dst, const float *src, size_t n, mfs_dtype ht)
{
	if (ht == MFS_DT_FLOAT16) {
#pragma omp parallel for if (n > 65536) schedule(static)
		for (size_t i = 0; i < n; i++)
			dst[i] = mfs_float_to_half(src[i]);
	} else {
#pragma omp parallel for if (n > 65536) schedule(static)
		for (size_t i = 0; i < n; i++)
			dst[i] = mfs_float_to_bf16(src[i]);
	}
}

/* Grow-only buffer of at least bytes (never shrinks: no malloc once warm). */
static int grow(void **buf, size_t *cap, size_t bytes)
{
	void *p;
	if (bytes <= *cap && *buf)
		return 0;
	p = realloc(*buf, bytes ? bytes : 1);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*cap = bytes;
	return 0;
}

static int get_state(mfs_op_ctx *ctx, half_state **out)
{
	half_state *hs;

	if (!ctx->state)
		return mfs_op_fail(ctx, EINVAL, "no state slot for the operator");
	hs = *ctx->state;
	if (!hs) {
		hs = calloc(1, sizeof(*hs));
		if (!hs)
			return mfs_op_fail(ctx, ENOMEM, "out of memory");
		hs->inner_def = inner_of(ctx);
		*ctx->state = hs;
	}
	*out = hs;
	return 0;
}

/* A context for the operator itself: its own definition and state. */
static mfs_op_ctx inner_ctx(const mfs_op_ctx *ctx, half_state *hs)
{
	mfs_op_ctx ic = *ctx;
	ic.def = inner_of(ctx);
	ic.state = hs ? &hs->inner : NULL;
	return ic;
}

static int half_infer(mfs_op_ctx *ctx)
{
	mfs_dtype ht = half_mode(ctx);
	mfs_tensor t[HALF_MAX_ARGS];
	mfs_tensor *p[HALF_MAX_ARGS + HALF_PAD];
	mfs_op_ctx ic = *ctx;
	int rc;

	ic.def = inner_of(ctx);
	if (ht == MFS_DT_UNDEFINED)
		return ic.def->infer(&ic);
	memset(p, 0, sizeof(p));
	for (int k = 0; k < ctx->n_in; k++) {
		if (!ctx->in[k])
			continue;
		t[k] = *ctx->in[k];
		if (is_half(t[k].dtype)) {
			t[k].dtype = MFS_DT_FLOAT;
			t[k].data = NULL;
			t[k].owns_data = false;
			t[k].nbytes = numel_of(&t[k]) * sizeof(float);
		}
		p[k] = &t[k];
	}
	ic.in = p;
	rc = ic.def->infer(&ic);
	if (rc < 0)
		return rc;
	for (int k = 0; k < ctx->n_out; k++)
		if (ctx->out[k] && ctx->out[k]->dtype == MFS_DT_FLOAT)
			ctx->out[k]->dtype = ht;
	return rc;
}

/* Fill hs->in32 from ctx->in (converted) and point p[] at the result. */
static int convert_inputs(mfs_op_ctx *ctx, half_state *hs, mfs_dtype ht,
			  mfs_tensor **p)
{
	for (int k = 0; k < ctx->n_in; k++) {
		const mfs_tensor *src = ctx->in[k];
		mfs_tensor *dst = &hs->in32[k];
		size_t n, bytes;
		bool is_const;

		if (!src) {
			p[k] = NULL;
			continue;
		}
		if (!is_half(src->dtype)) {
			p[k] = (mfs_tensor *)src;
			continue;
		}
		n = numel_of(src);
		bytes = n * sizeof(float);
		is_const = k < 64 && (ctx->const_in >> k & 1);
		p[k] = dst;
		dst->dtype = MFS_DT_FLOAT;
		dst->shape = src->shape;
		dst->layout = src->layout;
		dst->nbytes = bytes;
		dst->owns_data = false;
		if (!src->data) {      /* infer-only view (no data known) */
			dst->data = NULL;
			continue;
		}
		if (is_const && hs->in_src[k] == src->data &&
		    hs->in_src_bytes[k] == src->nbytes && dst->data)
			continue;      /* weights converted on an earlier call */
		if (src->nbytes < n * 2)
			return mfs_op_fail(ctx, EINVAL,
					   "input %d holds %zu bytes, %zu expected",
					   k, src->nbytes, n * 2);
		if (grow(&dst->data, &hs->in_cap[k], bytes))
			return mfs_op_fail(ctx, ENOMEM, "out of memory");
		to_float(dst->data, src->data, n, ht);
		hs->in_src[k] = is_const ? src->data : NULL;
		hs->in_src_bytes[k] = src->nbytes;
	}
	return 0;
}

/* FP32 stand-ins for the outputs; with_data: buffers sized to hold them. */
static int float_outputs(mfs_op_ctx *ctx, half_state *hs, mfs_dtype ht,
			 mfs_tensor **p, bool with_data)
{
	for (int k = 0; k < ctx->n_out; k++) {
		const mfs_tensor *o = ctx->out[k];
		mfs_tensor *f = &hs->out32[k];
		size_t bytes;

		if (!o || o->dtype != ht) {
			p[k] = (mfs_tensor *)o;
			continue;
		}
		bytes = numel_of(o) * sizeof(float);
		f->dtype = MFS_DT_FLOAT;
		f->shape = o->shape;
		f->layout = o->layout;
		f->nbytes = bytes;
		f->owns_data = false;
		if (with_data &&
		    grow(&f->data, &hs->out_cap[k], bytes))
			return mfs_op_fail(ctx, ENOMEM, "out of memory");
		p[k] = f;
	}
	return 0;
}

/* prepare (run == false) or run the operator on FP32 views of the node:
 * the same conversion for both, only run rounds the outputs back. */
static int half_call(mfs_op_ctx *ctx, bool run)
{
	mfs_dtype ht = half_mode(ctx);
	mfs_tensor *pin[HALF_MAX_ARGS + HALF_PAD] = { 0 };
	mfs_tensor *pout[HALF_MAX_ARGS + HALF_PAD] = { 0 };
	half_state *hs = NULL;
	mfs_op_ctx ic;
	int rc = get_state(ctx, &hs);

	if (rc)
		return rc;
	ic = inner_ctx(ctx, hs);
	int (*call)(mfs_op_ctx *) = run ? ic.def->run : ic.def->prepare;
	if (!call)
		return 0;
	if (ht == MFS_DT_UNDEFINED)
		return call(&ic);
	rc = convert_inputs(ctx, hs, ht, pin);
	if (!rc)
		rc = float_outputs(ctx, hs, ht, pout, run);
	if (rc)
		return rc;
	ic.in = pin;
	ic.out = pout;
	rc = call(&ic);
	if (rc || !run)
		return rc;
	for (int k = 0; k < ctx->n_out; k++) {
		mfs_tensor *o = ctx->out[k];
		if (!o || pout[k] == o)
			continue;
		o->layout = pout[k]->layout;
		from_float(o->data, pout[k]->data, numel_of(o), ht);
	}
	return 0;
}

static int half_prepare(mfs_op_ctx *ctx)
{
	return half_call(ctx, false);
}

static int half_run(mfs_op_ctx *ctx)
{
	return half_call(ctx, true);
}

static void half_release(void *state)
{
	half_state *hs = state;

	if (!hs)
		return;
	if (hs->inner && hs->inner_def->release)
		hs->inner_def->release(hs->inner);
	for (int k = 0; k < HALF_MAX_ARGS; k++) {
		free(hs->in32[k].data);
		free(hs->out32[k].data);
	}
	free(hs);
}

void mfs_op_half_wrap(mfs_half_def *w, const mfs_op_def *inner)
{
	w->def = *inner;
	w->def.infer = half_infer;
	/* no prepare for operators without one: the engine counts prepares */
	w->def.prepare = inner->prepare ? half_prepare : NULL;
	w->def.run = half_run;
	w->def.release = half_release;
	w->inner = inner;
}

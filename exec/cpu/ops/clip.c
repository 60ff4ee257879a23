/* Clip: x limited to [min, max].  Opsets 1-6 take min/max as float
 * attributes (float types only); since 11 they are optional scalar inputs
 * of the input's type, and since 12 every numeric type is accepted.  A
 * missing bound does not limit; min > max gives max everywhere (ONNX);
 * NaN passes through. */
#include "elementwise.h"

/* One branch-free loop per combination of bounds, so each vectorises. */
#define EW_CLIP_LOOP(LO, HI)                                                \
	EW_SIMD                                                             \
	for (int64_t j = 0; j < n; j++) {                                   \
		__typeof__(lo) x = a[j];                                    \
		x = (LO) && x < lo ? lo : x;                                \
		o[j] = (HI) && x > hi ? hi : x;                             \
	}

#define EW_DEF_CLIP(sfx, T, DT, name)                                       \
	EW_TARGETS static void name##_##sfx(char *out, const char *const *in, \
					    const int64_t *step, int64_t n, \
					    const ew_params *p)             \
	{                                                                   \
		const T *a = (const T *)in[0];                              \
		T *o = (T *)out;                                            \
		T lo = p->lo ? *(const T *)p->lo : 0;                       \
		T hi = p->hi ? *(const T *)p->hi : 0;                       \
		(void)step;     /* unary: X has the output's shape */       \
		if (p->lo && p->hi) {                                       \
			EW_CLIP_LOOP(1, 1)                                  \
		} else if (p->lo) {                                         \
			EW_CLIP_LOOP(1, 0)                                  \
		} else if (p->hi) {                                         \
			EW_CLIP_LOOP(0, 1)                                  \
		} else {                                                    \
			EW_CLIP_LOOP(0, 0)                                  \
		}                                                           \
	}
EW_T_NUM(EW_DEF_CLIP, clip)

static const ew_table clip_tab = { 1, { EW_T_NUM(EW_ENTRY, clip) } };
static const ew_table clipf_tab = { 1, { EW_T_FLOAT(EW_ENTRY, clip) } };

/* Bounds converted to the kernel's type: float for float16/bfloat16. */
typedef union bound {
	float f;
	double d;
	char raw[8];
} bound;

static const void *bound_from_float(mfs_dtype dt, double v, bound *b)
{
	if (dt == MFS_DT_DOUBLE)
		b->d = v;
	else
		b->f = (float)v;
	return b;
}

static int clip6_infer(mfs_op_ctx *ctx)
{
	return ew_infer(ctx, &clipf_tab, MFS_DT_UNDEFINED);
}

static int clip6_run(mfs_op_ctx *ctx)
{
	mfs_dtype dt = ctx->in[0]->dtype;
	bound lo, hi;
	const onnx_attr *amin = onnx_node_attr(ctx->node, "min");
	const onnx_attr *amax = onnx_node_attr(ctx->node, "max");
	ew_params p = { 0 };
	const mfs_tensor *in = ctx->in[0];

	if (amin && amin->type == ONNX_ATTR_FLOAT)
		p.lo = bound_from_float(dt, amin->f, &lo);
	if (amax && amax->type == ONNX_ATTR_FLOAT)
		p.hi = bound_from_float(dt, amax->f, &hi);
	return ew_run(ctx, &clipf_tab, &in, 1, ctx->out[0], &p);
}

static const mfs_tensor *bound_input(const mfs_op_ctx *ctx, int k)
{
	return k < ctx->n_in ? ctx->in[k] : NULL;
}

static int clip11_infer(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->n_in >= 1 ? ctx->in[0] : NULL;
	const ew_table *tab = ctx->opset >= 12 ? &clip_tab : &clipf_tab;

	if (!x)
		return mfs_op_fail(ctx, EINVAL, "input is missing");
	if (!ew_table_has(tab, x->dtype))
		return mfs_op_fail(ctx, ENOTSUP, "input type %s is not supported",
				   mfs_dtype_onnx_name(x->dtype));
	if (ctx->n_in > 3)
		return mfs_op_fail(ctx, EINVAL, "takes at most 3 inputs");
	for (int k = 1; k < 3; k++) {
		const mfs_tensor *b = bound_input(ctx, k);
		if (!b)
			continue;
		if (b->dtype != x->dtype)
			return mfs_op_fail(ctx, EINVAL, "%s has type %s, input has %s",
					   k == 1 ? "min" : "max",
					   mfs_dtype_onnx_name(b->dtype),
					   mfs_dtype_onnx_name(x->dtype));
		if (mfs_shape_numel(&b->shape) != 1)
			return mfs_op_fail(ctx, EINVAL, "%s must be a scalar",
					   k == 1 ? "min" : "max");
	}
	ctx->out[0]->dtype = x->dtype;
	ctx->out[0]->shape = x->shape;
	ctx->out[0]->layout = x->layout;
	return 0;
}

static int clip11_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];
	ew_params p = { 0 };
	bound conv[2];
	const void **dst[2] = { &p.lo, &p.hi };

	for (int k = 1; k < 3; k++) {
		const mfs_tensor *b = bound_input(ctx, k);
		if (!b || !b->data)
			continue;
		if (ew_is_half(b->dtype))
			*dst[k - 1] = bound_from_float(MFS_DT_FLOAT,
						       mfs_tensor_get_f64(b, 0),
						       &conv[k - 1]);
		else
			*dst[k - 1] = b->data;
	}
	return ew_run(ctx, &clip_tab, &x, 1, ctx->out[0], &p);
}

MFS_OP(Clip, 1, .flags = MFS_OP_NHWC_OK, .infer = clip6_infer, .run = clip6_run);
MFS_OP(Clip, 11, .flags = MFS_OP_NHWC_OK, .infer = clip11_infer, .run = clip11_run);

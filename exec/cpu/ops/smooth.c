/* Smooth activations: Sigmoid, Softplus, Softsign, Mish, Gelu (opset 20,
 * approximate "none" = exact erf form, or "tanh").  Float types. */
#include <string.h>
#include <tgmath.h>

#include "elementwise.h"

/* log(1 + e^x) without overflow for large x */
static inline double softplus_d(double x)
{
	return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}
#define EW_SOFTPLUS(x) _Generic((x), float: ew_softplusf, default: softplus_d)(x)

EW_T_FLOAT(EW_DEF_UNARY, sigmoid, 1 / (1 + EW_EXP(-x)))
EW_T_FLOAT(EW_DEF_UNARY, softplus, EW_SOFTPLUS(x))
EW_T_FLOAT(EW_DEF_UNARY, softsign, x / (1 + fabs(x)))
EW_T_FLOAT(EW_DEF_UNARY, mish, x * EW_TANH(EW_SOFTPLUS(x)))
EW_T_FLOAT(EW_DEF_UNARY, gelu, (ew_t)0.5 * x * (1 + EW_ERF(x * (ew_t)0.70710678118654752440)))
EW_T_FLOAT(EW_DEF_UNARY, gelut, (ew_t)0.5 * x *
	   (1 + EW_TANH((ew_t)0.79788456080286535588 * (x + (ew_t)0.044715 * x * x * x))))

static const ew_table sigmoid_tab = { 1, { EW_T_FLOAT(EW_ENTRY, sigmoid) } };
static const ew_table softplus_tab = { 1, { EW_T_FLOAT(EW_ENTRY, softplus) } };
static const ew_table softsign_tab = { 1, { EW_T_FLOAT(EW_ENTRY, softsign) } };
static const ew_table mish_tab = { 1, { EW_T_FLOAT(EW_ENTRY, mish) } };
static const ew_table gelu_tab = { 1, { EW_T_FLOAT(EW_ENTRY, gelu) } };
static const ew_table gelut_tab = { 1, { EW_T_FLOAT(EW_ENTRY, gelut) } };

EW_OP_FUNCS(sigmoid, &sigmoid_tab, MFS_DT_UNDEFINED, NULL)
EW_OP_FUNCS(softplus, &softplus_tab, MFS_DT_UNDEFINED, NULL)
EW_OP_FUNCS(softsign, &softsign_tab, MFS_DT_UNDEFINED, NULL)
EW_OP_FUNCS(mish, &mish_tab, MFS_DT_UNDEFINED, NULL)

static const ew_table *gelu_table(mfs_op_ctx *ctx)
{
	const char *a = onnx_attr_string(ctx->node, "approximate", "none");

	if (strcmp(a, "none") == 0)
		return &gelu_tab;
	if (strcmp(a, "tanh") == 0)
		return &gelut_tab;
	mfs_op_fail(ctx, EINVAL, "approximate must be none or tanh, not '%s'", a);
	return NULL;
}

EW_OP_FUNCS_SELECT(gelu, gelu_table, MFS_DT_UNDEFINED)

MFS_OP(Sigmoid, 1, .flags = MFS_OP_NHWC_OK, .infer = sigmoid_infer, .run = sigmoid_run);
MFS_OP(Softplus, 1, .flags = MFS_OP_NHWC_OK, .infer = softplus_infer, .run = softplus_run);
MFS_OP(Softsign, 1, .flags = MFS_OP_NHWC_OK, .infer = softsign_infer, .run = softsign_run);
MFS_OP(Mish, 18, .flags = MFS_OP_NHWC_OK, .infer = mish_infer, .run = mish_run);
MFS_OP(Gelu, 20, .flags = MFS_OP_NHWC_OK, .infer = gelu_infer, .run = gelu_run);
/* What the GELU rewrite (exec/graph/rewrite_gelu.c) emits below opset 20. */
MFS_OP_DOMAIN("com.modelfs", Gelu, 1, .flags = MFS_OP_NHWC_OK, .infer = gelu_infer, .run = gelu_run);

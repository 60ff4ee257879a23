/* Piecewise activations with alpha/beta attributes: Relu, LeakyRelu, Elu,
 * Selu, Celu, ThresholdedRelu, Shrink, HardSigmoid, HardSwish.  Float
 * types (float16 through float); Relu also signed integers (opset 14). */
#include <tgmath.h>

#include "elementwise.h"

#define A ((ew_t)pa)
#define B ((ew_t)pb)
#define C ((ew_t)pc)
/* v limited to [0, 1] by selects (vectorise; NaN stays NaN as in numpy) */
#define EW_UNIT(v) ((v) < 0 ? (ew_t)0 : (v) > 1 ? (ew_t)1 : (v))

EW_T_FLOAT(EW_DEF_UNARY, relu, x < 0 ? (ew_t)0 : x)
EW_T_SINT(EW_DEF_UNARY, relu, x < 0 ? 0 : x)
EW_T_FLOAT(EW_DEF_UNARY, leaky, x < 0 ? A * x : x)
EW_T_FLOAT(EW_DEF_UNARY, elu, x < 0 ? A * (EW_EXP(x) - 1) : x)
EW_T_FLOAT(EW_DEF_UNARY, selu, x <= 0 ? C * (A * EW_EXP(x) - A) : C * x)
EW_T_FLOAT(EW_DEF_UNARY, celu, x < 0 ? A * (EW_EXP(x / A) - 1) : x)
EW_T_FLOAT(EW_DEF_UNARY, threlu, x > A ? x : (ew_t)0)
EW_T_FLOAT(EW_DEF_UNARY, shrink, x < -A ? x + B : x > A ? x - B : (ew_t)0)
EW_T_FLOAT(EW_DEF_UNARY, hsig, EW_UNIT(A * x + B))
EW_T_FLOAT(EW_DEF_UNARY, hswish, x * EW_UNIT(A * x + B))

static const ew_table relu_tab = { 1, { EW_T_FLOAT(EW_ENTRY, relu) EW_T_SINT(EW_ENTRY, relu) } };
static const ew_table leaky_tab = { 1, { EW_T_FLOAT(EW_ENTRY, leaky) } };
static const ew_table elu_tab = { 1, { EW_T_FLOAT(EW_ENTRY, elu) } };
static const ew_table selu_tab = { 1, { EW_T_FLOAT(EW_ENTRY, selu) } };
static const ew_table celu_tab = { 1, { EW_T_FLOAT(EW_ENTRY, celu) } };
static const ew_table threlu_tab = { 1, { EW_T_FLOAT(EW_ENTRY, threlu) } };
static const ew_table shrink_tab = { 1, { EW_T_FLOAT(EW_ENTRY, shrink) } };
static const ew_table hsig_tab = { 1, { EW_T_FLOAT(EW_ENTRY, hsig) } };
static const ew_table hswish_tab = { 1, { EW_T_FLOAT(EW_ENTRY, hswish) } };

/* alpha (default da) and beta (default db) */
#define EW_ALPHA_BETA(name, da, db)                                         \
	static int name(mfs_op_ctx *ctx, ew_params *p)                       \
	{                                                                   \
		p->a = onnx_attr_float(ctx->node, "alpha", da);             \
		p->b = onnx_attr_float(ctx->node, "beta", db);              \
		return 0;                                                   \
	}
EW_ALPHA_BETA(leaky_params, 0.01f, 0)
EW_ALPHA_BETA(alpha1_params, 1.0f, 0)
EW_ALPHA_BETA(hsig_params, 0.2f, 0.5f)
EW_ALPHA_BETA(hswish_params, 1.0 / 6, 0.5)

static int celu_params(mfs_op_ctx *ctx, ew_params *p)
{
	p->a = onnx_attr_float(ctx->node, "alpha", 1.0f);
	if (p->a == 0)
		return mfs_op_fail(ctx, EINVAL, "alpha must not be 0");
	return 0;
}

static int selu_params(mfs_op_ctx *ctx, ew_params *p)
{
	p->a = onnx_attr_float(ctx->node, "alpha", 1.67326319217681884765625f);
	p->c = onnx_attr_float(ctx->node, "gamma", 1.05070102214813232421875f);
	return 0;
}

static int shrink_params(mfs_op_ctx *ctx, ew_params *p)
{
	p->a = onnx_attr_float(ctx->node, "lambd", 0.5f);
	p->b = onnx_attr_float(ctx->node, "bias", 0.0f);
	return 0;
}

EW_OP_FUNCS(relu, &relu_tab, MFS_DT_UNDEFINED, NULL)
EW_OP_FUNCS(leaky, &leaky_tab, MFS_DT_UNDEFINED, leaky_params)
EW_OP_FUNCS(elu, &elu_tab, MFS_DT_UNDEFINED, alpha1_params)
EW_OP_FUNCS(selu, &selu_tab, MFS_DT_UNDEFINED, selu_params)
EW_OP_FUNCS(celu, &celu_tab, MFS_DT_UNDEFINED, celu_params)
EW_OP_FUNCS(threlu, &threlu_tab, MFS_DT_UNDEFINED, alpha1_params)
EW_OP_FUNCS(shrink, &shrink_tab, MFS_DT_UNDEFINED, shrink_params)
EW_OP_FUNCS(hsig, &hsig_tab, MFS_DT_UNDEFINED, hsig_params)
EW_OP_FUNCS(hswish, &hswish_tab, MFS_DT_UNDEFINED, hswish_params)

MFS_OP(Relu, 1, .flags = MFS_OP_NHWC_OK, .infer = relu_infer, .run = relu_run);
MFS_OP(LeakyRelu, 1, .flags = MFS_OP_NHWC_OK, .infer = leaky_infer, .run = leaky_run);
MFS_OP(Elu, 1, .flags = MFS_OP_NHWC_OK, .infer = elu_infer, .run = elu_run);
MFS_OP(Selu, 1, .flags = MFS_OP_NHWC_OK, .infer = selu_infer, .run = selu_run);
MFS_OP(Celu, 12, .flags = MFS_OP_NHWC_OK, .infer = celu_infer, .run = celu_run);
MFS_OP(ThresholdedRelu, 10, .flags = MFS_OP_NHWC_OK, .infer = threlu_infer, .run = threlu_run);
MFS_OP(Shrink, 9, .flags = MFS_OP_NHWC_OK, .infer = shrink_infer, .run = shrink_run);
MFS_OP(HardSigmoid, 1, .flags = MFS_OP_NHWC_OK, .infer = hsig_infer, .run = hsig_run);
MFS_OP(HardSwish, 14, .flags = MFS_OP_NHWC_OK, .infer = hswish_infer, .run = hswish_run);

/* IsNaN (opset 9) and IsInf (opset 10; detect_negative/detect_positive):
 * float types in, bool out. */
#include <math.h>

#include "elementwise.h"

EW_T_FLOAT(EW_DEF_UNARY_BOOL, isnan, x != x)
/* bitwise, not short-circuit: the loop then vectorises */
EW_T_FLOAT(EW_DEF_UNARY_BOOL, isinf, ((x == (ew_t)INFINITY) & (int)(pa > 0)) |
	   ((x == -(ew_t)INFINITY) & (int)(pb > 0)))

static const ew_table isnan_tab = { 1, { EW_T_FLOAT(EW_ENTRY, isnan) } };
static const ew_table isinf_tab = { 1, { EW_T_FLOAT(EW_ENTRY, isinf) } };

static int isinf_params(mfs_op_ctx *ctx, ew_params *p)
{
	p->a = onnx_attr_int(ctx->node, "detect_positive", 1) ? 1 : 0;
	p->b = onnx_attr_int(ctx->node, "detect_negative", 1) ? 1 : 0;
	return 0;
}

EW_OP_FUNCS(isnan, &isnan_tab, MFS_DT_BOOL, NULL)
EW_OP_FUNCS(isinf, &isinf_tab, MFS_DT_BOOL, isinf_params)

MFS_OP(IsNaN, 9, .flags = MFS_OP_NHWC_OK, .infer = isnan_infer, .run = isnan_run);
MFS_OP(IsInf, 10, .flags = MFS_OP_NHWC_OK, .infer = isinf_infer, .run = isinf_run);

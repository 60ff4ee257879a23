/* Trigonometric and hyperbolic functions and their inverses, float types:
 * Sin, Cos, Tan, Asin, Acos, Atan (opset 7), Sinh, Cosh, Asinh, Acosh,
 * Atanh (opset 9). */
#include <tgmath.h>

#include "elementwise.h"

#define EW_TRIG(name)                                                       \
	EW_T_FLOAT(EW_DEF_UNARY, name, name(x))                             \
	static const ew_table name##_tab = { 1, { EW_T_FLOAT(EW_ENTRY, name) } }; \
	EW_OP_FUNCS(name, &name##_tab, MFS_DT_UNDEFINED, NULL)

EW_TRIG(sin)
EW_TRIG(cos)
EW_TRIG(tan)
EW_TRIG(asin)
EW_TRIG(acos)
EW_TRIG(atan)
EW_TRIG(sinh)
EW_TRIG(cosh)
EW_TRIG(asinh)
EW_TRIG(acosh)
EW_TRIG(atanh)

MFS_OP(Sin, 7, .flags = MFS_OP_NHWC_OK, .infer = sin_infer, .run = sin_run);
MFS_OP(Cos, 7, .flags = MFS_OP_NHWC_OK, .infer = cos_infer, .run = cos_run);
MFS_OP(Tan, 7, .flags = MFS_OP_NHWC_OK, .infer = tan_infer, .run = tan_run);
MFS_OP(Asin, 7, .flags = MFS_OP_NHWC_OK, .infer = asin_infer, .run = asin_run);
MFS_OP(Acos, 7, .flags = MFS_OP_NHWC_OK, .infer = acos_infer, .run = acos_run);
MFS_OP(Atan, 7, .flags = MFS_OP_NHWC_OK, .infer = atan_infer, .run = atan_run);
MFS_OP(Sinh, 9, .flags = MFS_OP_NHWC_OK, .infer = sinh_infer, .run = sinh_run);
MFS_OP(Cosh, 9, .flags = MFS_OP_NHWC_OK, .infer = cosh_infer, .run = cosh_run);
MFS_OP(Asinh, 9, .flags = MFS_OP_NHWC_OK, .infer = asinh_infer, .run = asinh_run);
MFS_OP(Acosh, 9, .flags = MFS_OP_NHWC_OK, .infer = acosh_infer, .run = acosh_run);
MFS_OP(Atanh, 9, .flags = MFS_OP_NHWC_OK, .infer = atanh_infer, .run = atanh_run);

/* Add, Sub, Mul, Div: numpy broadcasting (legacy broadcast=1/axis before
 * opset 7), every numeric type.  Integer Div truncates toward zero; x / 0
 * is 0 for integers (see elementwise.h), IEEE for floats. */
#include "elementwise.h"

EW_T_NUM(EW_DEF_BINARY, add, x + y)
EW_T_NUM(EW_DEF_BINARY, sub, x - y)
EW_T_NUM(EW_DEF_BINARY, mul, x * y)
EW_T_FLOAT(EW_DEF_BINARY, div, x / y)
EW_T_SINT(EW_DEF_BINARY, div, EW_SDIV(ew_t, x, y))
EW_T_UINT(EW_DEF_BINARY, div, EW_UDIV(ew_t, x, y))

static const ew_table add_tab = { 2, { EW_T_NUM(EW_ENTRY, add) } };
static const ew_table sub_tab = { 2, { EW_T_NUM(EW_ENTRY, sub) } };
static const ew_table mul_tab = { 2, { EW_T_NUM(EW_ENTRY, mul) } };
static const ew_table div_tab = { 2, { EW_T_NUM(EW_ENTRY, div) } };

EW_OP_FUNCS(add, &add_tab, MFS_DT_UNDEFINED, NULL)
EW_OP_FUNCS(sub, &sub_tab, MFS_DT_UNDEFINED, NULL)
EW_OP_FUNCS(mul, &mul_tab, MFS_DT_UNDEFINED, NULL)
EW_OP_FUNCS(div, &div_tab, MFS_DT_UNDEFINED, NULL)

MFS_OP(Add, 1, .flags = MFS_OP_NHWC_OK, .infer = add_infer, .run = add_run);
MFS_OP(Sub, 1, .flags = MFS_OP_NHWC_OK, .infer = sub_infer, .run = sub_run);
MFS_OP(Mul, 1, .flags = MFS_OP_NHWC_OK, .infer = mul_infer, .run = mul_run);
MFS_OP(Div, 1, .flags = MFS_OP_NHWC_OK, .infer = div_infer, .run = div_run);

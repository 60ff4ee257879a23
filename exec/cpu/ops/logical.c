/* And, Or, Xor (broadcasting) and Not over bool tensors.  Inputs are read
 * as "nonzero is true" so that a stray byte other than 0/1 cannot leak into
 * the output. */
#include "elementwise.h"

EW_T_BOOL(EW_DEF_BINARY, and, (x != 0) & (y != 0))
EW_T_BOOL(EW_DEF_BINARY, or, (x != 0) | (y != 0))
EW_T_BOOL(EW_DEF_BINARY, xor, (x != 0) ^ (y != 0))
EW_T_BOOL(EW_DEF_UNARY, not, x == 0)

static const ew_table and_tab = { 2, { EW_T_BOOL(EW_ENTRY, and) } };
static const ew_table or_tab = { 2, { EW_T_BOOL(EW_ENTRY, or) } };
static const ew_table xor_tab = { 2, { EW_T_BOOL(EW_ENTRY, xor) } };
static const ew_table not_tab = { 1, { EW_T_BOOL(EW_ENTRY, not) } };

EW_OP_FUNCS(and, &and_tab, MFS_DT_UNDEFINED, NULL)
EW_OP_FUNCS(or, &or_tab, MFS_DT_UNDEFINED, NULL)
EW_OP_FUNCS(xor, &xor_tab, MFS_DT_UNDEFINED, NULL)
EW_OP_FUNCS(not, &not_tab, MFS_DT_UNDEFINED, NULL)

MFS_OP(And, 1, .flags = MFS_OP_NHWC_OK, .infer = and_infer, .run = and_run);
MFS_OP(Or, 1, .flags = MFS_OP_NHWC_OK, .infer = or_infer, .run = or_run);
MFS_OP(Xor, 1, .flags = MFS_OP_NHWC_OK, .infer = xor_infer, .run = xor_run);
MFS_OP(Not, 1, .flags = MFS_OP_NHWC_OK, .infer = not_infer, .run = not_run);

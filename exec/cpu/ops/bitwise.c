/* BitwiseAnd/Or/Xor (broadcasting), BitwiseNot, over integer types, and
 * BitShift (unsigned types, direction "LEFT" or "RIGHT").  A shift by the
 * type's width or more gives 0 (C leaves it undefined). */
#include <string.h>

#include "elementwise.h"

EW_T_INT(EW_DEF_BINARY, band, x & y)
EW_T_INT(EW_DEF_BINARY, bor, x | y)
EW_T_INT(EW_DEF_BINARY, bxor, x ^ y)
EW_T_INT(EW_DEF_UNARY, bnot, ~x)
EW_T_UINT(EW_DEF_BINARY, shl, y >= 8 * sizeof(ew_t) ? 0 : x << y)
EW_T_UINT(EW_DEF_BINARY, shr, y >= 8 * sizeof(ew_t) ? 0 : x >> y)

static const ew_table band_tab = { 2, { EW_T_INT(EW_ENTRY, band) } };
static const ew_table bor_tab = { 2, { EW_T_INT(EW_ENTRY, bor) } };
static const ew_table bxor_tab = { 2, { EW_T_INT(EW_ENTRY, bxor) } };
static const ew_table bnot_tab = { 1, { EW_T_INT(EW_ENTRY, bnot) } };
static const ew_table shl_tab = { 2, { EW_T_UINT(EW_ENTRY, shl) } };
static const ew_table shr_tab = { 2, { EW_T_UINT(EW_ENTRY, shr) } };

EW_OP_FUNCS(band, &band_tab, MFS_DT_UNDEFINED, NULL)
EW_OP_FUNCS(bor, &bor_tab, MFS_DT_UNDEFINED, NULL)
EW_OP_FUNCS(bxor, &bxor_tab, MFS_DT_UNDEFINED, NULL)
EW_OP_FUNCS(bnot, &bnot_tab, MFS_DT_UNDEFINED, NULL)

static const ew_table *shift_table(mfs_op_ctx *ctx)
{
	const char *dir = onnx_attr_string(ctx->node, "direction", "");

	if (strcmp(dir, "LEFT") == 0)
		return &shl_tab;
	if (strcmp(dir, "RIGHT") == 0)
		return &shr_tab;
	mfs_op_fail(ctx, EINVAL, "direction must be LEFT or RIGHT, not '%s'", dir);
	return NULL;
}

EW_OP_FUNCS_SELECT(shift, shift_table, MFS_DT_UNDEFINED)

MFS_OP(BitwiseAnd, 18, .flags = MFS_OP_NHWC_OK, .infer = band_infer, .run = band_run);
MFS_OP(BitwiseOr, 18, .flags = MFS_OP_NHWC_OK, .infer = bor_infer, .run = bor_run);
MFS_OP(BitwiseXor, 18, .flags = MFS_OP_NHWC_OK, .infer = bxor_infer, .run = bxor_run);
MFS_OP(BitwiseNot, 18, .flags = MFS_OP_NHWC_OK, .infer = bnot_infer, .run = bnot_run);
MFS_OP(BitShift, 11, .flags = MFS_OP_NHWC_OK, .infer = shift_infer, .run = shift_run);

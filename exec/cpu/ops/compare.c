/* Equal, Less, LessOrEqual, Greater, GreaterOrEqual: broadcasting
 * comparisons of two inputs of one numeric type (and bool for Equal) into
 * a bool tensor.  Comparisons with NaN are false, Equal included.
 * Equal also compares strings (opset 19), byte for byte. */
#include <string.h>

#include "elementwise.h"
#include "string_util.h"

EW_T_NUM(EW_DEF_BINARY_BOOL, eq, x == y)
EW_T_BOOL(EW_DEF_BINARY_BOOL, eq, x == y)
EW_T_NUM(EW_DEF_BINARY_BOOL, lt, x < y)
EW_T_NUM(EW_DEF_BINARY_BOOL, le, x <= y)
EW_T_NUM(EW_DEF_BINARY_BOOL, gt, x > y)
EW_T_NUM(EW_DEF_BINARY_BOOL, ge, x >= y)

static const ew_table eq_tab = { 2, { EW_T_NUM(EW_ENTRY, eq) EW_T_BOOL(EW_ENTRY, eq) } };
static const ew_table lt_tab = { 2, { EW_T_NUM(EW_ENTRY, lt) } };
static const ew_table le_tab = { 2, { EW_T_NUM(EW_ENTRY, le) } };
static const ew_table gt_tab = { 2, { EW_T_NUM(EW_ENTRY, gt) } };
static const ew_table ge_tab = { 2, { EW_T_NUM(EW_ENTRY, ge) } };

EW_OP_FUNCS(eq, &eq_tab, MFS_DT_BOOL, NULL)
EW_OP_FUNCS(lt, &lt_tab, MFS_DT_BOOL, NULL)
EW_OP_FUNCS(le, &le_tab, MFS_DT_BOOL, NULL)
EW_OP_FUNCS(gt, &gt_tab, MFS_DT_BOOL, NULL)
EW_OP_FUNCS(ge, &ge_tab, MFS_DT_BOOL, NULL)

static int eq_any_infer(mfs_op_ctx *ctx)
{
	if (ctx->in[0]->dtype == MFS_DT_STRING)
		return str_binary_infer(ctx, MFS_DT_BOOL);
	return eq_infer(ctx);
}

static int eq_any_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *a = ctx->in[0], *b = ctx->in[1];
	mfs_tensor *y = ctx->out[0];
	int64_t n = mfs_shape_numel(&y->shape);

	if (a->dtype != MFS_DT_STRING)
		return eq_run(ctx);
	for (int64_t i = 0; i < n; i++) {
		const mfs_string *sa = mfs_string_at(a, str_bcast_index(&y->shape, &a->shape, i));
		const mfs_string *sb = mfs_string_at(b, str_bcast_index(&y->shape, &b->shape, i));
		((uint8_t *)y->data)[i] = sa->len == sb->len && (!sa->len || !memcmp(sa->ptr, sb->ptr, sa->len));
	}
	return 0;
}

MFS_OP(Equal, 1, .flags = MFS_OP_NHWC_OK, .infer = eq_infer, .run = eq_run);
MFS_OP(Equal, 19, .flags = MFS_OP_NHWC_OK | MFS_OP_STRINGS, .infer = eq_any_infer, .run = eq_any_run);
MFS_OP(Less, 1, .flags = MFS_OP_NHWC_OK, .infer = lt_infer, .run = lt_run);
MFS_OP(LessOrEqual, 12, .flags = MFS_OP_NHWC_OK, .infer = le_infer, .run = le_run);
MFS_OP(Greater, 1, .flags = MFS_OP_NHWC_OK, .infer = gt_infer, .run = gt_run);
MFS_OP(GreaterOrEqual, 12, .flags = MFS_OP_NHWC_OK, .infer = ge_infer, .run = ge_run);

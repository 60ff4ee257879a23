/* Mod (opset 10): fmod=0 gives the remainder with the divisor's sign
 * (Python/numpy), fmod=1 the remainder with the dividend's sign (C fmod).
 * ONNX asks fmod=1 for floating types; fmod=0 on floats is computed the
 * numpy way rather than refused.  x mod 0 is 0 for integers, NaN for
 * floats. */
#include <tgmath.h>

#include "elementwise.h"

/* Python remainder from a truncated one. */
#define EW_PYREM(r, y) ((r) != 0 && (((r) < 0) != ((y) < 0)) ? (r) + (y) : (r))

static inline double pyrem_f64(double x, double y)
{
	double r = fmod(x, y);
	return EW_PYREM(r, y);
}

static inline int64_t pyrem_i64(int64_t x, int64_t y)
{
	int64_t r = EW_SREM(int64_t, x, y);
	return EW_PYREM(r, y);
}

EW_T_FLOAT(EW_DEF_BINARY, cmod, fmod(x, y))
EW_T_SINT(EW_DEF_BINARY, cmod, EW_SREM(ew_t, x, y))
EW_T_UINT(EW_DEF_BINARY, cmod, EW_UREM(ew_t, x, y))
EW_T_FLOAT(EW_DEF_BINARY, pymod, pyrem_f64(x, y))
EW_T_SINT(EW_DEF_BINARY, pymod, pyrem_i64(x, y))
EW_T_UINT(EW_DEF_BINARY, pymod, EW_UREM(ew_t, x, y))

static const ew_table cmod_tab = { 2, { EW_T_NUM(EW_ENTRY, cmod) } };
static const ew_table pymod_tab = { 2, { EW_T_NUM(EW_ENTRY, pymod) } };

static const ew_table *mod_table(mfs_op_ctx *ctx)
{
	return onnx_attr_int(ctx->node, "fmod", 0) ? &cmod_tab : &pymod_tab;
}

EW_OP_FUNCS_SELECT(mod, mod_table, MFS_DT_UNDEFINED)

MFS_OP(Mod, 10, .flags = MFS_OP_NHWC_OK, .infer = mod_infer, .run = mod_run);

/* Unary math: Sqrt, Exp, Log, Erf, Tanh, Reciprocal, Floor, Ceil, Round
 * (half to even) on float types; Abs, Neg and Sign also on integers
 * (Abs and Neg of the most negative value wrap to itself). */
#include <tgmath.h>

#include "elementwise.h"

/* sqrt: GCC keeps a scalar call path for errno unless -fno-math-errno,
 * which the build does not set; on x86 the SSE2 instruction is exact
 * (correctly rounded, NaN for x < 0) and always present. */
#if defined(__SSE2__)
#include <emmintrin.h>

static void sqrt_f32(char *out, const char *const *in, const int64_t *step,
		     int64_t n, const ew_params *p)
{
	const float *a = (const float *)in[0];
	float *o = (float *)out;
	int64_t j = 0;

	(void)p;
	if (!step[0]) {                 /* one value, repeated */
		float r = _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(a[0])));
		for (; j < n; j++)
			o[j] = r;
		return;
	}
	for (; j + 4 <= n; j += 4)
		_mm_storeu_ps(o + j, _mm_sqrt_ps(_mm_loadu_ps(a + j)));
	for (; j < n; j++)
		o[j] = _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(a[j])));
}
EW_UNARY_KERNEL(sqrt_f64, double, double, EW_SQRT(x))
#else
EW_T_FLOAT(EW_DEF_UNARY, sqrt, EW_SQRT(x))
#endif
EW_T_FLOAT(EW_DEF_UNARY, exp, EW_EXP(x))
EW_T_FLOAT(EW_DEF_UNARY, log, EW_LOG(x))
EW_T_FLOAT(EW_DEF_UNARY, erf, EW_ERF(x))
EW_T_FLOAT(EW_DEF_UNARY, tanh, EW_TANH(x))
EW_T_FLOAT(EW_DEF_UNARY, recip, 1 / x)
EW_T_FLOAT(EW_DEF_UNARY, floor, floor(x))
EW_T_FLOAT(EW_DEF_UNARY, ceil, ceil(x))
EW_T_FLOAT(EW_DEF_UNARY, round, rint(x))
EW_T_FLOAT(EW_DEF_UNARY, abs, fabs(x))
EW_T_SINT(EW_DEF_UNARY, abs, x < 0 ? (ew_t)(0 - (uint64_t)x) : x)
EW_T_UINT(EW_DEF_UNARY, abs, x)
EW_T_FLOAT(EW_DEF_UNARY, neg, -x)
EW_T_SINT(EW_DEF_UNARY, neg, (ew_t)(0 - (uint64_t)x))
EW_T_FLOAT(EW_DEF_UNARY, sign, x > 0 ? (ew_t)1 : x < 0 ? (ew_t)-1 : x)
EW_T_SINT(EW_DEF_UNARY, sign, (x > 0) - (x < 0))
EW_T_UINT(EW_DEF_UNARY, sign, x > 0)

static const ew_table sqrt_tab = { 1, { EW_T_FLOAT(EW_ENTRY, sqrt) } };
static const ew_table exp_tab = { 1, { EW_T_FLOAT(EW_ENTRY, exp) } };
static const ew_table log_tab = { 1, { EW_T_FLOAT(EW_ENTRY, log) } };
static const ew_table erf_tab = { 1, { EW_T_FLOAT(EW_ENTRY, erf) } };
static const ew_table tanh_tab = { 1, { EW_T_FLOAT(EW_ENTRY, tanh) } };
static const ew_table recip_tab = { 1, { EW_T_FLOAT(EW_ENTRY, recip) } };
static const ew_table floor_tab = { 1, { EW_T_FLOAT(EW_ENTRY, floor) } };
static const ew_table ceil_tab = { 1, { EW_T_FLOAT(EW_ENTRY, ceil) } };
static const ew_table round_tab = { 1, { EW_T_FLOAT(EW_ENTRY, round) } };
static const ew_table abs_tab = { 1, { EW_T_NUM(EW_ENTRY, abs) } };
static const ew_table neg_tab = { 1, { EW_T_FLOAT(EW_ENTRY, neg) EW_T_SINT(EW_ENTRY, neg) } };
static const ew_table sign_tab = { 1, { EW_T_NUM(EW_ENTRY, sign) } };

EW_OP_FUNCS(sqrt, &sqrt_tab, MFS_DT_UNDEFINED, NULL)
EW_OP_FUNCS(exp, &exp_tab, MFS_DT_UNDEFINED, NULL)
EW_OP_FUNCS(log, &log_tab, MFS_DT_UNDEFINED, NULL)
EW_OP_FUNCS(erf, &erf_tab, MFS_DT_UNDEFINED, NULL)
EW_OP_FUNCS(tanh, &tanh_tab, MFS_DT_UNDEFINED, NULL)
EW_OP_FUNCS(recip, &recip_tab, MFS_DT_UNDEFINED, NULL)
EW_OP_FUNCS(floor, &floor_tab, MFS_DT_UNDEFINED, NULL)
EW_OP_FUNCS(ceil, &ceil_tab, MFS_DT_UNDEFINED, NULL)
EW_OP_FUNCS(round, &round_tab, MFS_DT_UNDEFINED, NULL)
EW_OP_FUNCS(abs, &abs_tab, MFS_DT_UNDEFINED, NULL)
EW_OP_FUNCS(neg, &neg_tab, MFS_DT_UNDEFINED, NULL)
EW_OP_FUNCS(sign, &sign_tab, MFS_DT_UNDEFINED, NULL)

MFS_OP(Sqrt, 1, .flags = MFS_OP_NHWC_OK, .infer = sqrt_infer, .run = sqrt_run);
MFS_OP(Exp, 1, .flags = MFS_OP_NHWC_OK, .infer = exp_infer, .run = exp_run);
MFS_OP(Log, 1, .flags = MFS_OP_NHWC_OK, .infer = log_infer, .run = log_run);
MFS_OP(Erf, 9, .flags = MFS_OP_NHWC_OK, .infer = erf_infer, .run = erf_run);
MFS_OP(Tanh, 1, .flags = MFS_OP_NHWC_OK, .infer = tanh_infer, .run = tanh_run);
MFS_OP(Reciprocal, 1, .flags = MFS_OP_NHWC_OK, .infer = recip_infer, .run = recip_run);
MFS_OP(Floor, 1, .flags = MFS_OP_NHWC_OK, .infer = floor_infer, .run = floor_run);
MFS_OP(Ceil, 1, .flags = MFS_OP_NHWC_OK, .infer = ceil_infer, .run = ceil_run);
MFS_OP(Round, 11, .flags = MFS_OP_NHWC_OK, .infer = round_infer, .run = round_run);
MFS_OP(Abs, 1, .flags = MFS_OP_NHWC_OK, .infer = abs_infer, .run = abs_run);
MFS_OP(Neg, 1, .flags = MFS_OP_NHWC_OK, .infer = neg_infer, .run = neg_run);
MFS_OP(Sign, 9, .flags = MFS_OP_NHWC_OK, .infer = sign_infer, .run = sign_run);

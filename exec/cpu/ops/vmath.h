/* vmath.h - float exp, tanh, erf and sigmoid written so that a loop over
 * them vectorises (branch-free selects, no calls).  glibc's expf/tanhf/
 * erff are scalar calls, and GELU's erf or a sigmoid over a large
 * activation then costs more than the matrix products around it.
 *
 * Accuracy (checked over a dense sweep in test_ops_elementwise): exp and
 * sigmoid within 2 ulp (inputs below -87.3 give about 1e-38 instead of a
 * denormal), tanh within 1e-6 relative, erf within 2e-7 absolute (Taylor
 * series below 0.5; above, 1 - erfc with Numerical Recipes' Chebyshev fit
 * of erfc, relative error 1.2e-7).  NaN propagates.
 *
 * EW_EXP(x), EW_TANH(x), EW_ERF(x) pick these for float and libm for
 * double (via <tgmath.h> in the including file).
 */
#ifndef MFS_OPS_VMATH_H
#define MFS_OPS_VMATH_H

#include <stdbool.h>
#include <stdint.h>

/* GCC will not if-convert chains of float selects while FP exceptions are
 * observable (-ftrapping-math, the default), and keeps sqrt a call while
 * it must set errno; both leave loops scalar.  Nothing here reads the FP
 * exception flags or errno, so the rest of an including file is compiled
 * without those guarantees. */
#ifndef __clang__
#pragma GCC optimize("no-trapping-math", "no-math-errno")
#endif

/* always_inline: a kernel built for another target (EW_TARGETS) may not
 * inline an ordinary function compiled for the default one. */
#define EW_VINLINE static inline __attribute__((always_inline))

EW_VINLINE float ew_expf(float x)
{
	union { int32_t i; float f; } scale;
	float y = x, n, r, p;
	int32_t ni;

	/* clamp so that 2^n stays a normal float; NaN becomes 88.37 here
	 * (keeping the int conversion defined) and is restored at the end */
	x = x < 88.3762626647949f ? x : 88.3762626647949f;
	x = x > -87.3365447505531f ? x : -87.3365447505531f;
	/* n = round(x / ln 2) by the 1.5 * 2^23 trick: no branch, no call */
	n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
	ni = (int32_t)n;
	r = x - n * 0.693359375f;               /* Cody-Waite ln 2 split */
	r = r + n * 2.12194440e-4f;
	p = 1.9875691500e-4f;
	p = p * r + 1.3981999507e-3f;
	p = p * r + 8.3334519073e-3f;
	p = p * r + 4.1665795894e-2f;
	p = p * r + 1.6666665459e-1f;
	p = p * r + 5.0000001201e-1f;
	p = p * r * r + r + 1;
	scale.i = (ni + 127) << 23;
	/* Below the clamp the true value is denormal or 0: give 0.  A masked
	 * attention score (Where(mask, x, -1e4) before Softmax) came out as
	 * 1e-38, became denormal once normalised, and the product with V
	 * then ran about 28x slower on Intel cores (denormal operands take
	 * microcode assists; docs/PERFORMANCE.md). */
	p = y < -87.3365447505531f ? 0.0f : p;
	return y == y ? p * scale.f : y;
}

EW_VINLINE float ew_tanhf(float x)
{
	float ax = x < 0 ? -x : x;
	float e = ew_expf(-2 * ax);
	float t = (1 - e) / (1 + e);
	float x2 = x * x;
	float s = x * (1 + x2 * (-0.333333333f + x2 * (0.133333333f +
		  x2 * (-0.0539682540f + x2 * 0.0218694885f))));

	t = x < 0 ? -t : t;
	return ax < 0.0625f ? s : t;
}

EW_VINLINE float ew_erff(float x)
{
	float ax = x < 0 ? -x : x;
	float t = 1 / (1 + 0.5f * ax);
	/* erfc(ax) = t exp(-ax^2 + P(t)), relative error < 1.2e-7 */
	float p = t * (-0.82215223f + t * 0.17087277f);
	p = t * (-1.13520398f + t * (1.48851587f + p));
	p = t * (0.09678418f + t * (-0.18628806f + t * (0.27886807f + p)));
	p = -1.26551223f + t * (1.00002368f + t * (0.37409196f + p));
	float y = 1 - t * ew_expf(-ax * ax + p);
	float x2 = x * x;
	float s = x * (1.1283791671f + x2 * (-0.3761263890f + x2 * (0.1128379167f +
		  x2 * (-0.0268661706f + x2 * (0.0052239776f +
		  x2 * (-0.00085483270f + x2 * 0.00012055332f))))));

	y = x < 0 ? -y : y;
	return ax < 0.5f ? s : y;
}

/* Cephes logf: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) by a
 * polynomial in m - 1.  Denormals are scaled up first; x < 0 and NaN give
 * NaN, 0 gives -inf, +inf gives +inf. */
EW_VINLINE float ew_logf(float x)
{
	union { int32_t i; float f; } u;
	float m, z, y, e, scaled = x * 8388608.0f;      /* 2^23 */
	bool tiny = x < 1.17549435e-38f;
	int32_t bits;

	u.f = tiny ? scaled : x;
	bits = u.i;
	e = (float)(((bits >> 23) & 0xff) - 126) - (tiny ? 23.0f : 0.0f);
	u.i = (bits & 0x007fffff) | 0x3f000000;         /* m in [0.5, 1) */
	m = u.f;
	e = m < 0.707106781186547524f ? e - 1 : e;
	m = m < 0.707106781186547524f ? m + m - 1 : m - 1;
	z = m * m;
	y = 7.0376836292e-2f;
	y = y * m - 1.1514610310e-1f;
	y = y * m + 1.1676998740e-1f;
	y = y * m - 1.2420140846e-1f;
	y = y * m + 1.4249322787e-1f;
	y = y * m - 1.6668057665e-1f;
	y = y * m + 2.0000714765e-1f;
	y = y * m - 2.4999993993e-1f;
	y = y * m + 3.3333331174e-1f;
	y = y * m * z;
	y = y + e * -2.12194440e-4f - 0.5f * z;
	y = m + y + e * 0.693359375f;
	y = x == 0 ? -__builtin_inff() : y;
	y = x == __builtin_inff() ? x : y;
	return x < 0 || x != x ? __builtin_nanf("") : y;
}

/* log(1 + u) for u > -1, accurate for tiny u: the rounding of 1 + u is
 * corrected to first order. */
EW_VINLINE float ew_log1pf(float u)
{
	float w = 1 + u;
	return w == 1 ? u : ew_logf(w) - ((w - 1) - u) / w;
}

/* log(1 + e^x) without overflow */
EW_VINLINE float ew_softplusf(float x)
{
	float ax = x < 0 ? -x : x;
	return (x > 0 ? x : 0) + ew_log1pf(ew_expf(-ax));
}

EW_VINLINE float ew_sigmoidf(float x)
{
	return 1 / (1 + ew_expf(-x));
}

/* GELU, exact (erf) and tanh-approximated forms (Gelu, Dense). */
EW_VINLINE float ew_geluf(float x)
{
	return 0.5f * x * (1 + ew_erff(x * 0.70710678118654752f));
}

EW_VINLINE float ew_gelu_tanhf(float x)
{
	return 0.5f * x * (1 + ew_tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
}

#define EW_EXP(x) _Generic((x), float: ew_expf, default: exp)(x)
#define EW_TANH(x) _Generic((x), float: ew_tanhf, default: tanh)(x)
#define EW_ERF(x) _Generic((x), float: ew_erff, default: erf)(x)
#define EW_LOG(x) _Generic((x), float: ew_logf, default: log)(x)
#define EW_SQRT(x) _Generic((x), float: __builtin_sqrtf, default: __builtin_sqrt)(x)

#endif

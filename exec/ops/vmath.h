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

EW_VINLINE float ew_sigmoidf(float x)
{
	return 1 / (1 + ew_expf(-x));
}

#define EW_EXP(x) _Generic((x), float: ew_expf, default: exp)(x)
#define EW_TANH(x) _Generic((x), float: ew_tanhf, default: tanh)(x)
#define EW_ERF(x) _Generic((x), float: ew_erff, default: erf)(x)
#define EW_SQRT(x) _Generic((x), float: __builtin_sqrtf, default: __builtin_sqrt)(x)

#endif

/* float_text.c - see float_text.h. */
#include "float_text.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* 10^0 .. 10^22, all exact in a double. */
static const double POW10_22[] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
				   1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21,
				   1e22 };

/* lower[E + 4] = 10^E for E = -4 .. 9: a float v has decimal exponent E
 * when lower[E + 4] <= |v| < lower[E + 5].  The doubles nearest 10^-4 ..
 * 10^-1 classify every float correctly: no float (a double too) lies
 * between a power of ten and the double nearest it. */
static const double LOWER[] = { 1e-4, 1e-3, 1e-2, 1e-1, 1e0, 1e1, 1e2, 1e3, 1e4,
				1e5, 1e6, 1e7, 1e8, 1e9 };

int mfs_float_g9(float f, char *buf)
{
	double v = f, a = fabs(v);
	if (v == 0) {
		/* printf keeps the sign of a negative zero */
		return signbit(v) ? (memcpy(buf, "-0", 3), 2) : (memcpy(buf, "0", 2), 1);
	}
	if (!(a >= LOWER[0] && a < LOWER[13]))
		return snprintf(buf, MFS_FLOAT_G9_SIZE, "%.9g", v);
	int e = -4;
	while (a >= LOWER[e + 5])
		e++;
	/* the nine digits: exact product, rounded to nearest, ties to even */
	uint64_t d = (uint64_t)nearbyint(a * POW10_22[8 - e]);
	if (d == 1000000000u) {
		/* 9.999999996 rounds up to the next decade */
		d = 100000000u;
		if (++e > 8)
			return snprintf(buf, MFS_FLOAT_G9_SIZE, "%.9g", v);
	}
	char digits[9];
	for (int i = 8; i >= 0; i--) {
		digits[i] = (char)('0' + d % 10);
		d /= 10;
	}
	int last = 8;                      /* %g drops trailing zeros */
	while (last > 0 && digits[last] == '0')
		last--;
	char *p = buf;
	if (v < 0)
		*p++ = '-';
	if (e >= 0) {
		memcpy(p, digits, (size_t)e + 1);
		p += e + 1;
		if (last > e) {
			*p++ = '.';
			memcpy(p, digits + e + 1, (size_t)(last - e));
			p += last - e;
		}
	} else {
		*p++ = '0';
		*p++ = '.';
		for (int z = 0; z < -e - 1; z++)
			*p++ = '0';
		memcpy(p, digits, (size_t)last + 1);
		p += last + 1;
	}
	*p = '\0';
	return (int)(p - buf);
}

bool mfs_decimal_to_double(const char *s, size_t n, double *out)
{
	const char *p = s, *end = s + n;
	bool neg = p < end && *p == '-';
	p += neg;
	uint64_t m = 0;
	int digits = 0, scale = 0;     /* value = m * 10^(scale + exp) */
	const char *start = p;
	while (p < end && *p >= '0' && *p <= '9') {
		if (m || *p != '0')
			digits++;
		m = m * 10 + (uint64_t)(*p++ - '0');
		if (digits > 19)
			return false;
	}
	if (p == start)
		return false;
	if (p < end && *p == '.') {
		const char *f = ++p;
		while (p < end && *p >= '0' && *p <= '9') {
			if (m || *p != '0')
				digits++;
			m = m * 10 + (uint64_t)(*p++ - '0');
			scale--;
			if (digits > 19)
				return false;
		}
		if (p == f)
			return false;
	}
	int e = 0;
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		bool eneg = p < end && *p == '-';
		if (p < end && (*p == '-' || *p == '+'))
			p++;
		const char *d = p;
		while (p < end && *p >= '0' && *p <= '9' && e < 1000)
			e = e * 10 + (*p++ - '0');
		if (p == d)
			return false;
		e = eneg ? -e : e;
	}
	if (p != end || m > (1ull << 53))
		return false;
	e += scale;
	if (e < -22 || e > 22)
		return false;
	double v = (double)m;
	v = e >= 0 ? v * POW10_22[e] : v / POW10_22[-e];
	*out = neg ? -v : v;
	return true;
}

/* float_text.c - see float_text.h. */
#include "float_text.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* 10^0 .. 10^12, all exact in a double. */
static const double POW10[] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12 };

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
	uint64_t d = (uint64_t)nearbyint(a * POW10[8 - e]);
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

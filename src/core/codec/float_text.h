/* float_text.h - FP32 values as text, fast.
 *
 * A response of a few hundred floats spent more time in printf("%.9g")
 * (~180 ns a value) than the model took to run.  mfs_float_g9 writes
 * exactly what snprintf(buf, size, "%.9g", v) writes, for every float v
 * (the tests compare them), and does it without printf for the values
 * models produce: 0 and |v| in [1e-4, 1e9).  There, v times a power of
 * ten up to 10^12 is exact in a double (24 bits of v and at most 28 of
 * 5^12), so rounding that product to an integer (ties to even, as
 * printf rounds) gives printf's nine digits.  The rest (exponent
 * notation, NaN, infinities) goes to snprintf.
 */
#ifndef MFS_FLOAT_TEXT_H
#define MFS_FLOAT_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#define MFS_FLOAT_G9_SIZE 32     /* room for any result and its NUL */

/* Write v as "%.9g" into buf (MFS_FLOAT_G9_SIZE bytes, NUL-terminated);
 * returns the length. */
int mfs_float_g9(float v, char *buf);

/* The other way, for JSON numbers: the n characters at s, a decimal
 * -?D+(.D+)?([eE][+-]?D+)?, as exactly the double strtod gives, when the
 * digits (at most 19, leading zeros aside) make an integer m < 2^53 and
 * the decimal exponent e is within +-22: then m and 10^|e| are exact
 * doubles and one multiplication or division rounds as strtod does
 * (Clinger's fast path).  False for anything else: call strtod.  A
 * request's "data":[0.5, 1.25, ...] took ~100 ns a value in strtod. */
bool mfs_decimal_to_double(const char *s, size_t n, double *out);

#endif

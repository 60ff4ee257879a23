/* cast_string.c - Cast and CastLike to and from strings (string_util.h).
 * cast.c hands every cast that involves STRING to cast_string_run. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "string_util.h"

/* Does text read back (in dt) to v? */
static bool reads_back(const char *text, mfs_dtype dt, double v)
{
	switch (dt) {
	case MFS_DT_FLOAT: return strtof(text, NULL) == (float)v;
	case MFS_DT_FLOAT16:
		return mfs_float_to_half(strtof(text, NULL)) == mfs_float_to_half((float)v);
	case MFS_DT_BFLOAT16:
		return mfs_float_to_bf16(strtof(text, NULL)) == mfs_float_to_bf16((float)v);
	default: return strtod(text, NULL) == v;
	}
}

/* v finite and nonzero: numpy's repr of a float scalar, with the
 * fewest significant digits that read back to v. */
static size_t fmt_float(char *buf, size_t size, mfs_dtype dt, double v)
{
	char e[40], digits[24];
	int p, exp10, nd = 0;
	const char *s;
	size_t n = 0;

	for (p = 1; p < 17; p++) {
		snprintf(e, sizeof(e), "%.*e", p - 1, v);
		if (reads_back(e, dt, v))
			break;
	}
	snprintf(e, sizeof(e), "%.*e", p - 1, v);
	/* e is "[-]d[.ddd]e[+-]XX": split into digits and exponent */
	s = e + (e[0] == '-');
	for (; *s && *s != 'e'; s++)
		if (isdigit((unsigned char)*s))
			digits[nd++] = *s;
	digits[nd] = '\0';
	exp10 = atoi(s + 1);
	if (v < 0)
		buf[n++] = '-';
	if (fabs(v) < 1e-4 || fabs(v) >= 1e16) {   /* numpy's scientific range */
		buf[n++] = digits[0];
		if (nd > 1) {
			buf[n++] = '.';
			memcpy(buf + n, digits + 1, (size_t)nd - 1);
			n += (size_t)nd - 1;
		}
		n += (size_t)snprintf(buf + n, size - n, "e%c%02d", exp10 < 0 ? '-' : '+',
				      abs(exp10));
		return n;
	}
	if (exp10 < 0) {
		buf[n++] = '0';
		buf[n++] = '.';
		for (int k = 0; k < -exp10 - 1; k++)
			buf[n++] = '0';
		memcpy(buf + n, digits, (size_t)nd);
		n += (size_t)nd;
	} else {
		for (int k = 0; k <= exp10; k++)
			buf[n++] = k < nd ? digits[k] : '0';
		buf[n++] = '.';
		if (nd > exp10 + 1) {
			memcpy(buf + n, digits + exp10 + 1, (size_t)(nd - exp10 - 1));
			n += (size_t)(nd - exp10 - 1);
		} else {
			buf[n++] = '0';
		}
	}
	buf[n] = '\0';
	return n;
}

size_t str_from_number(char *buf, size_t size, mfs_dtype dt, const void *p, int64_t i)
{
	double v;

	switch (dt) {
	case MFS_DT_BOOL:
		return (size_t)snprintf(buf, size, "%s", ((const uint8_t *)p)[i] ? "True" : "False");
	case MFS_DT_INT64:
		return (size_t)snprintf(buf, size, "%" PRId64, ((const int64_t *)p)[i]);
	case MFS_DT_UINT64:
		return (size_t)snprintf(buf, size, "%" PRIu64, ((const uint64_t *)p)[i]);
	case MFS_DT_FLOAT: case MFS_DT_DOUBLE: case MFS_DT_FLOAT16: case MFS_DT_BFLOAT16:
		v = mfs_dtype_load_f64(dt, p, i);
		if (isnan(v))
			return (size_t)snprintf(buf, size, "NaN");
		if (isinf(v))
			return (size_t)snprintf(buf, size, "%sINF", v < 0 ? "-" : "");
		if (v == 0)
			return (size_t)snprintf(buf, size, "%s", signbit(v) ? "-0.0" : "0.0");
		return fmt_float(buf, size, dt, v);
	default:   /* the other integers fit a double exactly */
		return (size_t)snprintf(buf, size, "%.0f", mfs_dtype_load_f64(dt, p, i));
	}
}

/* The end of s's number: only spaces may follow. */
static bool rest_blank(const char *end)
{
	while (isspace((unsigned char)*end))
		end++;
	return *end == '\0';
}

static bool parse_bool(const char *s, uint8_t *out)
{
	while (isspace((unsigned char)*s))
		s++;
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	if ((n == 4 && !strncasecmp(s, "true", 4)) || (n == 1 && *s == '1'))
		*out = 1;
	else if ((n == 5 && !strncasecmp(s, "false", 5)) || (n == 1 && *s == '0'))
		*out = 0;
	else
		return false;
	return true;
}

/* Integer types: their range. */
static bool int_range(mfs_dtype dt, int64_t *lo, uint64_t *hi)
{
	switch (dt) {
	case MFS_DT_INT8: *lo = INT8_MIN; *hi = INT8_MAX; return true;
	case MFS_DT_INT16: *lo = INT16_MIN; *hi = INT16_MAX; return true;
	case MFS_DT_INT32: *lo = INT32_MIN; *hi = INT32_MAX; return true;
	case MFS_DT_INT64: *lo = INT64_MIN; *hi = INT64_MAX; return true;
	case MFS_DT_UINT8: *lo = 0; *hi = UINT8_MAX; return true;
	case MFS_DT_UINT16: *lo = 0; *hi = UINT16_MAX; return true;
	case MFS_DT_UINT32: *lo = 0; *hi = UINT32_MAX; return true;
	case MFS_DT_UINT64: *lo = 0; *hi = UINT64_MAX; return true;
	default: return false;
	}
}

static void store_int(void *y, mfs_dtype dt, int64_t i, int64_t s, uint64_t u, bool neg)
{
	switch (dt) {
	case MFS_DT_INT8: ((int8_t *)y)[i] = (int8_t)s; break;
	case MFS_DT_INT16: ((int16_t *)y)[i] = (int16_t)s; break;
	case MFS_DT_INT32: ((int32_t *)y)[i] = (int32_t)s; break;
	case MFS_DT_INT64: ((int64_t *)y)[i] = s; break;
	case MFS_DT_UINT8: ((uint8_t *)y)[i] = (uint8_t)u; break;
	case MFS_DT_UINT16: ((uint16_t *)y)[i] = (uint16_t)u; break;
	case MFS_DT_UINT32: ((uint32_t *)y)[i] = (uint32_t)u; break;
	default: ((uint64_t *)y)[i] = u; break;
	}
	(void)neg;
}

/* Element i's text (NUL-terminated, string tensors always are) into y. */
static bool parse_one(const char *s, mfs_dtype dt, void *y, int64_t i)
{
	char *end;
	int64_t lo;
	uint64_t hi;

	errno = 0;
	switch (dt) {
	case MFS_DT_BOOL:
		return parse_bool(s, (uint8_t *)y + i);
	case MFS_DT_FLOAT: {
		float f = strtof(s, &end);
		((float *)y)[i] = f;
		return end != s && rest_blank(end);
	}
	case MFS_DT_FLOAT16: case MFS_DT_BFLOAT16: {
		float f = strtof(s, &end);
		((uint16_t *)y)[i] = dt == MFS_DT_FLOAT16 ? mfs_float_to_half(f) : mfs_float_to_bf16(f);
		return end != s && rest_blank(end);
	}
	case MFS_DT_DOUBLE:
		((double *)y)[i] = strtod(s, &end);
		return end != s && rest_blank(end);
	default:
		break;
	}
	if (!int_range(dt, &lo, &hi))
		return false;
	while (isspace((unsigned char)*s))
		s++;
	if (*s == '-') {
		long long v = strtoll(s, &end, 10);
		if (end == s || !rest_blank(end) || errno || v < lo)
			return false;
		store_int(y, dt, i, v, 0, true);
	} else {
		unsigned long long v = strtoull(s, &end, 10);
		if (end == s || !rest_blank(end) || errno || v > hi)
			return false;
		store_int(y, dt, i, (int64_t)v, v, false);
	}
	return true;
}

int cast_string_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];
	mfs_tensor *y = ctx->out[0];
	int64_t n = mfs_shape_numel(&x->shape);
	char buf[64];
	int rc;

	if (x->dtype == MFS_DT_STRING && y->dtype == MFS_DT_STRING) {
		if (y->data != x->data && x->nbytes)
			memcpy(y->data, x->data, x->nbytes);   /* the engine copies the bytes */
		return 0;
	}
	if (y->dtype == MFS_DT_STRING) {
		for (int64_t i = 0; i < n; i++) {
			size_t len = str_from_number(buf, sizeof(buf), x->dtype, x->data, i);
			if ((rc = mfs_string_set(y, i, buf, len, ctx->err)))
				return rc;
		}
		return 0;
	}
	for (int64_t i = 0; i < n; i++) {
		const mfs_string *s = mfs_string_at(x, i);
		if (!parse_one(s->ptr ? s->ptr : "", y->dtype, y->data, i) ||
		    strlen(s->ptr ? s->ptr : "") != s->len)
			return mfs_op_fail(ctx, EINVAL, "element %lld ('%.40s') is not a %s",
					   (long long)i, s->ptr ? s->ptr : "",
					   mfs_dtype_onnx_name(y->dtype));
	}
	return 0;
}

/* codec_shared.c - the helpers the per-format codecs share (declared in
 * codec_impl.h): shapes a file does not carry, the datatype text is
 * parsed into, storing a parsed value with its range checked, and the
 * growable buffer the text encoders write.  Below every codec and the
 * dispatch (codec.c): it calls none of them.
 */
#include "codec_impl.h"
#include "float_text.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "FP32", or the ONNX name for types KServe has no name for. */
const char *mfs_codec_dtype_name(mfs_dtype dt)
{
	const char *n = mfs_dtype_kserve_name(dt);
	return n ? n : mfs_dtype_onnx_name(dt);
}

void mfs_codec_format_spec(const mfs_tensor_spec *spec, char *buf, size_t size)
{
	mfs_shape s;

	if (spec->rank < 0 || spec->rank > MFS_MAX_RANK) {
		snprintf(buf, size, "(any shape)");
		return;
	}
	s.rank = spec->rank;
	memcpy(s.dims, spec->dims, sizeof(s.dims));
	mfs_shape_format(&s, buf, size);
}

int64_t mfs_codec_numel(const int64_t *dims, int rank, int skip)
{
	int64_t n = 1;

	for (int i = 0; i < rank; i++)
		if (i != skip && dims[i] == 0)
			return 0;
	for (int i = 0; i < rank; i++) {
		if (i == skip)
			continue;
		if (dims[i] < 0 || n > INT64_MAX / dims[i])
			return -1;
		n *= dims[i];
	}
	return n;
}

int mfs_codec_infer_shape(const mfs_tensor_spec *spec, int64_t count,
			  mfs_shape *out, mfs_error *err)
{
	char sbuf[128];
	int64_t known = 1;
	int unknown = -1;

	memset(out, 0, sizeof(*out));
	if (count < 0)
		return mfs_fail(err, EINVAL, "negative element count");
	if (!spec || spec->rank < 0) {
		out->rank = 1;
		out->dims[0] = count;
		return 0;
	}
	if (spec->rank > MFS_MAX_RANK)
		return mfs_fail(err, EINVAL, "rank %d is more than %d", spec->rank,
				MFS_MAX_RANK);
	mfs_codec_format_spec(spec, sbuf, sizeof(sbuf));
	out->rank = spec->rank;
	for (int i = 0; i < spec->rank; i++) {
		out->dims[i] = spec->dims[i];
		if (spec->dims[i] >= 0)
			continue;
		if (unknown >= 0)
			return mfs_fail(err, EINVAL,
					"the expected shape %s has more than one variable dim and this format carries no shape (use .npy or .json)",
					sbuf);
		unknown = i;
	}
	known = mfs_codec_numel(spec->dims, spec->rank, unknown);
	if (known < 0)
		return mfs_fail(err, EINVAL, "the expected shape %s is too large", sbuf);
	if (unknown < 0) {
		if (known != count)
			return mfs_fail(err, EINVAL,
					"%" PRId64 " values given, but shape %s needs %" PRId64,
					count, sbuf, known);
		return 0;
	}
	if (known == 0)
		return mfs_fail(err, EINVAL,
				"cannot infer the variable dim of shape %s (the other dims hold no elements)",
				sbuf);
	if (count % known)
		return mfs_fail(err, EINVAL,
				"%" PRId64 " values given, not a multiple of %" PRId64 " as shape %s needs",
				count, known, sbuf);
	out->dims[unknown] = count / known;
	return 0;
}

int mfs_codec_text_dtype(const mfs_tensor_spec *spec, mfs_dtype *out,
			 mfs_error *err)
{
	if (!spec || spec->dtype == MFS_DT_UNDEFINED)
		return mfs_fail(err, EINVAL, "the model gives no datatype for this tensor");
	if (mfs_dtype_size(spec->dtype) == 0)
		return mfs_fail(err, ENOTSUP, "data type %s is not supported",
				mfs_dtype_onnx_name(spec->dtype));
	*out = spec->dtype;
	return 0;
}

static bool int_range(mfs_dtype dt, int64_t *lo, uint64_t *hi)
{
	switch (dt) {
	case MFS_DT_UINT8: *lo = 0; *hi = UINT8_MAX; return true;
	case MFS_DT_INT8: *lo = INT8_MIN; *hi = INT8_MAX; return true;
	case MFS_DT_UINT16: *lo = 0; *hi = UINT16_MAX; return true;
	case MFS_DT_INT16: *lo = INT16_MIN; *hi = INT16_MAX; return true;
	case MFS_DT_UINT32: *lo = 0; *hi = UINT32_MAX; return true;
	case MFS_DT_INT32: *lo = INT32_MIN; *hi = INT32_MAX; return true;
	case MFS_DT_UINT64: *lo = 0; *hi = UINT64_MAX; return true;
	case MFS_DT_INT64: *lo = INT64_MIN; *hi = INT64_MAX; return true;
	case MFS_DT_BOOL: *lo = 0; *hi = 1; return true;
	default: return false;
	}
}

/* Store an integer already known to be within dt's range. */
static void store_int(mfs_tensor *t, size_t i, int64_t s, uint64_t u)
{
	void *p = t->data;
	switch (t->dtype) {
	case MFS_DT_UINT8: ((uint8_t *)p)[i] = (uint8_t)u; break;
	case MFS_DT_BOOL: ((uint8_t *)p)[i] = (uint8_t)u; break;
	case MFS_DT_INT8: ((int8_t *)p)[i] = (int8_t)s; break;
	case MFS_DT_UINT16: ((uint16_t *)p)[i] = (uint16_t)u; break;
	case MFS_DT_INT16: ((int16_t *)p)[i] = (int16_t)s; break;
	case MFS_DT_UINT32: ((uint32_t *)p)[i] = (uint32_t)u; break;
	case MFS_DT_INT32: ((int32_t *)p)[i] = (int32_t)s; break;
	case MFS_DT_UINT64: ((uint64_t *)p)[i] = u; break;
	case MFS_DT_INT64: ((int64_t *)p)[i] = s; break;
	default: break;
	}
}

static int out_of_range(mfs_tensor *t, size_t i, const char *val,
			mfs_error *err)
{
	int64_t lo;
	uint64_t hi;

	int_range(t->dtype, &lo, &hi);
	if (t->dtype == MFS_DT_BOOL)
		return mfs_fail(err, EINVAL,
				"value %s at index %zu is not a BOOL (0 or 1, true or false)",
				val, i);
	return mfs_fail(err, EINVAL,
			"value %s at index %zu is out of range for %s (%" PRId64 "..%" PRIu64 ")",
			val, i, mfs_codec_dtype_name(t->dtype), lo, hi);
}

int mfs_codec_put_i64(mfs_tensor *t, size_t i, int64_t v, mfs_error *err)
{
	int64_t lo;
	uint64_t hi;
	char val[32];

	if (!int_range(t->dtype, &lo, &hi))
		return mfs_codec_put_f64(t, i, (double)v, err);
	if (v < lo || (v > 0 && (uint64_t)v > hi)) {
		snprintf(val, sizeof(val), "%" PRId64, v);
		return out_of_range(t, i, val, err);
	}
	store_int(t, i, v, (uint64_t)v);
	return 0;
}

int mfs_codec_put_u64(mfs_tensor *t, size_t i, uint64_t v, mfs_error *err)
{
	int64_t lo;
	uint64_t hi;
	char val[32];

	if (v <= INT64_MAX)
		return mfs_codec_put_i64(t, i, (int64_t)v, err);
	if (!int_range(t->dtype, &lo, &hi))
		return mfs_codec_put_f64(t, i, (double)v, err);
	if (v > hi) {
		snprintf(val, sizeof(val), "%" PRIu64, v);
		return out_of_range(t, i, val, err);
	}
	store_int(t, i, (int64_t)v, v);
	return 0;
}

/* The shortest text that reads back as v, for messages ("3.5", "1e+39"). */
static void shortest(double v, char *buf, size_t size)
{
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, size, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

int mfs_codec_put_f64(mfs_tensor *t, size_t i, double v, mfs_error *err)
{
	char val[40];
	void *p = t->data;
	int64_t lo;
	uint64_t hi;

	switch (t->dtype) {
	case MFS_DT_FLOAT: {
		float f = (float)v;
		if (isinf(f) && isfinite(v))
			goto overflow;
		((float *)p)[i] = f;
		return 0;
	}
	case MFS_DT_DOUBLE:
		((double *)p)[i] = v;
		return 0;
	case MFS_DT_FLOAT16: {
		uint16_t h = mfs_float_to_half((float)v);
		if ((h & 0x7fff) == 0x7c00 && isfinite(v))
			goto overflow;
		((uint16_t *)p)[i] = h;
		return 0;
	}
	case MFS_DT_BFLOAT16: {
		float f = (float)v;
		uint16_t b = mfs_float_to_bf16(f);
		if ((b & 0x7fff) == 0x7f80 && isfinite(v))
			goto overflow;
		((uint16_t *)p)[i] = b;
		return 0;
	}
	default:
		break;
	}
	if (!int_range(t->dtype, &lo, &hi))
		return mfs_fail(err, ENOTSUP, "data type %s is not supported",
				mfs_dtype_onnx_name(t->dtype));
	shortest(v, val, sizeof(val));
	if (v != v || isinf(v) || v != trunc(v)) {
		if (t->dtype == MFS_DT_BOOL)
			return out_of_range(t, i, val, err);
		return mfs_fail(err, EINVAL, "value %s at index %zu is not an integer, as %s needs",
				val, i, mfs_codec_dtype_name(t->dtype));
	}
	/* 2^63 and 2^64 are exact doubles; compare before converting. */
	if (v < 0) {
		if (v < -9223372036854775808.0 || (int64_t)v < lo)
			return out_of_range(t, i, val, err);
		store_int(t, i, (int64_t)v, (uint64_t)(int64_t)v);
		return 0;
	}
	if (v >= 18446744073709551616.0 || (uint64_t)v > hi)
		return out_of_range(t, i, val, err);
	store_int(t, i, (int64_t)(uint64_t)v, (uint64_t)v);
	return 0;
overflow:
	shortest(v, val, sizeof(val));
	return mfs_fail(err, EINVAL, "value %s at index %zu is too large for %s",
			val, i, mfs_codec_dtype_name(t->dtype));
}

static void strbuf_reserve(mfs_strbuf *b, size_t more)
{
	size_t want, cap;
	char *p;

	if (b->failed)
		return;
	if (more > SIZE_MAX - b->len - 1) {
		b->failed = 1;
		return;
	}
	want = b->len + more + 1;
	if (want <= b->cap)
		return;
	cap = b->cap ? b->cap : 256;
	while (cap < want)
		cap = cap > SIZE_MAX / 2 ? want : cap * 2;
	p = realloc(b->data, cap);
	if (!p) {
		b->failed = 1;
		return;
	}
	b->data = p;
	b->cap = cap;
}

void mfs_strbuf_append(mfs_strbuf *b, const char *s, size_t n)
{
	strbuf_reserve(b, n);
	if (b->failed)
		return;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void mfs_strbuf_printf(mfs_strbuf *b, const char *fmt, ...)
{
	char small[64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->failed = 1;
		return;
	}
	if ((size_t)n < sizeof(small)) {
		mfs_strbuf_append(b, small, (size_t)n);
		return;
	}
	strbuf_reserve(b, (size_t)n);
	if (b->failed)
		return;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

static void put_real(mfs_strbuf *b, double v, int digits, int nonfinite_json)
{
	if (isfinite(v)) {
		/* JSON readers take "-0" for the integer 0: keep the sign. */
		if (v == 0 && signbit(v) && nonfinite_json) {
			mfs_strbuf_append(b, "-0.0", 4);
		} else if (digits == 9) {
			/* FP32, FP16, BF16: every value is a float */
			char text[MFS_FLOAT_G9_SIZE];
			mfs_strbuf_append(b, text, (size_t)mfs_float_g9((float)v, text));
		} else {
			mfs_strbuf_printf(b, "%.*g", digits, v);
		}
		return;
	}
	if (nonfinite_json)
		mfs_strbuf_printf(b, "\"%s\"", v != v ? "NaN"
					 : v > 0 ? "Infinity" : "-Infinity");
	else
		mfs_strbuf_printf(b, "%s", v != v ? "nan" : v > 0 ? "inf" : "-inf");
}

void mfs_strbuf_put_value(mfs_strbuf *b, const mfs_tensor *t, size_t i,
			  int nonfinite_json)
{
	const void *p = t->data;

	switch (t->dtype) {
	case MFS_DT_FLOAT:
		put_real(b, ((const float *)p)[i], 9, nonfinite_json);
		break;
	case MFS_DT_FLOAT16:
	case MFS_DT_BFLOAT16:
		put_real(b, mfs_tensor_get_f64(t, (int64_t)i), 9, nonfinite_json);
		break;
	case MFS_DT_DOUBLE:
		put_real(b, ((const double *)p)[i], 17, nonfinite_json);
		break;
	case MFS_DT_UINT64:
		mfs_strbuf_printf(b, "%" PRIu64, ((const uint64_t *)p)[i]);
		break;
	default:
		mfs_strbuf_printf(b, "%" PRId64, mfs_tensor_get_i64(t, (int64_t)i));
		break;
	}
}

int mfs_strbuf_finish(mfs_strbuf *b, char **buf, size_t *len, mfs_error *err)
{
	if (!b->failed)
		strbuf_reserve(b, 0);  /* an empty result still gets a NUL */
	if (b->failed) {
		free(b->data);
		memset(b, 0, sizeof(*b));
		return mfs_fail(err, ENOMEM, "out of memory writing the tensor");
	}
	b->data[b->len] = '\0';
	*buf = b->data;
	*len = b->len;
	memset(b, 0, sizeof(*b));
	return 0;
}


/* codec_txt.c - plain text tensors.
 *
 * Read: numbers separated by any run of spaces, tabs, commas and newlines
 * (so "1 2 3", "1,2,3" and one value per line all work), parsed into the
 * model's datatype; integers are read exactly (all 64 bits), "3.0" is
 * accepted for an integer type but 3.5 is not, BOOL takes 0/1/true/false,
 * and nan/inf are accepted for float types.  The file has no shape: the
 * model's shape is used, one variable dim inferred from the count.
 * Write: the last dim on each line, values separated by one space;
 * integers exactly, FP32/FP16 as %.9g and FP64 as %.17g (enough digits to
 * read back the same value), BOOL as 0/1, nan/inf/-inf for non-finite.
 */
#include "codec_impl.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define TOKEN_MAX 64

static bool is_sep(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' ||
	       c == '\v' || c == '\f';
}

/* Copy a token for messages: printable ASCII only, cut at 24 chars. */
static void shown_token(const char *s, size_t n, char *out, size_t size)
{
	size_t k = 0;
	for (size_t i = 0; i < n && k + 4 < size && i < 24; i++)
		out[k++] = isprint((unsigned char)s[i]) ? s[i] : '?';
	if (n > 24 && k + 4 < size) {
		memcpy(out + k, "...", 3);
		k += 3;
	}
	out[k] = '\0';
}

/* Parse one token (not NUL-terminated) into element i of t. */
static int parse_token(mfs_tensor *t, size_t i, const char *s, size_t n,
		       mfs_error *err)
{
	char tok[TOKEN_MAX + 1], shown[32];
	char *end;

	if (n > TOKEN_MAX) {
		shown_token(s, n, shown, sizeof(shown));
		return mfs_fail(err, EINVAL, "'%s' at index %zu is not a number", shown, i);
	}
	memcpy(tok, s, n);
	tok[n] = '\0';
	if (t->dtype == MFS_DT_BOOL) {
		if (strcasecmp(tok, "true") == 0)
			return mfs_codec_put_i64(t, i, 1, err);
		if (strcasecmp(tok, "false") == 0)
			return mfs_codec_put_i64(t, i, 0, err);
	}
	/* Float types read every token as a double (this keeps "-0" negative
	 * and rounds big integers correctly); integer types read integers
	 * exactly first. */
	bool is_float = t->dtype == MFS_DT_FLOAT || t->dtype == MFS_DT_DOUBLE ||
			t->dtype == MFS_DT_FLOAT16 || t->dtype == MFS_DT_BFLOAT16;
	errno = 0;
	long long v = is_float ? 0 : strtoll(tok, &end, 10);
	if (!is_float && end == tok + n && n > 0) {
		if (errno == 0)
			return mfs_codec_put_i64(t, i, v, err);
		if (tok[0] != '-') {
			errno = 0;
			unsigned long long u = strtoull(tok, &end, 10);
			if (errno == 0 && end == tok + n)
				return mfs_codec_put_u64(t, i, u, err);
		}
	}
	errno = 0;
	double d = strtod(tok, &end);
	if (n > 0 && end == tok + n) {
		/* "1e999" is a number, just not one any type holds. */
		if (errno == ERANGE && isinf(d)) {
			shown_token(s, n, shown, sizeof(shown));
			return mfs_fail(err, EINVAL, "value %s at index %zu is too large for %s",
					shown, i, mfs_dtype_kserve_name(t->dtype));
		}
		return mfs_codec_put_f64(t, i, d, err);
	}
	shown_token(s, n, shown, sizeof(shown));
	return mfs_fail(err, EINVAL, "'%s' at index %zu is not a number", shown, i);
}

int mfs_codec_txt_decode(const void *buf, size_t len,
			 const mfs_tensor_spec *spec, mfs_tensor *out,
			 mfs_error *err)
{
	const char *s = buf;
	mfs_dtype dt;
	mfs_shape shape;
	int64_t count = 0;
	size_t i, k;
	int rc;

	if ((rc = mfs_codec_text_dtype(spec, &dt, err)))
		return rc;
	for (i = 0; i < len;) {
		while (i < len && is_sep((unsigned char)s[i]))
			i++;
		if (i == len)
			break;
		count++;
		while (i < len && !is_sep((unsigned char)s[i]))
			i++;
	}
	if ((rc = mfs_codec_infer_shape(spec, count, &shape, err)))
		return rc;
	if ((rc = mfs_tensor_alloc(out, dt, &shape, err)))
		return rc;
	for (i = 0, k = 0; i < len;) {
		size_t start;
		while (i < len && is_sep((unsigned char)s[i]))
			i++;
		if (i == len)
			break;
		start = i;
		while (i < len && !is_sep((unsigned char)s[i]))
			i++;
		if ((rc = parse_token(out, k++, s + start, i - start, err))) {
			mfs_tensor_release(out);
			return rc;
		}
	}
	return 0;
}

int mfs_codec_txt_encode(const mfs_tensor *t, const char *name, char **buf,
			 size_t *len, mfs_error *err)
{
	mfs_strbuf b = { 0 };
	int64_t n = mfs_shape_numel(&t->shape);
	int64_t row = t->shape.rank ? t->shape.dims[t->shape.rank - 1] : 1;

	(void)name;
	for (int64_t i = 0; i < n; i++) {
		mfs_strbuf_put_value(&b, t, (size_t)i, 0);
		mfs_strbuf_append(&b, (i + 1) % row ? " " : "\n", 1);
	}
	return mfs_strbuf_finish(&b, buf, len, err);
}

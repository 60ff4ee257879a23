/* string_util.c - helpers of the string operators (string_util.h). */
#include <locale.h>
#include <pthread.h>
#include <string.h>
#include <wctype.h>

#include "string_util.h"

static locale_t utf8_locale;
static pthread_once_t utf8_once = PTHREAD_ONCE_INIT;

static void utf8_init(void)
{
	utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

/* One code point at s (n bytes left): its value and length, or -1 when
 * the bytes are no UTF-8. */
static int utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	int len = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3
		: (s[0] & 0xf8) == 0xf0 ? 4 : -1;
	uint32_t v;

	if (len < 0 || (size_t)len > n)
		return -1;
	v = len == 1 ? s[0] : s[0] & (0x7f >> len);
	for (int k = 1; k < len; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return -1;
		v = v << 6 | (s[k] & 0x3f);
	}
	if ((len == 2 && v < 0x80) || (len == 3 && v < 0x800) || (len == 4 && v < 0x10000) ||
	    v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return -1;
	*cp = v;
	return len;
}

static size_t utf8_encode(uint32_t v, char *out)
{
	if (v < 0x80) {
		out[0] = (char)v;
		return 1;
	}
	if (v < 0x800) {
		out[0] = (char)(0xc0 | v >> 6);
		out[1] = (char)(0x80 | (v & 0x3f));
		return 2;
	}
	if (v < 0x10000) {
		out[0] = (char)(0xe0 | v >> 12);
		out[1] = (char)(0x80 | (v >> 6 & 0x3f));
		out[2] = (char)(0x80 | (v & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | v >> 18);
	out[1] = (char)(0x80 | (v >> 12 & 0x3f));
	out[2] = (char)(0x80 | (v >> 6 & 0x3f));
	out[3] = (char)(0x80 | (v & 0x3f));
	return 4;
}

size_t str_case_map(const char *s, size_t len, bool upper, char *out)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, n = 0;

	pthread_once(&utf8_once, utf8_init);
	while (i < len) {
		uint32_t cp;
		int l = utf8_decode(u + i, len - i, &cp);
		if (l < 0) {
			out[n++] = s[i++];
			continue;
		}
		if (cp < 0x80)
			cp = (uint32_t)(upper ? (cp >= 'a' && cp <= 'z' ? cp - 32 : cp)
					      : (cp >= 'A' && cp <= 'Z' ? cp + 32 : cp));
		else if (utf8_locale)
			cp = (uint32_t)(upper ? towupper_l((wint_t)cp, utf8_locale)
					      : towlower_l((wint_t)cp, utf8_locale));
		n += utf8_encode(cp, out + n);
		i += (size_t)l;
	}
	return n;
}

int64_t str_bcast_index(const mfs_shape *out, const mfs_shape *in, int64_t i)
{
	int64_t idx = 0, stride = 1;

	for (int d = out->rank - 1, k = in->rank - 1; d >= 0; d--, k--) {
		int64_t c = i % out->dims[d];
		i /= out->dims[d];
		if (k < 0)
			continue;
		if (in->dims[k] != 1)
			idx += c * stride;
		stride *= in->dims[k];
	}
	return idx;
}

int str_binary_infer(mfs_op_ctx *ctx, mfs_dtype dt)
{
	const mfs_tensor *a = ctx->in[0], *b = ctx->n_in > 1 ? ctx->in[1] : NULL;
	mfs_shape s;
	int rc;

	if (!b)
		return mfs_op_fail(ctx, EINVAL, "needs two inputs");
	if (a->dtype != MFS_DT_STRING || b->dtype != MFS_DT_STRING)
		return mfs_op_fail(ctx, EINVAL, "inputs are %s and %s, expected two strings",
				   mfs_dtype_onnx_name(a->dtype), mfs_dtype_onnx_name(b->dtype));
	if ((rc = mfs_broadcast_shape(&a->shape, &b->shape, &s, ctx->err)))
		return rc;
	ctx->out[0]->dtype = dt;
	ctx->out[0]->shape = s;
	return 0;
}

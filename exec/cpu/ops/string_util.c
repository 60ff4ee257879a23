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

size_t str_case_map(const char *s, size_t len, bool upper, char *out)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, n = 0;

	pthread_once(&utf8_once, utf8_init);
	while (i < len) {
		uint32_t cp;
		int l = mfs_utf8_decode(u + i, len - i, &cp);
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
		n += mfs_utf8_encode(cp, out + n);
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

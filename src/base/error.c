#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void mfs_error_clear(mfs_error *err)
{
	if (!err)
		return;
	err->code = 0;
	err->msg[0] = '\0';
}

/* The length of the valid UTF-8 sequence at s (2..4), or 0 when the bytes
 * there are not one (overlong forms, surrogates and code points past
 * U+10FFFF included). */
static size_t utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	size_t n;
	unsigned cp;

	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)   /* also stops at the terminator */
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	/* C1 controls and U+2028/U+2029 end a line in some terminals and
	 * log viewers: escaped as if invalid. */
	if ((cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029)
		return 0;
	return n;
}

size_t mfs_escape(char *dst, size_t cap, const char *src)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t o = 0;

	while (*s) {
		char tmp[5];
		size_t n, k = 0;

		if (*s >= 0x20 && *s < 0x7f) {
			tmp[k++] = (char)*s;
			n = 1;
		} else if (*s >= 0x80 && (n = utf8_len(s)) > 0) {
			memcpy(tmp, s, n);
			k = n;
		} else {
			n = 1;
			if (*s == '\n' || *s == '\r' || *s == '\t') {
				tmp[k++] = '\\';
				tmp[k++] = *s == '\n' ? 'n' : *s == '\r' ? 'r' : 't';
			} else {
				k = (size_t)snprintf(tmp, sizeof(tmp), "\\x%02x", *s);
			}
		}
		if (o + k >= cap)
			break;
		memcpy(dst + o, tmp, k);
		o += k;
		s += n;
	}
	dst[o] = '\0';
	return o;
}

int mfs_fail(mfs_error *err, int code, const char *fmt, ...)
{
	if (code < 0)
		code = -code;
	if (err) {
		char raw[MFS_ERROR_MSG_MAX];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(raw, sizeof(raw), fmt, ap);
		va_end(ap);
		mfs_escape(err->msg, sizeof(err->msg), raw);
		err->code = code;
	}
	return -code;
}

void mfs_error_prefix(mfs_error *err, const char *fmt, ...)
{
	char joined[2 * MFS_ERROR_MSG_MAX];
	va_list ap;
	int n;

	if (!err)
		return;
	va_start(ap, fmt);
	n = vsnprintf(joined, MFS_ERROR_MSG_MAX, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n >= MFS_ERROR_MSG_MAX)
		n = MFS_ERROR_MSG_MAX - 1;
	/* The message may be cut; never the prefix's own terminator. */
	memcpy(joined + n, err->msg, strnlen(err->msg, MFS_ERROR_MSG_MAX - 1) + 1);
	mfs_escape(err->msg, sizeof(err->msg), joined);
}

/* codec_prefix.c - mfs_tensor_prefix_check (codec.h): refuse a file at
 * its first write() when its beginning already shows it is not of its
 * format.  A shell's builtin echo ignores close()'s result, so the close
 * time decode cannot reach it; a failed write() can. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "codec.h"
#include "error.h"

#define TOKEN_MAX 64

static bool txt_sep(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' ||
	       c == '\v' || c == '\f';
}

/* A whole token the txt codec could accept: a number strtod reads
 * entirely (integers, floats, nan, inf, hex) or true/false (BOOL). */
static bool txt_token_ok(const char *s, size_t n)
{
	char tok[TOKEN_MAX + 1], *end;
	if (n > TOKEN_MAX)
		return false;
	memcpy(tok, s, n);
	tok[n] = '\0';
	if (strcasecmp(tok, "true") == 0 || strcasecmp(tok, "false") == 0)
		return true;
	strtod(tok, &end);
	return end == tok + n;
}

/* The last token may be cut by the end of what was written so far: only
 * its characters are judged. */
static bool txt_partial_ok(const char *s, size_t n)
{
	if (n > TOKEN_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      c == '+' || c == '-' || c == '.'))
			return false;
	}
	return true;
}

static int txt_prefix(const char *s, size_t len, mfs_error *err)
{
	size_t i = 0;
	while (i < len) {
		while (i < len && txt_sep((unsigned char)s[i]))
			i++;
		size_t start = i;
		while (i < len && !txt_sep((unsigned char)s[i]))
			i++;
		if (i == start)
			break;
		bool last = i == len;   /* more may follow it */
		if (last ? !txt_partial_ok(s + start, i - start) : !txt_token_ok(s + start, i - start)) {
			size_t n = i - start < 24 ? i - start : 24;
			char shown[32];
			for (size_t k = 0; k < n; k++)
				shown[k] = s[start + k] >= ' ' && s[start + k] < 127 ? s[start + k] : '?';
			shown[n] = '\0';
			return mfs_fail(err, EINVAL, "txt file: '%s%s' is not a number", shown,
					i - start > 24 ? "..." : "");
		}
	}
	return 0;
}

int mfs_tensor_prefix_check(mfs_format fmt, const void *buf, size_t len,
			    mfs_error *err)
{
	static const char magic[] = "\x93NUMPY";
	const char *s = buf;
	if (!len)
		return 0;   /* nothing written yet (buf may be NULL) */
	if (len > MFS_PREFIX_CHECK_BYTES)
		len = MFS_PREFIX_CHECK_BYTES;
	switch (fmt) {
	case MFS_FMT_NPY:
		if (memcmp(s, magic, len < 6 ? len : 6) != 0)
			return mfs_fail(err, EINVAL, "npy file: not a .npy file (no \\x93NUMPY magic)");
		return 0;
	case MFS_FMT_JSON:
		for (size_t i = 0; i < len; i++) {
			if (txt_sep((unsigned char)s[i]) && s[i] != ',')
				continue;
			if (s[i] == '{' || s[i] == '[')
				return 0;
			return mfs_fail(err, EINVAL, "json file: must start with '{' (a tensor object) or '[' (an array)");
		}
		return 0;
	case MFS_FMT_TXT:
		return txt_prefix(s, len, err);
	default:
		return 0;
	}
}

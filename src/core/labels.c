/* labels.c - see labels.h. */
#include "labels.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "file_util.h"

#define LABELS_MAX_BYTES (16u << 20)

/* Strict UTF-8 (no overlongs, surrogates or code points past U+10FFFF). */
static bool utf8_ok(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned c = s[i];
		int more;
		unsigned cp, min;

		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0) {
			more = 1; cp = c & 0x1f; min = 0x80;
		} else if ((c & 0xf0) == 0xe0) {
			more = 2; cp = c & 0x0f; min = 0x800;
		} else if ((c & 0xf8) == 0xf0) {
			more = 3; cp = c & 0x07; min = 0x10000;
		} else {
			return false;
		}
		if (i + (size_t)more >= n)
			return false;
		for (int k = 1; k <= more; k++) {
			if ((s[i + (size_t)k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + (size_t)k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += (size_t)more + 1;
	}
	return true;
}

int mfs_labels_load(const char *path, mfs_labels **out, mfs_error *err)
{
	mfs_labels *l;
	size_t len;
	int64_t lines = 0;
	int rc;

	*out = NULL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return mfs_fail(err, ENOMEM, "out of memory");
	rc = mfs_read_file(path, LABELS_MAX_BYTES, &l->text, &len, err);
	if (rc) {
		mfs_error_prefix(err, "label file %s: ", path);
		free(l);
		return rc;
	}
	for (size_t i = 0; i < len; i++)
		if (l->text[i] == '\n' || i + 1 == len)
			lines++;
	l->label = calloc((size_t)lines + 1, sizeof(char *));
	if (!l->label) {
		mfs_labels_free(l);
		return mfs_fail(err, ENOMEM, "out of memory");
	}
	char *p = l->text, *end = l->text + len;
	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *stop = nl ? nl : end;
		size_t n = (size_t)(stop - p);
		if (n && p[n - 1] == '\r')
			n--;
		if (memchr(p, '\0', n) || !utf8_ok((const unsigned char *)p, n)) {
			int64_t line = l->n + 1;
			mfs_labels_free(l);
			return mfs_fail(err, EINVAL, "label file %s:%lld: not a line of UTF-8 text", path,
					(long long)line);
		}
		p[n] = '\0';   /* at the end: the NUL mfs_read_file put there */
		l->label[l->n++] = p;
		p = stop + 1;
	}
	*out = l;
	return 0;
}

const char *mfs_labels_get(const mfs_labels *l, int64_t i)
{
	return l && i >= 0 && i < l->n ? l->label[i] : NULL;
}

void mfs_labels_free(mfs_labels *l)
{
	if (!l)
		return;
	free(l->label);
	free(l->text);
	free(l);
}

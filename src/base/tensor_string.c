/* tensor_string.c - the bytes of string tensors (tensor.h: mfs_string,
 * mfs_strarena).
 *
 * An arena is a chain of blocks that only grows; every element's bytes
 * are written once, followed by a NUL, and stay where they are until the
 * whole arena is freed, so that element arrays may be copied freely while
 * the arena lives.
 */
#include "tensor.h"

#include <stdlib.h>
#include <string.h>

#define STRBUF_MIN_BLOCK 4096u

typedef struct strblock {
	struct strblock *next;
	size_t used, cap;
	char mem[];
} strblock;

struct mfs_strarena {
	strblock *head;   /* the block being filled; older ones follow */
};

void mfs_strarena_free(mfs_strarena *b)
{
	if (!b)
		return;
	for (strblock *k = b->head, *next; k; k = next) {
		next = k->next;
		free(k);
	}
	free(b);
}

/* Room for n bytes in b, or NULL. */
static char *strbuf_take(mfs_strarena *b, size_t n)
{
	strblock *k = b->head;

	if (!k || k->cap - k->used < n) {
		size_t cap = STRBUF_MIN_BLOCK;
		if (k && k->cap < (SIZE_MAX >> 2))
			cap = k->cap * 2;   /* fewer blocks as it grows */
		if (cap < n)
			cap = n;
		if (cap > SIZE_MAX - sizeof(strblock))
			return NULL;
		k = malloc(sizeof(strblock) + cap);
		if (!k)
			return NULL;
		k->used = 0;
		k->cap = cap;
		k->next = b->head;
		b->head = k;
	}
	k->used += n;
	return k->mem + k->used - n;
}

char *mfs_string_alloc(mfs_tensor *t, int64_t i, size_t len, mfs_error *err)
{
	mfs_string *s = (mfs_string *)t->data + i;
	char *p;

	if (!t->strings && !(t->strings = calloc(1, sizeof(*t->strings)))) {
		mfs_fail(err, ENOMEM, "out of memory for string bytes");
		return NULL;
	}
	if (len == SIZE_MAX || !(p = strbuf_take(t->strings, len + 1))) {
		mfs_fail(err, ENOMEM, "out of memory for a string of %zu bytes", len);
		return NULL;
	}
	p[len] = '\0';
	s->ptr = p;
	s->len = len;
	return p;
}

int mfs_string_set(mfs_tensor *t, int64_t i, const void *bytes, size_t len,
		   mfs_error *err)
{
	char *p = mfs_string_alloc(t, i, len, err);

	if (!p)
		return -ENOMEM;
	if (len)
		memcpy(p, bytes, len);
	return 0;
}

size_t mfs_strings_total(const mfs_tensor *t)
{
	size_t total = 0, n = t->nbytes / sizeof(mfs_string);

	for (size_t i = 0; i < n; i++)
		total += mfs_string_at(t, (int64_t)i)->len;
	return total;
}

int mfs_tensor_own_strings(mfs_tensor *t, mfs_error *err)
{
	size_t n = t->nbytes / sizeof(mfs_string), total = 0;
	mfs_string *s = t->data;
	mfs_strarena *b;
	char *p;

	if (t->dtype != MFS_DT_STRING)
		return 0;
	for (size_t i = 0; i < n; i++)
		total += s[i].len + 1;
	t->strings = NULL;
	if (total == n) {   /* every element empty: no bytes to keep */
		for (size_t i = 0; i < n; i++)
			s[i].ptr = NULL;
		return 0;
	}
	b = calloc(1, sizeof(*b));
	if (!b || !(p = strbuf_take(b, total))) {
		mfs_strarena_free(b);
		return mfs_fail(err, ENOMEM, "out of memory copying %zu bytes of strings", total);
	}
	for (size_t i = 0; i < n; i++) {
		if (s[i].len)
			memcpy(p, s[i].ptr, s[i].len);
		p[s[i].len] = '\0';
		s[i].ptr = p;
		p += s[i].len + 1;
	}
	t->strings = b;
	return 0;
}

int mfs_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
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

size_t mfs_utf8_encode(uint32_t v, char *out)
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

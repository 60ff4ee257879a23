/* onnx_string.c - the string_data of a TensorProto (onnx_internal.h):
 * one length-delimited entry per element, any bytes. */
#include <string.h>

#include "onnx_internal.h"
#include "pb_wire.h"

int onnx_fill_strings(const uint8_t *buf, size_t len, uint32_t field,
		      mfs_tensor *t, mfs_error *err)
{
	pb_reader r = pb_reader_init(buf, len);
	size_t n = t->nbytes / sizeof(mfs_string), i = 0;
	const char *why = NULL;
	pb_field f;
	int rc;

	while ((rc = pb_next(&r, &f, &why)) > 0) {
		if (f.num != field)
			continue;
		if (i >= n)
			return mfs_fail(err, EINVAL, "string_data has more than %zu elements", n);
		if ((rc = mfs_string_set(t, (int64_t)i++, f.data, f.len, err)))
			return rc;
	}
	if (rc < 0)
		return mfs_fail(err, EINVAL, "malformed TensorProto: %s", why);
	return 0;
}

size_t onnx_strings_encoded_len(const mfs_tensor *t, uint32_t field)
{
	size_t n = t->nbytes / sizeof(mfs_string), total = 0;

	for (size_t i = 0; i < n; i++) {
		size_t l = mfs_string_at(t, (int64_t)i)->len;
		total += pb_varint_len((uint64_t)field << 3) + pb_varint_len(l) + l;
	}
	return total;
}

uint8_t *onnx_strings_encode(const mfs_tensor *t, uint32_t field, uint8_t *p)
{
	size_t n = t->nbytes / sizeof(mfs_string);

	for (size_t i = 0; i < n; i++) {
		const mfs_string *s = mfs_string_at(t, (int64_t)i);
		p = pb_put_varint(p, (uint64_t)field << 3 | PB_WT_LEN);
		p = pb_put_varint(p, s->len);
		if (s->len)
			memcpy(p, s->ptr, s->len);
		p += s->len;
	}
	return p;
}

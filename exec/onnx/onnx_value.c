/* onnx_value.c - ONNX's SequenceProto and OptionalProto (the test-data
 * form of sequence and optional values) to and from the engine's
 * containers (tensor.h: mfs_kind), on top of onnx_tensor.c's TensorProto.
 *
 * The bytes do not say which message they hold: the caller passes the
 * kind the model declares.  Nested sequences and maps are refused.
 */
#include "onnx.h"

#include <stdlib.h>
#include <string.h>

#include "pb_wire.h"

/* Field numbers shared by SequenceProto and OptionalProto. */
enum { VP_NAME = 1, VP_ELEM_TYPE = 2, VP_TENSOR = 3, VP_SEQUENCE = 5 };
/* Each tensor of a sequence is its own allocation: a file of many tiny
 * ones must not make the reader allocate without bound (the engine's
 * SplitToSequence has the same limit). */
#define VP_MAX_ITEMS (1 << 20)

/* Their elem_type values. */
enum { VP_ET_TENSOR = 1, VP_ET_SEQUENCE = 3 };

static int malformed(mfs_error *err, const char *msg, const char *why)
{
	return mfs_fail(err, EINVAL, "malformed %s: %s", msg, why);
}

static int decode_sequence(const uint8_t *buf, size_t len, const char *base_dir,
			   mfs_dtype empty_dtype, mfs_tensor *out, mfs_error *err)
{
	pb_reader r = pb_reader_init(buf, len);
	pb_field f;
	const char *why = NULL;
	int n = 0, k = 0, rc;

	while ((rc = pb_next(&r, &f, &why)) > 0) {
		if (f.num == VP_ELEM_TYPE && f.wt == PB_WT_VARINT &&
		    f.u != VP_ET_TENSOR && f.u != 0)
			return mfs_fail(err, ENOTSUP,
					"sequences of anything but tensors are not supported");
		if (f.num == VP_TENSOR && n++ == VP_MAX_ITEMS)
			return mfs_fail(err, EINVAL,
					"a sequence of more than %d tensors is not supported",
					VP_MAX_ITEMS);
	}
	if (rc < 0)
		return malformed(err, "SequenceProto", why);
	if ((rc = mfs_container_init(out, MFS_KIND_SEQUENCE, MFS_KIND_TENSOR,
				     empty_dtype, n, err)))
		return rc;
	r = pb_reader_init(buf, len);
	while (pb_next(&r, &f, &why) > 0) {
		mfs_tensor *t;
		if (f.num != VP_TENSOR)
			continue;
		t = &out->items[k];
		if (f.wt != PB_WT_LEN)
			rc = mfs_fail(err, EINVAL, "SequenceProto.tensor_values has wire type %s",
				      pb_wire_type_name(f.wt));
		else
			rc = onnx_tensor_decode(f.data, f.len, base_dir, t, NULL, err);
		if (!rc && k && t->dtype != out->items[0].dtype)
			rc = mfs_fail(err, EINVAL, "sequence tensor %d is %s, tensor 0 %s", k,
				      mfs_dtype_onnx_name(t->dtype),
				      mfs_dtype_onnx_name(out->items[0].dtype));
		if (rc) {
			mfs_tensor_release(out);
			return rc;
		}
		k++;
	}
	if (n)
		out->dtype = out->items[0].dtype;
	return 0;
}

static int decode_optional(const uint8_t *buf, size_t len, const char *base_dir,
			   const mfs_tensor *like, mfs_tensor *out, mfs_error *err)
{
	pb_reader r = pb_reader_init(buf, len);
	pb_field f, value = { 0 };
	const char *why = NULL;
	mfs_kind elem = like->elem_kind;
	int rc;

	while ((rc = pb_next(&r, &f, &why)) > 0) {
		if (f.num == VP_ELEM_TYPE && f.wt == PB_WT_VARINT) {
			if (f.u == VP_ET_TENSOR)
				elem = MFS_KIND_TENSOR;
			else if (f.u == VP_ET_SEQUENCE)
				elem = MFS_KIND_SEQUENCE;
			else if (f.u)
				return mfs_fail(err, ENOTSUP,
						"optionals of anything but a tensor or a sequence are not supported");
		} else if ((f.num == VP_TENSOR || f.num == VP_SEQUENCE) &&
			   f.wt == PB_WT_LEN) {
			value = f;
		}
	}
	if (rc < 0)
		return malformed(err, "OptionalProto", why);
	if (value.num)
		elem = value.num == VP_TENSOR ? MFS_KIND_TENSOR : MFS_KIND_SEQUENCE;
	if ((rc = mfs_container_init(out, MFS_KIND_OPTIONAL, elem, like->dtype,
				     value.num ? 1 : 0, err)))
		return rc;
	if (!value.num)
		return 0;
	rc = elem == MFS_KIND_TENSOR
	     ? onnx_tensor_decode(value.data, value.len, base_dir, &out->items[0],
				  NULL, err)
	     : decode_sequence(value.data, value.len, base_dir, like->dtype,
			       &out->items[0], err);
	if (rc)
		mfs_tensor_release(out);
	else
		out->dtype = out->items[0].dtype;
	return rc;
}

int onnx_value_decode(const void *buf, size_t len, const char *base_dir,
		      const mfs_tensor *like, mfs_tensor *out, mfs_error *err)
{
	memset(out, 0, sizeof(*out));
	switch (like->kind) {
	case MFS_KIND_SEQUENCE:
		return decode_sequence(buf, len, base_dir, like->dtype, out, err);
	case MFS_KIND_OPTIONAL:
		return decode_optional(buf, len, base_dir, like, out, err);
	default:
		return onnx_tensor_decode(buf, len, base_dir, out, NULL, err);
	}
}

/* Encoding: the message is its fields, each encoded whole first. */

typedef struct bytes {
	uint8_t *p;
	size_t len, cap;
} bytes;

static int put(bytes *b, const void *src, size_t n, mfs_error *err)
{
	if (b->len + n > b->cap) {
		size_t cap = (b->cap + n) * 2;
		uint8_t *np = realloc(b->p, cap);
		if (!np)
			return mfs_fail(err, ENOMEM, "out of memory encoding a value");
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, src, n);
	b->len += n;
	return 0;
}

static int put_varint(bytes *b, uint64_t v, mfs_error *err)
{
	uint8_t tmp[10];
	size_t n = 0;

	while (v >= 0x80) {
		tmp[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	tmp[n++] = (uint8_t)v;
	return put(b, tmp, n, err);
}

static int put_field(bytes *b, uint32_t num, const void *data, size_t n,
		     mfs_error *err)
{
	int rc = put_varint(b, (uint64_t)num << 3 | PB_WT_LEN, err);
	if (!rc)
		rc = put_varint(b, n, err);
	return rc ? rc : put(b, data, n, err);
}

static int encode_into(const mfs_tensor *t, const char *name, bytes *b,
		       mfs_error *err);

/* Encode t (no name) and append it as field num. */
static int put_value(bytes *b, uint32_t num, const mfs_tensor *t, mfs_error *err)
{
	bytes inner = { 0 };
	int rc = encode_into(t, NULL, &inner, err);

	if (!rc)
		rc = put_field(b, num, inner.p, inner.len, err);
	free(inner.p);
	return rc;
}

static int encode_into(const mfs_tensor *t, const char *name, bytes *b,
		       mfs_error *err)
{
	uint64_t et = t->kind == MFS_KIND_OPTIONAL && t->elem_kind == MFS_KIND_SEQUENCE
		      ? VP_ET_SEQUENCE : VP_ET_TENSOR;
	int rc = 0;

	if (t->kind == MFS_KIND_TENSOR) {
		void *buf;
		size_t len;
		if ((rc = onnx_tensor_encode(t, name, &buf, &len, err)))
			return rc;
		rc = put(b, buf, len, err);
		free(buf);
		return rc;
	}
	if (name)
		rc = put_field(b, VP_NAME, name, strlen(name), err);
	if (!rc)
		rc = put_varint(b, VP_ELEM_TYPE << 3 | PB_WT_VARINT, err);
	if (!rc)
		rc = put_varint(b, et, err);
	for (int i = 0; !rc && i < t->n_items; i++)
		rc = put_value(b, et == VP_ET_SEQUENCE ? VP_SEQUENCE : VP_TENSOR,
			       &t->items[i], err);
	return rc;
}

int onnx_value_encode(const mfs_tensor *t, const char *name, void **buf,
		      size_t *len, mfs_error *err)
{
	bytes b = { 0 };
	int rc = encode_into(t, name, &b, err);

	*buf = NULL;
	*len = 0;
	if (rc) {
		free(b.p);
		return rc;
	}
	if (!b.p && !(b.p = malloc(1)))
		return mfs_fail(err, ENOMEM, "out of memory encoding a value");
	*buf = b.p;
	*len = b.len;
	return 0;
}

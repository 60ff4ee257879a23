/* codec_value.c - sequence and optional values in one file (SPEC.md
 * section 6, "Sequences and optionals").
 *
 * A `.pb` file holds the value's ONNX message (SequenceProto,
 * OptionalProto), as in the ONNX test data.  An optional of a tensor may
 * also be any tensor format: the file is its tensor, and an empty file
 * says it has none (so `: > $req/x.npy` sends an optional without a
 * value and reading such an output gives 0 bytes).  A sequence has no
 * other one-file form.
 */
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "onnx.h"

static bool one_file_tensor(mfs_kind kind, mfs_kind elem_kind)
{
	return kind == MFS_KIND_TENSOR ||
	       (kind == MFS_KIND_OPTIONAL && elem_kind == MFS_KIND_TENSOR);
}

int mfs_value_format_ok(mfs_format fmt, mfs_kind kind, mfs_kind elem_kind,
			const char *name, mfs_error *err)
{
	char type[64];

	if (fmt == MFS_FMT_PB || one_file_tensor(kind, elem_kind))
		return 0;
	return mfs_fail(err, EINVAL, "'%s' is a %s: its file is %s.pb (an ONNX %s)",
			name, mfs_type_format(kind, elem_kind, MFS_DT_UNDEFINED, type,
					      sizeof(type)),
			name, kind == MFS_KIND_SEQUENCE ? "SequenceProto" : "OptionalProto");
}

int mfs_value_decode(mfs_format fmt, const void *buf, size_t len,
		     const mfs_tensor_spec *spec, mfs_kind kind, mfs_kind elem_kind,
		     mfs_tensor *out, mfs_error *err)
{
	mfs_tensor like = { .kind = kind, .elem_kind = elem_kind, .dtype = spec->dtype };
	int rc;

	memset(out, 0, sizeof(*out));
	if (kind == MFS_KIND_TENSOR)
		return mfs_tensor_decode(fmt, buf, len, spec, out, err);
	if ((rc = mfs_value_format_ok(fmt, kind, elem_kind, spec->name, err)))
		return rc;
	if (fmt == MFS_FMT_PB)
		rc = onnx_value_decode(buf, len, NULL, &like, out, err);
	else
		rc = mfs_container_init(out, MFS_KIND_OPTIONAL, MFS_KIND_TENSOR,
					spec->dtype, len ? 1 : 0, err);
	if (!rc && fmt != MFS_FMT_PB && len)
		rc = mfs_tensor_decode(fmt, buf, len, spec, &out->items[0], err);
	if (!rc && out->dtype != spec->dtype)
		rc = mfs_fail(err, EINVAL, "'%s' holds %s tensors, the model's are %s",
			      spec->name, mfs_dtype_onnx_name(out->dtype),
			      mfs_dtype_onnx_name(spec->dtype));
	if (rc)
		mfs_tensor_release(out);
	return rc;
}

int mfs_value_encode(mfs_format fmt, const mfs_tensor *t, const char *name,
		     char **buf, size_t *len, mfs_error *err)
{
	void *p = NULL;
	int rc;

	if (t->kind == MFS_KIND_TENSOR)
		return mfs_tensor_encode(fmt, t, name, buf, len, err);
	*buf = NULL;
	*len = 0;
	if ((rc = mfs_value_format_ok(fmt, t->kind, t->elem_kind, name, err)))
		return rc;
	if (fmt == MFS_FMT_PB) {
		rc = onnx_value_encode(t, name, &p, len, err);
		*buf = p;
		return rc;
	}
	if (t->n_items)
		return mfs_tensor_encode(fmt, &t->items[0], name, buf, len, err);
	*buf = malloc(1);   /* no value: an empty file */
	return *buf ? 0 : mfs_fail(err, ENOMEM, "out of memory");
}

/* codec.c - tensor file formats: dispatch by extension and the spec
 * check.  The value/shape helpers the per-format codecs share are
 * codec_shared.c's (codec_impl.h).
 *
 * Every decoder's failure is reported as one sentence that starts with the
 * tensor's name ("input 'INPUT0': ..."), so the FUSE layer and `modelfs
 * run` can show it unchanged.
 */
#include "codec.h"
#include "codec_impl.h"
#include "float_text.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const format_ext[MFS_FMT_COUNT] = {
	[MFS_FMT_NPY] = "npy",
	[MFS_FMT_JSON] = "json",
	[MFS_FMT_TXT] = "txt",
	[MFS_FMT_RAW] = "raw",
	[MFS_FMT_PB] = "pb",
};

int mfs_format_from_ext(const char *ext)
{
	if (!ext)
		return -1;
	if (ext[0] == '.')
		ext++;
	for (int f = 0; f < MFS_FMT_COUNT; f++)
		if (strcmp(ext, format_ext[f]) == 0)
			return f;
	return -1;
}

const char *mfs_format_ext(mfs_format f)
{
	if ((int)f < 0 || f >= MFS_FMT_COUNT)
		return NULL;
	return format_ext[f];
}

int mfs_format_split_filename(const char *filename, size_t *name_len)
{
	const char *dot;
	int f;

	if (!filename)
		return -1;
	dot = strrchr(filename, '.');
	/* ".npy" alone is a dot-file, not a tensor without a name. */
	if (!dot || dot == filename)
		return -1;
	f = mfs_format_from_ext(dot + 1);
	if (f < 0)
		return -1;
	if (name_len)
		*name_len = (size_t)(dot - filename);
	return f;
}

static const char *spec_name(const mfs_tensor_spec *spec)
{
	return spec && spec->name ? spec->name : "?";
}

int mfs_tensor_check(const mfs_tensor *t, const mfs_tensor_spec *spec,
		     mfs_error *err)
{
	char want[128], got[128];
	bool ok = true;

	if (!t || !spec)
		return mfs_fail(err, EINVAL, "tensor check without a tensor or spec");
	if (spec->dtype != MFS_DT_UNDEFINED && t->dtype != spec->dtype)
		ok = false;
	if (spec->rank >= 0) {
		if (t->shape.rank != spec->rank)
			ok = false;
		for (int i = 0; ok && i < spec->rank && i < MFS_MAX_RANK; i++)
			if (spec->dims[i] >= 0 && t->shape.dims[i] != spec->dims[i])
				ok = false;
	}
	if (!ok) {
		mfs_codec_format_spec(spec, want, sizeof(want));
		mfs_shape_format(&t->shape, got, sizeof(got));
		return mfs_fail(err, EINVAL, "input '%s': expected %s %s, got %s %s",
				spec_name(spec),
				spec->dtype == MFS_DT_UNDEFINED ? "any type"
							       : mfs_codec_dtype_name(spec->dtype),
				want, mfs_codec_dtype_name(t->dtype), got);
	}
	return 0;
}

/* The .pb codec is codec_pb.c, beside the ONNX reader it uses. */
typedef int (*decode_fn)(const void *, size_t, const mfs_tensor_spec *,
			 mfs_tensor *, mfs_error *);
typedef int (*encode_fn)(const mfs_tensor *, const char *, char **, size_t *,
			 mfs_error *);

static const decode_fn decoders[MFS_FMT_COUNT] = {
	[MFS_FMT_NPY] = mfs_codec_npy_decode,
	[MFS_FMT_JSON] = mfs_codec_json_decode,
	[MFS_FMT_TXT] = mfs_codec_txt_decode,
	[MFS_FMT_RAW] = mfs_codec_raw_decode,
	[MFS_FMT_PB] = mfs_codec_pb_decode,
};

static const encode_fn encoders[MFS_FMT_COUNT] = {
	[MFS_FMT_NPY] = mfs_codec_npy_encode,
	[MFS_FMT_JSON] = mfs_codec_json_encode,
	[MFS_FMT_TXT] = mfs_codec_txt_encode,
	[MFS_FMT_RAW] = mfs_codec_raw_encode,
	[MFS_FMT_PB] = mfs_codec_pb_encode,
};

static int decode(mfs_format fmt, const void *buf, size_t len,
		  const mfs_tensor_spec *spec, mfs_tensor *out, bool view,
		  mfs_error *err)
{
	int rc;

	if (!out)
		return mfs_fail(err, EINVAL, "tensor decode without an output");
	memset(out, 0, sizeof(*out));
	if ((int)fmt < 0 || fmt >= MFS_FMT_COUNT)
		return mfs_fail(err, EINVAL, "input '%s': unknown tensor file format",
				spec_name(spec));
	if (!buf && len)
		return mfs_fail(err, EINVAL, "input '%s': no data", spec_name(spec));
	if (!buf)
		buf = "";
	if (spec && spec->dtype == MFS_DT_STRING)
		rc = mfs_codec_string_decode(fmt, buf, len, spec, out, err);
	else
		rc = (view && fmt == MFS_FMT_NPY ? mfs_codec_npy_view : decoders[fmt])(buf, len, spec, out, err);
	if (rc) {
		mfs_tensor_release(out);
		mfs_error_prefix(err, "input '%s': %s file: ", spec_name(spec),
				 format_ext[fmt]);
		return rc;
	}
	if (spec) {
		rc = mfs_tensor_check(out, spec, err);
		if (rc)
			mfs_tensor_release(out);
	}
	return rc;
}

int mfs_tensor_decode(mfs_format fmt, const void *buf, size_t len,
		      const mfs_tensor_spec *spec, mfs_tensor *out,
		      mfs_error *err)
{
	return decode(fmt, buf, len, spec, out, false, err);
}

int mfs_tensor_decode_view(mfs_format fmt, const void *buf, size_t len,
			   const mfs_tensor_spec *spec, mfs_tensor *out,
			   mfs_error *err)
{
	return decode(fmt, buf, len, spec, out, true, err);
}

int mfs_tensor_encode(mfs_format fmt, const mfs_tensor *t, const char *name,
		      char **buf, size_t *len, mfs_error *err)
{
	const char *shown = name ? name : "?";
	size_t esize;
	int64_t n;
	int rc;

	if (!buf || !len || !t)
		return mfs_fail(err, EINVAL, "tensor encode without a tensor or buffer");
	*buf = NULL;
	*len = 0;
	if ((int)fmt < 0 || fmt >= MFS_FMT_COUNT)
		return mfs_fail(err, EINVAL, "output '%s': unknown tensor file format",
				shown);
	esize = mfs_dtype_size(t->dtype);
	n = mfs_shape_numel(&t->shape);
	if (esize == 0)
		return mfs_fail(err, ENOTSUP, "output '%s': data type %s cannot be written",
				shown, mfs_dtype_onnx_name(t->dtype));
	if (t->layout != MFS_LAYOUT_PLAIN)
		return mfs_fail(err, EINVAL, "output '%s': tensor is not in plain (C order) layout",
				shown);
	if (t->shape.rank < 0 || t->shape.rank > MFS_MAX_RANK || n < 0 ||
	    t->nbytes != (size_t)n * esize || (t->nbytes && !t->data))
		return mfs_fail(err, EINVAL, "output '%s': tensor size does not match its shape",
				shown);
	rc = t->dtype == MFS_DT_STRING ? mfs_codec_string_encode(fmt, t, name, buf, len, err)
				       : encoders[fmt](t, name, buf, len, err);
	if (rc) {
		free(*buf);
		*buf = NULL;
		*len = 0;
		mfs_error_prefix(err, "output '%s': %s file: ", shown, format_ext[fmt]);
	}
	return rc;
}

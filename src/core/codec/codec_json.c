/* codec_json.c - JSON tensors (KServe v2 tensor objects).
 *
 * Read, either
 *   {"name": ..., "shape": [2,3], "datatype": "FP32", "data": [...],
 *    "parameters": {...}}   (name and parameters ignored; shape optional,
 *                            data flat or nested in row-major order)
 * or a bare (nested) array, whose nesting gives the shape.  Values are
 * parsed into the datatype ("datatype" if given, which must then match
 * the model's; else the model's), refusing what does not fit (3.5 into
 * INT64, 300 into UINT8).  BOOL takes true/false or 0/1.
 * JSON has no NaN or infinity: they are written, and read, as the strings
 * "NaN", "Infinity", "-Infinity" (protobuf's JSON mapping); reading also
 * takes "nan", "inf", "-inf" in any case.  Reading streams the values into
 * the typed buffer (json_stream.c: no document tree, so memory is the
 * text plus the tensor); integers are exact up to UINT64's range.
 * Write: {"name","shape","datatype","data"} with flat data, integers
 * exactly, FP32/FP16 with 9 significant digits, FP64 with 17.
 */
#include "codec_impl.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "json_stream.h"

int mfs_codec_json_decode(const void *buf, size_t len,
			  const mfs_tensor_spec *spec, mfs_tensor *out,
			  mfs_error *err)
{
	mfs_jspan doc = mfs_jspan_doc(buf, len);
	mfs_json_tensor parts;
	int rc;

	memset(&parts, 0, sizeof(parts));
	memset(out, 0, sizeof(*out));
	if ((rc = mfs_json_value(&doc, err)))
		return rc;
	if (*doc.p == '{') {
		if ((rc = mfs_json_tensor_split(doc, &parts, err)))
			return rc;
		if (!parts.data.p)
			return mfs_fail(err, EINVAL, "the tensor object has no \"data\"");
	} else if (*doc.p == 'n') {
		return mfs_fail(err, EINVAL, "expected a tensor object or a nested array");
	} else {
		parts.data = doc;
	}
	return mfs_json_tensor_decode(&parts, spec, out, err);
}

int mfs_codec_json_encode(const mfs_tensor *t, const char *name, char **buf,
			  size_t *len, mfs_error *err)
{
	mfs_strbuf b = { 0 };
	const char *dtn = mfs_dtype_kserve_name(t->dtype);
	int64_t n = mfs_shape_numel(&t->shape);

	if (!dtn)
		return mfs_fail(err, ENOTSUP, "data type %s has no KServe name",
				mfs_dtype_onnx_name(t->dtype));
	mfs_strbuf_append(&b, "{", 1);
	if (name) {
		char *quoted = mfs_json_quoted(name);
		if (!quoted) {
			free(b.data);
			return mfs_fail(err, EINVAL, "tensor name is not valid UTF-8");
		}
		MFS_STRBUF_LIT(&b, "\"name\":");
		mfs_strbuf_append(&b, quoted, strlen(quoted));
		mfs_strbuf_append(&b, ",", 1);
		free(quoted);
	}
	MFS_STRBUF_LIT(&b, "\"shape\":[");
	for (int i = 0; i < t->shape.rank; i++) {
		char d[24];
		int dl = snprintf(d, sizeof(d), "%s%lld", i ? "," : "", (long long)t->shape.dims[i]);
		mfs_strbuf_append(&b, d, (size_t)dl);
	}
	MFS_STRBUF_LIT(&b, "],\"datatype\":\"");
	mfs_strbuf_append(&b, dtn, strlen(dtn));
	MFS_STRBUF_LIT(&b, "\",\"data\":[");
	for (int64_t i = 0; i < n; i++) {
		if (i)
			mfs_strbuf_append(&b, ",", 1);
		if (t->dtype == MFS_DT_BOOL)
			mfs_strbuf_printf(&b, "%s", ((const uint8_t *)t->data)[i] ? "true" : "false");
		else
			mfs_strbuf_put_value(&b, t, (size_t)i, 1);
	}
	mfs_strbuf_append(&b, "]}\n", 3);
	return mfs_strbuf_finish(&b, buf, len, err);
}

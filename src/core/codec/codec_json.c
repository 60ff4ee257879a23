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
 * takes "nan", "inf", "-inf" in any case.  jansson holds integers as int64,
 * so UINT64 values above 2^63-1 cannot be read from JSON (use .npy).
 * Write: {"name","shape","datatype","data"} with flat data, integers
 * exactly, FP32/FP16 with 9 significant digits, FP64 with 17.
 */
#include "codec_impl.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The shape of a regular nested array, following first elements. */
static int nested_shape(json_t *v, mfs_shape *s, mfs_error *err)
{
	s->rank = 0;
	while (json_is_array(v)) {
		if (s->rank >= MFS_MAX_RANK)
			return mfs_fail(err, EINVAL, "data is nested deeper than %d levels",
					MFS_MAX_RANK);
		s->dims[s->rank++] = (int64_t)json_array_size(v);
		if (json_array_size(v) == 0)
			break;
		v = json_array_get(v, 0);
	}
	return 0;
}

static int put_value(mfs_tensor *t, size_t i, json_t *v, mfs_error *err)
{
	if (json_is_integer(v))
		return mfs_codec_put_i64(t, i, json_integer_value(v), err);
	if (json_is_real(v))
		return mfs_codec_put_f64(t, i, json_real_value(v), err);
	if (json_is_boolean(v)) {
		if (t->dtype != MFS_DT_BOOL)
			return mfs_fail(err, EINVAL, "value %s at index %zu is not a number",
					json_is_true(v) ? "true" : "false", i);
		return mfs_codec_put_i64(t, i, json_is_true(v), err);
	}
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		if (strcasecmp(s, "nan") == 0)
			return mfs_codec_put_f64(t, i, NAN, err);
		if (strcasecmp(s, "inf") == 0 || strcasecmp(s, "infinity") == 0 ||
		    strcasecmp(s, "+inf") == 0 || strcasecmp(s, "+infinity") == 0)
			return mfs_codec_put_f64(t, i, INFINITY, err);
		if (strcasecmp(s, "-inf") == 0 || strcasecmp(s, "-infinity") == 0)
			return mfs_codec_put_f64(t, i, -INFINITY, err);
		return mfs_fail(err, EINVAL, "string value at index %zu is not a number", i);
	}
	return mfs_fail(err, EINVAL, "value at index %zu is not a number (%s)", i,
			json_is_null(v) ? "null" : json_is_object(v) ? "an object" : "an array");
}

/* Fill t in row-major order from v, checking that v's nesting is regular:
 * each array at level l has s->dims[l] elements and the leaves sit at
 * level s->rank. */
static int fill(mfs_tensor *t, json_t *v, const mfs_shape *s, int level,
		size_t *idx, mfs_error *err)
{
	int rc;

	if (level == s->rank) {
		if (json_is_array(v))
			return mfs_fail(err, EINVAL, "data is not a regular nested array (too deep at index %zu)",
					*idx);
		if (*idx >= t->nbytes / mfs_dtype_size(t->dtype))
			return mfs_fail(err, EINVAL, "data has more values than the shape holds");
		rc = put_value(t, *idx, v, err);
		(*idx)++;
		return rc;
	}
	if (!json_is_array(v) || (int64_t)json_array_size(v) != s->dims[level])
		return mfs_fail(err, EINVAL,
				"data is not a regular nested array (at index %zu, level %d)",
				*idx, level);
	for (size_t k = 0; k < json_array_size(v); k++)
		if ((rc = fill(t, json_array_get(v, k), s, level + 1, idx, err)))
			return rc;
	return 0;
}

static int parse_shape(json_t *j, mfs_shape *s, mfs_error *err)
{
	if (!json_is_array(j))
		return mfs_fail(err, EINVAL, "\"shape\" is not an array");
	if (json_array_size(j) > MFS_MAX_RANK)
		return mfs_fail(err, EINVAL, "\"shape\" has more than %d dims", MFS_MAX_RANK);
	s->rank = (int)json_array_size(j);
	for (int i = 0; i < s->rank; i++) {
		json_t *d = json_array_get(j, (size_t)i);
		if (!json_is_integer(d) || json_integer_value(d) < 0)
			return mfs_fail(err, EINVAL,
					"\"shape\" must hold non-negative integers");
		s->dims[i] = json_integer_value(d);
	}
	return 0;
}

static int decode_tree(json_t *root, const mfs_tensor_spec *spec,
		       mfs_tensor *out, mfs_error *err)
{
	json_t *data = root, *jshape = NULL, *jtype = NULL;
	mfs_shape shape, nest;
	mfs_dtype dt = MFS_DT_UNDEFINED;
	int64_t n_nest, n_shape;
	size_t idx = 0;
	int rc;

	if (json_is_object(root)) {
		const char *key;
		json_t *val;
		data = NULL;
		json_object_foreach(root, key, val) {
			if (strcmp(key, "data") == 0)
				data = val;
			else if (strcmp(key, "shape") == 0)
				jshape = val;
			else if (strcmp(key, "datatype") == 0)
				jtype = val;
			else if (strcmp(key, "name") != 0 && strcmp(key, "parameters") != 0)
				return mfs_fail(err, EINVAL,
						"unknown key \"%.64s\" (a tensor has name, shape, datatype, data, parameters)",
						key);
		}
		if (!data)
			return mfs_fail(err, EINVAL, "the tensor object has no \"data\"");
	} else if (!json_is_array(root) && !json_is_number(root) &&
		   !json_is_boolean(root) && !json_is_string(root)) {
		return mfs_fail(err, EINVAL, "expected a tensor object or a nested array");
	}
	if (jtype) {
		if (!json_is_string(jtype))
			return mfs_fail(err, EINVAL, "\"datatype\" is not a string");
		dt = mfs_dtype_from_kserve(json_string_value(jtype));
		if (dt == MFS_DT_UNDEFINED)
			return mfs_fail(err, EINVAL, "unknown datatype \"%.32s\"",
					json_string_value(jtype));
		if (mfs_dtype_size(dt) == 0)
			return mfs_fail(err, ENOTSUP, "datatype %s is not supported",
					json_string_value(jtype));
	} else if ((rc = mfs_codec_text_dtype(spec, &dt, err))) {
		return rc;
	}
	if ((rc = nested_shape(data, &nest, err)))
		return rc;
	shape = nest;
	if (jshape) {
		if ((rc = parse_shape(jshape, &shape, err)))
			return rc;
		n_nest = mfs_shape_numel(&nest);
		n_shape = mfs_codec_numel(shape.dims, shape.rank, -1);
		if (n_shape < 0)
			return mfs_fail(err, EINVAL, "\"shape\" is too large");
		if (n_nest != n_shape) {
			char a[128], b[128];
			return mfs_fail(err, EINVAL,
					"\"shape\" %s holds %lld values, but \"data\" %s has %lld",
					mfs_shape_format(&shape, a, sizeof(a)), (long long)n_shape,
					mfs_shape_format(&nest, b, sizeof(b)), (long long)n_nest);
		}
	}
	/* The element count is bounded by the JSON text, so this cannot be a
	 * huge allocation. */
	if ((rc = mfs_tensor_alloc(out, dt, &shape, err)))
		return rc;
	if ((rc = fill(out, data, &nest, 0, &idx, err))) {
		mfs_tensor_release(out);
		return rc;
	}
	return 0;
}

int mfs_codec_json_decode(const void *buf, size_t len,
			  const mfs_tensor_spec *spec, mfs_tensor *out,
			  mfs_error *err)
{
	json_error_t jerr;
	json_t *root;
	int rc;

	root = json_loadb(buf, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return mfs_fail(err, EINVAL, "invalid JSON at line %d column %d: %s",
				jerr.line, jerr.column, jerr.text);
	rc = decode_tree(root, spec, out, err);
	json_decref(root);
	return rc;
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
		json_t *js = json_string(name);
		char *quoted = js ? json_dumps(js, JSON_ENCODE_ANY) : NULL;
		json_decref(js);
		if (!quoted) {
			free(b.data);
			return mfs_fail(err, EINVAL, "tensor name is not valid UTF-8");
		}
		mfs_strbuf_printf(&b, "\"name\":%s,", quoted);
		free(quoted);
	}
	mfs_strbuf_append(&b, "\"shape\":[", 9);
	for (int i = 0; i < t->shape.rank; i++)
		mfs_strbuf_printf(&b, "%s%lld", i ? "," : "", (long long)t->shape.dims[i]);
	mfs_strbuf_printf(&b, "],\"datatype\":\"%s\",\"data\":[", dtn);
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

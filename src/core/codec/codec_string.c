/* codec_string.c - string tensors (dtype STRING, KServe BYTES) in the
 * text, JSON and raw formats (SPEC.md section 6; .npy is codec_npy.c's,
 * .pb the ONNX reader's).
 *
 * .txt: one element per line; the newline that ends a line is not part
 * of it, so `echo "some text" > X.txt` is one element, "some text".  A
 * backslash starts an escape: \\ (a backslash), \n (newline), \r, \t,
 * \xHH (any byte); any other is an error.  Written the same way, every
 * element followed by a newline.
 * .raw: Triton's BYTES layout: per element a 4-byte little-endian length,
 * then that many bytes.
 * .json: a KServe v2 tensor object with "datatype": "BYTES" and "data"
 * of JSON strings (flat or nested), or a bare (nested) array of strings.
 * Written as {"name","shape","datatype":"BYTES","data":[...]}; an element
 * that is not UTF-8 cannot be JSON text and fails (use .raw).
 * The shape of .txt and .raw comes from the model (one variable dim
 * inferred from the count).
 */
#include "codec_impl.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* ---- .txt ---- */

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
	     : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Unescape line s[0..n) into out (n bytes of room); -1 + *bad at a bad
 * escape. */
static ssize_t txt_unescape(const char *s, size_t n, char *out, size_t *bad)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] != '\\') {
			out[k++] = s[i];
			continue;
		}
		if (i + 1 >= n) {
			*bad = i;
			return -1;
		}
		switch (s[++i]) {
		case '\\': out[k++] = '\\'; break;
		case 'n': out[k++] = '\n'; break;
		case 'r': out[k++] = '\r'; break;
		case 't': out[k++] = '\t'; break;
		case 'x':
			if (i + 2 >= n + 0 || hexval(s[i + 1]) < 0 || hexval(s[i + 2]) < 0) {
				*bad = i - 1;
				return -1;
			}
			out[k++] = (char)(hexval(s[i + 1]) << 4 | hexval(s[i + 2]));
			i += 2;
			break;
		default:
			*bad = i - 1;
			return -1;
		}
	}
	return (ssize_t)k;
}

static int txt_decode(const char *s, size_t len, const mfs_tensor_spec *spec,
		      mfs_tensor *out, mfs_error *err)
{
	int64_t count = 0, k = 0;
	mfs_shape shape;
	char *tmp = NULL;
	int rc;

	for (size_t i = 0; i < len; i++)
		count += s[i] == '\n';
	if (len && s[len - 1] != '\n')
		count++;   /* a last line without its newline */
	if ((rc = mfs_codec_infer_shape(spec, count, &shape, err)) ||
	    (rc = mfs_tensor_alloc(out, MFS_DT_STRING, &shape, err)))
		return rc;
	for (size_t i = 0; i < len && k < count; k++) {
		const char *nl = memchr(s + i, '\n', len - i);
		size_t n = nl ? (size_t)(nl - (s + i)) : len - i, bad = 0;
		ssize_t got;
		char *t = realloc(tmp, n + 1);
		if (!t) {
			rc = mfs_fail(err, ENOMEM, "out of memory");
			break;
		}
		tmp = t;
		if ((got = txt_unescape(s + i, n, tmp, &bad)) < 0) {
			rc = mfs_fail(err, EINVAL, "line %lld: '\\%c' is not an escape (\\\\, \\n, \\r, \\t, \\xHH)",
				      (long long)k + 1, bad + 1 < n ? s[i + bad + 1] : ' ');
			break;
		}
		if ((rc = mfs_string_set(out, k, tmp, (size_t)got, err)))
			break;
		i += n + 1;
	}
	free(tmp);
	if (rc)
		mfs_tensor_release(out);
	return rc;
}

static int txt_encode(const mfs_tensor *t, char **buf, size_t *len, mfs_error *err)
{
	mfs_strbuf b = { 0 };
	int64_t n = mfs_shape_numel(&t->shape);

	for (int64_t i = 0; i < n; i++) {
		const mfs_string *s = mfs_string_at(t, i);
		for (size_t j = 0; j < s->len; j++) {
			char c = s->ptr[j];
			if (c == '\\')
				MFS_STRBUF_LIT(&b, "\\\\");
			else if (c == '\n')
				MFS_STRBUF_LIT(&b, "\\n");
			else if (c == '\r')
				MFS_STRBUF_LIT(&b, "\\r");
			else
				mfs_strbuf_append(&b, &c, 1);
		}
		mfs_strbuf_append(&b, "\n", 1);
	}
	return mfs_strbuf_finish(&b, buf, len, err);
}

/* ---- .raw ---- */

static int raw_decode(const unsigned char *b, size_t len, const mfs_tensor_spec *spec,
		      mfs_tensor *out, mfs_error *err)
{
	int64_t count = 0;
	mfs_shape shape;
	size_t i;
	int rc;

	for (i = 0; i < len; count++) {
		uint32_t l;
		if (len - i < 4)
			return mfs_fail(err, EINVAL, "element %lld: a length needs 4 bytes, %zu left",
					(long long)count, len - i);
		l = (uint32_t)b[i] | (uint32_t)b[i + 1] << 8 | (uint32_t)b[i + 2] << 16 |
		    (uint32_t)b[i + 3] << 24;
		if (l > len - i - 4)
			return mfs_fail(err, EINVAL, "element %lld: length %u passes the end of the file",
					(long long)count, l);
		i += 4 + (size_t)l;
	}
	if ((rc = mfs_codec_infer_shape(spec, count, &shape, err)) ||
	    (rc = mfs_tensor_alloc(out, MFS_DT_STRING, &shape, err)))
		return rc;
	for (int64_t k = 0, at = 0; k < count; k++) {
		size_t l = (size_t)b[at] | (size_t)b[at + 1] << 8 | (size_t)b[at + 2] << 16 |
			   (size_t)b[at + 3] << 24;
		if ((rc = mfs_string_set(out, k, b + at + 4, l, err))) {
			mfs_tensor_release(out);
			return rc;
		}
		at += 4 + (int64_t)l;
	}
	return 0;
}

static int raw_encode(const mfs_tensor *t, char **buf, size_t *len, mfs_error *err)
{
	mfs_strbuf b = { 0 };
	int64_t n = mfs_shape_numel(&t->shape);

	for (int64_t i = 0; i < n; i++) {
		const mfs_string *s = mfs_string_at(t, i);
		unsigned char l[4];
		if (s->len > UINT32_MAX)
			return mfs_fail(err, EINVAL, "element %lld is longer than 4 GiB", (long long)i);
		for (int k = 0; k < 4; k++)
			l[k] = (unsigned char)(s->len >> (8 * k));
		mfs_strbuf_append(&b, (const char *)l, 4);
		mfs_strbuf_append(&b, s->ptr ? s->ptr : "", s->len);
	}
	return mfs_strbuf_finish(&b, buf, len, err);
}

/* ---- .json ---- */

/* Walk a nested array: the shape at depth d (learned from the first
 * array met there), and the strings in order into out (NULL: count). */
static int json_walk(json_t *v, int d, mfs_shape *sh, mfs_tensor *out, int64_t *k,
		     mfs_error *err)
{
	int rc;

	if (json_is_string(v)) {
		if (sh->rank < 0)
			sh->rank = d;
		else if (sh->rank != d)
			return mfs_fail(err, EINVAL, "the arrays are nested unevenly");
		if (out && (rc = mfs_string_set(out, *k, json_string_value(v),
						json_string_length(v), err)))
			return rc;
		(*k)++;
		return 0;
	}
	if (!json_is_array(v))
		return mfs_fail(err, EINVAL, "element %lld is not a string (BYTES data are JSON strings)",
				(long long)*k);
	if (d >= MFS_MAX_RANK)
		return mfs_fail(err, EINVAL, "arrays nested deeper than %d", MFS_MAX_RANK);
	if (sh->dims[d] < 0)
		sh->dims[d] = (int64_t)json_array_size(v);
	else if (sh->dims[d] != (int64_t)json_array_size(v))
		return mfs_fail(err, EINVAL, "the arrays at depth %d differ in length", d + 1);
	if (json_array_size(v) == 0 && sh->rank < 0)
		sh->rank = d + 1;
	for (size_t i = 0; i < json_array_size(v); i++)
		if ((rc = json_walk(json_array_get(v, i), d + 1, sh, out, k, err)))
			return rc;
	return 0;
}

static int json_shape(json_t *shp, mfs_shape *s, mfs_error *err)
{
	if (!json_is_array(shp) || json_array_size(shp) > MFS_MAX_RANK)
		return mfs_fail(err, EINVAL, "\"shape\" is not an array of at most %d dims", MFS_MAX_RANK);
	s->rank = (int)json_array_size(shp);
	for (int i = 0; i < s->rank; i++) {
		json_t *d = json_array_get(shp, (size_t)i);
		if (!json_is_integer(d) || json_integer_value(d) < 0)
			return mfs_fail(err, EINVAL, "\"shape\" dim %d is not a count", i);
		s->dims[i] = json_integer_value(d);
	}
	return 0;
}

static int json_decode(const char *s, size_t len, const mfs_tensor_spec *spec,
		       mfs_tensor *out, mfs_error *err)
{
	json_error_t je;
	json_t *doc = json_loadb(s, len, JSON_ALLOW_NUL, &je), *data = doc, *dt, *shp;
	mfs_shape sh = { .rank = -1 }, given;
	int64_t k = 0;
	int rc;

	if (!doc)
		return mfs_fail(err, EINVAL, "invalid JSON at line %d: %s", je.line, je.text);
	for (int i = 0; i < MFS_MAX_RANK; i++)
		sh.dims[i] = -1;
	if (json_is_object(doc)) {
		data = json_object_get(doc, "data");
		dt = json_object_get(doc, "datatype");
		if (dt && (!json_is_string(dt) || strcmp(json_string_value(dt), "BYTES"))) {
			rc = mfs_fail(err, EINVAL, "\"datatype\" is %s, the model expects BYTES",
				      json_is_string(dt) ? json_string_value(dt) : "not a string");
			goto out;
		}
		if (!data) {
			rc = mfs_fail(err, EINVAL, "the object has no \"data\"");
			goto out;
		}
	}
	if ((rc = json_walk(data, 0, &sh, NULL, &k, err)))
		goto out;
	if (sh.rank < 0)
		sh.rank = 0;
	if (json_is_object(doc) && (shp = json_object_get(doc, "shape"))) {
		if ((rc = json_shape(shp, &given, err)))
			goto out;
		if (mfs_shape_numel(&given) != k) {
			rc = mfs_fail(err, EINVAL, "\"shape\" holds %lld elements, \"data\" %lld",
				      (long long)mfs_shape_numel(&given), (long long)k);
			goto out;
		}
		sh = given;
	} else if (sh.rank <= 1 && spec && spec->rank != 1) {
		rc = mfs_codec_infer_shape(spec, k, &sh, err);   /* flat data: the model's shape */
		if (rc)
			goto out;
	}
	if ((rc = mfs_tensor_alloc(out, MFS_DT_STRING, &sh, err)))
		goto out;
	k = 0;
	if ((rc = json_walk(data, 0, &(mfs_shape){ .rank = -1, .dims = { -1, -1, -1, -1, -1, -1, -1, -1 } },
			    out, &k, err)))
		mfs_tensor_release(out);
out:
	json_decref(doc);
	return rc;
}

static int json_encode(const mfs_tensor *t, const char *name, char **buf, size_t *len,
		       mfs_error *err)
{
	json_t *doc = json_object(), *shape = json_array(), *data = json_array();
	int64_t n = mfs_shape_numel(&t->shape);
	int rc = 0;

	if (!doc || !shape || !data) {
		rc = mfs_fail(err, ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < t->shape.rank; i++)
		json_array_append_new(shape, json_integer(t->shape.dims[i]));
	for (int64_t i = 0; i < n; i++) {
		const mfs_string *s = mfs_string_at(t, i);
		json_t *js = json_stringn(s->ptr ? s->ptr : "", s->len);
		if (!js) {
			rc = mfs_fail(err, EINVAL, "element %lld is not UTF-8 text; read it as .raw or .npy",
				      (long long)i);
			goto out;
		}
		json_array_append_new(data, js);
	}
	json_object_set_new(doc, "name", json_string(name ? name : ""));
	json_object_set(doc, "shape", shape);
	json_object_set_new(doc, "datatype", json_string("BYTES"));
	json_object_set(doc, "data", data);
	*buf = json_dumps(doc, JSON_COMPACT);
	if (!*buf)
		rc = mfs_fail(err, ENOMEM, "out of memory");
	else
		*len = strlen(*buf);
out:
	json_decref(shape);
	json_decref(data);
	json_decref(doc);
	return rc;
}

int mfs_codec_string_decode(mfs_format fmt, const void *buf, size_t len,
			    const mfs_tensor_spec *spec, mfs_tensor *out, mfs_error *err)
{
	switch (fmt) {
	case MFS_FMT_TXT: return txt_decode(buf, len, spec, out, err);
	case MFS_FMT_RAW: return raw_decode(buf, len, spec, out, err);
	case MFS_FMT_JSON: return json_decode(buf, len, spec, out, err);
	case MFS_FMT_NPY: return mfs_codec_npy_decode(buf, len, spec, out, err);
	default: return mfs_codec_pb_decode(buf, len, spec, out, err);
	}
}

int mfs_codec_string_encode(mfs_format fmt, const mfs_tensor *t, const char *name,
			    char **buf, size_t *len, mfs_error *err)
{
	switch (fmt) {
	case MFS_FMT_TXT: return txt_encode(t, buf, len, err);
	case MFS_FMT_RAW: return raw_encode(t, buf, len, err);
	case MFS_FMT_JSON: return json_encode(t, name, buf, len, err);
	case MFS_FMT_NPY: return mfs_codec_npy_encode(t, name, buf, len, err);
	default: return mfs_codec_pb_encode(t, name, buf, len, err);
	}
}

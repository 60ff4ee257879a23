/* codec_npy.c - NumPy .npy files (format versions 1.0, 2.0, 3.0).
 *
 * Read: little-endian (or byte-order-free) plain dtypes in C order, and
 * numpy's fixed-width strings: 'U' (UTF-32, either byte order, into
 * UTF-8) and 'S' (bytes), each element's trailing NULs trimmed as numpy
 * does.  The header is a Python dict literal; this parses exactly the
 * subset NumPy writes ({'descr': '<f4', 'fortran_order': False, 'shape':
 * (3, 4), }) and refuses the rest by name: Fortran order, big-endian
 * numbers, object (pickles), structured and complex dtypes.  The data
 * must be exactly numel * itemsize bytes.
 * Write: version 1.0, byte for byte what numpy.save() writes (same key
 * order, growth padding and 64-byte alignment), so files round-trip.  A
 * string tensor is written '<U<width>' when every element is UTF-8
 * without a NUL, else '|S<width>' (width: the longest element, at least
 * 1).
 */
#include "codec_impl.h"
#include "bigbuf.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char npy_magic[6] = { '\x93', 'N', 'U', 'M', 'P', 'Y' };

/* Matches numpy.lib.format: ARRAY_ALIGN and GROWTH_AXIS_MAX_DIGITS. */
#define NPY_ALIGN 64
#define NPY_GROWTH_DIGITS 21

static const struct npy_type {
	const char *descr;      /* as NumPy writes it */
	mfs_dtype dt;
} npy_types[] = {
	{ "<f4", MFS_DT_FLOAT },   { "<f8", MFS_DT_DOUBLE },
	{ "<f2", MFS_DT_FLOAT16 }, { "|b1", MFS_DT_BOOL },
	{ "|u1", MFS_DT_UINT8 },   { "|i1", MFS_DT_INT8 },
	{ "<i2", MFS_DT_INT16 },   { "<u2", MFS_DT_UINT16 },
	{ "<i4", MFS_DT_INT32 },   { "<u4", MFS_DT_UINT32 },
	{ "<i8", MFS_DT_INT64 },   { "<u8", MFS_DT_UINT64 },
};
#define N_NPY_TYPES (sizeof(npy_types) / sizeof(npy_types[0]))

/* What a descr says: a dtype, and for strings how they are stored. */
typedef struct npy_desc {
	mfs_dtype dt;
	char kind;          /* 'U' or 'S' for strings, else 0 */
	bool big;           /* 'U' stored big-endian */
	size_t itemsize;    /* bytes per element in the file */
} npy_desc;

/* Longest string element read or written, in characters: a bound that
 * keeps numel * itemsize far from overflowing. */
#define NPY_MAX_WIDTH ((size_t)1 << 28)

static int descr_to_dtype(const char *d, mfs_dtype *out, mfs_error *err)
{
	char kind;

	for (size_t i = 0; i < N_NPY_TYPES; i++) {
		const char *w = npy_types[i].descr;
		/* One-byte types carry no byte order: '|', '<' and '=' all mean
		 * the same there. */
		if (strcmp(d, w) == 0 ||
		    (w[0] == '|' && (d[0] == '<' || d[0] == '=' || d[0] == '>') &&
		     strcmp(d + 1, w + 1) == 0)) {
			*out = npy_types[i].dt;
			return 0;
		}
	}
	kind = d[0] == '<' || d[0] == '>' || d[0] == '|' || d[0] == '=' ? d[1] : d[0];
	if (d[0] == '>')
		return mfs_fail(err, EINVAL,
				"big-endian data ('%s') is not supported; save it little-endian (e.g. a.astype('<%s'))",
				d, d + 1);
	if (kind == 'O')
		return mfs_fail(err, EINVAL,
				"object arrays ('%s', pickled Python objects) are not supported; "
				"save strings with a fixed width: a.astype(str) or a.astype(bytes)", d);
	if (kind == 'c')
		return mfs_fail(err, EINVAL, "complex arrays ('%s') are not supported", d);
	return mfs_fail(err, EINVAL, "dtype '%s' is not supported", d);
}

/* A string descr ('<U5', '>U5', '|S3', 'a3'): 1 and *out filled; 0 when d
 * is no string descr; -EINVAL when its width is too large. */
static int descr_string(const char *d, npy_desc *out, mfs_error *err)
{
	const char *k = strchr("<>|=", d[0]) && d[0] ? d + 1 : d;
	size_t w = 0;

	if (k[0] != 'U' && k[0] != 'S' && k[0] != 'a')
		return 0;
	for (const char *p = k + 1; *p; p++) {
		if (*p < '0' || *p > '9')
			return 0;
		w = w * 10 + (size_t)(*p - '0');
		if (w > NPY_MAX_WIDTH)
			return mfs_fail(err, EINVAL, "string width of '%s' is too large", d);
	}
	out->dt = MFS_DT_STRING;
	out->kind = k[0] == 'U' ? 'U' : 'S';
	out->big = k[0] == 'U' && d[0] == '>';
	out->itemsize = k[0] == 'U' ? 4 * w : w;
	return 1;
}

static int descr_parse(const char *d, npy_desc *out, mfs_error *err)
{
	int rc = descr_string(d, out, err);

	if (rc)
		return rc < 0 ? rc : 0;
	*out = (npy_desc){ 0 };
	if ((rc = descr_to_dtype(d, &out->dt, err)))
		return rc;
	out->itemsize = mfs_dtype_size(out->dt);
	return 0;
}

static const char *dtype_to_descr(mfs_dtype dt)
{
	for (size_t i = 0; i < N_NPY_TYPES; i++)
		if (npy_types[i].dt == dt)
			return npy_types[i].descr;
	return NULL;
}

/* A cursor over the header text. */
struct hp {
	const char *p, *end;
	mfs_error *err;
};

static void skip_ws(struct hp *h)
{
	while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' ||
				 *h->p == '\r'))
		h->p++;
}

static int expect(struct hp *h, char c)
{
	skip_ws(h);
	if (h->p >= h->end || *h->p != c)
		return mfs_fail(h->err, EINVAL, "malformed header: expected '%c'", c);
	h->p++;
	return 0;
}

/* A quoted Python string (no escapes: NumPy never writes any here). */
static int parse_str(struct hp *h, char *out, size_t size)
{
	char q;
	size_t n = 0;

	skip_ws(h);
	if (h->p >= h->end || (*h->p != '\'' && *h->p != '"')) {
		if (h->p < h->end && *h->p == '[')
			return mfs_fail(h->err, EINVAL, "structured dtypes are not supported");
		return mfs_fail(h->err, EINVAL, "malformed header: expected a string");
	}
	q = *h->p++;
	while (h->p < h->end && *h->p != q) {
		if (*h->p == '\\' || n + 1 >= size)
			return mfs_fail(h->err, EINVAL, "malformed header: bad string");
		out[n++] = *h->p++;
	}
	if (h->p >= h->end)
		return mfs_fail(h->err, EINVAL, "malformed header: unterminated string");
	h->p++;
	out[n] = '\0';
	return 0;
}

static int parse_bool(struct hp *h, bool *out)
{
	skip_ws(h);
	if (h->end - h->p >= 4 && memcmp(h->p, "True", 4) == 0) {
		h->p += 4;
		*out = true;
		return 0;
	}
	if (h->end - h->p >= 5 && memcmp(h->p, "False", 5) == 0) {
		h->p += 5;
		*out = false;
		return 0;
	}
	return mfs_fail(h->err, EINVAL, "malformed header: expected True or False");
}

static int parse_shape(struct hp *h, mfs_shape *s)
{
	int rc = expect(h, '(');

	if (rc)
		return rc;
	s->rank = 0;
	for (;;) {
		int64_t v = 0;
		int digits = 0;

		skip_ws(h);
		if (h->p < h->end && *h->p == ')') {
			h->p++;
			return 0;
		}
		while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
			int digit = *h->p++ - '0';
			if (v > (INT64_MAX - digit) / 10)
				return mfs_fail(h->err, EINVAL, "shape dim is too large");
			v = v * 10 + digit;
			digits++;
		}
		if (!digits)
			return mfs_fail(h->err, EINVAL, "malformed header: bad shape");
		if (h->p < h->end && *h->p == 'L') /* Python 2 long */
			h->p++;
		if (s->rank >= MFS_MAX_RANK)
			return mfs_fail(h->err, EINVAL, "rank is more than %d", MFS_MAX_RANK);
		s->dims[s->rank++] = v;
		skip_ws(h);
		if (h->p < h->end && *h->p == ',') {
			h->p++;
			continue;
		}
		if (h->p < h->end && *h->p == ')') {
			h->p++;
			/* (3) is an int in Python, not a tuple. */
			if (s->rank == 1)
				return mfs_fail(h->err, EINVAL, "malformed header: shape is not a tuple");
			return 0;
		}
		return mfs_fail(h->err, EINVAL, "malformed header: bad shape");
	}
}

static int parse_header(const char *text, size_t n, npy_desc *dt,
			mfs_shape *shape, mfs_error *err)
{
	struct hp h = { text, text + n, err };
	bool have_descr = false, have_order = false, have_shape = false;
	bool fortran = false;
	char key[32], descr[32];
	int rc;

	if ((rc = expect(&h, '{')))
		return rc;
	for (;;) {
		skip_ws(&h);
		if (h.p < h.end && *h.p == '}') {
			h.p++;
			break;
		}
		if ((rc = parse_str(&h, key, sizeof(key))) || (rc = expect(&h, ':')))
			return rc;
		if (strcmp(key, "descr") == 0 && !have_descr) {
			rc = parse_str(&h, descr, sizeof(descr));
			have_descr = true;
		} else if (strcmp(key, "fortran_order") == 0 && !have_order) {
			rc = parse_bool(&h, &fortran);
			have_order = true;
		} else if (strcmp(key, "shape") == 0 && !have_shape) {
			rc = parse_shape(&h, shape);
			have_shape = true;
		} else {
			return mfs_fail(err, EINVAL, "unexpected header key '%s'", key);
		}
		if (rc)
			return rc;
		skip_ws(&h);
		if (h.p < h.end && *h.p == ',') {
			h.p++;
			continue;
		}
		if ((rc = expect(&h, '}')))
			return rc;
		break;
	}
	skip_ws(&h);
	if (h.p != h.end)
		return mfs_fail(err, EINVAL, "malformed header: text after the dict");
	if (!have_descr || !have_order || !have_shape)
		return mfs_fail(err, EINVAL, "header lacks '%s'",
				!have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
	if ((rc = descr_parse(descr, dt, err)))
		return rc;
	/* A Fortran-order array of rank <= 1 has the same bytes as C order. */
	if (fortran && shape->rank > 1)
		return mfs_fail(err, EINVAL,
				"Fortran-order arrays are not supported; save with np.ascontiguousarray()");
	return 0;
}

/* The header of the .npy file in buf: dtype, shape, where the data
 * starts and how long it is (npy_parse also checks that buf holds that
 * much). */
static int npy_header(const unsigned char *b, size_t len, npy_desc *dt,
		     mfs_shape *shape, size_t *data_at, size_t *data_len, mfs_error *err)
{
	size_t hlen, start, esize, want;
	int64_t n;
	int rc;

	if (len < 10 || memcmp(b, npy_magic, 6) != 0)
		return mfs_fail(err, EINVAL, "not a .npy file (no \\x93NUMPY magic)");
	if (b[6] == 1 && b[7] == 0) {
		hlen = (size_t)b[8] | (size_t)b[9] << 8;
		start = 10;
	} else if ((b[6] == 2 || b[6] == 3) && b[7] == 0) {
		if (len < 12)
			return mfs_fail(err, EINVAL, "truncated header");
		hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 |
		       (size_t)b[11] << 24;
		start = 12;
	} else {
		return mfs_fail(err, EINVAL, "unsupported .npy version %u.%u", b[6], b[7]);
	}
	if (hlen > len - start)
		return mfs_fail(err, EINVAL, "truncated header (%zu bytes announced, %zu present)",
				hlen, len - start);
	/* Versions 1 and 2 are latin-1 and 3 is UTF-8; the parts that matter
	 * are ASCII in all three, so non-ASCII bytes simply fail to parse. */
	rc = parse_header((const char *)b + start, hlen, dt, shape, err);
	if (rc)
		return rc;
	esize = dt->itemsize;
	n = mfs_codec_numel(shape->dims, shape->rank, -1);
	if (n < 0 || (esize && (uint64_t)n > SIZE_MAX / esize))
		return mfs_fail(err, EINVAL, "shape is too large");
	want = (size_t)n * esize;
	*data_at = start + hlen;
	*data_len = want;
	return 0;
}

static int npy_parse(const unsigned char *b, size_t len, npy_desc *dt,
		     mfs_shape *shape, size_t *data_at, size_t *data_len, mfs_error *err)
{
	int rc = npy_header(b, len, dt, shape, data_at, data_len, err);
	if (rc == 0 && len - *data_at != *data_len)
		return mfs_fail(err, EINVAL, "has %zu bytes of data, but %s shape needs %zu",
				len - *data_at, mfs_dtype_onnx_name(dt->dt), *data_len);
	return rc;
}

size_t mfs_npy_file_size(const void *buf, size_t len)
{
	npy_desc dt;
	mfs_shape shape = { 0 };
	size_t at, want;
	mfs_error err;
	if (npy_header(buf, len, &dt, &shape, &at, &want, &err) < 0 || want > SIZE_MAX - at)
		return 0;
	return at + want;
}

/* Code point k of a 'U' element at e. */
static uint32_t u32_at(const unsigned char *e, size_t k, bool big)
{
	e += 4 * k;
	return big ? (uint32_t)e[0] << 24 | (uint32_t)e[1] << 16 | (uint32_t)e[2] << 8 | e[3]
		   : (uint32_t)e[3] << 24 | (uint32_t)e[2] << 16 | (uint32_t)e[1] << 8 | e[0];
}

/* One 'U' element of chars code points (trailing NULs gone) into element
 * i of out, as UTF-8. */
static int npy_u_element(const unsigned char *e, size_t chars, bool big, mfs_tensor *out,
			 int64_t i, mfs_error *err)
{
	size_t bytes = 0;
	char *p, tmp[4];

	for (size_t k = 0; k < chars; k++) {
		uint32_t cp = u32_at(e, k, big);
		if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return mfs_fail(err, EINVAL, "element %lld: 0x%x is not a Unicode code point",
					(long long)i, cp);
		bytes += mfs_utf8_encode(cp, tmp);
	}
	if (!(p = mfs_string_alloc(out, i, bytes, err)))
		return -ENOMEM;
	for (size_t k = 0; k < chars; k++)
		p += mfs_utf8_encode(u32_at(e, k, big), p);
	return 0;
}

/* The elements of a 'U' or 'S' array at p into a new STRING tensor. */
static int npy_strings_decode(const unsigned char *p, const npy_desc *d, const mfs_shape *shape,
			      mfs_tensor *out, mfs_error *err)
{
	int64_t n = mfs_shape_numel(shape);
	int rc = mfs_tensor_alloc(out, MFS_DT_STRING, shape, err);

	for (int64_t i = 0; !rc && i < n; i++) {
		const unsigned char *e = p + (size_t)i * d->itemsize;
		size_t w = d->kind == 'U' ? d->itemsize / 4 : d->itemsize;
		if (d->kind == 'U') {
			while (w && u32_at(e, w - 1, d->big) == 0)
				w--;
			rc = npy_u_element(e, w, d->big, out, i, err);
		} else {
			while (w && e[w - 1] == 0)
				w--;
			rc = mfs_string_set(out, i, e, w, err);
		}
	}
	if (rc)
		mfs_tensor_release(out);
	return rc;
}

/* The tensor of a .npy file: a copy, or with view a pointer into buf
 * when the data can be used as it is (not BOOL, aligned). */
static int npy_tensor(const void *buf, size_t len, mfs_tensor *out, bool view,
		      mfs_error *err)
{
	const unsigned char *b = buf;
	size_t at = 0, want = 0;
	npy_desc desc = { 0 };
	mfs_dtype dt;
	mfs_shape shape = { 0 };

	int rc = npy_parse(b, len, &desc, &shape, &at, &want, err);
	if (rc)
		return rc;
	dt = desc.dt;
	if (desc.kind)
		return npy_strings_decode(b + at, &desc, &shape, out, err);
	if (view && dt != MFS_DT_BOOL && want && (uintptr_t)(b + at) % mfs_dtype_size(dt) == 0) {
		*out = (mfs_tensor){ .dtype = dt, .shape = shape, .layout = MFS_LAYOUT_PLAIN,
				     .data = (void *)(b + at), .nbytes = want, .owns_data = false };
		return 0;
	}
	rc = mfs_tensor_alloc(out, dt, &shape, err);
	if (rc)
		return rc;
	if (want)
		memcpy(out->data, b + at, want);
	/* NumPy reads any nonzero byte as True; the engine wants 0 and 1. */
	if (dt == MFS_DT_BOOL) {
		unsigned char *d = out->data;
		for (size_t i = 0; i < want; i++)
			d[i] = d[i] != 0;
	}
	return 0;
}

int mfs_codec_npy_decode(const void *buf, size_t len,
			 const mfs_tensor_spec *spec, mfs_tensor *out,
			 mfs_error *err)
{
	(void)spec;
	return npy_tensor(buf, len, out, false, err);
}

int mfs_codec_npy_view(const void *buf, size_t len,
		       const mfs_tensor_spec *spec, mfs_tensor *out,
		       mfs_error *err)
{
	(void)spec;
	return npy_tensor(buf, len, out, true, err);
}

/* A .npy file of descr and shape with data bytes of room after the
 * header, which the caller fills: *buf and *len are the whole file,
 * the data at *buf + *len - data.  -EINVAL/-ENOMEM. */
static int npy_start(const char *descr, const mfs_shape *shape, size_t data, char **buf,
		     size_t *len, mfs_error *err)
{
	char header[512], dims[256];
	size_t n = 0, hlen, body, pad, total;
	int k;
	char *p;

	/* Python's repr of a tuple: (), (16,), (3, 4). */
	dims[0] = '\0';
	for (int i = 0; i < shape->rank; i++)
		n += (size_t)snprintf(dims + n, sizeof(dims) - n, "%s%" PRId64,
				      i ? ", " : "", shape->dims[i]);
	if (shape->rank == 1)
		snprintf(dims + n, sizeof(dims) - n, ",");
	k = snprintf(header, sizeof(header),
		     "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
		     descr, dims);
	hlen = (size_t)k;
	if (shape->rank > 0) {
		char d0[24];
		int w = snprintf(d0, sizeof(d0), "%" PRId64, shape->dims[0]);
		if (w < NPY_GROWTH_DIGITS) {
			memset(header + hlen, ' ', (size_t)(NPY_GROWTH_DIGITS - w));
			hlen += (size_t)(NPY_GROWTH_DIGITS - w);
		}
	}
	body = hlen;
	pad = NPY_ALIGN - ((10 + body + 1) % NPY_ALIGN);
	hlen = body + pad + 1; /* spaces, then '\n' */
	total = 10 + hlen + data;
	if (total < data)
		return mfs_fail(err, EINVAL, "tensor is too large");
	p = mfs_bigbuf_alloc(total);   /* a kept block when one fits */
	if (!p)
		return mfs_fail(err, ENOMEM, "out of memory writing %zu bytes", total);
	memcpy(p, npy_magic, 6);
	p[6] = 1;
	p[7] = 0;
	p[8] = (char)(hlen & 0xff);
	p[9] = (char)(hlen >> 8);
	memcpy(p + 10, header, body);
	memset(p + 10 + body, ' ', pad);
	p[10 + hlen - 1] = '\n';
	*buf = p;
	*len = total;
	return 0;
}

/* Is every element UTF-8 without a NUL?  *width: the longest element in
 * code points if so, else in bytes. */
static bool npy_strings_utf8(const mfs_tensor *t, size_t *width)
{
	int64_t n = mfs_shape_numel(&t->shape);
	size_t most_chars = 0, most_bytes = 0;
	bool ok = true;

	for (int64_t i = 0; i < n; i++) {
		const mfs_string *s = mfs_string_at(t, i);
		size_t chars = 0;
		uint32_t cp;
		for (size_t j = 0; ok && j < s->len; chars++) {
			int l = mfs_utf8_decode((const unsigned char *)s->ptr + j, s->len - j, &cp);
			if (l < 0 || cp == 0)
				ok = false;
			j += l > 0 ? (size_t)l : 1;
		}
		most_chars = chars > most_chars ? chars : most_chars;
		most_bytes = s->len > most_bytes ? s->len : most_bytes;
	}
	*width = ok ? most_chars : most_bytes;
	return ok;
}

static int npy_strings_encode(const mfs_tensor *t, char **buf, size_t *len, mfs_error *err)
{
	int64_t n = mfs_shape_numel(&t->shape);
	size_t width, item;
	bool u = npy_strings_utf8(t, &width);
	char descr[32], *p;
	int rc;

	if (width > NPY_MAX_WIDTH)
		return mfs_fail(err, EINVAL, "an element of %zu bytes is too long for .npy", width);
	/* numpy's fixed-width strings drop their trailing NULs: an element
	 * that ends with one would not read back as written. */
	for (int64_t i = 0; !u && i < n; i++) {
		const mfs_string *s = mfs_string_at(t, i);
		if (s->len && s->ptr[s->len - 1] == '\0')
			return mfs_fail(err, EINVAL, "element %lld ends with a NUL byte, which numpy's "
					"fixed-width strings drop: use .raw, .json or .pb", (long long)i);
	}
	width = width ? width : 1;   /* numpy's narrowest: U1, S1 */
	item = u ? 4 * width : width;
	if ((uint64_t)n > SIZE_MAX / item)
		return mfs_fail(err, EINVAL, "tensor is too large");
	snprintf(descr, sizeof(descr), u ? "<U%zu" : "|S%zu", width);
	if ((rc = npy_start(descr, &t->shape, (size_t)n * item, buf, len, err)))
		return rc;
	p = *buf + *len - (size_t)n * item;
	memset(p, 0, (size_t)n * item);
	for (int64_t i = 0; i < n; i++, p += item) {
		const mfs_string *s = mfs_string_at(t, i);
		uint32_t cp;
		if (!u) {
			if (s->len)
				memcpy(p, s->ptr, s->len);
			continue;
		}
		for (size_t j = 0, k = 0; j < s->len; k++) {
			j += (size_t)mfs_utf8_decode((const unsigned char *)s->ptr + j, s->len - j, &cp);
			for (int b = 0; b < 4; b++)
				p[4 * k + (size_t)b] = (char)(cp >> (8 * b));
		}
	}
	return 0;
}

int mfs_codec_npy_encode(const mfs_tensor *t, const char *name, char **buf,
			 size_t *len, mfs_error *err)
{
	const char *descr = dtype_to_descr(t->dtype);
	int rc;

	(void)name;
	if (t->dtype == MFS_DT_STRING)
		return npy_strings_encode(t, buf, len, err);
	if (!descr)
		return mfs_fail(err, ENOTSUP, "data type %s has no .npy equivalent",
				mfs_dtype_onnx_name(t->dtype));
	if ((rc = npy_start(descr, &t->shape, t->nbytes, buf, len, err)))
		return rc;
	if (t->nbytes)
		memcpy(*buf + *len - t->nbytes, t->data, t->nbytes);
	return 0;
}

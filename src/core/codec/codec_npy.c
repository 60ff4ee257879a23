/* codec_npy.c - NumPy .npy files (format versions 1.0, 2.0, 3.0).
 *
 * Read: little-endian (or byte-order-free) plain dtypes in C order.  The
 * header is a Python dict literal; this parses exactly the subset NumPy
 * writes ({'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), })
 * and refuses the rest by name: Fortran order, big-endian, object,
 * structured, string and complex dtypes.  The data must be exactly
 * numel * itemsize bytes.
 * Write: version 1.0, byte for byte what numpy.save() writes (same key
 * order, growth padding and 64-byte alignment), so files round-trip.
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
		return mfs_fail(err, EINVAL, "object arrays ('%s') are not supported", d);
	if (kind == 'U' || kind == 'S' || kind == 'a')
		return mfs_fail(err, EINVAL, "string arrays ('%s') are not supported", d);
	if (kind == 'c')
		return mfs_fail(err, EINVAL, "complex arrays ('%s') are not supported", d);
	return mfs_fail(err, EINVAL, "dtype '%s' is not supported", d);
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

static int parse_header(const char *text, size_t n, mfs_dtype *dt,
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
	if ((rc = descr_to_dtype(descr, dt, err)))
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
static int npy_header(const unsigned char *b, size_t len, mfs_dtype *dt,
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
	esize = mfs_dtype_size(*dt);
	n = mfs_codec_numel(shape->dims, shape->rank, -1);
	if (n < 0 || (uint64_t)n > SIZE_MAX / esize)
		return mfs_fail(err, EINVAL, "shape is too large");
	want = (size_t)n * esize;
	*data_at = start + hlen;
	*data_len = want;
	return 0;
}

static int npy_parse(const unsigned char *b, size_t len, mfs_dtype *dt,
		     mfs_shape *shape, size_t *data_at, size_t *data_len, mfs_error *err)
{
	int rc = npy_header(b, len, dt, shape, data_at, data_len, err);
	if (rc == 0 && len - *data_at != *data_len)
		return mfs_fail(err, EINVAL, "has %zu bytes of data, but %s shape needs %zu",
				len - *data_at, mfs_dtype_onnx_name(*dt), *data_len);
	return rc;
}

size_t mfs_npy_file_size(const void *buf, size_t len)
{
	mfs_dtype dt;
	mfs_shape shape = { 0 };
	size_t at, want;
	mfs_error err;
	if (npy_header(buf, len, &dt, &shape, &at, &want, &err) < 0 || want > SIZE_MAX - at)
		return 0;
	return at + want;
}

/* The tensor of a .npy file: a copy, or with view a pointer into buf
 * when the data can be used as it is (not BOOL, aligned). */
static int npy_tensor(const void *buf, size_t len, mfs_tensor *out, bool view,
		      mfs_error *err)
{
	const unsigned char *b = buf;
	size_t at = 0, want = 0;
	mfs_dtype dt = MFS_DT_UNDEFINED;
	mfs_shape shape = { 0 };

	int rc = npy_parse(b, len, &dt, &shape, &at, &want, err);
	if (rc)
		return rc;
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

int mfs_codec_npy_encode(const mfs_tensor *t, const char *name, char **buf,
			 size_t *len, mfs_error *err)
{
	const char *descr = dtype_to_descr(t->dtype);
	char header[512], dims[256];
	size_t n = 0, hlen, body, pad, total;
	int k;
	char *p;

	(void)name;
	if (!descr)
		return mfs_fail(err, ENOTSUP, "data type %s has no .npy equivalent",
				mfs_dtype_onnx_name(t->dtype));
	/* Python's repr of a tuple: (), (16,), (3, 4). */
	dims[0] = '\0';
	for (int i = 0; i < t->shape.rank; i++)
		n += (size_t)snprintf(dims + n, sizeof(dims) - n, "%s%" PRId64,
				      i ? ", " : "", t->shape.dims[i]);
	if (t->shape.rank == 1)
		snprintf(dims + n, sizeof(dims) - n, ",");
	k = snprintf(header, sizeof(header),
		     "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
		     descr, dims);
	hlen = (size_t)k;
	if (t->shape.rank > 0) {
		char d0[24];
		int w = snprintf(d0, sizeof(d0), "%" PRId64, t->shape.dims[0]);
		if (w < NPY_GROWTH_DIGITS) {
			memset(header + hlen, ' ', (size_t)(NPY_GROWTH_DIGITS - w));
			hlen += (size_t)(NPY_GROWTH_DIGITS - w);
		}
	}
	body = hlen;
	pad = NPY_ALIGN - ((10 + body + 1) % NPY_ALIGN);
	hlen = body + pad + 1; /* spaces, then '\n' */
	total = 10 + hlen + t->nbytes;
	if (total < t->nbytes)
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
	if (t->nbytes)
		memcpy(p + 10 + hlen, t->data, t->nbytes);
	*buf = p;
	*len = total;
	return 0;
}

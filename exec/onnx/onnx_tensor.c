/* onnx_tensor.c - TensorProto to mfs_tensor and back (see onnx.h).
 *
 * A TensorProto carries its elements in exactly one of: raw_data
 * (little-endian bytes), a typed repeated field (float_data, int32_data,
 * int64_data, double_data, uint64_data) or an external file.  Decoding
 * takes two passes over the message: the first reads dims and data_type
 * and counts the elements each data field holds (a packed field's count is
 * bounded by its byte length), so that the declared shape is checked
 * against the data actually present before anything is allocated; the
 * second pass copies the elements.  The allocation is therefore never
 * larger than 8 bytes per input byte (an int64 from a one-byte varint),
 * except for external data, whose size is checked against the file's.
 *
 * External data: location/offset/length keys, resolved under base_dir.
 * The location must be relative, free of ".." components, and must still
 * resolve under base_dir after symlinks (realpath), so a model cannot make
 * the daemon read files outside its own directory.
 */
#include "onnx.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx_internal.h"
#include "pb_wire.h"

/* TensorProto field numbers (onnx.proto). */
enum {
	TP_DIMS = 1,
	TP_DATA_TYPE = 2,
	TP_SEGMENT = 3,
	TP_FLOAT_DATA = 4,
	TP_INT32_DATA = 5,
	TP_STRING_DATA = 6,
	TP_INT64_DATA = 7,
	TP_NAME = 8,
	TP_RAW_DATA = 9,
	TP_DOUBLE_DATA = 10,
	TP_UINT64_DATA = 11,
	TP_EXTERNAL_DATA = 13,
	TP_DATA_LOCATION = 14,
};

static const char *field_name(uint32_t num)
{
	switch (num) {
	case TP_DIMS: return "dims";
	case TP_DATA_TYPE: return "data_type";
	case TP_FLOAT_DATA: return "float_data";
	case TP_INT32_DATA: return "int32_data";
	case TP_INT64_DATA: return "int64_data";
	case TP_NAME: return "name";
	case TP_RAW_DATA: return "raw_data";
	case TP_DOUBLE_DATA: return "double_data";
	case TP_UINT64_DATA: return "uint64_data";
	case TP_EXTERNAL_DATA: return "external_data";
	case TP_DATA_LOCATION: return "data_location";
	default: return "field";
	}
}

/* What the first pass learns. */
struct tp_info {
	int rank;
	int64_t dims[MFS_MAX_RANK];
	int64_t data_type;
	const uint8_t *name;
	size_t name_len;
	bool has_name;
	const uint8_t *raw;
	size_t raw_len;
	bool has_raw;
	long long count[TP_UINT64_DATA + 1];   /* elements per typed field */
	int64_t data_location;
	bool has_external;
	long long n_strings;     /* string_data elements: refused unless STRING */
	char *ext_location;
	uint64_t ext_offset;
	uint64_t ext_length;
	bool has_ext_length;
};

static int bad_wire(mfs_error *err, const pb_field *f, const char *want)
{
	return mfs_fail(err, EINVAL,
			"TensorProto %s (field %u) has wire type %s, expected %s",
			field_name(f->num), f->num, pb_wire_type_name(f->wt),
			want);
}

/* "123" -> 123; only decimal digits, no overflow. */
static int parse_u64(const uint8_t *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return 0;
}

/* One StringStringEntryProto {1: key, 2: value} of external_data. */
static int parse_external_entry(const pb_field *f, struct tp_info *ti,
				mfs_error *err)
{
	pb_reader r = pb_reader_init(f->data, f->len);
	pb_field e;
	const char *why = NULL;
	const uint8_t *key = NULL, *val = NULL;
	size_t key_len = 0, val_len = 0;
	int rc;

	while ((rc = pb_next(&r, &e, &why)) > 0) {
		rc = 0;
		if ((e.num == 1 || e.num == 2) && e.wt != PB_WT_LEN)
			return mfs_fail(err, EINVAL,
					"external_data entry field %u is not a string",
					e.num);
		if (e.num == 1) {
			key = e.data;
			key_len = e.len;
		} else if (e.num == 2) {
			val = e.data;
			val_len = e.len;
		}
	}
	if (rc < 0)
		return mfs_fail(err, EINVAL, "external_data entry: %s", why);
	if (!key)
		return mfs_fail(err, EINVAL, "external_data entry without a key");
	if (!val)
		val = (const uint8_t *)"";
	if (key_len == 8 && memcmp(key, "location", 8) == 0) {
		free(ti->ext_location);
		rc = pb_strdup(val, val_len, &ti->ext_location);
		if (rc == -ENOMEM)
			return mfs_fail(err, ENOMEM, "out of memory");
		if (rc)
			return mfs_fail(err, EINVAL,
					"external_data location contains a NUL byte");
	} else if (key_len == 6 && memcmp(key, "offset", 6) == 0) {
		if (parse_u64(val, val_len, &ti->ext_offset))
			return mfs_fail(err, EINVAL,
					"external_data offset '%.*s' is not a non-negative integer",
					(int)(val_len > 40 ? 40 : val_len), val);
	} else if (key_len == 6 && memcmp(key, "length", 6) == 0) {
		if (parse_u64(val, val_len, &ti->ext_length))
			return mfs_fail(err, EINVAL,
					"external_data length '%.*s' is not a non-negative integer",
					(int)(val_len > 40 ? 40 : val_len), val);
		ti->has_ext_length = true;
	}
	/* "checksum" (an optional SHA-1 of the data) and keys of future
	 * versions do not change where the bytes are; they are not checked. */
	return 0;
}

/* TensorProto.dims: one varint, or packed. */
static int scan_dims(const pb_field *f, struct tp_info *ti, mfs_error *err)
{
	const char *why = NULL;

	if (f->wt == PB_WT_VARINT) {
		if (ti->rank >= MFS_MAX_RANK)
			goto too_many_dims;
		ti->dims[ti->rank++] = (int64_t)f->u;
	} else if (f->wt == PB_WT_LEN) {
		pb_reader d = pb_reader_init(f->data, f->len);
		uint64_t v;
		while (d.p < d.end) {
			if (pb_read_varint(&d, &v, &why))
				return mfs_fail(err, EINVAL,
						"TensorProto dims: %s", why);
			if (ti->rank >= MFS_MAX_RANK)
				goto too_many_dims;
			ti->dims[ti->rank++] = (int64_t)v;
		}
	} else {
		return bad_wire(err, f, "varint");
	}
	return 0;

too_many_dims:
	return mfs_fail(err, ENOTSUP, "tensor has more than %d dims",
			MFS_MAX_RANK);
}

/* A typed data field (float_data, double_data, int32_data, int64_data,
 * uint64_data): count the elements it carries into ti->count. */
static int scan_data_count(const pb_field *f, struct tp_info *ti, mfs_error *err)
{
	const char *why = NULL;
	long long n;

	switch (f->num) {
	case TP_FLOAT_DATA:
		if (f->wt == PB_WT_I32)
			n = 1;
		else if (f->wt == PB_WT_LEN && f->len % 4 == 0)
			n = (long long)(f->len / 4);
		else if (f->wt == PB_WT_LEN)
			return mfs_fail(err, EINVAL,
					"packed float_data of %zu bytes is not a multiple of 4",
					f->len);
		else
			return bad_wire(err, f, "32-bit or packed");
		break;
	case TP_DOUBLE_DATA:
		if (f->wt == PB_WT_I64)
			n = 1;
		else if (f->wt == PB_WT_LEN && f->len % 8 == 0)
			n = (long long)(f->len / 8);
		else if (f->wt == PB_WT_LEN)
			return mfs_fail(err, EINVAL,
					"packed double_data of %zu bytes is not a multiple of 8",
					f->len);
		else
			return bad_wire(err, f, "64-bit or packed");
		break;
	default:   /* TP_INT32_DATA, TP_INT64_DATA, TP_UINT64_DATA */
		if (f->wt == PB_WT_VARINT) {
			n = 1;
		} else if (f->wt == PB_WT_LEN) {
			n = pb_count_varints(f->data, f->len, &why);
			if (n < 0)
				return mfs_fail(err, EINVAL,
						"TensorProto %s: %s",
						field_name(f->num), why);
		} else {
			return bad_wire(err, f, "varint or packed");
		}
		break;
	}
	ti->count[f->num] += n;
	return 0;
}

/* Pass 1: shape, type, and how many elements each data field carries. */
static int scan_tensor(const uint8_t *buf, size_t len, struct tp_info *ti,
		       mfs_error *err)
{
	pb_reader r = pb_reader_init(buf, len);
	pb_field f;
	const char *why = NULL;
	int rc;

	while ((rc = pb_next(&r, &f, &why)) > 0) {
		rc = 0;
		switch (f.num) {
		case TP_DIMS:
			if ((rc = scan_dims(&f, ti, err)))
				return rc;
			break;
		case TP_DATA_TYPE:
			if (f.wt != PB_WT_VARINT)
				return bad_wire(err, &f, "varint");
			ti->data_type = (int64_t)f.u;
			break;
		case TP_SEGMENT:
			return mfs_fail(err, ENOTSUP,
					"segmented TensorProto is not supported");
		case TP_STRING_DATA:
			/* Decided after the scan: random bytes often hold a
			 * field 6, and "string tensors are not supported" would
			 * then send the user looking for strings. */
			if (f.wt != PB_WT_LEN)
				return bad_wire(err, &f, "length-delimited");
			ti->n_strings++;
			break;
		case TP_NAME:
			if (f.wt != PB_WT_LEN)
				return bad_wire(err, &f, "length-delimited");
			ti->name = f.data;
			ti->name_len = f.len;
			ti->has_name = true;
			break;
		case TP_RAW_DATA:
			if (f.wt != PB_WT_LEN)
				return bad_wire(err, &f, "length-delimited");
			ti->raw = f.data;
			ti->raw_len = f.len;
			ti->has_raw = true;
			break;
		case TP_FLOAT_DATA:
		case TP_DOUBLE_DATA:
		case TP_INT32_DATA:
		case TP_INT64_DATA:
		case TP_UINT64_DATA:
			if ((rc = scan_data_count(&f, ti, err)))
				return rc;
			break;
		case TP_EXTERNAL_DATA:
			if (f.wt != PB_WT_LEN)
				return bad_wire(err, &f, "length-delimited");
			ti->has_external = true;
			rc = parse_external_entry(&f, ti, err);
			if (rc)
				return rc;
			break;
		case TP_DATA_LOCATION:
			if (f.wt != PB_WT_VARINT)
				return bad_wire(err, &f, "varint");
			ti->data_location = (int64_t)f.u;
			break;
		default:
			break;   /* doc_string, metadata_props, future fields */
		}
	}
	if (rc < 0)
		return mfs_fail(err, EINVAL, "malformed TensorProto: %s", why);
	return 0;
}

/* Which element types a typed field may carry (onnx.proto comments). */
static bool field_carries(uint32_t field, mfs_dtype dt)
{
	switch (field) {
	case TP_FLOAT_DATA:
		return dt == MFS_DT_FLOAT;
	case TP_INT32_DATA:
		return dt == MFS_DT_INT32 || dt == MFS_DT_INT16 ||
		       dt == MFS_DT_INT8 || dt == MFS_DT_UINT16 ||
		       dt == MFS_DT_UINT8 || dt == MFS_DT_BOOL ||
		       dt == MFS_DT_FLOAT16 || dt == MFS_DT_BFLOAT16;
	case TP_INT64_DATA:
		return dt == MFS_DT_INT64;
	case TP_DOUBLE_DATA:
		return dt == MFS_DT_DOUBLE;
	case TP_UINT64_DATA:
		return dt == MFS_DT_UINT32 || dt == MFS_DT_UINT64;
	default:
		return false;
	}
}

/* Store one int32_data value into element i of t, range-checked. */
static int put_int32(mfs_tensor *t, int64_t i, int64_t v, mfs_error *err)
{
	int64_t lo, hi;
	uint8_t *d = t->data;

	switch (t->dtype) {
	case MFS_DT_INT32: lo = INT32_MIN; hi = INT32_MAX; break;
	case MFS_DT_INT16: lo = INT16_MIN; hi = INT16_MAX; break;
	case MFS_DT_INT8: lo = INT8_MIN; hi = INT8_MAX; break;
	case MFS_DT_UINT8: lo = 0; hi = UINT8_MAX; break;
	case MFS_DT_BOOL: lo = 0; hi = 1; break;
	default: lo = 0; hi = UINT16_MAX; break;   /* u16, fp16/bf16 bits */
	}
	if (v < lo || v > hi)
		return mfs_fail(err, EINVAL,
				"int32_data element %lld = %lld is out of range for %s",
				(long long)i, (long long)v,
				mfs_dtype_onnx_name(t->dtype));
	switch (mfs_dtype_size(t->dtype)) {
	case 1: d[i] = (uint8_t)v; break;
	case 2: { uint16_t x = (uint16_t)v; memcpy(d + 2 * i, &x, 2); break; }
	default: { int32_t x = (int32_t)v; memcpy(d + 4 * i, &x, 4); break; }
	}
	return 0;
}

static int put_varint(mfs_tensor *t, uint32_t field, int64_t i, uint64_t u,
		      mfs_error *err)
{
	uint8_t *d = t->data;

	if (field == TP_INT32_DATA) {
		/* int32 is sign-extended to 64 bits on the wire. */
		int64_t v = (int64_t)u;
		if (v < INT32_MIN || v > INT32_MAX)
			return mfs_fail(err, EINVAL,
					"int32_data element %lld does not fit in int32",
					(long long)i);
		return put_int32(t, i, v, err);
	}
	if (field == TP_UINT64_DATA && t->dtype == MFS_DT_UINT32) {
		if (u > UINT32_MAX)
			return mfs_fail(err, EINVAL,
					"uint64_data element %lld = %llu is out of range for uint32",
					(long long)i, (unsigned long long)u);
		uint32_t x = (uint32_t)u;
		memcpy(d + 4 * i, &x, 4);
		return 0;
	}
	memcpy(d + 8 * i, &u, 8);   /* int64_data / uint64_data as 64 bits */
	return 0;
}

/* Pass 2: copy the elements of typed field `field` into t. */
static int fill_typed(const uint8_t *buf, size_t len, uint32_t field,
		      mfs_tensor *t, mfs_error *err)
{
	pb_reader r = pb_reader_init(buf, len);
	pb_field f;
	const char *why = NULL;
	int64_t i = 0;
	int rc;

	while ((rc = pb_next(&r, &f, &why)) > 0) {
		rc = 0;
		if (f.num != field)
			continue;
		if (field == TP_FLOAT_DATA || field == TP_DOUBLE_DATA) {
			size_t es = field == TP_FLOAT_DATA ? 4 : 8;
			if (f.wt == PB_WT_LEN) {
				if (f.len == 0)
					continue;
				memcpy((uint8_t *)t->data + es * (size_t)i, f.data,
				       f.len);
				i += (int64_t)(f.len / es);
			} else {
				/* f.u holds the raw little-endian bits. */
				if (es == 4) {
					uint32_t x = (uint32_t)f.u;
					memcpy((uint8_t *)t->data + 4 * i, &x, 4);
				} else {
					memcpy((uint8_t *)t->data + 8 * i, &f.u, 8);
				}
				i++;
			}
			continue;
		}
		if (f.wt == PB_WT_VARINT) {
			rc = put_varint(t, field, i++, f.u, err);
			if (rc)
				return rc;
			continue;
		}
		pb_reader d = pb_reader_init(f.data, f.len);
		uint64_t u;
		while (d.p < d.end) {
			if (pb_read_varint(&d, &u, &why))
				return mfs_fail(err, EINVAL, "%s: %s",
						field_name(field), why);
			rc = put_varint(t, field, i++, u, err);
			if (rc)
				return rc;
		}
	}
	if (rc < 0)
		return mfs_fail(err, EINVAL, "malformed TensorProto: %s", why);
	return 0;
}

/* Refuse locations that are absolute or climb out with "..". */
static int check_location(const char *loc, mfs_error *err)
{
	const char *p = loc;

	if (!*loc)
		return mfs_fail(err, EINVAL, "external_data location is empty");
	if (loc[0] == '/')
		return mfs_fail(err, EINVAL,
				"external_data location '%s' is absolute; it must be relative to the model's directory",
				loc);
	while (*p) {
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return mfs_fail(err, EINVAL,
					"external_data location '%s' leaves the model's directory",
					loc);
		p += n;
		while (*p == '/')
			p++;
	}
	return 0;
}

/* Checks everything (location, file, offset, length against the shape)
 * before allocating: the size comes from the file, which must hold it. */
/* Charge `length` bytes of file st to the model's budget. */
static int charge_budget(onnx_ext_budget *b, const struct stat *st,
			 uint64_t length, const char *loc, mfs_error *err)
{
	size_t i;

	if (!b)
		return 0;
	for (i = 0; i < b->n_files; i++)
		if (b->files[i].dev == st->st_dev && b->files[i].ino == st->st_ino)
			break;
	if (i == b->n_files) {
		if (b->n_files == b->cap) {
			size_t cap = b->cap ? 2 * b->cap : 8;
			onnx_ext_file *f = realloc(b->files, cap * sizeof(*f));
			if (!f)
				return mfs_fail(err, ENOMEM, "out of memory");
			b->files = f;
			b->cap = cap;
		}
		b->files[b->n_files].dev = st->st_dev;
		b->files[b->n_files].ino = st->st_ino;
		b->n_files++;
		b->allowed += (uint64_t)st->st_size;
	}
	if (length > b->allowed - b->used)
		return mfs_fail(err, EINVAL,
				"external data '%s': the model's tensors read more bytes than its data files hold (overlapping ranges)",
				loc);
	b->used += length;
	return 0;
}

void onnx_ext_budget_release(onnx_ext_budget *b)
{
	free(b->files);
	memset(b, 0, sizeof(*b));
}

static int read_external(const struct tp_info *ti, const char *base_dir,
			 onnx_ext_budget *budget, mfs_dtype dt, const mfs_shape *shape, size_t nbytes,
			 mfs_tensor *t, mfs_error *err)
{
	char path[PATH_MAX];
	char *real_base = NULL, *real_file = NULL;
	struct stat st;
	uint64_t length;
	int fd = -1, rc;

	if (!ti->ext_location)
		return mfs_fail(err, EINVAL,
				"data_location is EXTERNAL but external_data has no location");
	if (!base_dir)
		return mfs_fail(err, EINVAL,
				"tensor refers to external file '%s', but external data is not allowed here",
				ti->ext_location);
	rc = check_location(ti->ext_location, err);
	if (rc)
		return rc;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", base_dir,
			     ti->ext_location) >= sizeof(path))
		return mfs_fail(err, EINVAL, "external_data path too long");

	/* Symlinks may still point outside: compare resolved paths. */
	real_base = realpath(base_dir, NULL);
	real_file = realpath(path, NULL);
	if (!real_base || !real_file) {
		rc = mfs_fail(err, errno == ENOMEM ? ENOMEM : ENOENT,
			      "external data file '%s': %s", ti->ext_location,
			      strerror(errno));
		goto out;
	}
	size_t bl = strlen(real_base);
	if (!(strncmp(real_file, real_base, bl) == 0 &&
	      (real_file[bl] == '/' || (bl == 1 && real_base[0] == '/')))) {
		rc = mfs_fail(err, EINVAL,
			      "external_data location '%s' resolves outside the model's directory",
			      ti->ext_location);
		goto out;
	}
	/* O_NONBLOCK: a FIFO planted as the data file must not hang us. */
	fd = open(real_file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0) {
		rc = mfs_fail(err, errno == EACCES ? EACCES : ENOENT,
			      "external data file '%s': %s", ti->ext_location,
			      strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = mfs_fail(err, EINVAL,
			      "external data file '%s' is not a regular file",
			      ti->ext_location);
		goto out;
	}
	if (ti->ext_offset > (uint64_t)st.st_size) {
		rc = mfs_fail(err, EINVAL,
			      "external data offset %llu is past the end of '%s' (%lld bytes)",
			      (unsigned long long)ti->ext_offset, ti->ext_location,
			      (long long)st.st_size);
		goto out;
	}
	length = ti->has_ext_length ? ti->ext_length
				    : (uint64_t)st.st_size - ti->ext_offset;
	if (length > (uint64_t)st.st_size - ti->ext_offset) {
		rc = mfs_fail(err, EINVAL,
			      "external data '%s' offset %llu length %llu runs past its end (%lld bytes)",
			      ti->ext_location, (unsigned long long)ti->ext_offset,
			      (unsigned long long)length, (long long)st.st_size);
		goto out;
	}
	if (length != nbytes) {
		char sb[96];
		rc = mfs_fail(err, EINVAL,
			      "external data '%s' holds %llu bytes, but %s %s needs %zu",
			      ti->ext_location, (unsigned long long)length,
			      mfs_dtype_onnx_name(dt),
			      mfs_shape_format(shape, sb, sizeof(sb)), nbytes);
		goto out;
	}
	rc = charge_budget(budget, &st, length, ti->ext_location, err);
	if (rc)
		goto out;
	rc = mfs_tensor_alloc(t, dt, shape, err);
	if (rc)
		goto out;
	for (size_t done = 0; done < t->nbytes;) {
		ssize_t n = pread(fd, (uint8_t *)t->data + done, t->nbytes - done,
				  (off_t)(ti->ext_offset + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = mfs_fail(err, EIO, "reading external data '%s': %s",
				      ti->ext_location,
				      n < 0 ? strerror(errno) : "file shrank");
			goto out;
		}
		done += (size_t)n;
	}
	rc = 0;
out:
	if (rc)
		mfs_tensor_release(t);
	if (fd >= 0)
		close(fd);
	free(real_base);
	free(real_file);
	return rc;
}

/* The engine relies on bools being 0 or 1 (tensor.h). */
static int check_bools(const mfs_tensor *t, mfs_error *err)
{
	const uint8_t *b = t->data;

	for (size_t i = 0; i < t->nbytes; i++)
		if (b[i] > 1)
			return mfs_fail(err, EINVAL, "bool element %zu is %u, not 0 or 1", i, b[i]);
	return 0;
}

/* A string tensor's elements: in string_data, as many as its shape. */
static int check_strings(const struct tp_info *ti, uint32_t typed, int64_t numel,
			 const char *shape, mfs_error *err)
{
	if (ti->has_raw || typed || ti->data_location == 1)
		return mfs_fail(err, EINVAL,
				"a string tensor carries its elements in string_data only");
	if (ti->n_strings && ti->n_strings != numel)
		return mfs_fail(err, EINVAL,
				"string_data has %lld elements, but shape %s needs %lld",
				ti->n_strings, shape, (long long)numel);
	return 0;
}

static int decode(const uint8_t *buf, size_t len, const char *base_dir,
		  onnx_ext_budget *budget, struct tp_info *ti, mfs_tensor *out,
		  char **name, mfs_error *err)
{
	mfs_shape shape = { 0 };
	mfs_dtype dt;
	uint32_t typed = 0;
	int sources = 0, rc;
	int64_t numel = 1;
	size_t esize;

	rc = scan_tensor(buf, len, ti, err);
	if (rc)
		return rc;

	if (ti->data_type <= 0 || ti->data_type > 64)
		return mfs_fail(err, EINVAL,
				"not an ONNX TensorProto: it has no valid data_type (%lld)",
				(long long)ti->data_type);
	dt = (mfs_dtype)ti->data_type;
	if (ti->n_strings && dt != MFS_DT_STRING)
		return mfs_fail(err, EINVAL,
				"not an ONNX TensorProto of %s: it carries string_data",
				mfs_dtype_onnx_name(dt));
	esize = mfs_dtype_size(dt);
	if (esize == 0)
		return mfs_fail(err, ENOTSUP,
				"tensor data type %lld is not supported",
				(long long)ti->data_type);

	shape.rank = ti->rank;
	for (int i = 0; i < ti->rank; i++) {
		if (ti->dims[i] < 0)
			return mfs_fail(err, EINVAL, "tensor dim %d is negative (%lld)",
					i, (long long)ti->dims[i]);
		shape.dims[i] = ti->dims[i];
		if (ti->dims[i] && numel > INT64_MAX / ti->dims[i])
			return mfs_fail(err, EINVAL, "tensor element count overflows");
		numel *= ti->dims[i];
	}
	if ((uint64_t)numel > SIZE_MAX / esize)
		return mfs_fail(err, EINVAL, "tensor size overflows");

	for (uint32_t fnum = TP_FLOAT_DATA; fnum <= TP_UINT64_DATA; fnum++) {
		if (ti->count[fnum] > 0) {
			typed = fnum;
			sources++;
		}
	}
	if (ti->has_raw)
		sources++;
	if (ti->n_strings)
		sources++;
	if (ti->data_location == 1)
		sources++;
	else if (ti->data_location != 0)
		return mfs_fail(err, EINVAL, "unknown data_location %lld",
				(long long)ti->data_location);
	else if (ti->has_external)
		return mfs_fail(err, EINVAL,
				"external_data given but data_location is not EXTERNAL");
	if (sources > 1)
		return mfs_fail(err, EINVAL,
				"tensor carries its data in more than one field");

	char sb[96];
	mfs_shape_format(&shape, sb, sizeof(sb));
	if (dt == MFS_DT_STRING && (rc = check_strings(ti, typed, numel, sb, err)))
		return rc;
	if (ti->has_raw && ti->raw_len != (size_t)numel * esize)
		return mfs_fail(err, EINVAL,
				"raw_data has %zu bytes, but %s %s needs %zu",
				ti->raw_len, mfs_dtype_onnx_name(dt), sb,
				(size_t)numel * esize);
	if (typed) {
		if (!field_carries(typed, dt))
			return mfs_fail(err, EINVAL, "%s cannot carry %s elements",
					field_name(typed), mfs_dtype_onnx_name(dt));
		if (ti->count[typed] != numel)
			return mfs_fail(err, EINVAL,
					"%s has %lld elements, but shape %s needs %lld",
					field_name(typed), ti->count[typed], sb,
					(long long)numel);
	}
	if (sources == 0 && numel != 0)
		return mfs_fail(err, EINVAL,
				"tensor %s %s carries no data", mfs_dtype_onnx_name(dt),
				sb);

	if (ti->data_location == 1)
		rc = read_external(ti, base_dir, budget, dt, &shape,
				   (size_t)numel * esize, out, err);
	else
		rc = mfs_tensor_alloc(out, dt, &shape, err);
	if (rc)
		return rc;
	if (ti->has_raw) {
		if (out->nbytes)
			memcpy(out->data, ti->raw, out->nbytes);
	} else if (typed) {
		rc = fill_typed(buf, len, typed, out, err);
	} else if (ti->n_strings) {
		rc = onnx_fill_strings(buf, len, TP_STRING_DATA, out, err);
	}
	if (!rc && dt == MFS_DT_BOOL)
		rc = check_bools(out, err);
	if (!rc && name && ti->has_name) {
		rc = pb_strdup(ti->name, ti->name_len, name);
		if (rc == -ENOMEM)
			rc = mfs_fail(err, ENOMEM, "out of memory");
		else if (rc)
			rc = mfs_fail(err, EINVAL, "tensor name contains a NUL byte");
	}
	if (rc)
		mfs_tensor_release(out);
	return rc;
}

int onnx_tensor_decode(const void *buf, size_t len, const char *base_dir,
		       mfs_tensor *out, char **name, mfs_error *err)
{
	return onnx_tensor_decode_budget(buf, len, base_dir, NULL, out, name,
					 err);
}

int onnx_tensor_decode_budget(const void *buf, size_t len,
			      const char *base_dir, onnx_ext_budget *budget,
			      mfs_tensor *out, char **name, mfs_error *err)
{
	struct tp_info ti;
	int rc;

	memset(&ti, 0, sizeof(ti));
	memset(out, 0, sizeof(*out));
	if (name)
		*name = NULL;
	rc = decode(buf, len, base_dir, budget, &ti, out, name, err);
	free(ti.ext_location);
	return rc;
}

/* Encoding ------------------------------------------------------------- */

int onnx_tensor_encode(const mfs_tensor *t, const char *name, void **buf,
		       size_t *len, mfs_error *err)
{
	size_t esize = mfs_dtype_size(t->dtype);
	size_t dims_len = 0, name_len = name ? strlen(name) : 0, cap, data_len;
	int64_t numel;
	uint8_t *out, *p;

	*buf = NULL;
	*len = 0;
	if (esize == 0)
		return mfs_fail(err, ENOTSUP, "cannot encode a %s tensor as .pb",
				mfs_dtype_onnx_name(t->dtype));
	if (t->layout != MFS_LAYOUT_PLAIN)
		return mfs_fail(err, EINVAL,
				"cannot encode a tensor in an engine-internal layout");
	if (t->shape.rank < 0 || t->shape.rank > MFS_MAX_RANK)
		return mfs_fail(err, EINVAL, "tensor rank %d is invalid",
				t->shape.rank);
	numel = mfs_shape_numel(&t->shape);
	if (numel < 0 || (uint64_t)numel > SIZE_MAX / esize ||
	    (size_t)numel * esize != t->nbytes)
		return mfs_fail(err, EINVAL,
				"tensor shape does not match its %zu data bytes",
				t->nbytes);
	for (int i = 0; i < t->shape.rank; i++)
		dims_len += pb_varint_len((uint64_t)t->shape.dims[i]);

	/* Field order and form as ONNX's own serializer (proto2: repeated
	 * dims unpacked), so a file written by onnx.numpy_helper round-trips
	 * byte for byte: dims, data_type, name, raw_data. */
	data_len = t->dtype == MFS_DT_STRING ? onnx_strings_encoded_len(t, TP_STRING_DATA)
					     : t->nbytes;
	cap = (size_t)t->shape.rank * 11 + dims_len + 1 + 10 + 1 + 10 + name_len + 1 + 10 +
	      data_len;
	out = malloc(cap);
	if (!out)
		return mfs_fail(err, ENOMEM, "out of memory encoding %zu bytes",
				cap);
	p = out;
	for (int i = 0; i < t->shape.rank; i++) {
		*p++ = (TP_DIMS << 3) | PB_WT_VARINT;
		p = pb_put_varint(p, (uint64_t)t->shape.dims[i]);
	}
	*p++ = (TP_DATA_TYPE << 3) | PB_WT_VARINT;
	p = pb_put_varint(p, (uint64_t)t->dtype);
	if (name) {
		*p++ = (TP_NAME << 3) | PB_WT_LEN;
		p = pb_put_varint(p, name_len);
		memcpy(p, name, name_len);
		p += name_len;
	}
	if (t->dtype == MFS_DT_STRING) {   /* string_data, as numpy_helper writes */
		p = onnx_strings_encode(t, TP_STRING_DATA, p);
	} else {
		*p++ = (TP_RAW_DATA << 3) | PB_WT_LEN;
		p = pb_put_varint(p, t->nbytes);
		if (t->nbytes)
			memcpy(p, t->data, t->nbytes);
		p += t->nbytes;
	}
	*buf = out;
	*len = (size_t)(p - out);
	return 0;
}

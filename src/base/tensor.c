#include "tensor.h"
#include "hugemem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct dtype_info {
	mfs_dtype dt;
	size_t size;
	const char *kserve;
	const char *config;
	const char *onnx;
} dtype_table[] = {
	{ MFS_DT_FLOAT, 4, "FP32", "TYPE_FP32", "float" },
	{ MFS_DT_UINT8, 1, "UINT8", "TYPE_UINT8", "uint8" },
	{ MFS_DT_INT8, 1, "INT8", "TYPE_INT8", "int8" },
	{ MFS_DT_UINT16, 2, "UINT16", "TYPE_UINT16", "uint16" },
	{ MFS_DT_INT16, 2, "INT16", "TYPE_INT16", "int16" },
	{ MFS_DT_INT32, 4, "INT32", "TYPE_INT32", "int32" },
	{ MFS_DT_INT64, 8, "INT64", "TYPE_INT64", "int64" },
	{ MFS_DT_STRING, sizeof(mfs_string), "BYTES", "TYPE_STRING", "string" },
	{ MFS_DT_BOOL, 1, "BOOL", "TYPE_BOOL", "bool" },
	{ MFS_DT_FLOAT16, 2, "FP16", "TYPE_FP16", "float16" },
	{ MFS_DT_DOUBLE, 8, "FP64", "TYPE_FP64", "double" },
	{ MFS_DT_UINT32, 4, "UINT32", "TYPE_UINT32", "uint32" },
	{ MFS_DT_UINT64, 8, "UINT64", "TYPE_UINT64", "uint64" },
	{ MFS_DT_BFLOAT16, 2, "BF16", "TYPE_BF16", "bfloat16" },
};
#define N_DTYPES (sizeof(dtype_table) / sizeof(dtype_table[0]))

static const struct dtype_info *dtype_lookup(mfs_dtype dt)
{
	for (size_t i = 0; i < N_DTYPES; i++)
		if (dtype_table[i].dt == dt)
			return &dtype_table[i];
	return NULL;
}

size_t mfs_dtype_size(mfs_dtype dt)
{
	const struct dtype_info *d = dtype_lookup(dt);
	return d ? d->size : 0;
}

const char *mfs_dtype_kserve_name(mfs_dtype dt)
{
	const struct dtype_info *d = dtype_lookup(dt);
	return d ? d->kserve : NULL;
}

const char *mfs_dtype_config_name(mfs_dtype dt)
{
	const struct dtype_info *d = dtype_lookup(dt);
	return d ? d->config : NULL;
}

const char *mfs_dtype_onnx_name(mfs_dtype dt)
{
	const struct dtype_info *d = dtype_lookup(dt);
	return d ? d->onnx : "undefined";
}

mfs_dtype mfs_dtype_from_kserve(const char *name)
{
	for (size_t i = 0; name && i < N_DTYPES; i++)
		if (strcmp(dtype_table[i].kserve, name) == 0)
			return dtype_table[i].dt;
	return MFS_DT_UNDEFINED;
}

mfs_dtype mfs_dtype_from_config(const char *name)
{
	for (size_t i = 0; name && i < N_DTYPES; i++)
		if (strcmp(dtype_table[i].config, name) == 0)
			return dtype_table[i].dt;
	return MFS_DT_UNDEFINED;
}

int64_t mfs_shape_numel(const mfs_shape *s)
{
	int64_t n = 1;
	bool empty = false;
	for (int i = 0; i < s->rank; i++) {
		if (s->dims[i] < 0)
			return -1;
		empty |= s->dims[i] == 0;
	}
	if (empty)  /* before multiplying: [huge, huge, 0] is empty */
		return 0;
	for (int i = 0; i < s->rank; i++) {
		if (n > INT64_MAX / s->dims[i])
			return -1;  /* no tensor this large can exist */
		n *= s->dims[i];
	}
	return n;
}

bool mfs_shape_equal(const mfs_shape *a, const mfs_shape *b)
{
	if (a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (a->dims[i] != b->dims[i])
			return false;
	return true;
}

char *mfs_shape_format(const mfs_shape *s, char *buf, size_t size)
{
	size_t used = 0;
	if (size == 0)
		return buf;
	buf[0] = '\0';
	used += (size_t)snprintf(buf, size, "[");
	for (int i = 0; i < s->rank && used < size; i++)
		used += (size_t)snprintf(buf + used, size - used, "%s%lld",
					 i ? "," : "", (long long)s->dims[i]);
	if (used < size)
		snprintf(buf + used, size - used, "]");
	return buf;
}

bool mfs_tensor_bytes(const mfs_tensor *t, size_t *out)
{
	size_t n = mfs_dtype_size(t->dtype);
	for (int i = 0; i < t->shape.rank; i++) {
		size_t d = (size_t)t->shape.dims[i];
		if (d && n > SIZE_MAX / d)
			return false;
		n *= d;
	}
	*out = n;
	return true;
}

bool mfs_tensor_storage_bytes(const mfs_tensor *t, size_t *out)
{
	if (t->layout != MFS_LAYOUT_BLOCK16 || t->shape.rank != 4)
		return mfs_tensor_bytes(t, out);
	mfs_tensor padded = *t;
	padded.shape.dims[1] = (t->shape.dims[1] + 15) / 16 * 16;
	return mfs_tensor_bytes(&padded, out);
}

static void *(*big_alloc)(size_t);
static void (*big_release)(void *);
static size_t big_min = SIZE_MAX;

void mfs_tensor_set_big_storage(void *(*alloc)(size_t), void (*release)(void *),
				size_t min)
{
	big_alloc = alloc;
	big_release = release;
	big_min = alloc && release ? min : SIZE_MAX;
}

static int tensor_alloc(mfs_tensor *t, mfs_dtype dt, const mfs_shape *shape,
			bool zero, mfs_error *err);

int mfs_tensor_alloc(mfs_tensor *t, mfs_dtype dt, const mfs_shape *shape,
		     mfs_error *err)
{
	return tensor_alloc(t, dt, shape, true, err);
}

int mfs_tensor_alloc_uninit(mfs_tensor *t, mfs_dtype dt, const mfs_shape *shape,
			    mfs_error *err)
{
	return tensor_alloc(t, dt, shape, false, err);
}

static int tensor_alloc(mfs_tensor *t, mfs_dtype dt, const mfs_shape *shape,
			bool zero, mfs_error *err)
{
	size_t esize = mfs_dtype_size(dt);
	size_t n = 1;

	memset(t, 0, sizeof(*t));
	if (esize == 0)
		return mfs_fail(err, ENOTSUP, "unsupported tensor data type %s",
				mfs_dtype_onnx_name(dt));
	if (shape->rank < 0 || shape->rank > MFS_MAX_RANK)
		return mfs_fail(err, EINVAL, "tensor rank %d is outside 0..%d",
				shape->rank, MFS_MAX_RANK);
	for (int i = 0; i < shape->rank; i++) {
		if (shape->dims[i] < 0)
			return mfs_fail(err, EINVAL, "tensor dim %d is negative", i);
		/* An empty tensor may have huge other dims: no overflow then. */
		if (shape->dims[i] == 0)
			n = 0;
	}
	for (int i = 0; i < shape->rank && n; i++) {
		if (n > SIZE_MAX / esize / (size_t)shape->dims[i])
			return mfs_fail(err, EINVAL, "tensor size overflows");
		n *= (size_t)shape->dims[i];
	}
	t->dtype = dt;
	t->shape = *shape;
	t->nbytes = n * esize;
	if (t->nbytes >= big_min) {
		/* a kept block (its pages touched already), or a fresh one */
		t->data = big_alloc(t->nbytes);
		if (t->data && zero)
			memset(t->data, 0, t->nbytes);
	} else if (t->nbytes) {
		t->data = zero ? calloc(1, t->nbytes) : malloc(t->nbytes);
		if (t->data)
			mfs_hugemem_advise(t->data, t->nbytes);
	}
	if (t->nbytes && !t->data)
		return mfs_fail(err, ENOMEM, "out of memory allocating %zu bytes",
				t->nbytes);
	t->owns_data = t->nbytes > 0;
	return 0;
}

/* The mark mfs_tensor_want_device leaves: an address no tensor's data
 * has, so that an output array left uninitialised never asks by chance. */
static const char want_device_mark;

void mfs_tensor_want_device(mfs_tensor *t)
{
	memset(t, 0, sizeof(*t));
	t->layout = MFS_LAYOUT_DEVICE;
	t->data = (void *)&want_device_mark;
}

bool mfs_tensor_wants_device(const mfs_tensor *t)
{
	return t->layout == MFS_LAYOUT_DEVICE && t->data == &want_device_mark;
}

int mfs_tensor_to_host(const mfs_tensor *t, mfs_tensor *out, mfs_error *err)
{
	memset(out, 0, sizeof(*out));
	if (t->kind != MFS_KIND_TENSOR || t->dtype == MFS_DT_STRING)
		return mfs_fail(err, EINVAL, "only a numeric tensor has a host copy here");
	int rc = mfs_tensor_alloc_uninit(out, t->dtype, &t->shape, err);
	if (rc < 0 || !out->nbytes)
		return rc;
	if (!mfs_tensor_on_device(t)) {
		memcpy(out->data, t->data, out->nbytes);
		return 0;
	}
	mfs_device_data *d = t->data;
	rc = d->read(d, out->data, out->nbytes, err);
	if (rc < 0)
		mfs_tensor_release(out);
	return rc;
}

void mfs_tensor_release(mfs_tensor *t)
{
	if (!t)
		return;
	if (t->owns_data && mfs_tensor_on_device(t) && !mfs_tensor_wants_device(t)) {
		mfs_device_data *d = t->data;
		d->put(d);
	} else if (t->owns_data) {
		if (t->data && t->nbytes >= big_min)
			big_release(t->data);
		else
			free(t->data);
		for (int i = 0; t->items && i < t->n_items; i++)
			mfs_tensor_release(&t->items[i]);
		free(t->items);
		mfs_strarena_free(t->strings);
	}
	memset(t, 0, sizeof(*t));
}

int mfs_container_init(mfs_tensor *t, mfs_kind kind, mfs_kind elem_kind,
		       mfs_dtype dtype, int n, mfs_error *err)
{
	if (n < 0 || kind == MFS_KIND_TENSOR ||
	    (kind == MFS_KIND_OPTIONAL && n > 1))
		return mfs_fail(err, EINVAL, "invalid %s of %d items",
				mfs_kind_name(kind), n);
	memset(t, 0, sizeof(*t));
	t->kind = kind;
	t->elem_kind = kind == MFS_KIND_OPTIONAL ? elem_kind : MFS_KIND_TENSOR;
	t->dtype = dtype;
	t->owns_data = true;
	t->items = calloc((size_t)n + 1, sizeof(*t->items));
	if (!t->items)
		return mfs_fail(err, ENOMEM, "out of memory");
	t->n_items = n;
	return 0;
}

int mfs_tensor_copy(mfs_tensor *dst, const mfs_tensor *src, mfs_error *err)
{
	int rc;

	if (src->kind != MFS_KIND_TENSOR) {
		rc = mfs_container_init(dst, src->kind, src->elem_kind, src->dtype,
					src->n_items, err);
		for (int i = 0; !rc && i < src->n_items; i++)
			rc = mfs_tensor_copy(&dst->items[i], &src->items[i], err);
		if (rc)
			mfs_tensor_release(dst);
		return rc;
	}
	rc = mfs_tensor_alloc(dst, src->dtype, &src->shape, err);
	if (rc)
		return rc;
	dst->layout = src->layout;
	if (src->nbytes)
		memcpy(dst->data, src->data, src->nbytes);
	if (src->dtype == MFS_DT_STRING && (rc = mfs_tensor_own_strings(dst, err)))
		mfs_tensor_release(dst);
	return rc;
}

const char *mfs_kind_name(mfs_kind k)
{
	switch (k) {
	case MFS_KIND_SEQUENCE: return "sequence";
	case MFS_KIND_OPTIONAL: return "optional";
	default: return "tensor";
	}
}

char *mfs_type_format(mfs_kind kind, mfs_kind elem_kind, mfs_dtype dt,
		      char *buf, size_t size)
{
	const char *n = mfs_dtype_onnx_name(dt);

	if (kind == MFS_KIND_OPTIONAL && elem_kind == MFS_KIND_SEQUENCE)
		snprintf(buf, size, "optional(sequence(%s))", n);
	else
		snprintf(buf, size, "%s(%s)", mfs_kind_name(kind), n);
	return buf;
}

float mfs_half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f;
	uint32_t mant = h & 0x3ff;
	uint32_t bits;
	float f;

	if (exp == 0) {
		if (mant == 0) {
			bits = sign;
		} else {
			/* subnormal: value = mant * 2^-24 */
			f = (float)mant * 5.9604644775390625e-8f;
			return sign ? -f : f;
		}
	} else if (exp == 31) {
		bits = sign | 0x7f800000u | (mant << 13);
	} else {
		bits = sign | ((exp + 112) << 23) | (mant << 13);
	}
	memcpy(&f, &bits, 4);
	return f;
}

uint16_t mfs_float_to_half(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t sign = (x >> 16) & 0x8000;
	uint32_t absx = x & 0x7fffffffu;

	if (absx >= 0x7f800000u) /* inf or nan */
		return (uint16_t)(sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 : 0));
	if (absx >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
		return (uint16_t)(sign | 0x7c00);
	if (absx < 0x38800000u) { /* below smallest normal half: subnormal */
		float a;
		memcpy(&a, &absx, 4);
		/* round to nearest even multiple of 2^-24 */
		float scaled = a * 16777216.0f;
		uint32_t m = (uint32_t)lrintf(scaled);
		return (uint16_t)(sign | m);
	}
	/* normal: rebias exponent and round mantissa to nearest even */
	uint32_t mant = absx & 0x7fffff;
	uint32_t exp = (absx >> 23) - 112;
	uint32_t h = (exp << 10) | (mant >> 13);
	uint32_t rest = mant & 0x1fff;
	if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
		h++;
	return (uint16_t)(sign | h);
}

float mfs_bf16_to_float(uint16_t b)
{
	uint32_t bits = (uint32_t)b << 16;
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

uint16_t mfs_float_to_bf16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((x >> 16) | 0x40);
	x += 0x7fff + ((x >> 16) & 1);
	return (uint16_t)(x >> 16);
}

double mfs_dtype_load_f64(mfs_dtype dt, const void *p, int64_t i)
{
	switch (dt) {
	case MFS_DT_FLOAT: return ((const float *)p)[i];
	case MFS_DT_DOUBLE: return ((const double *)p)[i];
	case MFS_DT_FLOAT16: return mfs_half_to_float(((const uint16_t *)p)[i]);
	case MFS_DT_BFLOAT16: return mfs_bf16_to_float(((const uint16_t *)p)[i]);
	case MFS_DT_UINT8: return ((const uint8_t *)p)[i];
	case MFS_DT_INT8: return ((const int8_t *)p)[i];
	case MFS_DT_UINT16: return ((const uint16_t *)p)[i];
	case MFS_DT_INT16: return ((const int16_t *)p)[i];
	case MFS_DT_INT32: return ((const int32_t *)p)[i];
	case MFS_DT_INT64: return (double)((const int64_t *)p)[i];
	case MFS_DT_UINT32: return ((const uint32_t *)p)[i];
	case MFS_DT_UINT64: return (double)((const uint64_t *)p)[i];
	case MFS_DT_BOOL: return ((const uint8_t *)p)[i] ? 1 : 0;
	default: return 0;
	}
}

double mfs_tensor_get_f64(const mfs_tensor *t, int64_t i)
{
	return mfs_dtype_load_f64(t->dtype, t->data, i);
}

int64_t mfs_tensor_get_i64(const mfs_tensor *t, int64_t i)
{
	const void *p = t->data;
	switch (t->dtype) {
	case MFS_DT_INT64: return ((const int64_t *)p)[i];
	case MFS_DT_INT32: return ((const int32_t *)p)[i];
	case MFS_DT_UINT64: return (int64_t)((const uint64_t *)p)[i];
	case MFS_DT_UINT32: return ((const uint32_t *)p)[i];
	case MFS_DT_INT16: return ((const int16_t *)p)[i];
	case MFS_DT_UINT16: return ((const uint16_t *)p)[i];
	case MFS_DT_INT8: return ((const int8_t *)p)[i];
	case MFS_DT_UINT8: return ((const uint8_t *)p)[i];
	case MFS_DT_BOOL: return ((const uint8_t *)p)[i] ? 1 : 0;
	default: return (int64_t)mfs_tensor_get_f64(t, i);
	}
}

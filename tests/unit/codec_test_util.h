/* codec_test_util.h - helpers shared by the test_codec_*.c unit tests. */
#ifndef CODEC_TEST_UTIL_H
#define CODEC_TEST_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "codec.h"

/* Every datatype the SPEC lists, plus the other plain ones we carry. */
static const mfs_dtype all_dtypes[] = {
	MFS_DT_BOOL, MFS_DT_UINT8, MFS_DT_INT8, MFS_DT_UINT16, MFS_DT_INT16,
	MFS_DT_INT32, MFS_DT_UINT32, MFS_DT_INT64, MFS_DT_UINT64,
	MFS_DT_FLOAT16, MFS_DT_FLOAT, MFS_DT_DOUBLE, MFS_DT_BFLOAT16,
};
#define N_ALL_DTYPES (sizeof(all_dtypes) / sizeof(all_dtypes[0]))

static inline mfs_tensor_spec spec_of(const char *name, mfs_dtype dt, int rank,
				      const int64_t *dims)
{
	mfs_tensor_spec s;
	memset(&s, 0, sizeof(s));
	s.name = name;
	s.dtype = dt;
	s.rank = rank;
	for (int i = 0; i < rank && i < MFS_MAX_RANK; i++)
		s.dims[i] = dims[i];
	return s;
}

static inline mfs_shape shape_of(int rank, const int64_t *dims)
{
	mfs_shape s;
	memset(&s, 0, sizeof(s));
	s.rank = rank;
	for (int i = 0; i < rank; i++)
		s.dims[i] = dims[i];
	return s;
}

/* Values that exercise each type: extremes, zero, signs, fractions. */
static inline void fill_pattern(mfs_tensor *t)
{
	int64_t n = mfs_shape_numel(&t->shape);
	for (int64_t i = 0; i < n; i++) {
		int k = (int)(i % 7);
		switch (t->dtype) {
		case MFS_DT_BOOL: ((uint8_t *)t->data)[i] = (uint8_t)(i % 3 == 1); break;
		case MFS_DT_UINT8: { static const uint8_t v[] = {0, 1, 255, 128, 7, 200, 42}; ((uint8_t *)t->data)[i] = v[k]; break; }
		case MFS_DT_INT8: { static const int8_t v[] = {0, -1, 127, -128, 7, -100, 42}; ((int8_t *)t->data)[i] = v[k]; break; }
		case MFS_DT_UINT16: { static const uint16_t v[] = {0, 1, 65535, 32768, 7, 1000, 42}; ((uint16_t *)t->data)[i] = v[k]; break; }
		case MFS_DT_INT16: { static const int16_t v[] = {0, -1, 32767, -32768, 7, -1000, 42}; ((int16_t *)t->data)[i] = v[k]; break; }
		case MFS_DT_INT32: { static const int32_t v[] = {0, -1, INT32_MAX, INT32_MIN, 7, -100000, 42}; ((int32_t *)t->data)[i] = v[k]; break; }
		case MFS_DT_UINT32: { static const uint32_t v[] = {0, 1, UINT32_MAX, 1u << 31, 7, 100000, 42}; ((uint32_t *)t->data)[i] = v[k]; break; }
		case MFS_DT_INT64: { static const int64_t v[] = {0, -1, INT64_MAX, INT64_MIN, 7, -(1LL << 53) - 1, 42}; ((int64_t *)t->data)[i] = v[k]; break; }
		case MFS_DT_UINT64: { static const uint64_t v[] = {0, 1, INT64_MAX, (1ULL << 53) + 1, 7, 100000, 42}; ((uint64_t *)t->data)[i] = v[k]; break; }
		case MFS_DT_FLOAT16: { static const float v[] = {0, -1.5f, 65504, 0.1f, 6.0e-8f, -0.0f, 3.140625f}; ((uint16_t *)t->data)[i] = mfs_float_to_half(v[k]); break; }
		case MFS_DT_BFLOAT16: { static const float v[] = {0, -1.5f, 3.0e38f, 0.1f, 1e-30f, -0.0f, 3.140625f}; ((uint16_t *)t->data)[i] = mfs_float_to_bf16(v[k]); break; }
		case MFS_DT_FLOAT: { static const float v[] = {0, -1.5f, 3.4028235e38f, 0.1f, 1.4e-45f, -0.0f, 16777217.0f}; ((float *)t->data)[i] = v[k] + (float)i * (k == 6); break; }
		case MFS_DT_DOUBLE: { static const double v[] = {0, -1.5, 1.7976931348623157e308, 0.1, 4.9e-324, -0.0, 1.0 / 3}; ((double *)t->data)[i] = v[k]; break; }
		default: break;
		}
	}
}

static inline void assert_same_tensor(const mfs_tensor *a, const mfs_tensor *b)
{
	assert_int_equal(a->dtype, b->dtype);
	assert_true(mfs_shape_equal(&a->shape, &b->shape));
	assert_int_equal(a->nbytes, b->nbytes);
	if (a->nbytes)
		assert_memory_equal(a->data, b->data, a->nbytes);
}

/* Decode that must succeed; shows the error if it does not. */
static inline void decode_ok(mfs_format fmt, const void *buf, size_t len,
			     const mfs_tensor_spec *spec, mfs_tensor *t)
{
	mfs_error err;
	mfs_error_clear(&err);
	int rc = mfs_tensor_decode(fmt, buf, len, spec, t, &err);
	if (rc)
		print_error("unexpected decode error: %s\n", err.msg);
	assert_int_equal(rc, 0);
}

/* Decode that must fail with -code and a message naming the tensor and
 * containing want. */
static inline void decode_fails(mfs_format fmt, const void *buf, size_t len,
				const mfs_tensor_spec *spec, int code,
				const char *want)
{
	mfs_error err;
	mfs_tensor t;
	char prefix[128];

	mfs_error_clear(&err);
	int rc = mfs_tensor_decode(fmt, buf, len, spec, &t, &err);
	if (rc != -code || !strstr(err.msg, want))
		print_error("rc %d, message: %s (wanted '%s')\n", rc, err.msg, want);
	assert_int_equal(rc, -code);
	assert_non_null(strstr(err.msg, want));
	snprintf(prefix, sizeof(prefix), "input '%s': ", spec->name);
	assert_int_equal(strncmp(err.msg, prefix, strlen(prefix)), 0);
	assert_null(strchr(err.msg, '\n'));
	/* A failed decode leaves nothing to free. */
	assert_null(t.data);
	assert_false(t.owns_data);
}

static inline void decode_str_fails(mfs_format fmt, const char *s,
				    const mfs_tensor_spec *spec, int code,
				    const char *want)
{
	decode_fails(fmt, s, strlen(s), spec, code, want);
}

static inline char *encode_ok(mfs_format fmt, const mfs_tensor *t,
			      const char *name, size_t *len)
{
	mfs_error err;
	char *buf = NULL;
	mfs_error_clear(&err);
	int rc = mfs_tensor_encode(fmt, t, name, &buf, len, &err);
	if (rc)
		print_error("unexpected encode error: %s\n", err.msg);
	assert_int_equal(rc, 0);
	assert_non_null(buf);
	return buf;
}

#endif

/* test_codec_json.c - KServe tensor objects and nested arrays. */
#include "codec_test_util.h"

static const int64_t var[] = { -1 };

static void test_roundtrip_all_dtypes(void **state)
{
	(void)state;
	static const int64_t dims[] = { 2, 7 };
	mfs_shape sh = shape_of(2, dims);
	for (size_t d = 0; d < N_ALL_DTYPES; d++) {
		mfs_tensor t, back;
		mfs_error err;
		size_t len;
		assert_int_equal(mfs_tensor_alloc(&t, all_dtypes[d], &sh, &err), 0);
		fill_pattern(&t);
		char *buf = encode_ok(MFS_FMT_JSON, &t, "OUT", &len);
		assert_int_equal(strlen(buf), len);
		static const int64_t vdims[] = { -1, 7 };
		mfs_tensor_spec spec = spec_of("x", all_dtypes[d], 2, vdims);
		decode_ok(MFS_FMT_JSON, buf, len, &spec, &back);
		assert_same_tensor(&t, &back);
		free(buf);
		mfs_tensor_release(&t);
		mfs_tensor_release(&back);
	}
}

static void test_format(void **state)
{
	(void)state;
	static const int64_t d[] = { 1, 4 };
	mfs_shape sh = shape_of(2, d);
	mfs_tensor t;
	mfs_error err;
	size_t len;
	assert_int_equal(mfs_tensor_alloc(&t, MFS_DT_FLOAT, &sh, &err), 0);
	float *f = t.data;
	f[0] = 0.1f; f[1] = NAN; f[2] = -INFINITY; f[3] = -0.0f;
	char *buf = encode_ok(MFS_FMT_JSON, &t, "OUT\"PUT0", &len);
	assert_string_equal(buf, "{\"name\":\"OUT\\\"PUT0\",\"shape\":[1,4],\"datatype\":\"FP32\","
				 "\"data\":[0.100000001,\"NaN\",\"-Infinity\",-0.0]}\n");
	/* ... and back, NaN and the sign of zero included. */
	mfs_tensor back;
	mfs_tensor_spec spec = spec_of("x", MFS_DT_FLOAT, 2, d);
	decode_ok(MFS_FMT_JSON, buf, len, &spec, &back);
	assert_true(isnan(((float *)back.data)[1]));
	assert_true(signbit(((float *)back.data)[3]));
	mfs_tensor_release(&back);
	free(buf);
	mfs_tensor_release(&t);

	mfs_shape sc = shape_of(0, NULL);
	assert_int_equal(mfs_tensor_alloc(&t, MFS_DT_BOOL, &sc, &err), 0);
	*(uint8_t *)t.data = 1;
	buf = encode_ok(MFS_FMT_JSON, &t, NULL, &len);
	assert_string_equal(buf, "{\"shape\":[],\"datatype\":\"BOOL\",\"data\":[true]}\n");
	free(buf);
	mfs_tensor_release(&t);

	/* FP16 shows as numbers. */
	static const int64_t d2[] = { 2 };
	mfs_shape s2 = shape_of(1, d2);
	assert_int_equal(mfs_tensor_alloc(&t, MFS_DT_FLOAT16, &s2, &err), 0);
	((uint16_t *)t.data)[0] = mfs_float_to_half(1.5f);
	((uint16_t *)t.data)[1] = mfs_float_to_half(-2.0f);
	buf = encode_ok(MFS_FMT_JSON, &t, "h", &len);
	assert_string_equal(buf, "{\"name\":\"h\",\"shape\":[2],\"datatype\":\"FP16\",\"data\":[1.5,-2]}\n");
	free(buf);
	mfs_tensor_release(&t);
}

static void test_inputs(void **state)
{
	(void)state;
	mfs_tensor t;
	static const int64_t d2x3[] = { 2, 3 }, dv3[] = { -1, 3 };
	mfs_tensor_spec f = spec_of("x", MFS_DT_FLOAT, 2, d2x3);
	/* Flat data with a shape; nested data with a shape; nested without. */
	const char *flat = "{\"name\":\"ignored\",\"shape\":[2,3],\"datatype\":\"FP32\","
			   "\"data\":[1,2,3,4,5,6.5],\"parameters\":{}}";
	decode_ok(MFS_FMT_JSON, flat, strlen(flat), &f, &t);
	assert_true(((float *)t.data)[5] == 6.5f);
	mfs_tensor_release(&t);
	const char *nested = "{\"shape\":[2,3],\"datatype\":\"FP32\",\"data\":[[1,2,3],[4,5,6]]}";
	decode_ok(MFS_FMT_JSON, nested, strlen(nested), &f, &t);
	assert_true(((float *)t.data)[3] == 4.0f);
	mfs_tensor_release(&t);
	const char *noshape = "{\"data\":[[1,2,3],[4,5,6]]}";
	decode_ok(MFS_FMT_JSON, noshape, strlen(noshape), &f, &t);
	mfs_tensor_release(&t);
	/* Bare nested array; shape from nesting. */
	mfs_tensor_spec fv = spec_of("x", MFS_DT_FLOAT, 2, dv3);
	const char *bare = " [[1, 2, 3], [4, 5, 6], [7, 8, 9e-3]]\n";
	decode_ok(MFS_FMT_JSON, bare, strlen(bare), &fv, &t);
	assert_int_equal(t.shape.dims[0], 3);
	assert_true(((float *)t.data)[8] == 9e-3f);
	mfs_tensor_release(&t);
	/* Scalars and empty arrays. */
	mfs_tensor_spec sc = spec_of("x", MFS_DT_INT32, 0, NULL);
	decode_ok(MFS_FMT_JSON, "42", 2, &sc, &t);
	assert_int_equal(*(int32_t *)t.data, 42);
	mfs_tensor_release(&t);
	mfs_tensor_spec ev = spec_of("x", MFS_DT_FLOAT, 2, dv3);
	const char *empty = "{\"shape\":[0,3],\"data\":[]}";
	decode_ok(MFS_FMT_JSON, empty, strlen(empty), &ev, &t);
	assert_int_equal(t.shape.dims[0], 0);
	mfs_tensor_release(&t);
	/* Empty with huge other dims (order must not matter). */
	mfs_tensor_spec any = spec_of("x", MFS_DT_FLOAT, -1, NULL);
	const char *hugeempty = "{\"shape\":[4611686018427387904,4,0],\"data\":[]}";
	decode_ok(MFS_FMT_JSON, hugeempty, strlen(hugeempty), &any, &t);
	assert_int_equal(t.nbytes, 0);
	mfs_tensor_release(&t);
	/* BOOL: true/false and 0/1; NaN strings for floats. */
	mfs_tensor_spec b = spec_of("x", MFS_DT_BOOL, 1, var);
	decode_ok(MFS_FMT_JSON, "[true,false,1,0]", 16, &b, &t);
	assert_memory_equal(t.data, "\x01\x00\x01\x00", 4);
	mfs_tensor_release(&t);
	mfs_tensor_spec fl = spec_of("x", MFS_DT_DOUBLE, 1, var);
	const char *nf = "[\"nan\",\"Infinity\",\"-inf\",\"+INF\",1e308]";
	decode_ok(MFS_FMT_JSON, nf, strlen(nf), &fl, &t);
	assert_true(isnan(((double *)t.data)[0]));
	assert_true(((double *)t.data)[2] < 0 && isinf(((double *)t.data)[2]));
	mfs_tensor_release(&t);
	/* Integers: exact 64-bit; 3.0 counts as an integer. */
	mfs_tensor_spec i = spec_of("x", MFS_DT_INT64, 1, var);
	const char *ints = "[9223372036854775807,-9223372036854775808,3.0]";
	decode_ok(MFS_FMT_JSON, ints, strlen(ints), &i, &t);
	assert_true(((int64_t *)t.data)[0] == INT64_MAX);
	assert_true(((int64_t *)t.data)[1] == INT64_MIN);
	assert_int_equal(((int64_t *)t.data)[2], 3);
	mfs_tensor_release(&t);
}

static void test_errors(void **state)
{
	(void)state;
	static const int64_t d16[] = { 16 };
	mfs_tensor_spec f16 = spec_of("INPUT0", MFS_DT_FLOAT, 1, d16);
	decode_str_fails(MFS_FMT_JSON, "{\"shape\":[4],\"datatype\":\"INT64\",\"data\":[1,2,3,4]}",
			 &f16, EINVAL, "input 'INPUT0': expected FP32 [16], got INT64 [4]");
	decode_str_fails(MFS_FMT_JSON, "[1,2", &f16, EINVAL, "invalid JSON at line 1");
	decode_str_fails(MFS_FMT_JSON, "", &f16, EINVAL, "invalid JSON");
	decode_str_fails(MFS_FMT_JSON, "[1,NaN]", &f16, EINVAL, "invalid JSON");
	decode_str_fails(MFS_FMT_JSON, "{\"data\":[1],\"data\":[2]}", &f16, EINVAL, "invalid JSON");
	decode_str_fails(MFS_FMT_JSON, "{\"shape\":[1]}", &f16, EINVAL, "no \"data\"");
	decode_str_fails(MFS_FMT_JSON, "{\"data\":[1],\"contents\":1}", &f16, EINVAL,
			 "unknown key \"contents\"");
	decode_str_fails(MFS_FMT_JSON, "{\"data\":[1],\"datatype\":\"FLOAT\"}", &f16, EINVAL,
			 "unknown datatype \"FLOAT\"");
	decode_str_fails(MFS_FMT_JSON, "{\"data\":[1],\"datatype\":7}", &f16, EINVAL,
			 "\"datatype\" is not a string");
	decode_str_fails(MFS_FMT_JSON, "{\"data\":[\"a\"],\"datatype\":\"BYTES\"}", &f16, EINVAL,
			 "\"datatype\" is BYTES, but the model expects FP32");
	decode_str_fails(MFS_FMT_JSON, "{\"data\":[1,2,3],\"shape\":[2,2]}", &f16, EINVAL,
			 "\"shape\" [2,2] holds 4 values, but \"data\" [3] has 3");
	decode_str_fails(MFS_FMT_JSON, "{\"data\":[1],\"shape\":[-1]}", &f16, EINVAL,
			 "non-negative integers");
	decode_str_fails(MFS_FMT_JSON, "{\"data\":[1],\"shape\":\"1\"}", &f16, EINVAL,
			 "\"shape\" is not an array");
	decode_str_fails(MFS_FMT_JSON, "{\"data\":[1],\"shape\":[1,1,1,1,1,1,1,1,1]}", &f16, EINVAL,
			 "more than 8 dims");
	decode_str_fails(MFS_FMT_JSON, "{\"data\":[],\"shape\":[4294967296,4294967296,4294967296]}",
			 &f16, EINVAL, "too large");
	decode_str_fails(MFS_FMT_JSON, "[[1,2],[3]]", &f16, EINVAL, "not a regular nested array");
	decode_str_fails(MFS_FMT_JSON, "[[1,2],3]", &f16, EINVAL, "not a regular nested array");
	decode_str_fails(MFS_FMT_JSON, "[1,[2]]", &f16, EINVAL, "not a regular nested array");
	decode_str_fails(MFS_FMT_JSON, "[[[[[[[[[1]]]]]]]]]", &f16, EINVAL, "deeper than 8");
	decode_str_fails(MFS_FMT_JSON, "[1,null]", &f16, EINVAL, "value at index 1 is not a number (null)");
	decode_str_fails(MFS_FMT_JSON, "[1,{}]", &f16, EINVAL, "(an object)");
	decode_str_fails(MFS_FMT_JSON, "[1,\"two\"]", &f16, EINVAL, "string value at index 1 is not a number");
	decode_str_fails(MFS_FMT_JSON, "[true]", &f16, EINVAL, "value true at index 0 is not a number");
	decode_str_fails(MFS_FMT_JSON, "null", &f16, EINVAL, "expected a tensor object or a nested array");
	decode_str_fails(MFS_FMT_JSON, "[1e39]", &f16, EINVAL, "value 1e+39 at index 0 is too large for FP32");
	mfs_tensor_spec i64 = spec_of("x", MFS_DT_INT64, 1, var);
	decode_str_fails(MFS_FMT_JSON, "[1,3.5]", &i64, EINVAL, "value 3.5 at index 1 is not an integer, as INT64 needs");
	decode_str_fails(MFS_FMT_JSON, "[\"NaN\"]", &i64, EINVAL, "is not an integer");
	decode_str_fails(MFS_FMT_JSON, "[1e19]", &i64, EINVAL, "out of range for INT64");
	/* Past 64 bits: read as a double, then refused as out of range. */
	decode_str_fails(MFS_FMT_JSON, "[99999999999999999999]", &i64, EINVAL, "out of range for INT64");
	mfs_tensor_spec u8 = spec_of("x", MFS_DT_UINT8, 1, var);
	decode_str_fails(MFS_FMT_JSON, "{\"datatype\":\"UINT8\",\"data\":[1,300]}", &u8, EINVAL,
			 "value 300 at index 1 is out of range for UINT8 (0..255)");
	mfs_tensor_spec b = spec_of("x", MFS_DT_BOOL, 1, var);
	decode_str_fails(MFS_FMT_JSON, "[true,2]", &b, EINVAL, "value 2 at index 1 is not a BOOL");
	mfs_tensor_spec nodt = spec_of("x", MFS_DT_UNDEFINED, 1, var);
	decode_str_fails(MFS_FMT_JSON, "[1]", &nodt, EINVAL, "no datatype");
}

static void test_encode_bad_name(void **state)
{
	(void)state;
	static const int64_t d1[] = { 1 };
	mfs_shape sh = shape_of(1, d1);
	mfs_tensor t;
	mfs_error err;
	char *buf;
	size_t len;
	assert_int_equal(mfs_tensor_alloc(&t, MFS_DT_FLOAT, &sh, &err), 0);
	assert_int_equal(mfs_tensor_encode(MFS_FMT_JSON, &t, "bad\xff", &buf, &len, &err), -EINVAL);
	assert_null(buf);
	assert_non_null(strstr(err.msg, "UTF-8"));
	mfs_tensor_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_all_dtypes),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_inputs),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_encode_bad_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

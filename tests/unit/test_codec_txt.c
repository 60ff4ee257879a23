/* test_codec_txt.c - text tensors: parsing into the model's type. */
#include "codec_test_util.h"

static const int64_t var[] = { -1 };

/* Every datatype: text out, text in, the same bits (NaN-free patterns). */
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
		char *buf = encode_ok(MFS_FMT_TXT, &t, "x", &len);
		assert_int_equal(strlen(buf), len);
		/* Last dim per line. */
		int lines = 0;
		for (size_t i = 0; i < len; i++)
			lines += buf[i] == '\n';
		assert_int_equal(lines, 2);
		static const int64_t vdims[] = { -1, 7 };
		mfs_tensor_spec spec = spec_of("x", all_dtypes[d], 2, vdims);
		decode_ok(MFS_FMT_TXT, buf, len, &spec, &back);
		assert_same_tensor(&t, &back);
		free(buf);
		mfs_tensor_release(&t);
		mfs_tensor_release(&back);
	}
}

static void test_format(void **state)
{
	(void)state;
	static const int64_t d[] = { 2, 3 };
	mfs_shape sh = shape_of(2, d);
	mfs_tensor t;
	mfs_error err;
	size_t len;
	assert_int_equal(mfs_tensor_alloc(&t, MFS_DT_FLOAT, &sh, &err), 0);
	float *f = t.data;
	f[0] = 1; f[1] = 0.1f; f[2] = -2.5f; f[3] = 1e-20f; f[4] = NAN; f[5] = -INFINITY;
	char *buf = encode_ok(MFS_FMT_TXT, &t, "x", &len);
	assert_string_equal(buf, "1 0.100000001 -2.5\n9.99999968e-21 nan -inf\n");
	free(buf);
	mfs_tensor_release(&t);

	assert_int_equal(mfs_tensor_alloc(&t, MFS_DT_BOOL, &sh, &err), 0);
	((uint8_t *)t.data)[1] = 1;
	buf = encode_ok(MFS_FMT_TXT, &t, "x", &len);
	assert_string_equal(buf, "0 1 0\n0 0 0\n");
	free(buf);
	mfs_tensor_release(&t);

	/* Scalar: one line.  Empty: nothing. */
	mfs_shape sc = shape_of(0, NULL);
	assert_int_equal(mfs_tensor_alloc(&t, MFS_DT_INT64, &sc, &err), 0);
	*(int64_t *)t.data = INT64_MIN;
	buf = encode_ok(MFS_FMT_TXT, &t, "x", &len);
	assert_string_equal(buf, "-9223372036854775808\n");
	free(buf);
	mfs_tensor_release(&t);
	static const int64_t z[] = { 0, 4 };
	mfs_shape zs = shape_of(2, z);
	assert_int_equal(mfs_tensor_alloc(&t, MFS_DT_INT64, &zs, &err), 0);
	buf = encode_ok(MFS_FMT_TXT, &t, "x", &len);
	assert_int_equal(len, 0);
	assert_string_equal(buf, "");
	free(buf);
	mfs_tensor_release(&t);
}

static void test_parse(void **state)
{
	(void)state;
	mfs_tensor t;
	static const int64_t d4[] = { 4 }, d2x2[] = { 2, -1 };
	mfs_tensor_spec f = spec_of("x", MFS_DT_FLOAT, 1, d4);
	decode_ok(MFS_FMT_TXT, "1, 2,3\n\n  -4.5e0\r\n", 18, &f, &t);
	assert_true(((float *)t.data)[3] == -4.5f);
	assert_true(((float *)t.data)[1] == 2.0f);
	mfs_tensor_release(&t);
	/* nan / inf for floats; -0 keeps its sign. */
	decode_ok(MFS_FMT_TXT, "nan inf -inf -0", 15, &f, &t);
	assert_true(isnan(((float *)t.data)[0]));
	assert_true(isinf(((float *)t.data)[1]) && ((float *)t.data)[1] > 0);
	assert_true(signbit(((float *)t.data)[3]));
	mfs_tensor_release(&t);
	/* Integers exact over all 64 bits; 3.0 is an integer. */
	mfs_tensor_spec i = spec_of("x", MFS_DT_INT64, 2, d2x2);
	const char *big = "9223372036854775807 -9223372036854775808\n3.0 -7";
	decode_ok(MFS_FMT_TXT, big, strlen(big), &i, &t);
	assert_int_equal(t.shape.dims[1], 2);
	assert_true(((int64_t *)t.data)[0] == INT64_MAX);
	assert_true(((int64_t *)t.data)[1] == INT64_MIN);
	assert_int_equal(((int64_t *)t.data)[2], 3);
	mfs_tensor_release(&t);
	mfs_tensor_spec u = spec_of("x", MFS_DT_UINT64, 1, var);
	decode_ok(MFS_FMT_TXT, "18446744073709551615", 20, &u, &t);
	assert_true(((uint64_t *)t.data)[0] == UINT64_MAX);
	mfs_tensor_release(&t);
	mfs_tensor_spec b = spec_of("x", MFS_DT_BOOL, 1, var);
	decode_ok(MFS_FMT_TXT, "true False 1 0 1.0", 18, &b, &t);
	assert_memory_equal(t.data, "\x01\x00\x01\x00\x01", 5);
	mfs_tensor_release(&t);
	/* FP16: values round to nearest; 65504 is the largest. */
	mfs_tensor_spec h = spec_of("x", MFS_DT_FLOAT16, 1, var);
	decode_ok(MFS_FMT_TXT, "65504 0.1", 9, &h, &t);
	assert_int_equal(((uint16_t *)t.data)[0], 0x7bff);
	assert_int_equal(((uint16_t *)t.data)[1], 0x2e66);
	mfs_tensor_release(&t);
	/* Empty input fills a variable dim with 0. */
	mfs_tensor_spec e = spec_of("x", MFS_DT_FLOAT, 1, var);
	decode_ok(MFS_FMT_TXT, " \n", 2, &e, &t);
	assert_int_equal(t.shape.dims[0], 0);
	mfs_tensor_release(&t);
}

static void test_errors(void **state)
{
	(void)state;
	static const int64_t d4[] = { 4 }, d3[] = { -1, 3 };
	mfs_tensor_spec f4 = spec_of("INPUT0", MFS_DT_FLOAT, 1, d4);
	decode_str_fails(MFS_FMT_TXT, "1 2 x 4", &f4, EINVAL, "'x' at index 2 is not a number");
	decode_str_fails(MFS_FMT_TXT, "1 2 3", &f4, EINVAL, "3 values given, but shape [4] needs 4");
	decode_str_fails(MFS_FMT_TXT, "1 2 3 4 5", &f4, EINVAL, "5 values given");
	decode_str_fails(MFS_FMT_TXT, "1 2 3 1e39", &f4, EINVAL, "value 1e+39 at index 3 is too large for FP32");
	decode_str_fails(MFS_FMT_TXT, "1 2 3 0x", &f4, EINVAL, "'0x' at index 3 is not a number");
	decode_str_fails(MFS_FMT_TXT, "1 2 3 [4]", &f4, EINVAL, "not a number");
	decode_fails(MFS_FMT_TXT, "1 2 3 4\0", 8, &f4, EINVAL, "'4?' at index 3 is not a number");
	char longtok[200];
	memset(longtok, '1', sizeof(longtok) - 1);
	longtok[sizeof(longtok) - 1] = '\0';
	mfs_tensor_spec fv = spec_of("INPUT0", MFS_DT_FLOAT, 1, var);
	decode_str_fails(MFS_FMT_TXT, longtok, &fv, EINVAL, "...' at index 0 is not a number");
	mfs_tensor_spec s3 = spec_of("x", MFS_DT_INT32, 2, d3);
	decode_str_fails(MFS_FMT_TXT, "1 2 3 4", &s3, EINVAL, "4 values given, not a multiple of 3");
	decode_str_fails(MFS_FMT_TXT, "1 2 3 4 5 2147483648", &s3, EINVAL,
			 "value 2147483648 at index 5 is out of range for INT32 (-2147483648..2147483647)");
	mfs_tensor_spec i64 = spec_of("x", MFS_DT_INT64, 1, var);
	decode_str_fails(MFS_FMT_TXT, "1 3.5", &i64, EINVAL, "value 3.5 at index 1 is not an integer, as INT64 needs");
	decode_str_fails(MFS_FMT_TXT, "9223372036854775808", &i64, EINVAL, "out of range for INT64");
	decode_str_fails(MFS_FMT_TXT, "1e19", &i64, EINVAL, "out of range for INT64");
	decode_str_fails(MFS_FMT_TXT, "nan", &i64, EINVAL, "is not an integer");
	decode_str_fails(MFS_FMT_TXT, "inf", &i64, EINVAL, "is not an integer");
	mfs_tensor_spec u8 = spec_of("x", MFS_DT_UINT8, 1, var);
	decode_str_fails(MFS_FMT_TXT, "255 300", &u8, EINVAL, "value 300 at index 1 is out of range for UINT8 (0..255)");
	decode_str_fails(MFS_FMT_TXT, "-1", &u8, EINVAL, "value -1 at index 0 is out of range for UINT8");
	mfs_tensor_spec u64 = spec_of("x", MFS_DT_UINT64, 1, var);
	decode_str_fails(MFS_FMT_TXT, "18446744073709551616", &u64, EINVAL, "out of range for UINT64");
	decode_str_fails(MFS_FMT_TXT, "-1", &u64, EINVAL, "out of range for UINT64");
	mfs_tensor_spec i8 = spec_of("x", MFS_DT_INT8, 1, var);
	decode_str_fails(MFS_FMT_TXT, "-129", &i8, EINVAL, "out of range for INT8 (-128..127)");
	mfs_tensor_spec b = spec_of("x", MFS_DT_BOOL, 1, var);
	decode_str_fails(MFS_FMT_TXT, "1 2", &b, EINVAL, "value 2 at index 1 is not a BOOL");
	decode_str_fails(MFS_FMT_TXT, "0.5", &b, EINVAL, "is not a BOOL");
	decode_str_fails(MFS_FMT_TXT, "yes", &b, EINVAL, "'yes' at index 0 is not a number");
	mfs_tensor_spec h = spec_of("x", MFS_DT_FLOAT16, 1, var);
	decode_str_fails(MFS_FMT_TXT, "70000", &h, EINVAL, "too large for FP16");
	mfs_tensor_spec bf = spec_of("x", MFS_DT_BFLOAT16, 1, var);
	decode_str_fails(MFS_FMT_TXT, "1e39", &bf, EINVAL, "too large for BF16");
	mfs_tensor_spec f64 = spec_of("x", MFS_DT_DOUBLE, 1, var);
	decode_str_fails(MFS_FMT_TXT, "1e999", &f64, EINVAL, "value 1e999 at index 0 is too large for FP64");
	decode_str_fails(MFS_FMT_TXT, "-1e999", &i64, EINVAL, "too large for INT64");
	mfs_tensor_spec nodt = spec_of("x", MFS_DT_UNDEFINED, 1, var);
	decode_str_fails(MFS_FMT_TXT, "1", &nodt, EINVAL, "no datatype");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_all_dtypes),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_codec_raw.c - raw element bytes: shape from the spec. */
#include "codec_test_util.h"

static void test_roundtrip_all_dtypes(void **state)
{
	(void)state;
	static const int64_t dims[] = { 3, 5 };
	static const int64_t var[] = { -1, 5 };
	mfs_shape sh = shape_of(2, dims);
	for (size_t d = 0; d < N_ALL_DTYPES; d++) {
		mfs_tensor t, back;
		mfs_error err;
		size_t len, len2;
		assert_int_equal(mfs_tensor_alloc(&t, all_dtypes[d], &sh, &err), 0);
		fill_pattern(&t);
		char *buf = encode_ok(MFS_FMT_RAW, &t, "x", &len);
		assert_int_equal(len, t.nbytes);
		assert_memory_equal(buf, t.data, len);
		/* Fixed shape, and the leading dim inferred. */
		mfs_tensor_spec fixed = spec_of("x", all_dtypes[d], 2, dims);
		decode_ok(MFS_FMT_RAW, buf, len, &fixed, &back);
		assert_same_tensor(&t, &back);
		mfs_tensor_release(&back);
		mfs_tensor_spec inferred = spec_of("x", all_dtypes[d], 2, var);
		decode_ok(MFS_FMT_RAW, buf, len, &inferred, &back);
		assert_same_tensor(&t, &back);
		char *buf2 = encode_ok(MFS_FMT_RAW, &back, "x", &len2);
		assert_int_equal(len, len2);
		assert_memory_equal(buf, buf2, len);
		free(buf);
		free(buf2);
		mfs_tensor_release(&t);
		mfs_tensor_release(&back);
	}
}

static void test_shapes(void **state)
{
	(void)state;
	float v[12] = { 0 };
	mfs_tensor t;
	static const int64_t mid[] = { 2, -1, 3 };
	mfs_tensor_spec s = spec_of("x", MFS_DT_FLOAT, 3, mid);
	decode_ok(MFS_FMT_RAW, v, sizeof(v), &s, &t);
	assert_int_equal(t.shape.dims[1], 2);
	mfs_tensor_release(&t);
	/* Any rank: one dimension. */
	mfs_tensor_spec any = spec_of("x", MFS_DT_FLOAT, -1, NULL);
	decode_ok(MFS_FMT_RAW, v, sizeof(v), &any, &t);
	assert_int_equal(t.shape.rank, 1);
	assert_int_equal(t.shape.dims[0], 12);
	mfs_tensor_release(&t);
	/* Scalar. */
	mfs_tensor_spec sc = spec_of("x", MFS_DT_FLOAT, 0, NULL);
	decode_ok(MFS_FMT_RAW, v, 4, &sc, &t);
	assert_int_equal(t.shape.rank, 0);
	mfs_tensor_release(&t);
	/* Empty with a variable dim. */
	static const int64_t var[] = { -1 };
	mfs_tensor_spec e = spec_of("x", MFS_DT_INT64, 1, var);
	decode_ok(MFS_FMT_RAW, "", 0, &e, &t);
	assert_int_equal(t.shape.dims[0], 0);
	assert_null(t.data);
	size_t len;
	char *buf = encode_ok(MFS_FMT_RAW, &t, "x", &len);
	assert_int_equal(len, 0);
	free(buf);
	mfs_tensor_release(&t);
}

static void test_errors(void **state)
{
	(void)state;
	char v[64] = { 0 };
	static const int64_t d16[] = { 16 }, var[] = { -1 }, two[] = { -1, -1 },
			     zero[] = { 0, -1 }, var3[] = { -1, 3 };
	mfs_tensor_spec s16 = spec_of("INPUT0", MFS_DT_FLOAT, 1, d16);
	decode_fails(MFS_FMT_RAW, v, 63, &s16, EINVAL,
		     "63 bytes is not a whole number of FP32 elements (4 bytes each)");
	decode_fails(MFS_FMT_RAW, v, 60, &s16, EINVAL, "15 values given, but shape [16] needs 16");
	mfs_tensor_spec s64 = spec_of("INPUT0", MFS_DT_INT64, 1, var);
	decode_fails(MFS_FMT_RAW, v, 12, &s64, EINVAL, "12 bytes is not a whole number of INT64");
	mfs_tensor_spec stwo = spec_of("x", MFS_DT_FLOAT, 2, two);
	decode_fails(MFS_FMT_RAW, v, 16, &stwo, EINVAL, "more than one variable dim");
	mfs_tensor_spec szero = spec_of("x", MFS_DT_FLOAT, 2, zero);
	decode_fails(MFS_FMT_RAW, v, 16, &szero, EINVAL, "cannot infer");
	static const int64_t huge[] = { INT64_MAX, 4, -1 }, hugezero[] = { INT64_MAX, 0, -1 },
			     hugefixed[] = { INT64_MAX, 4, 0 };
	mfs_tensor_spec sh = spec_of("x", MFS_DT_FLOAT, 3, huge);
	decode_fails(MFS_FMT_RAW, v, 16, &sh, EINVAL, "the expected shape [9223372036854775807,4,-1] is too large");
	mfs_tensor_spec shz = spec_of("x", MFS_DT_FLOAT, 3, hugezero);
	decode_fails(MFS_FMT_RAW, v, 16, &shz, EINVAL, "cannot infer");
	mfs_tensor_spec shf = spec_of("x", MFS_DT_FLOAT, 3, hugefixed);
	mfs_tensor t;
	decode_ok(MFS_FMT_RAW, "", 0, &shf, &t);
	assert_true(t.shape.dims[0] == INT64_MAX);
	mfs_tensor_release(&t);
	mfs_tensor_spec s3 = spec_of("x", MFS_DT_FLOAT, 2, var3);
	decode_fails(MFS_FMT_RAW, v, 16, &s3, EINVAL, "4 values given, not a multiple of 3");
	mfs_tensor_spec nodt = spec_of("x", MFS_DT_UNDEFINED, 1, var);
	decode_fails(MFS_FMT_RAW, v, 16, &nodt, EINVAL, "no datatype");
	mfs_tensor_spec str = spec_of("x", MFS_DT_STRING, 1, var);
	/* strings: Triton's length-prefixed layout (test_codec_string.c) */
	decode_fails(MFS_FMT_RAW, v, 3, &str, EINVAL, "element 0: a length needs 4 bytes");
}

static void test_bool_normalised(void **state)
{
	(void)state;
	static const int64_t var[] = { -1 };
	mfs_tensor_spec b = spec_of("x", MFS_DT_BOOL, 1, var);
	mfs_tensor t;
	decode_ok(MFS_FMT_RAW, "\x00\x02\x01\xff", 4, &b, &t);
	assert_memory_equal(t.data, "\x00\x01\x01\x01", 4);
	mfs_tensor_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_all_dtypes),
		cmocka_unit_test(test_shapes),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_bool_normalised),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

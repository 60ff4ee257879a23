/* test_codec.c - format dispatch, the spec check, shared helpers. */
#include "codec_test_util.h"
#include "codec_impl.h"

static void test_extensions(void **state)
{
	(void)state;
	size_t n = 99;
	assert_int_equal(mfs_format_from_ext("npy"), MFS_FMT_NPY);
	assert_int_equal(mfs_format_from_ext(".json"), MFS_FMT_JSON);
	assert_int_equal(mfs_format_from_ext("txt"), MFS_FMT_TXT);
	assert_int_equal(mfs_format_from_ext("raw"), MFS_FMT_RAW);
	assert_int_equal(mfs_format_from_ext(".pb"), MFS_FMT_PB);
	assert_int_equal(mfs_format_from_ext("bin"), -1);
	assert_int_equal(mfs_format_from_ext(""), -1);
	assert_int_equal(mfs_format_from_ext("NPY"), -1);
	assert_int_equal(mfs_format_from_ext(NULL), -1);
	for (int f = 0; f < MFS_FMT_COUNT; f++)
		assert_int_equal(mfs_format_from_ext(mfs_format_ext((mfs_format)f)), f);
	assert_null(mfs_format_ext(MFS_FMT_COUNT));

	assert_int_equal(mfs_format_split_filename("INPUT0.npy", &n), MFS_FMT_NPY);
	assert_int_equal(n, 6);
	assert_int_equal(mfs_format_split_filename("a.b.txt", &n), MFS_FMT_TXT);
	assert_int_equal(n, 3);
	assert_int_equal(mfs_format_split_filename("x.pb", NULL), MFS_FMT_PB);
	assert_int_equal(mfs_format_split_filename(".npy", &n), -1);
	assert_int_equal(mfs_format_split_filename("INPUT0", &n), -1);
	assert_int_equal(mfs_format_split_filename("INPUT0.", &n), -1);
	assert_int_equal(mfs_format_split_filename("INPUT0.npy.swp", &n), -1);
	assert_int_equal(mfs_format_split_filename(NULL, &n), -1);
}

static void test_check(void **state)
{
	(void)state;
	static const int64_t d4[] = { 4 }, d16[] = { 16 }, dv[] = { -1, 3 };
	mfs_shape s4 = shape_of(1, d4);
	mfs_tensor t;
	mfs_error err;
	assert_int_equal(mfs_tensor_alloc(&t, MFS_DT_INT64, &s4, &err), 0);
	mfs_tensor_spec want = spec_of("INPUT0", MFS_DT_FLOAT, 1, d16);
	assert_int_equal(mfs_tensor_check(&t, &want, &err), -EINVAL);
	assert_string_equal(err.msg, "input 'INPUT0': expected FP32 [16], got INT64 [4]");
	mfs_tensor_spec same = spec_of("INPUT0", MFS_DT_INT64, 1, d4);
	assert_int_equal(mfs_tensor_check(&t, &same, &err), 0);
	mfs_tensor_spec anyshape = spec_of("INPUT0", MFS_DT_FLOAT, -1, NULL);
	assert_int_equal(mfs_tensor_check(&t, &anyshape, &err), -EINVAL);
	assert_string_equal(err.msg, "input 'INPUT0': expected FP32 (any shape), got INT64 [4]");
	mfs_tensor_spec anytype = spec_of("I", MFS_DT_UNDEFINED, 2, dv);
	assert_int_equal(mfs_tensor_check(&t, &anytype, &err), -EINVAL);
	assert_string_equal(err.msg, "input 'I': expected any type [-1,3], got INT64 [4]");
	mfs_tensor_release(&t);
	assert_int_equal(mfs_tensor_check(NULL, &want, &err), -EINVAL);
}

static void test_dispatch_errors(void **state)
{
	(void)state;
	static const int64_t d1[] = { 1 };
	mfs_tensor_spec spec = spec_of("x", MFS_DT_FLOAT, 1, d1);
	mfs_tensor t;
	mfs_error err;
	assert_int_equal(mfs_tensor_decode(MFS_FMT_COUNT, "1", 1, &spec, &t, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "unknown tensor file format"));
	assert_int_equal(mfs_tensor_decode(MFS_FMT_TXT, NULL, 1, &spec, &t, &err), -EINVAL);
	/* No data at all is an empty file. */
	assert_int_equal(mfs_tensor_decode(MFS_FMT_TXT, NULL, 0, &spec, &t, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "0 values given"));
	/* Decoding without a spec: the file's own type and shape. */
	decode_ok(MFS_FMT_JSON, "{\"datatype\":\"INT8\",\"data\":[1,2]}", 32, NULL, &t);
	assert_int_equal(t.dtype, MFS_DT_INT8);
	mfs_tensor_release(&t);

	/* Encoding refuses tensors that are not plain and consistent. */
	mfs_shape s1 = shape_of(1, d1);
	char *buf;
	size_t len;
	assert_int_equal(mfs_tensor_alloc(&t, MFS_DT_FLOAT, &s1, &err), 0);
	t.layout = MFS_LAYOUT_NHWC;
	assert_int_equal(mfs_tensor_encode(MFS_FMT_NPY, &t, "o", &buf, &len, &err), -EINVAL);
	assert_string_equal(err.msg, "output 'o': tensor is not in plain (C order) layout");
	t.layout = MFS_LAYOUT_PLAIN;
	t.nbytes = 8;
	assert_int_equal(mfs_tensor_encode(MFS_FMT_RAW, &t, "o", &buf, &len, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "does not match its shape"));
	t.nbytes = 4;
	assert_int_equal(mfs_tensor_encode(MFS_FMT_COUNT, &t, "o", &buf, &len, &err), -EINVAL);
	t.dtype = MFS_DT_STRING;   /* 4 bytes cannot hold a string element */
	assert_int_equal(mfs_tensor_encode(MFS_FMT_TXT, &t, "o", &buf, &len, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "does not match its shape"));
	t.dtype = MFS_DT_FLOAT;
	mfs_tensor_release(&t);
}

/* Every format that carries the datatype round-trips through the
 * dispatcher for every datatype it can hold. */
static void test_all_formats(void **state)
{
	(void)state;
	static const int64_t dims[] = { 3, 2 }, var[] = { -1, 2 };
	mfs_shape sh = shape_of(2, dims);
	for (int f = 0; f < MFS_FMT_COUNT; f++) {
		for (size_t d = 0; d < N_ALL_DTYPES; d++) {
			mfs_tensor t, back;
			mfs_error err;
			char *buf;
			size_t len;
			if (f == MFS_FMT_NPY && all_dtypes[d] == MFS_DT_BFLOAT16)
				continue;
			assert_int_equal(mfs_tensor_alloc(&t, all_dtypes[d], &sh, &err), 0);
			fill_pattern(&t);
			buf = encode_ok((mfs_format)f, &t, "T", &len);
			mfs_tensor_spec spec = spec_of("T", all_dtypes[d], 2, var);
			decode_ok((mfs_format)f, buf, len, &spec, &back);
			assert_same_tensor(&t, &back);
			free(buf);
			mfs_tensor_release(&t);
			mfs_tensor_release(&back);
		}
	}
}

/* .pb (codec_pb.c over the ONNX reader) through the dispatcher: the
 * datatype must match exactly, and errors name the tensor and format. */
static void test_pb_dispatch(void **state)
{
	(void)state;
	static const int64_t d4[] = { 4 }, d16[] = { 16 };
	mfs_shape s4 = shape_of(1, d4);
	mfs_tensor t;
	mfs_error err;
	char *buf;
	size_t len;
	assert_int_equal(mfs_tensor_alloc(&t, MFS_DT_INT64, &s4, &err), 0);
	buf = encode_ok(MFS_FMT_PB, &t, "stored_name", &len);
	mfs_tensor_release(&t);
	mfs_tensor_spec want = spec_of("INPUT0", MFS_DT_FLOAT, 1, d16);
	decode_fails(MFS_FMT_PB, buf, len, &want, EINVAL,
		     "input 'INPUT0': expected FP32 [16], got INT64 [4]");
	mfs_tensor_spec any = spec_of("INPUT0", MFS_DT_FLOAT, -1, NULL);
	decode_fails(MFS_FMT_PB, buf, len - 1, &any, EINVAL, "input 'INPUT0': pb file: ");
	free(buf);
	/* Bytes that are no tensor but hold a field 6 (as '2' does in text)
	 * must not send the user looking for strings (issue 17). */
	decode_fails(MFS_FMT_PB, "2\003abc", 5, &any, EINVAL,
		     "not an ONNX TensorProto: it has no valid data_type (0)");
	decode_fails(MFS_FMT_PB, "\020\0012\003abc", 7, &any, EINVAL,
		     "not an ONNX TensorProto of float: it carries string_data");
	/* "random bytes" as a shell would write them: never "string". */
	decode_fails(MFS_FMT_PB, "2 random bytes\n", 15, &any, EINVAL, "pb file: ");
	mfs_error err2;
	mfs_tensor t2;
	assert_true(mfs_tensor_decode(MFS_FMT_PB, "2 random bytes\n", 15, &any, &t2, &err2) < 0);
	assert_null(strstr(err2.msg, "string"));
}

/* ONNX's test-data generator wrote bfloat16 data as UINT16 tensors of the
 * same bits: a .pb UINT16 tensor for a BF16 input is read as BF16 (as the
 * conformance runner reads it), and only there. */
static void test_pb_uint16_as_bf16(void **state)
{
	(void)state;
	static const int64_t d2[] = { 2 };
	mfs_shape s2 = shape_of(1, d2);
	mfs_tensor t, back;
	mfs_error err;
	char *buf;
	size_t len;
	assert_int_equal(mfs_tensor_alloc(&t, MFS_DT_UINT16, &s2, &err), 0);
	((uint16_t *)t.data)[0] = 0x3f80;   /* 1.0 */
	((uint16_t *)t.data)[1] = 0xc000;   /* -2.0 */
	buf = encode_ok(MFS_FMT_PB, &t, "x", &len);
	mfs_tensor_release(&t);
	mfs_tensor_spec bf16 = spec_of("x", MFS_DT_BFLOAT16, 1, d2);
	decode_ok(MFS_FMT_PB, buf, len, &bf16, &back);
	assert_int_equal(back.dtype, MFS_DT_BFLOAT16);
	assert_true(mfs_tensor_get_f64(&back, 0) == 1.0);
	assert_true(mfs_tensor_get_f64(&back, 1) == -2.0);
	mfs_tensor_release(&back);
	mfs_tensor_spec f16 = spec_of("x", MFS_DT_FLOAT16, 1, d2);
	decode_fails(MFS_FMT_PB, buf, len, &f16, EINVAL,
		     "input 'x': expected FP16 [2], got UINT16 [2]");
	free(buf);
}

static void test_put_values(void **state)
{
	(void)state;
	static const int64_t d1[] = { 1 };
	mfs_shape s1 = shape_of(1, d1);
	mfs_tensor t;
	mfs_error err;
	assert_int_equal(mfs_tensor_alloc(&t, MFS_DT_UINT64, &s1, &err), 0);
	assert_int_equal(mfs_codec_put_u64(&t, 0, UINT64_MAX, &err), 0);
	assert_true(*(uint64_t *)t.data == UINT64_MAX);
	assert_int_equal(mfs_codec_put_f64(&t, 0, 18446744073709549568.0, &err), 0);
	assert_int_equal(mfs_codec_put_f64(&t, 0, 18446744073709551616.0, &err), -EINVAL);
	assert_int_equal(mfs_codec_put_i64(&t, 0, -1, &err), -EINVAL);
	mfs_tensor_release(&t);
	assert_int_equal(mfs_tensor_alloc(&t, MFS_DT_INT64, &s1, &err), 0);
	assert_int_equal(mfs_codec_put_f64(&t, 0, -9223372036854775808.0, &err), 0);
	assert_true(*(int64_t *)t.data == INT64_MIN);
	assert_int_equal(mfs_codec_put_f64(&t, 0, 9223372036854775808.0, &err), -EINVAL);
	assert_int_equal(mfs_codec_put_u64(&t, 0, 9223372036854775808ULL, &err), -EINVAL);
	assert_string_equal(err.msg,
			    "value 9223372036854775808 at index 0 is out of range for INT64 (-9223372036854775808..9223372036854775807)");
	mfs_tensor_release(&t);
	assert_int_equal(mfs_tensor_alloc(&t, MFS_DT_FLOAT, &s1, &err), 0);
	assert_int_equal(mfs_codec_put_u64(&t, 0, UINT64_MAX, &err), 0);
	assert_true(*(float *)t.data == 18446744073709551616.0f);
	assert_int_equal(mfs_codec_put_f64(&t, 0, 3.4028234663852886e38, &err), 0);
	assert_int_equal(mfs_codec_put_f64(&t, 0, 3.4028235677973366e38, &err), -EINVAL);
	assert_int_equal(mfs_codec_put_f64(&t, 0, 3.5e38, &err), -EINVAL);
	mfs_tensor_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_extensions),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_dispatch_errors),
		cmocka_unit_test(test_all_formats),
		cmocka_unit_test(test_pb_dispatch),
		cmocka_unit_test(test_pb_uint16_as_bf16),
		cmocka_unit_test(test_put_values),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

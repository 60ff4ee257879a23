/* Unit tests for string tensors in the tensor file formats
 * (src/core/codec/codec_string.c: .txt, .raw, .json; .pb through the
 * dispatch), through mfs_tensor_decode/mfs_tensor_encode as the request
 * path calls them.  .npy strings are test_codec_npy.c's. */
#include "codec_test_util.h"

static const int64_t var1[] = { -1 };

static mfs_tensor_spec str_spec(int rank, const int64_t *dims)
{
	return spec_of("TEXT", MFS_DT_STRING, rank, dims);
}

static void assert_strs(const mfs_tensor *t, int n, const char *const *want, const size_t *lens)
{
	assert_int_equal(t->dtype, MFS_DT_STRING);
	assert_int_equal(mfs_shape_numel(&t->shape), n);
	for (int i = 0; i < n; i++) {
		const mfs_string *s = mfs_string_at(t, i);
		size_t l = lens ? lens[i] : strlen(want[i]);
		if (s->len != l || (l && memcmp(s->ptr, want[i], l))) {
			print_error("element %d: '%.*s', want '%s'\n", i, (int)s->len,
				    s->ptr ? s->ptr : "", want[i]);
			fail();
		}
	}
}

static void make_strings(mfs_tensor *t, int rank, const int64_t *dims, const char *const *s,
			 const size_t *lens)
{
	mfs_shape sh = shape_of(rank, dims);

	assert_int_equal(mfs_tensor_alloc(t, MFS_DT_STRING, &sh, NULL), 0);
	for (int64_t i = 0; i < mfs_shape_numel(&sh); i++)
		assert_int_equal(mfs_string_set(t, i, s[i], lens ? lens[i] : strlen(s[i]), NULL), 0);
}

/* Encode t as fmt, decode it back with spec, and compare element by element. */
static void round_trip(mfs_format fmt, const mfs_tensor *t, const mfs_tensor_spec *spec)
{
	size_t len, n = (size_t)mfs_shape_numel(&t->shape);
	char *buf = encode_ok(fmt, t, "TEXT", &len);
	mfs_tensor back;

	decode_ok(fmt, buf, len, spec, &back);
	assert_true(mfs_shape_equal(&back.shape, &t->shape));
	for (size_t i = 0; i < n; i++) {
		const mfs_string *a = mfs_string_at(t, (int64_t)i), *b = mfs_string_at(&back, (int64_t)i);
		assert_int_equal(a->len, b->len);
		if (a->len)
			assert_memory_equal(a->ptr, b->ptr, a->len);
	}
	mfs_tensor_release(&back);
	free(buf);
}

/* ---- .txt ---- */

static void test_txt_lines(void **st)
{
	mfs_tensor_spec spec = str_spec(1, var1);
	const char *w1[] = { "some text" };
	const char *w3[] = { "a b", "", "c" };
	const char *esc = "line\\none\ntab\\there\nback\\\\slash\n\\x01\\xFF\ncr\\r\n";
	const char *wesc[] = { "line\none", "tab\there", "back\\slash", "\x01\xff", "cr\r" };
	mfs_tensor t;
	size_t len;
	char *out;

	(void)st;
	/* echo "some text" > TEXT.txt: one element, its newline not part of it */
	decode_ok(MFS_FMT_TXT, "some text\n", strlen("some text\n"), &spec, &t);
	assert_strs(&t, 1, w1, NULL);
	mfs_tensor_release(&t);

	/* a last line without its newline; an empty line is an empty element */
	decode_ok(MFS_FMT_TXT, "a b\n\nc", strlen("a b\n\nc"), &spec, &t);
	assert_strs(&t, 3, w3, NULL);
	mfs_tensor_release(&t);

	decode_ok(MFS_FMT_TXT, esc, strlen(esc), &spec, &t);
	assert_strs(&t, 5, wesc, NULL);
	/* written back: newline, CR and backslash escaped, the rest as bytes */
	out = encode_ok(MFS_FMT_TXT, &t, "TEXT", &len);
	assert_string_equal(out, "line\\none\ntab\there\nback\\\\slash\n\x01\xff\ncr\\r\n");
	free(out);
	round_trip(MFS_FMT_TXT, &t, &spec);
	mfs_tensor_release(&t);
}

static void test_txt_shape_and_errors(void **st)
{
	const int64_t d23[] = { 2, -1 }, d2[] = { 2 };
	mfs_tensor_spec spec = str_spec(2, d23), fixed = str_spec(1, d2), one = str_spec(1, var1);
	mfs_tensor t;

	(void)st;
	/* the model's shape, with its variable dim from the count */
	decode_ok(MFS_FMT_TXT, "a\nb\nc\nd\n", strlen("a\nb\nc\nd\n"), &spec, &t);
	assert_int_equal(t.shape.rank, 2);
	assert_int_equal(t.shape.dims[1], 2);
	mfs_tensor_release(&t);

	decode_str_fails(MFS_FMT_TXT, "a\nb\nc\n", &fixed, EINVAL, "");
	decode_str_fails(MFS_FMT_TXT, "ok\nbad \\q here\n", &one, EINVAL,
			 "line 2: '\\q' is not an escape");
	decode_str_fails(MFS_FMT_TXT, "trailing\\", &one, EINVAL, "line 1");
	decode_str_fails(MFS_FMT_TXT, "\\x4", &one, EINVAL, "line 1: '\\x'");
	decode_str_fails(MFS_FMT_TXT, "\\xZZ\n", &one, EINVAL, "line 1: '\\x'");
}

/* ---- .raw ---- */

static void test_raw(void **st)
{
	mfs_tensor_spec spec = str_spec(1, var1);
	const char bytes[] = "\x03\x00\x00\x00" "abc" "\x00\x00\x00\x00" "\x02\x00\x00\x00" "\x00z";
	const char *want[] = { "abc", "", "\0z" };
	size_t lens[] = { 3, 0, 2 };
	mfs_tensor t;
	size_t len;
	char *out;

	(void)st;
	decode_ok(MFS_FMT_RAW, bytes, sizeof(bytes) - 1, &spec, &t);
	assert_strs(&t, 3, want, lens);
	/* written byte for byte as Triton's clients send it */
	out = encode_ok(MFS_FMT_RAW, &t, "TEXT", &len);
	assert_int_equal(len, sizeof(bytes) - 1);
	assert_memory_equal(out, bytes, len);
	free(out);
	mfs_tensor_release(&t);

	/* an empty file: no elements */
	decode_ok(MFS_FMT_RAW, "", 0, &spec, &t);
	assert_int_equal(mfs_shape_numel(&t.shape), 0);
	mfs_tensor_release(&t);

	decode_fails(MFS_FMT_RAW, "\x03\x00\x00", 3, &spec, EINVAL,
		     "element 0: a length needs 4 bytes, 3 left");
	decode_fails(MFS_FMT_RAW, "\x05\x00\x00\x00" "ab", 6, &spec, EINVAL,
		     "element 0: length 5 passes the end of the file");
	decode_fails(MFS_FMT_RAW, "\x01\x00\x00\x00" "a" "\xff\xff\xff\xff", 9, &spec, EINVAL,
		     "element 1: length 4294967295");
}

/* ---- .json ---- */

static void test_json(void **st)
{
	const int64_t d2v[] = { 2, -1 };
	mfs_tensor_spec spec = str_spec(1, var1), spec2 = str_spec(2, d2v);
	const char *w[] = { "a", "b\n", "ü" };
	const char *w4[] = { "w", "x", "y", "z" };
	const char *nul[] = { "a\0b" };
	size_t nul_len[] = { 3 };
	mfs_tensor t;
	size_t len;
	char *out;

	(void)st;
	decode_ok(MFS_FMT_JSON, "[\"a\", \"b\\n\", \"\\u00fc\"]", strlen("[\"a\", \"b\\n\", \"\\u00fc\"]"), &spec, &t);
	assert_strs(&t, 3, w, NULL);
	out = encode_ok(MFS_FMT_JSON, &t, "TEXT", &len);
	assert_string_equal(out, "{\"name\":\"TEXT\",\"shape\":[3],\"datatype\":\"BYTES\","
				 "\"data\":[\"a\",\"b\\n\",\"ü\"]}");
	free(out);
	mfs_tensor_release(&t);

	/* a KServe tensor object; its shape wins over flat data */
	{
		const char *doc = "{\"name\":\"TEXT\",\"shape\":[2,2],\"datatype\":\"BYTES\","
				  "\"data\":[\"w\",\"x\",\"y\",\"z\"]}";
		decode_ok(MFS_FMT_JSON, doc, strlen(doc), &spec2, &t);
		assert_int_equal(t.shape.rank, 2);
		assert_strs(&t, 4, w4, NULL);
		round_trip(MFS_FMT_JSON, &t, &spec2);
		mfs_tensor_release(&t);
	}
	/* nested arrays give the shape */
	decode_ok(MFS_FMT_JSON, "[[\"w\",\"x\"],[\"y\",\"z\"]]", strlen("[[\"w\",\"x\"],[\"y\",\"z\"]]"), &spec2, &t);
	assert_int_equal(t.shape.dims[0], 2);
	assert_int_equal(t.shape.dims[1], 2);
	mfs_tensor_release(&t);

	/* a NUL inside an element: \u0000 in, and out */
	decode_ok(MFS_FMT_JSON, "[\"a\\u0000b\"]", strlen("[\"a\\u0000b\"]"), &spec, &t);
	assert_strs(&t, 1, nul, nul_len);
	round_trip(MFS_FMT_JSON, &t, &spec);
	mfs_tensor_release(&t);

	decode_str_fails(MFS_FMT_JSON, "[\"a\", 1]", &spec, EINVAL, "element 1 is not a string");
	decode_str_fails(MFS_FMT_JSON, "[[\"a\"],[\"b\",\"c\"]]", &spec2, EINVAL,
			 "differ in length");
	decode_str_fails(MFS_FMT_JSON, "[[\"a\"],\"b\"]", &spec2, EINVAL, "nested unevenly");
	decode_str_fails(MFS_FMT_JSON, "{\"datatype\":\"FP32\",\"data\":[\"a\"]}", &spec, EINVAL,
			 "\"datatype\" is FP32, the model expects BYTES");
	decode_str_fails(MFS_FMT_JSON, "{\"shape\":[3],\"data\":[\"a\"]}", &spec, EINVAL,
			 "\"shape\" holds 3 elements, \"data\" 1");
	decode_str_fails(MFS_FMT_JSON, "{\"datatype\":\"BYTES\"}", &spec, EINVAL, "no \"data\"");
	decode_str_fails(MFS_FMT_JSON, "[\"a\"", &spec, EINVAL, "invalid JSON");
}

static void test_json_not_utf8(void **st)
{
	const int64_t d1[] = { 1 };
	mfs_tensor t;
	mfs_error err;
	char *buf = NULL;
	size_t len;

	(void)st;
	make_strings(&t, 1, d1, (const char *[]){ "\xff\xfe" }, NULL);
	mfs_error_clear(&err);
	assert_int_equal(mfs_tensor_encode(MFS_FMT_JSON, &t, "TEXT", &buf, &len, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "element 0 is not UTF-8 text; read it as .raw or .npy"));
	assert_null(buf);
	/* .raw and .pb carry any bytes */
	round_trip(MFS_FMT_RAW, &t, &(mfs_tensor_spec){ .name = "TEXT", .dtype = MFS_DT_STRING,
							 .rank = 1, .dims = { -1 } });
	mfs_tensor_release(&t);
}

/* ---- .pb through the dispatch ---- */

static void test_pb(void **st)
{
	const int64_t d22[] = { 2, 2 };
	mfs_tensor_spec spec = str_spec(2, d22);
	mfs_tensor t;

	(void)st;
	make_strings(&t, 2, d22, (const char *[]){ "p", "", "q\nr", "s" }, NULL);
	round_trip(MFS_FMT_PB, &t, &spec);
	round_trip(MFS_FMT_TXT, &t, &spec);
	round_trip(MFS_FMT_RAW, &t, &spec);
	mfs_tensor_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_txt_lines),
		cmocka_unit_test(test_txt_shape_and_errors),
		cmocka_unit_test(test_raw),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_json_not_utf8),
		cmocka_unit_test(test_pb),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

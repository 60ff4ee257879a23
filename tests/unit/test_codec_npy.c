/* test_codec_npy.c - .npy reading and writing against files NumPy wrote. */
#include "codec_test_util.h"
#include "npy_fixtures.h"

static const int64_t d16[] = { 16 };
static const int64_t d2x3[] = { 2, 3 };
static const int64_t dvar3[] = { -1, 3 };

/* Every dtype .npy can carry round-trips byte for byte, at several ranks. */
static void test_roundtrip_all_dtypes(void **state)
{
	(void)state;
	static const int64_t shapes[][3] = { { 0 }, { 5 }, { 2, 7 }, { 2, 1, 3 } };
	static const int ranks[] = { 0, 1, 2, 3 };
	for (size_t d = 0; d < N_ALL_DTYPES; d++) {
		if (all_dtypes[d] == MFS_DT_BFLOAT16)
			continue; /* no NumPy dtype: tested below */
		for (size_t s = 0; s < 4; s++) {
			mfs_shape sh = shape_of(ranks[s], shapes[s]);
			mfs_tensor t, back;
			mfs_error err;
			size_t len, len2;
			assert_int_equal(mfs_tensor_alloc(&t, all_dtypes[d], &sh, &err), 0);
			fill_pattern(&t);
			char *buf = encode_ok(MFS_FMT_NPY, &t, "x", &len);
			assert_int_equal(len % 64, t.nbytes % 64); /* 64-aligned header */
			mfs_tensor_spec spec = spec_of("x", all_dtypes[d], -1, NULL);
			decode_ok(MFS_FMT_NPY, buf, len, &spec, &back);
			assert_same_tensor(&t, &back);
			char *buf2 = encode_ok(MFS_FMT_NPY, &back, "x", &len2);
			assert_int_equal(len, len2);
			assert_memory_equal(buf, buf2, len);
			free(buf);
			free(buf2);
			mfs_tensor_release(&t);
			mfs_tensor_release(&back);
		}
	}
}

/* Reading NumPy's own files, then writing them again, gives NumPy's bytes. */
static void check_numpy_file(const unsigned char *file, size_t flen, mfs_dtype dt,
			     int rank, const int64_t *dims, bool same_bytes)
{
	mfs_tensor_spec spec = spec_of("t", dt, rank, dims);
	mfs_tensor t;
	size_t len;
	decode_ok(MFS_FMT_NPY, file, flen, &spec, &t);
	assert_int_equal(t.dtype, dt);
	assert_int_equal(t.shape.rank, rank);
	char *buf = encode_ok(MFS_FMT_NPY, &t, "t", &len);
	if (same_bytes) {
		assert_int_equal(len, flen);
		assert_memory_equal(buf, file, len);
	} else {
		/* Written as version 1; the data part is the same. */
		assert_memory_equal(buf + len - t.nbytes, file + flen - t.nbytes, t.nbytes);
	}
	free(buf);
	mfs_tensor_release(&t);
}

static void test_numpy_files(void **state)
{
	(void)state;
	static const int64_t d4[] = { 4 }, d3[] = { 3 }, d2x2[] = { 2, 2 },
			     d0x3[] = { 0, 3 };
	check_numpy_file(npy_f4_2x3, sizeof(npy_f4_2x3), MFS_DT_FLOAT, 2, d2x3, true);
	check_numpy_file(npy_i8_4_v2, sizeof(npy_i8_4_v2), MFS_DT_INT64, 1, d4, false);
	check_numpy_file(npy_u1_scalar_v3, sizeof(npy_u1_scalar_v3), MFS_DT_UINT8, 0, NULL, false);
	check_numpy_file(npy_b1_3, sizeof(npy_b1_3), MFS_DT_BOOL, 1, d3, true);
	check_numpy_file(npy_f2_2x2, sizeof(npy_f2_2x2), MFS_DT_FLOAT16, 2, d2x2, true);
	check_numpy_file(npy_f4_empty_0x3, sizeof(npy_f4_empty_0x3), MFS_DT_FLOAT, 2, d0x3, true);

	/* The values, not only the bytes. */
	mfs_tensor_spec spec = spec_of("t", MFS_DT_FLOAT, 2, d2x3);
	mfs_tensor t;
	decode_ok(MFS_FMT_NPY, npy_f4_2x3, sizeof(npy_f4_2x3), &spec, &t);
	assert_true(((float *)t.data)[5] == 2.5f);
	mfs_tensor_release(&t);
	mfs_tensor_spec s8 = spec_of("t", MFS_DT_INT64, 1, d4);
	decode_ok(MFS_FMT_NPY, npy_i8_4_v2, sizeof(npy_i8_4_v2), &s8, &t);
	assert_int_equal(((int64_t *)t.data)[0], -1);
	assert_int_equal(((int64_t *)t.data)[3], 1LL << 62);
	mfs_tensor_release(&t);
}

static void test_header_matches_numpy(void **state)
{
	(void)state;
	mfs_shape sh = shape_of(1, d16);
	mfs_tensor t;
	mfs_error err;
	size_t len;
	static const char want[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (16,), }";
	assert_int_equal(mfs_tensor_alloc(&t, MFS_DT_FLOAT, &sh, &err), 0);
	char *buf = encode_ok(MFS_FMT_NPY, &t, "x", &len);
	/* numpy.save() of np.zeros(16, np.float32): 128-byte header. */
	assert_int_equal(len, 128 + 64);
	assert_memory_equal(buf, "\x93NUMPY\x01\x00\x76\x00", 10);
	assert_memory_equal(buf + 10, want, strlen(want));
	for (size_t i = 10 + strlen(want); i < 127; i++)
		assert_int_equal(buf[i], ' ');
	assert_int_equal(buf[127], '\n');
	free(buf);
	mfs_tensor_release(&t);
}

static void test_refused_dtypes(void **state)
{
	(void)state;
	mfs_tensor_spec any = spec_of("X", MFS_DT_FLOAT, -1, NULL);
	decode_fails(MFS_FMT_NPY, npy_f8_big_endian, sizeof(npy_f8_big_endian), &any,
		     EINVAL, "big-endian");
	decode_fails(MFS_FMT_NPY, npy_f4_fortran, sizeof(npy_f4_fortran), &any,
		     EINVAL, "Fortran-order");
	decode_fails(MFS_FMT_NPY, npy_object, sizeof(npy_object), &any, EINVAL,
		     "object arrays");
	decode_fails(MFS_FMT_NPY, npy_structured, sizeof(npy_structured), &any, EINVAL,
		     "structured");
	decode_fails(MFS_FMT_NPY, npy_object, sizeof(npy_object), &any, EINVAL,
		     "pickled Python objects) are not supported; save strings with a fixed width");
	/* strings read, but are no FP32 */
	decode_fails(MFS_FMT_NPY, npy_unicode, sizeof(npy_unicode), &any, EINVAL,
		     "expected FP32 (any shape), got BYTES [1]");
	decode_fails(MFS_FMT_NPY, npy_complex, sizeof(npy_complex), &any, EINVAL,
		     "complex");
}

static void test_spec_mismatch(void **state)
{
	(void)state;
	static const int64_t d4[] = { 4 };
	mfs_tensor_spec spec = spec_of("INPUT0", MFS_DT_FLOAT, 1, d16);
	decode_fails(MFS_FMT_NPY, npy_i8_4_v2, sizeof(npy_i8_4_v2), &spec, EINVAL,
		     "input 'INPUT0': expected FP32 [16], got INT64 [4]");
	mfs_tensor_spec spec2 = spec_of("INPUT0", MFS_DT_INT64, 1, d4);
	mfs_tensor t;
	decode_ok(MFS_FMT_NPY, npy_i8_4_v2, sizeof(npy_i8_4_v2), &spec2, &t);
	mfs_tensor_release(&t);
	/* Variable dims accept any size; rank must still match. */
	mfs_tensor_spec var = spec_of("v", MFS_DT_FLOAT, 2, dvar3);
	decode_ok(MFS_FMT_NPY, npy_f4_2x3, sizeof(npy_f4_2x3), &var, &t);
	mfs_tensor_release(&t);
	mfs_tensor_spec r1 = spec_of("v", MFS_DT_FLOAT, 1, dvar3);
	decode_fails(MFS_FMT_NPY, npy_f4_2x3, sizeof(npy_f4_2x3), &r1, EINVAL,
		     "expected FP32 [-1], got FP32 [2,3]");
}

/* Build a v1 file around a hand-written header. */
static size_t make_npy(unsigned char *out, const char *header, size_t data_len)
{
	size_t hl = strlen(header);
	memcpy(out, "\x93NUMPY\x01\x00", 8);
	out[8] = (unsigned char)(hl & 0xff);
	out[9] = (unsigned char)(hl >> 8);
	memcpy(out + 10, header, hl);
	memset(out + 10 + hl, 0, data_len);
	return 10 + hl + data_len;
}

static void test_malformed(void **state)
{
	(void)state;
	mfs_tensor_spec any = spec_of("X", MFS_DT_FLOAT, -1, NULL);
	unsigned char f[1024];
	size_t n;

	decode_fails(MFS_FMT_NPY, "", 0, &any, EINVAL, "not a .npy file");
	decode_fails(MFS_FMT_NPY, "\x93NUMPY\x01", 7, &any, EINVAL, "not a .npy file");
	decode_fails(MFS_FMT_NPY, "PK\x03\x04 not npy", 14, &any, EINVAL, "not a .npy file");
	/* Truncated: every prefix of a good file fails cleanly. */
	for (size_t cut = 0; cut < sizeof(npy_f4_2x3); cut++) {
		mfs_tensor t;
		mfs_error err;
		assert_int_equal(mfs_tensor_decode(MFS_FMT_NPY, npy_f4_2x3, cut, &any, &t, &err),
				 -EINVAL);
	}
	decode_fails(MFS_FMT_NPY, npy_f4_2x3, 60, &any, EINVAL, "truncated header");
	decode_fails(MFS_FMT_NPY, npy_f4_2x3, sizeof(npy_f4_2x3) - 1, &any, EINVAL,
		     "has 23 bytes of data, but float shape needs 24");
	memcpy(f, npy_f4_2x3, sizeof(npy_f4_2x3));
	f[sizeof(npy_f4_2x3)] = 0;
	decode_fails(MFS_FMT_NPY, f, sizeof(npy_f4_2x3) + 1, &any, EINVAL,
		     "has 25 bytes of data");
	memcpy(f, npy_f4_2x3, 16);
	f[6] = 4;
	decode_fails(MFS_FMT_NPY, f, 16, &any, EINVAL, "unsupported .npy version 4.0");

	n = make_npy(f, "{'descr': '<f4', 'fortran_order': False}", 0);
	decode_fails(MFS_FMT_NPY, f, n, &any, EINVAL, "header lacks 'shape'");
	n = make_npy(f, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", 4);
	decode_fails(MFS_FMT_NPY, f, n, &any, EINVAL, "unexpected header key 'x'");
	n = make_npy(f, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", 4);
	decode_fails(MFS_FMT_NPY, f, n, &any, EINVAL, "unexpected header key 'descr'");
	n = make_npy(f, "{'descr': '<f4', 'fortran_order': False, 'shape': (1)}", 4);
	decode_fails(MFS_FMT_NPY, f, n, &any, EINVAL, "not a tuple");
	n = make_npy(f, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,)}", 4);
	decode_fails(MFS_FMT_NPY, f, n, &any, EINVAL, "expected True or False");
	n = make_npy(f, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,2,3,4,5,6,7,8,9)}", 0);
	decode_fails(MFS_FMT_NPY, f, n, &any, EINVAL, "rank is more than 8");
	n = make_npy(f, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", 0);
	decode_fails(MFS_FMT_NPY, f, n, &any, EINVAL, "too large");
	n = make_npy(f, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296)}", 0);
	decode_fails(MFS_FMT_NPY, f, n, &any, EINVAL, "too large");
	n = make_npy(f, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", 0);
	decode_fails(MFS_FMT_NPY, f, n, &any, EINVAL, "bad shape");
	n = make_npy(f, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} junk", 4);
	decode_fails(MFS_FMT_NPY, f, n, &any, EINVAL, "text after the dict");
	n = make_npy(f, "{'descr': '<x9', 'fortran_order': False, 'shape': (1,)}", 4);
	decode_fails(MFS_FMT_NPY, f, n, &any, EINVAL, "dtype '<x9' is not supported");
	n = make_npy(f, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", 4);
	decode_fails(MFS_FMT_NPY, f, n, &any, EINVAL, "malformed header");
	n = make_npy(f, "{'descr: '<f4'}", 4);
	decode_fails(MFS_FMT_NPY, f, n, &any, EINVAL, "malformed header");

	/* An empty array may have a huge dim (found by fuzzing the .pb codec:
	 * the .npy round trip refused it). */
	mfs_tensor e;
	n = make_npy(f, "{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775807, 2, 0)}", 0);
	decode_ok(MFS_FMT_NPY, f, n, &any, &e);
	assert_int_equal(e.nbytes, 0);
	size_t elen;
	char *ebuf = encode_ok(MFS_FMT_NPY, &e, "X", &elen);
	mfs_tensor_release(&e);
	decode_ok(MFS_FMT_NPY, ebuf, elen, &any, &e);
	assert_true(e.shape.dims[0] == INT64_MAX);
	mfs_tensor_release(&e);
	free(ebuf);
	n = make_npy(f, "{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775808, 0)}", 0);
	decode_fails(MFS_FMT_NPY, f, n, &any, EINVAL, "shape dim is too large");

	/* Hand-written but valid: double quotes, Python 2 longs, a 1-D
	 * Fortran array (same bytes as C order), '=' / '>' on a 1-byte type. */
	mfs_tensor t;
	n = make_npy(f, "{\"descr\": \"<f4\", \"fortran_order\": True, \"shape\": (2L,)}", 8);
	decode_ok(MFS_FMT_NPY, f, n, &any, &t);
	assert_int_equal(t.shape.dims[0], 2);
	mfs_tensor_release(&t);
	mfs_tensor_spec u8 = spec_of("X", MFS_DT_UINT8, -1, NULL);
	n = make_npy(f, "{'descr': '>u1', 'fortran_order': False, 'shape': (3,)}", 3);
	decode_ok(MFS_FMT_NPY, f, n, &u8, &t);
	mfs_tensor_release(&t);
}

static void test_bool_normalised(void **state)
{
	(void)state;
	mfs_tensor_spec b = spec_of("X", MFS_DT_BOOL, -1, NULL);
	unsigned char f[256];
	size_t n = make_npy(f, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,)}", 0);
	f[n++] = 0;
	f[n++] = 7;
	f[n++] = 1;
	mfs_tensor t;
	decode_ok(MFS_FMT_NPY, f, n, &b, &t);
	assert_memory_equal(t.data, "\x00\x01\x01", 3);
	mfs_tensor_release(&t);
}

/* A float .npy decodes as a view into the file (no copy); its header
 * alone gives the file's size; BOOL is still copied (normalised). */
static void test_view_and_file_size(void **state)
{
	(void)state;
	mfs_tensor_spec sp = spec_of("X", MFS_DT_FLOAT, -1, NULL);
	_Alignas(16) unsigned char f[256];
	/* Padded as NumPy pads it: the data starts 16-byte aligned. */
	char h[128] = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}";
	while ((10 + strlen(h) + 1) % 16)
		strcat(h, " ");
	strcat(h, "\n");
	size_t n = make_npy(f, h, 0);
	size_t hdr = n;
	float v[2] = { 1.5f, -2.0f };
	memcpy(f + n, v, sizeof(v));
	n += sizeof(v);
	assert_int_equal(mfs_npy_file_size(f, hdr), n);
	assert_int_equal(mfs_npy_file_size(f, n), n);
	assert_int_equal(mfs_npy_file_size(f, 8), 0);
	mfs_error err;
	mfs_tensor t;
	assert_int_equal(mfs_tensor_decode_view(MFS_FMT_NPY, f, n, &sp, &t, &err), 0);
	assert_false(t.owns_data);
	assert_ptr_equal(t.data, f + hdr);
	mfs_tensor_release(&t);
	/* A short file is refused as by mfs_tensor_decode. */
	assert_int_equal(mfs_tensor_decode_view(MFS_FMT_NPY, f, n - 1, &sp, &t, &err), -EINVAL);
	mfs_tensor_spec b = spec_of("X", MFS_DT_BOOL, -1, NULL);
	n = make_npy(f, "{'descr': '|b1', 'fortran_order': False, 'shape': (1,)}", 0);
	f[n++] = 9;
	assert_int_equal(mfs_tensor_decode_view(MFS_FMT_NPY, f, n, &b, &t, &err), 0);
	assert_true(t.owns_data);
	assert_int_equal(*(unsigned char *)t.data, 1);
	mfs_tensor_release(&t);
}

static void test_encode_refusals(void **state)
{
	(void)state;
	mfs_shape sh = shape_of(1, d16);
	mfs_tensor t;
	mfs_error err;
	char *buf = (char *)1;
	size_t len = 1;
	assert_int_equal(mfs_tensor_alloc(&t, MFS_DT_BFLOAT16, &sh, &err), 0);
	assert_int_equal(mfs_tensor_encode(MFS_FMT_NPY, &t, "out", &buf, &len, &err), -ENOTSUP);
	assert_null(buf);
	assert_non_null(strstr(err.msg, "output 'out'"));
	assert_non_null(strstr(err.msg, "bfloat16"));
	mfs_tensor_release(&t);
}

/* ---- strings: numpy's 'U' and 'S' ---- */

static void assert_elems(const mfs_tensor *t, int n, const char *const *want, const size_t *lens)
{
	assert_int_equal(t->dtype, MFS_DT_STRING);
	assert_int_equal(mfs_shape_numel(&t->shape), n);
	for (int i = 0; i < n; i++) {
		const mfs_string *s = mfs_string_at(t, i);
		size_t l = lens ? lens[i] : strlen(want[i]);
		assert_int_equal(s->len, l);
		if (l)
			assert_memory_equal(s->ptr, want[i], l);
	}
}

static void test_strings_read(void **state)
{
	(void)state;
	mfs_tensor_spec any = spec_of("TEXT", MFS_DT_STRING, -1, NULL);
	const char *u[] = { "a", "h\xc3\xa9llo", "\xe4\xb8\xad\xe6\x96\x87", "" };
	const char *big[] = { "ab", "\xc3\xbc", "\xf0\x9f\x98\x80" };
	/* trailing NULs trimmed, as numpy does; inner ones kept */
	const char *s[] = { "ab", "", "\xff\0z", "q" };
	size_t slen[] = { 2, 0, 3, 1 };
	const char *e[] = { "", "" };
	mfs_tensor t;

	decode_ok(MFS_FMT_NPY, npy_u5_2x2, sizeof(npy_u5_2x2), &any, &t);
	assert_int_equal(t.shape.rank, 2);
	assert_elems(&t, 4, u, NULL);
	mfs_tensor_release(&t);
	decode_ok(MFS_FMT_NPY, npy_u2_big_endian, sizeof(npy_u2_big_endian), &any, &t);
	assert_elems(&t, 3, big, NULL);
	mfs_tensor_release(&t);
	decode_ok(MFS_FMT_NPY, npy_s3_4, sizeof(npy_s3_4), &any, &t);
	assert_elems(&t, 4, s, slen);
	mfs_tensor_release(&t);
	decode_ok(MFS_FMT_NPY, npy_u1_empty, sizeof(npy_u1_empty), &any, &t);
	assert_elems(&t, 2, e, NULL);
	mfs_tensor_release(&t);
}

/* Written as numpy writes the same array: U when every element is UTF-8
 * without a NUL, else S; the width the longest element. */
static void test_strings_write(void **state)
{
	(void)state;
	mfs_tensor_spec any = spec_of("TEXT", MFS_DT_STRING, -1, NULL);

	check_numpy_file(npy_u5_2x2, sizeof(npy_u5_2x2), MFS_DT_STRING, 2,
			 (const int64_t[]){ 2, 2 }, true);
	check_numpy_file(npy_s3_4, sizeof(npy_s3_4), MFS_DT_STRING, 1,
			 (const int64_t[]){ 4 }, true);   /* \xff is no UTF-8 */
	check_numpy_file(npy_u1_empty, sizeof(npy_u1_empty), MFS_DT_STRING, 1,
			 (const int64_t[]){ 2 }, true);
	/* big-endian in, little-endian out: the same strings */
	{
		mfs_tensor t, back;
		size_t len;
		char *buf;
		decode_ok(MFS_FMT_NPY, npy_u2_big_endian, sizeof(npy_u2_big_endian), &any, &t);
		buf = encode_ok(MFS_FMT_NPY, &t, "TEXT", &len);
		assert_non_null(memmem(buf, len, "'descr': '<U2'", 14));
		decode_ok(MFS_FMT_NPY, buf, len, &any, &back);
		assert_elems(&back, 3, (const char *[]){ "ab", "\xc3\xbc", "\xf0\x9f\x98\x80" }, NULL);
		free(buf);
		mfs_tensor_release(&t);
		mfs_tensor_release(&back);
	}
}

static void test_strings_refused(void **state)
{
	(void)state;
	mfs_tensor_spec any = spec_of("TEXT", MFS_DT_STRING, -1, NULL);
	unsigned char bad[sizeof(npy_u1_empty)];

	/* a UTF-32 value that is no code point */
	memcpy(bad, npy_u1_empty, sizeof(bad));
	memcpy(bad + sizeof(bad) - 4, "\x00\xd8\x00\x00", 4);   /* U+D800, a surrogate */
	decode_fails(MFS_FMT_NPY, bad, sizeof(bad), &any, EINVAL,
		     "element 1: 0xd800 is not a Unicode code point");
	memcpy(bad + sizeof(bad) - 4, "\x00\x00\x11\x00", 4);
	decode_fails(MFS_FMT_NPY, bad, sizeof(bad), &any, EINVAL, "0x110000");
	/* the data must be numel * itemsize bytes */
	decode_fails(MFS_FMT_NPY, npy_u5_2x2, sizeof(npy_u5_2x2) - 4, &any, EINVAL,
		     "bytes of data");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_all_dtypes),
		cmocka_unit_test(test_numpy_files),
		cmocka_unit_test(test_header_matches_numpy),
		cmocka_unit_test(test_refused_dtypes),
		cmocka_unit_test(test_spec_mismatch),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_bool_normalised),
		cmocka_unit_test(test_view_and_file_size),
		cmocka_unit_test(test_encode_refusals),
		cmocka_unit_test(test_strings_read),
		cmocka_unit_test(test_strings_write),
		cmocka_unit_test(test_strings_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_codec_prefix.c - mfs_tensor_prefix_check: what the first bytes of
 * a tensor file can already refuse, and that every valid file (or a cut
 * of one) passes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "codec.h"

static int check(mfs_format f, const char *s, mfs_error *err)
{
	return mfs_tensor_prefix_check(f, s, strlen(s), err);
}

/* Nothing written yet: a 0-byte write on a new file has no buffer at
 * all (found by fuzz_fuse_requests: memcmp on NULL). */
static void test_empty_is_not_judged(void **state)
{
	mfs_error err;
	(void)state;
	assert_int_equal(mfs_tensor_prefix_check(MFS_FMT_NPY, NULL, 0, &err), 0);
	assert_int_equal(mfs_tensor_prefix_check(MFS_FMT_TXT, NULL, 0, &err), 0);
	assert_int_equal(mfs_tensor_prefix_check(MFS_FMT_JSON, NULL, 0, &err), 0);
}

static void test_npy(void **state)
{
	mfs_error err;
	(void)state;
	assert_int_equal(check(MFS_FMT_NPY, "\x93NUMPY\x01\x00v\x00{'descr'", &err), 0);
	assert_int_equal(check(MFS_FMT_NPY, "\x93NU", &err), 0);      /* a cut magic */
	assert_int_equal(check(MFS_FMT_NPY, "", &err), 0);
	assert_int_equal(check(MFS_FMT_NPY, "not a tensor\n", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "NUMPY"));
	assert_int_equal(check(MFS_FMT_NPY, "\x93NUMPX", &err), -EINVAL);
}

static void test_txt(void **state)
{
	mfs_error err;
	(void)state;
	const char *good[] = { "1 2 3 4\n", "1,2,3\n-4.5e-3 nan inf -inf\n", "true false 0 1\n",
			       "0x1p3 1E5\r\n", "1 2 3", "1 2 in", "  \n", "-", "1.5e" };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_int_equal(check(MFS_FMT_TXT, good[i], &err), 0);
	assert_int_equal(check(MFS_FMT_TXT, "not a tensor\n", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "'not' is not a number"));
	assert_int_equal(check(MFS_FMT_TXT, "1 2 x3 4\n", &err), -EINVAL);
	assert_int_equal(check(MFS_FMT_TXT, "1 2 [3", &err), -EINVAL);   /* cut, but '[' never fits */
	/* Only the first MFS_PREFIX_CHECK_BYTES are judged. */
	char big[MFS_PREFIX_CHECK_BYTES + 16];
	memset(big, ' ', sizeof(big));
	memcpy(big + MFS_PREFIX_CHECK_BYTES + 4, "junk", 4);
	assert_int_equal(mfs_tensor_prefix_check(MFS_FMT_TXT, big, sizeof(big), &err), 0);
}

static void test_json_and_binary(void **state)
{
	mfs_error err;
	(void)state;
	assert_int_equal(check(MFS_FMT_JSON, "  \n{\"shape\":[2]", &err), 0);
	assert_int_equal(check(MFS_FMT_JSON, "[[1, 2]", &err), 0);
	assert_int_equal(check(MFS_FMT_JSON, "   ", &err), 0);
	assert_int_equal(check(MFS_FMT_JSON, "not a tensor\n", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "'{'"));
	assert_int_equal(check(MFS_FMT_JSON, "1, 2, 3", &err), -EINVAL);
	/* .raw and .pb: any bytes may start one. */
	assert_int_equal(check(MFS_FMT_RAW, "not a tensor\n", &err), 0);
	assert_int_equal(check(MFS_FMT_PB, "not a tensor\n", &err), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_is_not_judged),
		cmocka_unit_test(test_npy),
		cmocka_unit_test(test_txt),
		cmocka_unit_test(test_json_and_binary),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_classify.c - the top-K formatter (classify.h): highest first,
 * ties by index, NaN last, one block per row of a batched output, K past
 * the classes capped, labels or none, Triton's "score:index:label"
 * strings, and what cannot be classified. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "classify.h"

static mfs_tensor floats(const float *v, int rank, const int64_t *dims)
{
	mfs_tensor t = { .dtype = MFS_DT_FLOAT, .shape = { .rank = rank } };
	size_t n = 1;
	for (int d = 0; d < rank; d++) {
		t.shape.dims[d] = dims[d];
		n *= (size_t)dims[d];
	}
	t.data = (void *)v;
	t.nbytes = n * sizeof(float);
	return t;
}

static mfs_labels three_labels(void)
{
	static char *names[] = { "cat", "dog", "" };
	mfs_labels l = { .label = names, .n = 3 };
	return l;
}

static void test_parse_topk(void **state)
{
	(void)state;
	assert_int_equal(mfs_classify_parse_topk("top5", 4), 5);
	assert_int_equal(mfs_classify_parse_topk("top1000", 7), 1000);
	assert_int_equal(mfs_classify_parse_topk("top0", 4), 0);
	assert_int_equal(mfs_classify_parse_topk("top05", 5), 0);
	assert_int_equal(mfs_classify_parse_topk("top", 3), 0);
	assert_int_equal(mfs_classify_parse_topk("top-1", 5), 0);
	assert_int_equal(mfs_classify_parse_topk("top+1", 5), 0);
	assert_int_equal(mfs_classify_parse_topk("tops", 4), 0);
	assert_int_equal(mfs_classify_parse_topk("bottom5", 7), 0);
	assert_int_equal(mfs_classify_parse_topk("top99999999999999999999", 23), 0);
}

static void test_text_ranks_with_labels_ties_and_nan(void **state)
{
	(void)state;
	const float v[5] = { 0.25f, NAN, 0.5f, 0.25f, -1.0f };
	int64_t dims[1] = { 5 };
	mfs_tensor t = floats(v, 1, dims);
	mfs_labels l = three_labels();
	mfs_error err;
	char *buf;
	size_t len;

	/* Label 2 is empty, 3 and 4 have none: the column is left out for
	 * all three (no trailing space for awk to trip on). */
	assert_int_equal(mfs_classify_text(&t, "p", 5, &l, &buf, &len, &err), 0);
	assert_string_equal(buf, "0.500000 2\n0.250000 0 cat\n0.250000 3\n-1.000000 4\nnan 1 dog\n");
	assert_int_equal(len, strlen(buf));
	free(buf);
	assert_int_equal(mfs_classify_text(&t, "p", 2, NULL, &buf, &len, &err), 0);
	assert_string_equal(buf, "0.500000 2\n0.250000 0\n");
	free(buf);
	/* K past the classes: all of them. */
	assert_int_equal(mfs_classify_text(&t, "p", 1000, NULL, &buf, &len, &err), 0);
	assert_int_equal(strlen(buf), len);
	assert_non_null(strstr(buf, "nan 1\n"));
	free(buf);
}

static void test_rows_of_a_batch_and_integer_scores(void **state)
{
	(void)state;
	const float v[6] = { 1, 2, 3, 6, 5, 4 };
	int64_t dims[2] = { 2, 3 };
	mfs_tensor t = floats(v, 2, dims);
	mfs_error err;
	char *buf;
	size_t len;

	assert_int_equal(mfs_classify_text(&t, "p", 1, NULL, &buf, &len, &err), 0);
	assert_string_equal(buf, "3.000000 2\n\n6.000000 0\n");
	free(buf);

	const int64_t iv[3] = { 7, -3, 9 };
	mfs_tensor ti = { .dtype = MFS_DT_INT64, .shape = { .rank = 1, .dims = { 3 } },
			  .data = (void *)iv, .nbytes = sizeof(iv) };
	assert_int_equal(mfs_classify_text(&ti, "p", 2, NULL, &buf, &len, &err), 0);
	assert_string_equal(buf, "9.000000 2\n7.000000 0\n");
	free(buf);
}

static void test_triton_strings(void **state)
{
	(void)state;
	const float v[6] = { 0.1f, 0.7f, 0.2f, 0.3f, 0.3f, 0.4f };
	int64_t dims[2] = { 2, 3 };
	mfs_tensor t = floats(v, 2, dims);
	mfs_labels l = three_labels();
	mfs_error err;
	char *buf;
	size_t len;

	assert_int_equal(mfs_classify_json(&t, "OUT", 2, &l, &buf, &len, &err), 0);
	assert_string_equal(buf, "{\"name\":\"OUT\",\"datatype\":\"BYTES\",\"shape\":[2,2],\"data\":"
			    "[\"0.700000:1:dog\",\"0.200000:2\",\"0.400000:2\",\"0.300000:0:cat\"]}");
	assert_int_equal(len, strlen(buf));
	free(buf);
	assert_int_equal(mfs_classify_json(&t, "OUT", 1, NULL, &buf, &len, &err), 0);
	assert_string_equal(buf, "{\"name\":\"OUT\",\"datatype\":\"BYTES\",\"shape\":[2,1],\"data\":"
			    "[\"0.700000:1\",\"0.400000:2\"]}");
	free(buf);
}

static void test_what_cannot_be_classified(void **state)
{
	(void)state;
	const float v[1] = { 1 };
	mfs_tensor scalar = floats(v, 0, NULL);
	int64_t zero[1] = { 0 };
	mfs_tensor empty = floats(v, 1, zero);
	const uint8_t b[2] = { 0, 1 };
	mfs_tensor flags = { .dtype = MFS_DT_BOOL, .shape = { .rank = 1, .dims = { 2 } },
			     .data = (void *)b, .nbytes = 2 };
	mfs_error err;
	char *buf = (char *)1;
	size_t len;

	assert_int_equal(mfs_classify_text(&scalar, "s", 1, NULL, &buf, &len, &err), -EINVAL);
	assert_null(buf);
	assert_non_null(strstr(err.msg, "output 's' is a scalar"));
	assert_int_equal(mfs_classify_text(&empty, "e", 1, NULL, &buf, &len, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "output 'e' has no classes"));
	assert_int_equal(mfs_classify_json(&flags, "f", 1, NULL, &buf, &len, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "output 'f' is TYPE_BOOL: only numeric scores can be ranked"));
	assert_int_equal(mfs_classify_check("ok", MFS_DT_FLOAT16, 2, &err), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_topk),
		cmocka_unit_test(test_text_ranks_with_labels_ties_and_nan),
		cmocka_unit_test(test_rows_of_a_batch_and_integer_scores),
		cmocka_unit_test(test_triton_strings),
		cmocka_unit_test(test_what_cannot_be_classified),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

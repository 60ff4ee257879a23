/* Unit tests for the string operators (exec/cpu/ops/cast_string.c,
 * string_normalizer.c, string_concat.c, string_split.c, regex_full_match.c,
 * Equal on strings in compare.c), run by hand through op_harness.h.  The
 * cases follow the ONNX specification's examples and its reference
 * implementation (Python's str.split for StringSplit, numpy's str() for
 * numbers cast to strings); StringSplit and StringConcat are opset 20,
 * which onnx 1.12's conformance data does not cover, so these are their
 * proof. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "op_harness.h"

/* ---- string inputs and outputs -------------------------------------- */

/* Add a string input of the given elements (lens NULL: strlen), owned by
 * the harness (h_free releases it). */
static void h_in_strn(harness *h, int rank, const int64_t *dims, const char *const *s,
		      const size_t *lens)
{
	mfs_tensor *t = &h->in[h->ctx.n_in];
	mfs_shape sh = { .rank = rank };

	for (int i = 0; i < rank; i++)
		sh.dims[i] = dims[i];
	assert_int_equal(mfs_tensor_alloc(t, MFS_DT_STRING, &sh, &h->err), 0);
	for (int64_t i = 0; i < mfs_shape_numel(&sh); i++)
		assert_int_equal(mfs_string_set(t, i, s[i], lens ? lens[i] : strlen(s[i]), &h->err), 0);
	h->inp[h->ctx.n_in++] = t;
}

static void h_in_str(harness *h, int rank, const int64_t *dims, const char *const *s)
{
	h_in_strn(h, rank, dims, s, NULL);
}

static void h_attr_strs(harness *h, const char *name, const char **v, size_t n)
{
	onnx_attr *a = &h->attrs[h->node.n_attrs++];
	a->name = (char *)name;
	a->type = ONNX_ATTR_STRINGS;
	a->strings = (char **)v;
	a->n_strings = n;
}

static void assert_strs(const mfs_tensor *t, int n, const char *const *want)
{
	assert_int_equal(t->dtype, MFS_DT_STRING);
	assert_int_equal(mfs_shape_numel(&t->shape), n);
	for (int i = 0; i < n; i++) {
		const mfs_string *s = mfs_string_at(t, i);
		if (s->len != strlen(want[i]) || (s->len && memcmp(s->ptr, want[i], s->len))) {
			fprintf(stderr, "element %d: '%.*s', want '%s'\n", i, (int)s->len,
				s->ptr ? s->ptr : "", want[i]);
			fail();
		}
		/* every element is NUL-terminated after its bytes */
		assert_true(!s->len || s->ptr[s->len] == '\0');
	}
}

static void assert_i64s(const mfs_tensor *t, int n, const int64_t *want)
{
	assert_int_equal(t->dtype, MFS_DT_INT64);
	assert_int_equal(mfs_shape_numel(&t->shape), n);
	for (int i = 0; i < n; i++)
		assert_int_equal(((const int64_t *)t->data)[i], want[i]);
}

static void assert_bools(const mfs_tensor *t, int n, const uint8_t *want)
{
	assert_int_equal(t->dtype, MFS_DT_BOOL);
	assert_int_equal(mfs_shape_numel(&t->shape), n);
	for (int i = 0; i < n; i++)
		if (((const uint8_t *)t->data)[i] != want[i]) {
			fprintf(stderr, "element %d: %d, want %d\n", i,
				((const uint8_t *)t->data)[i], want[i]);
			fail();
		}
}

/* The run fails with -code and a message naming the node and holding want. */
static void assert_fails(harness *h, int code, const char *want)
{
	int rc = h_run(h);
	if (rc != -code || !strstr(h->err.msg, want))
		fprintf(stderr, "rc %d, message: %s (wanted '%s')\n", rc, h->err.msg, want);
	assert_int_equal(rc, -code);
	assert_non_null(strstr(h->err.msg, want));
	assert_non_null(strstr(h->err.msg, "'n'"));   /* the node's name */
}

/* ---- Cast and CastLike ---------------------------------------------- */

static void cast_to_string(mfs_dtype from, int n, const void *data, const char *const *want)
{
	harness h;
	int64_t d[] = { n };

	h_init(&h, "Cast", 13, 1);
	h_attr_int(&h, "to", MFS_DT_STRING);
	h_in(&h, from, 1, d, (void *)data);
	assert_int_equal(h_run(&h), 0);
	assert_strs(&h.out[0], n, want);
	h_free(&h);
}

static void test_cast_numbers_to_string(void **st)
{
	(void)st;
	/* numpy's str(): shortest text that reads back, ".0" on integral
	 * values, scientific below 1e-4 and from 1e16 */
	float f[] = { 0.1f, 1.0f, 1e-5f, 3.4028235e38f, -0.0f, 16777216.0f, 1e-4f, -2.5f,
		      NAN, INFINITY, -INFINITY };
	const char *fw[] = { "0.1", "1.0", "1e-05", "3.4028235e+38", "-0.0", "16777216.0",
			     "1e-04", "-2.5", "NaN", "INF", "-INF" };
	double d[] = { 0.1, 1e16, 123456789012.0, 1e-4, 1.0 / 3 };
	const char *dw[] = { "0.1", "1e+16", "123456789012.0", "0.0001", "0.3333333333333333" };
	int64_t i64[] = { INT64_MIN, 0, INT64_MAX };
	const char *iw[] = { "-9223372036854775808", "0", "9223372036854775807" };
	uint8_t u8[] = { 255, 0 }, b[] = { 1, 0 };
	const char *uw[] = { "255", "0" }, *bw[] = { "True", "False" };
	int8_t i8[] = { -128 };
	const char *i8w[] = { "-128" };
	uint16_t h16[] = { mfs_float_to_half(0.1f) };
	const char *hw[] = { "0.1" };

	cast_to_string(MFS_DT_FLOAT, 11, f, fw);
	cast_to_string(MFS_DT_DOUBLE, 5, d, dw);
	cast_to_string(MFS_DT_INT64, 3, i64, iw);
	cast_to_string(MFS_DT_UINT8, 2, u8, uw);
	cast_to_string(MFS_DT_BOOL, 2, b, bw);
	cast_to_string(MFS_DT_INT8, 1, i8, i8w);
	cast_to_string(MFS_DT_FLOAT16, 1, h16, hw);
}

static int cast_from(const char *const *s, int n, mfs_dtype to, harness *h)
{
	int64_t d[] = { n };

	h_init(h, "Cast", 13, 1);
	h_attr_int(h, "to", to);
	h_in_str(h, 1, d, s);
	return h_run(h);
}

static void test_cast_string_to_numbers(void **st)
{
	harness h;
	const char *fs[] = { " 1.5 ", "NaN", "INF", "-inf", "1e-05", "+3" };
	const char *is[] = { "-2147483648", " 42", "2147483647" };
	const char *us[] = { "255", "0" };
	const char *bs[] = { "TRUE", "false", "1", "0" };
	uint8_t bw[] = { 1, 0, 1, 0 };
	float *y;

	(void)st;
	assert_int_equal(cast_from(fs, 6, MFS_DT_FLOAT, &h), 0);
	y = h.out[0].data;
	assert_true(y[0] == 1.5f && isnan(y[1]) && isinf(y[2]) && y[2] > 0 && isinf(y[3]) &&
		    y[3] < 0 && y[4] == 1e-5f && y[5] == 3.0f);
	h_free(&h);

	assert_int_equal(cast_from(is, 3, MFS_DT_INT32, &h), 0);
	assert_int_equal(((int32_t *)h.out[0].data)[0], INT32_MIN);
	assert_int_equal(((int32_t *)h.out[0].data)[1], 42);
	assert_int_equal(((int32_t *)h.out[0].data)[2], INT32_MAX);
	h_free(&h);

	assert_int_equal(cast_from(us, 2, MFS_DT_UINT8, &h), 0);
	assert_int_equal(((uint8_t *)h.out[0].data)[0], 255);
	h_free(&h);

	assert_int_equal(cast_from(bs, 4, MFS_DT_BOOL, &h), 0);
	assert_bools(&h.out[0], 4, bw);
	h_free(&h);
}

static void cast_from_fails(const char *const *s, const size_t *lens, int n, mfs_dtype to,
			    const char *want)
{
	harness h;
	int64_t d[] = { n };

	h_init(&h, "Cast", 13, 1);
	h_attr_int(&h, "to", to);
	h_in_strn(&h, 1, d, s, lens);
	assert_fails(&h, EINVAL, want);
	h_free(&h);
}

static void test_cast_string_refusals(void **st)
{
	const char *big[] = { "1", "2147483648" };
	const char *junk[] = { "12abc" };
	const char *neg[] = { "-1" };
	const char *empty[] = { "" };
	const char *nul[] = { "1\0002" };
	size_t nul_len[] = { 3 };
	const char *maybe[] = { "yes" };

	(void)st;
	cast_from_fails(big, NULL, 2, MFS_DT_INT32, "element 1 ('2147483648') is not a int32");
	cast_from_fails(junk, NULL, 1, MFS_DT_FLOAT, "element 0 ('12abc') is not a float");
	cast_from_fails(neg, NULL, 1, MFS_DT_UINT8, "is not a uint8");
	cast_from_fails(empty, NULL, 1, MFS_DT_INT64, "element 0 ('')");
	cast_from_fails(nul, nul_len, 1, MFS_DT_INT64, "element 0");   /* a NUL inside */
	cast_from_fails(maybe, NULL, 1, MFS_DT_BOOL, "is not a bool");
}

static void test_castlike_and_string_copy(void **st)
{
	harness h;
	const char *s[] = { "a", "", "c\nd" };
	const char *like[] = { "x" };
	int64_t d[] = { 3 }, one[] = { 1 };
	double v[] = { 2.5, -1, 0 };
	const char *vw[] = { "2.5", "-1.0", "0.0" };

	(void)st;
	/* string to string: the same elements */
	h_init(&h, "Cast", 13, 1);
	h_attr_int(&h, "to", MFS_DT_STRING);
	h_in_str(&h, 1, d, s);
	assert_int_equal(h_run(&h), 0);
	assert_strs(&h.out[0], 3, s);
	h_free(&h);

	/* CastLike takes the target type from input 1 */
	h_init(&h, "CastLike", 15, 1);
	h_in(&h, MFS_DT_DOUBLE, 1, d, v);
	h_in_str(&h, 1, one, like);
	assert_int_equal(h_run(&h), 0);
	assert_strs(&h.out[0], 3, vw);
	h_free(&h);
}

/* ---- StringNormalizer ------------------------------------------------ */

static int normalize(harness *h, int rank, const int64_t *dims, const char *const *x,
		     const char *action, int sensitive, const char **stop, size_t n_stop)
{
	h_init(h, "StringNormalizer", 10, 1);
	if (action)
		h_attr_str(h, "case_change_action", action);
	h_attr_int(h, "is_case_sensitive", sensitive);
	if (stop)
		h_attr_strs(h, "stopwords", stop, n_stop);
	h_in_str(h, rank, dims, x);
	return h_run(h);
}

static void test_string_normalizer(void **st)
{
	harness h;
	const char *days[] = { "monday", "tuesday", "wednesday", "thursday" };
	const char *monday[] = { "monday" };
	const char *lower[] = { "tuesday", "wednesday", "thursday" };
	const char *upper[] = { "TUESDAY", "WEDNESDAY", "THURSDAY" };
	const char *twice[] = { "monday", "monday" };
	const char *empty[] = { "" };
	const char *mixed[] = { "Monday", "tuesday", "wednesday", "Monday", "tuesday", "wednesday" };
	const char *mixed_up[] = { "TUESDAY", "WEDNESDAY", "TUESDAY", "WEDNESDAY" };
	const char *uni[] = { "ÉCOLE", "Straße", "ÀÖ" };
	const char *uni_low[] = { "école", "straße", "àö" };
	int64_t d4[] = { 4 }, d2[] = { 2 }, d16[] = { 1, 6 }, d3[] = { 3 };

	(void)st;
	/* no stopwords, no case change: the input as it is */
	assert_int_equal(normalize(&h, 1, d4, days, "NONE", 1, NULL, 0), 0);
	assert_strs(&h.out[0], 4, days);
	h_free(&h);

	assert_int_equal(normalize(&h, 1, d4, days, "LOWER", 1, monday, 1), 0);
	assert_shape(&h.out[0], 1, 3);
	assert_strs(&h.out[0], 3, lower);
	h_free(&h);

	assert_int_equal(normalize(&h, 1, d4, days, "UPPER", 1, monday, 1), 0);
	assert_strs(&h.out[0], 3, upper);
	h_free(&h);

	/* every word a stopword: one empty string */
	assert_int_equal(normalize(&h, 1, d2, twice, "UPPER", 1, monday, 1), 0);
	assert_shape(&h.out[0], 1, 1);
	assert_strs(&h.out[0], 1, empty);
	h_free(&h);

	/* [1, C], stopwords ignoring case */
	assert_int_equal(normalize(&h, 2, d16, mixed, "UPPER", 0, monday, 1), 0);
	assert_shape(&h.out[0], 2, 1, 4);
	assert_strs(&h.out[0], 4, mixed_up);
	h_free(&h);

	/* case sensitive: "Monday" is not "monday" */
	assert_int_equal(normalize(&h, 2, d16, mixed, "NONE", 1, monday, 1), 0);
	assert_shape(&h.out[0], 2, 1, 6);
	h_free(&h);

	/* Unicode's case mapping, not only ASCII's */
	assert_int_equal(normalize(&h, 1, d3, uni, "LOWER", 1, NULL, 0), 0);
	assert_strs(&h.out[0], 3, uni_low);
	h_free(&h);
}

static void test_string_normalizer_refusals(void **st)
{
	harness h;
	const char *x[] = { "a", "b", "c", "d" };
	int64_t d22[] = { 2, 2 }, d4[] = { 4 };

	(void)st;
	h_init(&h, "StringNormalizer", 10, 1);
	h_in_str(&h, 2, d22, x);
	assert_fails(&h, EINVAL, "shape [C] or [1, C]");
	h_free(&h);

	h_init(&h, "StringNormalizer", 10, 1);
	h_attr_str(&h, "case_change_action", "TITLE");
	h_in_str(&h, 1, d4, x);
	assert_fails(&h, EINVAL, "'TITLE' is not NONE, LOWER or UPPER");
	h_free(&h);

	h_init(&h, "StringNormalizer", 10, 1);
	h_in(&h, MFS_DT_FLOAT, 1, d4, (float[]){ 1, 2, 3, 4 });
	assert_fails(&h, EINVAL, "expected string");
	h_free(&h);
}

/* ---- StringConcat ---------------------------------------------------- */

static void concat_case(int ra, const int64_t *da, const char *const *a, int rb,
			const int64_t *db, const char *const *b, int n, const char *const *want)
{
	harness h;

	h_init(&h, "StringConcat", 20, 1);
	h_in_str(&h, ra, da, a);
	h_in_str(&h, rb, db, b);
	assert_int_equal(h_run(&h), 0);
	assert_strs(&h.out[0], n, want);
	h_free(&h);
}

static void test_string_concat(void **st)
{
	int64_t d2[] = { 2 }, d3[] = { 3 }, d1[] = { 1 }, d21[] = { 2, 1 };
	const char *a[] = { "abc", "def" }, *b[] = { ".com", ".net" };
	const char *ab[] = { "abc.com", "def.net" };
	const char *pets[] = { "cat", "dog", "snake" }, *s[] = { "s" };
	const char *pets_s[] = { "cats", "dogs", "snakes" };
	const char *cat[] = { "cat" }, *cats[] = { "cats" };
	const char *e1[] = { "abc", "" }, *e2[] = { "", "abc" }, *e12[] = { "abc", "abc" };
	const char *u[] = { "的", "中" }, *uu[] = { "的的", "中中" };
	const char *outer[] = { "abc.com", "abc.net", "def.com", "def.net" };
	harness h;

	(void)st;
	concat_case(1, d2, a, 1, d2, b, 2, ab);
	concat_case(1, d3, pets, 1, d1, s, 3, pets_s);        /* broadcasting */
	concat_case(0, NULL, cat, 0, NULL, s, 1, cats);        /* zero-dimensional */
	concat_case(1, d2, e1, 1, d2, e2, 2, e12);             /* empty strings */
	concat_case(1, d2, u, 1, d2, u, 2, uu);                /* UTF-8 */
	concat_case(2, d21, a, 1, d2, b, 4, outer);            /* [2,1] with [2] */

	h_init(&h, "StringConcat", 20, 1);
	h_in_str(&h, 1, d2, a);
	h_in(&h, MFS_DT_INT64, 1, d2, (int64_t[]){ 1, 2 });
	assert_fails(&h, EINVAL, "expected two strings");
	h_free(&h);

	h_init(&h, "StringConcat", 20, 1);
	h_in_str(&h, 1, d2, a);
	h_in_str(&h, 1, d3, pets);
	assert_int_not_equal(h_run(&h), 0);   /* [2] and [3] do not broadcast */
	h_free(&h);
}

/* ---- StringSplit ----------------------------------------------------- */

static void split_case(const char *delim, int64_t maxsplit, int rank, const int64_t *dims,
		       const char *const *x, int out_rank, const int64_t *out_dims,
		       const char *const *want, const int64_t *counts)
{
	harness h;
	int64_t n = 1, m = 1;

	h_init(&h, "StringSplit", 20, 2);
	if (delim)
		h_attr_str(&h, "delimiter", delim);
	if (maxsplit >= 0)
		h_attr_int(&h, "maxsplit", maxsplit);
	h_in_str(&h, rank, dims, x);
	assert_int_equal(h_run(&h), 0);
	assert_int_equal(h.out[0].shape.rank, out_rank);
	for (int i = 0; i < out_rank; i++) {
		assert_int_equal(h.out[0].shape.dims[i], out_dims[i]);
		n *= out_dims[i];
	}
	for (int i = 0; i < rank; i++)
		m *= dims[i];
	assert_strs(&h.out[0], (int)n, want);
	assert_true(mfs_shape_equal(&h.out[1].shape, &h.in[0].shape));
	assert_i64s(&h.out[1], (int)m, counts);
	h_free(&h);
}

static void test_string_split_delimiter(void **st)
{
	int64_t d2[] = { 2 }, o22[] = { 2, 2 }, d3[] = { 3 }, o32[] = { 3, 2 };
	int64_t d22[] = { 2, 2 }, o222[] = { 2, 2, 2 }, o26[] = { 2, 6 }, d1[] = { 1 };
	int64_t o11[] = { 1, 1 }, o12[] = { 1, 2 };
	const char *basic[] = { "abc.com", "def.net" };
	const char *basic_w[] = { "abc", "com", "def", "net" };
	int64_t c22[] = { 2, 2 };
	const char *hw[] = { "hello world", "hello", "world" };
	const char *hw_w[] = { "hello", "world", "hello", "", "world", "" };
	int64_t c211[] = { 2, 1, 1 };
	const char *food[] = { "eggs;milk;chesse", "pepper;salt", "chicken;fish;pork", "spinach" };
	const char *food_w[] = { "eggs", "milk;chesse", "pepper", "salt",
				 "chicken", "fish;pork", "spinach", "" };
	int64_t c2121[] = { 2, 2, 2, 1 };
	const char *consec[] = { "o-n-n--x-", "o-n----nx" };
	const char *consec_w[] = { "o", "n", "n", "", "x", "", "o", "n", "", "", "", "nx" };
	int64_t c66[] = { 6, 6 };
	const char *empty[] = { "" }, *empty_w[] = { "" };
	int64_t c1[] = { 1 };
	const char *multi[] = { "a<>b<><>c" }, *multi_w[] = { "a", "b<><>c" };
	int64_t c2[] = { 2 };

	(void)st;
	split_case(".", -1, 1, d2, basic, 2, o22, basic_w, c22);
	split_case(" ", -1, 1, d3, hw, 2, o32, hw_w, c211);
	split_case(";", 1, 2, d22, food, 3, o222, food_w, c2121);
	split_case("-", -1, 1, d2, consec, 2, o26, consec_w, c66);   /* never grouped */
	split_case(",", -1, 1, d1, empty, 2, o11, empty_w, c1);      /* "" gives [""] */
	split_case("<>", 1, 1, d1, multi, 2, o12, multi_w, c2);      /* a longer delimiter */
}

static void test_string_split_whitespace(void **st)
{
	int64_t d14[] = { 1, 4 }, o142[] = { 1, 4, 2 };
	int64_t d22[] = { 2, 2 }, o223[] = { 2, 2, 3 }, d2[] = { 2 };
	int64_t d0[] = { 0 }, o00[] = { 0, 0 };
	const char *sp[] = { "hello world", "hello  world", " hello world", "hello world  " };
	const char *sp_w[] = { "hello", "world", "hello", "world", "hello", "world", "hello", "world" };
	int64_t c2222[] = { 2, 2, 2, 2 };
	const char *lim[] = { "lorem  ipsum doler", " Open Neural Network Exchange (ONNX)", "onnx",
			      "ONNX runtime " };
	/* after maxsplit the rest keeps its trailing space, as str.split and
	 * ONNX Runtime do */
	const char *lim_w[] = { "lorem", "ipsum doler", "Open", "Neural Network Exchange (ONNX)",
				"onnx", "", "ONNX", "runtime " };
	int64_t c2212[] = { 2, 2, 1, 2 };
	const char *spec[] = { "hello world", "def.net", "o n n x", "the quick brown fox" };
	const char *spec_w[] = { "hello", "world", "", "def.net", "", "", "o", "n", "n x",
				 "the", "quick", "brown fox" };
	int64_t c2133[] = { 2, 1, 3, 3 };
	const char *blank[] = { "", " \t " }, *blank_w[] = { "", "" };
	int64_t c00[] = { 0, 0 };

	(void)st;
	/* runs of whitespace are one separator; none at either end */
	split_case(NULL, -1, 2, d14, sp, 3, o142, sp_w, c2222);
	split_case("", -1, 2, d14, sp, 3, o142, sp_w, c2222);   /* "" is no delimiter */
	split_case(NULL, 1, 2, d14, lim, 3, o142, lim_w, c2212);
	split_case(NULL, 2, 2, d22, spec, 3, o223, spec_w, c2133);
	/* nothing but whitespace: no pieces, and a last dim of 0 (the
	 * largest count) */
	split_case(NULL, -1, 1, d2, blank, 2, (int64_t[]){ 2, 0 }, blank_w, c00);
	split_case(NULL, -1, 1, d0, blank, 2, o00, blank_w, NULL);   /* an empty tensor */
}

static void test_string_split_refusals(void **st)
{
	harness h;
	const char *x[] = { "a b" };
	int64_t d1[] = { 1 };

	(void)st;
	h_init(&h, "StringSplit", 20, 2);
	h_attr_int(&h, "maxsplit", -2);
	h_in_str(&h, 1, d1, x);
	assert_fails(&h, EINVAL, "maxsplit -2 is negative");
	h_free(&h);

	h_init(&h, "StringSplit", 20, 2);
	h_in(&h, MFS_DT_FLOAT, 1, d1, (float[]){ 1 });
	assert_fails(&h, EINVAL, "expected string");
	h_free(&h);
}

/* ---- RegexFullMatch -------------------------------------------------- */

static int regex(harness *h, const char *pattern, int rank, const int64_t *dims,
		 const char *const *x, const size_t *lens)
{
	h_init(h, "RegexFullMatch", 20, 1);
	if (pattern)
		h_attr_str(h, "pattern", pattern);
	h_in_strn(h, rank, dims, x, lens);
	return h_run(h);
}

static void regex_case(const char *pattern, int n, const char *const *x, const size_t *lens,
		       const uint8_t *want)
{
	harness h;
	int64_t d[] = { n };

	assert_int_equal(regex(&h, pattern, 1, d, x, lens), 0);
	assert_bools(&h.out[0], n, want);
	h_free(&h);
}

static void test_regex_full_match(void **st)
{
	harness h;
	const char *urls[] = { "www.google.com", "www.facebook.com", "www.bbc.co.uk" };
	const char *mail[] = { "account@gmail.com", "account@hotmail.com", "not email",
			       "account2@yahoo.com" };
	int64_t d22[] = { 2, 2 };
	const char *ab[] = { "ab", "a", "abc", "b", "" };
	const char *utf[] = { "中文", "\xff", "\xe4\xb8" };
	const char *nul[] = { "a\0b", "a" };
	size_t nul_len[] = { 3, 1 };

	(void)st;
	/* the ONNX specification's examples */
	regex_case("www\\.[\\w.-]+\\.\\bcom\\b", 3, urls, NULL, (uint8_t[]){ 1, 1, 0 });
	assert_int_equal(regex(&h, "(\\W|^)[\\w.\\-]{0,25}@(yahoo|gmail)\\.com(\\W|$)", 2, d22,
			       mail, NULL), 0);
	assert_shape(&h.out[0], 2, 2, 2);
	assert_bools(&h.out[0], 4, (uint8_t[]){ 1, 0, 0, 1 });
	h_free(&h);

	/* the whole element: an alternative that stops early does not count,
	 * one that reaches the end does */
	regex_case("a|ab", 5, ab, NULL, (uint8_t[]){ 1, 1, 0, 0, 0 });
	regex_case("b", 5, ab, NULL, (uint8_t[]){ 0, 0, 0, 1, 0 });
	regex_case("a*", 5, ab, NULL, (uint8_t[]){ 0, 1, 0, 0, 1 });
	/* UTF-8: '.' is one character; bytes that are not UTF-8 match nothing
	 * and are no error */
	regex_case("中.", 3, utf, NULL, (uint8_t[]){ 1, 0, 0 });
	regex_case(".*", 3, utf, NULL, (uint8_t[]){ 1, 0, 0 });
	/* a NUL inside an element is a byte like another */
	regex_case("a\\x00b", 2, nul, nul_len, (uint8_t[]){ 1, 0 });
}

static void test_regex_refusals(void **st)
{
	harness h;
	const char *x[] = { "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaabc" };
	int64_t d1[] = { 1 };

	(void)st;
	/* at load: a pattern PCRE2 cannot compile */
	h_init(&h, "RegexFullMatch", 20, 1);
	h_attr_str(&h, "pattern", "(ab");
	assert_non_null(h.ctx.def->check);
	assert_int_equal(h.ctx.def->check(&h.ctx), -ENOTSUP);
	assert_non_null(strstr(h.err.msg, "RegexFullMatch 'n': pattern '(ab' is not supported: "));
	assert_non_null(strstr(h.err.msg, "at offset 3"));
	h_free(&h);

	assert_int_not_equal(regex(&h, "[z-a]", 1, d1, x, NULL), 0);
	assert_non_null(strstr(h.err.msg, "is not supported"));
	h_free(&h);

	h_init(&h, "RegexFullMatch", 20, 1);
	h_in_str(&h, 1, d1, x);
	assert_fails(&h, EINVAL, "'pattern' (a string) is missing");
	h_free(&h);

	h_init(&h, "RegexFullMatch", 20, 1);
	h_attr_str(&h, "pattern", "a");
	h_in(&h, MFS_DT_INT64, 1, d1, (int64_t[]){ 1 });
	assert_fails(&h, EINVAL, "expected string");
	h_free(&h);

	/* catastrophic backtracking: 2^30 ways to split the a's, each
	 * failing at the end; the match limit stops it */
	h_init(&h, "RegexFullMatch", 20, 1);
	h_attr_str(&h, "pattern", "(a+)+b");
	h_in_str(&h, 1, d1, x);
	assert_fails(&h, EINVAL, "element 0: the pattern backtracks past the match limit");
	h_free(&h);
}

/* ---- Equal on strings, and operators that take none ----------------- */

static void test_equal_strings(void **st)
{
	harness h;
	const char *a[] = { "a", "bc", "", "a\0b" }, *b[] = { "a", "b", "", "a\0c" };
	size_t la[] = { 1, 2, 0, 3 }, lb[] = { 1, 1, 0, 3 };
	uint8_t want[] = { 1, 0, 1, 0 }, want_scalar[] = { 0, 1, 0, 0 };
	const char *bc[] = { "bc" };
	int64_t d4[] = { 4 };

	(void)st;
	h_init(&h, "Equal", 19, 1);
	h_in_strn(&h, 1, d4, a, la);
	h_in_strn(&h, 1, d4, b, lb);
	assert_int_equal(h_run(&h), 0);
	assert_bools(&h.out[0], 4, want);   /* bytes after a NUL count */
	h_free(&h);

	h_init(&h, "Equal", 19, 1);
	h_in_strn(&h, 1, d4, a, la);
	h_in_str(&h, 0, NULL, bc);
	assert_int_equal(h_run(&h), 0);
	assert_bools(&h.out[0], 4, want_scalar);
	h_free(&h);

	/* numbers still compare as numbers at opset 19 */
	h_init(&h, "Equal", 19, 1);
	h_in(&h, MFS_DT_INT64, 1, d4, (int64_t[]){ 1, 2, 3, 4 });
	h_in(&h, MFS_DT_INT64, 1, d4, (int64_t[]){ 1, 0, 3, 0 });
	assert_int_equal(h_run(&h), 0);
	assert_bools(&h.out[0], 4, (uint8_t[]){ 1, 0, 1, 0 });
	h_free(&h);

	/* a string and a number: refused */
	h_init(&h, "Equal", 19, 1);
	h_in_strn(&h, 1, d4, a, la);
	h_in(&h, MFS_DT_INT64, 1, d4, (int64_t[]){ 1, 2, 3, 4 });
	assert_fails(&h, EINVAL, "expected two strings");
	h_free(&h);
}

static void test_no_strings_elsewhere(void **st)
{
	harness h;
	const char *a[] = { "x" };
	int64_t d1[] = { 1 };
	int rc;

	(void)st;
	/* an operator without MFS_OP_STRINGS refuses a string input by name */
	h_init(&h, "Add", 14, 1);
	h_in_str(&h, 1, d1, a);
	h_in_str(&h, 1, d1, a);
	h.node.inputs = (char *[]){ "A", "B" };
	h.node.n_inputs = 2;
	rc = mfs_op_check_strings(&h.ctx);
	assert_int_equal(rc, -ENOTSUP);
	assert_non_null(strstr(h.err.msg, "Add 'n': input 0 ('A') is a string tensor"));
	h_free(&h);

	h_init(&h, "StringConcat", 20, 1);
	h_in_str(&h, 1, d1, a);
	assert_int_equal(mfs_op_check_strings(&h.ctx), 0);
	h_free(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cast_numbers_to_string),
		cmocka_unit_test(test_cast_string_to_numbers),
		cmocka_unit_test(test_cast_string_refusals),
		cmocka_unit_test(test_castlike_and_string_copy),
		cmocka_unit_test(test_string_normalizer),
		cmocka_unit_test(test_string_normalizer_refusals),
		cmocka_unit_test(test_string_concat),
		cmocka_unit_test(test_string_split_delimiter),
		cmocka_unit_test(test_string_split_whitespace),
		cmocka_unit_test(test_string_split_refusals),
		cmocka_unit_test(test_regex_full_match),
		cmocka_unit_test(test_regex_refusals),
		cmocka_unit_test(test_equal_strings),
		cmocka_unit_test(test_no_strings_elsewhere),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

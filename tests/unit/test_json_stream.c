/* test_json_stream.c - JSON tensors read without a document tree
 * (json_stream.c, issue 17): the walk over objects and arrays, the
 * streamed "data" reader, and errors that say what happened (running out
 * of memory is not "invalid JSON at line -1"). */
#include "codec_test_util.h"

#include <jansson.h>

#include "config.h"
#include "infer_json.h"
#include "json_stream.h"

static const int64_t var[] = { -1 };

static void decode_str_ok(mfs_format fmt, const char *s, const mfs_tensor_spec *spec,
			  mfs_tensor *t)
{
	decode_ok(fmt, s, strlen(s), spec, t);
}

struct seen {
	char keys[8][32];
	size_t n;
};

static int note_member(void *ctx, const char *key, mfs_jspan val, mfs_error *err)
{
	struct seen *s = ctx;
	(void)err;
	snprintf(s->keys[s->n++], 32, "%s=%.*s", key, (int)val.len, val.p);
	return 0;
}

static int note_element(void *ctx, size_t i, mfs_jspan val, mfs_error *err)
{
	struct seen *s = ctx;
	(void)err;
	snprintf(s->keys[s->n++], 32, "%zu:%.*s", i, (int)val.len, val.p);
	return 0;
}

static void test_walk(void **state)
{
	(void)state;
	const char *text = " {\"a\" : [1, {\"x\":\"]\"}], \"b\\u0063\":\"s\\\"t\", \"d\":null } \n";
	mfs_jspan doc = mfs_jspan_doc(text, strlen(text));
	mfs_error err;
	struct seen s = { 0 };
	assert_int_equal(mfs_json_value(&doc, &err), 0);
	assert_int_equal(doc.p[0], '{');
	assert_int_equal(doc.p[doc.len - 1], '}');
	assert_int_equal(mfs_json_members(doc, note_member, &s, &err), 0);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.keys[0], "a=[1, {\"x\":\"]\"}]");
	assert_string_equal(s.keys[1], "bc=\"s\\\"t\"");
	assert_string_equal(s.keys[2], "d=null");
	/* the same walks unchecked (a span made by hand) and checked (inside
	 * a document mfs_json_value accepted: values skipped without their
	 * checks, strings with brackets and escaped quotes still whole) */
	for (int checked = 0; checked <= 1; checked++) {
		mfs_jspan arr = { text, strchr(text, '['), 15, checked };
		memset(&s, 0, sizeof(s));
		assert_int_equal(mfs_json_elements(arr, note_element, &s, &err), 0);
		assert_int_equal(s.n, 2);
		assert_string_equal(s.keys[0], "0:1");
		assert_string_equal(s.keys[1], "1:{\"x\":\"]\"}");
	}
	assert_true(doc.checked);
}

static void test_syntax_errors(void **state)
{
	(void)state;
	static const struct { const char *text, *want; } cases[] = {
		{ "", "line 1 column 1: unexpected end of text" },
		{ "[1,\n 2,,3]", "line 2 column 4: unexpected character" },
		{ "[1 2]", "line 1 column 4: expected ',' or ']'" },
		{ "{\"a\" 1}", "line 1 column 6: expected ':'" },
		{ "{1:2}", "line 1 column 2: expected a string key" },
		{ "[01]", "line 1 column 3: expected ',' or ']'" },
		{ "[1.]", "line 1 column 4: invalid number" },
		{ "[-]", "line 1 column 3: invalid number" },
		{ "[\"a\tb\"]", "line 1 column 4: control character in a string" },
		{ "[\"\\q\"]", "invalid escape" },
		{ "[\"\\u12g4\"]", "invalid \\u escape" },
		{ "[tru]", "invalid literal" },
		{ "[1] x", "line 1 column 5: text after the value" },
		{ "\"abc", "unterminated string" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		mfs_jspan doc = mfs_jspan_doc(cases[i].text, strlen(cases[i].text));
		mfs_error err;
		mfs_error_clear(&err);
		assert_int_equal(mfs_json_value(&doc, &err), -EINVAL);
		if (!strstr(err.msg, cases[i].want))
			fail_msg("'%s': message '%s' lacks '%s'", cases[i].text, err.msg, cases[i].want);
	}
	/* Depth is bounded, so a hostile file cannot overflow the stack. */
	char deep[1200];
	memset(deep, '[', 600);
	memset(deep + 600, ']', 600);
	mfs_jspan doc = mfs_jspan_doc(deep, sizeof(deep));
	mfs_error err;
	assert_int_equal(mfs_json_value(&doc, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "nested too deeply"));
}

static void test_streamed_values(void **state)
{
	(void)state;
	mfs_tensor t;
	/* White space anywhere, exponents, nested and empty arrays. */
	mfs_tensor_spec f = spec_of("x", MFS_DT_FLOAT, -1, NULL);
	decode_str_ok(MFS_FMT_JSON, " [ [ 1 ,2.5e1 ] ,\n\t[-3, 4E-1 ] ]\r\n", &f, &t);
	assert_int_equal(t.shape.rank, 2);
	assert_int_equal(t.shape.dims[0], 2);
	assert_int_equal(t.shape.dims[1], 2);
	assert_true(((float *)t.data)[1] == 25.0f);
	assert_true(((float *)t.data)[3] == 0.4f);
	mfs_tensor_release(&t);
	decode_str_ok(MFS_FMT_JSON, "[[],[]]", &f, &t);
	assert_int_equal(t.shape.rank, 2);
	assert_int_equal(t.shape.dims[0], 2);
	assert_int_equal(t.shape.dims[1], 0);
	mfs_tensor_release(&t);
	decode_str_ok(MFS_FMT_JSON, "{\"d\\u0061ta\":[[7]],\"shape\":[1]}", &f, &t);
	assert_int_equal(t.shape.rank, 1);
	assert_true(((float *)t.data)[0] == 7.0f);
	mfs_tensor_release(&t);
	/* Integers are exact over UINT64's whole range and INT64's. */
	mfs_tensor_spec u = spec_of("x", MFS_DT_UINT64, 1, var);
	decode_str_ok(MFS_FMT_JSON, "[18446744073709551615, 0]", &u, &t);
	assert_true(((uint64_t *)t.data)[0] == UINT64_MAX);
	mfs_tensor_release(&t);
	mfs_tensor_spec i = spec_of("x", MFS_DT_INT64, 1, var);
	decode_str_ok(MFS_FMT_JSON, "[-9223372036854775808, 9223372036854775807]", &i, &t);
	assert_true(((int64_t *)t.data)[0] == INT64_MIN);
	assert_true(((int64_t *)t.data)[1] == INT64_MAX);
	mfs_tensor_release(&t);
	decode_str_fails(MFS_FMT_JSON, "[[1,2],\n[3]]", &f, EINVAL, "at index 2, level 1");
	decode_str_fails(MFS_FMT_JSON, "[[],[1]]", &f, EINVAL, "not a regular nested array");
	decode_str_fails(MFS_FMT_JSON, "{\"data\":[1],\n\"data\":[2]}", &f, EINVAL,
			 "invalid JSON at line 2 column 8: duplicate key data");
	decode_str_fails(MFS_FMT_JSON, "{\"shape\":[1],\"shape\":[1],\"data\":[2]}", &f, EINVAL,
			 "duplicate key shape");
}

/* Many values, the shape of the test file: every one lands in
 * its slot. */
static void test_large(void **state)
{
	(void)state;
	size_t rows = 100000, cap = rows * 20 + 4, n = 0;
	char *text = malloc(cap);
	assert_non_null(text);
	text[n++] = '[';
	for (size_t r = 0; r < rows; r++)
		n += (size_t)snprintf(text + n, cap - n, "%s[%zu,2,3,4,5,6,7,8]", r ? "," : "", r % 1000);
	text[n++] = ']';
	mfs_tensor_spec f = spec_of("x", MFS_DT_FLOAT, 2, (int64_t[]){ -1, 8 });
	mfs_tensor t;
	decode_ok(MFS_FMT_JSON, text, n, &f, &t);
	assert_int_equal(t.shape.dims[0], (int64_t)rows);
	const float *v = t.data;
	for (size_t r = 0; r < rows; r++) {
		assert_true(v[r * 8] == (float)(r % 1000));
		assert_true(v[r * 8 + 7] == 8.0f);
	}
	mfs_tensor_release(&t);
	free(text);
}

/* jansson's allocator, made to fail. */
static void *no_malloc(size_t n) { (void)n; return NULL; }

/* Names, datatypes and shapes read without jansson when plain, and
 * everything else still judged by it, with its messages. */
static void test_plain_fast_paths(void **state)
{
	(void)state;
	mfs_tensor t;
	mfs_tensor_spec f = spec_of("x", MFS_DT_FLOAT, -1, NULL);
	decode_str_ok(MFS_FMT_JSON, "{\"shape\":[ 2 ,\n1 ],\"datatype\":\"FP32\",\"data\":[[1],[2]]}", &f, &t);
	assert_int_equal(t.shape.rank, 2);
	assert_int_equal(t.shape.dims[0], 2);
	assert_int_equal(t.shape.dims[1], 1);
	mfs_tensor_release(&t);
	decode_str_ok(MFS_FMT_JSON, "{\"shape\":[2],\"datatype\":\"F\\u005032\",\"data\":[1,2]}", &f, &t);
	assert_int_equal(t.dtype, MFS_DT_FLOAT);
	mfs_tensor_release(&t);
	decode_str_fails(MFS_FMT_JSON, "{\"shape\":[-2],\"data\":[1,2]}", &f, EINVAL, "non-negative integers");
	decode_str_fails(MFS_FMT_JSON, "{\"shape\":[2.0],\"data\":[1,2]}", &f, EINVAL, "non-negative integers");
	decode_str_fails(MFS_FMT_JSON, "{\"shape\":[02],\"data\":[1,2]}", &f, EINVAL, "invalid JSON");
	decode_str_fails(MFS_FMT_JSON, "{\"shape\":[1,2,3,4,5,6,7,8,9],\"data\":[1]}", &f, EINVAL, "more than");
	decode_str_fails(MFS_FMT_JSON, "{\"shape\":[3],\"data\":[1,2]}", &f, EINVAL, "holds 3 values");
	decode_str_fails(MFS_FMT_JSON, "{\"datatype\":\"FP33\",\"data\":[1]}", &f, EINVAL, "unknown datatype \"FP33\"");

	char out[8];
	assert_true(mfs_json_plain_string((mfs_jspan){ "\"ab c\"", "\"ab c\"", 6, false }, out, sizeof(out)));
	assert_string_equal(out, "ab c");
	assert_false(mfs_json_plain_string((mfs_jspan){ "\"a\\nb\"", "\"a\\nb\"", 6, false }, out, sizeof(out)));
	assert_false(mfs_json_plain_string((mfs_jspan){ "\"abcdefgh\"", "\"abcdefgh\"", 10, false }, out, sizeof(out)));
	assert_false(mfs_json_plain_string((mfs_jspan){ "12", "12", 2, false }, out, sizeof(out)));
}

static void test_out_of_memory_is_said(void **state)
{
	(void)state;
	json_malloc_t old_m;
	json_free_t old_f;
	json_get_alloc_funcs(&old_m, &old_f);
	json_set_alloc_funcs(no_malloc, free);

	mfs_tensor_spec f = spec_of("x", MFS_DT_FLOAT, 1, var);
	mfs_tensor t;
	mfs_error err;
	/* an escape: parsed by jansson (plain strings and shapes are not) */
	const char *obj = "{\"shape\":[2],\"datatype\":\"FP\\u00332\",\"data\":[1,2]}";
	int rc = mfs_tensor_decode(MFS_FMT_JSON, obj, strlen(obj), &f, &t, &err);

	static const char *CFG =
		"name: \"m\"\n"
		"input [ { name: \"x\" data_type: TYPE_FP32 dims: [ 2 ] } ]\n"
		"output [ { name: \"y\" data_type: TYPE_FP32 dims: [ 2 ] } ]\n";
	mfs_model_config c;
	mfs_error cerr;
	json_set_alloc_funcs(old_m, old_f);
	assert_int_equal(mfs_config_parse_pbtxt(CFG, strlen(CFG), "config.pbtxt", &c, &cerr), 0);
	json_set_alloc_funcs(no_malloc, free);
	const char *req = "{\"inputs\":[{\"name\":\"\\u0078\",\"data\":[1,2]}]}";
	mfs_infer_req r;
	mfs_error ierr;
	int irc = mfs_infer_parse(&c, req, strlen(req), &r, &ierr);
	json_set_alloc_funcs(old_m, old_f);
	mfs_config_release(&c);

	assert_int_equal(rc, -ENOMEM);
	assert_non_null(strstr(err.msg, "out of memory while reading \"datatype\""));
	assert_null(strstr(err.msg, "line -1"));
	assert_int_equal(irc, -ENOMEM);
	assert_non_null(strstr(ierr.msg, "out of memory"));
	assert_null(strstr(ierr.msg, "invalid JSON"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_walk),
		cmocka_unit_test(test_syntax_errors),
		cmocka_unit_test(test_streamed_values),
		cmocka_unit_test(test_large),
		cmocka_unit_test(test_plain_fast_paths),
		cmocka_unit_test(test_out_of_memory_is_said),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

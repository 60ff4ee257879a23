/* Unit tests for string tensors: their elements and arena
 * (src/base/tensor_string.c), and their string_data in an ONNX
 * TensorProto (exec/onnx/onnx_string.c, through onnx_tensor_encode and
 * onnx_tensor_decode). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "onnx.h"
#include "onnx_internal.h"
#include "tensor.h"

static void make_strings(mfs_tensor *t, int n, const char *const *s, const size_t *lens)
{
	mfs_shape sh = { .rank = 1, .dims = { n } };

	assert_int_equal(mfs_tensor_alloc(t, MFS_DT_STRING, &sh, NULL), 0);
	for (int i = 0; i < n; i++)
		assert_int_equal(mfs_string_set(t, i, s[i], lens ? lens[i] : strlen(s[i]), NULL), 0);
}

static void assert_elem(const mfs_tensor *t, int64_t i, const char *want, size_t len)
{
	const mfs_string *s = mfs_string_at(t, i);

	assert_int_equal(s->len, len);
	if (len) {
		assert_memory_equal(s->ptr, want, len);
		assert_int_equal(s->ptr[len], '\0');
	}
}

static void test_set_alloc_and_total(void **st)
{
	mfs_tensor t;
	const char *s[] = { "alpha", "", "g\0mma" };
	size_t lens[] = { 5, 0, 5 };
	char *p;

	(void)st;
	make_strings(&t, 3, s, lens);
	assert_int_equal(t.dtype, MFS_DT_STRING);
	assert_int_equal(t.nbytes, 3 * sizeof(mfs_string));
	assert_non_null(t.strings);
	assert_elem(&t, 0, "alpha", 5);
	assert_elem(&t, 1, "", 0);
	assert_elem(&t, 2, "g\0mma", 5);   /* any bytes, a NUL included */
	assert_int_equal(mfs_strings_total(&t), 10);

	/* alloc: room for len bytes, the NUL already there */
	p = mfs_string_alloc(&t, 1, 3, NULL);
	assert_non_null(p);
	assert_int_equal(p[3], '\0');
	memcpy(p, "xyz", 3);
	assert_elem(&t, 1, "xyz", 3);
	assert_int_equal(mfs_strings_total(&t), 13);
	mfs_tensor_release(&t);
	assert_null(t.strings);
	assert_null(t.data);
}

static void test_arena_grows(void **st)
{
	mfs_tensor t;
	mfs_shape sh = { .rank = 1, .dims = { 300 } };
	char big[10000];
	const char *first;

	(void)st;
	memset(big, 'b', sizeof(big));
	assert_int_equal(mfs_tensor_alloc(&t, MFS_DT_STRING, &sh, NULL), 0);
	assert_int_equal(mfs_string_set(&t, 0, "first", 5, NULL), 0);
	first = mfs_string_at(&t, 0)->ptr;
	/* many small and a few large elements: new blocks, the old bytes
	 * stay where they were */
	for (int i = 1; i < 300; i++)
		assert_int_equal(mfs_string_set(&t, i, big, i % 50 ? (size_t)i : sizeof(big), NULL), 0);
	assert_ptr_equal(mfs_string_at(&t, 0)->ptr, first);
	assert_elem(&t, 0, "first", 5);
	for (int i = 1; i < 300; i++)
		assert_elem(&t, i, big, i % 50 ? (size_t)i : sizeof(big));
	mfs_tensor_release(&t);
}

static void test_own_strings_and_copy(void **st)
{
	mfs_tensor a, b, c;
	mfs_strarena *old;
	const char *s[] = { "one", "two", "" };
	mfs_shape sh = { .rank = 1, .dims = { 3 } };

	(void)st;
	make_strings(&a, 3, s, NULL);
	/* b's elements point into a's arena, as an operator that only moves
	 * elements leaves them */
	assert_int_equal(mfs_tensor_alloc(&b, MFS_DT_STRING, &sh, NULL), 0);
	memcpy(b.data, a.data, a.nbytes);
	assert_null(b.strings);
	assert_int_equal(mfs_tensor_own_strings(&b, NULL), 0);
	assert_non_null(b.strings);
	assert_ptr_not_equal(mfs_string_at(&b, 0)->ptr, mfs_string_at(&a, 0)->ptr);
	mfs_tensor_release(&a);   /* b no longer needs a */
	assert_elem(&b, 0, "one", 3);
	assert_elem(&b, 1, "two", 3);
	assert_elem(&b, 2, "", 0);

	/* a copy owns its bytes too */
	assert_int_equal(mfs_tensor_copy(&c, &b, NULL), 0);
	assert_ptr_not_equal(mfs_string_at(&c, 1)->ptr, mfs_string_at(&b, 1)->ptr);
	mfs_tensor_release(&b);
	assert_elem(&c, 1, "two", 3);
	mfs_tensor_release(&c);

	/* every element empty: no arena needed, no pointers left behind (the
	 * arena the elements pointed into is the caller's to free) */
	make_strings(&a, 1, (const char *[]){ "" }, NULL);
	old = a.strings;
	assert_int_equal(mfs_tensor_own_strings(&a, NULL), 0);
	assert_null(mfs_string_at(&a, 0)->ptr);
	assert_null(a.strings);
	mfs_strarena_free(old);
	mfs_tensor_release(&a);
}

/* ---- string_data in a TensorProto ----------------------------------- */

static void test_pb_round_trip(void **st)
{
	mfs_tensor t, back;
	const char *s[] = { "hello", "", "wörld", "a\0b" };
	size_t lens[] = { 5, 0, 6, 3 };
	mfs_error err;
	void *buf = NULL;
	size_t len = 0;
	char *name = NULL;

	(void)st;
	make_strings(&t, 4, s, lens);
	t.shape = (mfs_shape){ .rank = 2, .dims = { 2, 2 } };
	assert_int_equal(onnx_tensor_encode(&t, "TEXT", &buf, &len, &err), 0);
	assert_int_equal(onnx_tensor_decode(buf, len, NULL, &back, &name, &err), 0);
	assert_string_equal(name, "TEXT");
	assert_int_equal(back.dtype, MFS_DT_STRING);
	assert_true(mfs_shape_equal(&back.shape, &t.shape));
	for (int i = 0; i < 4; i++)
		assert_elem(&back, i, s[i], lens[i]);
	free(buf);
	free(name);
	mfs_tensor_release(&back);
	mfs_tensor_release(&t);
}

static void test_pb_fill_strings(void **st)
{
	mfs_tensor t;
	mfs_shape sh = { .rank = 1, .dims = { 2 } };
	mfs_error err;
	/* field 6, length-delimited: "ab", then "", then field 1 (varint)
	 * between them, which is skipped */
	const uint8_t ok[] = { 0x32, 2, 'a', 'b', 0x08, 5, 0x32, 0 };
	const uint8_t three[] = { 0x32, 1, 'a', 0x32, 1, 'b', 0x32, 1, 'c' };
	const uint8_t cut[] = { 0x32, 9, 'a' };
	uint8_t enc[64], *end;

	(void)st;
	assert_int_equal(mfs_tensor_alloc(&t, MFS_DT_STRING, &sh, NULL), 0);
	assert_int_equal(onnx_fill_strings(ok, sizeof(ok), 6, &t, &err), 0);
	assert_elem(&t, 0, "ab", 2);
	assert_elem(&t, 1, "", 0);

	/* the encoder writes the same entries, and says how long they are */
	assert_int_equal(onnx_strings_encoded_len(&t, 6), 6);
	end = onnx_strings_encode(&t, 6, enc);
	assert_int_equal(end - enc, 6);
	assert_memory_equal(enc, ((const uint8_t[]){ 0x32, 2, 'a', 'b', 0x32, 0 }), 6);

	assert_int_equal(onnx_fill_strings(three, sizeof(three), 6, &t, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "more than 2 elements"));
	assert_int_equal(onnx_fill_strings(cut, sizeof(cut), 6, &t, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "malformed TensorProto"));
	mfs_tensor_release(&t);
}

static void test_pb_long_element(void **st)
{
	mfs_tensor t, back;
	static char big[200000];
	mfs_error err;
	void *buf = NULL;
	size_t len = 0;

	(void)st;
	memset(big, 'q', sizeof(big));   /* a length that takes a 3-byte varint */
	make_strings(&t, 1, (const char *[]){ big }, (size_t[]){ sizeof(big) });
	assert_int_equal(onnx_strings_encoded_len(&t, 6), 1 + 3 + sizeof(big));
	assert_int_equal(onnx_tensor_encode(&t, NULL, &buf, &len, &err), 0);
	assert_int_equal(onnx_tensor_decode(buf, len, NULL, &back, NULL, &err), 0);
	assert_elem(&back, 0, big, sizeof(big));
	free(buf);
	mfs_tensor_release(&back);
	mfs_tensor_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_alloc_and_total),
		cmocka_unit_test(test_arena_grows),
		cmocka_unit_test(test_own_strings_and_copy),
		cmocka_unit_test(test_pb_round_trip),
		cmocka_unit_test(test_pb_fill_strings),
		cmocka_unit_test(test_pb_long_element),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_response_cache.c - the response cache (response_cache.h), built
 * here with every key hashing alike, so that every entry shares one
 * bucket and only the comparison of whole keys tells them apart: a hit
 * needs the same key bytes and the same owner; LRU eviction within the
 * capacity; an entry larger than the cache is not kept; dropping an
 * owner forgets its entries and no other's. */
#define MFS_RCACHE_TEST_HASH 42u
#include "../../src/core/response_cache.c"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

/* A key of the text s (its NUL too). */
static mfs_rcache_key key_of(const char *s)
{
	mfs_rcache_key k = { 0 };
	mfs_rcache_key_add(&k, s, strlen(s) + 1);
	return k;
}

/* A FP32 tensor of n elements, each v. */
static mfs_tensor floats(int n, float v)
{
	mfs_tensor t = { 0 };
	mfs_shape sh = { .rank = 1, .dims = { n } };
	mfs_error err;
	assert_int_equal(mfs_tensor_alloc(&t, MFS_DT_FLOAT, &sh, &err), 0);
	for (int i = 0; i < n; i++)
		((float *)t.data)[i] = v;
	return t;
}

static void put(mfs_rcache *c, uint64_t owner, const char *key, float v, int n)
{
	mfs_rcache_key k = key_of(key);
	mfs_tensor t = floats(n, v);
	assert_int_equal(mfs_rcache_insert(c, owner, &k, &t, 1), 0);
	assert_null(k.buf);   /* taken */
	mfs_rcache_key_release(&k);
	mfs_tensor_release(&t);
}

/* 1 and the first element of the answer, or 0 on a miss. */
static int get(mfs_rcache *c, uint64_t owner, const char *key, float *v)
{
	mfs_rcache_key k = key_of(key);
	mfs_tensor t = { 0 };
	mfs_error err;
	int rc = mfs_rcache_lookup(c, owner, &k, &t, 1, &err);
	if (rc == 1) {
		assert_true(t.owns_data);
		*v = ((float *)t.data)[0];
	}
	mfs_tensor_release(&t);
	mfs_rcache_key_release(&k);
	return rc;
}

static void test_hit_needs_the_whole_key_and_the_owner(void **state)
{
	(void)state;
	mfs_rcache *c;
	assert_int_equal(mfs_rcache_new(1 << 20, &c), 0);
	uint64_t a = mfs_rcache_new_owner(), b = mfs_rcache_new_owner();
	assert_true(a != b);
	float v = 0;
	assert_int_equal(get(c, a, "x=1", &v), 0);
	put(c, a, "x=1", 1.0f, 4);
	put(c, a, "x=2", 2.0f, 4);   /* same hash, one byte apart */
	put(c, a, "x=10", 10.0f, 4); /* same hash, longer */
	assert_int_equal(get(c, a, "x=1", &v), 1);
	assert_true(v == 1.0f);
	assert_int_equal(get(c, a, "x=2", &v), 1);
	assert_true(v == 2.0f);
	assert_int_equal(get(c, a, "x=10", &v), 1);
	assert_true(v == 10.0f);
	assert_int_equal(get(c, a, "x=3", &v), 0);
	/* Another owner (another version, or the same one reloaded). */
	assert_int_equal(get(c, b, "x=1", &v), 0);
	put(c, b, "x=1", 5.0f, 4);
	assert_int_equal(get(c, b, "x=1", &v), 1);
	assert_true(v == 5.0f);
	assert_int_equal(get(c, a, "x=1", &v), 1);
	assert_true(v == 1.0f);
	/* A second insert of a key there already keeps the first answer. */
	put(c, a, "x=1", 9.0f, 4);
	assert_int_equal(get(c, a, "x=1", &v), 1);
	assert_true(v == 1.0f);
	/* Dropping an owner forgets its entries only. */
	uint64_t bytes, n;
	mfs_rcache_usage(c, &bytes, &n);
	assert_int_equal(n, 4);
	mfs_rcache_drop_owner(c, a);
	assert_int_equal(get(c, a, "x=1", &v), 0);
	assert_int_equal(get(c, a, "x=2", &v), 0);
	assert_int_equal(get(c, b, "x=1", &v), 1);
	mfs_rcache_usage(c, &bytes, &n);
	assert_int_equal(n, 1);
	mfs_rcache_drop_owner(c, b);
	mfs_rcache_usage(c, &bytes, &n);
	assert_int_equal(n, 0);
	assert_int_equal(bytes, 0);
	mfs_rcache_free(c);
}

static void test_lru_within_the_capacity(void **state)
{
	(void)state;
	mfs_rcache *c;
	/* Room for three entries of 1000 floats, not four. */
	uint64_t one = sizeof(entry) + 3 + sizeof(mfs_tensor) + 4000;   /* "k1" and its NUL */
	assert_int_equal(mfs_rcache_new(3 * one + one / 2, &c), 0);
	uint64_t o = mfs_rcache_new_owner();
	float v;
	put(c, o, "k1", 1, 1000);
	put(c, o, "k2", 2, 1000);
	put(c, o, "k3", 3, 1000);
	uint64_t bytes, n;
	mfs_rcache_usage(c, &bytes, &n);
	assert_int_equal(n, 3);
	assert_int_equal(bytes, 3 * one);
	/* k1 used: k2 is now the least recently used, and goes for k4. */
	assert_int_equal(get(c, o, "k1", &v), 1);
	put(c, o, "k4", 4, 1000);
	assert_int_equal(get(c, o, "k2", &v), 0);
	assert_int_equal(get(c, o, "k1", &v), 1);
	assert_int_equal(get(c, o, "k3", &v), 1);
	assert_int_equal(get(c, o, "k4", &v), 1);
	assert_true(v == 4);
	/* An entry larger than the whole cache is not kept, and evicts
	 * nothing. */
	put(c, o, "huge", 5, 4000);
	assert_int_equal(get(c, o, "huge", &v), 0);
	mfs_rcache_usage(c, &bytes, &n);
	assert_int_equal(n, 3);
	assert_true(bytes <= 3 * one + one / 2);
	mfs_rcache_free(c);
}

/* Outputs that are not plain tensors (a sequence) are not kept. */
static void test_only_plain_tensors(void **state)
{
	(void)state;
	mfs_rcache *c;
	assert_int_equal(mfs_rcache_new(1 << 20, &c), 0);
	uint64_t o = mfs_rcache_new_owner();
	mfs_tensor seq = { 0 };
	mfs_error err;
	assert_int_equal(mfs_container_init(&seq, MFS_KIND_SEQUENCE, MFS_KIND_TENSOR,
					    MFS_DT_FLOAT, 0, &err), 0);
	mfs_rcache_key k = key_of("s");
	assert_int_equal(mfs_rcache_insert(c, o, &k, &seq, 1), 0);
	mfs_rcache_key_release(&k);
	mfs_tensor_release(&seq);
	float v;
	assert_int_equal(get(c, o, "s", &v), 0);
	mfs_rcache_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hit_needs_the_whole_key_and_the_owner),
		cmocka_unit_test(test_lru_within_the_capacity),
		cmocka_unit_test(test_only_plain_tensors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

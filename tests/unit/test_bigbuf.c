/* test_bigbuf.c - large blocks given back are kept (bounded, counted in
 * the memory budget) and handed out again for a size they fit; small
 * blocks, and sizes a kept block would more than halve, are not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bigbuf.h"
#include "membudget.h"
#include "tensor.h"

#define MiB ((size_t)1 << 20)

static int teardown(void **state)
{
	(void)state;
	mfs_bigbuf_drain();
	return 0;
}

static void test_kept_and_reused(void **state)
{
	(void)state;
	mfs_membudget_init(0);
	uint64_t used = mfs_membudget_used();
	char *p = mfs_bigbuf_alloc(8 * MiB);
	assert_non_null(p);
	memset(p, 1, 8 * MiB);
	mfs_bigbuf_free(p);
	assert_true(mfs_membudget_used() >= used + 8 * MiB);   /* kept: counted */
	assert_ptr_equal(mfs_bigbuf_alloc(6 * MiB), p);         /* fits: reused */
	assert_int_equal(mfs_membudget_used(), used);
	mfs_bigbuf_free(p);
	char *q = mfs_bigbuf_alloc(3 * MiB);                    /* below the minimum */
	assert_ptr_not_equal(q, p);
	free(q);
	q = mfs_bigbuf_alloc(32 * MiB);                         /* too large for it */
	assert_ptr_not_equal(q, p);
	free(q);
	assert_int_equal(mfs_bigbuf_drain(), 1);
	assert_int_equal(mfs_membudget_used(), used);
}

/* With the daemon's setting (mfs_tensor_set_big_storage), a large
 * tensor's storage is a kept block, given back on release and handed to
 * the next large tensor: zeroed by mfs_tensor_alloc, as it was; small
 * tensors stay on malloc. */
static void test_tensors_reuse_kept_blocks(void **state)
{
	(void)state;
	mfs_tensor t, u, small;
	mfs_shape big = { .rank = 2, .dims = { 1024, 2048 } };   /* 8 MiB of float */
	mfs_error err;

	mfs_membudget_init(0);
	mfs_tensor_set_big_storage(mfs_bigbuf_alloc, mfs_bigbuf_free, MFS_BIGBUF_MIN);
	assert_int_equal(mfs_tensor_alloc_uninit(&t, MFS_DT_FLOAT, &big, &err), 0);
	void *p = t.data;
	memset(p, 0x5a, t.nbytes);
	mfs_tensor_release(&t);
	assert_int_equal(mfs_tensor_alloc(&u, MFS_DT_FLOAT, &big, &err), 0);
	assert_ptr_equal(u.data, p);                      /* the kept block */
	for (size_t i = 0; i < u.nbytes; i += 4096)
		assert_int_equal(((unsigned char *)u.data)[i], 0);
	assert_int_equal(mfs_tensor_alloc(&small, MFS_DT_FLOAT,
					  &(mfs_shape){ .rank = 1, .dims = { 16 } }, &err), 0);
	mfs_tensor_release(&small);
	mfs_tensor_release(&u);
	assert_int_equal(mfs_bigbuf_drain(), 1);
	mfs_tensor_set_big_storage(NULL, NULL, 0);
	/* unset: malloc and free again, nothing kept */
	assert_int_equal(mfs_tensor_alloc(&t, MFS_DT_FLOAT, &big, &err), 0);
	mfs_tensor_release(&t);
	assert_int_equal(mfs_bigbuf_drain(), 0);
}

static void test_bounded(void **state)
{
	(void)state;
	mfs_membudget_init(0);
	enum { N = MFS_BIGBUF_KEEP + MFS_BIGBUF_KEEP_MEDIUM + 2 };
	void *b[2 * N];
	/* Large and medium blocks are kept up to their own counts: medium
	 * ones never take a large one's place. */
	for (int i = 0; i < N; i++) {
		assert_non_null(b[i] = mfs_bigbuf_alloc(MFS_BIGBUF_MIN));
		assert_non_null(b[N + i] = mfs_bigbuf_alloc(MFS_BIGBUF_LARGE));
	}
	for (int i = 0; i < 2 * N; i++)
		mfs_bigbuf_free(b[i]);
	assert_int_equal(mfs_bigbuf_drain(), MFS_BIGBUF_KEEP + MFS_BIGBUF_KEEP_MEDIUM);
	for (int i = 0; i < N; i++)
		mfs_bigbuf_free(mfs_bigbuf_alloc(MFS_BIGBUF_MIN));   /* reused each time */
	assert_int_equal(mfs_bigbuf_drain(), 1);
	/* Small blocks are freed, never kept. */
	mfs_bigbuf_free(malloc(1024));
	mfs_bigbuf_free(NULL);
	assert_int_equal(mfs_bigbuf_drain(), 0);
}

static void test_not_kept_past_the_budget(void **state)
{
	(void)state;
	mfs_membudget_init(6 * MiB);
	void *p = mfs_bigbuf_alloc(8 * MiB);
	mfs_bigbuf_free(p);                  /* 8 MiB would pass --max-memory */
	assert_int_equal(mfs_bigbuf_drain(), 0);
	mfs_membudget_init(0);
}

/* Kept blocks leave once idle: none at once, all when asked for 0. */
static void test_trimmed_when_idle(void **state)
{
	(void)state;
	mfs_membudget_init(0);
	uint64_t used = mfs_membudget_used();
	mfs_bigbuf_free(mfs_bigbuf_alloc(8 * MiB));
	mfs_bigbuf_free(mfs_bigbuf_alloc(16 * MiB));
	assert_int_equal(mfs_bigbuf_trim(MFS_BIGBUF_IDLE_NS), 0);   /* just given back */
	assert_true(mfs_membudget_used() >= used + 24 * MiB);
	assert_int_equal(mfs_bigbuf_trim(0), 2);
	assert_int_equal(mfs_membudget_used(), used);
	assert_int_equal(mfs_bigbuf_drain(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_kept_and_reused, teardown),
		cmocka_unit_test_teardown(test_tensors_reuse_kept_blocks, teardown),
		cmocka_unit_test_teardown(test_bounded, teardown),
		cmocka_unit_test_teardown(test_not_kept_past_the_budget, teardown),
		cmocka_unit_test_teardown(test_trimmed_when_idle, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

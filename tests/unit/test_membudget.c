/* test_membudget.c - the daemon-wide --max-memory budget (issue 17):
 * a take past the limit is refused with ENOSPC and takes nothing; what
 * is given back can be taken again; a limit of 0 refuses nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "membudget.h"

static void test_take_and_refuse(void **state)
{
	(void)state;
	mfs_error err;
	mfs_membudget_init(1000);
	uint64_t base = mfs_membudget_used();
	assert_int_equal(base, 0);
	assert_int_equal(mfs_membudget_take(600, &err), 0);
	assert_int_equal(mfs_membudget_take(400, &err), 0);
	mfs_error_clear(&err);
	assert_int_equal(mfs_membudget_take(1, &err), -ENOSPC);
	assert_int_equal(err.code, ENOSPC);
	assert_non_null(strstr(err.msg, "hold 1000 bytes; 1 more would pass --max-memory=1000"));
	assert_int_equal(mfs_membudget_used(), 1000);
	/* Counted memory may pass the limit (it exists already)... */
	mfs_membudget_force(500);
	assert_int_equal(mfs_membudget_used(), 1500);
	assert_int_equal(mfs_membudget_take(1, &err), -ENOSPC);
	/* ... and what is given back can be taken again. */
	mfs_membudget_give(1500);
	assert_int_equal(mfs_membudget_used(), 0);
	assert_int_equal(mfs_membudget_take(1000, &err), 0);
	mfs_membudget_give(1000);
	/* An overflowing request is refused, not wrapped. */
	assert_int_equal(mfs_membudget_take(UINT64_MAX, &err), -ENOSPC);
}

static void test_no_limit(void **state)
{
	(void)state;
	mfs_error err;
	mfs_membudget_init(0);
	assert_int_equal(mfs_membudget_take((uint64_t)1 << 50, &err), 0);
	mfs_membudget_give((uint64_t)1 << 50);
	assert_int_equal(mfs_membudget_used(), 0);
}

/* A give without its take (a buffer grown behind the budget's back) must
 * not wrap the count: that refused every later write with ENOSPC. */
static void test_give_never_wraps(void **state)
{
	(void)state;
	mfs_error err;
	mfs_membudget_init(1000);
	assert_int_equal(mfs_membudget_take(10, &err), 0);
	mfs_membudget_give(4096);
	assert_int_equal(mfs_membudget_used(), 0);
	assert_int_equal(mfs_membudget_take(1000, &err), 0);
	mfs_membudget_give(1000);
}

static void test_default_is_half_of_ram(void **state)
{
	(void)state;
	uint64_t d = mfs_membudget_default();
	/* This machine has more than 256 MiB; MemTotal/2 is below 16 TiB. */
	assert_true(d >= (uint64_t)128 << 20);
	assert_true(d < (uint64_t)8 << 40);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_take_and_refuse),
		cmocka_unit_test(test_no_limit),
		cmocka_unit_test(test_give_never_wraps),
		cmocka_unit_test(test_default_is_half_of_ram),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

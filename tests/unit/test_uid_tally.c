/* test_uid_tally.c - counts per uid (uid_tally.h): up, down, entries
 * leaving at 0 and others kept, never below 0. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "uid_tally.h"

static void test_counts(void **state)
{
	(void)state;
	uid_tally t = { 0 };
	assert_int_equal(uid_tally_get(&t, 0), 0);
	for (int i = 0; i < 10; i++)
		assert_true(uid_tally_add(&t, 65534, 1));
	for (uid_t u = 1000; u < 1020; u++)   /* past the first capacity */
		assert_true(uid_tally_add(&t, u, 1));
	assert_true(uid_tally_add(&t, 0, 1));
	assert_int_equal(uid_tally_get(&t, 65534), 10);
	assert_int_equal(uid_tally_get(&t, 1005), 1);
	assert_int_equal(uid_tally_get(&t, 0), 1);
	assert_int_equal(t.len, 22);
	/* At 0 an entry goes; the one moved into its place keeps its count. */
	assert_true(uid_tally_add(&t, 1000, -1));
	assert_int_equal(t.len, 21);
	assert_int_equal(uid_tally_get(&t, 1000), 0);
	assert_int_equal(uid_tally_get(&t, 0), 1);
	assert_int_equal(uid_tally_get(&t, 1019), 1);
	assert_int_equal(uid_tally_get(&t, 65534), 10);
	/* Taking away what is not counted changes nothing. */
	assert_true(uid_tally_add(&t, 4242, -1));
	assert_int_equal(uid_tally_get(&t, 4242), 0);
	assert_int_equal(t.len, 21);
	for (int i = 0; i < 10; i++)
		assert_true(uid_tally_add(&t, 65534, -1));
	assert_int_equal(uid_tally_get(&t, 65534), 0);
	assert_int_equal(t.len, 20);
	uid_tally_release(&t);
	assert_int_equal(t.len, 0);
	assert_null(t.e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

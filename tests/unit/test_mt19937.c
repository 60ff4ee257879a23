/* Unit tests for exec/cpu/ops/mt19937.c: the stream must be numpy's legacy
 * generator's (np.random.seed(s); np.random.random_sample()), draw for
 * draw, including past the first refill of its 624-word state. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ops/mt19937.h"

/* Values printed by numpy 1.24 (Debian 12's python3-numpy):
 *   np.random.seed(0); x = np.random.random_sample(700)
 *   '%.17g' % x[0], x[1], x[312], x[699] */
static void test_numpy_seed_0(void **state)
{
	mfs_mt19937 g;
	double x[700];
	(void)state;

	mfs_mt19937_seed(&g, 0);
	for (int i = 0; i < 700; i++)
		x[i] = mfs_mt19937_double(&g);
	assert_true(x[0] == 0.54881350392732475);
	assert_true(x[1] == 0.71518936637241948);
	assert_true(x[312] == 0.079522082586755749);
	assert_true(x[699] == 0.84277686268484231);
	for (int i = 0; i < 700; i++)
		assert_true(x[i] >= 0.0 && x[i] < 1.0);
}

/* The largest seed numpy accepts: np.random.seed(4294967295). */
static void test_numpy_seed_max(void **state)
{
	mfs_mt19937 g;
	(void)state;

	mfs_mt19937_seed(&g, 4294967295u);
	assert_true(mfs_mt19937_double(&g) == 0.097632028994013798);
}

/* MT19937's published check value: the 10000th output of seed 5489. */
static void test_reference_10000th(void **state)
{
	mfs_mt19937 g;
	uint32_t v = 0;
	(void)state;

	mfs_mt19937_seed(&g, 5489);
	for (int i = 0; i < 10000; i++)
		v = mfs_mt19937_next(&g);
	assert_int_equal(v, 4123659995u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_numpy_seed_0),
		cmocka_unit_test(test_numpy_seed_max),
		cmocka_unit_test(test_reference_10000th),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

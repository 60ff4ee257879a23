/* Unit tests for exec/cpu/ops/gemm_small.c: the packed few-rows product
 * against a double-precision loop, at row counts 1..8 and past 8 (more
 * passes over a panel), column counts that leave a partial panel (one
 * vector, or a vector and a part), K of 1 and odd, W as [K, N] and as
 * [N, K] (transB), with and without bias, A's and C's rows strided. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "ops/gemm_small.h"

static float frand(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return (float)((*s >> 9) & 0xFFFF) / 32768.0f - 1.0f;
}

/* One product of m x k by k x n (tb: W stored [n, k]) against a loop;
 * a sentinel beyond each C row's n columns must stay. */
static void check(int64_t m, int64_t n, int64_t k, bool tb, bool with_bias)
{
	unsigned seed = (unsigned)(m * 7919 + n * 131 + k * 7 + tb * 3 + with_bias);
	int64_t lda = k + 3, ldc = n + 5;
	float *a = malloc(sizeof(float) * (size_t)(m * lda + 1));
	float *w = malloc(sizeof(float) * (size_t)(k * n + 1));
	float *b = malloc(sizeof(float) * (size_t)(n + 1));
	float *c = malloc(sizeof(float) * (size_t)(m * ldc + 1));
	mfs_smallm_pack pk;

	assert_non_null(a);
	assert_non_null(w);
	assert_non_null(b);
	assert_non_null(c);
	for (int64_t i = 0; i < m * lda; i++)
		a[i] = frand(&seed);
	for (int64_t i = 0; i < k * n; i++)
		w[i] = frand(&seed);
	for (int64_t i = 0; i < n; i++)
		b[i] = frand(&seed);
	for (int64_t i = 0; i < m * ldc; i++)
		c[i] = 1234.5f;
	assert_int_equal(mfs_smallm_pack_init(&pk, w, k, n, tb), 0);
	mfs_smallm_gemm(&pk, m, a, lda, with_bias ? b : NULL, c, ldc);
	for (int64_t r = 0; r < m; r++) {
		for (int64_t j = 0; j < n; j++) {
			double want = with_bias ? b[j] : 0, mag = fabs(want);
			for (int64_t q = 0; q < k; q++) {
				double x = (double)a[r * lda + q] * (tb ? w[j * k + q] : w[q * n + j]);
				want += x;
				mag += fabs(x);
			}
			double got = c[r * ldc + j];
			if (fabs(got - want) > 1e-5 * mag + 1e-6)
				fail_msg("m %lld n %lld k %lld tb %d bias %d: C[%lld, %lld] %g, want %g",
					 (long long)m, (long long)n, (long long)k, tb, with_bias,
					 (long long)r, (long long)j, got, want);
		}
		for (int64_t j = n; j < ldc && r < m - 1; j++)
			assert_true(c[r * ldc + j] == 1234.5f);
	}
	mfs_smallm_pack_free(&pk);
	assert_null(pk.p);
	free(a);
	free(w);
	free(b);
	free(c);
}

static void test_shapes(void **state)
{
	static const int64_t ms[] = { 1, 2, 3, 5, 7, 8, 9, 16, 19 };
	static const int64_t ns[] = { 1, 15, 16, 17, 31, 32, 33, 64, 100 };
	static const int64_t ks[] = { 1, 7, 64, 129 };
	(void)state;

	if (!mfs_smallm_usable())
		skip();
	for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++)
		for (size_t j = 0; j < sizeof(ns) / sizeof(ns[0]); j++)
			for (size_t q = 0; q < sizeof(ks) / sizeof(ks[0]); q++)
				check(ms[i], ns[j], ks[q], (i + j + q) % 2, (i + q) % 3 != 0);
}

/* A decoder's shapes: GPT-2 small's MLP (768 -> 3072) and a wide head
 * of a partial last panel, 8 rows and one. */
static void test_decoder_shapes(void **state)
{
	(void)state;
	if (!mfs_smallm_usable())
		skip();
	check(8, 3072, 768, false, true);
	check(1, 768, 3072, false, true);
	check(8, 5003, 96, false, false);
	check(4, 5003, 96, true, false);
}

/* MFS_DENSE_SMALL=0 turns the path off. */
static void test_switch(void **state)
{
	(void)state;
	setenv("MFS_DENSE_SMALL", "0", 1);
	assert_false(mfs_smallm_usable());
	unsetenv("MFS_DENSE_SMALL");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shapes),
		cmocka_unit_test(test_decoder_shapes),
		cmocka_unit_test(test_switch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_float_text.c - mfs_float_g9 writes what printf("%.9g") writes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "float_text.h"

static int mismatches;

static void check(float v)
{
	char want[64], got[MFS_FLOAT_G9_SIZE];
	int wn = snprintf(want, sizeof(want), "%.9g", (double)v);
	int gn = mfs_float_g9(v, got);
	if (wn != gn || strcmp(want, got) != 0) {
		if (mismatches++ < 10)
			print_error("%a: printf \"%s\", mfs_float_g9 \"%s\" (%d)\n", (double)v, want, got, gn);
	}
}

static float from_bits(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof(f));
	return f;
}

static uint32_t bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof(u));
	return u;
}

/* Special values, zeros, integers, and the values models give. */
static void test_common_values(void **state)
{
	(void)state;
	mismatches = 0;
	const float vals[] = { 0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 0.1f, 0.2f, 0.3f, 1.5f, 2.5f,
			       3.14159265f, -2.71828183f, 123.456f, 1e-4f, 1e-5f, 9.99999e-5f,
			       16777216.0f, 16777217.0f, 1e8f, 999999999.0f, 1e9f, 1e10f, 3e38f,
			       1e-38f, 1e-45f, 0.001f, 0.999999999f, 99999.9999f, 1e6f + 0.125f,
			       (float)INFINITY, -(float)INFINITY, (float)NAN, -(float)NAN };
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
		check(vals[i]);
	for (int i = -100000; i <= 100000; i++)
		check((float)i);
	for (int i = 0; i <= 100000; i++)
		check((float)i / 100000.0f);
	assert_int_equal(mismatches, 0);
}

/* Around every power of ten the fast path covers and its edges: the
 * decade is chosen right, and a round-up into the next decade. */
static void test_decade_edges(void **state)
{
	(void)state;
	mismatches = 0;
	for (int e = -6; e <= 11; e++) {
		float p = (float)pow(10.0, e);
		uint32_t u = bits(p);
		for (int d = -300; d <= 300; d++) {
			check(from_bits(u + (uint32_t)d));
			check(-from_bits(u + (uint32_t)d));
		}
	}
	assert_int_equal(mismatches, 0);
}

/* Exact ties of the ninth digit (1000000.125 -> 1000000.12, ties to even)
 * and every float of a few dense runs. */
static void test_ties_and_runs(void **state)
{
	(void)state;
	mismatches = 0;
	const float starts[] = { 1e6f, 2e6f, 5e6f, 1e7f, 123456.0f, 1.0f, 0.0001f, 0.5f };
	for (size_t s = 0; s < sizeof(starts) / sizeof(starts[0]); s++) {
		uint32_t u = bits(starts[s]);
		for (uint32_t d = 0; d < 20000; d++)
			check(from_bits(u + d));
	}
	assert_int_equal(mismatches, 0);
}

/* A million bit patterns spread over every float (a fixed LCG). */
static void test_random_bits(void **state)
{
	(void)state;
	mismatches = 0;
	uint32_t x = 12345;
	for (int i = 0; i < 1000000; i++) {
		x = x * 1664525u + 1013904223u;
		check(from_bits(x));
	}
	assert_int_equal(mismatches, 0);
}

/* mfs_decimal_to_double gives strtod's double whenever it answers, and
 * answers for the short decimals requests carry. */
static int dec_mismatches;

static void check_dec(const char *s, bool must_answer)
{
	double got, want = strtod(s, NULL);
	bool ok = mfs_decimal_to_double(s, strlen(s), &got);
	if ((ok && memcmp(&got, &want, sizeof(got)) != 0) || (must_answer && !ok)) {
		if (dec_mismatches++ < 10)
			print_error("\"%s\": strtod %a, mfs_decimal_to_double %s %a\n", s, want,
				    ok ? "gave" : "declined", ok ? got : 0.0);
	}
}

static void test_decimal_to_double(void **state)
{
	(void)state;
	dec_mismatches = 0;
	const char *answered[] = { "0", "-0", "0.0", "-0.0", "1", "1.5", "-2.25", "0.1", "0.3",
				   "3.14159265358979", "1e22", "1e-22", "1234567890123456",
				   "9007199254740992", "0.000001", "1.797693134862315", "2.5E+3",
				   "7e-5", "-1.25e-3", "100000000000000000000e-2" };
	for (size_t i = 0; i < sizeof(answered) / sizeof(answered[0]); i++)
		check_dec(answered[i], strcmp(answered[i], "100000000000000000000e-2") != 0);
	/* declined: strtod decides */
	const char *declined[] = { "9007199254740993", "123456789012345678", "1.7976931348623157", "1e23", "1e-23", "12345678901234567890",
				   "1.", ".5", "1e", "--1", "1.2.3", "", "-", "1e+", "0x10", "inf" };
	for (size_t i = 0; i < sizeof(declined) / sizeof(declined[0]); i++) {
		double d;
		if (mfs_decimal_to_double(declined[i], strlen(declined[i]), &d))
			fail_msg("\"%s\" should have been left to strtod", declined[i]);
	}
	/* random decimals: m digits, a point somewhere, an exponent */
	uint32_t x = 777;
	char buf[64];
	for (int i = 0; i < 300000; i++) {
		x = x * 1664525u + 1013904223u;
		int nd = 1 + (int)(x % 17);
		x = x * 1664525u + 1013904223u;
		int point = (int)(x % (uint32_t)(nd + 1));
		x = x * 1664525u + 1013904223u;
		int ex = (int)(x % 41) - 20;
		int k = 0;
		if (x & 0x10000)
			buf[k++] = '-';
		for (int d = 0; d < nd; d++) {
			x = x * 1664525u + 1013904223u;
			if (d == point && d > 0)
				buf[k++] = '.';
			buf[k++] = (char)('0' + (x >> 8) % 10);
		}
		if (x & 0x20000)
			k += snprintf(buf + k, sizeof(buf) - (size_t)k, "e%d", ex);
		buf[k] = '\0';
		check_dec(buf, false);
	}
	assert_int_equal(dec_mismatches, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_common_values),
		cmocka_unit_test(test_decade_edges),
		cmocka_unit_test(test_ties_and_runs),
		cmocka_unit_test(test_random_bits),
		cmocka_unit_test(test_decimal_to_double),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

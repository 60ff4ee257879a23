/* test_hugemem.c - mfs_hugemem_advise marks the 2 MiB pages inside a
 * large block for huge pages (the kernel's VmFlags "hg" in smaps), and
 * leaves small blocks, NULL, and memory outside the block alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hugemem.h"

/* Does the mapping holding address a carry VmFlags "hg" (MADV_HUGEPAGE)? */
static bool advised(const void *a)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	assert_non_null(f);
	char line[512];
	bool in = false, hg = false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {   /* a mapping's first line */
			in = (uintptr_t)a >= lo && (uintptr_t)a < hi;
			continue;
		}
		if (in && strncmp(line, "VmFlags:", 8) == 0) {
			hg = strstr(line, " hg") != NULL;
			break;
		}
	}
	fclose(f);
	return hg;
}

static bool thp_available(void)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	char s[128] = "";
	if (f) {
		if (!fgets(s, sizeof(s), f))
			s[0] = '\0';
		fclose(f);
	}
	return f && !strstr(s, "[never]");
}

static void test_large_block_is_advised(void **state)
{
	(void)state;
	if (!thp_available())
		skip();
	size_t n = (size_t)16 << 20;
	char *p = malloc(n);
	assert_non_null(p);
	assert_false(advised(p + n / 2));
	mfs_hugemem_advise(p, n);
	assert_true(advised(p + n / 2));
	/* The block is still ordinary memory. */
	memset(p, 7, n);
	assert_int_equal(p[n - 1], 7);
	free(p);
}

static void test_small_block_and_null_left_alone(void **state)
{
	(void)state;
	mfs_hugemem_advise(NULL, (size_t)64 << 20);
	size_t n = MFS_HUGEMEM_MIN - 1;
	char *p = malloc(n);
	assert_non_null(p);
	bool before = advised(p);
	mfs_hugemem_advise(p, n);
	assert_int_equal(advised(p), before);
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_large_block_is_advised),
		cmocka_unit_test(test_small_block_and_null_left_alone),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_malloc_policy.c - mfs_malloc_keep_pages (malloc_policy.h): a block
 * a little larger than the one freed before it, as a decoder's growing
 * cache asks at every step, reuses the freed pages instead of faulting a
 * fresh mapping in; and the environment's own settings are kept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "malloc_policy.h"

static long minor_faults(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* The faults of 20 steps of a 4 MiB block growing by 64 KiB a step, each
 * written whole (memset: the compiler may not drop it, the block goes to
 * free). */
static long growing_block_faults(void)
{
	size_t size = (size_t)4 << 20;
	void *p = malloc(size);
	assert_non_null(p);
	memset(p, 1, size);
	long f0 = minor_faults();
	for (int step = 0; step < 20; step++) {
		free(p);
		size += (size_t)64 << 10;
		p = malloc(size);
		assert_non_null(p);
		memset(p, 1, size);
	}
	long faults = minor_faults() - f0;
	free(p);
	return faults;
}

static void test_environment_kept(void **st)
{
	(void)st;
	setenv("MALLOC_MMAP_THRESHOLD_", "131072", 1);
	assert_int_equal(mfs_malloc_keep_pages(), 0);
	unsetenv("MALLOC_MMAP_THRESHOLD_");
}

static void test_growing_block_reuses_pages(void **st)
{
	(void)st;
	unsetenv("GLIBC_TUNABLES");
	unsetenv("MALLOC_TRIM_THRESHOLD_");
#ifdef __SANITIZE_ADDRESS__
	/* ASan's allocator is not glibc's: mallopt does nothing there */
	mfs_malloc_keep_pages();
	skip();
#endif
	assert_int_equal(mfs_malloc_keep_pages(), 1);
	/* fresh mappings: 20 x (4 MiB + ...) / 4 KiB = 20000+ faults; reused
	 * heap: the 64 KiB a step grows (16 pages), 320 in all */
	long faults = growing_block_faults();
	if (faults >= 2000)
		print_error("%ld minor faults in 20 steps\n", faults);
	assert_true(faults < 2000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_environment_kept),
		cmocka_unit_test(test_growing_block_reuses_pages),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_installed_backends.c - the default backend folder is
 * BINDIR/../lib/modelfs/backends of the running binary: absent here
 * until the test makes it beside this binary ($(BUILD)/tests/..), then
 * found, absolute; a plain file of that name is not a folder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libgen.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "installed_backends.h"

static void test_found_only_where_install_puts_it(void **state)
{
	(void)state;
	char exe[4096], lib[4200], modelfs_dir[4300], backends[4400];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	/* This binary is $(BUILD)/tests/test_installed_backends: its
	 * ../lib is $(BUILD)/lib, which no build step makes. */
	snprintf(lib, sizeof(lib), "%s/../lib", dirname(exe));
	snprintf(modelfs_dir, sizeof(modelfs_dir), "%s/modelfs", lib);
	snprintf(backends, sizeof(backends), "%s/backends", modelfs_dir);
	assert_null(mfs_installed_backend_dir());

	assert_int_equal(mkdir(lib, 0755), 0);
	assert_int_equal(mkdir(modelfs_dir, 0755), 0);
	FILE *f = fopen(backends, "w");      /* a file, not a folder */
	assert_non_null(f);
	fclose(f);
	assert_null(mfs_installed_backend_dir());
	assert_int_equal(unlink(backends), 0);

	assert_int_equal(mkdir(backends, 0755), 0);
	char *dir = mfs_installed_backend_dir();
	char *want = realpath(backends, NULL);
	assert_non_null(dir);
	assert_non_null(want);
	assert_string_equal(dir, want);
	assert_int_equal(dir[0], '/');
	assert_null(strstr(dir, "/../"));
	free(dir);
	free(want);
	assert_int_equal(rmdir(backends), 0);
	assert_int_equal(rmdir(modelfs_dir), 0);
	assert_int_equal(rmdir(lib), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_found_only_where_install_puts_it),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

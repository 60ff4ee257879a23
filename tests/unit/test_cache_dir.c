/* test_cache_dir.c - where the caches live (cache_dir.h): --cache-dir,
 * else $XDG_CACHE_HOME/modelfs, else $HOME/.cache/modelfs, else
 * /var/cache/modelfs for root; a subdirectory of it per user; mkdir -p. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cache_dir.h"

static void test_order(void **state)
{
	char buf[256];
	(void)state;
	setenv("XDG_CACHE_HOME", "/x/cache", 1);
	setenv("HOME", "/home/u", 1);
	mfs_cache_set_base(NULL);
	assert_true(mfs_cache_path("routes", buf, sizeof(buf)));
	assert_string_equal(buf, "/x/cache/modelfs/routes");
	unsetenv("XDG_CACHE_HOME");
	assert_true(mfs_cache_path("opencl", buf, sizeof(buf)));
	assert_string_equal(buf, "/home/u/.cache/modelfs/opencl");
	unsetenv("HOME");
	if (geteuid() == 0) {
		assert_true(mfs_cache_path(NULL, buf, sizeof(buf)));
		assert_string_equal(buf, "/var/cache/modelfs");
	} else {
		assert_false(mfs_cache_path(NULL, buf, sizeof(buf)));
	}
	mfs_cache_set_base("/srv/c");
	assert_true(mfs_cache_path("routes", buf, sizeof(buf)));
	assert_string_equal(buf, "/srv/c/routes");
	/* too long for the buffer: no cache rather than a cut path */
	assert_false(mfs_cache_path("routes", buf, 8));
	mfs_cache_set_base("");
	setenv("HOME", "/home/u", 1);
	assert_true(mfs_cache_path(NULL, buf, sizeof(buf)));
	assert_string_equal(buf, "/home/u/.cache/modelfs");
}

static void test_make_dirs(void **state)
{
	char dir[] = "/tmp/metrics-test-cache-XXXXXX", path[128], cmd[160];
	struct stat st;
	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a/b/c", dir);
	assert_int_equal(mfs_make_dirs(path), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(mfs_make_dirs(path), 0);   /* already there */
	snprintf(path, sizeof(path), "%s/file", dir);
	FILE *f = fopen(path, "w");
	fclose(f);
	snprintf(path, sizeof(path), "%s/file/sub", dir);
	assert_int_equal(mfs_make_dirs(path), -1);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_make_dirs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_file_util.c - mfs_read_file on real files: contents and the
 * terminator, an empty file, the size limit, and each refusal with the
 * errno its callers (model loading, configs, `modelfs run`) report. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "file_util.h"
#include "tmp_tree.h"

static tmp_tree tree;

static int setup(void **state)
{
	(void)state;
	return tmp_tree_make(&tree, "mfs-test-file");
}

static int teardown(void **state)
{
	(void)state;
	return tmp_tree_remove(&tree);
}

static void test_reads_whole_file(void **state)
{
	char path[512], *buf;
	size_t len;
	mfs_error err;
	(void)state;
	tmp_put(&tree, "a.txt", "hello\nworld");
	tmp_path(&tree, "a.txt", path, sizeof(path));
	assert_int_equal(mfs_read_file(path, 100, &buf, &len, &err), 0);
	assert_int_equal(len, 11);
	assert_memory_equal(buf, "hello\nworld", 11);
	assert_int_equal(buf[len], '\0');   /* text parsers rely on it */
	free(buf);

	/* exactly at the limit is allowed; one byte over is EFBIG */
	assert_int_equal(mfs_read_file(path, 11, &buf, &len, &err), 0);
	free(buf);
	assert_int_equal(mfs_read_file(path, 10, &buf, &len, &err), -EFBIG);
	assert_null(buf);
	assert_int_equal(len, 0);
	assert_non_null(strstr(err.msg, "11 bytes"));
}

static void test_empty_file(void **state)
{
	char path[512], *buf;
	size_t len = 99;
	mfs_error err;
	(void)state;
	tmp_put(&tree, "empty", "");
	tmp_path(&tree, "empty", path, sizeof(path));
	assert_int_equal(mfs_read_file(path, 0, &buf, &len, &err), 0);
	assert_int_equal(len, 0);
	assert_non_null(buf);
	assert_int_equal(buf[0], '\0');
	free(buf);
}

static void test_refusals(void **state)
{
	char path[512], *buf = (char *)1;
	size_t len;
	mfs_error err;
	(void)state;
	tmp_path(&tree, "missing", path, sizeof(path));
	assert_int_equal(mfs_read_file(path, 100, &buf, &len, &err), -ENOENT);
	assert_null(buf);
	assert_non_null(strstr(err.msg, "No such file"));

	assert_int_equal(mfs_read_file(tree.root, 100, &buf, &len, &err), -EINVAL);
	assert_string_equal(err.msg, "not a regular file");

	/* A FIFO with no writer: refused at once, not waited on. */
	tmp_path(&tree, "fifo", path, sizeof(path));
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(mfs_read_file(path, 100, &buf, &len, &err), -EINVAL);

	/* Unreadable (root reads anything: only checked as another user). */
	if (geteuid() != 0) {
		tmp_put(&tree, "secret", "x");
		tmp_path(&tree, "secret", path, sizeof(path));
		assert_int_equal(chmod(path, 0), 0);
		assert_int_equal(mfs_read_file(path, 100, &buf, &len, &err), -EACCES);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reads_whole_file),
		cmocka_unit_test(test_empty_file),
		cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

/* test_labels.c - label files (Triton's label_filename): one label per
 * line, CRLF or LF, an empty line is an empty label (indices stay line
 * numbers), the last line's end optional; invalid UTF-8 or a NUL byte is
 * an error naming the file and line; a missing file names the file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "labels.h"

static char path[64];

static int write_file(const char *bytes, size_t n)
{
	snprintf(path, sizeof(path), "/tmp/mfs_labels_XXXXXX");
	int fd = mkstemp(path);
	if (fd < 0)
		return -1;
	ssize_t w = write(fd, bytes, n);
	close(fd);
	return w == (ssize_t)n ? 0 : -1;
}

static void test_lines_crlf_empty_and_last_line(void **state)
{
	(void)state;
	static const char text[] = "cat\r\ndog\n\nbird";
	mfs_labels *l = NULL;
	mfs_error err;

	assert_int_equal(write_file(text, sizeof(text) - 1), 0);
	assert_int_equal(mfs_labels_load(path, &l, &err), 0);
	assert_int_equal(l->n, 4);
	assert_string_equal(mfs_labels_get(l, 0), "cat");
	assert_string_equal(mfs_labels_get(l, 1), "dog");
	assert_string_equal(mfs_labels_get(l, 2), "");
	assert_string_equal(mfs_labels_get(l, 3), "bird");
	assert_null(mfs_labels_get(l, 4));
	assert_null(mfs_labels_get(l, -1));
	assert_null(mfs_labels_get(NULL, 0));
	mfs_labels_free(l);
	unlink(path);

	/* A final newline ends the last label; it does not start another. */
	assert_int_equal(write_file("a\nb\n", 4), 0);
	assert_int_equal(mfs_labels_load(path, &l, &err), 0);
	assert_int_equal(l->n, 2);
	assert_string_equal(mfs_labels_get(l, 1), "b");
	mfs_labels_free(l);
	unlink(path);

	assert_int_equal(write_file("", 0), 0);
	assert_int_equal(mfs_labels_load(path, &l, &err), 0);
	assert_int_equal(l->n, 0);
	mfs_labels_free(l);
	unlink(path);
}

static void test_utf8_kept_bad_bytes_refused(void **state)
{
	(void)state;
	static const char good[] = "caf\xc3\xa9\n\xe7\x8c\xab\n";
	static const char bad[] = "ok\nbad \xc3(\n";
	static const char nul[] = "ok\nx\0y\n";
	mfs_labels *l = NULL;
	mfs_error err;

	assert_int_equal(write_file(good, sizeof(good) - 1), 0);
	assert_int_equal(mfs_labels_load(path, &l, &err), 0);
	assert_string_equal(mfs_labels_get(l, 0), "caf\xc3\xa9");
	mfs_labels_free(l);
	unlink(path);

	assert_int_equal(write_file(bad, sizeof(bad) - 1), 0);
	assert_int_equal(mfs_labels_load(path, &l, &err), -EINVAL);
	assert_null(l);
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, ":2: not a line of UTF-8 text"));
	unlink(path);

	assert_int_equal(write_file(nul, sizeof(nul) - 1), 0);
	assert_int_equal(mfs_labels_load(path, &l, &err), -EINVAL);
	assert_non_null(strstr(err.msg, ":2: "));
	unlink(path);
}

static void test_missing_file_is_named(void **state)
{
	(void)state;
	mfs_labels *l = NULL;
	mfs_error err;

	assert_int_equal(mfs_labels_load("/nonexistent/labels.txt", &l, &err), -ENOENT);
	assert_null(l);
	assert_non_null(strstr(err.msg, "label file /nonexistent/labels.txt: "));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines_crlf_empty_and_last_line),
		cmocka_unit_test(test_utf8_kept_bad_bytes_refused),
		cmocka_unit_test(test_missing_file_is_named),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

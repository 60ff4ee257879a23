/* test_error.c - errors and log lines stay one printable line whatever a
 * client or a model file put in the names they carry (issue 17, log
 * injection): mfs_escape, mfs_fail, mfs_error_prefix and mfs_log. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "error.h"
#include "log.h"

static void test_escape_controls(void **state)
{
	(void)state;
	char out[128];
	assert_int_equal(mfs_escape(out, sizeof(out), "a\nb\rc\td\x1b[31m\x7f"), 22);
	assert_string_equal(out, "a\\nb\\rc\\td\\x1b[31m\\x7f");
	/* Printable ASCII and backslashes stay as they are: escaping twice
	 * changes nothing. */
	mfs_escape(out, sizeof(out), "C:\\x0a \"q\" ~");
	assert_string_equal(out, "C:\\x0a \"q\" ~");
	char again[128];
	mfs_escape(out, sizeof(out), "x\ny");
	mfs_escape(again, sizeof(again), out);
	assert_string_equal(again, out);
}

static void test_escape_utf8(void **state)
{
	(void)state;
	char out[128];
	/* Valid UTF-8 (é, €, 😀) is kept. */
	mfs_escape(out, sizeof(out), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	assert_string_equal(out, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	/* A lone continuation byte, a cut sequence, an overlong '/', a
	 * surrogate, the C1 control NEL and U+2028 are escaped per byte. */
	mfs_escape(out, sizeof(out), "\x80|\xc3|\xc0\xaf|\xed\xa0\x80|\xc2\x85|\xe2\x80\xa8");
	assert_string_equal(out, "\\x80|\\xc3|\\xc0\\xaf|\\xed\\xa0\\x80|\\xc2\\x85|\\xe2\\x80\\xa8");
}

static void test_escape_cut(void **state)
{
	(void)state;
	char out[6];
	/* "ab\n" needs 4 bytes; "\x01" 4 more: cut before it, never inside. */
	assert_int_equal(mfs_escape(out, sizeof(out), "ab\n\x01"), 4);
	assert_string_equal(out, "ab\\n");
	char one[1];
	assert_int_equal(mfs_escape(one, sizeof(one), "abc"), 0);
	assert_string_equal(one, "");
}

static void test_fail_and_prefix_escape(void **state)
{
	(void)state;
	mfs_error err;
	const char *name = "x\n12:00:00.000 modelfs error: forged";
	assert_int_equal(mfs_fail(&err, EINVAL, "no input named '%s'", name), -EINVAL);
	assert_null(strchr(err.msg, '\n'));
	assert_string_equal(err.msg, "no input named 'x\\n12:00:00.000 modelfs error: forged'");
	mfs_error_prefix(&err, "'%s': ", "f\r.json");
	assert_string_equal(err.msg,
			    "'f\\r.json': no input named 'x\\n12:00:00.000 modelfs error: forged'");
}

/* mfs_log writes one line to stderr: catch it in a file. */
static void test_log_one_line(void **state)
{
	(void)state;
	FILE *cap = tmpfile();
	assert_non_null(cap);
	int saved = dup(2);
	assert_true(saved >= 0);
	assert_int_equal(dup2(fileno(cap), 2), 2);
	mfs_log_set_level(MFS_LOG_INFO);
	mfs_log_warn("model '%s' infer: no input named '%s'", "m",
		     "a\n00:00:00.000 modelfs error: forged");
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	char text[512] = { 0 };
	rewind(cap);
	size_t n = fread(text, 1, sizeof(text) - 1, cap);
	fclose(cap);
	assert_true(n > 0);
	/* Exactly one newline, at the end. */
	assert_ptr_equal(strchr(text, '\n'), text + n - 1);
	assert_non_null(strstr(text, "no input named 'a\\n00:00:00.000 modelfs error: forged'"));
}

/* --log-format: both carry the date, the time and the zone (issue 31). */
static void test_log_formats(void **state)
{
	(void)state;
	char line[256];
	struct timespec ts = { 1795874587, 123456789 };   /* 2026-11-28T14:03:07.123Z */
	setenv("TZ", "Europe/Paris", 1);
	tzset();
	assert_int_equal(mfs_log_format_parse("default"), MFS_LOG_FORMAT_DEFAULT);
	assert_int_equal(mfs_log_format_parse("ISO8601"), MFS_LOG_FORMAT_ISO8601);
	assert_int_equal(mfs_log_format_parse("iso8601"), MFS_LOG_FORMAT_ISO8601);
	assert_int_equal(mfs_log_format_parse("json"), -1);
	mfs_log_set_format(MFS_LOG_FORMAT_DEFAULT);
	mfs_log_format_line(line, sizeof(line), MFS_LOG_INFO, &ts, "model 'm' version 1: READY");
	assert_string_equal(line, "2026-11-28 15:03:07.123 +0100 modelfs info: model 'm' version 1: READY");
	mfs_log_set_format(MFS_LOG_FORMAT_ISO8601);
	mfs_log_format_line(line, sizeof(line), MFS_LOG_ERROR, &ts, "boom");
	char want[128];
	snprintf(want, sizeof(want), "2026-11-28T14:03:07.123Z E modelfs[%d] boom", (int)getpid());
	assert_string_equal(line, want);
	mfs_log_set_format(MFS_LOG_FORMAT_DEFAULT);
	unsetenv("TZ");
	tzset();
}

/* --log-file: lines go to the file instead of stderr. */
static void test_log_to_fd(void **state)
{
	(void)state;
	FILE *f = tmpfile();
	assert_non_null(f);
	mfs_log_use_fd(dup(fileno(f)));
	mfs_log_set_level(MFS_LOG_INFO);
	mfs_log_info("to the file");
	char text[256] = { 0 };
	rewind(f);
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	assert_true(n > 0);
	assert_non_null(strstr(text, " modelfs info: to the file\n"));
	mfs_log_use_fd(-1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape_controls),
		cmocka_unit_test(test_escape_utf8),
		cmocka_unit_test(test_escape_cut),
		cmocka_unit_test(test_fail_and_prefix_escape),
		cmocka_unit_test(test_log_one_line),
		cmocka_unit_test(test_log_formats),
		cmocka_unit_test(test_log_to_fd),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

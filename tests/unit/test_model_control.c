/* test_model_control.c - the model control modes and the words of
 * MOUNT/MODEL/control (model_control.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "model_control.h"

static int parse(const char *s, mfs_control_verb *v, mfs_error *err)
{
	mfs_error_clear(err);
	return mfs_control_parse(s, strlen(s), true, v, err);
}

static void test_modes(void **state)
{
	(void)state;
	assert_int_equal(mfs_control_mode_parse("poll"), MFS_CONTROL_POLL);
	assert_int_equal(mfs_control_mode_parse("none"), MFS_CONTROL_NONE);
	assert_int_equal(mfs_control_mode_parse("explicit"), MFS_CONTROL_EXPLICIT);
	assert_int_equal(mfs_control_mode_parse("Explicit"), -1);
	assert_int_equal(mfs_control_mode_parse(""), -1);
	assert_int_equal(mfs_control_mode_parse(NULL), -1);
	assert_string_equal(mfs_control_mode_name(MFS_CONTROL_NONE), "none");
	assert_string_equal(mfs_control_mode_name(MFS_CONTROL_EXPLICIT), "explicit");
	/* poll is the default: the zero value */
	assert_int_equal(MFS_CONTROL_POLL, 0);
}

static void test_verbs(void **state)
{
	(void)state;
	mfs_control_verb v = MFS_CONTROL_UNLOAD;
	mfs_error err;
	/* echo and printf: the word, and at most one newline after it */
	assert_int_equal(parse("load\n", &v, &err), 0);
	assert_int_equal(v, MFS_CONTROL_LOAD);
	assert_int_equal(parse("unload", &v, &err), 0);
	assert_int_equal(v, MFS_CONTROL_UNLOAD);
	assert_int_equal(parse("unload\n", &v, &err), 0);
	assert_int_equal(v, MFS_CONTROL_UNLOAD);
	assert_int_equal(parse("load", &v, &err), 0);
	assert_int_equal(v, MFS_CONTROL_LOAD);
}

static void test_refused(void **state)
{
	(void)state;
	mfs_control_verb v;
	mfs_error err;
	static const char *const bad[] = {
		"", "\n", "LOAD", "loads", "lo ad", "load\nload", "load unload", "reload", "unload!",
		"load\nunload", "load\n\n", " load", "load ", "load\r\n", "\tunload\n", "\nload",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i], &v, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "write one word, 'load' or 'unload'"));
	}
	assert_int_equal(parse("reload\n", &v, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "unknown command 'reload'"));
	/* what a client wrote stays one escaped line, cut at 40 bytes */
	assert_int_equal(parse("evil\nline\x01", &v, &err), -EINVAL);
	assert_null(strchr(err.msg, '\n'));
	assert_non_null(strstr(err.msg, "evil\\nline\\x01"));
	char longer[200];
	memset(longer, 'x', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	assert_int_equal(parse(longer, &v, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "xxx...'"));
	assert_true(strlen(err.msg) < 160);
	/* a NUL byte inside is not a word either, and is shown */
	assert_int_equal(mfs_control_parse("load\0garbage", 12, true, &v, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "unknown command 'load\\x00garbage'"));
	assert_int_equal(mfs_control_parse("\0\0", 2, true, &v, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "'\\x00\\x00'"));
	/* several lines in one write: refused whole, shown escaped */
	assert_int_equal(parse("load\nunload", &v, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "unknown command 'load\\nunload'"));
	/* 40 NUL bytes and more: the message stays bounded */
	char zeros[100] = { 0 };
	assert_int_equal(mfs_control_parse(zeros, sizeof(zeros), true, &v, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "\\x00...'"));
	assert_true(strlen(err.msg) < 260);
}

/* A second write on the same open() is refused, whatever it says. */
static void test_one_command_per_open(void **state)
{
	(void)state;
	mfs_control_verb v = MFS_CONTROL_LOAD;
	mfs_error err;
	assert_int_equal(mfs_control_parse("unload", 6, false, &v, &err), -EINVAL);
	assert_int_equal(v, MFS_CONTROL_LOAD);
	assert_non_null(strstr(err.msg, "'unload' came after another write on the same open()"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_modes),
		cmocka_unit_test(test_verbs),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_one_command_per_open),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

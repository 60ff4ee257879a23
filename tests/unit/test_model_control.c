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
	return mfs_control_parse(s, strlen(s), v, err);
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
	/* echo, printf, and blanks around the word */
	assert_int_equal(parse("load\n", &v, &err), 0);
	assert_int_equal(v, MFS_CONTROL_LOAD);
	assert_int_equal(parse("unload", &v, &err), 0);
	assert_int_equal(v, MFS_CONTROL_UNLOAD);
	assert_int_equal(parse("  load \r\n", &v, &err), 0);
	assert_int_equal(v, MFS_CONTROL_LOAD);
	assert_int_equal(parse("\tunload\n\n", &v, &err), 0);
	assert_int_equal(v, MFS_CONTROL_UNLOAD);
}

static void test_refused(void **state)
{
	(void)state;
	mfs_control_verb v;
	mfs_error err;
	static const char *const bad[] = {
		"", "\n", "LOAD", "loads", "lo ad", "load\nload", "load unload", "reload", "unload!",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i], &v, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "write 'load' or 'unload'"));
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
	assert_true(strlen(err.msg) < 120);
	/* a NUL byte inside is not a word either */
	assert_int_equal(mfs_control_parse("load\0x", 6, &v, &err), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_modes),
		cmocka_unit_test(test_verbs),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

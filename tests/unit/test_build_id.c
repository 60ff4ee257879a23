/* test_build_id.c - the running build's identity (build_id.h): the GNU
 * build ID that readelf shows for this very test program, the same on
 * every call. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "build_id.h"

static void test_is_the_elf_build_id(void **state)
{
	char cmd[256], want[128] = "";
	(void)state;
	const char *got = mfs_build_id();
	assert_non_null(got);
	assert_true(strlen(got) > 0);
	assert_ptr_equal(mfs_build_id(), got);   /* computed once */
	/* what binutils reads from /proc/self/exe's notes */
	snprintf(cmd, sizeof(cmd), "readelf -n /proc/%d/exe 2>/dev/null | sed -n 's/.*Build ID: //p'",
		 (int)getpid());
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	if (!fgets(want, sizeof(want), p))
		want[0] = '\0';
	pclose(p);
	want[strcspn(want, "\n")] = '\0';
	if (!want[0])
		skip();   /* no readelf, or linked without a build ID */
	assert_string_equal(got, want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_is_the_elf_build_id),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

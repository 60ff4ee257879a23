/* build_dir.h - where a unit test finds what the Makefile built beside
 * it: every test binary is $(BUILD)/tests/test_NAME, so $(BUILD) is two
 * levels up from /proc/self/exe (build/ or build/asan/). */
#ifndef MFS_TEST_BUILD_DIR_H
#define MFS_TEST_BUILD_DIR_H

#include <libgen.h>
#include <stdio.h>
#include <unistd.h>

/* $(BUILD) followed by rel ("" for $(BUILD) itself) into buf; -1 when
 * /proc/self/exe cannot be read. */
static inline int test_build_path(char *buf, size_t size, const char *rel)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = '\0';
	snprintf(buf, size, "%s%s", dirname(dirname(exe)), rel);
	return 0;
}

#endif

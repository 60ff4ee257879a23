/* test_config_cases.c - data-driven config cases, jansson's test-suite
 * style: adding a case is adding a folder.
 *
 *   tests/config/valid/<case>/config.pbtxt|config.json + expected.json
 *       parses, and renders (before auto-complete) to expected.json; the
 *       rendered JSON parses back to the same config.
 *   tests/config/invalid/<case>/config.pbtxt|config.json + expected-error.txt
 *       fails with -EINVAL and exactly that message (one line).
 *
 * The folder is found from the working directory (the repository root) or
 * from this binary's place in build/. */
#include <dirent.h>
#include <limits.h>
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

#include "config.h"

static char cases_dir[1100];

static bool find_cases(void)
{
	char exe[1024];
	struct stat st;
	ssize_t n;

	if (stat("tests/config/valid", &st) == 0) {
		snprintf(cases_dir, sizeof(cases_dir), "tests/config");
		return true;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = '\0';
	/* build/tests/x or build/asan/tests/x */
	for (int up = 0; up < 5; up++) {
		char *slash = strrchr(exe, '/');
		if (!slash)
			return false;
		*slash = '\0';
		snprintf(cases_dir, sizeof(cases_dir), "%s/tests/config", exe);
		if (stat(cases_dir, &st) == 0)
			return true;
	}
	return false;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long len;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)len + 1);
	if (fread(buf, 1, (size_t)len, f) != (size_t)len)
		len = 0;
	buf[len] = '\0';
	fclose(f);
	return buf;
}

static int load_case(const char *dir, mfs_model_config *c, mfs_error *err)
{
	char path[1600];
	struct stat st;

	snprintf(path, sizeof(path), "%s/config.pbtxt", dir);
	if (stat(path, &st) != 0)
		snprintf(path, sizeof(path), "%s/config.json", dir);
	return mfs_config_load_file(path, c, err);
}

static int for_each_case(const char *kind, void (*fn)(const char *dir, const char *name))
{
	char top[1200], dir[1500];
	struct dirent **names;
	int n, count = 0;

	snprintf(top, sizeof(top), "%s/%s", cases_dir, kind);
	n = scandir(top, &names, NULL, alphasort);
	assert_true(n > 0);
	for (int i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.') {
			snprintf(dir, sizeof(dir), "%s/%s", top, names[i]->d_name);
			fn(dir, names[i]->d_name);
			count++;
		}
		free(names[i]);
	}
	free(names);
	return count;
}

static int failures;

static void run_valid(const char *dir, const char *name)
{
	char path[1600];
	mfs_model_config c, back;
	mfs_error err;
	json_error_t jerr;
	json_t *want, *got, *again;
	char *text;

	if (load_case(dir, &c, &err) != 0) {
		print_error("valid/%s: %s\n", name, err.msg);
		failures++;
		return;
	}
	snprintf(path, sizeof(path), "%s/expected.json", dir);
	want = json_load_file(path, 0, &jerr);
	if (!want) {
		print_error("valid/%s: expected.json: %s\n", name, jerr.text);
		failures++;
		mfs_config_release(&c);
		return;
	}
	got = mfs_config_to_json(&c);
	if (!json_equal(got, want)) {
		char *g = json_dumps(got, JSON_INDENT(2));
		print_error("valid/%s: rendered config differs; got:\n%s\n", name, g);
		free(g);
		failures++;
	}
	text = json_dumps(got, 0);
	if (mfs_config_parse_json(text, strlen(text), "rendered", &back, &err) != 0) {
		print_error("valid/%s: rendered JSON does not parse: %s\n", name, err.msg);
		failures++;
	} else {
		again = mfs_config_to_json(&back);
		if (!json_equal(got, again)) {
			print_error("valid/%s: round trip changed the config\n", name);
			failures++;
		}
		json_decref(again);
		mfs_config_release(&back);
	}
	free(text);
	json_decref(got);
	json_decref(want);
	mfs_config_release(&c);
}

static void run_invalid(const char *dir, const char *name)
{
	char path[1600];
	mfs_model_config c;
	mfs_error err;
	char *want;
	size_t len;
	int rc;

	snprintf(path, sizeof(path), "%s/expected-error.txt", dir);
	want = slurp(path);
	if (!want) {
		print_error("invalid/%s: no expected-error.txt\n", name);
		failures++;
		return;
	}
	len = strlen(want);
	while (len && (want[len - 1] == '\n' || want[len - 1] == '\r'))
		want[--len] = '\0';
	rc = load_case(dir, &c, &err);
	if (rc == 0) {
		print_error("invalid/%s: parsed without error\n", name);
		mfs_config_release(&c);
		failures++;
	} else if (rc != -EINVAL || strcmp(err.msg, want) != 0) {
		print_error("invalid/%s: got %d '%s'\n  want '%s'\n", name, rc, err.msg, want);
		failures++;
	}
	free(want);
}

static void test_valid_cases(void **state)
{
	(void)state;
	failures = 0;
	assert_true(for_each_case("valid", run_valid) > 0);
	assert_int_equal(failures, 0);
}

static void test_invalid_cases(void **state)
{
	(void)state;
	failures = 0;
	assert_true(for_each_case("invalid", run_invalid) > 0);
	assert_int_equal(failures, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_cases),
		cmocka_unit_test(test_invalid_cases),
	};
	if (!find_cases()) {
		fprintf(stderr, "test_config_cases: tests/config not found\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_repo.c - repository scanning on a real temporary directory tree. */
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

#include "tmp_tree.h"

#include "log.h"
#include "repo.h"

static tmp_tree tree;
static const char *const root = tree.root;

static void mk(const char *rel) { tmp_mkdir(&tree, rel); }
static void touch(const char *rel) { tmp_put(&tree, rel, ""); }

static int setup(void **state)
{
	(void)state;
	if (tmp_tree_make(&tree, "mfs-test-repo") < 0)
		return -1;
	mk("add_sub");
	mk("add_sub/1");
	mk("add_sub/10");
	mk("add_sub/2");
	mk("add_sub/007");        /* leading zero: not a version */
	mk("add_sub/0");
	mk("add_sub/old");
	touch("add_sub/3");       /* a file, not a directory */
	touch("add_sub/config.pbtxt");
	touch("add_sub/config.json");
	mk("mlp");
	touch("mlp/config.json");
	mk("mlp/4");
	mk("empty");
	mk(".hidden");
	mk(".hidden/1");
	touch("README");
	mk("bad name");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return tmp_tree_remove(&tree);
}

static void test_version_names(void **state)
{
	(void)state;
	int64_t v = 0;
	assert_true(mfs_repo_version_name("1", &v));
	assert_int_equal(v, 1);
	assert_true(mfs_repo_version_name("9223372036854775807", &v));
	assert_int_equal(v, INT64_MAX);
	assert_false(mfs_repo_version_name("9223372036854775808", &v));
	assert_false(mfs_repo_version_name("0", &v));
	assert_false(mfs_repo_version_name("01", &v));
	assert_false(mfs_repo_version_name("", &v));
	assert_false(mfs_repo_version_name("-1", &v));
	assert_false(mfs_repo_version_name("1a", &v));
	assert_false(mfs_repo_version_name(" 1", &v));
	assert_true(mfs_repo_version_name("42", NULL));
}

static void test_model_names(void **state)
{
	(void)state;
	assert_true(mfs_repo_model_name_ok("add_sub"));
	assert_true(mfs_repo_model_name_ok("resnet-50.v2"));
	assert_false(mfs_repo_model_name_ok(".hidden"));
	assert_false(mfs_repo_model_name_ok(""));
	assert_false(mfs_repo_model_name_ok("a/b"));
	assert_false(mfs_repo_model_name_ok("a b"));
	assert_false(mfs_repo_model_name_ok(".."));
	char long_name[66];
	memset(long_name, 'a', 65);
	long_name[65] = '\0';
	assert_false(mfs_repo_model_name_ok(long_name));
	long_name[64] = '\0';
	assert_true(mfs_repo_model_name_ok(long_name));
}

static void test_scan_model(void **state)
{
	(void)state;
	mfs_repo_entry e;
	mfs_error err;
	char want[128];

	assert_int_equal(mfs_repo_scan_model(root, "add_sub", &e, &err), 0);
	assert_string_equal(e.name, "add_sub");
	snprintf(want, sizeof(want), "%s/add_sub", root);
	assert_string_equal(e.dir, want);
	/* config.pbtxt wins over config.json. */
	snprintf(want, sizeof(want), "%s/add_sub/config.pbtxt", root);
	assert_string_equal(e.config_path, want);
	assert_int_equal(e.n_versions, 3);
	assert_int_equal(e.versions[0], 1);
	assert_int_equal(e.versions[1], 2);
	assert_int_equal(e.versions[2], 10);
	mfs_repo_entry_release(&e);

	assert_int_equal(mfs_repo_scan_model(root, "empty", &e, &err), 0);
	assert_null(e.config_path);
	assert_int_equal(e.n_versions, 0);
	mfs_repo_entry_release(&e);

	assert_int_equal(mfs_repo_scan_model(root, "nope", &e, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "model 'nope'"));
	assert_int_equal(mfs_repo_scan_model(root, "README", &e, &err), -ENOENT);
	assert_int_equal(mfs_repo_scan_model(root, "../x", &e, &err), -ENOENT);
}

static void test_scan(void **state)
{
	(void)state;
	mfs_repo_entry *list;
	int n;
	mfs_error err;

	assert_int_equal(mfs_repo_scan(root, &list, &n, &err), 0);
	/* Sorted; dot-directories, files and bad names left out. */
	assert_int_equal(n, 3);
	assert_string_equal(list[0].name, "add_sub");
	assert_string_equal(list[1].name, "empty");
	assert_string_equal(list[2].name, "mlp");
	assert_int_equal(list[2].n_versions, 1);
	assert_int_equal(list[2].versions[0], 4);
	assert_non_null(strstr(list[2].config_path, "mlp/config.json"));
	mfs_repo_entries_free(list, n);

	assert_int_equal(mfs_repo_scan("/nonexistent/repo", &list, &n, &err), -ENOENT);
	assert_null(list);
	assert_int_equal(n, 0);
}

/* Log lines of mfs_repo_note_unversioned(e), read back from stderr. */
static void note_to(const mfs_repo_entry *e, char *buf, size_t size)
{
	FILE *f = tmpfile();
	int saved = dup(2);
	size_t n;

	assert_non_null(f);
	fflush(stderr);
	dup2(fileno(f), 2);
	mfs_repo_note_unversioned(e);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	n = fread(buf, 1, size - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/* A model without versions is warned about; a folder with neither a
 * config nor versions (a second repository, sources) is not. */
static void test_unversioned_notes(void **state)
{
	char cfg[] = "/r/m/config.pbtxt", out[512];
	mfs_repo_entry model = { .name = "m", .config_path = cfg };
	mfs_repo_entry folder = { .name = "backends" };
	(void)state;

	mfs_log_set_level(MFS_LOG_INFO);
	note_to(&model, out, sizeof(out));
	assert_non_null(strstr(out, "model 'm': no version directories, nothing to serve"));
	note_to(&folder, out, sizeof(out));
	assert_string_equal(out, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version_names),
		cmocka_unit_test(test_model_names),
		cmocka_unit_test(test_scan_model),
		cmocka_unit_test(test_scan),
		cmocka_unit_test(test_unversioned_notes),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

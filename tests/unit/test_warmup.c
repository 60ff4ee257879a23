/* test_warmup.c - model_warmup samples (warmup.h) on ONNX's test_add
 * model (x, y float [3,4,5] -> sum), from a temporary repository: the
 * three sources, the checks against the completed config and the file,
 * and running them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tmp_tree.h"

#include "model_load.h"
#include "warmup.h"

#define TEST_ADD "/usr/share/libonnx-testdata/data/node/test_add/model.onnx"
#define N 60   /* elements of [3,4,5] */

static tmp_tree tree;
static const char *const root = tree.root;
static char version_dir[1100];

static int setup(void **state)
{
	(void)state;
	if (tmp_tree_make(&tree, "mfs-test-warmup") < 0)
		return -1;
	tmp_mkdir(&tree, "add");
	tmp_mkdir(&tree, "add/1");
	tmp_mkdir(&tree, "add/1/warmup");
	tmp_sh("cp %s '%s/add/1/model.onnx'", TEST_ADD, root);
	/* y.raw: 0, 1, 2, ... 59 as float32; short.raw: one float short */
	tmp_sh("python3 -c \"import struct,sys; open(sys.argv[1],'wb').write(struct.pack('<60f',*range(60)))\" '%s/add/1/warmup/y.raw'", root);
	tmp_sh("head -c 236 '%s/add/1/warmup/y.raw' > '%s/add/1/warmup/short.raw'", root, root);
	snprintf(version_dir, sizeof(version_dir), "%s/add/1", root);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return tmp_tree_remove(&tree);
}

/* Load add/1 with this config; prepare its samples. */
static int prepare(const char *config, mfs_loaded_version **lv, mfs_warmup_sample **s,
		   int *n, mfs_error *err)
{
	tmp_put(&tree, "add/config.pbtxt", config);
	mfs_error_clear(err);
	if (mfs_load_version(root, "add", 1, NULL, lv, err))
		fail_msg("load: %s", err->msg);
	return mfs_warmup_prepare(&(*lv)->config, (*lv)->graph, version_dir, s, n, err);
}

#define SAMPLE(name, x, y) \
	"model_warmup { name: \"" name "\" count: 2\n" \
	"  inputs { key: \"x\" value { data_type: TYPE_FP32 dims: [3, 4, 5] " x " } }\n" \
	"  inputs { key: \"y\" value { data_type: TYPE_FP32 dims: [3, 4, 5] " y " } } }\n"

static void test_none(void **state)
{
	(void)state;
	mfs_loaded_version *lv;
	mfs_warmup_sample *s = (void *)1;
	int n = -1;
	mfs_error err;
	assert_int_equal(prepare("", &lv, &s, &n, &err), 0);
	assert_null(s);
	assert_int_equal(n, 0);
	mfs_loaded_version_free(lv);
}

static void test_sources_and_run(void **state)
{
	(void)state;
	mfs_loaded_version *lv;
	mfs_warmup_sample *s, *s2;
	int n, n2;
	mfs_error err;
	const char *cfg = SAMPLE("a", "zero_data: true", "input_data_file: \"y.raw\"")
			  SAMPLE("b", "random_data: true", "random_data: true");
	if (prepare(cfg, &lv, &s, &n, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(n, 2);
	assert_string_equal(s[0].def->name, "a");
	assert_int_equal(s[0].n_inputs, 2);
	const float *x = s[0].inputs[0].data, *y = s[0].inputs[1].data;
	assert_int_equal(s[0].inputs[0].shape.rank, 3);
	assert_int_equal(s[0].inputs[0].shape.dims[2], 5);
	for (int i = 0; i < N; i++) {
		assert_true(x[i] == 0.0f);
		assert_true(y[i] == (float)i);
	}
	/* random: in [0, 1), not constant, the same at every load */
	const float *r = s[1].inputs[0].data, *r_other = s[1].inputs[1].data;
	bool differs = false, inputs_differ = false;
	for (int i = 0; i < N; i++) {
		assert_true(r[i] >= 0.0f && r[i] < 1.0f);
		differs |= r[i] != r[0];
		inputs_differ |= r[i] != r_other[i];
	}
	assert_true(differs);
	assert_true(inputs_differ);
	assert_int_equal(mfs_warmup_prepare(&lv->config, lv->graph, version_dir, &s2, &n2, &err), 0);
	assert_memory_equal(s2[1].inputs[0].data, r, N * sizeof(float));

	mfs_exec *e;
	assert_int_equal(mfs_exec_new(lv->graph, mfs_backend_cpu(), &e, &err), 0);
	if (mfs_warmup_run(e, lv->graph, s, n, &err))
		fail_msg("%s", err.msg);
	mfs_exec_free(e);
	mfs_warmup_samples_free(s, n);
	mfs_warmup_samples_free(s2, n2);
	mfs_loaded_version_free(lv);
}

/* prepare must fail with code and a message holding each of want[]. */
static void refused(const char *cfg, int code, const char *const *want)
{
	mfs_loaded_version *lv;
	mfs_warmup_sample *s = NULL;
	int n = 0;
	mfs_error err;
	assert_int_equal(prepare(cfg, &lv, &s, &n, &err), -code);
	for (int i = 0; want[i]; i++)
		if (!strstr(err.msg, want[i]))
			fail_msg("'%s' lacks '%s'", err.msg, want[i]);
	assert_null(s);
	mfs_loaded_version_free(lv);
}

static void test_checks(void **state)
{
	(void)state;
	char path[1300];
	refused(SAMPLE("u", "zero_data: true", "zero_data: true")
		"model_warmup { name: \"v\" inputs { key: \"z\" value { data_type: TYPE_FP32 dims: 1 zero_data: true } } }",
		EINVAL, (const char *[]){ "warm-up sample 'v'", "no input 'z'", "(inputs: x, y)", NULL });
	refused("model_warmup { name: \"t\"\n"
		"  inputs { key: \"x\" value { data_type: TYPE_INT64 dims: [3, 4, 5] zero_data: true } }\n"
		"  inputs { key: \"y\" value { data_type: TYPE_FP32 dims: [3, 4, 5] zero_data: true } } }\n",
		EINVAL, (const char *[]){ "sample 't'", "input 'x' is TYPE_INT64, the model's is TYPE_FP32", NULL });
	refused("model_warmup { name: \"d\"\n"
		"  inputs { key: \"x\" value { data_type: TYPE_FP32 dims: [3, 4, 6] zero_data: true } }\n"
		"  inputs { key: \"y\" value { data_type: TYPE_FP32 dims: [3, 4, 5] zero_data: true } } }\n",
		EINVAL, (const char *[]){ "sample 'd'", "input 'x' has dims [3, 4, 6], the model's are [3, 4, 5]", NULL });
	refused("model_warmup { name: \"m\"\n"
		"  inputs { key: \"y\" value { data_type: TYPE_FP32 dims: [3, 4, 5] zero_data: true } } }\n",
		EINVAL, (const char *[]){ "sample 'm'", "input 'x' is missing", NULL });
	snprintf(path, sizeof(path), "input_data_file '%s/warmup/short.raw' holds 236 bytes, the sample needs 240", version_dir);
	refused(SAMPLE("f", "zero_data: true", "input_data_file: \"short.raw\""),
		EINVAL, (const char *[]){ "sample 'f'", "input 'y'", path, NULL });
	snprintf(path, sizeof(path), "input_data_file '%s/warmup/gone.raw'", version_dir);
	refused(SAMPLE("g", "input_data_file: \"gone.raw\"", "zero_data: true"),
		ENOENT, (const char *[]){ "sample 'g'", "input 'x'", path, NULL });
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_none),
		cmocka_unit_test(test_sources_and_run),
		cmocka_unit_test(test_checks),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

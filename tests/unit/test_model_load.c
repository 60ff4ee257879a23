/* test_model_load.c - loading one model version from a temporary
 * repository holding ONNX's test_add model (x, y float [3,4,5] -> sum):
 * auto-complete from the real graph, and errors that name the model,
 * the version and the file. */
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

#include "model_load.h"

#define TEST_ADD "/usr/share/libonnx-testdata/data/node/test_add/model.onnx"

static tmp_tree tree;
static const char *const root = tree.root;

static void put(const char *rel, const char *text) { tmp_put(&tree, rel, text); }
static void mk(const char *rel) { tmp_mkdir(&tree, rel); }
static void rm(const char *rel) { tmp_unlink(&tree, rel); }
static void copy_model(const char *rel) { tmp_sh("cp %s '%s/%s'", TEST_ADD, root, rel); }

static int setup(void **state)
{
	(void)state;
	if (tmp_tree_make(&tree, "mfs-test-load") < 0)
		return -1;
	mk("add");
	mk("add/1");
	copy_model("add/1/model.onnx");
	mk("add/2");       /* no model file */
	mk("add/3");
	put("add/3/model.onnx", "this is not protobuf");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return tmp_tree_remove(&tree);
}

static void test_no_config(void **state)
{
	(void)state;
	mfs_loaded_version *v;
	mfs_error err;
	char want[128];

	mfs_error_clear(&err);
	if (mfs_load_version(root, "add", 1, NULL, &v, &err))
		fail_msg("%s", err.msg);
	assert_string_equal(v->model_name, "add");
	assert_int_equal(v->version, 1);
	snprintf(want, sizeof(want), "%s/add/1/model.onnx", root);
	assert_string_equal(v->model_path, want);
	assert_non_null(v->graph);
	assert_true(v->load_seconds > 0 && v->load_seconds < 60);
	mfs_model_config *c = &v->config;
	assert_string_equal(c->name, "add");
	assert_int_equal(c->n_inputs, 2);
	assert_string_equal(c->inputs[0].name, "x");
	assert_string_equal(c->inputs[1].name, "y");
	assert_int_equal(c->inputs[1].dtype, MFS_DT_FLOAT);
	assert_int_equal(c->inputs[1].rank, 3);
	assert_int_equal(c->inputs[1].dims[2], 5);
	assert_int_equal(c->n_outputs, 1);
	assert_string_equal(c->outputs[0].name, "sum");
	assert_int_equal(c->outputs[0].graph_index, 0);
	mfs_loaded_version_free(v);
}

static void test_partial_config_and_custom_file(void **state)
{
	(void)state;
	mfs_loaded_version *v;
	mfs_error err;

	put("add/config.pbtxt",
	    "name: \"add\"\n"
	    "input { name: \"y\" data_type: TYPE_FP32 dims: [3, 4, 5] }\n"
	    "input { name: \"x\" data_type: TYPE_FP32 }\n"
	    "default_model_filename: \"net.onnx\"\n");
	copy_model("add/1/net.onnx");
	if (mfs_load_version(root, "add", 1, NULL, &v, &err))
		fail_msg("%s", err.msg);
	assert_string_equal(v->config.inputs[0].name, "y");
	assert_int_equal(v->config.inputs[0].graph_index, 1);
	assert_string_equal(v->config.inputs[1].name, "x");
	assert_non_null(strstr(v->model_path, "/add/1/net.onnx"));
	mfs_loaded_version_free(v);
	rm("add/1/net.onnx");
	rm("add/config.pbtxt");
}

static void expect_error(int64_t version, int code, const char *want_fmt)
{
	mfs_loaded_version *v = (mfs_loaded_version *)1;
	mfs_error err;
	char want[512];

	snprintf(want, sizeof(want), want_fmt, root);
	assert_int_equal(mfs_load_version(root, "add", version, NULL, &v, &err), -code);
	assert_null(v);
	assert_string_equal(err.msg, want);
}

static void test_errors_name_model_version_file(void **state)
{
	(void)state;
	expect_error(2, ENOENT,
		     "model 'add' version 2: %s/add/2/model.onnx: No such file or directory");

	put("add/config.pbtxt", "input { name: \"z\" data_type: TYPE_FP32 }\n");
	expect_error(1, EINVAL,
		     "model 'add' version 1: config input 'z' is not in the graph (its inputs: 'x', 'y')");
	put("add/config.pbtxt", "input { name: \"x\" data_type: TYPE_FP32 dims: [3, 4, 6] }\n");
	expect_error(1, EINVAL,
		     "model 'add' version 1: input 'x': the config's dims [3,4,6] do not match the graph's [3,4,5]");
	put("add/config.pbtxt", "max_batch_size: 4\n");
	expect_error(1, EINVAL,
		     "model 'add' version 1: max_batch_size 4, but the graph fixes the batch dim of input 'x' at 3");
	put("add/config.pbtxt", "name: \"add\"\ninputs { }\n");
	expect_error(1, EINVAL, "model 'add': config.pbtxt:2: unknown field 'inputs' in the model config");
	rm("add/config.pbtxt");
	put("add/config.json", "{\"name\": \"other\"}");
	expect_error(1, EINVAL,
		     "model 'add' version 1: config name 'other' does not match the model directory 'add'");
	rm("add/config.json");

	/* A file that is not ONNX: the engine's reason, after the model,
	 * version and file. */
	mfs_loaded_version *v;
	mfs_error err;
	assert_true(mfs_load_version(root, "add", 3, NULL, &v, &err) < 0);
	assert_null(v);
	assert_true(strncmp(err.msg, "model 'add' version 3: ", 23) == 0);
	assert_non_null(strstr(err.msg, "model.onnx"));
}

static void test_load_config_only(void **state)
{
	(void)state;
	mfs_model_config c;
	mfs_error err;

	assert_int_equal(mfs_load_config(root, "add", &c, &err), 0);
	assert_int_equal(c.n_inputs, 0);     /* nothing completed yet */
	mfs_config_release(&c);
	assert_int_equal(mfs_load_config(root, "missing", &c, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "model 'missing': no such model"));
	assert_int_equal(mfs_load_config(root, "..", &c, &err), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_config),
		cmocka_unit_test(test_partial_config_and_custom_file),
		cmocka_unit_test(test_errors_name_model_version_file),
		cmocka_unit_test(test_load_config_only),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

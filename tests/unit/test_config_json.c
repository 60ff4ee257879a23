/* test_config_json.c - config.json: Triton's JSON form read into the same
 * struct as config.pbtxt, with errors naming the key path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"

static void parse_ok(const char *text, mfs_model_config *c)
{
	mfs_error err;

	mfs_error_clear(&err);
	if (mfs_config_parse_json(text, strlen(text), "config.json", c, &err))
		fail_msg("unexpected error: %s", err.msg);
}

static void parse_fails(const char *text, const char *msg)
{
	mfs_model_config c;
	mfs_error err;

	mfs_error_clear(&err);
	assert_int_equal(mfs_config_parse_json(text, strlen(text), "config.json",
					       &c, &err), -EINVAL);
	assert_string_equal(err.msg, msg);
	mfs_config_release(&c);
}

static void test_triton_form(void **state)
{
	(void)state;
	mfs_model_config c;
	parse_ok("{\"name\": \"add_sub\", \"platform\": \"onnxruntime_onnx\",\n"
		 " \"max_batch_size\": 4,\n"
		 " \"input\": [{\"name\": \"INPUT0\", \"data_type\": \"TYPE_FP32\", \"dims\": [\"16\", -1],\n"
		 "            \"format\": \"FORMAT_NONE\", \"is_shape_tensor\": false, \"optional\": true}],\n"
		 " \"output\": [{\"name\": \"OUTPUT0\", \"data_type\": \"TYPE_INT64\", \"dims\": [16],\n"
		 "             \"reshape\": {\"shape\": [4, 4]}, \"label_filename\": \"\"}],\n"
		 " \"version_policy\": {\"specific\": {\"versions\": [\"2\", 5]}},\n"
		 " \"instance_group\": [{\"name\": \"add_sub_0\", \"count\": 2, \"kind\": \"KIND_GPU\", \"gpus\": []}],\n"
		 " \"dynamic_batching\": {\"preferred_batch_size\": [2, 4], \"max_queue_delay_microseconds\": \"50\",\n"
		 "                      \"default_queue_policy\": {\"max_queue_size\": 10}},\n"
		 " \"default_model_filename\": \"m.onnx\",\n"
		 " \"parameters\": {\"a\": {\"string_value\": \"1\"}, \"b\": {\"string_value\": \"two\"}},\n"
		 " \"optimization\": null}",
		 &c);
	assert_string_equal(c.name, "add_sub");
	assert_string_equal(c.platform, "onnxruntime_onnx");
	assert_int_equal(c.max_batch_size, 4);
	assert_int_equal(c.inputs[0].rank, 2);
	assert_int_equal(c.inputs[0].dims[0], 16);
	assert_int_equal(c.inputs[0].dims[1], -1);
	assert_true(c.inputs[0].optional);
	assert_int_equal(c.outputs[0].dtype, MFS_DT_INT64);
	assert_int_equal(c.outputs[0].reshape_rank, 2);
	assert_int_equal(c.version_policy.kind, MFS_POLICY_SPECIFIC);
	assert_int_equal(c.version_policy.n_versions, 2);
	assert_int_equal(c.version_policy.versions[0], 2);
	assert_int_equal(c.instance_groups[0].count, 2);
	assert_int_equal(c.instance_groups[0].kind, MFS_KIND_GPU);
	assert_int_equal(c.dynamic_batching.max_queue_delay_us, 50);
	assert_int_equal(c.dynamic_batching.default_queue_policy.max_queue_size, 10);
	assert_string_equal(c.default_model_filename, "m.onnx");
	assert_int_equal(c.n_parameters, 2);
	assert_string_equal(c.parameters[1].key, "b");
	assert_string_equal(c.parameters[1].value, "two");
	mfs_config_release(&c);
}

/* parameters may also come as the list the text format has. */
static void test_parameters_list_form(void **state)
{
	(void)state;
	mfs_model_config c;
	parse_ok("{\"parameters\": [{\"key\": \"k\", \"value\": {\"string_value\": \"v\"}}]}", &c);
	assert_int_equal(c.n_parameters, 1);
	assert_string_equal(c.parameters[0].key, "k");
	assert_string_equal(c.parameters[0].value, "v");
	mfs_config_release(&c);
}

static void test_errors_name_key_path(void **state)
{
	(void)state;
	parse_fails("{\"input\": [{\"name\": \"a\"}, {\"name\": \"b\", \"foo\": 1}]}",
		    "config.json: input[1].foo: unknown field 'foo' in input");
	parse_fails("{\"input\": [{\"name\": \"a\", \"dims\": [1, \"x\"]}]}",
		    "config.json: input[0].dims[1]: field 'dims' in input must be an integer, not 'x'");
	parse_fails("{\"input\": [{\"name\": \"a\", \"dims\": [1.5]}]}",
		    "config.json: input[0].dims[0]: field 'dims' in input must be an integer, not '1.5'");
	parse_fails("{\"max_batch_size\": true}",
		    "config.json: max_batch_size: field 'max_batch_size' in the model config must be an integer, not a name");
	parse_fails("{\"name\": 5}",
		    "config.json: name: field 'name' in the model config must be a quoted string, not a number");
	parse_fails("{\"input\": [{\"name\": \"a\", \"data_type\": \"FP32\"}]}",
		    "config.json: input[0].data_type: field 'data_type' in input: unknown value 'FP32'");
	parse_fails("{\"input\": [{\"name\": \"a\", \"dims\": [[1]]}]}",
		    "config.json: dims: a list inside a list");
	parse_fails("{\"name\": [\"a\"]}",
		    "config.json: name[0]: field 'name' in the model config takes one value, not a list");
	parse_fails("{\"version_policy\": {\"latest\": {\"num_versions\": 0}}}",
		    "config.json: version_policy.latest.num_versions: field 'num_versions' in latest: 0 is out of range [1, 2147483647]");
	parse_fails("{\"parameters\": {\"k\": {\"int_value\": 1}}}",
		    "config.json: parameters.value.int_value: unknown field 'int_value' in parameter value");
	parse_fails("[1, 2]", "config.json: the config must be a JSON object");
}

static void test_syntax_errors_have_lines(void **state)
{
	(void)state;
	parse_fails("{\n\"name\": \"a\",\n\"name\": \"b\"\n}",
		    "config.json:3: duplicate object key near '\"name\"'");
	parse_fails("{\n\"name\": \"a\"\n,}", "config.json:3: string or '}' expected near '}'");
	parse_fails("", "config.json:1: '[' or '{' expected near end of file");
}

/* The same config in both formats gives the same struct (compared through
 * the rendered JSON, which shows every field). */
static void test_same_as_pbtxt(void **state)
{
	(void)state;
	static const char pbtxt[] =
		"name: \"m\" max_batch_size: 2\n"
		"input { name: \"x\" data_type: TYPE_INT32 dims: [3, -1] reshape { shape: [-1] } }\n"
		"output { name: \"y\" data_type: TYPE_FP64 dims: 1 }\n"
		"version_policy { latest { num_versions: 2 } }\n"
		"instance_group { count: 3 kind: KIND_CPU }\n"
		"parameters { key: \"p\" value { string_value: \"q\" } }\n";
	static const char json[] =
		"{\"name\": \"m\", \"max_batch_size\": 2,"
		" \"input\": [{\"name\": \"x\", \"data_type\": \"TYPE_INT32\", \"dims\": [3, -1], \"reshape\": {\"shape\": [-1]}}],"
		" \"output\": [{\"name\": \"y\", \"data_type\": \"TYPE_FP64\", \"dims\": [\"1\"]}],"
		" \"version_policy\": {\"latest\": {\"num_versions\": 2}},"
		" \"instance_group\": [{\"count\": 3, \"kind\": \"KIND_CPU\"}],"
		" \"parameters\": {\"p\": {\"string_value\": \"q\"}}}";
	mfs_model_config a, b;
	mfs_error err;
	assert_int_equal(mfs_config_parse_pbtxt(pbtxt, strlen(pbtxt), "c", &a, &err), 0);
	parse_ok(json, &b);
	json_t *ja = mfs_config_to_json(&a), *jb = mfs_config_to_json(&b);
	assert_true(json_equal(ja, jb));
	json_decref(ja);
	json_decref(jb);
	mfs_config_release(&a);
	mfs_config_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_triton_form),
		cmocka_unit_test(test_parameters_list_form),
		cmocka_unit_test(test_errors_name_key_path),
		cmocka_unit_test(test_syntax_errors_have_lines),
		cmocka_unit_test(test_same_as_pbtxt),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

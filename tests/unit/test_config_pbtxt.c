/* test_config_pbtxt.c - the protobuf text format reader: the grammar
 * (comments, lists, escapes, nesting styles, numbers) and its errors with
 * lines.  Whole-config cases live in tests/config/ (test_config_cases.c). */
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
	int rc = mfs_config_parse_pbtxt(text, strlen(text), "config.pbtxt", c, &err);
	if (rc)
		fail_msg("unexpected error: %s", err.msg);
}

/* Parse must fail with -EINVAL and exactly this message. */
static void parse_fails(const char *text, const char *msg)
{
	mfs_model_config c;
	mfs_error err;

	mfs_error_clear(&err);
	assert_int_equal(mfs_config_parse_pbtxt(text, strlen(text), "config.pbtxt",
						&c, &err), -EINVAL);
	assert_string_equal(err.msg, msg);
	/* A failed parse leaves nothing to free, and a release is harmless. */
	assert_null(c.inputs);
	mfs_config_release(&c);
}

static void test_triton_add_sub(void **state)
{
	(void)state;
	mfs_model_config c;
	parse_ok("name: \"add_sub\"\n"
		 "backend: \"onnxruntime\"\n"
		 "max_batch_size: 8\n"
		 "input [\n"
		 "  {\n"
		 "    name: \"INPUT0\"\n"
		 "    data_type: TYPE_FP32\n"
		 "    dims: [ 16 ]\n"
		 "  },\n"
		 "  {\n"
		 "    name: \"INPUT1\"\n"
		 "    data_type: TYPE_FP32\n"
		 "    dims: [ 16 ]\n"
		 "  }\n"
		 "]\n"
		 "output [\n"
		 "  { name: \"OUTPUT0\" data_type: TYPE_FP32 dims: [ 16 ] },\n"
		 "  { name: \"OUTPUT1\" data_type: TYPE_FP32 dims: [ 16 ] }\n"
		 "]\n"
		 "instance_group [ { count: 2 kind: KIND_CPU } ]\n"
		 "dynamic_batching { preferred_batch_size: [ 4, 8 ] max_queue_delay_microseconds: 100 }\n",
		 &c);
	assert_string_equal(c.name, "add_sub");
	assert_string_equal(c.backend, "onnxruntime");
	assert_null(c.platform);
	assert_int_equal(c.max_batch_size, 8);
	assert_int_equal(c.n_inputs, 2);
	assert_string_equal(c.inputs[1].name, "INPUT1");
	assert_int_equal(c.inputs[1].dtype, MFS_DT_FLOAT);
	assert_int_equal(c.inputs[1].rank, 1);
	assert_int_equal(c.inputs[1].dims[0], 16);
	assert_int_equal(c.inputs[1].graph_index, -1);
	assert_int_equal(c.n_outputs, 2);
	assert_string_equal(c.outputs[0].name, "OUTPUT0");
	assert_int_equal(c.n_instance_groups, 1);
	assert_int_equal(c.instance_groups[0].count, 2);
	assert_int_equal(c.instance_groups[0].kind, MFS_KIND_CPU);
	assert_true(c.has_dynamic_batching);
	assert_int_equal(c.dynamic_batching.n_preferred_batch_size, 2);
	assert_int_equal(c.dynamic_batching.preferred_batch_size[1], 8);
	assert_int_equal(c.dynamic_batching.max_queue_delay_us, 100);
	assert_int_equal(c.version_policy.kind, MFS_POLICY_LATEST);
	assert_int_equal(c.version_policy.num_versions, 1);
	mfs_config_release(&c);
}

/* Every way protobuf lets one write the same thing reads the same. */
static void test_syntax_variants(void **state)
{
	(void)state;
	static const char *const variants[] = {
		"input { name: \"a\" dims: 1 dims: -1 }",
		"input: { name: \"a\", dims: [1, -1] }",
		"input < name: 'a'; dims: [1,-1]; >",
		"input [ { name: \"a\" dims: [ 1 , - 1 ] } ]",
		"# leading comment\ninput {  # trailing\n name: \"a\" # x\n dims: 0x1 dims: -1 }\n",
		"input{name:\"a\"dims:[01]dims:[-1]}",
		"input: [{name: \"\" \"a\"}, ] ",   /* the last: an error */
	};
	for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]) - 1; i++) {
		mfs_model_config c;
		parse_ok(variants[i], &c);
		assert_int_equal(c.n_inputs, 1);
		assert_string_equal(c.inputs[0].name, "a");
		assert_int_equal(c.inputs[0].rank, 2);
		assert_int_equal(c.inputs[0].dims[0], 1);
		assert_int_equal(c.inputs[0].dims[1], -1);
		mfs_config_release(&c);
	}
	/* A trailing comma in a list is not protobuf; it is an error. */
	parse_fails(variants[6], "config.pbtxt:1: expected a value for 'input', got ']'");
}

static void test_strings(void **state)
{
	(void)state;
	mfs_model_config c;
	parse_ok("parameters { key: \"k\\\"q\" value { string_value: 'a\\tb\\n\\x41\\101\\u00e9\\\\' } }\n"
		 "parameters { key: \"two\" value { string_value: \"x\" 'y' \"z\" } }\n"
		 "parameters { key: \"empty\" }\n",
		 &c);
	assert_int_equal(c.n_parameters, 3);
	assert_string_equal(c.parameters[0].key, "k\"q");
	assert_string_equal(c.parameters[0].value, "a\tb\nAA\xc3\xa9\\");
	assert_string_equal(c.parameters[1].value, "xyz");
	assert_string_equal(c.parameters[2].value, "");
	mfs_config_release(&c);
}

static void test_enums_and_bools(void **state)
{
	(void)state;
	mfs_model_config c;
	/* Enum numbers from model_config.proto: 9 = TYPE_INT64, 1 = KIND_GPU. */
	parse_ok("input { name: \"a\" data_type: 9 optional: true }\n"
		 "input { name: \"b\" data_type: TYPE_BOOL optional: f }\n"
		 "input { name: \"c\" data_type: TYPE_FP16 optional: 1 }\n"
		 "instance_group { kind: 1 } instance_group { kind: KIND_AUTO count: 3 }\n",
		 &c);
	assert_int_equal(c.inputs[0].dtype, MFS_DT_INT64);
	assert_true(c.inputs[0].optional);
	assert_int_equal(c.inputs[1].dtype, MFS_DT_BOOL);
	assert_false(c.inputs[1].optional);
	assert_int_equal(c.inputs[2].dtype, MFS_DT_FLOAT16);
	assert_true(c.inputs[2].optional);
	assert_int_equal(c.instance_groups[0].kind, MFS_KIND_GPU);
	assert_int_equal(c.instance_groups[0].count, 1);
	assert_int_equal(c.instance_groups[1].kind, MFS_KIND_AUTO);
	assert_int_equal(c.instance_groups[1].count, 3);
	mfs_config_release(&c);
}

/* response_cache { enable } (Triton's ModelResponseCache): off unless
 * enabled; its only field is enable. */
static void test_response_cache(void **state)
{
	(void)state;
	mfs_model_config c;
	parse_ok("max_batch_size: 1\n", &c);
	assert_false(c.response_cache);
	mfs_config_release(&c);
	parse_ok("response_cache { enable: true }\n", &c);
	assert_true(c.response_cache);
	mfs_config_release(&c);
	parse_ok("response_cache { enable: false }\n", &c);
	assert_false(c.response_cache);
	mfs_config_release(&c);
	parse_fails("response_cache { enable: true size: 3 }",
		    "config.pbtxt:1: unknown field 'size' in response_cache");
}

static void test_version_policies(void **state)
{
	(void)state;
	mfs_model_config c;

	parse_ok("version_policy: { all { } }", &c);
	assert_int_equal(c.version_policy.kind, MFS_POLICY_ALL);
	mfs_config_release(&c);
	parse_ok("version_policy { latest { num_versions: 3 } }", &c);
	assert_int_equal(c.version_policy.kind, MFS_POLICY_LATEST);
	assert_int_equal(c.version_policy.num_versions, 3);
	mfs_config_release(&c);
	parse_ok("version_policy { specific { versions: [1, 3] versions: 7 } }", &c);
	assert_int_equal(c.version_policy.kind, MFS_POLICY_SPECIFIC);
	assert_int_equal(c.version_policy.n_versions, 3);
	assert_int_equal(c.version_policy.versions[2], 7);
	mfs_config_release(&c);
}

static void test_reshape_and_zero_valued_triton_fields(void **state)
{
	(void)state;
	mfs_model_config c;
	parse_ok("input { name: \"a\" dims: [1] reshape: { shape: [ ] } format: FORMAT_NONE\n"
		 "        is_shape_tensor: false allow_ragged_batch: false }\n"
		 "output { name: \"b\" dims: [2, 2] reshape { shape: 4 } label_filename: \"\" }\n"
		 "model_warmup [ ] optimization { } instance_group { count: 1 gpus: [ ] }\n",
		 &c);
	assert_true(c.inputs[0].has_reshape);
	assert_int_equal(c.inputs[0].reshape_rank, 0);
	assert_true(c.outputs[0].has_reshape);
	assert_int_equal(c.outputs[0].reshape_rank, 1);
	assert_int_equal(c.outputs[0].reshape[0], 4);
	mfs_config_release(&c);
}

static void test_empty_and_comment_only(void **state)
{
	(void)state;
	mfs_model_config c;
	parse_ok("", &c);
	assert_null(c.name);
	assert_int_equal(c.n_inputs, 0);
	assert_int_equal(c.max_batch_size, 0);
	mfs_config_release(&c);
	parse_ok("# nothing here\n\n   # at all\n", &c);
	assert_int_equal(c.n_outputs, 0);
	mfs_config_release(&c);
}

static void test_errors_name_field_and_line(void **state)
{
	(void)state;
	parse_fails("name: \"m\"\ninput {\n  name: \"a\"\n  foo: 3\n}\n",
		    "config.pbtxt:4: unknown field 'foo' in input");
	parse_fails("max_batch_size: 1\nbogus_top: 1\n",
		    "config.pbtxt:2: unknown field 'bogus_top' in the model config");
	parse_fails("\n\nmax_batch_size: \"8\"\n",
		    "config.pbtxt:3: field 'max_batch_size' in the model config must be an integer, not a string");
	parse_fails("max_batch_size: 1.5",
		    "config.pbtxt:1: field 'max_batch_size' in the model config must be an integer, not '1.5'");
	parse_fails("max_batch_size: -2",
		    "config.pbtxt:1: field 'max_batch_size' in the model config: -2 is out of range [0, 2147483647]");
	parse_fails("input { name: \"a\" data_type: TYPE_FLOAT32 }",
		    "config.pbtxt:1: field 'data_type' in input: unknown value 'TYPE_FLOAT32'");
	/* TYPE_STRING is a string tensor (SPEC.md section 6), not an error */
	{
		mfs_model_config c;
		parse_ok("input { name: \"a\" data_type: TYPE_STRING }", &c);
		assert_int_equal(c.inputs[0].dtype, MFS_DT_STRING);
		mfs_config_release(&c);
	}
	parse_fails("input {\n name: a\n}",
		    "config.pbtxt:2: field 'name' in input must be a quoted string, not a name");
	parse_fails("input { name: \"a\" dims: [16, 0] }",
		    "config.pbtxt:1: dims of input 'a': a dim is -1 (variable) or at least 1");
	parse_fails("input { dims: 1 }", "config.pbtxt:1: input without a name");
	parse_fails("input { name: \"a\" }\ninput { name: \"a\" }",
		    "config.pbtxt:2: input 'a' given twice");
	parse_fails("name: \"a\"\nname: \"b\"", "config.pbtxt:2: field 'name' given twice in the model config");
	parse_fails("name: [\"a\"]", "config.pbtxt:1: field 'name' in the model config takes one value, not a list");
	parse_fails("input { name: \"a\" is_shape_tensor: true }",
		    "config.pbtxt:1: field 'is_shape_tensor' in input is a Triton feature modelfs does not support");
	parse_fails("instance_group { kind: KIND_CPU gpus: [0] }",
		    "config.pbtxt:1: field 'gpus' in instance_group is a Triton feature modelfs does not support");
	parse_fails("platform: \"tensorrt_plan\"",
		    "config.pbtxt:1: platform 'tensorrt_plan' is not supported (modelfs runs ONNX models: onnxruntime_onnx; pipelines: ensemble)");
	parse_fails("version_policy { latest { num_versions: 0 } }",
		    "config.pbtxt:1: field 'num_versions' in latest: 0 is out of range [1, 2147483647]");
	parse_fails("version_policy { all {} latest {} }",
		    "config.pbtxt:1: version_policy takes one of latest, all or specific");
	parse_fails("instance_group { kind: KIND_MODEL }",
		    "config.pbtxt:1: instance_group kind KIND_MODEL is not supported (KIND_CPU, KIND_GPU or KIND_AUTO)");
	parse_fails("dynamic_batching { }",
		    "config.pbtxt: dynamic_batching needs max_batch_size > 0");
	parse_fails("max_batch_size: 4 dynamic_batching { preferred_batch_size: 8 }",
		    "config.pbtxt: dynamic_batching: preferred_batch_size 8 exceeds max_batch_size 4");
	parse_fails("max_batch_size: 4 dynamic_batching { default_queue_policy { timeout_action: DROP } }",
		    "config.pbtxt:1: field 'timeout_action' in default_queue_policy: unknown value 'DROP'");
	parse_fails("max_batch_size: 4 dynamic_batching { priority_levels: 2 }",
		    "config.pbtxt: dynamic_batching: default_priority_level must be 1..2 (priority_levels), not 0");
	parse_fails("max_batch_size: 4 dynamic_batching { default_priority_level: 1 }",
		    "config.pbtxt: dynamic_batching: default_priority_level 1 needs priority_levels");
	parse_fails("max_batch_size: 4 dynamic_batching { priority_levels: 2 default_priority_level: 1\n"
		    "priority_queue_policy { key: 3 value { } } }",
		    "config.pbtxt: dynamic_batching: priority_queue_policy for level 3, but priority_levels is 2");
	parse_fails("max_batch_size: 4 dynamic_batching { priority_levels: 2 default_priority_level: 1\n"
		    "priority_queue_policy { key: 1 } priority_queue_policy { key: 1 } }",
		    "config.pbtxt:2: priority_queue_policy for level 1 given twice");
	parse_fails("max_batch_size: 4 dynamic_batching { priority_queue_policy { value { } } }",
		    "config.pbtxt:1: priority_queue_policy entry without a key (its priority level)");
	parse_fails("max_batch_size: 4 dynamic_batching { default_queue_policy { default_timeout_microseconds: -1 } }",
		    "config.pbtxt:1: field 'default_timeout_microseconds' in default_queue_policy: -1 is out of range [0, 1000000000000]");
	parse_fails("default_model_filename: \"../x.onnx\"",
		    "config.pbtxt:1: default_model_filename '../x.onnx' must be a file name, not a path");
	parse_fails("input name: \"a\"", "config.pbtxt:1: expected ':' after field 'input'");
	parse_fails("input: 3", "config.pbtxt:1: field 'input' must be a message, not a number");
	parse_fails("max_batch_size { }",
		    "config.pbtxt:1: field 'max_batch_size' in the model config must be an integer, not a message");
	parse_fails("parameters { value { string_value: \"v\" } }",
		    "config.pbtxt:1: parameter without a key");
	parse_fails("parameters { key: \"k\" } parameters { key: \"k\" }",
		    "config.pbtxt:1: parameter 'k' given twice");
}

static void test_syntax_errors(void **state)
{
	(void)state;
	parse_fails("input {\n name: \"a\"\n", "config.pbtxt:3: missing '}' at the end of the file");
	parse_fails("name: \"abc\n\"", "config.pbtxt:1: unterminated string");
	parse_fails("name: \"a\\qb\"", "config.pbtxt:1: unknown escape '\\q' in a string");
	parse_fails("name: \"a\\0b\"", "config.pbtxt:1: bad octal escape in a string");
	parse_fails("name: \"a\\x00\"", "config.pbtxt:1: NUL byte in a string");
	parse_fails("name: \"\\xff\"", "config.pbtxt:1: field 'name' in the model config is not valid UTF-8");
	parse_fails("name: \"\\ud800\"", "config.pbtxt:1: bad character U+D800 in a string");
	parse_fails("}", "config.pbtxt:1: expected a field name, got '}'");
	parse_fails("[ext.field]: 1",
		    "config.pbtxt:1: extensions and Any ('[...]' field names) are not part of a model config");
	parse_fails("dims: [1 2]", "config.pbtxt:1: expected ',' or ']' in the list 'dims', got '2'");
	parse_fails("name:", "config.pbtxt:1: expected a value for 'name', got the end of the file");
	parse_fails("max_batch_size: -", "config.pbtxt:1: expected a number after '-', got the end of the file");
	parse_fails("max_batch_size: 99999999999999999999",
		    "config.pbtxt:1: field 'max_batch_size' in the model config must be an integer, not '99999999999999999999'");
}

/* A NUL inside the buffer ends nothing: it is an error at its line. */
static void test_embedded_nul(void **state)
{
	(void)state;
	static const char text[] = "name: \"a\"\n\0x: 1";
	mfs_model_config c;
	mfs_error err;
	assert_int_equal(mfs_config_parse_pbtxt(text, sizeof(text) - 1, "config.pbtxt",
						&c, &err), -EINVAL);
	assert_string_equal(err.msg, "config.pbtxt:2: expected a field name, got a NUL byte");
}

static void test_depth_limit(void **state)
{
	(void)state;
	char text[4096];
	size_t n = 0;
	mfs_model_config c;
	mfs_error err;

	for (int i = 0; i < 200; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "optimization {");
	assert_int_equal(mfs_config_parse_pbtxt(text, n, "config.pbtxt", &c, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "nested more than"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_triton_add_sub),
		cmocka_unit_test(test_syntax_variants),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_enums_and_bools),
		cmocka_unit_test(test_response_cache),
		cmocka_unit_test(test_version_policies),
		cmocka_unit_test(test_reshape_and_zero_valued_triton_fields),
		cmocka_unit_test(test_empty_and_comment_only),
		cmocka_unit_test(test_errors_name_field_and_line),
		cmocka_unit_test(test_syntax_errors),
		cmocka_unit_test(test_embedded_nul),
		cmocka_unit_test(test_depth_limit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

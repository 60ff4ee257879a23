/* test_config_render.c - the config in effect as Triton's JSON: the exact
 * form for a typical config, defaults shown, and a render -> parse ->
 * render round trip that changes nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"

static json_t *render_pbtxt(const char *text)
{
	mfs_model_config c;
	mfs_error err;
	json_t *j;

	if (mfs_config_parse_pbtxt(text, strlen(text), "config.pbtxt", &c, &err))
		fail_msg("parse: %s", err.msg);
	j = mfs_config_to_json(&c);
	mfs_config_release(&c);
	assert_non_null(j);
	return j;
}

static void assert_json_is(json_t *got, const char *want_text)
{
	json_error_t jerr;
	json_t *want = json_loads(want_text, 0, &jerr);

	if (!want)
		fail_msg("bad expected JSON: %s", jerr.text);
	if (!json_equal(got, want)) {
		char *a = json_dumps(got, JSON_SORT_KEYS), *b = json_dumps(want, JSON_SORT_KEYS);
		print_error("got  %s\nwant %s\n", a, b);
		free(a);
		free(b);
		json_decref(want);
		fail();
	}
	json_decref(want);
}

static void test_full_form(void **state)
{
	(void)state;
	json_t *j = render_pbtxt(
		"name: \"m\" backend: \"onnx\" max_batch_size: 8\n"
		"input { name: \"a\" data_type: TYPE_FP32 dims: [16] optional: true }\n"
		"input { name: \"b\" data_type: TYPE_UINT8 dims: [2, 2] reshape { shape: [4] } }\n"
		"output { name: \"c\" data_type: TYPE_BOOL dims: [-1] }\n"
		"version_policy { specific { versions: [1, 3] } }\n"
		"instance_group [ { count: 2 kind: KIND_CPU }, { kind: KIND_GPU } ]\n"
		"dynamic_batching { preferred_batch_size: [2, 4] max_queue_delay_microseconds: 100\n"
		"                   default_queue_policy { max_queue_size: 7 timeout_action: DELAY\n"
		"                     default_timeout_microseconds: 5000 allow_timeout_override: true }\n"
		"                   priority_levels: 2 default_priority_level: 2\n"
		"                   priority_queue_policy { key: 1 value { max_queue_size: 3 } } }\n"
		"default_model_filename: \"net.onnx\"\n"
		"parameters { key: \"k\" value { string_value: \"v\" } }\n");
	assert_json_is(j,
		"{\"name\": \"m\", \"platform\": \"onnxruntime_onnx\", \"backend\": \"onnx\","
		" \"version_policy\": {\"specific\": {\"versions\": [1, 3]}},"
		" \"max_batch_size\": 8,"
		" \"input\": [{\"name\": \"a\", \"data_type\": \"TYPE_FP32\", \"dims\": [16], \"optional\": true},"
		"             {\"name\": \"b\", \"data_type\": \"TYPE_UINT8\", \"dims\": [2, 2],"
		"              \"reshape\": {\"shape\": [4]}, \"optional\": false}],"
		" \"output\": [{\"name\": \"c\", \"data_type\": \"TYPE_BOOL\", \"dims\": [-1]}],"
		" \"instance_group\": [{\"count\": 2, \"kind\": \"KIND_CPU\"}, {\"count\": 1, \"kind\": \"KIND_GPU\"}],"
		" \"dynamic_batching\": {\"preferred_batch_size\": [2, 4], \"max_queue_delay_microseconds\": 100,"
		"                      \"default_queue_policy\": {\"max_queue_size\": 7, \"timeout_action\": \"DELAY\","
		"                        \"default_timeout_microseconds\": 5000, \"allow_timeout_override\": true},"
		"                      \"priority_levels\": 2, \"default_priority_level\": 2,"
		"                      \"priority_queue_policy\": {\"1\": {\"max_queue_size\": 3,"
		"                        \"timeout_action\": \"REJECT\", \"default_timeout_microseconds\": 0,"
		"                        \"allow_timeout_override\": false}}},"
		" \"default_model_filename\": \"net.onnx\","
		" \"parameters\": {\"k\": {\"string_value\": \"v\"}}}");
	/* Triton's field order, for people reading the file. */
	const char *key;
	json_t *v;
	const char *order[] = { "name", "platform", "backend", "version_policy",
				"max_batch_size", "input", "output", "instance_group",
				"dynamic_batching", "default_model_filename", "parameters" };
	size_t i = 0;
	json_object_foreach(j, key, v) {
		assert_true(i < sizeof(order) / sizeof(order[0]));
		assert_string_equal(key, order[i++]);
	}
	json_decref(j);
}

static void test_defaults(void **state)
{
	(void)state;
	json_t *j = render_pbtxt("");
	assert_json_is(j,
		"{\"name\": \"\", \"platform\": \"onnxruntime_onnx\", \"backend\": \"onnxruntime\","
		" \"version_policy\": {\"latest\": {\"num_versions\": 1}}, \"max_batch_size\": 0,"
		" \"input\": [], \"output\": [], \"instance_group\": [],"
		" \"default_model_filename\": \"model.onnx\", \"parameters\": {}}");
	json_decref(j);
	j = render_pbtxt("version_policy { all {} }");
	assert_json_is(json_object_get(j, "version_policy"), "{\"all\": {}}");
	json_decref(j);
}

/* What we print, config.json reads back to the same config. */
static void test_round_trip(void **state)
{
	(void)state;
	json_t *j = render_pbtxt(
		"name: \"r\" max_batch_size: 3\n"
		"input { name: \"x\" data_type: TYPE_INT64 dims: [-1, 5] reshape { shape: [ ] } }\n"
		"output { name: \"y\" data_type: TYPE_FP16 }\n"
		"dynamic_batching { priority_levels: 3 default_priority_level: 2\n"
		"  priority_queue_policy { key: 3 value { timeout_action: DELAY default_timeout_microseconds: 9 } }\n"
		"  priority_queue_policy { key: 1 value { allow_timeout_override: true } } }\n"
		"parameters { key: \"p\" value { string_value: \"caf\\u00e9\" } }\n");
	char *text = json_dumps(j, JSON_INDENT(2));
	mfs_model_config c;
	mfs_error err;
	assert_int_equal(mfs_config_parse_json(text, strlen(text), "config.json", &c, &err), 0);
	json_t *again = mfs_config_to_json(&c);
	assert_true(json_equal(j, again));
	mfs_config_release(&c);
	json_decref(again);
	json_decref(j);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_form),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

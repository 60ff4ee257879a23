/* test_metrics.c - counters, the Prometheus page and Triton's stats JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "metrics.h"

static void test_counts_and_prometheus(void **state)
{
	(void)state;
	mfs_stats a, b;
	mfs_stats_init(&a);
	mfs_stats_init(&b);
	mfs_stats_add_request(&a, true, 5000, 1000, 2000, 1000, 1000, 1);
	mfs_stats_add_request(&a, true, 7000, 3000, 2000, 1000, 1000, 2);
	mfs_stats_add_request(&a, false, 2000, 0, 0, 0, 0, 1);
	mfs_stats_add_execution(&a, 3, 2000, 1000, 1000);
	mfs_stats_add_execution(&b, 1, 10, 10, 10);
	mfs_metrics_entry e[] = {
		{ "add_sub", 1, &a, 0.25 },
		{ "mlp", 2, &b, 1.5 },
		{ "broken", 3, NULL, -1 },
	};
	size_t len;
	char *text = mfs_metrics_render(e, 3, &len);
	assert_non_null(text);
	assert_int_equal(strlen(text), len);
	assert_non_null(strstr(text, "# TYPE nv_inference_request_success counter\n"));
	assert_non_null(strstr(text, "nv_inference_request_success{model=\"add_sub\",version=\"1\"} 2\n"));
	assert_non_null(strstr(text, "nv_inference_request_failure{model=\"add_sub\",version=\"1\"} 1\n"));
	assert_non_null(strstr(text, "nv_inference_count{model=\"add_sub\",version=\"1\"} 3\n"));
	assert_non_null(strstr(text, "nv_inference_exec_count{model=\"add_sub\",version=\"1\"} 1\n"));
	assert_non_null(strstr(text, "nv_inference_request_duration_us{model=\"add_sub\",version=\"1\"} 14\n"));
	assert_non_null(strstr(text, "nv_inference_queue_duration_us{model=\"add_sub\",version=\"1\"} 4\n"));
	assert_non_null(strstr(text, "nv_inference_compute_input_duration_us{model=\"add_sub\",version=\"1\"} 4\n"));
	assert_non_null(strstr(text, "nv_inference_compute_infer_duration_us{model=\"mlp\",version=\"2\"} 0\n"));
	assert_non_null(strstr(text, "nv_inference_compute_output_duration_us{model=\"add_sub\",version=\"1\"} 2\n"));
	assert_non_null(strstr(text, "nv_model_load_duration_secs{model=\"mlp\",version=\"2\"} 1.500000\n"));
	assert_null(strstr(text, "broken"));
	free(text);
	mfs_stats_release(&a);
	mfs_stats_release(&b);
}

static void test_stats_json(void **state)
{
	(void)state;
	mfs_stats a;
	mfs_stats_init(&a);
	mfs_stats_add_request(&a, true, 5000, 1000, 2000, 1000, 1000, 4);
	mfs_stats_add_execution(&a, 4, 2000, 1000, 1000);
	json_t *j = mfs_stats_to_json("add_sub", 7, &a);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "name")), "add_sub");
	assert_string_equal(json_string_value(json_object_get(j, "version")), "7");
	assert_int_equal(json_integer_value(json_object_get(j, "inference_count")), 4);
	assert_int_equal(json_integer_value(json_object_get(j, "execution_count")), 1);
	json_t *inf = json_object_get(j, "inference_stats");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(inf, "success"), "count")), 1);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(inf, "success"), "ns")), 5000);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(inf, "queue"), "ns")), 1000);
	assert_non_null(json_object_get(inf, "compute_output"));
	json_t *bs = json_object_get(j, "batch_stats");
	assert_int_equal(json_array_size(bs), 1);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(bs, 0), "batch_size")), 4);
	json_decref(j);
	mfs_stats_release(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts_and_prometheus),
		cmocka_unit_test(test_stats_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

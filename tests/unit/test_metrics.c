/* test_metrics.c - counters, the Prometheus page and Triton's stats JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>

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
		{ "add_sub", 1, &a, 0.25, 3 },
		{ "mlp", 2, &b, 1.5, 0 },
		{ "broken", 3, NULL, -1, 0 },
	};
	size_t len;
	char *text = mfs_metrics_render(e, 3, &len);
	assert_non_null(text);
	assert_int_equal(strlen(text), len);
	assert_non_null(strstr(text, "# TYPE nv_inference_request_success counter\n"));
	assert_non_null(strstr(text, "nv_inference_request_success{model=\"add_sub\",version=\"1\"} 2\n"));
	assert_non_null(strstr(text, "nv_inference_request_failure{model=\"add_sub\",reason=\"BACKEND\",version=\"1\"} 1\n"));
	assert_non_null(strstr(text, "nv_inference_request_failure{model=\"add_sub\",reason=\"OTHER\",version=\"1\"} 0\n"));
	assert_non_null(strstr(text, "# TYPE nv_inference_pending_request_count gauge\n"
				     "nv_inference_pending_request_count{model=\"add_sub\",version=\"1\"} 3\n"));
	assert_non_null(strstr(text, "# TYPE nv_cpu_utilization gauge\n"));
	assert_non_null(strstr(text, "nv_cpu_memory_total_bytes "));
	assert_non_null(strstr(text, "nv_cpu_memory_used_bytes "));
	assert_null(strstr(text, "_summary_us"));   /* off by default */
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

/* Each reason moves its own line, and the total failure count. */
static void test_failure_reasons(void **state)
{
	(void)state;
	mfs_stats a;
	mfs_stats_init(&a);
	mfs_stats_add_refused(&a, false, 0);               /* queue full */
	mfs_stats_add_refused(&a, true, 5000);             /* timed out */
	mfs_stats_add_failure(&a, MFS_FAIL_CANCELED, 10);
	mfs_stats_add_failure(&a, MFS_FAIL_OTHER, 0);
	mfs_stats_add_failure(&a, MFS_FAIL_OTHER, 0);
	mfs_stats_add_request(&a, false, 100, 0, 0, 0, 0, 1);
	mfs_metrics_entry e[] = { { "m", 1, &a, 0.5, 0 } };
	size_t len;
	char *text = mfs_metrics_render(e, 1, &len);
	assert_non_null(text);
	assert_non_null(strstr(text, "nv_inference_request_failure{model=\"m\",reason=\"REJECTED\",version=\"1\"} 2\n"));
	assert_non_null(strstr(text, "nv_inference_request_failure{model=\"m\",reason=\"CANCELED\",version=\"1\"} 1\n"));
	assert_non_null(strstr(text, "nv_inference_request_failure{model=\"m\",reason=\"BACKEND\",version=\"1\"} 1\n"));
	assert_non_null(strstr(text, "nv_inference_request_failure{model=\"m\",reason=\"OTHER\",version=\"1\"} 2\n"));
	assert_non_null(strstr(text, "nv_inference_request_rejected{model=\"m\",version=\"1\"} 1\n"));
	assert_non_null(strstr(text, "nv_inference_request_timeout{model=\"m\",version=\"1\"} 1\n"));
	free(text);
	json_t *j = mfs_stats_to_json("m", 1, &a);
	json_t *inf = json_object_get(j, "inference_stats");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(inf, "fail"), "count")), 6);
	json_decref(j);
	mfs_stats_release(&a);
}

static void test_config_parse(void **state)
{
	(void)state;
	mfs_metrics_config c;
	mfs_error err;
	mfs_metrics_config_init(&c);
	assert_true(c.counter_latencies);
	assert_false(c.summary_latencies);
	assert_int_equal(c.n_quantiles, 5);
	assert_int_equal(mfs_metrics_config_parse(&c, "summary_latencies=true", &err), 0);
	assert_true(c.summary_latencies);
	assert_int_equal(mfs_metrics_config_parse(&c, "counter_latencies=false", &err), 0);
	assert_false(c.counter_latencies);
	assert_int_equal(mfs_metrics_config_parse(&c, "summary_quantiles=\"0.5:0.05,0.99:0.001\"", &err), 0);
	assert_int_equal(c.n_quantiles, 2);
	assert_true(c.quantile[1] == 0.99 && c.error[1] == 0.001);
	assert_int_equal(mfs_metrics_config_parse(&c, "summary_latencies=yes", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "summary_latencies"));
	assert_int_equal(mfs_metrics_config_parse(&c, "summary_quantiles=1.5:0.1", &err), -EINVAL);
	assert_int_equal(mfs_metrics_config_parse(&c, "summary_quantiles=0.5", &err), -EINVAL);
	assert_int_equal(mfs_metrics_config_parse(&c, "histogram_latencies=true", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "unknown key 'histogram_latencies'"));
	assert_int_equal(mfs_metrics_config_parse(&c, "nokey", &err), -EINVAL);
}

/* summary_latencies=true: quantiles over the window, _count and _sum
 * like the counters; counter_latencies=false drops the counters. */
static void test_summaries(void **state)
{
	(void)state;
	mfs_metrics_config c;
	mfs_error err;
	mfs_metrics_config_init(&c);
	assert_int_equal(mfs_metrics_config_parse(&c, "summary_latencies=true", &err), 0);
	assert_int_equal(mfs_metrics_config_parse(&c, "counter_latencies=false", &err), 0);
	assert_int_equal(mfs_metrics_config_parse(&c, "summary_quantiles=0.5:0.05,0.9:0.01", &err), 0);
	mfs_metrics_configure(&c);
	mfs_stats a, empty;
	mfs_stats_init(&a);
	mfs_stats_init(&empty);
	/* requests of 1..100 ms total, queue 10 us each */
	for (int i = 1; i <= 100; i++)
		mfs_stats_add_request(&a, true, (uint64_t)i * 1000000, 10000, 1000, 2000, 3000, 1);
	mfs_stats_add_request(&a, false, 999999999, 0, 0, 0, 0, 1);   /* failures stay out */
	mfs_metrics_entry e[] = { { "m", 1, &a, 0.5, 0 }, { "idle", 1, &empty, 0.5, 0 } };
	size_t len;
	char *text = mfs_metrics_render(e, 2, &len);
	assert_non_null(text);
	assert_non_null(strstr(text, "# TYPE nv_inference_request_summary_us summary\n"));
	assert_non_null(strstr(text, "nv_inference_request_summary_us_count{model=\"m\",version=\"1\"} 100\n"));
	assert_non_null(strstr(text, "nv_inference_request_summary_us_sum{model=\"m\",version=\"1\"} 5050000\n"));
	assert_non_null(strstr(text, "nv_inference_request_summary_us{model=\"m\",version=\"1\",quantile=\"0.5\"} 50000\n"));
	assert_non_null(strstr(text, "nv_inference_request_summary_us{model=\"m\",version=\"1\",quantile=\"0.9\"} 90000\n"));
	assert_non_null(strstr(text, "nv_inference_queue_summary_us{model=\"m\",version=\"1\",quantile=\"0.9\"} 10\n"));
	assert_non_null(strstr(text, "nv_inference_compute_output_summary_us_sum{model=\"m\",version=\"1\"} 300\n"));
	assert_non_null(strstr(text, "nv_inference_compute_infer_summary_us{model=\"idle\",version=\"1\",quantile=\"0.5\"} NaN\n"));
	assert_null(strstr(text, "nv_inference_request_duration_us"));
	assert_non_null(strstr(text, "nv_inference_request_success{"));
	free(text);
	mfs_stats_release(&a);
	mfs_stats_release(&empty);
	mfs_metrics_config_init(&c);
	mfs_metrics_configure(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_failure_reasons),
		cmocka_unit_test(test_config_parse),
		cmocka_unit_test(test_summaries),
		cmocka_unit_test(test_counts_and_prometheus),
		cmocka_unit_test(test_stats_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

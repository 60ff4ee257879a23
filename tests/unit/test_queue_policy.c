/* test_queue_policy.c - a config's queue policy as scheduler levels, and a
 * request's priority, timeout and parameter files checked against it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "queue_policy.h"
#include "registry.h"

static void parse(mfs_model_config *c, const char *text)
{
	mfs_error err;
	int rc = mfs_config_parse_pbtxt(text, strlen(text), "config.pbtxt", c, &err);
	if (rc)
		fail_msg("%s", err.msg);
}

static void test_levels_from_config(void **state)
{
	(void)state;
	mfs_model_config c;
	mfs_queue_level *lv;
	int n, def;
	mfs_error err;
	parse(&c, "max_batch_size: 4 dynamic_batching {\n"
		  "  default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 250 }\n"
		  "  priority_levels: 3 default_priority_level: 3\n"
		  "  priority_queue_policy { key: 1 value { max_queue_size: 5 } } }\n");
	assert_int_equal(mfs_queue_policy_levels(&c, &lv, &n, &def, &err), 0);
	assert_int_equal(n, 3);
	assert_int_equal(def, 3);
	assert_int_equal(lv[0].max_queue_size, 5);
	assert_int_equal(lv[0].default_timeout_ns, 0);
	assert_false(lv[0].delay_on_timeout);
	for (int i = 1; i < 3; i++) {
		assert_int_equal(lv[i].max_queue_size, MFS_DEFAULT_MAX_QUEUE_SIZE);
		assert_int_equal(lv[i].default_timeout_ns, 250000);
		assert_true(lv[i].delay_on_timeout);
	}
	free(lv);
	mfs_config_release(&c);
	/* No priorities, no config: one level, bounded. */
	mfs_config_init(&c);
	assert_int_equal(mfs_queue_policy_levels(&c, &lv, &n, &def, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(def, 1);
	assert_int_equal(lv[0].max_queue_size, MFS_DEFAULT_MAX_QUEUE_SIZE);
	free(lv);
	mfs_config_release(&c);
}

static void test_request_checks(void **state)
{
	(void)state;
	mfs_model_config c;
	mfs_error err;
	parse(&c, "max_batch_size: 4 dynamic_batching { priority_levels: 2 default_priority_level: 2\n"
		  "  priority_queue_policy { key: 1 value { allow_timeout_override: true } } }\n");
	assert_int_equal(mfs_queue_check_priority(&c, "m", 0, &err), 0);
	assert_int_equal(mfs_queue_check_priority(&c, "m", 2, &err), 0);
	assert_int_equal(mfs_queue_check_priority(&c, "m", 3, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "model 'm': priority 3 is not one of its levels 1..2"));
	/* Level 1 may set its timeout; the default level (2) may not. */
	assert_int_equal(mfs_queue_check_timeout(&c, "m", 1, 500, &err), 0);
	assert_int_equal(mfs_queue_check_timeout(&c, "m", 0, 500, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "allow_timeout_override false"));
	assert_int_equal(mfs_queue_check_timeout(&c, "m", 2, 0, &err), 0);
	mfs_config_release(&c);
	mfs_config_init(&c);
	assert_int_equal(mfs_queue_check_priority(&c, "m", 1, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "has no priority levels"));
	mfs_config_release(&c);
}

static void test_parse_param(void **state)
{
	(void)state;
	int64_t v;
	mfs_error err;
	assert_int_equal(mfs_queue_parse_param("p", "2\n", 2, 10, &v, &err), 0);
	assert_int_equal(v, 2);
	assert_int_equal(mfs_queue_parse_param("p", " 10 \r\n", 6, 10, &v, &err), 0);
	assert_int_equal(v, 10);
	assert_int_equal(mfs_queue_parse_param("p", "11", 2, 10, &v, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "more than 10"));
	const char *bad[] = { "", "\n", "-1", "1.5", "two", "1 2", "99999999999999999999999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(mfs_queue_parse_param("p", bad[i], strlen(bad[i]), INT64_MAX, &v, &err),
				 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_levels_from_config),
		cmocka_unit_test(test_request_checks),
		cmocka_unit_test(test_parse_param),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_health.c - the readiness rule of MOUNT/.ready and READY=1
 * (health.h): Triton's strict readiness over the models' states. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "health.h"

static mfs_version_info vi(int64_t version, mfs_vstate st, const char *reason)
{
	mfs_version_info v;
	memset(&v, 0, sizeof(v));
	v.version = version;
	v.state = st;
	v.reason = (char *)reason;
	return v;
}

static void test_rule(void **state)
{
	(void)state;
	char why[256] = "";
	mfs_version_info a[] = { vi(1, MFS_VS_READY, ""), vi(2, MFS_VS_READY, "reload failed, still serving") };
	mfs_version_info b[] = { vi(3, MFS_VS_LOADING, "") };
	mfs_version_info c[] = { vi(1, MFS_VS_UNAVAILABLE, "not loaded") };
	mfs_version_info d[] = { vi(1, MFS_VS_UNAVAILABLE, "unloaded") };
	mfs_version_info e[] = { vi(2, MFS_VS_UNAVAILABLE, "model.onnx: bad file") };
	mfs_model_info ms[] = {
		{ .name = "a", .versions = a, .n_versions = 2 },
		{ .name = "c", .versions = c, .n_versions = 1 },
		{ .name = "d", .versions = d, .n_versions = 1 },
		{ .name = "b", .versions = b, .n_versions = 1 },
		{ .name = "e", .versions = e, .n_versions = 1 },
	};
	/* READY (with a reason too) and explicit mode's not loaded count */
	assert_true(mfs_health_models_ready(ms, 3, why, sizeof(why)));
	assert_true(mfs_health_models_ready(ms, 0, why, sizeof(why)));
	/* LOADING does not */
	assert_false(mfs_health_models_ready(ms, 4, why, sizeof(why)));
	assert_string_equal(why, "model 'b' version 3 is LOADING");
	/* nor a failed load */
	assert_false(mfs_health_models_ready(&ms[4], 1, why, sizeof(why)));
	assert_string_equal(why, "model 'e' version 2 is UNAVAILABLE: model.onnx: bad file");
}

static void test_first_load_and_strict(void **state)
{
	(void)state;
	char why[256] = "";
	/* before the first load ends: never ready, strict or not */
	assert_int_equal(mfs_health_ready(NULL, false, false, why, sizeof(why)), -EAGAIN);
	assert_string_equal(why, "the models are loading");
	assert_int_equal(mfs_health_ready(NULL, false, true, why, sizeof(why)), -EAGAIN);
	/* not strict: ready once it ended, whatever failed (no registry looked at) */
	assert_int_equal(mfs_health_ready(NULL, true, false, why, sizeof(why)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rule),
		cmocka_unit_test(test_first_load_and_strict),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

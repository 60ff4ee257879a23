/* Unit tests for src/core/device_router.c on whatever OpenCL device is present
 * (PoCL in CI): the instance_group kind and --device decide the engine,
 * KIND_AUTO times both (OpenCL stopped once clearly slower), a missing device is an error for KIND_GPU and a
 * note for KIND_AUTO, the OpenCL backend is shared. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <unistd.h>

#include "backend.h"
#include "cache_dir.h"
#include "device_router.h"
#include "ocl_backend.h"

static mfs_graph *model;

static int setup(void **state)
{
	mfs_error err;
	(void)state;
	if (mfs_graph_load("examples/mlp/1/model.onnx", "mlp", &model, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	mfs_graph_free(model);
	mfs_router_shutdown();
	return 0;
}

/* defer: the daemon's defer_trial; path: the model file keying the store */
static int route_with(mfs_instance_kind kind, mfs_device_choice dev, const char *sel,
		      bool defer, const char *path, mfs_placement *p, mfs_error *err)
{
	mfs_instance_group g = { .count = 1, .kind = kind };
	mfs_model_config cfg;
	mfs_route_opts o = { .device = dev, .opencl_device = sel, .defer_trial = defer };
	memset(&cfg, 0, sizeof(cfg));
	cfg.instance_groups = &g;
	cfg.n_instance_groups = 1;
	mfs_error_clear(err);
	return mfs_route(model, &cfg, &o, path, NULL, NULL, p, err);
}

static int route(mfs_instance_kind kind, mfs_device_choice dev, const char *sel,
		 mfs_placement *p, mfs_error *err)
{
	return route_with(kind, dev, sel, false, NULL, p, err);
}

static void test_kind_cpu(void **state)
{
	mfs_placement p;
	mfs_error err;
	(void)state;
	assert_int_equal(route(MFS_KIND_CPU, MFS_DEVICE_OPENCL, NULL, &p, &err), 0);
	assert_string_equal(p.device, "cpu");
	assert_ptr_equal(p.backend, mfs_backend_cpu());
	assert_false(p.measured);
	assert_true(p.cpu_ms < 0 && p.opencl_ms < 0);
	assert_string_equal(p.kind, "KIND_CPU");
}

static void test_kind_gpu(void **state)
{
	mfs_placement p;
	mfs_error err;
	(void)state;
	assert_int_equal(route(MFS_KIND_GPU, MFS_DEVICE_CPU, NULL, &p, &err), 0);
	assert_string_equal(p.device, "opencl");
	assert_true(mfs_backend_is_opencl(p.backend));
	assert_true(strlen(p.opencl_name) > 3);
	assert_non_null(strstr(p.note, "KIND_GPU on "));
	/* no such device: an error in words */
	assert_int_equal(route(MFS_KIND_GPU, MFS_DEVICE_AUTO, "no-such-device-xyz", &p, &err),
			 -ENODEV);
	assert_non_null(strstr(err.msg, "KIND_GPU"));
	assert_non_null(strstr(err.msg, "no-such-device-xyz"));
}

static void test_auto_times_both(void **state)
{
	mfs_placement p;
	mfs_error err;
	(void)state;
	assert_int_equal(route(MFS_KIND_AUTO, MFS_DEVICE_AUTO, NULL, &p, &err), 0);
	assert_true(p.cpu_ms > 0);
	assert_false(p.cached);   /* no model file: nothing stored or reused */
	assert_non_null(strstr(p.note, "auto: cpu "));
	if (!p.measured) {
		/* OpenCL stopped once clearly slower (device_router.h) */
		assert_true(p.opencl_ms == -1);
		assert_string_equal(p.device, "cpu");
		assert_non_null(strstr(p.note, "; opencl stopped after "));
		return;
	}
	assert_true(p.opencl_ms > 0);
	assert_string_equal(p.device, p.opencl_ms < p.cpu_ms ? "opencl" : "cpu");
	assert_ptr_equal(p.backend, p.opencl_ms < p.cpu_ms ? p.backend : mfs_backend_cpu());
	assert_non_null(strstr(p.note, " ms, opencl "));
}

/* defer_trial: the CPU at once, nothing timed or stored; the trial made
 * later (without defer) is stored, and a deferring route then takes it. */
static void test_auto_deferred(void **state)
{
	char dir[] = "/tmp/test_device_router.XXXXXX", routes[600];
	const char *path = "examples/mlp/1/model.onnx";
	mfs_placement p;
	mfs_error err;
	(void)state;
	assert_non_null(mkdtemp(dir));
	mfs_cache_set_base(dir);
	snprintf(routes, sizeof(routes), "%s/routes", dir);
	assert_int_equal(route_with(MFS_KIND_AUTO, MFS_DEVICE_AUTO, NULL, true, path, &p, &err), 0);
	if (strstr(p.note, "no OpenCL engine")) {
		assert_false(p.trial_pending);   /* nothing to time against */
		mfs_cache_set_base(NULL);
		skip();
	}
	assert_string_equal(p.device, "cpu");
	assert_true(p.trial_pending);
	assert_false(p.measured || p.cached);
	assert_true(p.cpu_ms < 0 && p.opencl_ms < 0);
	assert_non_null(strstr(p.note, "auto: cpu until timed"));
	assert_int_equal(access(routes, F_OK), -1);   /* nothing stored */
	/* the trial, as the daemon's later load makes it: stored */
	assert_int_equal(route_with(MFS_KIND_AUTO, MFS_DEVICE_AUTO, NULL, false, path, &p, &err), 0);
	assert_false(p.trial_pending || p.cached);
	assert_true(p.cpu_ms > 0);
	char device[16];
	snprintf(device, sizeof(device), "%s", p.device);
	/* and a deferring route reuses it: not pending */
	assert_int_equal(route_with(MFS_KIND_AUTO, MFS_DEVICE_AUTO, NULL, true, path, &p, &err), 0);
	assert_false(p.trial_pending);
	assert_true(p.cached);
	assert_string_equal(p.device, device);
	mfs_cache_set_base(NULL);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_auto_follows_device_option(void **state)
{
	mfs_placement p;
	mfs_error err;
	(void)state;
	assert_int_equal(route(MFS_KIND_AUTO, MFS_DEVICE_CPU, NULL, &p, &err), 0);
	assert_string_equal(p.device, "cpu");
	assert_false(p.measured);
	assert_int_equal(route(MFS_KIND_AUTO, MFS_DEVICE_OPENCL, NULL, &p, &err), 0);
	assert_string_equal(p.device, "opencl");
	assert_int_equal(route(MFS_KIND_AUTO, MFS_DEVICE_OPENCL, "no-such-device-xyz", &p, &err),
			 -ENODEV);
	assert_non_null(strstr(err.msg, "--device=opencl"));
	/* auto without a device: the CPU, and the note says why */
	assert_int_equal(route(MFS_KIND_AUTO, MFS_DEVICE_AUTO, "no-such-device-xyz", &p, &err), 0);
	assert_string_equal(p.device, "cpu");
	assert_non_null(strstr(p.note, "no OpenCL engine"));
}

/* A model whose input is a shape (Reshape's, from the ONNX backend test
 * data): the made-up warm-up input cannot run it, the load must not fail. */
static void test_auto_warmup_failure_keeps_cpu(void **state)
{
	mfs_graph *saved = model, *reshape = NULL;
	mfs_placement p;
	mfs_error err;
	int rc;
	(void)state;
	if (mfs_graph_load("/usr/share/libonnx-testdata/data/node/test_reshape_reduced_dims/model.onnx",
			   "reshape", &reshape, &err)) {
		fail_msg("%s", err.msg);
	}
	model = reshape;
	rc = route(MFS_KIND_AUTO, MFS_DEVICE_AUTO, NULL, &p, &err);
	model = saved;
	mfs_graph_free(reshape);
	assert_int_equal(rc, 0);
	assert_string_equal(p.device, "cpu");
	assert_false(p.measured);
	assert_non_null(strstr(p.note, "not timed"));
	assert_non_null(strstr(p.note, "Reshape"));
}

static void test_backend_shared(void **state)
{
	mfs_backend *a = NULL, *b = NULL;
	mfs_error err;
	(void)state;
	assert_int_equal(mfs_router_opencl(NULL, &a, &err), 0);
	assert_int_equal(mfs_router_opencl(NULL, &b, &err), 0);
	assert_non_null(a);
	assert_ptr_equal(a, b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kind_cpu),
		cmocka_unit_test(test_kind_gpu),
		cmocka_unit_test(test_auto_times_both),
		cmocka_unit_test(test_auto_deferred),
		cmocka_unit_test(test_auto_follows_device_option),
		cmocka_unit_test(test_auto_warmup_failure_keeps_cpu),
		cmocka_unit_test(test_backend_shared),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

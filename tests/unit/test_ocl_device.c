/* Unit tests for exec/opencl/ocl_device.c on whatever OpenCL device is present
 * (PoCL's CPU device in CI). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ocl_device.h"
#include "tmp_tree.h"

static const char *src_add =
	"__kernel void add(__global const float *a, __global const float *b,"
	" __global float *c) { size_t i = get_global_id(0); c[i] = a[i] + b[i]; }\n";

static tmp_tree cache;
static const char *const cache_dir = cache.root;

static int setup(void **state)
{
	(void)state;
	if (tmp_tree_make(&cache, "mfs-ocl-cache") < 0)
		return -1;
	setenv("MODELFS_CACHE_DIR", cache_dir, 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return tmp_tree_remove(&cache);
}

static void test_lists_and_opens_default(void **state)
{
	mfs_ocl_device *d = NULL;
	mfs_error err;
	FILE *null = fopen("/dev/null", "w");
	(void)state;
	assert_true(mfs_ocl_list(null) > 0);
	fclose(null);
	assert_int_equal(mfs_ocl_open(NULL, &d, &err), 0);
	assert_non_null(d);
	assert_true(strlen(d->name) > 3);
	mfs_ocl_close(d);
	assert_int_equal(mfs_ocl_open("0", &d, &err), 0);
	mfs_ocl_close(d);
}

static void test_unknown_selector_names_devices(void **state)
{
	mfs_ocl_device *d = NULL;
	mfs_error err;
	(void)state;
	assert_int_equal(mfs_ocl_open("no-such-device-xyz", &d, &err), -ENODEV);
	assert_null(d);
	assert_non_null(strstr(err.msg, "no-such-device-xyz"));
	assert_non_null(strstr(err.msg, "0: "));
	assert_int_equal(mfs_ocl_open("99", &d, &err), -ENODEV);
}

static void test_build_runs_and_caches(void **state)
{
	mfs_ocl_device *d = NULL;
	mfs_error err;
	cl_program prog;
	cl_int st;
	float a[4] = { 1, 2, 3, 4 }, b[4] = { 10, 20, 30, 40 }, c[4] = { 0 };
	size_t n = 4;
	char cmd[512];
	(void)state;

	assert_int_equal(mfs_ocl_open(NULL, &d, &err), 0);
	assert_int_equal(mfs_ocl_build(d, "add", src_add, "", &prog, &err), 0);
	cl_kernel k = clCreateKernel(prog, "add", &st);
	assert_int_equal(st, CL_SUCCESS);
	cl_mem ba = clCreateBuffer(d->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(a), a, &st);
	cl_mem bb = clCreateBuffer(d->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(b), b, &st);
	cl_mem bc = clCreateBuffer(d->context, CL_MEM_WRITE_ONLY, sizeof(c), NULL, &st);
	clSetKernelArg(k, 0, sizeof(cl_mem), &ba);
	clSetKernelArg(k, 1, sizeof(cl_mem), &bb);
	clSetKernelArg(k, 2, sizeof(cl_mem), &bc);
	assert_int_equal(clEnqueueNDRangeKernel(d->queue, k, 1, NULL, &n, NULL, 0, NULL, NULL), CL_SUCCESS);
	assert_int_equal(clEnqueueReadBuffer(d->queue, bc, CL_TRUE, 0, sizeof(c), c, 0, NULL, NULL), CL_SUCCESS);
	assert_true(c[0] == 11 && c[3] == 44);
	clReleaseMemObject(ba);
	clReleaseMemObject(bb);
	clReleaseMemObject(bc);
	clReleaseKernel(k);
	clReleaseProgram(prog);

	/* The binary is in the cache now, and a second build uses it. */
	snprintf(cmd, sizeof(cmd), "ls '%s'/*.bin >/dev/null 2>&1", cache_dir);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(mfs_ocl_build(d, "add", src_add, "", &prog, &err), 0);
	clReleaseProgram(prog);

	/* A corrupt cache entry is rebuilt, not trusted. */
	snprintf(cmd, sizeof(cmd), "for f in '%s'/*.bin; do echo garbage > \"$f\"; done", cache_dir);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(mfs_ocl_build(d, "add", src_add, "", &prog, &err), 0);
	clReleaseProgram(prog);
	mfs_ocl_close(d);
}

static void test_build_error_carries_log(void **state)
{
	mfs_ocl_device *d = NULL;
	mfs_error err;
	cl_program prog;
	(void)state;
	assert_int_equal(mfs_ocl_open(NULL, &d, &err), 0);
	assert_int_equal(mfs_ocl_build(d, "broken.cl", "__kernel void f( { oops }", "", &prog, &err), -EIO);
	assert_non_null(strstr(err.msg, "broken.cl"));
	assert_non_null(strstr(err.msg, "CL_BUILD_PROGRAM_FAILURE"));
	mfs_ocl_close(d);
}

static void test_strerror(void **state)
{
	(void)state;
	assert_string_equal(mfs_ocl_strerror(CL_OUT_OF_RESOURCES), "CL_OUT_OF_RESOURCES");
	assert_string_equal(mfs_ocl_strerror(-12345), "unknown OpenCL error");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lists_and_opens_default),
		cmocka_unit_test(test_unknown_selector_names_devices),
		cmocka_unit_test(test_build_runs_and_caches),
		cmocka_unit_test(test_build_error_carries_log),
		cmocka_unit_test(test_strerror),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

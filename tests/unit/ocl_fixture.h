/* ocl_fixture.h - the OpenCL backend every test of a file shares
 * (test_ocl_backend.c, test_ocl_resident.c): made in the group setup,
 * freed in its teardown; the group fails when there is no device. */
#ifndef MFS_TEST_OCL_FIXTURE_H
#define MFS_TEST_OCL_FIXTURE_H

#include "ocl_backend.h"

static mfs_backend *ocl;

static int setup(void **state)
{
	mfs_error err;
	(void)state;
	if (mfs_backend_opencl_new(NULL, &ocl, &err)) {
		fprintf(stderr, "no OpenCL backend: %s\n", err.msg);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	mfs_backend_opencl_free(ocl);
	return 0;
}

#endif

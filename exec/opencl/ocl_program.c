/* ocl_program.c - the kernels (every .cl file of kernels/) as one OpenCL program per
 * backend and one set of kernel objects per execution context (see
 * ocl_program.h).  A name in OCL_KERNELS that the program lacks fails the
 * context's creation, so a typo shows at once.
 */
#include <stdlib.h>
#include <string.h>

#include "ocl_program.h"

extern const struct { const char *name; const char *source; } mfs_embedded_kernels[];

static const char *const kernel_names[K_COUNT] = {
#define OCL_KERNEL_NAME(id, name) [id] = name,
	OCL_KERNELS(OCL_KERNEL_NAME)
#undef OCL_KERNEL_NAME
};

const char *ocl_kernel_name(ocl_kid k)
{
	return kernel_names[k];
}

int ocl_program_build(mfs_ocl_device *dev, cl_program *prog, mfs_error *err)
{
	char *src;
	size_t len = 0;
	int rc;

	for (int i = 0; mfs_embedded_kernels[i].name; i++)
		len += strlen(mfs_embedded_kernels[i].source) + 1;
	src = malloc(len + 1);
	if (!src)
		return mfs_fail(err, ENOMEM, "out of memory");
	src[0] = '\0';
	for (int i = 0; mfs_embedded_kernels[i].name; i++) {
		strcat(src, mfs_embedded_kernels[i].source);
		strcat(src, "\n");
	}
	rc = mfs_ocl_build(dev, "kernels", src, "-cl-std=CL1.2", prog, err);
	free(src);
	return rc;
}

int ocl_kernels_create(const mfs_ocl_device *dev, cl_program prog,
		       cl_kernel *kernels, mfs_error *err)
{
	cl_int st;

	for (int k = 0; k < K_COUNT; k++) {
		kernels[k] = clCreateKernel(prog, kernel_names[k], &st);
		if (!kernels[k])
			return mfs_fail(err, EIO, "OpenCL kernel %s on %s: %s",
					kernel_names[k], dev->name, mfs_ocl_strerror(st));
	}
	return 0;
}

/* ocl_program.h - the engine's OpenCL program: every .cl file of kernels/
 * (embedded into the binary at build time) built as one program per
 * backend, and the kernels of OCL_KERNELS (ocl_internal.h) made from it
 * per execution context.  The build goes through ocl_device.c's on-disk
 * binary cache.  Internal to exec/opencl/.
 */
#ifndef MFS_OCL_PROGRAM_H
#define MFS_OCL_PROGRAM_H

#include "ocl_internal.h"

/* The __kernel name of kernel k (for messages and the profile). */
const char *ocl_kernel_name(ocl_kid k);

/* Build the embedded kernel sources for dev into *prog; the error (with
 * the build log's first lines) in err. */
int ocl_program_build(mfs_ocl_device *dev, cl_program *prog, mfs_error *err);

/* Create every kernel of OCL_KERNELS from prog into kernels[K_COUNT]; on
 * failure the ones made so far stay in kernels[] for the caller to
 * release, and err names the kernel and the device. */
int ocl_kernels_create(const mfs_ocl_device *dev, cl_program prog,
		       cl_kernel *kernels, mfs_error *err);

#endif

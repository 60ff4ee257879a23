/* ocl_backend.h - the OpenCL engine behind exec/runtime/backend.h.
 *
 * mfs_backend_opencl_new opens the device the selector chooses (see
 * ocl_device.h), builds the kernels (kernels/ directory) once (cached on disk) and returns a
 * backend that mfs_exec_new places models on.  Tensors stay on the device
 * between operators; operators without a device implementation (and
 * cases the kernels do not cover, e.g. double tensors) run on the CPU
 * with transfers (docs/OPENCL.md).  The backend may be shared by any
 * number of execution contexts and threads: each context has its own
 * command queue and kernel objects.
 */
#ifndef MFS_OCL_BACKEND_H
#define MFS_OCL_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "error.h"

/* -ENODEV when no device matches.  The kernels are built by the first
 * execution context made on the backend (or mfs_backend_opencl_prepare),
 * once; when they do not build, that and every later context fails with
 * -EIO and the build log. */
int mfs_backend_opencl_new(const char *selector, mfs_backend **out,
			   mfs_error *err);
/* Build the kernels now if no context has (the error as above). */
int mfs_backend_opencl_prepare(mfs_backend *b, mfs_error *err);
/* Free a backend made by mfs_backend_opencl_new (after every exec on it). */
void mfs_backend_opencl_free(mfs_backend *b);
bool mfs_backend_is_opencl(const mfs_backend *b);

/* What the device says of itself, for the engine-choice cache's key and
 * the GPU gauges of the metrics page (strings borrowed from b). */
struct mfs_opencl_info;
typedef struct mfs_opencl_info {
	const char *name;          /* "platform / device" */
	const char *driver;        /* CL_DRIVER_VERSION */
	uint64_t global_mem_bytes; /* CL_DEVICE_GLOBAL_MEM_SIZE */
	unsigned compute_units;
} mfs_opencl_info;

/* -EINVAL when b is not an OpenCL backend. */
int mfs_backend_opencl_info(const mfs_backend *b, mfs_opencl_info *out);

#endif

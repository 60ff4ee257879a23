/* ocl_device.h - one OpenCL device opened for the engine: choosing it,
 * building kernels with an on-disk binary cache, and OpenCL errors in words.
 *
 * Choosing (SPEC.md section 1, --opencl-device): NULL or "" picks the first
 * GPU of any platform, else the first device; a decimal number picks that
 * index in the list `mfs_ocl_list` prints (platforms in loader order,
 * devices in platform order); any other text picks the first device whose
 * "platform / device" name contains it (case-insensitive).  Never assume
 * platform 0 is the GPU (NOTES.md: loaders order platforms differently).
 *
 * Program cache: PoCL needs seconds to compile a program, so built binaries
 * are kept under $MODELFS_CACHE_DIR, else the opencl directory of the
 * cache (src/base/cache_dir.h: --cache-dir, $XDG_CACHE_HOME/modelfs, ...), named by a hash of the platform, device,
 * driver version, build options and source.  A cache that cannot be read or
 * written only costs the compile; a corrupt entry is rebuilt.
 */
#ifndef MFS_OCL_DEVICE_H
#define MFS_OCL_DEVICE_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdbool.h>
#include <stdio.h>

#include "error.h"

typedef struct mfs_ocl_device {
	cl_platform_id platform;
	cl_device_id device;
	cl_context context;
	cl_command_queue queue;
	char name[256];          /* "platform / device" */
	char driver[128];        /* CL_DRIVER_VERSION */
	cl_ulong global_mem;
	size_t max_work_group;
	cl_uint compute_units;
} mfs_ocl_device;

/* Print every OpenCL device as "N: platform / device (type)" to f.
 * Returns the count (0 when there is no platform). */
int mfs_ocl_list(FILE *f);

/* Open the device selector chooses (see above): context and an in-order
 * queue.  -ENODEV "no OpenCL device matches 'x' (N devices: ...)". */
int mfs_ocl_open(const char *selector, mfs_ocl_device **out, mfs_error *err);
void mfs_ocl_close(mfs_ocl_device *d);

/* Build a program from source (cached as described above).  On a compiler
 * error the message carries the build log's first lines. */
int mfs_ocl_build(mfs_ocl_device *d, const char *label, const char *source,
		  const char *options, cl_program *out, mfs_error *err);

/* "CL_OUT_OF_RESOURCES" for an OpenCL status code. */
const char *mfs_ocl_strerror(cl_int status);

#endif

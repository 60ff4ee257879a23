/* ocl_resident.h - device tensors kept between runs (engine.h, "Resident
 * tensors"), for ocl_backend.c.  Internal to exec/opencl/. */
#ifndef MFS_OCL_RESIDENT_H
#define MFS_OCL_RESIDENT_H

#include "ocl_exec.h"

/* Graph output value v into o as a device tensor, its block taken out
 * of e's pool: 1 when it did, 0 when v cannot be kept (on the host, a
 * constant's or a shared block: the caller downloads it), or -ENOMEM. */
int ocl_resident_keep(ocl_exec *e, oval *v, mfs_tensor *o, mfs_error *err);
/* Graph input value v from the device tensor in: its memory becomes a
 * block of e's pool (the tensor is consumed).  -EINVAL for a tensor of
 * another backend or one already consumed, -ENOMEM. */
int ocl_resident_bind(ocl_exec *e, oval *v, const mfs_tensor *in, mfs_error *err);

#endif

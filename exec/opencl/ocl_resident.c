/* ocl_resident.c - resident tensors of the OpenCL engine (engine.h,
 * "Resident tensors"): a graph output kept on the device leaves the
 * context's buffer pool as an ocl_resident (its cl_mem, the queue that
 * wrote it), and a later run of any context of the same backend takes it
 * back into its own pool as the input's block: the run reads it where it
 * lies, then reuses the memory like any block of its pool.  A decoder's
 * key/value cache thus stays on the device from step to step.
 */
#include <stdlib.h>

#include "ocl_resident.h"

typedef struct ocl_resident {
	mfs_device_data base;
	cl_mem mem;                /* NULL once a run took it */
	size_t cap;
	cl_command_queue queue;    /* for read: the queue that wrote it */
} ocl_resident;

static int resident_read(mfs_device_data *d, void *dst, size_t bytes, mfs_error *err)
{
	ocl_resident *r = (ocl_resident *)d;
	if (!r->mem)
		return mfs_fail(err, EINVAL, "the device tensor was consumed by a run");
	if (bytes > r->cap)
		return mfs_fail(err, EINVAL, "reading %zu bytes of a device tensor of %zu", bytes, r->cap);
	cl_int st = clEnqueueReadBuffer(r->queue, r->mem, CL_TRUE, 0, bytes, dst, 0, NULL, NULL);
	if (st != CL_SUCCESS)
		return mfs_fail(err, EIO, "reading a device tensor: %s", mfs_ocl_strerror(st));
	return 0;
}

static void resident_put(mfs_device_data *d)
{
	ocl_resident *r = (ocl_resident *)d;
	if (r->mem)
		clReleaseMemObject(r->mem);
	clReleaseCommandQueue(r->queue);
	free(r);
}

int ocl_resident_keep(ocl_exec *e, oval *v, mfs_tensor *o, mfs_error *err)
{
	if (!v->dev || v->on_host || v->dev->pinned || v->dev->refs != 1)
		return 0;
	ocl_resident *r = calloc(1, sizeof(*r));
	if (!r)
		return mfs_fail(err, ENOMEM, "out of memory");
	r->base.owner = &e->b->base;
	r->base.read = resident_read;
	r->base.put = resident_put;
	r->queue = e->queue;
	clRetainCommandQueue(r->queue);
	r->mem = mfs_pool_detach(&e->pool, v->dev, &r->cap);
	v->dev = NULL;
	*o = (mfs_tensor){ .dtype = v->t.dtype, .shape = v->t.shape, .layout = MFS_LAYOUT_DEVICE,
			   .data = r, .nbytes = mfs_rt_bytes(&v->t), .owns_data = true,
			   .kind = MFS_KIND_TENSOR };
	e->stats.kept_outputs++;
	return 1;
}

int ocl_resident_bind(ocl_exec *e, oval *v, const mfs_tensor *in, mfs_error *err)
{
	ocl_resident *r = in->data;
	if (r->base.owner != &e->b->base || !r->mem)
		return mfs_fail(err, EINVAL, "a device tensor of another engine, or one a run consumed");
	mfs_block *b = mfs_pool_adopt(&e->pool, r->mem, r->cap);
	if (!b)
		return mfs_fail(err, ENOMEM, "out of memory");
	r->mem = NULL;   /* the pool's now */
	v->t = *in;
	v->t.layout = MFS_LAYOUT_PLAIN;
	v->t.data = NULL;
	v->t.nbytes = 0;
	v->t.owns_data = false;
	v->dev = b;
	v->on_host = false;
	v->host_made = false;
	e->stats.resident_inputs++;
	return 0;
}

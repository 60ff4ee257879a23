/* ocl_run.c - what an operator of ocl_ops_*.c calls on the node it runs
 * (ocl_internal.h): the device buffers of its inputs and outputs, scratch
 * and kept buffers, kernel arguments and launches, profiling; and the
 * value movement between host and device that ocl_backend.c's node loop
 * asks for too (ocl_exec.h).
 *
 * Buffers: cl_mem blocks come from the context's pool (backend_runtime.h),
 * with reference counts for views; a constant's block is pinned: uploaded
 * once per context, never handed out again.  Host copies use per-value
 * buffers kept across runs.
 *
 * Errors: every OpenCL status becomes a message naming the node and the
 * call; out of device memory is -ENOMEM.  Nothing here aborts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_exec.h"
#include "ocl_program.h"

/* ---- errors ---- */

/* Fail with an OpenCL status in words, naming the node and the call:
 * "Conv 'c1': OpenCL clEnqueueWriteBuffer failed: CL_OUT_OF_RESOURCES". */
static int ocl_fail(ocl_run *r, cl_int status, const char *what)
{
	int code = (status == CL_MEM_OBJECT_ALLOCATION_FAILURE ||
		    status == CL_OUT_OF_RESOURCES || status == CL_OUT_OF_HOST_MEMORY) ?
		   ENOMEM : EIO;
	return mfs_fail(r->err, code, "%s '%s': OpenCL %s failed: %s%s",
			r->nd->onnx->op_type, onnx_node_label(r->nd->onnx), what,
			mfs_ocl_strerror(status),
			code == ENOMEM ? " (out of device memory)" : "");
}

/* ---- the device buffer pool ---- */

static cl_mem create_buf(ocl_exec *e, size_t size, cl_int *st)
{
	return clCreateBuffer(e->b->dev->context, CL_MEM_READ_WRITE,
			      size < 64 ? 64 : size, NULL, st);
}

static void *dev_alloc(void *arg, size_t size, int *status)
{
	cl_int st;
	cl_mem m = create_buf(arg, size, &st);
	if (!m)
		*status = st;
	return m;
}

static void dev_release(void *arg, void *mem)
{
	(void)arg;
	clReleaseMemObject(mem);
}

void ocl_pool_init(ocl_exec *e)
{
	e->pool = (mfs_pool){ .alloc = dev_alloc, .release = dev_release,
			      .arg = e, .oom_status = CL_OUT_OF_HOST_MEMORY,
			      .n_allocs = &e->stats.buffer_allocs };
}

/* ---- value movement ---- */

int ocl_host_reserve(oval *v, size_t bytes, mfs_error *err)
{
	if (v->hcap < bytes || !v->hbuf) {
		void *p = mfs_aligned_block(bytes);
		if (!p)
			return mfs_fail(err, ENOMEM, "out of memory allocating %zu bytes", bytes);
		free(v->hbuf);
		v->hbuf = p;
		v->hcap = bytes;
	}
	return 0;
}

/* Make v's data present on the device. */
static int to_device(ocl_run *r, oval *v)
{
	ocl_exec *e = r->e;
	size_t bytes = mfs_rt_bytes(&v->t);
	cl_int st;

	if (v->dev)
		return 0;
	v->dev = mfs_pool_take(&e->pool, bytes, &st);
	if (!v->dev)
		return ocl_fail(r, st, "clCreateBuffer");
	if (v->is_const)
		v->dev->pinned = true;
	if (bytes) {
		if (!v->on_host || !v->t.data)
			return mfs_node_fail(r->nd, r->err, EIO, "input has no data");
		cl_event ev;
		st = clEnqueueWriteBuffer(e->queue, v->dev->mem, CL_FALSE, 0, bytes,
					  v->t.data, 0, NULL, ocl_prof_event(r, &ev));
		/* The host data (a caller's input) must outlive the
		 * non-blocking write: it does, the run ends with a blocking
		 * read or clFinish before returning. */
		if (st != CL_SUCCESS)
			return ocl_fail(r, st, "clEnqueueWriteBuffer");
		ocl_prof_add(r, ev, PROF_UPLOAD);
		e->stats.uploads++;
	}
	return 0;
}

/* Make v's data present on the host. */
int ocl_to_host(ocl_run *r, oval *v)
{
	ocl_exec *e = r->e;
	size_t bytes = mfs_rt_bytes(&v->t);
	cl_int st;
	int rc;

	if (v->on_host)
		return 0;
	if ((rc = ocl_host_reserve(v, bytes, r->err)))
		return rc;
	if (bytes) {
		if (!v->dev)
			return mfs_node_fail(r->nd, r->err, EIO, "input has no data");
		cl_event ev;
		st = clEnqueueReadBuffer(e->queue, v->dev->mem, CL_TRUE, 0, bytes,
					 v->hbuf, 0, NULL, ocl_prof_event(r, &ev));
		if (st != CL_SUCCESS)
			return ocl_fail(r, st, "clEnqueueReadBuffer");
		ocl_prof_add(r, ev, PROF_DOWNLOAD);
		e->stats.downloads++;
	}
	v->t.data = v->hbuf;
	v->t.nbytes = bytes;
	v->on_host = true;
	return 0;
}

oval *ocl_in_val(ocl_run *r, int k)
{
	int id = k < r->nd->n_in ? r->nd->in[k] : -1;
	return id >= 0 ? &r->e->vals[id] : NULL;
}

cl_mem ocl_in(ocl_run *r, int k, int *rc)
{
	oval *v = ocl_in_val(r, k);
	if (!v) {
		*rc = mfs_node_fail(r->nd, r->err, EINVAL, "input %d is missing", k);
		return NULL;
	}
	if ((*rc = to_device(r, v)))
		return NULL;
	return v->dev->mem;
}

const void *ocl_in_host(ocl_run *r, int k, int *rc)
{
	oval *v = ocl_in_val(r, k);
	if (!v) {
		*rc = mfs_node_fail(r->nd, r->err, EINVAL, "input %d is missing", k);
		return NULL;
	}
	if ((*rc = ocl_to_host(r, v)))
		return NULL;
	r->ctx->in[k]->data = v->t.data;
	r->ctx->in[k]->nbytes = v->t.nbytes;
	return v->t.data;
}

cl_mem ocl_out(ocl_run *r, int k, int *rc)
{
	int id = k < r->nd->n_out ? r->nd->out[k] : -1;
	oval *v;
	cl_int st;

	*rc = 0;
	if (id < 0) {
		*rc = mfs_node_fail(r->nd, r->err, EINVAL, "output %d is not named", k);
		return NULL;
	}
	v = &r->e->vals[id];
	if (v->dev)
		return v->dev->mem;
	v->dev = mfs_pool_take(&r->e->pool, mfs_rt_bytes(&v->t), &st);
	if (!v->dev) {
		*rc = ocl_fail(r, st, "clCreateBuffer");
		return NULL;
	}
	v->on_host = false;
	v->t.data = NULL;
	v->t.nbytes = mfs_rt_bytes(&v->t);
	return v->dev->mem;
}

int ocl_alias(ocl_run *r, int k_in, int k_out)
{
	oval *src = ocl_in_val(r, k_in), *dst;
	int rc;

	if (!ocl_in(r, k_in, &rc))
		return rc;
	dst = &r->e->vals[r->nd->out[k_out]];
	dst->dev = src->dev;
	if (!dst->dev->pinned)
		dst->dev->refs++;
	dst->on_host = false;
	dst->t.data = NULL;
	dst->t.nbytes = 0;
	r->e->stats.views++;
	return 0;
}

cl_mem ocl_node_buffer(ocl_run *r, size_t bytes, bool *fresh, int *rc)
{
	ocl_exec *e = r->e;
	node_rt *rt = &e->nodes[r->nd - e->m->nodes];
	cl_int st;

	*rc = 0;
	*fresh = false;
	if (rt->kept && rt->kept_bytes == bytes)
		return rt->kept;
	if (rt->kept)
		clReleaseMemObject(rt->kept);
	rt->kept = create_buf(e, bytes, &st);
	rt->kept_bytes = rt->kept ? bytes : 0;
	if (!rt->kept) {
		*rc = ocl_fail(r, st, "clCreateBuffer (kept)");
		return NULL;
	}
	e->stats.buffer_allocs++;
	*fresh = true;
	return rt->kept;
}

bool ocl_in_const(ocl_run *r, int k)
{
	oval *v = ocl_in_val(r, k);
	return v && v->is_const;
}

cl_mem ocl_scratch_slot(ocl_run *r, int slot, size_t bytes, int *rc)
{
	ocl_exec *e = r->e;
	mfs_block **sp = &e->scratch[slot];
	cl_int st;

	*rc = 0;
	if (*sp && (*sp)->cap >= bytes)
		return (*sp)->mem;
	if (*sp) {
		clReleaseMemObject((*sp)->mem);
		(*sp)->mem = NULL;
	} else {
		*sp = calloc(1, sizeof(**sp));
		if (!*sp) {
			*rc = mfs_fail(r->err, ENOMEM, "out of memory");
			return NULL;
		}
	}
	(*sp)->mem = create_buf(e, bytes, &st);
	(*sp)->cap = (*sp)->mem ? bytes : 0;
	if (!(*sp)->mem) {
		*rc = ocl_fail(r, st, "clCreateBuffer (scratch)");
		return NULL;
	}
	e->stats.buffer_allocs++;
	return (*sp)->mem;
}

cl_mem ocl_scratch(ocl_run *r, size_t bytes, int *rc)
{
	return ocl_scratch_slot(r, 0, bytes, rc);
}

void ocl_scratch_free(ocl_exec *e)
{
	for (int i = 0; i < OCL_SCRATCH_SLOTS; i++) {
		if (e->scratch[i] && e->scratch[i]->mem)
			clReleaseMemObject(e->scratch[i]->mem);
		free(e->scratch[i]);
		e->scratch[i] = NULL;
	}
}

cl_command_queue *ocl_queue(ocl_run *r)
{
	return &r->e->queue;
}

size_t ocl_max_group(ocl_run *r)
{
	return r->e->b->dev->max_work_group;
}

size_t ocl_compute_units(ocl_run *r)
{
	return r->e->b->dev->compute_units ? r->e->b->dev->compute_units : 1;
}

int ocl_arg(ocl_run *r, ocl_kid k, int i, size_t size, const void *p)
{
	cl_int st = clSetKernelArg(r->e->kernels[k], (cl_uint)i, size, p);
	if (st != CL_SUCCESS) {
		char what[96];
		snprintf(what, sizeof(what), "clSetKernelArg(%s, %d)", ocl_kernel_name(k), i);
		return ocl_fail(r, st, what);
	}
	return 0;
}

cl_event *ocl_prof_event(ocl_run *r, cl_event *ev)
{
	*ev = NULL;
	return r->e->profile ? ev : NULL;
}

void ocl_prof_record(ocl_exec *e, cl_event ev, int slot)
{
	cl_ulong t0 = 0, t1 = 0;

	if (!ev)
		return;
	clWaitForEvents(1, &ev);
	clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof(t0), &t0, NULL);
	clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof(t1), &t1, NULL);
	clReleaseEvent(ev);
	e->prof_ms[slot] += (double)(t1 - t0) * 1e-6;
	e->prof_calls[slot]++;
}

void ocl_prof_add(ocl_run *r, cl_event ev, int slot)
{
	ocl_prof_record(r->e, ev, slot);
}

void ocl_prof_print(const ocl_exec *e)
{
	double all = 0;

	static const char *const extra[] = { "clblast_sgemm", "upload", "download" };

	for (int k = 0; k < PROF_SLOTS; k++)
		all += e->prof_ms[k];
	fprintf(stderr, "opencl profile (%ld runs): %.3f ms in kernels and copies\n",
		(long)e->stats.runs, all);
	for (int k = 0; k < PROF_SLOTS; k++)
		if (e->prof_calls[k])
			fprintf(stderr, "  %-18s %8ld calls %10.3f ms %5.1f%%\n",
				k < K_COUNT ? ocl_kernel_name(k) : extra[k - K_COUNT],
				e->prof_calls[k], e->prof_ms[k],
				all > 0 ? 100.0 * e->prof_ms[k] / all : 0.0);
}

/* Enqueue kernel k over global work items in groups of local. */
static int enqueue(ocl_run *r, ocl_kid k, size_t global, size_t local)
{
	cl_event ev;
	cl_int st = clEnqueueNDRangeKernel(r->e->queue, r->e->kernels[k], 1, NULL,
					   &global, &local, 0, NULL,
					   ocl_prof_event(r, &ev));
	if (st != CL_SUCCESS) {
		char what[96];
		snprintf(what, sizeof(what), "kernel %s", ocl_kernel_name(k));
		return ocl_fail(r, st, what);
	}
	ocl_prof_add(r, ev, k);
	r->e->stats.kernels++;
	return 0;
}

int ocl_launch(ocl_run *r, ocl_kid k, size_t n)
{
	size_t wg = r->e->wg;

	if (!n)
		return 0;
	return enqueue(r, k, (n + wg - 1) / wg * wg, wg);
}

int ocl_launch_groups(ocl_run *r, ocl_kid k, size_t groups, size_t local)
{
	if (!groups)
		return 0;
	return enqueue(r, k, groups * local, local);
}

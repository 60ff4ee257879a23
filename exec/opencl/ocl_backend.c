/* ocl_backend.c - runs a compiled graph on an OpenCL device.
 *
 * Values: every value of the graph has a runtime slot that knows where its
 * data is: on the device (a block of the context's device buffer pool), on
 * the host (a constant, a caller's input, a download, or the result of a
 * node run on the host), or both.  A value moves only when a reader needs
 * it elsewhere: a graph input is uploaded once, when the first device
 * kernel reads it; a graph output is downloaded once at the end; a
 * constant is uploaded once per context and kept.
 *
 * Shapes: each node's infer() runs on the host with the inputs' shapes;
 * only when it answers MFS_SHAPE_DEPENDS_ON_DATA (Reshape's shape input,
 * Slice's bounds...) are the integer inputs it needs downloaded, and infer
 * runs again.  Shape arithmetic (Shape -> Gather -> Concat -> Reshape) thus
 * stays on the host: a node whose inputs are all small and already on the
 * host runs its CPU implementation there instead of round-tripping.
 *
 * Placement: a node runs on the device when ocl_ops_*.c has a function for
 * its operator and that function accepts the case; otherwise its CPU
 * implementation runs on host copies of its inputs (downloads), and the
 * outputs are uploaded when a device node reads them.  View operators
 * (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout) alias their
 * input's block.
 *
 * Memory: cl_mem blocks come from the pool the CPU backend uses too
 * (backend_runtime.h), with reference counts for views; a value's block
 * goes back after its last reader (graph.h last_use), so a run with the
 * shapes of the previous one creates no buffer.  A constant's block is
 * pinned: uploaded once per context, never handed out again.  Host copies
 * use per-value buffers kept across runs.
 *
 * Errors: every OpenCL or CLBlast status becomes a message naming the
 * model (engine.c adds it), the node and the call; out of device memory
 * is -ENOMEM.  Nothing here aborts.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_runtime.h"
#include "log.h"
#include "ocl_backend.h"
#include "ocl_internal.h"

extern const struct { const char *name; const char *source; } mfs_embedded_kernels[];

static const char *const kernel_names[K_COUNT] = {
#define OCL_KERNEL_NAME(id, name) [id] = name,
	OCL_KERNELS(OCL_KERNEL_NAME)
#undef OCL_KERNEL_NAME
};

/* Inputs at most this many bytes, all on the host: run the node there. */
#define HOST_SMALL_BYTES 4096

typedef struct ocl_backend_ctx {
	mfs_backend base;
	mfs_ocl_device *dev;
	cl_program prog;
	char name[300];
} ocl_backend_ctx;

typedef struct oval {
	mfs_tensor t;          /* dtype, shape; t.data = host copy or NULL */
	mfs_block *dev;        /* device copy (cl_mem) or NULL */
	void *hbuf;            /* host storage owned by the slot */
	size_t hcap;
	bool on_host;
	bool is_const;
	bool host_made;        /* produced on the host in this run (shape
				  arithmetic), not a caller's input */
} oval;

typedef struct node_rt {
	mfs_node_rt rt;        /* rt.in points into hin */
	mfs_tensor *hin;       /* host views of the inputs for infer/host run */
	cl_mem kept;           /* ocl_node_buffer: kept across runs */
	size_t kept_bytes;
} node_rt;

/* Profile slots past the kernels: CLBlast, then the copies between host
 * and device (the input uploads and output downloads of a run count in
 * its time as much as the kernels do). */
enum { PROF_CLBLAST = K_COUNT, PROF_UPLOAD, PROF_DOWNLOAD, PROF_SLOTS };

struct ocl_exec {
	const mfs_graph *m;
	ocl_backend_ctx *b;
	cl_command_queue queue;
	cl_kernel kernels[K_COUNT];
	size_t wg;             /* work-group size for 1-D launches */
	oval *vals;
	node_rt *nodes;
	mfs_pool pool;
	mfs_block *scratch[OCL_SCRATCH_SLOTS];   /* not in the pool: per
						    context, only grow */
	mfs_exec_stats stats;
	/* MODELFS_OCL_PROFILE set: each launch waits for its event and adds
	 * its device time here (slot K_COUNT: CLBlast); printed at free */
	bool profile;
	double prof_ms[PROF_SLOTS];
	long prof_calls[PROF_SLOTS];
};

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

/* ---- value movement ---- */

static int host_reserve(oval *v, size_t bytes, mfs_error *err)
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
static int to_host(ocl_run *r, oval *v)
{
	ocl_exec *e = r->e;
	size_t bytes = mfs_rt_bytes(&v->t);
	cl_int st;
	int rc;

	if (v->on_host)
		return 0;
	if ((rc = host_reserve(v, bytes, r->err)))
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

static oval *in_val(ocl_run *r, int k)
{
	int id = k < r->nd->n_in ? r->nd->in[k] : -1;
	return id >= 0 ? &r->e->vals[id] : NULL;
}

cl_mem ocl_in(ocl_run *r, int k, int *rc)
{
	oval *v = in_val(r, k);
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
	oval *v = in_val(r, k);
	if (!v) {
		*rc = mfs_node_fail(r->nd, r->err, EINVAL, "input %d is missing", k);
		return NULL;
	}
	if ((*rc = to_host(r, v)))
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
	oval *v = in_val(r, k);
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
		snprintf(what, sizeof(what), "clSetKernelArg(%s, %d)", kernel_names[k], i);
		return ocl_fail(r, st, what);
	}
	return 0;
}

cl_event *ocl_prof_event(ocl_run *r, cl_event *ev)
{
	*ev = NULL;
	return r->e->profile ? ev : NULL;
}

static void prof_add(ocl_exec *e, cl_event ev, int slot)
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
	prof_add(r->e, ev, slot);
}

/* The profile of a context, one line per kernel, to stderr. */
static void prof_print(const ocl_exec *e)
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
				k < K_COUNT ? kernel_names[k] : extra[k - K_COUNT],
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
		snprintf(what, sizeof(what), "kernel %s", kernel_names[k]);
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

/* ---- the context ---- */

static void release_value(ocl_exec *e, int id)
{
	oval *v = &e->vals[id];
	if (v->is_const)
		return;
	mfs_block_put(v->dev);
	v->dev = NULL;
	v->on_host = false;
	v->host_made = false;
	v->t.data = NULL;
	v->t.nbytes = 0;
}

static void ocl_exec_free(void *ctx)
{
	ocl_exec *e = ctx;
	if (!e)
		return;
	if (e->queue)
		clFinish(e->queue);
	if (e->profile)
		prof_print(e);
	for (int i = 0; e->nodes && i < e->m->n_nodes; i++) {
		mfs_node_rt_release(&e->nodes[i].rt, &e->m->nodes[i]);
		free(e->nodes[i].hin);
		if (e->nodes[i].kept)
			clReleaseMemObject(e->nodes[i].kept);
	}
	free(e->nodes);
	for (int i = 0; e->vals && i < e->m->n_values; i++)
		free(e->vals[i].hbuf);
	free(e->vals);
	mfs_pool_release(&e->pool);
	for (int i = 0; i < OCL_SCRATCH_SLOTS; i++) {
		if (e->scratch[i] && e->scratch[i]->mem)
			clReleaseMemObject(e->scratch[i]->mem);
		free(e->scratch[i]);
	}
	for (int k = 0; k < K_COUNT; k++)
		if (e->kernels[k])
			clReleaseKernel(e->kernels[k]);
	if (e->queue)
		clReleaseCommandQueue(e->queue);
	free(e);
}

static int ocl_exec_new(mfs_backend *be, const mfs_graph *m, void **out,
			mfs_error *err)
{
	ocl_backend_ctx *b = be->context;
	ocl_exec *e;
	cl_int st;

	/* Containers live in host memory, item by item: the device's pool
	 * of buffers has no place for them (docs/OPENCL.md). */
	if (mfs_graph_has_containers(m))
		return mfs_fail(err, ENOTSUP,
				"model '%s': sequences and optionals run on the CPU engine only",
				m->label);
	e = calloc(1, sizeof(*e));
	if (!e)
		return mfs_fail(err, ENOMEM, "out of memory");
	e->m = m;
	e->b = b;
	e->pool = (mfs_pool){ .alloc = dev_alloc, .release = dev_release,
			      .arg = e, .oom_status = CL_OUT_OF_HOST_MEMORY,
			      .n_allocs = &e->stats.buffer_allocs };
	e->profile = getenv("MODELFS_OCL_PROFILE") && *getenv("MODELFS_OCL_PROFILE");
	e->queue = clCreateCommandQueue(b->dev->context, b->dev->device,
					e->profile ? CL_QUEUE_PROFILING_ENABLE : 0, &st);
	if (!e->queue) {
		ocl_exec_free(e);
		return mfs_fail(err, EIO, "OpenCL clCreateCommandQueue on %s: %s",
				b->dev->name, mfs_ocl_strerror(st));
	}
	for (int k = 0; k < K_COUNT; k++) {
		e->kernels[k] = clCreateKernel(b->prog, kernel_names[k], &st);
		if (!e->kernels[k]) {
			ocl_exec_free(e);
			return mfs_fail(err, EIO, "OpenCL kernel %s on %s: %s",
					kernel_names[k], b->dev->name, mfs_ocl_strerror(st));
		}
	}
	e->wg = b->dev->max_work_group < 64 ? b->dev->max_work_group : 64;
	if (!e->wg)
		e->wg = 1;
	e->vals = calloc((size_t)m->n_values + 1, sizeof(*e->vals));
	e->nodes = calloc((size_t)m->n_nodes + 1, sizeof(*e->nodes));
	if (!e->vals || !e->nodes)
		goto oom;
	for (int i = 0; i < m->n_nodes; i++) {
		const mfs_node *nd = &m->nodes[i];
		node_rt *rt = &e->nodes[i];
		rt->hin = calloc((size_t)nd->n_in + 1, sizeof(*rt->hin));
		if (mfs_node_rt_init(&rt->rt, nd) || !rt->hin)
			goto oom;
		for (int k = 0; k < nd->n_out; k++)
			rt->rt.out[k] = nd->out[k] >= 0 ? &e->vals[nd->out[k]].t : NULL;
	}
	for (int v = 0; v < m->n_values; v++) {
		const mfs_value *val = &m->values[v];
		oval *o = &e->vals[v];
		if (val->kind == MFS_VAL_CONST) {
			o->t = val->constant;
			o->t.owns_data = false;
			o->t.layout = MFS_LAYOUT_PLAIN;
			o->is_const = true;
			o->on_host = true;
		} else if (val->shape_static) {
			o->t.dtype = val->dtype;
			o->t.shape = val->shape;
		}
	}
	*out = e;
	return 0;
oom:
	ocl_exec_free(e);
	return mfs_fail(err, ENOMEM, "out of memory");
}

/* ---- one node ---- */

/* Run the node's CPU implementation on host copies. */
static int run_on_host(ocl_run *r, node_rt *rt)
{
	ocl_exec *e = r->e;
	const mfs_node *nd = r->nd;
	mfs_op_ctx *ctx = r->ctx;
	bool shape_only = !strcmp(nd->onnx->op_type, "Shape") ||
			  !strcmp(nd->onnx->op_type, "Size");
	int rc;

	for (int k = 0; k < nd->n_in; k++) {
		oval *v = in_val(r, k);
		if (!v)
			continue;
		if (shape_only && k == 0)
			continue;    /* reads only the shape */
		if ((rc = to_host(r, v)))
			return rc;
		rt->hin[k].data = v->t.data;
		rt->hin[k].nbytes = v->t.nbytes;
	}
	for (int k = 0; k < nd->n_out; k++) {
		oval *v;
		size_t bytes;
		if (!ctx->out[k])
			continue;
		v = &e->vals[nd->out[k]];
		if (!mfs_tensor_bytes(&v->t, &bytes))
			return mfs_fail(r->err, EINVAL, "output %d is too large", k);
		if ((rc = host_reserve(v, bytes, r->err)))
			return rc;
		mfs_block_put(v->dev);
		v->dev = NULL;
		v->t.data = bytes ? v->hbuf : NULL;
		v->t.nbytes = bytes;
		v->t.layout = MFS_LAYOUT_PLAIN;
		v->on_host = true;
		v->host_made = true;
	}
	rc = mfs_node_rt_prepare(&rt->rt, nd, ctx, &e->stats.prepares);
	if (rc)
		return rc;
	rc = nd->def->run(ctx);
	e->stats.host_nodes++;
	return rc;
}

/* Shape arithmetic: every input small and on the host, each a constant or
 * made on the host this run (a caller's input is not: it goes to the
 * device like any other). */
static bool small_on_host(ocl_exec *e, const mfs_node *nd)
{
	bool any = false;
	for (int k = 0; k < nd->n_in; k++) {
		const oval *v;
		if (nd->in[k] < 0)
			continue;
		v = &e->vals[nd->in[k]];
		if (!v->on_host || mfs_rt_bytes(&v->t) > HOST_SMALL_BYTES ||
		    !(v->is_const || v->host_made))
			return false;
		any |= v->host_made;
	}
	return any;
}

/* Step 1: host views of the inputs for infer and the host run: dtype
 * and shape, data where the host has it. */
static void bind_inputs(ocl_exec *e, const mfs_node *nd, node_rt *rt,
			mfs_op_ctx *ctx)
{
	for (int k = 0; k < nd->n_in; k++) {
		oval *v = nd->in[k] >= 0 ? &e->vals[nd->in[k]] : NULL;
		if (!v) {
			ctx->in[k] = NULL;
			continue;
		}
		rt->hin[k] = v->t;
		rt->hin[k].layout = MFS_LAYOUT_PLAIN;
		rt->hin[k].owns_data = false;
		if (!v->on_host) {
			rt->hin[k].data = NULL;
			rt->hin[k].nbytes = 0;
		}
		ctx->in[k] = &rt->hin[k];
		if (k < 64 && v->is_const)
			ctx->const_in |= (uint64_t)1 << k;
	}
}

/* Step 2 (shapes not static): infer the output shapes on the host,
 * downloading the integer inputs they depend on when infer asks. */
static int infer_outputs(ocl_run *r, node_rt *rt)
{
	const mfs_node *nd = r->nd;
	mfs_op_ctx *ctx = r->ctx;
	int rc;

	rc = mfs_node_infer(ctx);
	if (rc == MFS_SHAPE_DEPENDS_ON_DATA) {
		for (int k = 0; k < nd->n_in; k++) {
			oval *v = in_val(r, k);
			if (!v || v->on_host || v->t.dtype == MFS_DT_FLOAT)
				continue;
			if ((rc = to_host(r, v)))
				return rc;
			rt->hin[k].data = v->t.data;
			rt->hin[k].nbytes = v->t.nbytes;
		}
		rc = nd->def->infer(ctx);
	}
	if (rc > 0)
		return mfs_fail(r->err, EIO, "output shape unknown although every input is known");
	if (rc)
		return rc;
	for (int k = 0; k < nd->n_out; k++) {
		size_t bytes;
		if (ctx->out[k] && (!mfs_dtype_size(ctx->out[k]->dtype) ||
				    !mfs_tensor_bytes(ctx->out[k], &bytes)))
			return mfs_fail(r->err, EIO, "operator inferred an invalid type or shape for output %d", k);
	}
	return 0;
}

/* Step 3: a view aliases its input (device block or host copy) instead of
 * running; true when it did. */
static bool share_view(ocl_exec *e, const mfs_node *nd, const mfs_op_ctx *ctx)
{
	oval *src, *dst;

	if (!(nd->def->flags & MFS_OP_VIEW) || nd->n_in < 1 || nd->in[0] < 0 ||
	    !ctx->out[0] || (nd->n_out != 1 && ctx->out[1]) ||
	    ctx->out[0]->dtype != ctx->in[0]->dtype ||
	    mfs_rt_bytes(ctx->out[0]) != mfs_rt_bytes(ctx->in[0]) ||
	    (nd->def->may_view && !nd->def->may_view(ctx)))
		return false;
	src = &e->vals[nd->in[0]];
	dst = &e->vals[nd->out[0]];
	dst->dev = src->dev;
	if (dst->dev && !dst->dev->pinned)
		dst->dev->refs++;
	dst->on_host = src->on_host;
	dst->host_made = src->host_made;
	dst->t.data = src->on_host ? src->t.data : NULL;
	dst->t.nbytes = src->on_host ? src->t.nbytes : 0;
	e->stats.views++;
	return true;
}

/* Step 4: the device implementation, when there is one and the inputs
 * are not host-side shape arithmetic.  0 when it ran, OCL_HOST when the
 * node is for the host (any output block it took given back), else the
 * error. */
static int run_on_device(ocl_run *r)
{
	ocl_exec *e = r->e;
	const mfs_node *nd = r->nd;
	ocl_op_fn fn = ocl_op_lookup(nd->onnx->domain ? nd->onnx->domain : "",
				     nd->onnx->op_type);
	int rc;

	if (!fn || small_on_host(e, nd))
		return OCL_HOST;
	rc = fn(r);
	if (rc == 0)
		e->stats.device_nodes++;
	if (rc != OCL_HOST)
		return rc;
	for (int k = 0; k < nd->n_out; k++)
		if (nd->out[k] >= 0 && e->vals[nd->out[k]].dev) {
			mfs_block_put(e->vals[nd->out[k]].dev);
			e->vals[nd->out[k]].dev = NULL;
		}
	return OCL_HOST;
}

static int run_node(ocl_exec *e, int i, mfs_error *err)
{
	const mfs_node *nd = &e->m->nodes[i];
	node_rt *rt = &e->nodes[i];
	mfs_op_ctx ctx = mfs_node_ctx(nd, &rt->rt, err);
	ocl_run r = { .e = e, .nd = nd, .ctx = &ctx, .err = err };
	int rc;

	bind_inputs(e, nd, rt, &ctx);
	if (!nd->shapes_static && (rc = infer_outputs(&r, rt)))
		goto fail;
	for (int k = 0; k < nd->n_out; k++)
		if (ctx.out[k])
			ctx.out[k]->layout = MFS_LAYOUT_PLAIN;
	if (share_view(e, nd, &ctx))
		return 0;
	rc = run_on_device(&r);
	if (rc == OCL_HOST)
		rc = run_on_host(&r, rt);
	if (!rc)
		return 0;
fail:
	return mfs_node_error(nd, rc, err);
}

/* mfs_run_steps for OpenCL. */

static int step_node(void *ctx, int i, mfs_error *err)
{
	return run_node(ctx, i, err);
}

static void step_release(void *ctx, int v)
{
	release_value(ctx, v);
}

/* Graph output i: copied from the host copy, else downloaded. */
static int step_output(void *ctx, int i, mfs_tensor *o, mfs_error *err)
{
	ocl_exec *e = ctx;
	const mfs_graph *m = e->m;
	oval *v = &e->vals[m->output_ids[i]];
	cl_int st;
	int rc = mfs_tensor_alloc(o, v->t.dtype, &v->t.shape, err);

	if (rc || !o->nbytes)
		return rc;
	if (v->on_host) {
		memcpy(o->data, v->t.data, o->nbytes);
		return 0;
	}
	if (!v->dev) {
		mfs_tensor_release(o);
		return mfs_fail(err, EIO, "output '%s' was never computed",
				m->outputs[i].name);
	}
	cl_event ev = NULL;
	st = clEnqueueReadBuffer(e->queue, v->dev->mem, CL_TRUE, 0, o->nbytes,
				 o->data, 0, NULL, e->profile ? &ev : NULL);
	if (st != CL_SUCCESS) {
		mfs_tensor_release(o);
		return mfs_fail(err, st == CL_MEM_OBJECT_ALLOCATION_FAILURE ? ENOMEM : EIO,
				"reading output '%s' from the device: %s",
				m->outputs[i].name, mfs_ocl_strerror(st));
	}
	prof_add(e, ev, PROF_DOWNLOAD);
	e->stats.downloads++;
	return 0;
}

static const mfs_run_steps ocl_steps = {
	.node = step_node, .release = step_release, .output = step_output,
};

static int ocl_exec_run(void *ctx, const mfs_tensor *inputs, mfs_tensor *outputs,
			mfs_error *err)
{
	ocl_exec *e = ctx;
	const mfs_graph *m = e->m;
	int rc;

	mfs_pool_new_run(&e->pool);
	e->stats.runs++;
	for (int i = 0; i < m->n_inputs; i++) {
		oval *v = &e->vals[m->input_ids[i]];
		v->t = inputs[i];
		v->t.owns_data = false;
		v->on_host = true;
		v->host_made = false;
		v->dev = NULL;
	}
	rc = mfs_run_graph(m, &ocl_steps, e, outputs, err);
	/* Nothing may still read the caller's inputs after we return. */
	clFinish(e->queue);
	for (int v = 0; v < m->n_values; v++)
		if (!e->vals[v].is_const && (e->vals[v].dev || e->vals[v].on_host))
			release_value(e, v);
	return rc;
}

static void ocl_exec_stats(void *ctx, mfs_exec_stats *out)
{
	*out = ((ocl_exec *)ctx)->stats;
}

/* ---- the backend object ---- */

static const char *ocl_name(mfs_backend *be)
{
	return ((ocl_backend_ctx *)be->context)->name;
}

static bool ocl_supports_op(mfs_backend *b, const mfs_op_def *def,
			    const onnx_node *node)
{
	(void)b;
	(void)node;
	/* every operator: the device's own, the rest on the host; not the
	 * control flow of If, Loop and Scan (their bodies run on the CPU
	 * backend, so the router places such a model on the CPU) */
	return def && def->infer && def->run &&
	       !(def->flags & MFS_OP_OUTPUTS_AT_RUN);
}

static void ocl_free(mfs_backend *be)
{
	ocl_backend_ctx *b;
	if (!be)
		return;
	b = be->context;
	if (b->prog)
		clReleaseProgram(b->prog);
	mfs_ocl_close(b->dev);
	free(b);
}

static const mfs_backend_iface ocl_iface = {
	.name = ocl_name,
	.supports_op = ocl_supports_op,
	.exec_new = ocl_exec_new,
	.exec_run = ocl_exec_run,
	.exec_free = ocl_exec_free,
	.free = ocl_free,
	.exec_stats = ocl_exec_stats,
};

int mfs_backend_opencl_new(const char *selector, mfs_backend **out,
			   mfs_error *err)
{
	ocl_backend_ctx *b = calloc(1, sizeof(*b));
	char *src = NULL;
	size_t len = 0;
	int rc;

	*out = NULL;
	if (!b)
		return mfs_fail(err, ENOMEM, "out of memory");
	rc = mfs_ocl_open(selector, &b->dev, err);
	if (rc) {
		free(b);
		return rc;
	}
	for (int i = 0; mfs_embedded_kernels[i].name; i++)
		len += strlen(mfs_embedded_kernels[i].source) + 1;
	src = malloc(len + 1);
	if (!src) {
		ocl_free(&b->base);
		return mfs_fail(err, ENOMEM, "out of memory");
	}
	src[0] = '\0';
	for (int i = 0; mfs_embedded_kernels[i].name; i++) {
		strcat(src, mfs_embedded_kernels[i].source);
		strcat(src, "\n");
	}
	b->base.iface = &ocl_iface;
	b->base.context = b;
	rc = mfs_ocl_build(b->dev, "kernels", src, "-cl-std=CL1.2", &b->prog, err);
	free(src);
	if (rc) {
		ocl_free(&b->base);
		return rc;
	}
	snprintf(b->name, sizeof(b->name), "opencl:%s", b->dev->name);
	*out = &b->base;
	return 0;
}

void mfs_backend_opencl_free(mfs_backend *b)
{
	if (b && b->iface == &ocl_iface)
		ocl_free(b);
}

bool mfs_backend_is_opencl(const mfs_backend *b)
{
	return b && b->iface == &ocl_iface;
}

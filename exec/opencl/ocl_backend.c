/* ocl_backend.c - runs a compiled graph on an OpenCL device: the
 * execution contexts, the node loop and the backend object.  What an
 * operator calls on the device (buffers, launches) is ocl_run.c's; the
 * program and kernels are ocl_program.c's; which operators have a device
 * implementation, for which opsets, is ocl_op_table.c's.
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
 * Placement: a node runs on the device when the table (ocl_op_table.c) has
 * a function for its operator at its opset and that function accepts the
 * case; otherwise its CPU implementation runs on host copies of its inputs
 * (downloads), and the outputs are uploaded when a device node reads
 * them.  View operators
 * (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout) alias their
 * input's block.
 *
 * Memory: a value's device block (ocl_run.c) goes back after its last
 * reader (graph.h last_use), so a run with the shapes of the previous one
 * creates no buffer.
 *
 * Errors: every OpenCL or CLBlast status becomes a message naming the
 * model (engine.c adds it), the node and the call; out of device memory
 * is -ENOMEM.  Nothing here aborts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_runtime.h"
#include "ocl_backend.h"
#include "ocl_exec.h"
#include "ocl_program.h"
#include "ocl_resident.h"

/* Inputs at most this many bytes, all on the host: run the node there. */
#define HOST_SMALL_BYTES 4096

/* ---- the context ---- */

/* The program, built on first use (ocl_exec.h). */
static int backend_program(ocl_backend_ctx *b, mfs_error *err)
{
	pthread_mutex_lock(&b->prog_lock);
	if (!b->prog && !b->prog_rc) {
		mfs_error_clear(&b->prog_err);
		b->prog_rc = ocl_program_build(b->dev, &b->prog, &b->prog_err);
	}
	int rc = b->prog_rc;
	if (rc)
		*err = b->prog_err;
	pthread_mutex_unlock(&b->prog_lock);
	return rc;
}

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
		ocl_prof_print(e);
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
	ocl_scratch_free(e);
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
	int rc;

	/* Containers live in host memory, item by item: the device's pool
	 * of buffers has no place for them (docs/OPENCL.md). */
	if (mfs_graph_has_containers(m))
		return mfs_fail(err, ENOTSUP,
				"model '%s': sequences and optionals run on the CPU engine only",
				m->label);
	/* String elements point into host arenas (tensor.h) */
	if (mfs_graph_has_strings(m))
		return mfs_fail(err, ENOTSUP,
				"model '%s': string tensors run on the CPU engine only",
				m->label);
	e = calloc(1, sizeof(*e));
	if (!e)
		return mfs_fail(err, ENOMEM, "out of memory");
	e->m = m;
	e->b = b;
	ocl_pool_init(e);
	e->profile = getenv("MODELFS_OCL_PROFILE") && *getenv("MODELFS_OCL_PROFILE");
	e->queue = clCreateCommandQueue(b->dev->context, b->dev->device,
					e->profile ? CL_QUEUE_PROFILING_ENABLE : 0, &st);
	if (!e->queue) {
		ocl_exec_free(e);
		return mfs_fail(err, EIO, "OpenCL clCreateCommandQueue on %s: %s",
				b->dev->name, mfs_ocl_strerror(st));
	}
	if ((rc = backend_program(b, err)) ||
	    (rc = ocl_kernels_create(b->dev, b->prog, e->kernels, err))) {
		ocl_exec_free(e);
		return rc;
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
		oval *v = ocl_in_val(r, k);
		if (!v)
			continue;
		if (shape_only && k == 0)
			continue;    /* reads only the shape */
		if ((rc = ocl_to_host(r, v)))
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
		if ((rc = ocl_host_reserve(v, bytes, r->err)))
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
			oval *v = ocl_in_val(r, k);
			if (!v || v->on_host || v->t.dtype == MFS_DT_FLOAT)
				continue;
			if ((rc = ocl_to_host(r, v)))
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
				     nd->onnx->op_type, nd->opset);
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
	int rc = e->keep && e->keep[i] ? ocl_resident_keep(e, v, o, err) : 0;

	if (rc)
		return rc < 0 ? rc : 0;
	rc = mfs_tensor_alloc(o, v->t.dtype, &v->t.shape, err);
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
	ocl_prof_record(e, ev, PROF_DOWNLOAD);
	e->stats.downloads++;
	return 0;
}

static const mfs_run_steps ocl_steps = {
	.node = step_node, .release = step_release, .output = step_output,
};

/* Inputs, device tensors (engine.h) adopted into the pool where they
 * lie, host ones to upload when a kernel first reads them. */
static int bind_graph_inputs(ocl_exec *e, const mfs_tensor *inputs, mfs_error *err)
{
	const mfs_graph *m = e->m;
	for (int i = 0; i < m->n_inputs; i++) {
		oval *v = &e->vals[m->input_ids[i]];
		if (mfs_tensor_on_device(&inputs[i])) {
			int rc = ocl_resident_bind(e, v, &inputs[i], err);
			if (rc) {
				mfs_error_prefix(err, "input '%s': ", m->inputs[i].name);
				return rc;
			}
			continue;
		}
		v->t = inputs[i];
		v->t.owns_data = false;
		v->on_host = true;
		v->host_made = false;
		v->dev = NULL;
	}
	return 0;
}

static int ocl_exec_run_keep(void *ctx, const mfs_tensor *inputs, mfs_tensor *outputs,
			     const bool *keep, mfs_error *err)
{
	ocl_exec *e = ctx;
	const mfs_graph *m = e->m;
	int rc;

	mfs_pool_new_run(&e->pool);
	e->stats.runs++;
	e->keep = keep;
	rc = bind_graph_inputs(e, inputs, err);
	if (!rc)
		rc = mfs_run_graph(m, &ocl_steps, e, outputs, err);
	e->keep = NULL;
	/* Nothing may still read the caller's inputs after we return. */
	clFinish(e->queue);
	for (int v = 0; v < m->n_values; v++)
		if (!e->vals[v].is_const && (e->vals[v].dev || e->vals[v].on_host))
			release_value(e, v);
	return rc;
}

static int ocl_exec_run(void *ctx, const mfs_tensor *inputs, mfs_tensor *outputs,
			mfs_error *err)
{
	return ocl_exec_run_keep(ctx, inputs, outputs, NULL, err);
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
	pthread_mutex_destroy(&b->prog_lock);
	mfs_ocl_close(b->dev);
	free(b);
}

static const mfs_backend_iface ocl_iface = {
	.name = ocl_name,
	.supports_op = ocl_supports_op,
	.exec_new = ocl_exec_new,
	.exec_run = ocl_exec_run,
	.exec_run_keep = ocl_exec_run_keep,
	.exec_free = ocl_exec_free,
	.free = ocl_free,
	.exec_stats = ocl_exec_stats,
};

int mfs_backend_opencl_new(const char *selector, mfs_backend **out,
			   mfs_error *err)
{
	ocl_backend_ctx *b = calloc(1, sizeof(*b));
	int rc;

	*out = NULL;
	if (!b)
		return mfs_fail(err, ENOMEM, "out of memory");
	rc = mfs_ocl_open(selector, &b->dev, err);
	if (rc) {
		free(b);
		return rc;
	}
	b->base.iface = &ocl_iface;
	b->base.context = b;
	pthread_mutex_init(&b->prog_lock, NULL);
	snprintf(b->name, sizeof(b->name), "opencl:%s", b->dev->name);
	*out = &b->base;
	return 0;
}

int mfs_backend_opencl_prepare(mfs_backend *b, mfs_error *err)
{
	if (!mfs_backend_is_opencl(b))
		return mfs_fail(err, EINVAL, "not an OpenCL engine");
	return backend_program(b->context, err);
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

int mfs_backend_opencl_info(const mfs_backend *be, mfs_opencl_info *out)
{
	const ocl_backend_ctx *b;
	if (!mfs_backend_is_opencl(be))
		return -EINVAL;
	b = be->context;
	out->name = b->dev->name;
	out->driver = b->dev->driver;
	out->global_mem_bytes = (uint64_t)b->dev->global_mem;
	out->compute_units = b->dev->compute_units;
	return 0;
}

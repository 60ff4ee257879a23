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
 * Memory: the pool hands out cl_mem blocks by best fit, regrowing the
 * largest free one before creating another, with reference counts for
 * views; a value's block goes back after its last reader (graph.h
 * last_use), so a run with the shapes of the previous one creates no
 * buffer.  Host copies use per-value buffers kept across runs.
 *
 * Errors: every OpenCL or CLBlast status becomes a message naming the
 * model (engine.c adds it), the node and the call; out of device memory
 * is -ENOMEM.  Nothing here aborts.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "ocl_backend.h"
#include "ocl_internal.h"

extern const struct { const char *name; const char *source; } mfs_embedded_kernels[];

static const char *const kernel_names[K_COUNT] = {
	"unary_f32", "binary_f32", "binary_i64", "binary_i32",
	"equal_f32", "equal_i64", "equal_i32", "equal_u8",
	"where_1", "where_4", "where_8",
	"copy_1", "copy_4", "copy_8",
	"fill_1", "fill_4", "fill_8",
	"cast",
	"gather_1_i64", "gather_4_i64", "gather_8_i64",
	"gather_1_i32", "gather_4_i32", "gather_8_i32",
	"reduce_f32", "softmax_f32", "layernorm_f32", "batchnorm_f32",
	"maxpool2d_f32", "avgpool2d_f32", "gavgpool_f32",
	"im2col_f32", "conv_epilogue", "conv_direct_f32",
};

/* Inputs at most this many bytes, all on the host: run the node there. */
#define HOST_SMALL_BYTES 4096

typedef struct ocl_backend_ctx {
	mfs_backend base;
	mfs_ocl_device *dev;
	cl_program prog;
	char name[300];
} ocl_backend_ctx;

typedef struct dbuf {
	cl_mem mem;
	size_t cap;
	int refs;              /* 0 = free */
	bool pinned;           /* a constant's block: never returned */
} dbuf;

typedef struct oval {
	mfs_tensor t;          /* dtype, shape; t.data = host copy or NULL */
	dbuf *dev;             /* device copy or NULL */
	void *hbuf;            /* host storage owned by the slot */
	size_t hcap;
	bool on_host;
	bool is_const;
	bool host_made;        /* produced on the host in this run (shape
				  arithmetic), not a caller's input */
} oval;

typedef struct in_sig {
	mfs_dtype dtype;
	mfs_shape shape;
} in_sig;

typedef struct node_rt {
	mfs_tensor **in, **out;
	mfs_tensor *hin;       /* host views of the inputs for infer/host run */
	void *state;           /* host run: the CPU op's prepare() state */
	bool prepared;
	in_sig *sig;
} node_rt;

struct ocl_exec {
	const mfs_graph *m;
	ocl_backend_ctx *b;
	cl_command_queue queue;
	cl_kernel kernels[K_COUNT];
	size_t wg;             /* work-group size for 1-D launches */
	oval *vals;
	node_rt *nodes;
	dbuf **pool;
	int n_pool, cap_pool;
	dbuf *scratch;
	mfs_exec_stats stats;
};

/* ---- errors ---- */

static const char *node_label(const onnx_node *n)
{
	if (n->name && *n->name)
		return n->name;
	return n->n_outputs && n->outputs[0] ? n->outputs[0] : "?";
}

int ocl_fail(ocl_run *r, cl_int status, const char *what)
{
	int code = (status == CL_MEM_OBJECT_ALLOCATION_FAILURE ||
		    status == CL_OUT_OF_RESOURCES || status == CL_OUT_OF_HOST_MEMORY) ?
		   ENOMEM : EIO;
	return mfs_fail(r->err, code, "%s '%s': OpenCL %s failed: %s%s",
			r->nd->onnx->op_type, node_label(r->nd->onnx), what,
			mfs_ocl_strerror(status),
			code == ENOMEM ? " (out of device memory)" : "");
}

/* ---- the device buffer pool ---- */

static cl_mem create_buf(ocl_exec *e, size_t size, cl_int *st)
{
	return clCreateBuffer(e->b->dev->context, CL_MEM_READ_WRITE,
			      size < 64 ? 64 : size, NULL, st);
}

static dbuf *pool_take(ocl_exec *e, size_t size, cl_int *st)
{
	dbuf *b = NULL, *largest = NULL;

	*st = CL_SUCCESS;
	for (int i = 0; i < e->n_pool; i++) {
		dbuf *p = e->pool[i];
		if (p->refs || p->pinned)
			continue;
		if (p->cap >= size && (!b || p->cap < b->cap))
			b = p;
		if (!largest || p->cap > largest->cap)
			largest = p;
	}
	if (!b && largest) {
		cl_mem m = create_buf(e, size, st);
		if (!m)
			return NULL;
		clReleaseMemObject(largest->mem);
		largest->mem = m;
		largest->cap = size;
		e->stats.buffer_allocs++;
		b = largest;
	}
	if (!b) {
		if (e->n_pool == e->cap_pool) {
			int cap = e->cap_pool ? 2 * e->cap_pool : 32;
			dbuf **np = realloc(e->pool, (size_t)cap * sizeof(*np));
			if (!np) {
				*st = CL_OUT_OF_HOST_MEMORY;
				return NULL;
			}
			e->pool = np;
			e->cap_pool = cap;
		}
		b = calloc(1, sizeof(*b));
		if (!b) {
			*st = CL_OUT_OF_HOST_MEMORY;
			return NULL;
		}
		b->mem = create_buf(e, size, st);
		if (!b->mem) {
			free(b);
			return NULL;
		}
		b->cap = size;
		e->pool[e->n_pool++] = b;
		e->stats.buffer_allocs++;
	}
	b->refs = 1;
	return b;
}

static inline void dbuf_put(dbuf *b)
{
	if (b && !b->pinned)
		b->refs--;
}

/* ---- value movement ---- */

static size_t tensor_bytes(const mfs_tensor *t)
{
	size_t n = 0;
	mfs_tensor_bytes(t, &n);
	return n;
}


static int host_reserve(oval *v, size_t bytes, mfs_error *err)
{
	if (v->hcap < bytes || !v->hbuf) {
		void *p = aligned_alloc(64, (bytes + 63) & ~(size_t)63 ? (bytes + 63) & ~(size_t)63 : 64);
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
	size_t bytes = tensor_bytes(&v->t);
	cl_int st;

	if (v->dev)
		return 0;
	v->dev = pool_take(e, bytes, &st);
	if (!v->dev)
		return ocl_fail(r, st, "clCreateBuffer");
	if (v->is_const)
		v->dev->pinned = true;
	if (bytes) {
		if (!v->on_host || !v->t.data)
			return mfs_fail(r->err, EIO, "%s '%s': input has no data",
					r->nd->onnx->op_type, node_label(r->nd->onnx));
		st = clEnqueueWriteBuffer(e->queue, v->dev->mem, CL_FALSE, 0, bytes,
					  v->t.data, 0, NULL, NULL);
		/* The host data (a caller's input) must outlive the
		 * non-blocking write: it does, the run ends with a blocking
		 * read or clFinish before returning. */
		if (st != CL_SUCCESS)
			return ocl_fail(r, st, "clEnqueueWriteBuffer");
		e->stats.uploads++;
	}
	return 0;
}

/* Make v's data present on the host. */
static int to_host(ocl_run *r, oval *v)
{
	ocl_exec *e = r->e;
	size_t bytes = tensor_bytes(&v->t);
	cl_int st;
	int rc;

	if (v->on_host)
		return 0;
	if ((rc = host_reserve(v, bytes, r->err)))
		return rc;
	if (bytes) {
		if (!v->dev)
			return mfs_fail(r->err, EIO, "%s '%s': input has no data",
					r->nd->onnx->op_type, node_label(r->nd->onnx));
		st = clEnqueueReadBuffer(e->queue, v->dev->mem, CL_TRUE, 0, bytes,
					 v->hbuf, 0, NULL, NULL);
		if (st != CL_SUCCESS)
			return ocl_fail(r, st, "clEnqueueReadBuffer");
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
		*rc = mfs_fail(r->err, EINVAL, "%s '%s': input %d is missing",
			       r->nd->onnx->op_type, node_label(r->nd->onnx), k);
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
		*rc = mfs_fail(r->err, EINVAL, "%s '%s': input %d is missing",
			       r->nd->onnx->op_type, node_label(r->nd->onnx), k);
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
		*rc = mfs_fail(r->err, EINVAL, "%s '%s': output %d is not named",
			       r->nd->onnx->op_type, node_label(r->nd->onnx), k);
		return NULL;
	}
	v = &r->e->vals[id];
	if (v->dev)
		return v->dev->mem;
	v->dev = pool_take(r->e, tensor_bytes(&v->t), &st);
	if (!v->dev) {
		*rc = ocl_fail(r, st, "clCreateBuffer");
		return NULL;
	}
	v->on_host = false;
	v->t.data = NULL;
	v->t.nbytes = tensor_bytes(&v->t);
	return v->dev->mem;
}

cl_mem ocl_scratch(ocl_run *r, size_t bytes, int *rc)
{
	ocl_exec *e = r->e;
	cl_int st;

	*rc = 0;
	if (e->scratch && e->scratch->cap >= bytes)
		return e->scratch->mem;
	if (e->scratch) {
		clReleaseMemObject(e->scratch->mem);
		e->scratch->mem = NULL;
	} else {
		e->scratch = calloc(1, sizeof(*e->scratch));
		if (!e->scratch) {
			*rc = mfs_fail(r->err, ENOMEM, "out of memory");
			return NULL;
		}
	}
	e->scratch->mem = create_buf(e, bytes, &st);
	e->scratch->cap = e->scratch->mem ? bytes : 0;
	if (!e->scratch->mem) {
		*rc = ocl_fail(r, st, "clCreateBuffer (scratch)");
		return NULL;
	}
	e->stats.buffer_allocs++;
	return e->scratch->mem;
}

cl_kernel ocl_kernel(ocl_run *r, ocl_kid k)
{
	return r->e->kernels[k];
}

cl_command_queue *ocl_queue(ocl_run *r)
{
	return &r->e->queue;
}

size_t ocl_max_group(ocl_run *r)
{
	return r->e->b->dev->max_work_group;
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

int ocl_launch(ocl_run *r, ocl_kid k, size_t n)
{
	size_t wg = r->e->wg, global = (n + wg - 1) / wg * wg;
	cl_int st;

	if (!n)
		return 0;
	st = clEnqueueNDRangeKernel(r->e->queue, r->e->kernels[k], 1, NULL, &global,
				    &wg, 0, NULL, NULL);
	if (st != CL_SUCCESS) {
		char what[96];
		snprintf(what, sizeof(what), "kernel %s", kernel_names[k]);
		return ocl_fail(r, st, what);
	}
	r->e->stats.kernels++;
	return 0;
}

int ocl_launch_groups(ocl_run *r, ocl_kid k, size_t groups, size_t local)
{
	size_t global = groups * local;
	cl_int st;

	if (!groups)
		return 0;
	st = clEnqueueNDRangeKernel(r->e->queue, r->e->kernels[k], 1, NULL, &global,
				    &local, 0, NULL, NULL);
	if (st != CL_SUCCESS) {
		char what[96];
		snprintf(what, sizeof(what), "kernel %s", kernel_names[k]);
		return ocl_fail(r, st, what);
	}
	r->e->stats.kernels++;
	return 0;
}

/* ---- the context ---- */

static void release_value(ocl_exec *e, int id)
{
	oval *v = &e->vals[id];
	if (v->is_const)
		return;
	dbuf_put(v->dev);
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
	for (int i = 0; e->nodes && i < e->m->n_nodes; i++) {
		const mfs_node *nd = &e->m->nodes[i];
		node_rt *rt = &e->nodes[i];
		if (rt->state && nd->def->release)
			nd->def->release(rt->state);
		free(rt->in);
		free(rt->out);
		free(rt->hin);
		free(rt->sig);
	}
	free(e->nodes);
	for (int i = 0; e->vals && i < e->m->n_values; i++)
		free(e->vals[i].hbuf);
	free(e->vals);
	for (int i = 0; i < e->n_pool; i++) {
		clReleaseMemObject(e->pool[i]->mem);
		free(e->pool[i]);
	}
	free(e->pool);
	if (e->scratch) {
		if (e->scratch->mem)
			clReleaseMemObject(e->scratch->mem);
		free(e->scratch);
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
	ocl_exec *e = calloc(1, sizeof(*e));
	cl_int st;

	if (!e)
		return mfs_fail(err, ENOMEM, "out of memory");
	e->m = m;
	e->b = b;
	e->queue = clCreateCommandQueue(b->dev->context, b->dev->device, 0, &st);
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
		rt->in = calloc((size_t)nd->n_in + 1, sizeof(*rt->in));
		rt->hin = calloc((size_t)nd->n_in + 1, sizeof(*rt->hin));
		rt->out = calloc((size_t)nd->n_out + 1, sizeof(*rt->out));
		rt->sig = calloc((size_t)nd->n_in + 1, sizeof(*rt->sig));
		if (!rt->in || !rt->out || !rt->sig || !rt->hin)
			goto oom;
		for (int k = 0; k < nd->n_out; k++)
			rt->out[k] = nd->out[k] >= 0 ? &e->vals[nd->out[k]].t : NULL;
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

static int node_error(const mfs_node *nd, int rc, mfs_error *err)
{
	char head[256];
	if (rc >= 0)
		rc = -EIO;
	if (!err->code)
		return mfs_fail(err, -rc, "%s '%s': failed (%s)", nd->onnx->op_type,
				node_label(nd->onnx), strerror(-rc));
	snprintf(head, sizeof(head), "%s '%s'", nd->onnx->op_type, node_label(nd->onnx));
	if (strncmp(err->msg, head, strlen(head)) != 0)
		mfs_error_prefix(err, "%s: ", head);
	return rc;
}

static bool sig_changed(const node_rt *rt, int n_in)
{
	for (int k = 0; k < n_in; k++) {
		const mfs_tensor *t = rt->in[k];
		const in_sig *s = &rt->sig[k];
		if (!t) {
			if (s->dtype != MFS_DT_UNDEFINED)
				return true;
			continue;
		}
		if (s->dtype != t->dtype || !mfs_shape_equal(&s->shape, &t->shape))
			return true;
	}
	return false;
}

static void sig_save(node_rt *rt, int n_in)
{
	for (int k = 0; k < n_in; k++) {
		const mfs_tensor *t = rt->in[k];
		rt->sig[k].dtype = t ? t->dtype : MFS_DT_UNDEFINED;
		if (t)
			rt->sig[k].shape = t->shape;
	}
}

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
		if (!rt->out[k])
			continue;
		v = &e->vals[nd->out[k]];
		if (!mfs_tensor_bytes(&v->t, &bytes))
			return mfs_fail(r->err, EINVAL, "output %d is too large", k);
		if ((rc = host_reserve(v, bytes, r->err)))
			return rc;
		dbuf_put(v->dev);
		v->dev = NULL;
		v->t.data = bytes ? v->hbuf : NULL;
		v->t.nbytes = bytes;
		v->t.layout = MFS_LAYOUT_PLAIN;
		v->on_host = true;
		v->host_made = true;
	}
	if (nd->def->prepare &&
	    (!rt->prepared || (!nd->shapes_static && sig_changed(rt, nd->n_in)))) {
		rc = nd->def->prepare(ctx);
		if (rc)
			return rc;
		rt->prepared = true;
		sig_save(rt, nd->n_in);
	}
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
		if (!v->on_host || tensor_bytes(&v->t) > HOST_SMALL_BYTES ||
		    !(v->is_const || v->host_made))
			return false;
		any |= v->host_made;
	}
	return any;
}

static int run_node(ocl_exec *e, int i, mfs_error *err)
{
	const mfs_graph *m = e->m;
	const mfs_node *nd = &m->nodes[i];
	node_rt *rt = &e->nodes[i];
	mfs_op_ctx ctx = {
		.def = nd->def, .node = nd->onnx, .opset = nd->opset,
		.n_in = nd->n_in, .in = rt->in, .n_out = nd->n_out, .out = rt->out,
		.state = &rt->state, .err = err,
	};
	ocl_run r = { .e = e, .nd = nd, .ctx = &ctx, .err = err };
	ocl_op_fn fn;
	int rc = 0;

	/* Host views of the inputs: shape and dtype, data where known. */
	for (int k = 0; k < nd->n_in; k++) {
		oval *v = nd->in[k] >= 0 ? &e->vals[nd->in[k]] : NULL;
		if (!v) {
			rt->in[k] = NULL;
			continue;
		}
		rt->hin[k] = v->t;
		rt->hin[k].layout = MFS_LAYOUT_PLAIN;
		rt->hin[k].owns_data = false;
		if (!v->on_host) {
			rt->hin[k].data = NULL;
			rt->hin[k].nbytes = 0;
		}
		rt->in[k] = &rt->hin[k];
		if (k < 64 && v->is_const)
			ctx.const_in |= (uint64_t)1 << k;
	}

	if (!nd->shapes_static) {
		for (int k = 0; k < nd->n_out; k++)
			if (rt->out[k]) {
				rt->out[k]->data = NULL;
				rt->out[k]->nbytes = 0;
				rt->out[k]->layout = MFS_LAYOUT_PLAIN;
			}
		rc = nd->def->infer(&ctx);
		if (rc == MFS_SHAPE_DEPENDS_ON_DATA) {
			/* Fetch the integer inputs the shapes depend on. */
			for (int k = 0; k < nd->n_in; k++) {
				oval *v = in_val(&r, k);
				if (!v || v->on_host || v->t.dtype == MFS_DT_FLOAT)
					continue;
				if ((rc = to_host(&r, v)))
					goto fail;
				rt->hin[k].data = v->t.data;
				rt->hin[k].nbytes = v->t.nbytes;
			}
			rc = nd->def->infer(&ctx);
		}
		if (rc > 0)
			rc = mfs_fail(err, EIO, "output shape unknown although every input is known");
		if (rc)
			goto fail;
		for (int k = 0; k < nd->n_out; k++) {
			size_t bytes;
			if (rt->out[k] && (!mfs_dtype_size(rt->out[k]->dtype) ||
					   !mfs_tensor_bytes(rt->out[k], &bytes))) {
				rc = mfs_fail(err, EIO, "operator inferred an invalid type or shape for output %d", k);
				goto fail;
			}
		}
	}
	for (int k = 0; k < nd->n_out; k++)
		if (rt->out[k])
			rt->out[k]->layout = MFS_LAYOUT_PLAIN;

	/* Views alias their input. */
	if ((nd->def->flags & MFS_OP_VIEW) && nd->n_in >= 1 && nd->in[0] >= 0 &&
	    rt->out[0] && (nd->n_out == 1 || !rt->out[1]) &&
	    rt->out[0]->dtype == rt->in[0]->dtype &&
	    tensor_bytes(rt->out[0]) == tensor_bytes(rt->in[0])) {
		oval *src = &e->vals[nd->in[0]], *dst = &e->vals[nd->out[0]];
		dst->dev = src->dev;
		if (dst->dev && !dst->dev->pinned)
			dst->dev->refs++;
		dst->on_host = src->on_host;
		dst->host_made = src->host_made;
		dst->t.data = src->on_host ? src->t.data : NULL;
		dst->t.nbytes = src->on_host ? src->t.nbytes : 0;
		e->stats.views++;
		return 0;
	}

	fn = ocl_op_lookup(nd->onnx->domain ? nd->onnx->domain : "", nd->onnx->op_type);
	if (fn && !small_on_host(e, nd)) {
		rc = fn(&r);
		if (rc == 0) {
			e->stats.device_nodes++;
			return 0;
		}
		if (rc != OCL_HOST)
			goto fail;
		/* declined: give back any output it took */
		for (int k = 0; k < nd->n_out; k++)
			if (nd->out[k] >= 0 && e->vals[nd->out[k]].dev) {
				dbuf_put(e->vals[nd->out[k]].dev);
				e->vals[nd->out[k]].dev = NULL;
			}
	}
	rc = run_on_host(&r, rt);
	if (rc)
		goto fail;
	return 0;
fail:
	return node_error(nd, rc, err);
}

static int ocl_exec_run(void *ctx, const mfs_tensor *inputs, mfs_tensor *outputs,
			mfs_error *err)
{
	ocl_exec *e = ctx;
	const mfs_graph *m = e->m;
	int rc = 0, done = 0;

	e->stats.runs++;
	for (int i = 0; i < m->n_inputs; i++) {
		oval *v = &e->vals[m->input_ids[i]];
		v->t = inputs[i];
		v->t.owns_data = false;
		v->on_host = true;
		v->host_made = false;
		v->dev = NULL;
	}
	for (int i = 0; i < m->n_nodes; i++) {
		const mfs_node *nd = &m->nodes[i];
		rc = run_node(e, i, err);
		if (rc)
			goto out;
		for (int k = 0; k < nd->n_frees; k++)
			release_value(e, nd->frees[k]);
	}
	for (done = 0; done < m->n_outputs; done++) {
		oval *v = &e->vals[m->output_ids[done]];
		mfs_tensor *o = &outputs[done];
		ocl_run r = { .e = e, .nd = NULL, .err = err };
		cl_int st;
		rc = mfs_tensor_alloc(o, v->t.dtype, &v->t.shape, err);
		if (rc)
			break;
		if (!o->nbytes)
			continue;
		if (v->on_host) {
			memcpy(o->data, v->t.data, o->nbytes);
			continue;
		}
		if (!v->dev) {
			rc = mfs_fail(err, EIO, "output '%s' was never computed",
				      m->outputs[done].name);
			mfs_tensor_release(o);
			break;
		}
		(void)r;
		st = clEnqueueReadBuffer(e->queue, v->dev->mem, CL_TRUE, 0, o->nbytes,
					 o->data, 0, NULL, NULL);
		if (st != CL_SUCCESS) {
			rc = mfs_fail(err, st == CL_MEM_OBJECT_ALLOCATION_FAILURE ? ENOMEM : EIO,
				      "reading output '%s' from the device: %s",
				      m->outputs[done].name, mfs_ocl_strerror(st));
			mfs_tensor_release(o);
			break;
		}
		e->stats.downloads++;
	}
	if (rc)
		for (int i = 0; i < done; i++)
			mfs_tensor_release(&outputs[i]);
out:
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
	/* every operator: the device's own, the rest on the host */
	return def && def->infer && def->run;
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

bool mfs_backend_opencl_is_gpu(const mfs_backend *b)
{
	return mfs_backend_is_opencl(b) && ((ocl_backend_ctx *)b->context)->dev->is_gpu;
}

int mfs_backend_opencl_host_ops(const mfs_graph *m, const char **first)
{
	int n = 0;
	if (first)
		*first = NULL;
	for (int i = 0; i < m->n_nodes; i++) {
		const onnx_node *o = m->nodes[i].onnx;
		if ((m->nodes[i].def->flags & MFS_OP_VIEW) ||
		    ocl_op_lookup(o->domain ? o->domain : "", o->op_type))
			continue;
		if (!strcmp(o->op_type, "Shape") || !strcmp(o->op_type, "Constant"))
			continue;   /* host by design: no data moves */
		if (first && !*first)
			*first = o->op_type;
		n++;
	}
	return n;
}

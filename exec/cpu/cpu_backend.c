/* cpu_backend.c - runs a compiled graph on host memory by calling each
 * operator's callbacks in the graph's order.
 *
 * Memory: every buffer a run needs comes from a per-context pool of
 * 64-byte aligned blocks (backend_runtime.h: the pool, shared with the
 * OpenCL backend).  A value's buffer goes back to the pool right after
 * the value's last reader (graph.h: last_use); buffers carry reference
 * counts because MFS_OP_VIEW outputs share their input's buffer.  A run
 * with the same shapes as the last one replays the pool's assignment and
 * allocates nothing (stats.buffer_allocs does not move; tests check it).
 *
 * Layouts: a value may be stored NHWC (rank 4) when the compile planned it
 * (graph_plan.c, plan_layouts).  Before a node runs, inputs it cannot take in
 * NHWC are converted to plain into a temporary block; after it runs, an
 * output written NHWC that the plan wants plain is converted.  Graph
 * outputs are always handed out plain: a large one in its own block,
 * taken out of the pool (output_handoff), others copied.
 *
 * Threads: each node runs on as many of the run's OpenMP threads as its
 * work fills (node_threads.h); the run's count is restored at its end.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

#include "backend_runtime.h"
#include "log.h"
#include "node_threads.h"
#include "dense_util.h"
#include "malloc_policy.h"

typedef struct cpu_exec {
	const mfs_graph *m;
	mfs_tensor *vals;          /* runtime tensor of every value */
	mfs_block **vbuf;          /* block backing each value, or NULL */
	mfs_node_rt *nodes;
	/* conversion temporaries for one node's inputs */
	mfs_tensor *tmp;
	mfs_block **tmp_buf;
	int max_in;
	mfs_pool pool;
	bool containers;           /* some node makes sequences or optionals */
	mfs_exec_stats stats;
	/* MFS_PROFILE=1 at mfs_exec_new: time every node, log a summary by
	 * operator type when the context is freed; MFS_PROFILE=nodes also
	 * each node's time, in run order */
	double *node_ns;
	/* and the process's minor page faults and the oneDNN primitives made
	 * in each node, and the time, faults and primitives of each run
	 * outside its nodes (inputs, outputs, the pool): a run's steady state
	 * should make neither; faults there meant OpenMP threads ending and
	 * starting again every run (node_threads.h) */
	long *node_flt;
	uint64_t *node_prims;
	int *node_nt;              /* the node's threads in the last run */
	double run_ns, nodes_ns_total;
	long run_flt, nodes_flt_total;
	uint64_t run_prims;        /* oneDNN primitives made during runs */
	bool profile_nodes;
	int profile_skip;          /* runs kept apart: MFS_PROFILE_SKIP, else 1 */
	double first_run_ns, first_max_ns;
	int first_max_node;
	/* node_threads.h: the multiply-adds per thread (0: no cap), read
	 * at mfs_exec_new, and the threads of the run in progress */
	int64_t grain;
	bool partial;              /* MFS_TEAMS=partial */
	bool out_over_in3;         /* op.h MFS_OP_OUT0_OVER_IN3 honoured
				      (MFS_Z_IN_PLACE=0: not, for A/B) */
	bool handoff;              /* outputs handed over in their block
				      (MFS_OUTPUT_HANDOFF=0: copied, for A/B) */
	int run_threads;
} cpu_exec;

/* ---- pool ---- */

static mfs_block *pool_take(cpu_exec *e, size_t size, mfs_error *err)
{
	int status;
	mfs_block *b = mfs_pool_take(&e->pool, size, &status);
	if (b)
		return b;
	if (status == ENOSPC)
		mfs_fail(err, ENOSPC, "a buffer of %zu bytes would pass the memory budget (--max-memory)",
			 size);
	else
		mfs_fail(err, ENOMEM, "out of memory allocating %zu bytes", size);
	return NULL;
}

/* ---- profiling ---- */

static long minor_faults(void)
{
	struct rusage ru;
	return getrusage(RUSAGE_SELF, &ru) ? 0 : ru.ru_minflt;
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void profile_report(const cpu_exec *e)
{
	const mfs_graph *m = e->m;
	int n = m->n_nodes, n_types = 0;
	const char **type = calloc((size_t)n + 1, sizeof(*type));
	double *ns = calloc((size_t)n + 1, sizeof(*ns)), total = 0;
	int *count = calloc((size_t)n + 1, sizeof(*count));

	double runs = (double)e->stats.runs - e->profile_skip;

	if (!type || !ns || !count || runs < 1)
		goto out;
	for (int i = 0; i < n; i++) {
		const char *t = m->nodes[i].onnx->op_type;
		int k = 0;
		while (k < n_types && strcmp(type[k], t))
			k++;
		if (k == n_types)
			type[n_types++] = t;
		ns[k] += e->node_ns[i];
		count[k]++;
		total += e->node_ns[i];
	}
	/* largest first (selection sort: a few dozen types) */
	for (int a = 0; a < n_types; a++) {
		int best = a;
		for (int b = a + 1; b < n_types; b++)
			if (ns[b] > ns[best])
				best = b;
		if (best != a) {
			const char *tt = type[a]; double tn = ns[a]; int tc = count[a];
			type[a] = type[best]; ns[a] = ns[best]; count[a] = count[best];
			type[best] = tt; ns[best] = tn; count[best] = tc;
		}
	}
	mfs_log_info("profile '%s': first run %.3f ms (slowest: %s '%s' %.3f ms); %llu more runs, %.3f ms/run in %d nodes",
		     m->label, e->first_run_ns / 1e6,
		     m->nodes[e->first_max_node].onnx->op_type,
		     onnx_node_label(m->nodes[e->first_max_node].onnx),
		     e->first_max_ns / 1e6,
		     (unsigned long long)runs, total / 1e6 / runs, n);
	for (int k = 0; k < n_types; k++)
		mfs_log_info("profile '%s': %-24s %4d nodes %9.3f ms/run %5.1f%%",
			     m->label, type[k], count[k],
			     ns[k] / 1e6 / runs,
			     total > 0 ? 100.0 * ns[k] / total : 0.0);
	{
		mfs_log_info("profile '%s': outside nodes %.3f ms/run; minor page faults %.1f/run in nodes, %.1f/run outside; oneDNN primitives made %.1f/run",
			     m->label, (e->run_ns - e->nodes_ns_total) / 1e6 / runs,
			     (double)e->nodes_flt_total / runs,
			     (double)(e->run_flt - e->nodes_flt_total) / runs,
			     (double)e->run_prims / runs);
	}
	for (int i = 0; e->profile_nodes && i < n; i++)
		mfs_log_info("profile '%s': node %3d %-10s %8.3f ms/run %2d threads %6.1f faults/run %4.1f prims/run %s",
			     m->label, i, m->nodes[i].onnx->op_type,
			     e->node_ns[i] / 1e6 / runs, e->node_nt[i],
			     (double)e->node_flt[i] / runs, (double)e->node_prims[i] / runs,
			     onnx_node_label(m->nodes[i].onnx));
out:
	free(type);
	free(ns);
	free(count);
}

/* ---- the context ---- */

static void cpu_exec_free(void *ctx)
{
	cpu_exec *e = ctx;
	if (!e)
		return;
	if (e->node_ns) {
		profile_report(e);
		free(e->node_ns);
		free(e->node_flt);
		free(e->node_prims);
		free(e->node_nt);
	}
	for (int i = 0; e->nodes && i < e->m->n_nodes; i++)
		mfs_node_rt_release(&e->nodes[i], &e->m->nodes[i]);
	free(e->nodes);
	mfs_pool_release(&e->pool);
	free(e->vals);
	free(e->vbuf);
	free(e->tmp);
	free(e->tmp_buf);
	free(e);
}

static int cpu_exec_new(mfs_backend *b, const mfs_graph *m, void **out,
			mfs_error *err)
{
	cpu_exec *e = calloc(1, sizeof(*e));
	(void)b;
	if (!e)
		return mfs_fail(err, ENOMEM, "out of memory");
	e->m = m;
	e->pool = (mfs_pool){ .oom_status = ENOMEM,
			      .n_allocs = &e->stats.buffer_allocs };
	e->vals = calloc((size_t)m->n_values + 1, sizeof(*e->vals));
	e->vbuf = calloc((size_t)m->n_values + 1, sizeof(*e->vbuf));
	e->nodes = calloc((size_t)m->n_nodes + 1, sizeof(*e->nodes));
	if (!e->vals || !e->vbuf || !e->nodes)
		goto oom;
	e->max_in = 1;
	for (int i = 0; i < m->n_nodes; i++) {
		const mfs_node *nd = &m->nodes[i];
		mfs_node_rt *rt = &e->nodes[i];
		if (nd->n_in > e->max_in)
			e->max_in = nd->n_in;
		if (nd->def->flags & (MFS_OP_CONTAINERS | MFS_OP_OUTPUTS_AT_RUN))
			e->containers = true;   /* a body may return one */
		if (mfs_node_rt_init(rt, nd))
			goto oom;
		for (int k = 0; k < nd->n_out; k++)
			rt->out[k] = nd->out[k] >= 0 ? &e->vals[nd->out[k]] : NULL;
	}
	if (getenv("MFS_PROFILE") && strcmp(getenv("MFS_PROFILE"), "0")) {
		e->node_ns = calloc((size_t)m->n_nodes + 1, sizeof(*e->node_ns));
		e->node_flt = calloc((size_t)m->n_nodes + 1, sizeof(*e->node_flt));
		e->node_prims = calloc((size_t)m->n_nodes + 1, sizeof(*e->node_prims));
		e->node_nt = calloc((size_t)m->n_nodes + 1, sizeof(*e->node_nt));
		if (!e->node_ns || !e->node_flt || !e->node_prims || !e->node_nt)
			goto oom;
		e->profile_nodes = !strcmp(getenv("MFS_PROFILE"), "nodes");
		/* MFS_PROFILE_SKIP=N: the first N runs apart (a generation's
		 * prompt runs, to see its steps alone) */
		const char *skip = getenv("MFS_PROFILE_SKIP");
		e->profile_skip = skip && atoi(skip) > 0 ? atoi(skip) : 1;
	}
	e->grain = mfs_thread_grain();
	e->partial = mfs_thread_partial();
	e->out_over_in3 = !(getenv("MFS_Z_IN_PLACE") && !strcmp(getenv("MFS_Z_IN_PLACE"), "0"));
	e->handoff = !(getenv("MFS_OUTPUT_HANDOFF") && !strcmp(getenv("MFS_OUTPUT_HANDOFF"), "0"));
	e->tmp = calloc((size_t)e->max_in, sizeof(*e->tmp));
	e->tmp_buf = calloc((size_t)e->max_in, sizeof(*e->tmp_buf));
	if (!e->tmp || !e->tmp_buf)
		goto oom;
	for (int v = 0; v < m->n_values; v++) {
		const mfs_value *val = &m->values[v];
		if (val->kind == MFS_VAL_CONST) {
			e->vals[v] = val->constant;
			e->vals[v].owns_data = false;
		} else if (val->shape_static) {
			e->vals[v].dtype = val->dtype;
			e->vals[v].shape = val->shape;
		}
	}
	*out = e;
	return 0;
oom:
	cpu_exec_free(e);
	return mfs_fail(err, ENOMEM, "out of memory");
}

static void cpu_exec_stats(void *ctx, mfs_exec_stats *out)
{
	*out = ((cpu_exec *)ctx)->stats;
}

/* ---- one run ---- */

static bool tensor_ok(const mfs_tensor *t)
{
	if (t->kind != MFS_KIND_TENSOR)
		return mfs_dtype_size(t->dtype) != 0;   /* run() makes its items */
	if (!mfs_dtype_size(t->dtype) || t->shape.rank < 0 ||
	    t->shape.rank > MFS_MAX_RANK)
		return false;
	for (int i = 0; i < t->shape.rank; i++)
		if (t->shape.dims[i] < 0)
			return false;
	return true;
}

static void release_value(cpu_exec *e, int v)
{
	if (e->vals[v].kind != MFS_KIND_TENSOR) {
		mfs_tensor_release(&e->vals[v]);   /* owned items, no block */
		return;
	}
	if (e->m->values[v].kind == MFS_VAL_NODE) {
		/* a node's string bytes are the run's; an input's or a
		 * constant's are their owners' */
		mfs_strarena_free(e->vals[v].strings);
		e->vals[v].strings = NULL;
	}
	mfs_block_put(e->vbuf[v]);
	e->vbuf[v] = NULL;
	e->vals[v].data = NULL;
	e->vals[v].nbytes = 0;
}

/* A rank-4 tensor whose stored bytes are the same as NCHW's (NHWC: one
 * channel or one pixel; BLOCK16: one pixel): converting it is
 * relabelling it. */
static bool layout_is_free(const mfs_tensor *t)
{
	if (t->layout == MFS_LAYOUT_BLOCK16)   /* unless channels are padded */
		return t->shape.dims[1] % 16 == 0 && t->shape.dims[2] * t->shape.dims[3] == 1;
	return t->shape.dims[1] == 1 || t->shape.dims[2] * t->shape.dims[3] == 1;
}

/* May node nd read input k stored BLOCK16?  A convolution, as X or as
 * its residual Z (graph_plan.c plans BLOCK16 only there). */
static bool block16_ok(const mfs_node *nd, int k)
{
	return nd->conv_layout && (k == 0 || k == 3);
}

/* Convert input k (NHWC) to plain into temporary slot k and point the
 * operator at it. */
static int convert_input(cpu_exec *e, mfs_op_ctx *ctx, int k)
{
	const mfs_tensor *t = ctx->in[k];
	mfs_tensor *d = &e->tmp[k];
	*d = *t;
	d->owns_data = false;
	d->layout = MFS_LAYOUT_PLAIN;
	mfs_tensor_bytes(d, &d->nbytes);   /* less than t's when padded */
	ctx->in[k] = d;
	if (k < 64)   /* a temporary copy: its block is reused */
		ctx->const_in &= ~((uint64_t)1 << k);
	if (layout_is_free(t))
		return 0;
	e->tmp_buf[k] = pool_take(e, t->nbytes, ctx->err);
	if (!e->tmp_buf[k])
		return -ctx->err->code;
	d->data = e->tmp_buf[k]->mem;
	mfs_layout_convert(d, t, MFS_LAYOUT_PLAIN);
	e->stats.layout_converts++;
	return 0;
}

/* Is input 0 stored NHWC, and may the operator read it so? */
static bool in0_nhwc(const mfs_node *nd, const mfs_op_ctx *ctx)
{
	return nd->n_in && ctx->in[0] && ctx->in[0]->layout == MFS_LAYOUT_NHWC &&
	       (nd->def->flags & MFS_OP_NHWC_OK);
}

/* Step 1: point the operator at its input values, converting to plain
 * those it cannot read NHWC (op.h: MFS_OP_NHWC_OK's rules). */
static int bind_inputs(cpu_exec *e, const mfs_node *nd, mfs_op_ctx *ctx)
{
	const bool nhwc_ok = nd->def->flags & MFS_OP_NHWC_OK;
	bool nhwc0;

	for (int k = 0; k < nd->n_in; k++) {
		ctx->in[k] = nd->in[k] >= 0 ? &e->vals[nd->in[k]] : NULL;
		if (k < 64 && nd->in[k] >= 0 &&
		    e->m->values[nd->in[k]].kind == MFS_VAL_CONST)
			ctx->const_in |= (uint64_t)1 << k;
		if (ctx->in[k] && ctx->in[k]->kind != MFS_KIND_TENSOR &&
		    !(nd->def->flags & MFS_OP_CONTAINERS))
			return mfs_node_fail(nd, ctx->err, EINVAL,
					     "input %d ('%s') is a %s; the operator takes tensors",
					     k, nd->onnx->inputs[k],
					mfs_kind_name(ctx->in[k]->kind));
	}
	nhwc0 = in0_nhwc(nd, ctx);
	for (int k = 0; k < nd->n_in; k++) {
		const mfs_tensor *t = ctx->in[k];
		int rc;
		if (!t || t->layout == MFS_LAYOUT_PLAIN)
			continue;
		if (t->layout == MFS_LAYOUT_BLOCK16 && block16_ok(nd, k))
			continue;
		if (t->layout == MFS_LAYOUT_NHWC && nhwc_ok &&
		    (k == 0 || (nd->def->flags & MFS_OP_NHWC_ANY_INPUT) ||
		     (nhwc0 && mfs_shape_equal(&t->shape, &ctx->in[0]->shape))))
			continue;
		if ((rc = convert_input(e, ctx, k)))
			return rc;
	}
	return 0;
}

/* Step 2 (shapes not static): the output shapes of these inputs. */
static int infer_outputs(cpu_exec *e, const mfs_node *nd, mfs_op_ctx *ctx)
{
	int rc;

	rc = mfs_node_infer(ctx);
	if (rc < 0 && (nd->def->flags & MFS_OP_NHWC_OK)) {
		/* The plan was made on shapes with variable dims set to
		 * 1; with these shapes the operator may refuse NHWC
		 * (a broadcast it cannot do in NHWC): plain always works. */
		bool any = false;
		for (int k = 0; k < nd->n_in; k++) {
			const mfs_tensor *t = ctx->in[k];
			if (!t || t->layout == MFS_LAYOUT_PLAIN)
				continue;
			if ((rc = convert_input(e, ctx, k)))
				return rc;
			any = true;
		}
		if (any) {
			mfs_error_clear(ctx->err);
			rc = nd->def->infer(ctx);
		}
	}
	if (rc > 0)
		return mfs_fail(ctx->err, EIO, "output shape unknown although every input is known");
	if (rc)
		return rc;
	for (int k = 0; k < nd->n_out; k++)
		if (ctx->out[k] && !tensor_ok(ctx->out[k]))
			return mfs_fail(ctx->err, EIO, "operator inferred an invalid type or shape for output %d", k);
	return 0;
}

/* Step 3: the layout each output is written in: NHWC where the operator
 * reads NHWC input 0, or where the plan chose it for a Conv. */
static void plan_output_layouts(cpu_exec *e, const mfs_node *nd,
				const mfs_op_ctx *ctx)
{
	const bool nhwc0 = in0_nhwc(nd, ctx);

	for (int k = 0; k < nd->n_out; k++) {
		mfs_tensor *t = ctx->out[k];
		mfs_layout l = MFS_LAYOUT_PLAIN;
		if (!t)
			continue;
		if (t->shape.rank == 4 && (nd->def->flags & MFS_OP_NHWC_OK)) {
			if (nd->conv_layout) {
				l = e->m->values[nd->out[k]].layout;
				/* BLOCK16 holds floats only (layout.c) */
				if (l == MFS_LAYOUT_BLOCK16 && t->dtype != MFS_DT_FLOAT)
					l = MFS_LAYOUT_NHWC;
			} else if (nhwc0) {
				l = MFS_LAYOUT_NHWC;
			}
		}
		t->layout = l;
	}
}

/* Step 4: a view shares its input's block instead of running; true when
 * it did. */
static bool share_view(cpu_exec *e, const mfs_node *nd, const mfs_op_ctx *ctx)
{
	const mfs_tensor *in0 = nd->n_in ? ctx->in[0] : NULL, *out0 = ctx->out[0];
	mfs_block *b;
	int o;

	if (!(nd->def->flags & MFS_OP_VIEW) || nd->n_out != 1 || !out0 || !in0 ||
	    in0->kind != MFS_KIND_TENSOR || out0->kind != MFS_KIND_TENSOR ||
	    in0->dtype == MFS_DT_STRING ||   /* its arena is in0's to free */
	    in0->layout != MFS_LAYOUT_PLAIN || out0->layout != MFS_LAYOUT_PLAIN ||
	    out0->dtype != in0->dtype || mfs_rt_bytes(out0) != in0->nbytes ||
	    (nd->def->may_view && !nd->def->may_view(ctx)))
		return false;
	o = nd->out[0];
	/* a relabelled input (no temporary block) is still the value's own
	 * block */
	b = in0 == &e->tmp[0] && e->tmp_buf[0] ? e->tmp_buf[0] : e->vbuf[nd->in[0]];
	e->vals[o].data = in0->data;
	e->vals[o].nbytes = in0->nbytes;
	e->vbuf[o] = b;
	if (b)
		b->refs++;
	e->stats.views++;
	return true;
}

/* Step 5a: input 3's block, for output 0 of an MFS_OP_OUT0_OVER_IN3
 * node (op.h), when the output may take it over; else NULL.  t is the
 * output (layout planned), bytes its storage. */
static mfs_block *in3_block_to_reuse(const cpu_exec *e, const mfs_node *nd,
				     const mfs_op_ctx *ctx, const mfs_tensor *t, size_t bytes)
{
	int z = nd->n_in > 3 ? nd->in[3] : -1;
	const mfs_tensor *zt;
	mfs_block *b;

	if (!e->out_over_in3 || !(nd->def->flags & MFS_OP_OUT0_OVER_IN3) || z < 0 ||
	    e->m->values[z].kind != MFS_VAL_NODE ||
	    e->m->values[z].last_use != (int)(nd - e->m->nodes))
		return NULL;
	for (int k = 0; k < 3; k++)
		if (nd->in[k] == z)
			return NULL;
	zt = ctx->in[3];
	b = e->vbuf[z];
	if (zt != &e->vals[z] || !b || b->refs != 1 || b->pinned || zt->data != b->mem ||
	    zt->kind != MFS_KIND_TENSOR || zt->dtype != MFS_DT_FLOAT || t->dtype != MFS_DT_FLOAT ||
	    zt->layout != t->layout || !mfs_shape_equal(&zt->shape, &t->shape) ||
	    zt->nbytes != bytes || b->cap < bytes)
		return NULL;
	return b;
}

/* Step 5: a pool block for every named output, within the size limit. */
static int alloc_outputs(cpu_exec *e, const mfs_node *nd, mfs_op_ctx *ctx)
{
	for (int k = 0; k < nd->n_out; k++) {
		mfs_tensor *t = ctx->out[k];
		size_t bytes;
		mfs_block *b;
		if (!t || t->kind != MFS_KIND_TENSOR)
			continue;   /* a container: run() builds it */
		if (!mfs_tensor_storage_bytes(t, &bytes) ||
		    bytes > mfs_engine_max_tensor_bytes()) {
			char sh[160];
			return mfs_fail(ctx->err, EFBIG, "output %d of shape %s is larger than the %zu-byte limit",
					k, mfs_shape_format(&t->shape, sh, sizeof(sh)),
					mfs_engine_max_tensor_bytes());
		}
		t->nbytes = bytes;
		t->owns_data = false;
		if (!bytes) {
			t->data = NULL;
			continue;
		}
		if (k == 0 && (b = in3_block_to_reuse(e, nd, ctx, t, bytes))) {
			b->refs++;   /* Z's reference goes at this node's frees */
			e->stats.outputs_over_inputs++;
		} else if (!(b = pool_take(e, bytes, ctx->err))) {
			return -ctx->err->code;
		}
		e->vbuf[nd->out[k]] = b;
		t->data = b->mem;
	}
	return 0;
}

/* Step 6: string outputs whose elements the operator copied from its
 * inputs get bytes of their own (op.h: MFS_OP_STRINGS). */
static int own_string_outputs(const mfs_node *nd, mfs_op_ctx *ctx)
{
	for (int k = 0; k < nd->n_out; k++) {
		mfs_tensor *t = ctx->out[k];
		int rc;
		if (t && t->dtype == MFS_DT_STRING && !t->strings && t->nbytes &&
		    (rc = mfs_tensor_own_strings(t, ctx->err)))
			return rc;
	}
	return 0;
}

/* Step 7: outputs written NHWC that the plan wants plain. */
static int outputs_to_plan(cpu_exec *e, const mfs_node *nd, mfs_op_ctx *ctx)
{
	for (int k = 0; k < nd->n_out; k++) {
		mfs_tensor *t = ctx->out[k];
		int o = nd->out[k];
		mfs_block *nb;
		mfs_tensor src;
		if (!t || t->layout == MFS_LAYOUT_PLAIN || e->m->values[o].layout == t->layout)
			continue;
		if (layout_is_free(t)) {
			t->layout = MFS_LAYOUT_PLAIN;
			continue;
		}
		nb = pool_take(e, t->nbytes, ctx->err);
		if (!nb)
			return -ctx->err->code;
		src = *t;
		t->data = nb->mem;
		mfs_layout_convert(t, &src, MFS_LAYOUT_PLAIN);
		mfs_tensor_bytes(t, &t->nbytes);   /* less than src's when padded */
		mfs_block_put(e->vbuf[o]);
		e->vbuf[o] = nb;
		e->stats.layout_converts++;
	}
	return 0;
}

/* An MFS_OP_OUTPUTS_AT_RUN node (If, Loop, Scan): run allocates its own
 * outputs; they move into pool blocks like every other value's. */
static int run_making_outputs(cpu_exec *e, const mfs_node *nd,
			      mfs_node_rt *rt, mfs_op_ctx *ctx)
{
	int rc;

	for (int k = 0; k < nd->n_out; k++)
		if (ctx->out[k])
			memset(ctx->out[k], 0, sizeof(*ctx->out[k]));
	rc = mfs_node_rt_prepare(rt, nd, ctx, &e->stats.prepares);
	if (!rc)
		rc = nd->def->run(ctx);
	for (int k = 0; !rc && k < nd->n_out; k++) {
		mfs_tensor *t = ctx->out[k], made;
		size_t bytes = 0;
		mfs_block *b;
		if (!t || (t->kind != MFS_KIND_TENSOR && t->owns_data))
			continue;   /* a container: its items are the op's own */
		if (!tensor_ok(t) || !mfs_tensor_bytes(t, &bytes) ||
		    (bytes && !t->data) || t->nbytes != bytes) {
			rc = mfs_fail(ctx->err, EIO, "operator made no valid output %d", k);
			break;
		}
		if (e->m->values[nd->out[k]].shape_static &&
		    (t->dtype != e->m->values[nd->out[k]].dtype ||
		     !mfs_shape_equal(&t->shape, &e->m->values[nd->out[k]].shape))) {
			/* later nodes were planned on the declared shape */
			rc = mfs_fail(ctx->err, EINVAL, "output %d differs from the type and shape the model declares for it", k);
			break;
		}
		made = *t;
		t->strings = NULL;   /* a string output's arena stays the value's */
		if (!bytes) {
			mfs_tensor_release(t);
			*t = made;
			t->data = NULL;
			t->owns_data = false;
			continue;
		}
		if (!(b = pool_take(e, bytes, ctx->err))) {
			rc = -ctx->err->code;
			break;
		}
		memcpy(b->mem, t->data, bytes);
		mfs_tensor_release(t);
		*t = made;
		t->data = b->mem;
		t->nbytes = bytes;
		t->owns_data = false;
		t->layout = MFS_LAYOUT_PLAIN;
		e->vbuf[nd->out[k]] = b;
	}
	if (rc)
		for (int k = 0; k < nd->n_out; k++)
			if (ctx->out[k] && ctx->out[k]->owns_data)
				mfs_tensor_release(ctx->out[k]);
	return rc;
}

/* Step 5b: the node's threads (node_threads.h), before prepare so that
 * the oneDNN primitives it builds are made for them.  A node that runs
 * bodies (If, Loop, Scan: their outputs come at run) hands all of the
 * run's threads to them: the bodies' own nodes choose theirs. */
static void set_node_threads(const cpu_exec *e, const mfs_op_ctx *ctx)
{
	int nt = e->run_threads;

	if (!(ctx->def->flags & (MFS_OP_BODIES | MFS_OP_OUTPUTS_AT_RUN))) {
		bool product;
		int64_t work = mfs_node_work(ctx, &product);
		nt = mfs_node_threads(work, product, e->grain, e->run_threads, e->partial);
	}
	if (nt != omp_get_max_threads())
		omp_set_num_threads(nt);
}

/* Run node i: the steps above around the operator's prepare and run.
 * Input temporaries go back to the pool when the node is done. */
static int run_node(cpu_exec *e, int i, mfs_error *err)
{
	const mfs_node *nd = &e->m->nodes[i];
	mfs_node_rt *rt = &e->nodes[i];
	mfs_op_ctx ctx = mfs_node_ctx(nd, rt, err);
	int rc;

	rc = bind_inputs(e, nd, &ctx);
	if (rc)
		goto out;
	if (nd->def->flags & MFS_OP_OUTPUTS_AT_RUN) {
		if ((rc = mfs_op_check_strings(&ctx)))
			goto fail;
		set_node_threads(e, &ctx);
		if ((rc = run_making_outputs(e, nd, rt, &ctx)))
			goto fail;
		goto out;
	}
	if ((!nd->shapes_static && (rc = infer_outputs(e, nd, &ctx))) ||
	    (rc = mfs_op_check_strings(&ctx)))
		goto fail;
	plan_output_layouts(e, nd, &ctx);
	if (share_view(e, nd, &ctx))
		goto out;
	if ((rc = alloc_outputs(e, nd, &ctx)))
		goto fail;
	set_node_threads(e, &ctx);
	if ((rc = mfs_node_rt_prepare(rt, nd, &ctx, &e->stats.prepares)) ||
	    (rc = nd->def->run(&ctx)) || (rc = own_string_outputs(nd, &ctx)))
		goto fail;
	rc = outputs_to_plan(e, nd, &ctx);
	goto out;
fail:
	rc = mfs_node_error(nd, rc, err);
out:
	for (int k = 0; k < nd->n_in; k++)
		if (e->tmp_buf[k]) {
			mfs_block_put(e->tmp_buf[k]);
			e->tmp_buf[k] = NULL;
		}
	return rc;
}

/* mfs_run_steps for the CPU. */

/* Run node i, timed when profiling; the first run (prepare, caches) is
 * kept apart. */
static int step_node(void *ctx, int i, mfs_error *err)
{
	cpu_exec *e = ctx;
	double t0, dt;
	long f0;
	uint64_t p0;
	int rc;

	if (!e->node_ns)
		return run_node(e, i, err);
	p0 = mfs_dnnl_prims_created();
	f0 = minor_faults();
	t0 = now_ns();
	rc = run_node(e, i, err);
	dt = now_ns() - t0;
	e->node_nt[i] = omp_get_max_threads();
	if (e->stats.runs > (uint64_t)e->profile_skip) {
		e->node_ns[i] += dt;
		e->nodes_ns_total += dt;
		f0 = minor_faults() - f0;
		e->node_flt[i] += f0;
		e->node_prims[i] += mfs_dnnl_prims_created() - p0;
		e->nodes_flt_total += f0;
	} else {
		e->first_run_ns += dt;
		if (dt > e->first_max_ns) {
			e->first_max_ns = dt;
			e->first_max_node = i;
		}
	}
	return rc;
}

static void step_release(void *ctx, int v)
{
	release_value(ctx, v);
}

/* Outputs of at least this many bytes are handed to the caller in their
 * block, not copied; smaller ones copy in less time than a new block
 * takes (and a warm run of a small model then allocates nothing). */
#define HANDOFF_MIN ((size_t)64 << 10)

/* Hand the block holding output value v to the caller as dst's data when
 * only v uses it (no view shares it, the data at its start, stored
 * plain), it is not twice the tensor, and below the size that malloc
 * maps fresh (malloc_policy.h): a fresh block of that size faults its
 * pages in at every run, when the daemon's kept large buffers
 * (mfs_tensor_set_big_storage) serve the copy without.  The pool makes a
 * new block for the next run: the caller's frees refill malloc's. */
static bool output_handoff(cpu_exec *e, int v, mfs_tensor *dst)
{
	mfs_tensor *src = &e->vals[v];
	mfs_block *b = e->vbuf[v];
	size_t cap;

	if (!e->handoff || !b || b->pinned || b->refs != 1 || src->data != b->mem ||
	    src->nbytes < HANDOFF_MIN || src->nbytes >= MFS_MALLOC_MMAP_MIN ||
	    b->cap / 2 > src->nbytes ||
	    (src->layout != MFS_LAYOUT_PLAIN && src->shape.rank == 4))
		return false;
	*dst = *src;
	dst->data = mfs_pool_detach(&e->pool, b, &cap);
	dst->layout = MFS_LAYOUT_PLAIN;
	dst->owns_data = true;
	e->vbuf[v] = NULL;
	src->data = NULL;
	src->nbytes = 0;
	e->stats.outputs_handed++;
	return true;
}

static int step_output(void *ctx, int i, mfs_tensor *dst, mfs_error *err)
{
	cpu_exec *e = ctx;
	const mfs_tensor *src = &e->vals[e->m->output_ids[i]];
	int rc;

	if (src->kind == MFS_KIND_TENSOR && src->dtype != MFS_DT_STRING &&
	    output_handoff(e, e->m->output_ids[i], dst))
		return 0;
	if (src->kind != MFS_KIND_TENSOR || src->dtype == MFS_DT_STRING)
		return mfs_tensor_copy(dst, src, err);   /* owns items or bytes */
	/* every byte is written below */
	rc = mfs_tensor_alloc_uninit(dst, src->dtype, &src->shape, err);
	if (rc)
		return rc;
	if (src->layout != MFS_LAYOUT_PLAIN && src->shape.rank == 4)
		mfs_layout_convert(dst, src, MFS_LAYOUT_PLAIN);
	else if (src->nbytes)
		memcpy(dst->data, src->data, src->nbytes);
	dst->layout = MFS_LAYOUT_PLAIN;
	return 0;
}

static const mfs_run_steps cpu_steps = {
	.node = step_node, .release = step_release, .output = step_output,
};

static int cpu_exec_run(void *ctx, const mfs_tensor *inputs, mfs_tensor *outputs,
			mfs_error *err)
{
	cpu_exec *e = ctx;
	const mfs_graph *m = e->m;
	double t0 = e->node_ns ? now_ns() : 0;
	long f0 = e->node_ns ? minor_faults() : 0;
	uint64_t p0 = mfs_dnnl_prims_created();
	int rc;

	mfs_pool_new_run(&e->pool);
	e->stats.runs++;
	for (int i = 0; i < m->n_inputs; i++) {
		mfs_tensor *t = &e->vals[m->input_ids[i]];
		*t = inputs[i];
		t->owns_data = false;
	}
	e->run_threads = omp_get_max_threads();
	rc = mfs_run_graph(m, &cpu_steps, e, outputs, err);
	if (omp_get_max_threads() != e->run_threads)
		omp_set_num_threads(e->run_threads);   /* the nodes changed it */
	/* Containers have no block: free those the run left (graph outputs,
	 * or what a failure cut short). */
	for (int v = 0; e->containers && v < m->n_values; v++)
		if (e->vals[v].kind != MFS_KIND_TENSOR &&
		    m->values[v].kind == MFS_VAL_NODE)
			release_value(e, v);
	if (rc) {
		/* Give back whatever the failed run still holds. */
		for (int v = 0; v < m->n_values; v++)
			if (e->vbuf[v])
				release_value(e, v);
	} else {
		for (int i = 0; i < m->n_outputs; i++)
			if (e->vbuf[m->output_ids[i]])
				release_value(e, m->output_ids[i]);
	}
	for (int i = 0; i < m->n_inputs; i++) {
		mfs_tensor *t = &e->vals[m->input_ids[i]];
		t->data = NULL;
		t->nbytes = 0;
		t->strings = NULL;   /* the caller's */
	}
	if (e->node_ns && e->stats.runs > (uint64_t)e->profile_skip) {
		e->run_ns += now_ns() - t0;
		e->run_flt += minor_faults() - f0;
		e->run_prims += mfs_dnnl_prims_created() - p0;
	}
	return rc;
}

/* ---- the backend object ---- */

static const char *cpu_name(mfs_backend *b)
{
	(void)b;
	return "cpu";
}

static bool cpu_supports_op(mfs_backend *b, const mfs_op_def *def,
			    const onnx_node *node)
{
	(void)b;
	(void)node;
	return def && def->infer && def->run;
}

static const mfs_backend_iface cpu_iface = {
	.name = cpu_name,
	.supports_op = cpu_supports_op,
	.exec_new = cpu_exec_new,
	.exec_run = cpu_exec_run,
	.exec_free = cpu_exec_free,
	.free = NULL,
	.exec_stats = cpu_exec_stats,
};

static mfs_backend cpu_backend = { .iface = &cpu_iface, .context = NULL };

mfs_backend *mfs_backend_cpu(void)
{
	return &cpu_backend;
}

/* cpu_backend.c - runs a compiled graph on host memory by calling each
 * operator's callbacks in the graph's order.
 *
 * Memory: every buffer a run needs comes from a per-context pool of
 * 64-byte aligned blocks.  A value's buffer goes back to the pool right
 * after the value's last reader (graph.h: last_use); buffers carry
 * reference counts because MFS_OP_VIEW outputs share their input's buffer.
 * The pool remembers which block served the k-th request of the previous
 * run and offers it first, so a run with the same shapes as the last one
 * replays the same assignment and allocates nothing (stats.buffer_allocs
 * does not move; tests check it).  With other shapes, best fit among free
 * blocks, then regrowing the largest free block, then a new block: the pool
 * never holds more blocks than the most values ever alive at once.
 *
 * Layouts: a value may be stored NHWC (rank 4) when the compile planned it
 * (graph.c, plan_layouts).  Before a node runs, inputs it cannot take in
 * NHWC are converted to plain into a temporary block; after it runs, an
 * output written NHWC that the plan wants plain is converted.  Graph
 * outputs are always handed out plain.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph.h"
#include "log.h"

typedef struct pool_buf {
	void *data;
	size_t cap;
	int refs;              /* 0 = free */
} pool_buf;

/* What a node's prepare() last saw, to call it again when it changes. */
typedef struct in_sig {
	mfs_dtype dtype;
	mfs_layout layout;
	mfs_shape shape;
} in_sig;

typedef struct node_rt {
	mfs_tensor **in, **out;    /* the ctx arrays */
	void *state;
	bool prepared;
	in_sig *sig;               /* n_in entries */
} node_rt;

typedef struct cpu_exec {
	const mfs_graph *m;
	mfs_tensor *vals;          /* runtime tensor of every value */
	pool_buf **vbuf;           /* block backing each value, or NULL */
	node_rt *nodes;
	/* conversion temporaries for one node's inputs */
	mfs_tensor *tmp;
	pool_buf **tmp_buf;
	int max_in;
	/* the pool */
	pool_buf **pool;
	int n_pool, cap_pool;
	pool_buf **hints;          /* block given to request k last run */
	int n_hints, cap_hints, seq;
	mfs_exec_stats stats;
	/* MFS_PROFILE=1 at mfs_exec_new: time every node, log a summary by
	 * operator type when the context is freed */
	double *node_ns;
	double first_run_ns, first_max_ns;
	int first_max_node;
} cpu_exec;

/* ---- pool ---- */

static void *aligned_block(size_t size)
{
	size_t sz = (size + 63) & ~(size_t)63;
	return aligned_alloc(64, sz ? sz : 64);
}

static pool_buf *pool_take(cpu_exec *e, size_t size, mfs_error *err)
{
	int k = e->seq++;
	pool_buf *b = NULL, *largest = NULL;

	if (k < e->n_hints && e->hints[k] && !e->hints[k]->refs &&
	    e->hints[k]->cap >= size) {
		b = e->hints[k];
		goto got;
	}
	for (int i = 0; i < e->n_pool; i++) {
		pool_buf *p = e->pool[i];
		if (p->refs)
			continue;
		if (p->cap >= size && (!b || p->cap < b->cap))
			b = p;
		if (!largest || p->cap > largest->cap)
			largest = p;
	}
	if (!b && largest) {
		/* Regrow rather than add: contents need not survive. */
		void *d = aligned_block(size);
		if (!d)
			goto oom;
		free(largest->data);
		largest->data = d;
		largest->cap = size;
		e->stats.buffer_allocs++;
		b = largest;
	}
	if (!b) {
		if (e->n_pool == e->cap_pool) {
			int cap = e->cap_pool ? 2 * e->cap_pool : 16;
			pool_buf **np = realloc(e->pool, (size_t)cap * sizeof(*np));
			if (!np)
				goto oom;
			e->pool = np;
			e->cap_pool = cap;
		}
		b = calloc(1, sizeof(*b));
		if (!b)
			goto oom;
		b->data = aligned_block(size);
		if (!b->data) {
			free(b);
			goto oom;
		}
		b->cap = size;
		e->pool[e->n_pool++] = b;
		e->stats.buffer_allocs++;
	}
got:
	if (k >= e->cap_hints) {
		int cap = e->cap_hints ? 2 * e->cap_hints : 64;
		pool_buf **nh = realloc(e->hints, (size_t)cap * sizeof(*nh));
		if (nh) {
			memset(nh + e->cap_hints, 0,
			       (size_t)(cap - e->cap_hints) * sizeof(*nh));
			e->hints = nh;
			e->cap_hints = cap;
		}
	}
	if (k < e->cap_hints) {
		e->hints[k] = b;
		if (k >= e->n_hints)
			e->n_hints = k + 1;
	}
	b->refs = 1;
	return b;
oom:
	mfs_fail(err, ENOMEM, "out of memory allocating %zu bytes", size);
	return NULL;
}

static inline void buf_put(pool_buf *b)
{
	if (b)
		b->refs--;
}

/* ---- profiling ---- */

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

	if (!type || !ns || !count || e->stats.runs < 2)
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
		     m->nodes[e->first_max_node].onnx->name ?
		     m->nodes[e->first_max_node].onnx->name : "",
		     e->first_max_ns / 1e6,
		     (unsigned long long)e->stats.runs - 1,
		     total / 1e6 / (double)(e->stats.runs - 1), n);
	for (int k = 0; k < n_types; k++)
		mfs_log_info("profile '%s': %-24s %4d nodes %9.3f ms/run %5.1f%%",
			     m->label, type[k], count[k],
			     ns[k] / 1e6 / (double)(e->stats.runs - 1),
			     total > 0 ? 100.0 * ns[k] / total : 0.0);
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
	}
	for (int i = 0; e->nodes && i < e->m->n_nodes; i++) {
		const mfs_node *nd = &e->m->nodes[i];
		node_rt *rt = &e->nodes[i];
		if (rt->state && nd->def->release)
			nd->def->release(rt->state);
		free(rt->in);
		free(rt->out);
		free(rt->sig);
	}
	free(e->nodes);
	for (int i = 0; i < e->n_pool; i++) {
		free(e->pool[i]->data);
		free(e->pool[i]);
	}
	free(e->pool);
	free(e->hints);
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
	e->vals = calloc((size_t)m->n_values + 1, sizeof(*e->vals));
	e->vbuf = calloc((size_t)m->n_values + 1, sizeof(*e->vbuf));
	e->nodes = calloc((size_t)m->n_nodes + 1, sizeof(*e->nodes));
	if (!e->vals || !e->vbuf || !e->nodes)
		goto oom;
	e->max_in = 1;
	for (int i = 0; i < m->n_nodes; i++) {
		const mfs_node *nd = &m->nodes[i];
		node_rt *rt = &e->nodes[i];
		if (nd->n_in > e->max_in)
			e->max_in = nd->n_in;
		rt->in = calloc((size_t)nd->n_in + MFS_ARG_PAD, sizeof(*rt->in));
		rt->out = calloc((size_t)nd->n_out + MFS_ARG_PAD, sizeof(*rt->out));
		rt->sig = calloc((size_t)nd->n_in + 1, sizeof(*rt->sig));
		if (!rt->in || !rt->out || !rt->sig)
			goto oom;
		for (int k = 0; k < nd->n_out; k++)
			rt->out[k] = nd->out[k] >= 0 ? &e->vals[nd->out[k]] : NULL;
	}
	if (getenv("MFS_PROFILE") && strcmp(getenv("MFS_PROFILE"), "0")) {
		e->node_ns = calloc((size_t)m->n_nodes + 1, sizeof(*e->node_ns));
		if (!e->node_ns)
			goto oom;
	}
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

void mfs_cpu_exec_stats(void *ctx, mfs_exec_stats *out)
{
	*out = ((cpu_exec *)ctx)->stats;
}

/* ---- one run ---- */

static const char *node_label(const onnx_node *n)
{
	if (n->name && *n->name)
		return n->name;
	return n->n_outputs && n->outputs[0] ? n->outputs[0] : "?";
}

/* Make sure an operator's message names its node. */
static int node_error(const mfs_node *nd, int rc, mfs_error *err)
{
	char head[256];
	if (rc > 0 || rc == 0)
		rc = -EIO;
	if (!err->code) {
		return mfs_fail(err, -rc, "%s '%s': failed (%s)", nd->onnx->op_type,
				node_label(nd->onnx), strerror(-rc));
	}
	snprintf(head, sizeof(head), "%s '%s'", nd->onnx->op_type,
		 node_label(nd->onnx));
	if (strncmp(err->msg, head, strlen(head)) != 0)
		mfs_error_prefix(err, "%s: ", head);
	return rc;
}

static bool tensor_ok(const mfs_tensor *t)
{
	if (!mfs_dtype_size(t->dtype) || t->shape.rank < 0 ||
	    t->shape.rank > MFS_MAX_RANK)
		return false;
	for (int i = 0; i < t->shape.rank; i++)
		if (t->shape.dims[i] < 0)
			return false;
	return true;
}

static size_t tensor_bytes(const mfs_tensor *t)
{
	size_t n = 0;
	mfs_tensor_bytes(t, &n);
	return n;
}


static void release_value(cpu_exec *e, int v)
{
	buf_put(e->vbuf[v]);
	e->vbuf[v] = NULL;
	e->vals[v].data = NULL;
	e->vals[v].nbytes = 0;
}

/* Convert input tensor t to plain into temporary slot k. */
static int convert_input(cpu_exec *e, int k, const mfs_tensor *t, mfs_error *err)
{
	mfs_tensor *d = &e->tmp[k];
	*d = *t;
	d->owns_data = false;
	d->layout = MFS_LAYOUT_PLAIN;
	if (t->shape.dims[1] == 1 || t->shape.dims[2] * t->shape.dims[3] == 1)
		return 0;      /* same bytes: relabel */
	e->tmp_buf[k] = pool_take(e, t->nbytes, err);
	if (!e->tmp_buf[k])
		return -ENOMEM;
	d->data = e->tmp_buf[k]->data;
	mfs_layout_convert(d, t, MFS_LAYOUT_PLAIN);
	e->stats.layout_converts++;
	return 0;
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
		if (s->dtype != t->dtype || s->layout != t->layout ||
		    !mfs_shape_equal(&s->shape, &t->shape))
			return true;
	}
	return false;
}

static void sig_save(node_rt *rt, int n_in)
{
	for (int k = 0; k < n_in; k++) {
		const mfs_tensor *t = rt->in[k];
		in_sig *s = &rt->sig[k];
		if (!t) {
			s->dtype = MFS_DT_UNDEFINED;
			continue;
		}
		s->dtype = t->dtype;
		s->layout = t->layout;
		s->shape = t->shape;
	}
}

static int run_node(cpu_exec *e, int i, mfs_error *err)
{
	const mfs_graph *m = e->m;
	const mfs_node *nd = &m->nodes[i];
	node_rt *rt = &e->nodes[i];
	const unsigned flags = nd->def->flags;
	const bool nhwc_ok = flags & MFS_OP_NHWC_OK;
	mfs_op_ctx ctx = {
		.def = nd->def, .node = nd->onnx, .opset = nd->opset,
		.n_in = nd->n_in, .in = rt->in, .n_out = nd->n_out, .out = rt->out,
		.state = &rt->state, .err = err,
	};
	const mfs_tensor *in0;
	bool in0_nhwc;
	int rc = 0;

	/* Inputs, converted where the operator cannot read NHWC. */
	for (int k = 0; k < nd->n_in; k++) {
		rt->in[k] = nd->in[k] >= 0 ? &e->vals[nd->in[k]] : NULL;
		if (k < 64 && nd->in[k] >= 0 && m->values[nd->in[k]].kind == MFS_VAL_CONST)
			ctx.const_in |= (uint64_t)1 << k;
	}
	in0 = nd->n_in ? rt->in[0] : NULL;
	in0_nhwc = in0 && in0->layout == MFS_LAYOUT_NHWC && nhwc_ok;
	for (int k = 0; k < nd->n_in; k++) {
		const mfs_tensor *t = rt->in[k];
		if (!t || t->layout != MFS_LAYOUT_NHWC)
			continue;
		if (nhwc_ok && (k == 0 ||
				(in0_nhwc && mfs_shape_equal(&t->shape, &in0->shape))))
			continue;
		rc = convert_input(e, k, t, err);
		if (rc)
			goto out;
		rt->in[k] = &e->tmp[k];
		if (k < 64)   /* a temporary copy: its block is reused */
			ctx.const_in &= ~((uint64_t)1 << k);
	}

	/* Output shapes. */
	if (!nd->shapes_static) {
		for (int k = 0; k < nd->n_out; k++)
			if (rt->out[k]) {
				rt->out[k]->data = NULL;
				rt->out[k]->nbytes = 0;
				rt->out[k]->layout = MFS_LAYOUT_PLAIN;
			}
		rc = nd->def->infer(&ctx);
		if (rc < 0 && nhwc_ok) {
			/* The plan was made on shapes with variable dims set to
			 * 1; with these shapes the operator may refuse NHWC
			 * (a broadcast it cannot do in NHWC): plain always works. */
			bool any = false;
			for (int k = 0; k < nd->n_in; k++) {
				const mfs_tensor *t = rt->in[k];
				if (!t || t->layout != MFS_LAYOUT_NHWC)
					continue;
				rc = convert_input(e, k, t, err);
				if (rc)
					goto out;
				rt->in[k] = &e->tmp[k];
				any = true;
			}
			if (any) {
				mfs_error_clear(err);
				rc = nd->def->infer(&ctx);
			}
		}
		if (rc > 0)
			rc = mfs_fail(err, EIO, "output shape unknown although every input is known");
		if (rc)
			goto fail;
		for (int k = 0; k < nd->n_out; k++)
			if (rt->out[k] && !tensor_ok(rt->out[k])) {
				rc = mfs_fail(err, EIO, "operator inferred an invalid type or shape for output %d", k);
				goto fail;
			}
	}
	in0 = nd->n_in ? rt->in[0] : NULL;
	in0_nhwc = in0 && in0->layout == MFS_LAYOUT_NHWC && nhwc_ok;
	for (int k = 0; k < nd->n_out; k++) {
		mfs_tensor *t = rt->out[k];
		mfs_layout l = MFS_LAYOUT_PLAIN;
		if (!t)
			continue;
		if (t->shape.rank == 4 && nhwc_ok) {
			if (nd->conv_layout)
				l = m->values[nd->out[k]].layout;
			else if (in0_nhwc)
				l = MFS_LAYOUT_NHWC;
		}
		t->layout = l;
	}

	/* A view shares its input's block instead of running. */
	if ((flags & MFS_OP_VIEW) && nd->n_out == 1 && rt->out[0] && in0 &&
	    rt->in[0]->layout == MFS_LAYOUT_PLAIN &&
	    rt->out[0]->layout == MFS_LAYOUT_PLAIN &&
	    rt->out[0]->dtype == rt->in[0]->dtype &&
	    tensor_bytes(rt->out[0]) == rt->in[0]->nbytes) {
		int o = nd->out[0];
		/* a relabelled input (no temporary block) is still the
		 * value's own block */
		pool_buf *b = rt->in[0] == &e->tmp[0] && e->tmp_buf[0] ?
			      e->tmp_buf[0] : e->vbuf[nd->in[0]];
		e->vals[o].data = rt->in[0]->data;
		e->vals[o].nbytes = rt->in[0]->nbytes;
		e->vbuf[o] = b;
		if (b)
			b->refs++;
		e->stats.views++;
		goto out;
	}

	for (int k = 0; k < nd->n_out; k++) {
		mfs_tensor *t = rt->out[k];
		size_t bytes;
		pool_buf *b;
		if (!t)
			continue;
		if (!mfs_tensor_bytes(t, &bytes) ||
		    bytes > mfs_engine_max_tensor_bytes()) {
			char sh[160];
			rc = mfs_fail(err, EFBIG, "output %d of shape %s is larger than the %zu-byte limit",
				      k, mfs_shape_format(&t->shape, sh, sizeof(sh)),
				      mfs_engine_max_tensor_bytes());
			goto fail;
		}
		t->nbytes = bytes;
		t->owns_data = false;
		if (!bytes) {
			t->data = NULL;
			continue;
		}
		b = pool_take(e, bytes, err);
		if (!b) {
			rc = -ENOMEM;
			goto fail;
		}
		e->vbuf[nd->out[k]] = b;
		t->data = b->data;
	}
	if (nd->def->prepare &&
	    (!rt->prepared || (!nd->shapes_static && sig_changed(rt, nd->n_in)))) {
		rc = nd->def->prepare(&ctx);
		e->stats.prepares++;
		if (rc)
			goto fail;
		rt->prepared = true;
		sig_save(rt, nd->n_in);
	}
	rc = nd->def->run(&ctx);
	if (rc)
		goto fail;

	/* Outputs written NHWC that the plan wants plain. */
	for (int k = 0; k < nd->n_out; k++) {
		mfs_tensor *t = rt->out[k];
		int o = nd->out[k];
		pool_buf *nb;
		mfs_tensor src;
		if (!t || t->layout != MFS_LAYOUT_NHWC ||
		    m->values[o].layout == MFS_LAYOUT_NHWC)
			continue;
		if (t->shape.dims[1] == 1 || t->shape.dims[2] * t->shape.dims[3] == 1) {
			t->layout = MFS_LAYOUT_PLAIN;
			continue;
		}
		nb = pool_take(e, t->nbytes, err);
		if (!nb) {
			rc = -ENOMEM;
			goto out;
		}
		src = *t;
		t->data = nb->data;
		mfs_layout_convert(t, &src, MFS_LAYOUT_PLAIN);
		buf_put(e->vbuf[o]);
		e->vbuf[o] = nb;
		e->stats.layout_converts++;
	}
	goto out;
fail:
	rc = node_error(nd, rc, err);
out:
	for (int k = 0; k < nd->n_in; k++)
		if (e->tmp_buf[k]) {
			buf_put(e->tmp_buf[k]);
			e->tmp_buf[k] = NULL;
		}
	return rc;
}

static int copy_output(const mfs_tensor *src, mfs_tensor *dst, mfs_error *err)
{
	int rc = mfs_tensor_alloc(dst, src->dtype, &src->shape, err);
	if (rc)
		return rc;
	if (src->layout == MFS_LAYOUT_NHWC && src->shape.rank == 4)
		mfs_layout_convert(dst, src, MFS_LAYOUT_PLAIN);
	else if (src->nbytes)
		memcpy(dst->data, src->data, src->nbytes);
	dst->layout = MFS_LAYOUT_PLAIN;
	return 0;
}

static int cpu_exec_run(void *ctx, const mfs_tensor *inputs, mfs_tensor *outputs,
			mfs_error *err)
{
	cpu_exec *e = ctx;
	const mfs_graph *m = e->m;
	int rc = 0, done = 0;

	e->seq = 0;
	e->stats.runs++;
	for (int i = 0; i < m->n_inputs; i++) {
		mfs_tensor *t = &e->vals[m->input_ids[i]];
		*t = inputs[i];
		t->owns_data = false;
	}
	for (int i = 0; i < m->n_nodes; i++) {
		const mfs_node *nd = &m->nodes[i];
		if (e->node_ns) {
			/* the first run (prepare, caches) is kept apart */
			double t0 = now_ns();
			rc = run_node(e, i, err);
			double dt = now_ns() - t0;
			if (e->stats.runs > 1) {
				e->node_ns[i] += dt;
			} else {
				e->first_run_ns += dt;
				if (dt > e->first_max_ns) {
					e->first_max_ns = dt;
					e->first_max_node = i;
				}
			}
		} else {
			rc = run_node(e, i, err);
		}
		if (rc)
			goto out;
		for (int k = 0; k < nd->n_frees; k++)
			release_value(e, nd->frees[k]);
	}
	for (done = 0; done < m->n_outputs; done++) {
		rc = copy_output(&e->vals[m->output_ids[done]], &outputs[done], err);
		if (rc)
			break;
	}
	if (rc)
		for (int i = 0; i < done; i++)
			mfs_tensor_release(&outputs[i]);
out:
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
};

static mfs_backend cpu_backend = { .iface = &cpu_iface, .context = NULL };

mfs_backend *mfs_backend_cpu(void)
{
	return &cpu_backend;
}

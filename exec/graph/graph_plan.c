/* graph_plan.c - passes 6 and 7 of the compile (graph_internal.h): the
 * kept nodes in order, each value's producer and last reader, the
 * planning shapes, the storage layouts (NHWC, then BLOCK16 between
 * convolutions: plan_layouts, plan_block16), constants nothing reads
 * freed, and per node the values to free after it.  The CPU backend
 * follows the layout plan at run time (cpu_backend.c).
 */
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

/* The layout pass is on unless the environment says MFS_LAYOUT=plain
 * (read at each compile, so tests and benchmarks can compare). */
static bool layout_pass_enabled(void)
{
	const char *e = getenv("MFS_LAYOUT");
	return !(e && strcmp(e, "plain") == 0);
}

static bool is_rank4_planned(const mfs_value *v)
{
	return v->kind == MFS_VAL_NODE && v->plan_known && v->plan_shape.rank == 4;
}

/* Call nd's infer on the planning shapes (graph.h: plan_shape), with the
 * planned layouts when layouts is set.  Returns infer's result; the
 * outputs are left in c->tout.  Every input must be plan_known.  With
 * blocked set, ask the operator's computes_blocked instead (false where
 * it has none) and return 0. */
static int plan_ask(compiler *c, const mfs_node *nd, bool layouts, bool *blocked)
{
	const mfs_graph *m = c->m;
	mfs_error scratch;
	void *state = NULL;
	mfs_op_ctx ctx = {
		.def = nd->def, .node = nd->onnx, .opset = nd->opset,
		.n_in = nd->n_in, .in = c->pin, .n_out = nd->n_out, .out = c->pout,
		.state = &state, .err = &scratch,
		.bodies = (const mfs_graph *const *)nd->bodies,
		.n_bodies = nd->n_bodies,
	};

	for (int k = 0; k < nd->n_in; k++) {
		const mfs_value *v = nd->in[k] >= 0 ? &m->values[nd->in[k]] : NULL;
		mfs_tensor *t = &c->tin[k];
		c->pin[k] = v ? t : NULL;
		if (!v)
			continue;
		if (!v->plan_known)
			return -EINVAL;
		if (v->kind == MFS_VAL_CONST) {
			*t = v->constant;
		} else {
			memset(t, 0, sizeof(*t));
			t->dtype = v->plan_dtype;
			t->shape = v->plan_shape;
			t->nbytes = (size_t)mfs_shape_numel(&v->plan_shape) *
				    mfs_dtype_size(v->plan_dtype);
		}
		t->layout = layouts ? v->layout : MFS_LAYOUT_PLAIN;
	}
	for (int k = 0; k < nd->n_out; k++) {
		memset(&c->tout[k], 0, sizeof(c->tout[k]));
		if (layouts && nd->out[k] >= 0)
			c->tout[k].layout = m->values[nd->out[k]].layout;
		c->pout[k] = nd->out[k] >= 0 ? &c->tout[k] : NULL;
	}
	graph_clear_pad(c, nd);
	if (blocked) {
		*blocked = nd->def->computes_blocked && nd->def->computes_blocked(&ctx);
		return 0;
	}
	return nd->def->infer(&ctx);
}

static int plan_infer(compiler *c, const mfs_node *nd, bool layouts)
{
	return plan_ask(c, nd, layouts, NULL);
}

/* Planning shapes: static ones where known, else from the graph inputs
 * with variable dims set to 1, through infer. */
static void plan_shapes(compiler *c)
{
	mfs_graph *m = c->m;

	for (int v = 0; v < m->n_values; v++) {
		mfs_value *val = &m->values[v];
		/* a folded container: its readers are not planned */
		if (val->shape_static && val->dtype != MFS_DT_UNDEFINED &&
		    val->constant.kind == MFS_KIND_TENSOR) {
			val->plan_known = true;
			val->plan_dtype = val->dtype;
			val->plan_shape = val->shape;
		}
	}
	for (int i = 0; i < m->n_inputs; i++) {
		const mfs_io_desc *d = &m->inputs[i];
		mfs_value *val = &m->values[m->input_ids[i]];
		if (val->plan_known || d->rank < 0)
			continue;
		val->plan_known = true;
		val->plan_dtype = d->dtype;
		val->plan_shape.rank = d->rank;
		for (int k = 0; k < d->rank; k++)
			val->plan_shape.dims[k] = d->dims[k] >= 0 ? d->dims[k] : 1;
	}
	for (int i = 0; i < m->n_nodes; i++) {
		const mfs_node *nd = &m->nodes[i];
		bool need = false;
		for (int k = 0; k < nd->n_out; k++)
			if (nd->out[k] >= 0 && !m->values[nd->out[k]].plan_known)
				need = true;
		if (!need || plan_infer(c, nd, false) != 0)
			continue;
		for (int k = 0; k < nd->n_out; k++) {
			mfs_value *v = nd->out[k] >= 0 ? &m->values[nd->out[k]] : NULL;
			if (!v || v->plan_known || c->tout[k].kind != MFS_KIND_TENSOR ||
			    !graph_shape_valid(&c->tout[k].shape) ||
			    !mfs_dtype_size(c->tout[k].dtype))
				continue;
			v->plan_known = true;
			v->plan_dtype = c->tout[k].dtype;
			v->plan_shape = c->tout[k].shape;
		}
	}
}

/* Would nd's infer accept its inputs in the planned layouts?  Asked only
 * where some input is planned NHWC. */
static bool layout_trial(compiler *c, const mfs_node *nd)
{
	return plan_infer(c, nd, true) == 0;
}

static bool demote(mfs_value *v)
{
	if (!v || v->layout != MFS_LAYOUT_NHWC)
		return false;
	v->layout = MFS_LAYOUT_PLAIN;
	return true;
}

/* MFS_LAYOUT=nhwc keeps every value NHWC or plain (no BLOCK16), for an
 * A/B run. */
static bool block16_enabled(void)
{
	const char *e = getenv("MFS_LAYOUT");
	return !(e && strcmp(e, "nhwc") == 0);
}

/* After the NHWC plan: a value between convolutions is stored BLOCK16
 * (oneDNN's nChw16c, channels padded to 16s) instead when it is NHWC,
 * made by a Conv/FusedConv, float, and read only by Conv/FusedConv nodes
 * as X (slot 0) or as the residual Z (slot 3), and its producer reads a
 * BLOCK16 X or computes in nChw16c anyway (below).
 * Why: oneDNN's depthwise kernel runs 1.7x faster on nChw16c than on
 * NHWC, its 1x1 kernels as fast or faster, its 3x3 ones the same
 * (docs/PERFORMANCE.md, "Blocked activations"), and mixing formats in
 * one primitive falls to its reference kernel, so a run of convolutions
 * stays in one format and converts at its edges (exec/cpu/ops/conv.c). */
static void plan_block16(compiler *c)
{
	mfs_graph *m = c->m;
	bool *ok;

	if (!block16_enabled() || !(ok = calloc((size_t)m->n_values + 1, sizeof(bool))))
		return;
	for (int v = 0; v < m->n_values; v++) {
		const mfs_value *val = &m->values[v];
		ok[v] = val->layout == MFS_LAYOUT_NHWC && val->producer >= 0 &&
			m->nodes[val->producer].conv_layout && val->plan_dtype == MFS_DT_FLOAT &&
			val->plan_shape.dims[1] > 0;
	}
	for (int i = 0; i < m->n_nodes; i++) {
		const mfs_node *nd = &m->nodes[i];
		for (int k = 0; k < nd->n_in; k++)
			if (nd->in[k] >= 0 && !(nd->conv_layout && (k == 0 || k == 3)))
				ok[nd->in[k]] = false;
	}
	/* ... and only where its producer's X is BLOCK16 too, or plain
	 * with fewer than 16 channels (a first layer, which oneDNN reads
	 * plain into blocked directly): a convolution whose X must be
	 * reordered into nChw16c lost more than blocking saved it, and so
	 * did re-entering the layout at an expansion (docs/PERFORMANCE.md,
	 * "Blocked activations").  A producer that computes in nChw16c
	 * whatever its layouts (Conv on Winograd, op.h computes_blocked)
	 * starts a chain: its X is reordered either way, and its Y no
	 * longer is (docs/PERFORMANCE.md, "Winograd for the 3x3 layers"). */
	bool *starts = calloc((size_t)m->n_nodes + 1, sizeof(bool));
	for (int v = 0; starts && v < m->n_values; v++) {
		int pr = m->values[v].producer;
		if (ok[v] && !starts[pr] && plan_ask(c, &m->nodes[pr], true, &starts[pr]) < 0)
			starts[pr] = false;
	}
	for (bool changed = true; changed;) {
		changed = false;
		for (int v = 0; v < m->n_values; v++) {
			if (!ok[v])
				continue;
			const mfs_node *pr = &m->nodes[m->values[v].producer];
			int x = pr->n_in > 0 ? pr->in[0] : -1;
			const mfs_value *xv = x >= 0 ? &m->values[x] : NULL;
			if (starts && starts[m->values[v].producer])
				continue;
			if (xv && (ok[x] || (xv->layout == MFS_LAYOUT_PLAIN && xv->plan_known &&
					     xv->plan_shape.rank == 4 && xv->plan_shape.dims[1] < 16)))
				continue;
			ok[v] = false;
			changed = true;
		}
	}
	for (int v = 0; v < m->n_values; v++)
		if (ok[v])
			m->values[v].layout = MFS_LAYOUT_BLOCK16;
	free(starts);
	free(ok);
}

/* Pass 6: storage layouts.  A value is stored NHWC when it is made by a
 * node that can write NHWC (Conv with MFS_OP_NHWC_OK; other NHWC_OK nodes
 * whose input 0 is NHWC, since they write in input 0's layout) and every
 * reader accepts it without a conversion: an NHWC_OK reader takes NHWC in
 * slot 0, and in another slot only when its input 0 is NHWC with the same
 * shape or the reader says MFS_OP_NHWC_ANY_INPUT; and the reader's infer() accepts the planned layouts (operators
 * say there what they cannot do, e.g. an elementwise op with an NHWC input
 * and a plain broadcast operand).  Graph outputs stay plain.  Candidates
 * start optimistic and are demoted until nothing changes (each step only
 * demotes, so it ends).  The CPU backend follows the same rules at run
 * time, so values arrive in their planned layout and conversions happen
 * only where the plan put them (after a producer whose output must be
 * plain). */
static void plan_layouts(compiler *c)
{
	mfs_graph *m = c->m;
	bool changed = true;

	for (int i = 0; i < m->n_nodes; i++) {
		const mfs_node *nd = &m->nodes[i];
		if (!(nd->def->flags & MFS_OP_NHWC_OK))
			continue;
		for (int k = 0; k < nd->n_out; k++)
			if (nd->out[k] >= 0 && is_rank4_planned(&m->values[nd->out[k]]))
				m->values[nd->out[k]].layout = MFS_LAYOUT_NHWC;
	}
	while (changed) {
		changed = false;
		for (int i = 0; i < m->n_outputs; i++)
			changed |= demote(&m->values[m->output_ids[i]]);
		for (int i = 0; i < m->n_nodes; i++) {
			const mfs_node *nd = &m->nodes[i];
			bool ok = nd->def->flags & MFS_OP_NHWC_OK;
			const mfs_value *in0 = nd->n_in > 0 && nd->in[0] >= 0 ?
					       &m->values[nd->in[0]] : NULL;
			bool in0_nhwc = in0 && in0->layout == MFS_LAYOUT_NHWC;
			bool any = false;

			if (ok && !nd->conv_layout && !in0_nhwc)
				for (int k = 0; k < nd->n_out; k++)
					if (nd->out[k] >= 0)
						changed |= demote(&m->values[nd->out[k]]);
			for (int k = 0; k < nd->n_in; k++) {
				mfs_value *v = nd->in[k] >= 0 ? &m->values[nd->in[k]] : NULL;
				if (!v || v->layout != MFS_LAYOUT_NHWC)
					continue;
				if (ok && (k == 0 || (nd->def->flags & MFS_OP_NHWC_ANY_INPUT) ||
					   (in0_nhwc && mfs_shape_equal(&v->plan_shape,
									&in0->plan_shape))))
					any = true;
				else
					changed |= demote(v);
			}
			if (any && !layout_trial(c, nd))
				for (int k = 0; k < nd->n_in; k++)
					if (nd->in[k] >= 0)
						changed |= demote(&m->values[nd->in[k]]);
		}
	}
	plan_block16(c);
	for (int i = 0; i < m->n_values; i++) {
		m->n_nhwc += m->values[i].layout == MFS_LAYOUT_NHWC;
		m->n_block16 += m->values[i].layout == MFS_LAYOUT_BLOCK16;
	}
}

/* Constants no remaining node reads (initializers consumed only by folded
 * nodes, intermediate folded values) are freed: a model whose weights are
 * transposed or cast at load would otherwise hold them twice. */
static void drop_unread_constants(compiler *c)
{
	mfs_graph *m = c->m;
	onnx_graph *g = c->g;

	for (int v = 0; v < m->n_values; v++) {
		mfs_value *val = &m->values[v];
		if (val->kind != MFS_VAL_CONST || val->last_use >= 0)
			continue;
		mfs_tensor_release(&val->constant);
		val->constant.dtype = val->dtype;
		val->constant.shape = val->shape;
	}
	for (int i = 0; i < g->n_initializers; i++) {
		int id = graph_map_get(&c->names, g->initializers[i].name);
		if (id >= 0 && !m->values[id].constant.data)
			mfs_tensor_release(&g->initializers[i].tensor);
	}
}

/* Pass 7 (with moving the kept nodes into m->nodes). */
int graph_plan(compiler *c)
{
	mfs_graph *m = c->m;
	int n = 0;

	for (int i = 0; i < c->n_all; i++)
		if (!c->dropped[c->order[i]])
			n++;
	m->nodes = calloc((size_t)n + 1, sizeof(*m->nodes));
	if (!m->nodes)
		return mfs_fail(c->err, ENOMEM, "out of memory");
	for (int i = 0; i < c->n_all; i++) {
		int ni = c->order[i];
		if (c->dropped[ni])
			continue;
		m->nodes[m->n_nodes] = c->all[ni];
		/* ownership of in/out and bodies moved */
		c->all[ni].in = c->all[ni].out = NULL;
		c->all[ni].bodies = NULL;
		c->all[ni].n_bodies = 0;
		m->n_nodes++;
	}
	for (int v = 0; v < m->n_values; v++) {
		m->values[v].producer = -1;
		m->values[v].last_use = -1;
	}
	for (int i = 0; i < m->n_nodes; i++) {
		mfs_node *nd = &m->nodes[i];
		bool st = true;
		for (int k = 0; k < nd->n_in; k++) {
			if (nd->in[k] < 0)
				continue;
			m->values[nd->in[k]].last_use = i;
			if (!m->values[nd->in[k]].shape_static)
				st = false;
		}
		for (int k = 0; k < nd->n_out; k++) {
			if (nd->out[k] < 0)
				continue;
			m->values[nd->out[k]].producer = i;
			if (!m->values[nd->out[k]].shape_static)
				st = false;
		}
		nd->shapes_static = st;
	}
	for (int i = 0; i < m->n_outputs; i++)
		m->values[m->output_ids[i]].last_use = MFS_LAST_USE_END;
	/* A value nobody reads dies right after its producer. */
	for (int v = 0; v < m->n_values; v++)
		if (m->values[v].kind == MFS_VAL_NODE && m->values[v].producer >= 0 &&
		    m->values[v].last_use < 0)
			m->values[v].last_use = m->values[v].producer;

	if (layout_pass_enabled()) {
		plan_shapes(c);
		plan_layouts(c);
	}
	drop_unread_constants(c);

	for (int v = 0; v < m->n_values; v++) {
		const mfs_value *val = &m->values[v];
		if (val->kind == MFS_VAL_NODE && val->producer >= 0 &&
		    val->last_use >= 0 && val->last_use != MFS_LAST_USE_END)
			m->nodes[val->last_use].n_frees++;
	}
	for (int i = 0; i < m->n_nodes; i++) {
		m->nodes[i].frees = calloc((size_t)m->nodes[i].n_frees + 1, sizeof(int));
		if (!m->nodes[i].frees)
			return mfs_fail(c->err, ENOMEM, "out of memory");
		m->nodes[i].n_frees = 0;
	}
	for (int v = 0; v < m->n_values; v++) {
		const mfs_value *val = &m->values[v];
		if (val->kind == MFS_VAL_NODE && val->producer >= 0 &&
		    val->last_use >= 0 && val->last_use != MFS_LAST_USE_END) {
			mfs_node *nd = &m->nodes[val->last_use];
			nd->frees[nd->n_frees++] = v;
		}
	}
	return 0;
}

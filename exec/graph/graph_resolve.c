/* graph_resolve.c - passes 1 to 3 of the compile (graph_internal.h): the
 * values table (one entry per tensor name, found through a hash map;
 * initializers become constants, graph inputs that are not initializers
 * become inputs, a body's enclosing-scope reads inputs after them), each
 * node's operator definition for the model's opset of its domain and its
 * value ids, and the topological order.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

/* ---- name -> value id map (open addressing; names are borrowed) ---- */

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static int map_init(name_map *m, size_t n)
{
	size_t cap = 16;
	while (cap < 2 * n + 1)
		cap <<= 1;
	m->keys = calloc(cap, sizeof(*m->keys));
	m->ids = calloc(cap, sizeof(*m->ids));
	m->mask = cap - 1;
	return m->keys && m->ids ? 0 : -ENOMEM;
}

void graph_map_free(name_map *m)
{
	free(m->keys);
	free(m->ids);
}

/* Slot of name: either holding it or the empty slot where it would go. */
static size_t map_slot(const name_map *m, const char *name)
{
	size_t i = hash_str(name) & m->mask;
	while (m->keys[i] && strcmp(m->keys[i], name) != 0)
		i = (i + 1) & m->mask;
	return i;
}

int graph_map_get(const name_map *m, const char *name)
{
	size_t i = map_slot(m, name);
	return m->keys[i] ? m->ids[i] : -1;
}


static int add_value(compiler *c, const char *name)
{
	size_t slot;
	mfs_value *v;

	if (!name || !*name)
		return -1;
	slot = map_slot(&c->names, name);
	if (c->names.keys[slot])
		return c->names.ids[slot];
	/* the map was sized for every name the graph mentions */
	v = &c->m->values[c->m->n_values];
	memset(v, 0, sizeof(*v));
	v->name = name;
	v->kind = MFS_VAL_UNDEFINED;
	v->producer = -1;
	v->last_use = -1;
	v->input_index = -1;
	v->output_index = -1;
	c->names.keys[slot] = name;
	c->names.ids[slot] = c->m->n_values;
	return c->m->n_values++;
}

static int64_t model_opset(const onnx_model *o, const char *domain)
{
	bool dflt = !domain || !*domain || strcmp(domain, "ai.onnx") == 0;
	for (int i = 0; i < o->n_opsets; i++) {
		const char *d = o->opsets[i].domain;
		bool ddflt = !d || !*d || strcmp(d, "ai.onnx") == 0;
		if (dflt ? ddflt : (!ddflt && strcmp(d, domain) == 0))
			return o->opsets[i].version;
	}
	return 0;
}

static const mfs_op_def *find_op(const char *domain, const char *op_type,
				 int64_t opset);

/* Does on's operator run its graph attributes (MFS_OP_BODIES)? */
static bool takes_bodies(const compiler *c, const onnx_node *on)
{
	const mfs_op_def *d = find_op(on->domain ? on->domain : "", on->op_type,
				      model_opset(c->model, on->domain));
	return d && (d->flags & MFS_OP_BODIES);
}

/* A body's enclosing-scope values become inputs after its own. */
static int add_outer_inputs(compiler *c)
{
	mfs_graph *m = c->m;

	if (!c->n_outer)
		return 0;
	m->outer_slot = calloc((size_t)c->n_outer, sizeof(int));
	if (!m->outer_slot)
		return mfs_fail(c->err, ENOMEM, "out of memory");
	for (int j = 0; j < c->n_outer; j++) {
		const scope_ref *r = &c->outer[j];
		int id = add_value(c, r->name);
		mfs_value *v = &m->values[id];
		mfs_io_desc *d = &m->inputs[m->n_inputs];
		if (v->kind != MFS_VAL_UNDEFINED)
			continue;   /* the body defines it: unreachable (free names) */
		if (r->constant) {
			v->kind = MFS_VAL_CONST;
			v->constant = *r->constant;
			v->constant.owns_data = false;
			v->constant.layout = MFS_LAYOUT_PLAIN;
			v->dtype = r->constant->dtype;
			v->shape = r->constant->shape;
			v->shape_static = true;
			continue;
		}
		v->kind = MFS_VAL_INPUT;
		v->dtype = r->dtype;
		v->shape_static = r->shape_static;
		v->shape = r->shape;
		v->input_index = m->n_inputs;
		d->name = strdup(r->name);
		if (!d->name)
			return mfs_fail(c->err, ENOMEM, "out of memory");
		d->dtype = r->dtype;
		d->rank = -1;   /* whatever the enclosing graph made */
		m->outer_slot[m->n_inputs - m->n_formal] = r->slot;
		m->input_ids[m->n_inputs++] = id;
	}
	return 0;
}

/* Pass 1: the values table. */
int graph_build_values(compiler *c)
{
	const onnx_graph *g = c->g;
	size_t n = (size_t)g->n_inputs + (size_t)g->n_outputs +
		   (size_t)g->n_initializers;
	mfs_graph *m = c->m;

	c->implicit = calloc((size_t)g->n_nodes + 1, sizeof(*c->implicit));
	if (!c->implicit)
		return mfs_fail(c->err, ENOMEM, "out of memory");
	for (int i = 0; i < g->n_nodes; i++) {
		if (takes_bodies(c, &g->nodes[i]) &&
		    graph_node_free_names(&g->nodes[i], &c->implicit[i]))
			return mfs_fail(c->err, ENOMEM, "out of memory");
		n += (size_t)g->nodes[i].n_inputs + (size_t)g->nodes[i].n_outputs +
		     (size_t)c->implicit[i].n;
	}
	n += (size_t)c->n_outer;
	if (n > INT_MAX / 2)
		return mfs_fail(c->err, EINVAL, "graph is too large");
	m->values = calloc(n ? n : 1, sizeof(*m->values));
	if (!m->values || map_init(&c->names, n))
		return mfs_fail(c->err, ENOMEM, "out of memory");

	for (int i = 0; i < g->n_initializers; i++) {
		const onnx_initializer *in = &g->initializers[i];
		int id = add_value(c, in->name);
		mfs_value *v;
		if (id < 0)
			return mfs_fail(c->err, EINVAL, "initializer %d has no name", i);
		v = &m->values[id];
		if (v->kind == MFS_VAL_CONST)
			return mfs_fail(c->err, EINVAL,
					"initializer '%s' is defined twice", in->name);
		if (!graph_shape_valid(&in->tensor.shape) || !mfs_dtype_size(in->tensor.dtype))
			return mfs_fail(c->err, EINVAL,
					"initializer '%s' has an invalid type or shape",
					in->name);
		v->kind = MFS_VAL_CONST;
		v->constant = in->tensor;      /* borrowed */
		v->constant.owns_data = false;
		v->constant.layout = MFS_LAYOUT_PLAIN;
		v->dtype = in->tensor.dtype;
		v->shape = in->tensor.shape;
		v->shape_static = true;
	}

	/* Graph inputs that are initializers keep their value (ir < 4 style
	 * defaults): they stay constants and are not offered as inputs,
	 * unless the load made them inputs (g->defaults: onnx.h). */
	m->inputs = calloc((size_t)g->n_inputs + (size_t)c->n_outer + 1,
			   sizeof(*m->inputs));
	m->input_ids = calloc((size_t)g->n_inputs + (size_t)c->n_outer + 1,
			      sizeof(int));
	if (!m->inputs || !m->input_ids)
		return mfs_fail(c->err, ENOMEM, "out of memory");
	for (int i = 0; i < g->n_inputs; i++) {
		const onnx_value_info *vi = &g->inputs[i];
		int id = add_value(c, vi->name);
		mfs_value *v;
		mfs_io_desc *d;
		if (id < 0)
			return mfs_fail(c->err, EINVAL, "graph input %d has no name", i);
		v = &m->values[id];
		if (v->kind == MFS_VAL_CONST)
			continue;
		if (v->kind == MFS_VAL_INPUT)
			return mfs_fail(c->err, EINVAL,
					"graph input '%s' is listed twice", vi->name);
		/* a body's input may leave its type to the run (Loop's
		 * carried values in scripted exports) */
		if (vi->dtype == MFS_DT_UNDEFINED && !c->body)
			return mfs_fail(c->err, ENOTSUP,
					"graph input '%s' is not a tensor, a sequence of tensors or an optional of either (maps, sparse tensors and nested sequences are not supported)",
					vi->name);
		if (!mfs_dtype_size(vi->dtype) && vi->dtype != MFS_DT_UNDEFINED)
			return mfs_fail(c->err, ENOTSUP,
					"graph input '%s' has unsupported type %s",
					vi->name, mfs_dtype_onnx_name(vi->dtype));
		if (vi->has_shape && (vi->rank < 0 || vi->rank > MFS_MAX_RANK))
			return mfs_fail(c->err, ENOTSUP,
					"graph input '%s' has rank %d (at most %d)",
					vi->name, vi->rank, MFS_MAX_RANK);
		v->kind = MFS_VAL_INPUT;
		v->dtype = vi->dtype;
		v->input_index = m->n_inputs;
		d = &m->inputs[m->n_inputs];
		d->name = strdup(vi->name);
		if (!d->name)
			return mfs_fail(c->err, ENOMEM, "out of memory");
		d->dtype = vi->dtype;
		d->kind = vi->kind;
		d->elem_kind = vi->elem_kind;
		for (int k = 0; k < g->n_defaults; k++)
			if (!strcmp(g->defaults[k].name, vi->name))
				d->default_value = &g->defaults[k].tensor;
		/* A body's declared input shapes are not binding: exporters
		 * write the traced shape of a Loop's carried value, which may
		 * grow from one iteration to the next (onnxruntime does not
		 * enforce them either).  Its shapes are inferred at run.  A
		 * sequence's tensors have no declared shape (each has its
		 * own): containers are never static either. */
		d->rank = vi->has_shape && !c->body && vi->kind == MFS_KIND_TENSOR ?
			  vi->rank : -1;
		v->shape_static = d->rank >= 0;
		v->shape.rank = d->rank >= 0 ? d->rank : 0;
		for (int k = 0; k < d->rank; k++) {
			d->dims[k] = vi->dims[k] >= 0 ? vi->dims[k] : -1;
			v->shape.dims[k] = d->dims[k];
			if (d->dims[k] < 0)
				v->shape_static = false;
		}
		m->input_ids[m->n_inputs++] = id;
	}
	m->n_formal = m->n_inputs;
	return add_outer_inputs(c);
}

static mfs_op_lookup_fn test_lookup;

void mfs_graph_set_op_lookup(mfs_op_lookup_fn fn)
{
	test_lookup = fn;
}

static const mfs_op_def *find_op(const char *domain, const char *op_type,
				 int64_t opset)
{
	const mfs_op_def *d = test_lookup ? test_lookup(domain, op_type, opset) : NULL;
	return d ? d : mfs_op_find(domain, op_type, opset);
}

/* ONNX operators (default domain) whose first input may be absent; for
 * every other one the engine refuses a node without input 0, so
 * operators need not each check it. */
static bool input0_optional(const char *op)
{
	static const char *const ops[] = {
		"Constant", "RandomNormal", "RandomUniform", "Loop", "Optional",
		"OptionalHasElement", "SequenceEmpty", "Scan", NULL
	};
	for (int i = 0; ops[i]; i++)
		if (!strcmp(op, ops[i]))
			return true;
	return false;
}

/* ... and those whose first output may be unnamed. */
static bool output0_optional(const char *op)
{
	static const char *const ops[] = { "LSTM", "GRU", "RNN", NULL };
	for (int i = 0; ops[i]; i++)
		if (!strcmp(op, ops[i]))
			return true;
	return false;
}

static const char *domain_prefix(const char *d, char *buf, size_t size)
{
	if (!d || !*d || strcmp(d, "ai.onnx") == 0)
		return "";
	snprintf(buf, size, "%s.", d);
	return buf;
}

/* Pass 2: operator definitions and the value ids of every node. */
int graph_resolve_nodes(compiler *c)
{
	const onnx_graph *g = c->g;
	mfs_graph *m = c->m;

	c->n_all = g->n_nodes;
	c->all = calloc((size_t)g->n_nodes + 1, sizeof(*c->all));
	c->order = calloc((size_t)g->n_nodes + 1, sizeof(int));
	c->dropped = calloc((size_t)g->n_nodes + 1, sizeof(bool));
	if (!c->all || !c->order || !c->dropped)
		return mfs_fail(c->err, ENOMEM, "out of memory");

	for (int i = 0; i < g->n_nodes; i++) {
		const onnx_node *on = &g->nodes[i];
		int64_t opset = model_opset(c->model, on->domain);
		const mfs_op_def *def = find_op(on->domain ? on->domain : "",
						on->op_type, opset);
		if (!def) {
			char dom[128];
			return mfs_fail(c->err, ENOTSUP,
					"operator '%s%s' (opset %lld) is not supported (node '%s')",
					domain_prefix(on->domain, dom, sizeof(dom)),
					on->op_type, (long long)opset, onnx_node_label(on));
		}
		if (def->check) {   /* op.h: attributes wrong whatever the inputs */
			mfs_op_ctx ctx = { .def = def, .node = on, .opset = opset, .err = c->err };
			int rc = def->check(&ctx);
			if (rc)
				return rc;
		}
	}

	{
		size_t max_in = 1, max_out = 1;
		for (int i = 0; i < g->n_nodes; i++) {
			size_t n_in = (size_t)g->nodes[i].n_inputs +
				      (size_t)c->implicit[i].n;
			if (n_in > max_in)
				max_in = n_in;
			if ((size_t)g->nodes[i].n_outputs > max_out)
				max_out = (size_t)g->nodes[i].n_outputs;
		}
		max_in += MFS_ARG_PAD;
		max_out += MFS_ARG_PAD;
		c->tin = calloc(max_in, sizeof(*c->tin));
		c->pin = calloc(max_in, sizeof(*c->pin));
		c->tout = calloc(max_out, sizeof(*c->tout));
		c->pout = calloc(max_out, sizeof(*c->pout));
		if (!c->tin || !c->pin || !c->tout || !c->pout)
			return mfs_fail(c->err, ENOMEM, "out of memory");
	}
	for (int i = 0; i < g->n_nodes; i++) {
		const onnx_node *on = &g->nodes[i];
		mfs_node *nd = &c->all[i];
		nd->onnx = on;
		nd->opset = model_opset(c->model, on->domain);
		nd->def = find_op(on->domain ? on->domain : "", on->op_type,
				  nd->opset);
		nd->n_in = on->n_inputs + c->implicit[i].n;
		nd->n_out = on->n_outputs;
		nd->in = calloc((size_t)nd->n_in + 1, sizeof(int));
		nd->out = calloc((size_t)on->n_outputs + 1, sizeof(int));
		if (!nd->in || !nd->out)
			return mfs_fail(c->err, ENOMEM, "out of memory");
		nd->conv_layout = (strcmp(on->op_type, "Conv") == 0 ||
				   strcmp(on->op_type, "FusedConv") == 0 ||
				   strcmp(on->op_type, "QConv") == 0) &&
				  (nd->def->flags & MFS_OP_NHWC_OK);
		for (int k = 0; k < on->n_outputs; k++) {
			int id = add_value(c, on->outputs[k]);
			nd->out[k] = id;
			if (id < 0)
				continue;
			if (m->values[id].kind != MFS_VAL_UNDEFINED)
				return mfs_fail(c->err, EINVAL,
						"%s '%s': output '%s' is already defined",
						on->op_type, onnx_node_label(on),
						on->outputs[k]);
			m->values[id].kind = MFS_VAL_NODE;
			m->values[id].producer = i;
		}
	}
	/* Inputs after all outputs so that a read of a later node's output
	 * resolves (the graph may be out of order). */
	for (int i = 0; i < g->n_nodes; i++) {
		const onnx_node *on = &g->nodes[i];
		bool dflt = graph_is_default_domain(on->domain);
		for (int k = 0; k < on->n_inputs; k++)
			c->all[i].in[k] = add_value(c, on->inputs[k]);
		for (int k = 0; k < c->implicit[i].n; k++)
			c->all[i].in[on->n_inputs + k] =
				add_value(c, c->implicit[i].v[k]);
		if (dflt && (on->n_inputs < 1 || c->all[i].in[0] < 0) &&
		    !input0_optional(on->op_type))
			return mfs_fail(c->err, EINVAL, "%s '%s': input 0 is missing",
					on->op_type, onnx_node_label(on));
		if (dflt && (on->n_outputs < 1 || c->all[i].out[0] < 0) &&
		    !output0_optional(on->op_type))
			return mfs_fail(c->err, EINVAL, "%s '%s': output 0 has no name",
					on->op_type, onnx_node_label(on));
	}
	for (int i = 0; i < g->n_nodes; i++) {
		const onnx_node *on = &g->nodes[i];
		for (int k = 0; k < c->all[i].n_in; k++) {
			int id = c->all[i].in[k];
			if (id >= 0 && m->values[id].kind == MFS_VAL_UNDEFINED)
				return mfs_fail(c->err, EINVAL,
						"%s '%s': %s '%s' is not defined by any node, input or initializer",
						on->op_type, onnx_node_label(on),
						k < on->n_inputs ? "input" : "a value its body reads,",
						m->values[id].name);
		}
	}
	return 0;
}

/* Pass 3: topological order. */
int graph_topo_sort(compiler *c)
{
	const mfs_graph *m = c->m;
	int n = c->n_all;
	int *indeg = NULL, *head = NULL, *next = NULL, *queue = NULL;
	int *edge_node = NULL;
	int n_edges = 0, qh = 0, qt = 0, rc = 0;
	bool sorted = true;

	/* Fast path: the file is already in order. */
	for (int i = 0; i < n && sorted; i++)
		for (int k = 0; k < c->all[i].n_in; k++) {
			int id = c->all[i].in[k];
			if (id >= 0 && m->values[id].producer >= i)
				sorted = false;
		}
	if (sorted) {
		for (int i = 0; i < n; i++)
			c->order[i] = i;
		return 0;
	}

	for (int i = 0; i < n; i++)
		n_edges += c->all[i].n_in;
	indeg = calloc((size_t)n + 1, sizeof(int));
	head = malloc(((size_t)n + 1) * sizeof(int));
	next = malloc(((size_t)n_edges + 1) * sizeof(int));
	edge_node = malloc(((size_t)n_edges + 1) * sizeof(int));
	queue = malloc(((size_t)n + 1) * sizeof(int));
	if (!indeg || !head || !next || !edge_node || !queue) {
		rc = mfs_fail(c->err, ENOMEM, "out of memory");
		goto out;
	}
	/* Edges producer -> consumer, one per input slot. */
	for (int i = 0; i < n; i++)
		head[i] = -1;
	n_edges = 0;
	for (int i = 0; i < n; i++)
		for (int k = 0; k < c->all[i].n_in; k++) {
			int id = c->all[i].in[k];
			int p = id >= 0 ? m->values[id].producer : -1;
			if (p < 0)
				continue;
			edge_node[n_edges] = i;
			next[n_edges] = head[p];
			head[p] = n_edges++;
			indeg[i]++;
		}
	for (int i = 0; i < n; i++)
		if (!indeg[i])
			queue[qt++] = i;
	while (qh < qt) {
		int p = queue[qh++];
		c->order[qh - 1] = p;
		for (int e = head[p]; e >= 0; e = next[e])
			if (--indeg[edge_node[e]] == 0)
				queue[qt++] = edge_node[e];
	}
	if (qt < n) {
		for (int i = 0; i < n; i++)
			if (indeg[i]) {
				rc = mfs_fail(c->err, EINVAL,
					      "the graph has a cycle through %s '%s'",
					      c->all[i].onnx->op_type,
					      onnx_node_label(c->all[i].onnx));
				break;
			}
	}
out:
	free(indeg);
	free(head);
	free(next);
	free(edge_node);
	free(queue);
	return rc;
}

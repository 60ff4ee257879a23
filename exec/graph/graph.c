/* graph.c - mfs_graph_compile: from an onnx_model to the compiled graph
 * described in graph.h.
 *
 * Passes, in order:
 *   1. values: one entry per tensor name (hash map), initializers become
 *      constants, graph inputs that are not initializers become inputs;
 *   2. operators: each node gets its mfs_op_def for the model's opset of
 *      its domain (the first unsupported node in file order fails the
 *      compile with -ENOTSUP);
 *   3. topological order (Kahn's algorithm; file order kept when the file
 *      is already sorted, as exporters write it); cycles and reads of
 *      names nothing defines fail with -EINVAL;
 *   4. constant folding and static shapes, in that order: a deterministic
 *      node whose inputs are all constant runs now and its outputs become
 *      constants (Constant, Shape->Gather->Concat chains feeding Reshape),
 *      so does Shape/Size of a value whose shape is known; other nodes whose
 *      input shapes are all known get their output shapes from infer();
 *   5. dead nodes (nothing needed reads them) are dropped;
 *   6. the layout pass (see plan_layouts);
 *   7. lifetimes: each value's last reader, and per node the values to free
 *      after it.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusion.h"
#include "graph.h"
#include "log.h"

/* ---- name -> value id map (open addressing; names are borrowed) ---- */

typedef struct name_map {
	const char **keys;
	int *ids;
	size_t mask;
} name_map;

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

static void map_free(name_map *m)
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

static int map_get(const name_map *m, const char *name)
{
	size_t i = map_slot(m, name);
	return m->keys[i] ? m->ids[i] : -1;
}

/* ---- names a body graph reads from its enclosing scopes ---- */

typedef struct name_list {
	const char **v;
	int n, cap;
} name_list;

static bool list_has(const name_list *l, const char *s)
{
	for (int i = 0; i < l->n; i++)
		if (!strcmp(l->v[i], s))
			return true;
	return false;
}

static int list_add(name_list *l, const char *s)
{
	if (!s || !*s || list_has(l, s))
		return 0;
	if (l->n == l->cap) {
		int cap = l->cap ? 2 * l->cap : 16;
		const char **v = realloc(l->v, (size_t)cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = s;
	return 0;
}

/* The names g reads (its nodes and, recursively, their bodies) that g
 * does not define, in first-read order: what ONNX's lexical scoping takes
 * from the enclosing graphs.  Names are borrowed from g. */
static int graph_free_names(const onnx_graph *g, name_list *out)
{
	name_list def = { 0 };
	int rc = 0;

	for (int i = 0; !rc && i < g->n_inputs; i++)
		rc = list_add(&def, g->inputs[i].name);
	for (int i = 0; !rc && i < g->n_initializers; i++)
		rc = list_add(&def, g->initializers[i].name);
	for (int i = 0; !rc && i < g->n_nodes; i++)
		for (int k = 0; !rc && k < g->nodes[i].n_outputs; k++)
			rc = list_add(&def, g->nodes[i].outputs[k]);
	for (int i = 0; !rc && i < g->n_nodes; i++) {
		const onnx_node *on = &g->nodes[i];
		for (int k = 0; !rc && k < on->n_inputs; k++)
			if (!list_has(&def, on->inputs[k]))
				rc = list_add(out, on->inputs[k]);
		for (int a = 0; !rc && a < on->n_attrs; a++) {
			name_list sub = { 0 };
			if (!on->attrs[a].g)
				continue;
			rc = graph_free_names(on->attrs[a].g, &sub);
			for (int k = 0; !rc && k < sub.n; k++)
				if (!list_has(&def, sub.v[k]))
					rc = list_add(out, sub.v[k]);
			free(sub.v);
		}
	}
	for (int i = 0; !rc && i < g->n_outputs; i++)
		if (!list_has(&def, g->outputs[i].name))
			rc = list_add(out, g->outputs[i].name);
	free(def.v);
	return rc;
}

/* The enclosing-scope names every body of node on reads. */
static int node_free_names(const onnx_node *on, name_list *out)
{
	int rc = 0;
	for (int a = 0; !rc && a < on->n_attrs; a++)
		if (on->attrs[a].g)
			rc = graph_free_names(on->attrs[a].g, out);
	return rc;
}

/* A value of the enclosing scope as a body graph's compile sees it. */
typedef struct scope_ref {
	const char *name;
	mfs_dtype dtype;
	bool shape_static;
	mfs_shape shape;
	int slot;              /* the owning node's input index */
	/* A constant of the enclosing graph (borrowed: it outlives the body,
	 * whose node reads it), so the body folds and packs with it. */
	const mfs_tensor *constant;
} scope_ref;

/* ---- compile state ---- */

typedef struct compiler {
	mfs_graph *m;
	onnx_graph *g;
	const onnx_model *model;   /* opsets; the main graph's owner */
	bool body;                 /* a graph attribute's graph */
	const scope_ref *outer;    /* a body's enclosing-scope values */
	int n_outer;
	name_list *implicit;       /* per onnx node: its bodies' outer reads */
	name_map names;
	int cap_values;
	/* per onnx node (file order) */
	int n_all;
	mfs_node *all;
	int *order;            /* topological order of all[] */
	bool *dropped;         /* folded or dead */
	/* scratch for calling operators at compile, sized by the widest node */
	mfs_tensor *tin, *tout;
	mfs_tensor **pin, **pout;
	mfs_error *err;
} compiler;

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

static bool shape_valid(const mfs_shape *s)
{
	if (s->rank < 0 || s->rank > MFS_MAX_RANK)
		return false;
	for (int i = 0; i < s->rank; i++)
		if (s->dims[i] < 0)
			return false;
	return true;
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
static int build_values(compiler *c)
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
		    node_free_names(&g->nodes[i], &c->implicit[i]))
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
		if (!shape_valid(&in->tensor.shape) || !mfs_dtype_size(in->tensor.dtype))
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
	 * defaults): they stay constants and are not offered as inputs. */
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

static bool is_default_domain(const char *d)
{
	return !d || !*d || strcmp(d, "ai.onnx") == 0;
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
static int resolve_nodes(compiler *c)
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
				   strcmp(on->op_type, "FusedConv") == 0) &&
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
		bool dflt = is_default_domain(on->domain);
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
static int topo_sort(compiler *c)
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

/* The "operator inferred something impossible" check shared with the
 * backends' run-time infer. */
static int check_inferred(const mfs_node *nd, mfs_tensor **out, mfs_error *err)
{
	for (int k = 0; k < nd->n_out; k++) {
		if (!out[k])
			continue;
		if (!mfs_dtype_size(out[k]->dtype) ||
		    (out[k]->kind == MFS_KIND_TENSOR && !shape_valid(&out[k]->shape)))
			return mfs_fail(err, EIO,
					"%s '%s': operator inferred an invalid type or shape for output %d",
					nd->onnx->op_type, onnx_node_label(nd->onnx), k);
	}
	return 0;
}

/* The NULL entries past n_in / n_out (graph.h: MFS_ARG_PAD). */
static void clear_pad(compiler *c, const mfs_node *nd)
{
	for (int k = 0; k < MFS_ARG_PAD; k++) {
		c->pin[nd->n_in + k] = NULL;
		c->pout[nd->n_out + k] = NULL;
	}
}

/* Call a node's operator at compile time.  fold: run it on its constant
 * inputs (or, for Shape/Size, on an input whose shape alone is known: data
 * NULL) and make its outputs constants owned by the model.  Otherwise only
 * infer static output shapes (MFS_SHAPE_DEPENDS_ON_DATA leaves them
 * unknown). */
static int call_at_compile(compiler *c, mfs_node *nd, bool fold)
{
	mfs_graph *m = c->m;
	mfs_tensor *tin = c->tin, *tout = c->tout;
	mfs_tensor **pin = c->pin, **pout = c->pout;
	void *state = NULL;
	mfs_op_ctx ctx = {
		.def = nd->def, .node = nd->onnx, .opset = nd->opset,
		.n_in = nd->n_in, .in = pin, .n_out = nd->n_out, .out = pout,
		.state = &state, .err = c->err,
		.bodies = (const mfs_graph *const *)nd->bodies,
		.n_bodies = nd->n_bodies,
	};
	int rc;

	for (int k = 0; k < nd->n_in; k++) {
		const mfs_value *v = nd->in[k] >= 0 ? &m->values[nd->in[k]] : NULL;
		if (!v) {
			pin[k] = NULL;
			continue;
		}
		if (v->kind == MFS_VAL_CONST) {
			tin[k] = v->constant;
		} else {
			memset(&tin[k], 0, sizeof(tin[k]));
			tin[k].dtype = v->dtype;
			tin[k].shape = v->shape;
			tin[k].nbytes = (size_t)mfs_shape_numel(&v->shape) *
					mfs_dtype_size(v->dtype);
		}
		/* as at run (cpu_backend.c, bind_inputs): a folded sequence
		 * never reaches an operator that reads tensors only */
		if (tin[k].kind != MFS_KIND_TENSOR &&
		    !(nd->def->flags & MFS_OP_CONTAINERS))
			return mfs_fail(c->err, EINVAL,
					"%s '%s': input %d ('%s') is a %s; the operator takes tensors",
					nd->onnx->op_type, onnx_node_label(nd->onnx), k,
					nd->onnx->inputs[k], mfs_kind_name(tin[k].kind));
		pin[k] = &tin[k];
	}
	for (int k = 0; k < nd->n_out; k++) {
		memset(&tout[k], 0, sizeof(tout[k]));
		pout[k] = nd->out[k] >= 0 ? &tout[k] : NULL;
	}
	clear_pad(c, nd);
	rc = nd->def->infer(&ctx);
	if (rc == MFS_SHAPE_DEPENDS_ON_DATA && !fold)
		return 0;
	if (rc > 0)
		rc = mfs_fail(c->err, EIO,
			      "%s '%s': output shape needs data although every input is known",
			      nd->onnx->op_type, onnx_node_label(nd->onnx));
	if (!rc)
		rc = check_inferred(nd, pout, c->err);
	if (rc)
		return rc;
	if (!fold) {
		for (int k = 0; k < nd->n_out; k++) {
			mfs_value *v;
			if (!pout[k])
				continue;
			if (tout[k].kind != MFS_KIND_TENSOR)
				continue;   /* its items' shapes are data */
			v = &m->values[nd->out[k]];
			v->dtype = tout[k].dtype;
			v->shape = tout[k].shape;
			v->shape_static = true;
		}
		return 0;
	}

	for (int k = 0; !rc && k < nd->n_out; k++) {
		mfs_dtype dt;
		mfs_shape sh;
		double bytes;
		if (!pout[k] || tout[k].kind != MFS_KIND_TENSOR)
			continue;   /* run() makes a container's items */
		dt = tout[k].dtype;
		sh = tout[k].shape;
		bytes = (double)mfs_dtype_size(dt);
		for (int d = 0; d < sh.rank; d++)
			bytes *= (double)sh.dims[d];
		if (bytes > (double)mfs_engine_max_tensor_bytes()) {
			char txt[160];
			rc = mfs_fail(c->err, EFBIG,
				      "%s '%s': output %d of shape %s is larger than the %zu-byte limit",
				      nd->onnx->op_type, onnx_node_label(nd->onnx), k,
				      mfs_shape_format(&sh, txt, sizeof(txt)),
				      mfs_engine_max_tensor_bytes());
			break;
		}
		rc = mfs_tensor_alloc(&tout[k], dt, &sh, c->err);
	}
	if (!rc && nd->def->prepare)
		rc = nd->def->prepare(&ctx);
	if (!rc)
		rc = nd->def->run(&ctx);
	if (nd->def->release && state)
		nd->def->release(state);
	if (rc) {
		for (int k = 0; k < nd->n_out; k++)
			mfs_tensor_release(&tout[k]);
		if (rc > 0)
			rc = -EIO;
		if (!c->err->code)
			mfs_fail(c->err, -rc, "%s '%s': failed while folding constants",
				 nd->onnx->op_type, onnx_node_label(nd->onnx));
		return rc;
	}
	for (int k = 0; k < nd->n_out; k++) {
		mfs_value *v;
		if (!pout[k])
			continue;
		v = &m->values[nd->out[k]];
		v->kind = MFS_VAL_CONST;
		v->constant = tout[k];
		v->constant.layout = MFS_LAYOUT_PLAIN;
		v->dtype = tout[k].dtype;
		v->shape = tout[k].shape;
		v->shape_static = true;
	}
	m->n_folded++;
	return 0;
}

static int compile_graph(onnx_graph *g, const onnx_model *model, bool body,
			 const scope_ref *outer, int n_outer, const char *label,
			 mfs_graph **out, mfs_error *err);

/* Compile node ni's graph attributes with what this graph knows of the
 * values they read from it (types, static shapes). */
static int compile_bodies(compiler *c, int ni)
{
	mfs_node *nd = &c->all[ni];
	const onnx_node *on = nd->onnx;
	int n = 0, rc = 0;

	for (int a = 0; a < on->n_attrs; a++)
		n += on->attrs[a].g != NULL;
	if (!n || !(nd->def->flags & MFS_OP_BODIES))
		return 0;
	nd->bodies = calloc((size_t)n, sizeof(*nd->bodies));
	if (!nd->bodies)
		return mfs_fail(c->err, ENOMEM, "out of memory");
	for (int a = 0; !rc && a < on->n_attrs; a++) {
		name_list names = { 0 };
		scope_ref *refs = NULL;
		char label[256];
		if (!on->attrs[a].g)
			continue;
		rc = graph_free_names(on->attrs[a].g, &names);
		if (!rc && names.n &&
		    !(refs = calloc((size_t)names.n, sizeof(*refs))))
			rc = -ENOMEM;
		if (rc) {
			free(names.v);
			return mfs_fail(c->err, ENOMEM, "out of memory");
		}
		for (int j = 0; j < names.n; j++) {
			int id = map_get(&c->names, names.v[j]);
			const mfs_value *v = &c->m->values[id];
			refs[j].name = names.v[j];
			refs[j].dtype = v->dtype;
			refs[j].shape_static = v->shape_static;
			refs[j].shape = v->shape;
			if (v->kind == MFS_VAL_CONST && v->constant.data)
				refs[j].constant = &v->constant;
			for (int k = on->n_inputs; k < nd->n_in; k++)
				if (nd->in[k] == id)
					refs[j].slot = k;
		}
		snprintf(label, sizeof(label), "%s: %s '%s' %s", c->m->label,
			 on->op_type, onnx_node_label(on), on->attrs[a].name);
		rc = compile_graph(on->attrs[a].g, c->model, true, refs, names.n, label,
				   &nd->bodies[nd->n_bodies], c->err);
		if (rc)
			mfs_error_prefix(c->err, "%s '%s': attribute '%s': ",
					 on->op_type, onnx_node_label(on),
					 on->attrs[a].name);
		else
			nd->n_bodies++;
		free(refs);
		free(names.v);
	}
	return rc;
}

static void free_bodies(mfs_node *nd)
{
	for (int b = 0; b < nd->n_bodies; b++)
		mfs_graph_free(nd->bodies[b]);
	free(nd->bodies);
	nd->bodies = NULL;
	nd->n_bodies = 0;
}

/* Pass 4.  A node with bodies is never folded: what it computes is its
 * bodies' business, and they may hold random or data-shaped work. */
static int fold_and_infer(compiler *c)
{
	const mfs_graph *m = c->m;

	for (int i = 0; i < c->n_all; i++) {
		mfs_node *nd = &c->all[c->order[i]];
		bool all_const = !c->implicit[c->order[i]].n, all_static = true;
		int rc;

		if ((rc = compile_bodies(c, c->order[i])))
			return rc;
		for (int a = 0; a < nd->onnx->n_attrs; a++)
			if (nd->onnx->attrs[a].g)
				all_const = false;

		for (int k = 0; k < nd->n_in; k++) {
			const mfs_value *v;
			if (nd->in[k] < 0)
				continue;
			v = &m->values[nd->in[k]];
			if (v->kind != MFS_VAL_CONST)
				all_const = false;
			if (!v->shape_static || v->dtype == MFS_DT_UNDEFINED)
				all_static = false;
		}
		if (all_const && !(nd->def->flags & MFS_OP_NONDETERMINISTIC)) {
			rc = call_at_compile(c, nd, true);
			c->dropped[c->order[i]] = true;
		} else if (all_static && nd->n_in >= 1 && nd->in[0] >= 0 &&
			   is_default_domain(nd->onnx->domain) &&
			   (strcmp(nd->onnx->op_type, "Shape") == 0 ||
			    strcmp(nd->onnx->op_type, "Size") == 0)) {
			rc = call_at_compile(c, nd, true);
			c->dropped[c->order[i]] = true;
		} else if (all_static) {
			rc = call_at_compile(c, nd, false);
		} else {
			rc = 0;
		}
		if (rc)
			return rc;
	}
	return 0;
}

/* Pass 5: graph outputs, then drop nodes nothing needed reads. */
static int mark_outputs_and_dead(compiler *c)
{
	mfs_graph *m = c->m;
	const onnx_graph *g = c->g;
	bool *needed = calloc((size_t)m->n_values + 1, sizeof(bool));

	if (!needed)
		return mfs_fail(c->err, ENOMEM, "out of memory");
	m->outputs = calloc((size_t)g->n_outputs + 1, sizeof(*m->outputs));
	m->output_ids = calloc((size_t)g->n_outputs + 1, sizeof(int));
	if (!m->outputs || !m->output_ids) {
		free(needed);
		return mfs_fail(c->err, ENOMEM, "out of memory");
	}
	for (int i = 0; i < g->n_outputs; i++) {
		const onnx_value_info *vi = &g->outputs[i];
		int id = vi->name && *vi->name ? map_get(&c->names, vi->name) : -1;
		mfs_value *v;
		mfs_io_desc *d = &m->outputs[i];

		if (id < 0 || m->values[id].kind == MFS_VAL_UNDEFINED) {
			free(needed);
			return mfs_fail(c->err, EINVAL,
					"graph output '%s' is not produced by any node",
					vi->name ? vi->name : "");
		}
		v = &m->values[id];
		needed[id] = true;
		if (v->output_index < 0)
			v->output_index = i;
		m->output_ids[i] = id;
		m->n_outputs = i + 1;
		d->name = strdup(vi->name);
		if (!d->name) {
			free(needed);
			return mfs_fail(c->err, ENOMEM, "out of memory");
		}
		d->dtype = vi->dtype != MFS_DT_UNDEFINED ? vi->dtype : v->dtype;
		d->kind = vi->kind;
		d->elem_kind = vi->elem_kind;
		if (v->kind == MFS_VAL_CONST && v->constant.kind != MFS_KIND_TENSOR) {
			d->kind = v->constant.kind;
			d->elem_kind = v->constant.elem_kind;
		}
		if (d->kind != MFS_KIND_TENSOR) {
			d->rank = -1;
		} else if (vi->has_shape && vi->rank >= 0 && vi->rank <= MFS_MAX_RANK) {
			d->rank = vi->rank;
			for (int k = 0; k < d->rank; k++) {
				d->dims[k] = vi->dims[k] >= 0 ? vi->dims[k] : -1;
				/* a symbolic dim that inference pinned down */
				if (d->dims[k] < 0 && v->shape_static &&
				    v->shape.rank == d->rank)
					d->dims[k] = v->shape.dims[k];
			}
		} else if (v->shape_static) {
			d->rank = v->shape.rank;
			memcpy(d->dims, v->shape.dims, sizeof(d->dims));
		} else {
			d->rank = -1;
		}
	}

	for (int i = c->n_all - 1; i >= 0; i--) {
		int ni = c->order[i];
		mfs_node *nd = &c->all[ni];
		bool need = false;
		if (c->dropped[ni])
			continue;
		for (int k = 0; k < nd->n_out; k++)
			if (nd->out[k] >= 0 && needed[nd->out[k]])
				need = true;
		if (!need) {
			c->dropped[ni] = true;
			continue;
		}
		for (int k = 0; k < nd->n_in; k++)
			if (nd->in[k] >= 0)
				needed[nd->in[k]] = true;
	}
	free(needed);
	return 0;
}

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
	clear_pad(c, nd);
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
			    !shape_valid(&c->tout[k].shape) ||
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
		int id = map_get(&c->names, g->initializers[i].name);
		if (id >= 0 && !m->values[id].constant.data)
			mfs_tensor_release(&g->initializers[i].tensor);
	}
}

/* Pass 7 (with moving the kept nodes into m->nodes). */
static int plan_lifetimes(compiler *c)
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

void mfs_graph_free(mfs_graph *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->n_values; i++)
		mfs_tensor_release(&m->values[i].constant);
	free(m->values);
	for (int i = 0; i < m->n_nodes; i++) {
		free(m->nodes[i].in);
		free(m->nodes[i].out);
		free(m->nodes[i].frees);
		free_bodies(&m->nodes[i]);
	}
	free(m->nodes);
	free(m->outer_slot);
	for (int i = 0; i < m->n_inputs; i++)
		free(m->inputs[i].name);
	for (int i = 0; i < m->n_outputs; i++)
		free(m->outputs[i].name);
	free(m->inputs);
	free(m->outputs);
	free(m->input_ids);
	free(m->output_ids);
	free(m->label);
	onnx_model_free(m->onnx);   /* NULL for a body: its model owns it */
	free(m);
}

/* A pass-through (Identity, a VIEW; If, Loop and SequenceMap, which
 * run bodies) carries a container only when the graph or another node
 * makes one, so it does not count; a folded container (SequenceEmpty) is
 * a constant read by a node that does. */
static bool find_containers(const mfs_graph *m)
{
	for (int i = 0; i < m->n_inputs; i++)
		if (m->inputs[i].kind != MFS_KIND_TENSOR)
			return true;
	for (int i = 0; i < m->n_outputs; i++)
		if (m->outputs[i].kind != MFS_KIND_TENSOR)
			return true;
	for (int i = 0; i < m->n_nodes; i++) {
		unsigned f = m->nodes[i].def->flags;
		if ((f & MFS_OP_CONTAINERS) && !(f & (MFS_OP_VIEW | MFS_OP_BODIES)))
			return true;
	}
	return false;
}

bool mfs_graph_has_containers(const mfs_graph *m)
{
	return m->has_containers;
}

/* The passes on one graph: a model's main graph (outer NULL) or a body
 * (outer: the enclosing-scope values it reads).  Errors are not prefixed
 * with the model: the caller does that once. */
static int compile_graph(onnx_graph *g, const onnx_model *model, bool body,
			 const scope_ref *outer, int n_outer, const char *label,
			 mfs_graph **out, mfs_error *err)
{
	compiler c = { .err = err, .g = g, .model = model, .body = body,
		       .outer = outer,
		       .n_outer = n_outer };
	mfs_graph *m;
	int rc;

	*out = NULL;
	m = calloc(1, sizeof(*m));
	if (!m || !(m->label = strdup(label))) {
		free(m);
		return mfs_fail(err, ENOMEM, "out of memory");
	}
	c.m = m;
	rc = build_values(&c);
	if (!rc)
		rc = resolve_nodes(&c);
	if (!rc)
		rc = topo_sort(&c);
	if (!rc)
		rc = fold_and_infer(&c);
	if (!rc)
		rc = mark_outputs_and_dead(&c);
	if (!rc)
		rc = plan_lifetimes(&c);

	for (int i = 0; i < c.n_all; i++) {
		free(c.all[i].in);
		free(c.all[i].out);
		free_bodies(&c.all[i]);
	}
	for (int i = 0; c.implicit && i < g->n_nodes; i++)
		free(c.implicit[i].v);
	free(c.implicit);
	free(c.all);
	free(c.order);
	free(c.dropped);
	free(c.tin);
	free(c.tout);
	free(c.pin);
	free(c.pout);
	map_free(&c.names);
	if (rc) {
		mfs_graph_free(m);
		return rc > 0 ? -EIO : rc;
	}
	m->has_containers = find_containers(m);
	*out = m;
	return 0;
}

int mfs_graph_compile(onnx_model *onnx, const char *label, mfs_graph **out,
		      mfs_error *err)
{
	mfs_error local;
	mfs_graph *m = NULL;
	int rc;

	if (!err)
		err = &local;
	mfs_error_clear(err);
	*out = NULL;
	if (!label)
		label = "?";
	if (!onnx || !onnx->graph) {
		onnx_model_free(onnx);
		return mfs_fail(err, EINVAL, "model '%s': no graph", label);
	}
	rc = mfs_fuse_graph(onnx, err);    /* Conv + activation (fusion.h) */
	if (rc >= 0)
		rc = compile_graph(onnx->graph, onnx, false, NULL, 0, label, &m, err);
	if (rc) {
		if (rc > 0)
			rc = -EIO;
		mfs_error_prefix(err, "model '%s': ", label);
		onnx_model_free(onnx);
		return rc;
	}
	m->onnx = onnx;
	mfs_log_debug("model '%s': %d nodes to run, %d folded, %d values NHWC, %d blocked",
		      label, m->n_nodes, m->n_folded, m->n_nhwc, m->n_block16);
	*out = m;
	return 0;
}

int mfs_graph_n_inputs(const mfs_graph *m) { return m->n_inputs; }
int mfs_graph_n_outputs(const mfs_graph *m) { return m->n_outputs; }

const mfs_io_desc *mfs_graph_input(const mfs_graph *m, int i)
{
	return i >= 0 && i < m->n_inputs ? &m->inputs[i] : NULL;
}

const mfs_io_desc *mfs_graph_output(const mfs_graph *m, int i)
{
	return i >= 0 && i < m->n_outputs ? &m->outputs[i] : NULL;
}

/* rewrite.c - helpers of the graph rewrites (see rewrite.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rewrite.h"

bool rw_default_domain(const char *d)
{
	return !d || !*d || !strcmp(d, "ai.onnx");
}

bool rw_is(const onnx_node *n, const char *op)
{
	return n && n->op_type && !strcmp(n->op_type, op) && rw_default_domain(n->domain) &&
	       n->n_outputs >= 1 && *n->outputs[0];
}

/* Does a body of n (or a body nested in one) mention name?  Bodies read
 * the enclosing graph's values by name (exec/runtime/subgraph.h), so such a value
 * must survive the rewrite; shadowing is ignored: a false "yes" only
 * forgoes a rewrite. */
static bool body_reads(const onnx_node *n, const char *name)
{
	for (int a = 0; a < n->n_attrs; a++) {
		const onnx_graph *b = n->attrs[a].g;
		if (!b)
			continue;
		for (int i = 0; i < b->n_nodes; i++) {
			for (int k = 0; k < b->nodes[i].n_inputs; k++)
				if (!strcmp(b->nodes[i].inputs[k], name))
					return true;
			if (body_reads(&b->nodes[i], name))
				return true;
		}
		for (int i = 0; i < b->n_outputs; i++)
			if (!strcmp(b->outputs[i].name, name))
				return true;
	}
	return false;
}

int rw_readers(const onnx_graph *g, const char *name, int *reader)
{
	int n = 0;
	*reader = -1;
	for (int i = 0; i < g->n_nodes; i++) {
		for (int k = 0; k < g->nodes[i].n_inputs; k++)
			if (!strcmp(g->nodes[i].inputs[k], name)) {
				n++;
				*reader = i;
			}
		if (body_reads(&g->nodes[i], name)) {
			n++;
			*reader = i;
		}
	}
	for (int i = 0; i < g->n_outputs; i++)
		if (!strcmp(g->outputs[i].name, name))
			n++;
	return n;
}

int rw_producer(const onnx_graph *g, const char *name)
{
	if (!name || !*name)
		return -1;
	for (int i = 0; i < g->n_nodes; i++)
		for (int k = 0; k < g->nodes[i].n_outputs; k++)
			if (!strcmp(g->nodes[i].outputs[k], name))
				return i;
	return -1;
}

const mfs_tensor *rw_const(const onnx_graph *g, const char *name)
{
	if (!name || !*name)
		return NULL;
	for (int i = 0; i < g->n_initializers; i++)
		if (!strcmp(g->initializers[i].name, name))
			return &g->initializers[i].tensor;
	int p = rw_producer(g, name);
	if (p < 0 || !rw_is(&g->nodes[p], "Constant") || g->nodes[p].n_outputs != 1)
		return NULL;
	const onnx_attr *a = onnx_node_attr(&g->nodes[p], "value");
	return a && a->type == ONNX_ATTR_TENSOR ? &a->t : NULL;
}

bool rw_scalar(const onnx_graph *g, const char *name, float *v)
{
	const mfs_tensor *t = rw_const(g, name);
	if (!t || t->dtype != MFS_DT_FLOAT || mfs_shape_numel(&t->shape) != 1 || !t->data)
		return false;
	*v = ((const float *)t->data)[0];
	return true;
}

bool rw_scalar_near(const onnx_graph *g, const char *name, float want, float tol)
{
	float v;
	return rw_scalar(g, name, &v) && fabsf(v - want) <= tol * fabsf(want);
}

const char *rw_other(const onnx_node *n, const char *name)
{
	if (n->n_inputs != 2)
		return NULL;
	bool a = !strcmp(n->inputs[0], name), b = !strcmp(n->inputs[1], name);
	if (a == b)
		return NULL;
	return a ? n->inputs[1] : n->inputs[0];
}

bool rw_has_graph_attr(const onnx_node *n)
{
	for (int i = 0; i < n->n_attrs; i++)
		if (n->attrs[i].g)
			return true;
	return false;
}

static bool in_set(const int *idx, int n, int v)
{
	for (int i = 0; i < n; i++)
		if (idx[i] == v)
			return true;
	return false;
}

bool rw_internal_only(const onnx_graph *g, const int *idx, int n, int last)
{
	for (int i = 0; i < n; i++) {
		const onnx_node *nd = &g->nodes[idx[i]];
		if (nd->n_outputs != 1 || rw_has_graph_attr(nd))
			return false;
		if (idx[i] == last)
			continue;
		for (int j = 0; j < g->n_nodes; j++) {
			for (int k = 0; k < g->nodes[j].n_inputs; k++)
				if (!strcmp(g->nodes[j].inputs[k], nd->outputs[0]) &&
				    !in_set(idx, n, j))
					return false;
			if (body_reads(&g->nodes[j], nd->outputs[0]))
				return false;
		}
		for (int j = 0; j < g->n_outputs; j++)
			if (!strcmp(g->outputs[j].name, nd->outputs[0]))
				return false;
	}
	return true;
}

onnx_node *rw_node_new(const char *op, const char *const *inputs, int n_in)
{
	onnx_node *n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->op_type = strdup(op);
	n->domain = strdup(RW_DOMAIN);
	n->name = strdup(op);
	n->inputs = calloc((size_t)n_in + 1, sizeof(char *));
	if (!n->op_type || !n->domain || !n->name || !n->inputs) {
		rw_node_free(n);
		return NULL;
	}
	for (int i = 0; i < n_in; i++) {
		if (!(n->inputs[i] = strdup(inputs[i] ? inputs[i] : ""))) {
			rw_node_free(n);
			return NULL;
		}
		n->n_inputs++;
	}
	return n;
}

static onnx_attr *attr_add(onnx_node *n, const char *name, onnx_attr_type type)
{
	char *nm = strdup(name);
	onnx_attr *a = nm ? realloc(n->attrs, sizeof(*a) * (size_t)(n->n_attrs + 1)) : NULL;
	if (!a) {
		free(nm);
		return NULL;
	}
	n->attrs = a;
	a = &a[n->n_attrs++];
	memset(a, 0, sizeof(*a));
	a->name = nm;
	a->type = type;
	return a;
}

int rw_attr_float(onnx_node *n, const char *name, float v)
{
	onnx_attr *a = attr_add(n, name, ONNX_ATTR_FLOAT);
	if (!a)
		return -ENOMEM;
	a->f = v;
	return 0;
}

int rw_attr_int(onnx_node *n, const char *name, int64_t v)
{
	onnx_attr *a = attr_add(n, name, ONNX_ATTR_INT);
	if (!a)
		return -ENOMEM;
	a->i = v;
	return 0;
}

int rw_attr_string(onnx_node *n, const char *name, const char *v)
{
	char *s = strdup(v);
	onnx_attr *a = s ? attr_add(n, name, ONNX_ATTR_STRING) : NULL;
	if (!a) {
		free(s);
		return -ENOMEM;
	}
	a->s = s;
	a->s_len = strlen(s);
	return 0;
}

void rw_node_free(onnx_node *n)
{
	if (n)
		onnx_node_release(n);
	free(n);
}

int rw_ensure_opset(onnx_model *m)
{
	for (int i = 0; i < m->n_opsets; i++)
		if (m->opsets[i].domain && !strcmp(m->opsets[i].domain, RW_DOMAIN))
			return m->opsets[i].version >= 1 ? 0 : -EINVAL;
	onnx_opset *o = realloc(m->opsets, sizeof(*o) * (size_t)(m->n_opsets + 1));
	if (!o)
		return -ENOMEM;
	m->opsets = o;
	if (!(o[m->n_opsets].domain = strdup(RW_DOMAIN)))
		return -ENOMEM;
	o[m->n_opsets].version = 1;
	m->n_opsets++;
	return 0;
}

int rw_replace(onnx_model *m, const int *idx, int n, onnx_node *repl)
{
	onnx_graph *g = m->graph;
	int last = -1, rc;

	for (int i = 0; i < n; i++)
		if (idx[i] > last)
			last = idx[i];
	char **outs = calloc(1, sizeof(char *));
	if (!outs || (rc = rw_ensure_opset(m)) < 0) {
		free(outs);
		rw_node_free(repl);
		return !outs ? -ENOMEM : rc == -EINVAL ? 0 : rc;
	}
	/* repl writes what the last node wrote */
	outs[0] = g->nodes[last].outputs[0];
	g->nodes[last].outputs[0] = NULL;
	repl->outputs = outs;
	repl->n_outputs = 1;
	for (int i = 0; i < n; i++)
		onnx_node_release(&g->nodes[idx[i]]);
	g->nodes[last] = *repl;
	free(repl);
	int k = 0;
	for (int i = 0; i < g->n_nodes; i++)
		if (g->nodes[i].op_type)
			g->nodes[k++] = g->nodes[i];
	g->n_nodes = k;
	return 1;
}

int rw_sole_reader(const onnx_graph *g, const char *name, const char *op)
{
	int r;
	if (rw_readers(g, name, &r) != 1 || r < 0 || (op && !rw_is(&g->nodes[r], op)))
		return -1;
	return r;
}

int rw_each_node(onnx_model *m, int (*try_at)(onnx_model *m, int i))
{
	int done = 0;
	for (int i = 0; i < m->graph->n_nodes; i++) {
		int rc = try_at(m, i);
		if (rc < 0)
			return rc;
		if (rc > 0) {
			done++;
			/* nodes before the pattern kept their indices; step
			 * back over the ones that may have moved */
			i = i > RW_MAX ? i - RW_MAX - 1 : -1;
		}
	}
	return done;
}

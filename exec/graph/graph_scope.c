/* graph_scope.c - the names a body graph (a graph attribute's graph)
 * reads from its enclosing scopes, which ONNX's lexical scoping takes
 * from the enclosing graphs (graph_internal.h).  The compile makes them
 * the body's inputs after its own (graph_resolve.c) and tells the body
 * what the enclosing graph knows of them (graph.c, compile_bodies).
 */
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

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
int graph_free_names(const onnx_graph *g, name_list *out)
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
int graph_node_free_names(const onnx_node *on, name_list *out)
{
	int rc = 0;
	for (int a = 0; !rc && a < on->n_attrs; a++)
		if (on->attrs[a].g)
			rc = graph_free_names(on->attrs[a].g, out);
	return rc;
}

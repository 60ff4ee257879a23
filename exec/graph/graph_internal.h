/* graph_internal.h - what the pieces of mfs_graph_compile share beyond
 * graph.h: the compile state of one graph and the passes' entry points.
 *
 * graph.c          drives the passes on one graph; folding and dead
 *                  nodes, compiling bodies (the compile's recursion);
 * graph_resolve.c  the values table, operators, topological order;
 * graph_scope.c    the names a body reads from its enclosing scopes;
 * graph_fold.c     calling an operator at compile (fold, infer);
 * graph_plan.c     planning shapes, storage layouts (NHWC, BLOCK16),
 *                  value lifetimes and the frees after each node;
 * graph_access.c   a compiled graph's accessors and its release.
 * The calls between them go one way (graph.c calls the others), so that
 * no two objects depend on each other.  Nothing here is seen outside
 * exec/graph/.
 */
#ifndef MFS_GRAPH_INTERNAL_H
#define MFS_GRAPH_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "graph.h"

/* name -> value id map (open addressing; names are borrowed) */
typedef struct name_map {
	const char **keys;
	int *ids;
	size_t mask;
} name_map;

/* graph_resolve.c: the value id of name, -1 when the graph has none;
 * free the map. */
int graph_map_get(const name_map *m, const char *name);
void graph_map_free(name_map *m);

/* A list of borrowed names, without duplicates (graph_scope.c). */
typedef struct name_list {
	const char **v;
	int n, cap;
} name_list;

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

/* The compile state of one graph. */
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

static inline bool graph_shape_valid(const mfs_shape *s)
{
	if (s->rank < 0 || s->rank > MFS_MAX_RANK)
		return false;
	for (int i = 0; i < s->rank; i++)
		if (s->dims[i] < 0)
			return false;
	return true;
}

static inline bool graph_is_default_domain(const char *d)
{
	return !d || !*d || strcmp(d, "ai.onnx") == 0;
}

/* The NULL entries past n_in / n_out (graph.h: MFS_ARG_PAD). */
static inline void graph_clear_pad(compiler *c, const mfs_node *nd)
{
	for (int k = 0; k < MFS_ARG_PAD; k++) {
		c->pin[nd->n_in + k] = NULL;
		c->pout[nd->n_out + k] = NULL;
	}
}

/* graph.c: the passes on one graph, a model's main graph (outer NULL) or
 * a body (outer: the enclosing-scope values it reads).  Errors are not
 * prefixed with the model: the caller does that once. */
int graph_compile_one(onnx_graph *g, const onnx_model *model, bool body,
		      const scope_ref *outer, int n_outer, const char *label,
		      mfs_graph **out, mfs_error *err);

/* graph_resolve.c, pass 1: the values table. */
int graph_build_values(compiler *c);
/* graph_resolve.c, pass 2: operator definitions and the value ids of
 * every node. */
int graph_resolve_nodes(compiler *c);
/* graph_resolve.c, pass 3: topological order. */
int graph_topo_sort(compiler *c);

/* graph_scope.c: the names g reads (its nodes and, recursively, their
 * bodies) that g does not define, in first-read order, appended to out
 * (names borrowed from g; -ENOMEM). */
int graph_free_names(const onnx_graph *g, name_list *out);
/* graph_scope.c: the same for every body of node on. */
int graph_node_free_names(const onnx_node *on, name_list *out);

/* graph_fold.c: call nd's operator at compile; fold: run it and make its
 * outputs constants, else infer its static output shapes. */
int graph_call_at_compile(compiler *c, mfs_node *nd, bool fold);

/* graph_plan.c, passes 6 and 7: move the kept nodes into m->nodes, plan
 * layouts and lifetimes, drop constants nothing reads. */
int graph_plan(compiler *c);

/* graph_access.c: free a node's compiled bodies. */
void graph_free_bodies(mfs_node *nd);

#endif

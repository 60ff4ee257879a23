/* graph_builder.h - build onnx_model structs by hand in unit tests (the
 * engine's and the OpenCL backend's), without an ONNX file.  Header-only:
 * every function is static inline so a test uses what it needs. */
#ifndef MFS_TEST_GRAPH_BUILDER_H
#define MFS_TEST_GRAPH_BUILDER_H

#include <stdlib.h>
#include <string.h>

#include "onnx.h"

/* ---- building onnx_model structs by hand ---------------------------- */

static inline onnx_model *gb_new(int64_t opset)
{
	onnx_model *m = calloc(1, sizeof(*m));
	m->ir_version = 8;
	m->n_opsets = 2;
	m->opsets = calloc(2, sizeof(*m->opsets));
	m->opsets[0].domain = strdup("");
	m->opsets[0].version = opset;
	m->opsets[1].domain = strdup("test");
	m->opsets[1].version = 1;
	m->graph = calloc(1, sizeof(*m->graph));
	m->graph->name = strdup("g");
	return m;
}

static inline onnx_value_info *vi_add(onnx_value_info **arr, int *n, const char *name,
			       mfs_dtype dt, int rank, const int64_t *dims)
{
	onnx_value_info *v;
	*arr = realloc(*arr, (size_t)(*n + 1) * sizeof(**arr));
	v = &(*arr)[(*n)++];
	memset(v, 0, sizeof(*v));
	v->name = strdup(name);
	v->dtype = dt;
	v->has_shape = rank >= 0;
	v->rank = rank >= 0 ? rank : 0;
	for (int i = 0; i < v->rank; i++) {
		v->dims[i] = dims[i];
		if (dims[i] < 0)
			v->dim_params[i] = strdup("N");
	}
	return v;
}

static inline void gb_input(onnx_model *m, const char *name, mfs_dtype dt, int rank,
		     const int64_t *dims)
{
	vi_add(&m->graph->inputs, &m->graph->n_inputs, name, dt, rank, dims);
}

static inline void gb_output(onnx_model *m, const char *name)
{
	vi_add(&m->graph->outputs, &m->graph->n_outputs, name, MFS_DT_UNDEFINED,
	       -1, NULL);
}

static inline void gb_init(onnx_model *m, const char *name, mfs_dtype dt, int rank,
			   const int64_t *dims, const void *data)
{
	onnx_graph *g = m->graph;
	mfs_shape s = { .rank = rank };
	onnx_initializer *in;
	memcpy(s.dims, dims, (size_t)rank * sizeof(int64_t));
	g->initializers = realloc(g->initializers,
				  (size_t)(g->n_initializers + 1) * sizeof(*g->initializers));
	in = &g->initializers[g->n_initializers++];
	in->name = strdup(name);
	assert_int_equal(mfs_tensor_alloc(&in->tensor, dt, &s, NULL), 0);
	memcpy(in->tensor.data, data, in->tensor.nbytes);
}

static inline void gb_init_f32(onnx_model *m, const char *name, int rank,
			const int64_t *dims, const float *data)
{
	gb_init(m, name, MFS_DT_FLOAT, rank, dims, data);
}


/* "a,,b" -> {"a", "", "b"}; "" -> none. */
static inline int split_names(const char *list, char ***out)
{
	int n = 0;
	char **v = NULL;
	const char *p = list;
	if (!*list) {
		*out = NULL;
		return 0;
	}
	for (;;) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);
		v = realloc(v, (size_t)(n + 1) * sizeof(*v));
		v[n++] = strndup(p, len);
		if (!c)
			break;
		p = c + 1;
	}
	*out = v;
	return n;
}

static inline onnx_node *gb_node(onnx_model *m, const char *domain, const char *op,
			  const char *name, const char *ins, const char *outs)
{
	onnx_graph *g = m->graph;
	onnx_node *n;
	g->nodes = realloc(g->nodes, (size_t)(g->n_nodes + 1) * sizeof(*g->nodes));
	n = &g->nodes[g->n_nodes++];
	memset(n, 0, sizeof(*n));
	n->name = strdup(name);
	n->op_type = strdup(op);
	n->domain = strdup(domain);
	n->n_inputs = split_names(ins, &n->inputs);
	n->n_outputs = split_names(outs, &n->outputs);
	return n;
}

/* Attributes of a hand-built node. */
static inline onnx_attr *gb_attr(onnx_node *n, const char *name, onnx_attr_type type)
{
	onnx_attr *a;
	n->attrs = realloc(n->attrs, (size_t)(n->n_attrs + 1) * sizeof(*n->attrs));
	a = &n->attrs[n->n_attrs++];
	memset(a, 0, sizeof(*a));
	a->name = strdup(name);
	a->type = type;
	return a;
}

static inline void attr_int(onnx_node *n, const char *name, int64_t v)
{
	gb_attr(n, name, ONNX_ATTR_INT)->i = v;
}

static inline void attr_ints(onnx_node *n, const char *name, int c, const int64_t *v)
{
	onnx_attr *a = gb_attr(n, name, ONNX_ATTR_INTS);
	a->ints = malloc((size_t)c * sizeof(int64_t));
	memcpy(a->ints, v, (size_t)c * sizeof(int64_t));
	a->n_ints = (size_t)c;
}

#endif

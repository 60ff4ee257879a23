/* graph.c - mfs_graph_compile: from an onnx_model to the compiled graph
 * described in graph.h.
 *
 * Passes, in order (the compile state they share: graph_internal.h):
 *   1. values: one entry per tensor name (hash map), initializers become
 *      constants, graph inputs that are not initializers become inputs
 *      (graph_resolve.c);
 *   2. operators: each node gets its mfs_op_def for the model's opset of
 *      its domain (the first unsupported node in file order fails the
 *      compile with -ENOTSUP) (graph_resolve.c);
 *   3. topological order (Kahn's algorithm; file order kept when the file
 *      is already sorted, as exporters write it); cycles and reads of
 *      names nothing defines fail with -EINVAL (graph_resolve.c);
 *   4. constant folding and static shapes, in that order: a deterministic
 *      node whose inputs are all constant runs now and its outputs become
 *      constants (Constant, Shape->Gather->Concat chains feeding Reshape),
 *      so does Shape/Size of a value whose shape is known; other nodes whose
 *      input shapes are all known get their output shapes from infer()
 *      (here, calling operators through graph_fold.c); a node's graph
 *      attributes are compiled first, with what this graph knows of the
 *      values they read from it (graph_scope.c);
 *   5. dead nodes (nothing needed reads them) are dropped;
 *   6. the layout pass and 7. lifetimes: each value's last reader, and
 *      per node the values to free after it (graph_plan.c).
 * A compiled graph's accessors and its release: graph_access.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusion.h"
#include "graph_internal.h"
#include "log.h"


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
			int id = graph_map_get(&c->names, names.v[j]);
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
		rc = graph_compile_one(on->attrs[a].g, c->model, true, refs, names.n,
				       label, &nd->bodies[nd->n_bodies], c->err);
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
			rc = graph_call_at_compile(c, nd, true);
			c->dropped[c->order[i]] = true;
		} else if (all_static && nd->n_in >= 1 && nd->in[0] >= 0 &&
			   graph_is_default_domain(nd->onnx->domain) &&
			   (strcmp(nd->onnx->op_type, "Shape") == 0 ||
			    strcmp(nd->onnx->op_type, "Size") == 0)) {
			rc = graph_call_at_compile(c, nd, true);
			c->dropped[c->order[i]] = true;
		} else if (all_static) {
			rc = graph_call_at_compile(c, nd, false);
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
		int id = vi->name && *vi->name ? graph_map_get(&c->names, vi->name) : -1;
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

/* A string anywhere: a value of type STRING (inputs, outputs and
 * constants are values), or a Cast to string whose output type compile
 * did not learn (shapes not static). */
static bool find_strings(const mfs_graph *m)
{
	for (int v = 0; v < m->n_values; v++)
		if (m->values[v].dtype == MFS_DT_STRING ||
		    (m->values[v].kind == MFS_VAL_CONST &&
		     m->values[v].constant.dtype == MFS_DT_STRING))
			return true;
	for (int i = 0; i < m->n_inputs; i++)
		if (m->inputs[i].dtype == MFS_DT_STRING)
			return true;
	for (int i = 0; i < m->n_outputs; i++)
		if (m->outputs[i].dtype == MFS_DT_STRING)
			return true;
	for (int i = 0; i < m->n_nodes; i++)
		if (graph_is_default_domain(m->nodes[i].onnx->domain) &&
		    !strcmp(m->nodes[i].onnx->op_type, "Cast") &&
		    onnx_attr_int(m->nodes[i].onnx, "to", 0) == MFS_DT_STRING)
			return true;
	return false;
}

/* graph_internal.h */
int graph_compile_one(onnx_graph *g, const onnx_model *model, bool body,
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
	rc = graph_build_values(&c);
	if (!rc)
		rc = graph_resolve_nodes(&c);
	if (!rc)
		rc = graph_topo_sort(&c);
	if (!rc)
		rc = fold_and_infer(&c);
	if (!rc)
		rc = mark_outputs_and_dead(&c);
	if (!rc)
		rc = graph_plan(&c);

	for (int i = 0; i < c.n_all; i++) {
		free(c.all[i].in);
		free(c.all[i].out);
		graph_free_bodies(&c.all[i]);
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
	graph_map_free(&c.names);
	if (rc) {
		mfs_graph_free(m);
		return rc > 0 ? -EIO : rc;
	}
	m->has_containers = find_containers(m);
	m->has_strings = find_strings(m);
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
		rc = graph_compile_one(onnx->graph, onnx, false, NULL, 0, label, &m, err);
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

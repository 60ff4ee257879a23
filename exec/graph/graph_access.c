/* graph_access.c - a compiled graph seen from outside (engine.h): its
 * inputs and outputs, whether it carries containers, and freeing it.
 * Apart from the compile so that code running graphs (subgraph.c, the
 * backends) does not depend on the compiler, which depends on every
 * operator through the registry.
 */
#include <stdlib.h>

#include "graph_internal.h"

void graph_free_bodies(mfs_node *nd)
{
	for (int b = 0; b < nd->n_bodies; b++)
		mfs_graph_free(nd->bodies[b]);
	free(nd->bodies);
	nd->bodies = NULL;
	nd->n_bodies = 0;
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
		graph_free_bodies(&m->nodes[i]);
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

bool mfs_graph_has_containers(const mfs_graph *m)
{
	return m->has_containers;
}

bool mfs_graph_has_strings(const mfs_graph *m)
{
	return m->has_strings;
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

/* rewrite_dense.c - a linear layer spelled MatMul + bias Add (+ Relu or
 * GELU) -> one com.modelfs Dense node (exec/ops/dense.c), whose weights
 * are packed once and whose bias and activation run inside the product.
 *
 * The pattern: y = MatMul(A, W) with W a rank-2 float constant [K, N];
 * its only reader Add(y, b) (either order) with b a rank-1 float constant
 * of N values; optionally that Add's only reader Relu or com.modelfs Gelu
 * (what rewrite_gelu.c made; run it first).  MatMul alone is left as it
 * is (nothing to fuse).
 */
#include <string.h>

#include "rewrite.h"


/* The activation a node computes, "" when none fits. */
static const char *activation(const onnx_node *n)
{
	if (rw_is(n, "Relu") && n->n_inputs == 1)
		return "Relu";
	if (n->domain && !strcmp(n->domain, RW_DOMAIN) && !strcmp(n->op_type, "Gelu") &&
	    n->n_inputs == 1 && n->n_outputs == 1 && *n->outputs[0])
		return strcmp(onnx_attr_string(n, "approximate", "none"), "tanh") ? "Gelu"
										     : "GeluTanh";
	return "";
}

static int try_at(onnx_model *m, int i)
{
	onnx_graph *g = m->graph;
	const onnx_node *mm = &g->nodes[i];
	int idx[3] = { i }, n = 1;

	if (!rw_is(mm, "MatMul") || mm->n_inputs != 2 || mm->n_outputs != 1)
		return 0;
	const mfs_tensor *w = rw_const(g, mm->inputs[1]);
	if (!w || w->dtype != MFS_DT_FLOAT || w->shape.rank != 2)
		return 0;
	int a = rw_sole_reader(g, mm->outputs[0], NULL);
	if (a < 0 || !rw_is(&g->nodes[a], "Add"))
		return 0;
	const char *bias = rw_other(&g->nodes[a], mm->outputs[0]);
	const mfs_tensor *b = rw_const(g, bias);
	if (!b || b->dtype != MFS_DT_FLOAT || b->shape.rank != 1 ||
	    b->shape.dims[0] != w->shape.dims[1])
		return 0;
	idx[n++] = a;
	const char *act = "";
	int r = rw_sole_reader(g, g->nodes[a].outputs[0], NULL);
	if (r >= 0 && *(act = activation(&g->nodes[r])))
		idx[n++] = r;
	if (!rw_internal_only(g, idx, n, idx[n - 1]))
		return 0;
	const char *ins[3] = { mm->inputs[0], mm->inputs[1], bias };
	onnx_node *d = rw_node_new("Dense", ins, 3);
	if (!d || (*act && rw_attr_string(d, "activation", act))) {
		rw_node_free(d);
		return -ENOMEM;
	}
	return rw_replace(m, idx, n, d);
}

int mfs_rewrite_dense(onnx_model *m)
{
	return rw_each_node(m, try_at);
}

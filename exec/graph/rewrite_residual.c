/* rewrite_residual.c - a residual connection after a convolution,
 * Conv -> Add (-> Relu), becomes one com.modelfs FusedConv node with the
 * Add's other operand as its Z input (exec/cpu/ops/conv.c), so the sum and the
 * activation run as oneDNN post-ops while the output is still in cache.
 *
 * The pattern: y = Conv(X, W[, B]) (default domain, one output, no
 * subgraph), its only reader Add(y, z) (either order, z not y itself and
 * not a constant: a constant is a bias, better left to Add or folded), and
 * optionally the Add's only reader Relu.  The Conv's attributes carry over;
 * the node gets activation "Relu" when the Relu is taken.
 *
 * Shapes are not known here (the exports' batch dim is symbolic), so the
 * pass cannot prove that z has y's shape; FusedConv does not need it to:
 * a Z of any other shape is added as Add would, numpy-style broadcast, in
 * a pass after the convolution (slower, never wrong).  z is only read by
 * FusedConv, so it may have other readers and needs no copy.
 *
 * Runs after fusion.c's Conv + activation loop: a Conv read by an Add is
 * not read by a Relu, so the two never compete for a node.
 */
#include <stdlib.h>
#include <string.h>

#include "rewrite.h"

/* conv as a FusedConv node (not in any graph yet): its inputs, plus z as
 * input 3 (the bias slot padded with "") when z is not NULL; its
 * attributes, plus activation act when not NULL.  conv's contents move
 * over (its slot keeps only its output, for rw_replace to free); NULL when
 * out of memory, conv then as it was. */
static onnx_node *fused_conv(onnx_node *conv, const char *z, const char *act)
{
	int nin = z ? 4 : conv->n_inputs;
	onnx_node *n = calloc(1, sizeof(*n));
	char **ins = calloc((size_t)nin + 1, sizeof(char *));
	char *op = strdup("FusedConv"), *dom = strdup(RW_DOMAIN), *zn = z ? strdup(z) : NULL;
	char *bias = z && conv->n_inputs < 3 ? strdup("") : NULL;

	if (!n || !ins || !op || !dom || (z && !zn) || (z && conv->n_inputs < 3 && !bias) ||
	    (act && rw_attr_string(conv, "activation", act) < 0)) {
		free(n); free(ins); free(op); free(dom); free(zn); free(bias);
		return NULL;
	}
	for (int k = 0; k < conv->n_inputs; k++)
		ins[k] = conv->inputs[k];
	if (z && conv->n_inputs < 3)
		ins[2] = bias;
	if (z)
		ins[3] = zn;
	/* The new node takes the Conv's contents; the Conv's slot keeps only
	 * its output, which rw_replace frees with the slot. */
	*n = *conv;
	free(n->op_type);
	free(n->domain);
	n->op_type = op;
	n->domain = dom;
	free(conv->inputs);
	n->inputs = ins;
	n->n_inputs = nin;
	n->outputs = NULL;
	n->n_outputs = 0;
	conv->inputs = NULL;
	conv->n_inputs = 0;
	conv->attrs = NULL;
	conv->n_attrs = 0;
	conv->name = NULL;
	conv->op_type = NULL;
	conv->domain = NULL;
	return n;
}

static int try_at(onnx_model *m, int i)
{
	onnx_graph *g = m->graph;
	onnx_node *conv = &g->nodes[i];
	int idx[3] = { i }, n = 1;

	if (!rw_is(conv, "Conv") || conv->n_outputs != 1 || conv->n_inputs < 2 ||
	    conv->n_inputs > 3 || rw_has_graph_attr(conv))
		return 0;
	int a = rw_sole_reader(g, conv->outputs[0], "Add");
	const char *z = a >= 0 ? rw_other(&g->nodes[a], conv->outputs[0]) : NULL;
	/* Add-6's legacy broadcast (broadcast/axis attributes) is not numpy's. */
	if (!z || !*z || rw_const(g, z) || g->nodes[a].n_attrs)
		return 0;
	idx[n++] = a;
	int r = rw_sole_reader(g, g->nodes[a].outputs[0], "Relu");
	if (r >= 0 && g->nodes[r].n_inputs == 1)
		idx[n++] = r;
	if (!rw_internal_only(g, idx, n, idx[n - 1]))
		return 0;
	return rw_replace_by_fused_conv(m, idx, n, conv, z, n == 3 ? "Relu" : NULL);
}

/* rewrite.h */
int rw_replace_by_fused_conv(onnx_model *m, const int *idx, int n, onnx_node *conv,
			     const char *z, const char *act)
{
	/* rw_replace's only failure after this is out of memory, which fails
	 * the whole compile; the opset check that could decline comes first. */
	int rc = rw_ensure_opset(m);
	if (rc == -EINVAL)
		return 0;
	if (rc < 0)
		return rc;
	onnx_node *f = fused_conv(conv, z, act);
	if (!f)
		return -ENOMEM;
	return rw_replace(m, idx, n, f);
}

int mfs_rewrite_residual(onnx_model *m)
{
	return rw_each_node(m, try_at);
}

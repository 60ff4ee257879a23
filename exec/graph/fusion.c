/* fusion.c - static QDQ groups -> integer nodes (rewrite_qdq.c), then
 * Conv + activation -> FusedConv (see fusion.h), then the
 * rewrites of rewrite.h (LayerNorm, GELU, attention, Dense, the residual
 * Conv + Add (+ Relu), Conv + x * Sigmoid(x) or x * HardSigmoid(x), a
 * zero Pad into the AveragePool or convolution after it).
 *
 * The pattern: a default-domain Conv node with one output, read by exactly
 * one node (and not a graph output), that node being
 *   Relu                      -> activation "Relu"
 *   LeakyRelu (alpha)         -> "LeakyRelu", activation_params [alpha]
 *   Clip (opset < 11: min/max attributes; from 11: min/max inputs that are
 *        scalar float initializers or Constant outputs, or absent)
 *                             -> "Clip", [min, max]
 * reading it as input 0.  The Conv node becomes FusedConv (domain
 * com.modelfs, Conv's inputs and attributes plus activation and
 * activation_params) writing the activation's output; the activation node
 * is removed.  The model gains an opset import for com.modelfs version 1.
 *
 * Why on the ONNX graph, before compile: the rest of the engine (folding,
 * shapes, layouts, lifetimes) then sees an ordinary node and needs no
 * special case.  Residual adds (Conv -> Add -> Relu) are
 * exec/graph/rewrite_residual.c's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fusion.h"
#include "rewrite.h"

/* Clip's bound from input k: absent (keep def), or a one-element float
 * initializer.  False when it is something else (no fusion then). */
static bool clip_bound(const onnx_graph *g, const onnx_node *n, int k, float *v)
{
	if (n->n_inputs <= k || !*n->inputs[k])
		return true;
	/* an initializer, or the output of a Constant node (PyTorch exports
	 * write Relu6's bounds that way) */
	const mfs_tensor *t = rw_const(g, n->inputs[k]);
	if (!t || t->dtype != MFS_DT_FLOAT || mfs_shape_numel(&t->shape) != 1 || !t->data)
		return false;
	*v = ((const float *)t->data)[0];
	return true;
}

/* The activation the node computes, if fusable. */
static bool activation_of(const onnx_model *m, const onnx_node *n, const char **act,
			  float params[2], int *n_params)
{
	if (!rw_default_domain(n->domain) || n->n_outputs < 1 || !*n->outputs[0])
		return false;
	*n_params = 0;
	if (!strcmp(n->op_type, "Relu")) {
		*act = "Relu";
		return n->n_inputs == 1;
	}
	if (!strcmp(n->op_type, "LeakyRelu")) {
		*act = "LeakyRelu";
		params[0] = onnx_attr_float(n, "alpha", 0.01f);
		*n_params = 1;
		return n->n_inputs == 1;
	}
	if (!strcmp(n->op_type, "Clip")) {
		*act = "Clip";
		params[0] = -INFINITY;
		params[1] = INFINITY;
		*n_params = 2;
		if (onnx_model_opset(m, "") < 11) {
			params[0] = onnx_attr_float(n, "min", -INFINITY);
			params[1] = onnx_attr_float(n, "max", INFINITY);
			return n->n_inputs == 1;
		}
		return n->n_inputs <= 3 && clip_bound(m->graph, n, 1, &params[0]) &&
		       clip_bound(m->graph, n, 2, &params[1]) && params[0] <= params[1];
	}
	return false;
}

/* Turn conv into FusedConv with the activation, writing act_node's output.
 * All allocations first, so a failure leaves both nodes as they were. */
static int fuse_pair(onnx_node *conv, onnx_node *act_node, const char *act,
		     const float *params, int n_params)
{
	char *op = strdup("FusedConv"), *dom = strdup(RW_DOMAIN);
	char *an = strdup("activation"), *av = strdup(act);
	char *pn = n_params ? strdup("activation_params") : NULL;
	float *pv = n_params ? malloc(sizeof(float) * (size_t)n_params) : NULL;
	onnx_attr *attrs = realloc(conv->attrs, sizeof(onnx_attr) * (size_t)(conv->n_attrs + 2));

	if (attrs)
		conv->attrs = attrs;
	if (!op || !dom || !an || !av || (n_params && (!pn || !pv)) || !attrs) {
		free(op); free(dom); free(an); free(av); free(pn); free(pv);
		return -ENOMEM;
	}
	onnx_attr *a = &attrs[conv->n_attrs++];
	memset(a, 0, sizeof(*a));
	a->name = an;
	a->type = ONNX_ATTR_STRING;
	a->s = av;
	a->s_len = strlen(av);
	if (n_params) {
		a = &attrs[conv->n_attrs++];
		memset(a, 0, sizeof(*a));
		a->name = pn;
		a->type = ONNX_ATTR_FLOATS;
		memcpy(pv, params, sizeof(float) * (size_t)n_params);
		a->floats = pv;
		a->n_floats = (size_t)n_params;
	}
	free(conv->op_type);
	conv->op_type = op;
	free(conv->domain);
	conv->domain = dom;
	/* conv now writes what the activation wrote */
	free(conv->outputs[0]);
	conv->outputs[0] = act_node->outputs[0];
	act_node->outputs[0] = NULL;
	return 0;
}

/* Is pass name listed in MFS_FUSE_SKIP (comma-separated)? */
static bool skipped(const char *name)
{
	const char *p = getenv("MFS_FUSE_SKIP");
	size_t n = strlen(name);
	while (p && *p) {
		size_t len = strcspn(p, ",");
		if (len == n && !strncmp(p, name, n))
			return true;
		p += len + (p[len] == ',');
	}
	return false;
}

int mfs_fuse_graph(onnx_model *m, mfs_error *err)
{
	const char *env = getenv("MFS_FUSE");
	onnx_graph *g = m ? m->graph : NULL;
	int fused = 0;

	if (!g || (env && !strcmp(env, "0")))
		return 0;
	if (!skipped("qdq") && (fused = mfs_rewrite_qdq(m)) < 0)
		return mfs_fail(err, ENOMEM, "out of memory while rewriting the graph");
	for (int i = 0; i < g->n_nodes; i++) {
		onnx_node *conv = &g->nodes[i];
		const char *act;
		float params[2];
		int n_params, r;

		if (strcmp(conv->op_type, "Conv") || !rw_default_domain(conv->domain) ||
		    conv->n_outputs != 1 || !*conv->outputs[0] || rw_has_graph_attr(conv))
			continue;
		if (rw_readers(g, conv->outputs[0], &r) != 1 || r < 0 || r == i)
			continue;
		onnx_node *an = &g->nodes[r];
		if (strcmp(an->inputs[0], conv->outputs[0]) ||
		    !activation_of(m, an, &act, params, &n_params) || rw_has_graph_attr(an))
			continue;
		/* Extra outputs of the activation (none in the spec) would be lost. */
		if (an->n_outputs != 1)
			continue;
		int rc = rw_ensure_opset(m);
		if (rc == -EINVAL)
			return 0;   /* the model imports com.modelfs at version 0: leave it */
		if (rc < 0 || fuse_pair(conv, an, act, params, n_params) < 0)
			return mfs_fail(err, ENOMEM, "out of memory while fusing Conv nodes");
		onnx_node_release(an);
		memmove(an, an + 1, sizeof(onnx_node) * (size_t)(g->n_nodes - r - 1));
		g->n_nodes--;
		if (r < i)
			i--;
		fused++;
	}
	/* The transformer rewrites (rewrite.h); GELU before Dense, which
	 * takes a Gelu node as its activation. */
	static const struct {
		const char *name;
		int (*run)(onnx_model *);
	} passes[] = {
		{ "layernorm", mfs_rewrite_layernorm }, { "gelu", mfs_rewrite_gelu },
		{ "attention", mfs_rewrite_attention },
		{ "attention_layout", mfs_rewrite_attention_layout }, { "dense", mfs_rewrite_dense },
		{ "residual", mfs_rewrite_residual }, { "swish", mfs_rewrite_swish },
		{ "pad", mfs_rewrite_pad },
	};
	for (size_t p = 0; p < sizeof(passes) / sizeof(passes[0]); p++) {
		if (skipped(passes[p].name))
			continue;
		int rc = passes[p].run(m);
		if (rc < 0)
			return mfs_fail(err, ENOMEM, "out of memory while rewriting the graph");
		fused += rc;
	}
	return fused;
}

/* fusion.c - Conv + activation -> FusedConv (see fusion.h).
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
 * special case.  Residual adds (Conv -> Add -> Relu) are not fused here:
 * FusedConv's Z must have the output's exact shape, which is only known
 * after shape inference.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fusion.h"

#define FUSE_DOMAIN "com.modelfs"

static bool default_domain(const char *d)
{
	return !d || !*d || !strcmp(d, "ai.onnx");
}

/* Readers of name (a graph output counts as one), and the last reading
 * node (-1 if none). */
static int readers(const onnx_graph *g, const char *name, int *reader)
{
	int n = 0;
	*reader = -1;
	for (int i = 0; i < g->n_nodes; i++)
		for (int k = 0; k < g->nodes[i].n_inputs; k++)
			if (!strcmp(g->nodes[i].inputs[k], name)) {
				n++;
				*reader = i;
			}
	for (int i = 0; i < g->n_outputs; i++)
		if (!strcmp(g->outputs[i].name, name))
			n++;
	return n;
}

static const onnx_initializer *find_init(const onnx_graph *g, const char *name)
{
	for (int i = 0; i < g->n_initializers; i++)
		if (!strcmp(g->initializers[i].name, name))
			return &g->initializers[i];
	return NULL;
}

/* Clip's bound from input k: absent (keep def), or a one-element float
 * initializer.  False when it is something else (no fusion then). */
static bool clip_bound(const onnx_graph *g, const onnx_node *n, int k, float *v)
{
	if (n->n_inputs <= k || !*n->inputs[k])
		return true;
	const onnx_initializer *in = find_init(g, n->inputs[k]);
	const mfs_tensor *t = in ? &in->tensor : NULL;
	/* or the output of a Constant node (PyTorch exports write Relu6's
	 * bounds that way) */
	for (int i = 0; !t && i < g->n_nodes; i++) {
		const onnx_node *c = &g->nodes[i];
		if (c->n_outputs == 1 && !strcmp(c->outputs[0], n->inputs[k]) &&
		    !strcmp(c->op_type, "Constant") && default_domain(c->domain)) {
			const onnx_attr *a = onnx_node_attr(c, "value");
			if (!a || a->type != ONNX_ATTR_TENSOR)
				return false;
			t = &a->t;
		}
	}
	if (!t || t->dtype != MFS_DT_FLOAT || mfs_shape_numel(&t->shape) != 1 || !t->data)
		return false;
	*v = ((const float *)t->data)[0];
	return true;
}

/* The activation the node computes, if fusable. */
static bool activation_of(const onnx_model *m, const onnx_node *n, const char **act,
			  float params[2], int *n_params)
{
	if (!default_domain(n->domain) || n->n_outputs < 1 || !*n->outputs[0])
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

static bool has_graph_attr(const onnx_node *n)
{
	for (int i = 0; i < n->n_attrs; i++)
		if (n->attrs[i].g)
			return true;
	return false;
}

static int ensure_opset(onnx_model *m)
{
	for (int i = 0; i < m->n_opsets; i++)
		if (m->opsets[i].domain && !strcmp(m->opsets[i].domain, FUSE_DOMAIN))
			return m->opsets[i].version >= 1 ? 0 : -EINVAL;
	onnx_opset *o = realloc(m->opsets, sizeof(*o) * (size_t)(m->n_opsets + 1));
	if (!o)
		return -ENOMEM;
	m->opsets = o;
	if (!(o[m->n_opsets].domain = strdup(FUSE_DOMAIN)))
		return -ENOMEM;
	o[m->n_opsets].version = 1;
	m->n_opsets++;
	return 0;
}

/* Turn conv into FusedConv with the activation, writing act_node's output.
 * All allocations first, so a failure leaves both nodes as they were. */
static int fuse_pair(onnx_node *conv, onnx_node *act_node, const char *act,
		     const float *params, int n_params)
{
	char *op = strdup("FusedConv"), *dom = strdup(FUSE_DOMAIN);
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

int mfs_fuse_graph(onnx_model *m, mfs_error *err)
{
	const char *env = getenv("MFS_FUSE");
	onnx_graph *g = m ? m->graph : NULL;
	int fused = 0;

	if (!g || (env && !strcmp(env, "0")))
		return 0;
	for (int i = 0; i < g->n_nodes; i++) {
		onnx_node *conv = &g->nodes[i];
		const char *act;
		float params[2];
		int n_params, r;

		if (strcmp(conv->op_type, "Conv") || !default_domain(conv->domain) ||
		    conv->n_outputs != 1 || !*conv->outputs[0] || has_graph_attr(conv))
			continue;
		if (readers(g, conv->outputs[0], &r) != 1 || r < 0 || r == i)
			continue;
		onnx_node *an = &g->nodes[r];
		if (strcmp(an->inputs[0], conv->outputs[0]) ||
		    !activation_of(m, an, &act, params, &n_params) || has_graph_attr(an))
			continue;
		/* Extra outputs of the activation (none in the spec) would be lost. */
		if (an->n_outputs != 1)
			continue;
		int rc = ensure_opset(m);
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
	return fused;
}

/* rewrite_pad.c - a Pad with zeros on the spatial dims of a rank-4
 * tensor, read only by an AveragePool or a convolution, goes into that
 * node's own pads (as ONNX Runtime's PadFusion does): the AveragePool then
 * counts the padding (count_include_pad 1), the convolution reads zeros
 * there anyway.  Why: PyTorch exports avg_pool2d(..., padding=1) with
 * count_include_pad as Pad + AveragePool, and Inception-v3's nine such
 * pools spent as much time in the Pad copies and the layout conversions
 * around them (Pad reads and writes plain) as in the pools.
 *
 * The pattern: Pad (default domain, mode constant, one output) whose pads
 * are a constant (opset >= 11: input 1, an int64 initializer or Constant
 * output; constant_value absent or a zero scalar; no axes input; before
 * 11: the pads attribute and value 0) of 8 values, zero on N and C and
 * not negative; its only reader, reading it as input 0, is
 *   AveragePool with auto_pad NOTSET, ceil_mode 0, a 2-D kernel, and
 *     count_include_pad 1 or no pads of its own, or
 *   Conv / FusedConv with auto_pad NOTSET and a 2-D kernel.
 * The reader reads the Pad's input and gets the sum of both pads; the Pad
 * is removed.
 */
#include <stdlib.h>
#include <string.h>

#include "rewrite.h"

/* Pad node n's 8 pads, when n is the pattern's Pad. */
static bool zero_pads(const onnx_model *m, const onnx_node *n, int64_t pads[8])
{
	const onnx_graph *g = m->graph;

	if (!rw_is(n, "Pad") || n->n_outputs != 1 || rw_has_graph_attr(n) ||
	    strcmp(onnx_attr_string(n, "mode", "constant"), "constant"))
		return false;
	if (onnx_model_opset(m, "") < 11) {
		const onnx_attr *a = onnx_node_attr(n, "pads");
		if (n->n_inputs != 1 || !a || a->type != ONNX_ATTR_INTS || a->n_ints != 8 ||
		    onnx_attr_float(n, "value", 0.0f) != 0.0f)
			return false;
		memcpy(pads, a->ints, 8 * sizeof(int64_t));
	} else {
		const mfs_tensor *t = n->n_inputs >= 2 ? rw_const(g, n->inputs[1]) : NULL;
		float v = 0;
		if (!t || t->dtype != MFS_DT_INT64 || mfs_shape_numel(&t->shape) != 8 || !t->data ||
		    n->n_inputs > 4 || (n->n_inputs == 4 && *n->inputs[3]) ||
		    (n->n_inputs >= 3 && *n->inputs[2] && (!rw_scalar(g, n->inputs[2], &v) || v != 0)))
			return false;
		memcpy(pads, t->data, 8 * sizeof(int64_t));
	}
	for (int k = 0; k < 8; k++)
		if (pads[k] < 0 || ((k % 4) < 2 && pads[k]))
			return false;
	return true;
}

/* Whether reader r can take the pads in, and its own pads (4, zeros when
 * absent). */
static bool takes_pads(const onnx_node *r, int64_t own[4])
{
	bool pool = rw_is(r, "AveragePool");
	bool conv = rw_is(r, "Conv") ||
		    (!strcmp(r->op_type, "FusedConv") && r->domain && !strcmp(r->domain, RW_DOMAIN));
	const onnx_attr *k = onnx_node_attr(r, "kernel_shape");
	const onnx_attr *p = onnx_node_attr(r, "pads");

	if ((!pool && !conv) || rw_has_graph_attr(r) ||
	    strcmp(onnx_attr_string(r, "auto_pad", "NOTSET"), "NOTSET") ||
	    (p && (p->type != ONNX_ATTR_INTS || p->n_ints != 4)) ||
	    (k && (k->type != ONNX_ATTR_INTS || k->n_ints != 2)) || (pool && !k))
		return false;
	memset(own, 0, 4 * sizeof(int64_t));
	if (p)
		memcpy(own, p->ints, 4 * sizeof(int64_t));
	if (pool && (onnx_attr_int(r, "ceil_mode", 0) != 0 ||
		     (onnx_attr_int(r, "count_include_pad", 0) == 0 &&
		      (own[0] || own[1] || own[2] || own[3]))))
		return false;
	return true;
}

/* Set r's INTS attribute name to v (steals v), adding it when absent. */
static int set_ints(onnx_node *r, const char *name, int64_t *v, size_t n)
{
	onnx_attr *a = (onnx_attr *)onnx_node_attr(r, name);
	if (!a) {
		char *nm = strdup(name);
		onnx_attr *as = nm ? realloc(r->attrs, sizeof(*as) * (size_t)(r->n_attrs + 1)) : NULL;
		if (!as) {
			free(nm);
			free(v);
			return -ENOMEM;
		}
		r->attrs = as;
		a = &as[r->n_attrs++];
		memset(a, 0, sizeof(*a));
		a->name = nm;
		a->type = ONNX_ATTR_INTS;
	}
	free(a->ints);
	a->ints = v;
	a->n_ints = n;
	return 0;
}

static int try_at(onnx_model *m, int i)
{
	onnx_graph *g = m->graph;
	int64_t pads[8], own[4];

	if (!zero_pads(m, &g->nodes[i], pads))
		return 0;
	int r = rw_sole_reader(g, g->nodes[i].outputs[0], NULL);
	onnx_node *rd = r >= 0 ? &g->nodes[r] : NULL;
	if (!rd || rd->n_inputs < 1 || strcmp(rd->inputs[0], g->nodes[i].outputs[0]) ||
	    !takes_pads(rd, own))
		return 0;
	bool pool = rw_is(rd, "AveragePool");
	char *in = strdup(g->nodes[i].inputs[0]);
	int64_t *np = malloc(4 * sizeof(int64_t));
	const onnx_attr *cip = onnx_node_attr(rd, "count_include_pad");
	if (!in || !np || (pool && !cip && rw_attr_int(rd, "count_include_pad", 1) < 0)) {
		free(in);
		free(np);
		return -ENOMEM;
	}
	/* ONNX pads: [h_begin, w_begin, h_end, w_end]; Pad's: [n, c, h, w]
	 * begins, then the ends */
	np[0] = own[0] + pads[2];
	np[1] = own[1] + pads[3];
	np[2] = own[2] + pads[6];
	np[3] = own[3] + pads[7];
	if (set_ints(rd, "pads", np, 4) < 0) {
		free(in);
		return -ENOMEM;
	}
	if (pool)   /* looked up again: set_ints may have moved the attributes */
		((onnx_attr *)onnx_node_attr(rd, "count_include_pad"))->i = 1;
	free(rd->inputs[0]);
	rd->inputs[0] = in;
	onnx_node_release(&g->nodes[i]);
	memmove(&g->nodes[i], &g->nodes[i + 1], sizeof(onnx_node) * (size_t)(g->n_nodes - i - 1));
	g->n_nodes--;
	return 1;
}

int mfs_rewrite_pad(onnx_model *m)
{
	return rw_each_node(m, try_at);
}

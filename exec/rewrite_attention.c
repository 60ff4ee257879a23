/* rewrite_attention.c - scaled dot-product attention spelled out ->
 * one com.modelfs Attention node (exec/ops/attention.c).
 *
 * The pattern, every intermediate read only inside it:
 *   s = MatMul(Q, Kt)
 *   s = Div(s, c) | Mul(s, c) | Mul(c, s)       (c a float scalar constant)
 *   s = Where(Cond, s, fill) | Where(Cond, fill, s)   (optional; fill a
 *                                                float scalar constant)
 *   p = Softmax(s) over the last axis (axis -1; or absent from opset 13)
 *   y = MatMul(p, V)
 * -> y = Attention(Q, Kt, V[, Cond]) with scale 1/c or c, fill, keep_if.
 * Q, Kt and V stay as the graph computes them (the Transposes before them
 * still run).
 */
#include <string.h>

#include "rewrite.h"

static bool softmax_last(const onnx_model *m, const onnx_node *n)
{
	const onnx_attr *a = onnx_node_attr(n, "axis");
	if (!rw_is(n, "Softmax") || n->n_inputs != 1)
		return false;
	return a ? a->type == ONNX_ATTR_INT && a->i == -1 : onnx_model_opset(m, "") >= 13;
}

static int try_at(onnx_model *m, int i)
{
	onnx_graph *g = m->graph;
	const onnx_node *mm = &g->nodes[i];
	int idx[5] = { i }, n = 1;
	float c, fill = 0;
	int keep = 1;
	const char *cond = "";

	if (!rw_is(mm, "MatMul") || mm->n_inputs != 2)
		return 0;
	const char *v = mm->outputs[0];
	int sc = rw_sole_reader(g, v, NULL);
	if (sc < 0 || g->nodes[sc].n_inputs != 2)
		return 0;
	const onnx_node *sn = &g->nodes[sc];
	bool div = rw_is(sn, "Div");
	if (!(div || rw_is(sn, "Mul")) || !rw_scalar(g, rw_other(sn, v), &c) ||
	    (div && strcmp(sn->inputs[0], v)) || c == 0)
		return 0;
	idx[n++] = sc;
	v = sn->outputs[0];
	int nx = rw_sole_reader(g, v, NULL);
	if (nx >= 0 && rw_is(&g->nodes[nx], "Where") && g->nodes[nx].n_inputs == 3) {
		const onnx_node *w = &g->nodes[nx];
		keep = !strcmp(w->inputs[1], v);
		if ((!keep && strcmp(w->inputs[2], v)) || !strcmp(w->inputs[0], v) ||
		    !rw_scalar(g, w->inputs[keep ? 2 : 1], &fill))
			return 0;
		cond = w->inputs[0];
		idx[n++] = nx;
		v = w->outputs[0];
		nx = rw_sole_reader(g, v, NULL);
	}
	if (nx < 0 || !softmax_last(m, &g->nodes[nx]))
		return 0;
	idx[n++] = nx;
	v = g->nodes[nx].outputs[0];
	int m2 = rw_sole_reader(g, v, "MatMul");
	if (m2 < 0 || g->nodes[m2].n_inputs != 2 || strcmp(g->nodes[m2].inputs[0], v))
		return 0;
	idx[n++] = m2;
	if (!rw_internal_only(g, idx, n, m2))
		return 0;
	const char *ins[4] = { mm->inputs[0], mm->inputs[1], g->nodes[m2].inputs[1], cond };
	onnx_node *a = rw_node_new("Attention", ins, *cond ? 4 : 3);
	if (!a || rw_attr_float(a, "scale", div ? 1.0f / c : c) ||
	    (*cond && (rw_attr_float(a, "fill", fill) || rw_attr_int(a, "keep_if", keep)))) {
		rw_node_free(a);
		return -ENOMEM;
	}
	return rw_replace(m, idx, n, a);
}

int mfs_rewrite_attention(onnx_model *m)
{
	return rw_each_node(m, try_at);
}

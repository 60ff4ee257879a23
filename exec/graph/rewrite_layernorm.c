/* rewrite_layernorm.c - the decomposed layer norm of exports below opset
 * 17 -> one com.modelfs LayerNormalization node (exec/cpu/ops/layernorm.c).
 *
 * The pattern (PyTorch's nn.LayerNorm at opset 13, and the same written
 * out by hand), every intermediate read only inside it:
 *
 *   mu  = ReduceMean(x, axes=[-1], keepdims=1)
 *   d   = Sub(x, mu)
 *   sq  = Mul(d, d) | Pow(d, 2)
 *   var = ReduceMean(sq, axes=[-1], keepdims=1)
 *   s   = Sqrt(Add(var, eps))            (eps a float scalar constant)
 *   n   = Div(d, s)
 *   y   = Add(Mul(n, g), b)              (g, b rank-1 float constants;
 *                                         Mul/Add operands in any order)
 *
 * -> y = LayerNormalization(x, g, b, axis=-1, epsilon=eps).  Without
 * the Add, b is omitted.  The operator computes the moments in double,
 * the decomposition in float: results agree to rounding.
 */
#include <string.h>

#include "rewrite.h"


/* ReduceMean over the last axis with keepdims, axes as an attribute
 * (opset < 18) or a constant input (18+). */
static bool mean_last(const onnx_graph *g, const onnx_node *n)
{
	const int64_t *ax;
	size_t na = onnx_attr_ints(n, "axes", &ax);

	if (!rw_is(n, "ReduceMean") || onnx_attr_int(n, "keepdims", 1) != 1)
		return false;
	if (n->n_inputs >= 2 && *n->inputs[1]) {
		const mfs_tensor *t = rw_const(g, n->inputs[1]);
		if (na || !t || t->dtype != MFS_DT_INT64 || mfs_shape_numel(&t->shape) != 1)
			return false;
		return ((const int64_t *)t->data)[0] == -1;
	}
	return na == 1 && ax[0] == -1;
}

static const mfs_tensor *vector(const onnx_graph *g, const char *name)
{
	const mfs_tensor *t = rw_const(g, name);
	return t && t->dtype == MFS_DT_FLOAT && t->shape.rank == 1 ? t : NULL;
}

/* Try the pattern whose first ReduceMean is node i; 1 when rewritten. */
static int try_at(onnx_model *m, int i)
{
	onnx_graph *g = m->graph;
	const onnx_node *mu = &g->nodes[i];
	int idx[RW_MAX], n = 0, sub, sq, var, add, sqr, div, mul, badd = -1, r;
	float eps, two;

	if (!mean_last(g, mu) || mu->n_outputs != 1)
		return 0;
	idx[n++] = i;
	const char *x = mu->inputs[0];
	/* Sub(x, mu): the mean's only reader */
	if ((sub = rw_sole_reader(g, mu->outputs[0], "Sub")) < 0 ||
	    strcmp(g->nodes[sub].inputs[0], x) || strcmp(g->nodes[sub].inputs[1], mu->outputs[0]))
		return 0;
	idx[n++] = sub;
	const char *d = g->nodes[sub].outputs[0];
	/* d has exactly three readers (Mul d,d + Div) or two (Pow + Div) */
	int nr = rw_readers(g, d, &r);
	sq = -1;
	for (int j = 0; j < g->n_nodes && sq < 0; j++) {
		const onnx_node *c = &g->nodes[j];
		if (c->n_inputs != 2 || strcmp(c->inputs[0], d))
			continue;
		if ((rw_is(c, "Mul") && !strcmp(c->inputs[1], d) && nr == 3) ||
		    (rw_is(c, "Pow") && rw_scalar(g, c->inputs[1], &two) && two == 2.0f && nr == 2))
			sq = j;
	}
	if (sq < 0)
		return 0;
	idx[n++] = sq;
	if ((var = rw_sole_reader(g, g->nodes[sq].outputs[0], "ReduceMean")) < 0 ||
	    !mean_last(g, &g->nodes[var]))
		return 0;
	idx[n++] = var;
	if ((add = rw_sole_reader(g, g->nodes[var].outputs[0], "Add")) < 0 ||
	    !rw_scalar(g, rw_other(&g->nodes[add], g->nodes[var].outputs[0]), &eps) || eps < 0)
		return 0;
	idx[n++] = add;
	if ((sqr = rw_sole_reader(g, g->nodes[add].outputs[0], "Sqrt")) < 0)
		return 0;
	idx[n++] = sqr;
	if ((div = rw_sole_reader(g, g->nodes[sqr].outputs[0], "Div")) < 0 ||
	    strcmp(g->nodes[div].inputs[0], d))
		return 0;
	idx[n++] = div;
	if ((mul = rw_sole_reader(g, g->nodes[div].outputs[0], "Mul")) < 0)
		return 0;
	const char *scale = rw_other(&g->nodes[mul], g->nodes[div].outputs[0]);
	if (!vector(g, scale))
		return 0;
	idx[n++] = mul;
	const char *bias = "";
	int a = rw_sole_reader(g, g->nodes[mul].outputs[0], "Add");
	if (a >= 0) {
		const char *b = rw_other(&g->nodes[a], g->nodes[mul].outputs[0]);
		if (vector(g, b)) {
			badd = a;
			bias = b;
			idx[n++] = a;
		}
	}
	int last = badd >= 0 ? badd : mul;
	if (!rw_internal_only(g, idx, n, last))
		return 0;

	const char *ins[3] = { x, scale, bias };
	onnx_node *ln = rw_node_new("LayerNormalization", ins, *bias ? 3 : 2);
	if (!ln || rw_attr_int(ln, "axis", -1) || rw_attr_float(ln, "epsilon", eps)) {
		rw_node_free(ln);
		return -ENOMEM;
	}
	return rw_replace(m, idx, n, ln);
}

int mfs_rewrite_layernorm(onnx_model *m)
{
	return rw_each_node(m, try_at);
}

/* rewrite_gelu.c - GELU spelled out by exporters below opset 20 -> one
 * com.modelfs Gelu node (exec/cpu/ops/gelu.c).
 *
 * The core, one of
 *   erf:  e = Erf(Div(x, sqrt 2))  |  Erf(Mul(x, 1/sqrt 2))
 *   tanh: e = Tanh(Mul(sqrt(2/pi), Add(x, Mul(0.044715, x3))))
 *         with x3 = Mul(x, Mul(x, x)) | Pow(x, 3)
 * then a = Add(e, 1) and the product of x, 0.5 and a in one of the orders
 *   Mul(Mul(a, x), 0.5)  |  Mul(a, Mul(x, 0.5))  |  Mul(Mul(a, 0.5), x)
 * (every Mul/Add with its operands in either order; constants are float
 * scalars within 1e-4 relative of the value shown) -> Gelu(x) with
 * approximate "none" or "tanh".  Every intermediate is read only inside
 * the pattern.
 */
#include <string.h>

#include "rewrite.h"

typedef struct match {
	int idx[RW_MAX];
	int n;
	const char *x;
} match;

#define TOL 1e-4f


/* Node p is op(a, c) or op(c, a) with c a constant near want (op Mul/Add;
 * Div only as Div(a, c)); the non-constant operand's name, or NULL. */
static const char *with_const(const onnx_graph *g, int p, const char *op, float want)
{
	if (p < 0 || !rw_is(&g->nodes[p], op) || g->nodes[p].n_inputs != 2)
		return NULL;
	const onnx_node *n = &g->nodes[p];
	if (rw_scalar_near(g, n->inputs[1], want, TOL))
		return n->inputs[0];
	if (strcmp(op, "Div") && rw_scalar_near(g, n->inputs[0], want, TOL))
		return n->inputs[1];
	return NULL;
}

static bool add(match *mt, int i)
{
	if (i < 0 || mt->n >= RW_MAX)
		return false;
	mt->idx[mt->n++] = i;
	return true;
}

/* Erf's argument: x / sqrt 2. */
static bool erf_core(const onnx_graph *g, int e, match *mt)
{
	int t = rw_producer(g, g->nodes[e].inputs[0]);
	mt->x = with_const(g, t, "Div", 1.41421356f);
	if (!mt->x)
		mt->x = with_const(g, t, "Mul", 0.70710678f);
	return mt->x && add(mt, t);
}

/* x^3 as Mul(x, Mul(x, x)) or Pow(x, 3); adds its nodes. */
static bool cube_of(const onnx_graph *g, int p, const char *x, match *mt)
{
	if (p < 0)
		return false;
	const onnx_node *n = &g->nodes[p];
	if (rw_is(n, "Pow") && n->n_inputs == 2 && !strcmp(n->inputs[0], x) &&
	    rw_scalar_near(g, n->inputs[1], 3.0f, 0))
		return add(mt, p);
	const char *sq = rw_is(n, "Mul") ? rw_other(n, x) : NULL;
	int q = sq ? rw_producer(g, sq) : -1;
	if (q < 0 || !rw_is(&g->nodes[q], "Mul") || g->nodes[q].n_inputs != 2 ||
	    strcmp(g->nodes[q].inputs[0], x) || strcmp(g->nodes[q].inputs[1], x))
		return false;
	return add(mt, p) && add(mt, q);
}

/* Tanh's argument: sqrt(2/pi) * (x + 0.044715 x^3). */
static bool tanh_core(const onnx_graph *g, int e, match *mt)
{
	int t = rw_producer(g, g->nodes[e].inputs[0]);
	const char *u = with_const(g, t, "Mul", 0.79788456f);
	int pu = u ? rw_producer(g, u) : -1;
	if (!u || pu < 0 || !rw_is(&g->nodes[pu], "Add") || g->nodes[pu].n_inputs != 2)
		return false;
	/* Add(x, v): try either operand as x */
	for (int k = 0; k < 2; k++) {
		const char *x = g->nodes[pu].inputs[k], *v = g->nodes[pu].inputs[1 - k];
		int pv = rw_producer(g, v);
		const char *x3 = with_const(g, pv, "Mul", 0.044715f);
		match save = *mt;
		if (x3 && add(mt, t) && add(mt, pu) && add(mt, pv) &&
		    cube_of(g, rw_producer(g, x3), x, mt)) {
			mt->x = x;
			return true;
		}
		*mt = save;
	}
	return false;
}

/* a = Add(e, 1), then the product with x and 0.5; adds nodes, returns the
 * last node or -1. */
static int product(const onnx_graph *g, int e, match *mt)
{
	const char *eo = g->nodes[e].outputs[0];
	int a = rw_sole_reader(g, eo, "Add");
	if (a < 0 || !rw_scalar_near(g, rw_other(&g->nodes[a], eo), 1.0f, TOL) || !add(mt, a))
		return -1;
	const char *ao = g->nodes[a].outputs[0];
	int m1 = rw_sole_reader(g, ao, "Mul");
	const char *o = m1 >= 0 ? rw_other(&g->nodes[m1], ao) : NULL;
	if (!o || !add(mt, m1))
		return -1;
	const char *mo = g->nodes[m1].outputs[0];
	if (!strcmp(o, mt->x)) {                       /* Mul(Mul(a, x), 0.5) */
		int m2 = rw_sole_reader(g, mo, "Mul");
		return with_const(g, m2, "Mul", 0.5f) && add(mt, m2) ? m2 : -1;
	}
	if (rw_scalar_near(g, o, 0.5f, TOL)) {         /* Mul(Mul(a, 0.5), x) */
		int m2 = rw_sole_reader(g, mo, "Mul");
		const char *x = m2 >= 0 ? rw_other(&g->nodes[m2], mo) : NULL;
		return x && !strcmp(x, mt->x) && add(mt, m2) ? m2 : -1;
	}
	int h = rw_producer(g, o);                     /* Mul(a, Mul(x, 0.5)) */
	const char *x = with_const(g, h, "Mul", 0.5f);
	return x && !strcmp(x, mt->x) && add(mt, h) ? m1 : -1;
}

static int try_at(onnx_model *m, int e)
{
	onnx_graph *g = m->graph;
	const onnx_node *n = &g->nodes[e];
	match mt = { .n = 0 };
	bool is_erf = rw_is(n, "Erf");

	if ((!is_erf && !rw_is(n, "Tanh")) || n->n_inputs != 1 || !add(&mt, e))
		return 0;
	if (!(is_erf ? erf_core(g, e, &mt) : tanh_core(g, e, &mt)))
		return 0;
	int last = product(g, e, &mt);
	if (last < 0 || !rw_internal_only(g, mt.idx, mt.n, last))
		return 0;
	onnx_node *gelu = rw_node_new("Gelu", &mt.x, 1);
	if (!gelu || rw_attr_string(gelu, "approximate", is_erf ? "none" : "tanh")) {
		rw_node_free(gelu);
		return -ENOMEM;
	}
	return rw_replace(m, mt.idx, mt.n, gelu);
}

int mfs_rewrite_gelu(onnx_model *m)
{
	return rw_each_node(m, try_at);
}

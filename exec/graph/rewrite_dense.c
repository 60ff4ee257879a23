/* rewrite_dense.c - a linear layer spelled MatMul + bias Add, or Gemm,
 * (+ Relu or GELU) -> one com.modelfs Dense node (exec/cpu/ops/dense.c), whose
 * weights are packed once and whose bias and activation run inside the
 * product.
 *
 * The patterns: y = MatMul(A, W) with W a rank-2 float constant [K, N],
 * its only reader Add(y, b) (either order) with b a rank-1 float constant
 * of N values; or y = Gemm(A, W, b) with alpha = beta = 1, no transA, W a
 * rank-2 float constant (transB kept) and b a rank-1 float constant of N
 * values or absent.  Then optionally the only reader Relu or com.modelfs
 * Gelu (what rewrite_gelu.c made; run it first), or else a residual: the
 * only reader Add(y, z) (either order, z not a constant, no legacy
 * broadcast attributes), z becoming Dense's fourth input, added after
 * the product and bias (exec/cpu/ops/dense.c: Y = A W + bias + Z, any Z that
 * Add would broadcast).  A transformer's output projections and second
 * FFN layers end in such an Add; it was a separate pass over memory.
 * MatMul of a constant W without a bias becomes Dense too (a decoder's
 * LM head): Dense keeps W packed and takes the few-rows kernel at a
 * step's rows (gemm_small.c), where MatMul re-read W per product through
 * sgemm.  Gemm with neither an activation nor a residual is left as it
 * is (nothing to fuse; its own product is chosen per shape, sgemm.c).
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

static bool bias_of(const onnx_graph *g, const char *name, int64_t n)
{
	const mfs_tensor *b = rw_const(g, name);
	return b && b->dtype == MFS_DT_FLOAT && b->shape.rank == 1 && b->shape.dims[0] == n;
}

/* The residual z of n = Add(y, z) read after y, or NULL. */
static const char *residual(const onnx_graph *g, const onnx_node *n, const char *y)
{
	const char *z = rw_is(n, "Add") && !n->n_attrs ? rw_other(n, y) : NULL;
	return z && *z && !rw_const(g, z) ? z : NULL;
}

static int try_at(onnx_model *m, int i)
{
	onnx_graph *g = m->graph;
	const onnx_node *mm = &g->nodes[i];
	int idx[3] = { i }, n = 1, tb = 0;
	bool gemm = rw_is(mm, "Gemm");
	const char *bias = "";

	if ((!gemm && !rw_is(mm, "MatMul")) || mm->n_inputs < 2 || mm->n_outputs != 1)
		return 0;
	const mfs_tensor *w = rw_const(g, mm->inputs[1]);
	if (!w || w->dtype != MFS_DT_FLOAT || w->shape.rank != 2)
		return 0;
	if (gemm) {
		tb = onnx_attr_int(mm, "transB", 0) != 0;
		if (onnx_attr_float(mm, "alpha", 1) != 1 || onnx_attr_float(mm, "beta", 1) != 1 ||
		    onnx_attr_int(mm, "transA", 0) || mm->n_inputs > 3 ||
		    (mm->n_inputs == 3 && *mm->inputs[2] && !bias_of(g, mm->inputs[2], w->shape.dims[!tb])))
			return 0;
		if (mm->n_inputs == 3)
			bias = mm->inputs[2];
	} else {
		int a = rw_sole_reader(g, mm->outputs[0], NULL);
		const char *b = a >= 0 && rw_is(&g->nodes[a], "Add") ?
				rw_other(&g->nodes[a], mm->outputs[0]) : NULL;
		if (b && bias_of(g, b, w->shape.dims[1])) {
			bias = b;
			idx[n++] = a;
		}
	}
	const char *act = "", *z = NULL, *y = g->nodes[idx[n - 1]].outputs[0];
	int r = rw_sole_reader(g, y, NULL);
	if (r >= 0 && *(act = activation(&g->nodes[r])))
		idx[n++] = r;
	else if (r >= 0 && (z = residual(g, &g->nodes[r], y)))
		idx[n++] = r;
	if ((gemm && n == 1) || !rw_internal_only(g, idx, n, idx[n - 1]))
		return 0;
	const char *ins[4] = { mm->inputs[0], mm->inputs[1], bias, z };
	onnx_node *d = rw_node_new("Dense", ins, z ? 4 : *bias ? 3 : 2);
	if (!d || (*act && rw_attr_string(d, "activation", act)) ||
	    (tb && rw_attr_int(d, "transB", 1))) {
		rw_node_free(d);
		return -ENOMEM;
	}
	return rw_replace(m, idx, n, d);
}

int mfs_rewrite_dense(onnx_model *m)
{
	return rw_each_node(m, try_at);
}

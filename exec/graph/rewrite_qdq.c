/* rewrite_qdq.c - static QDQ graphs (what ONNX Runtime's quantize_static
 * writes: DequantizeLinear -> float op -> QuantizeLinear around every
 * quantized operator) -> integer com.modelfs nodes that compute on the
 * 8-bit values (exec/cpu/ops/qconv_dnnl.c, qdense_dnnl.c, qadd.c, qmaxpool.c).
 *
 * Patterns (every scale and zero point a constant, activations per tensor):
 * - Conv(DQ(xq), DQ(wq)[, bias]) [-> Relu] [-> Q] with wq an int8 rank-4
 *   constant, scale one or one per output channel (axis 0), zero point
 *   absent or all 0 -> QConv(xq, xs, xz, wq, ws, wz, bias, ys, yz), the
 *   Conv's attributes plus activation "Relu"; without the Q the output is
 *   float.  bias is the Conv's float bias (the DequantizeLinear of the
 *   int32 bias the quantizer writes; QConv divides it back).
 * - MatMul(DQ(aq), DQ(wq)) [+ Add(bias const [N])] and Gemm(DQ(aq),
 *   DQ(wq)[, bias]) (alpha = beta = 1, no transA), wq int8 rank 2, scale
 *   per tensor or per column of the product (MatMul axis 1; Gemm axis 0
 *   with transB, else 1) [-> Relu] [-> Q] -> QDense, same inputs, transB.
 * - Add(DQ(a), DQ(b)) [-> Relu] -> Q -> QAdd(aq, as, az, bq, bs, bz, ys,
 *   yz) with activation.
 * - MaxPool or Flatten (one output) between DQ(xq) and a Q of the same
 *   scale and zero point -> QMaxPool (qmaxpool.c) or Flatten on xq (max
 *   and reshape commute with the monotone dequantization).
 * - ONNX's QLinearConv and QLinearMatMul with such weights and constant
 *   scalar activation parameters -> QConv / QDense (int32 bias as is).
 * Then DequantizeLinear nodes nothing reads any more are dropped (the
 * weights' ones), so their float copies are never made.
 *
 * The integer node computes what ONNX Runtime's QLinearConv/QLinearMatMul
 * do for the same QDQ group: an exact int32 product, then one rounding
 * (requantization) where the float graph rounds at the Q.
 */
#include <stdlib.h>
#include <string.h>

#include "rewrite.h"

typedef struct dq_in {
	int node;                    /* the DequantizeLinear, -1: none */
	const char *q, *s, *z;       /* its inputs ("" for an absent z) */
} dq_in;

static bool scalar_const(const onnx_graph *g, const char *name)
{
	const mfs_tensor *t = rw_const(g, name);
	return t && t->data && mfs_shape_numel(&t->shape) == 1;
}

/* name = DequantizeLinear(q, scale, zp) with a constant per-tensor scale
 * and zero point (absent or int8/uint8). */
static bool dq_of(const onnx_graph *g, const char *name, dq_in *d)
{
	d->node = rw_producer(g, name);
	if (d->node < 0)
		return false;
	const onnx_node *n = &g->nodes[d->node];
	if (!rw_is(n, "DequantizeLinear") || n->n_inputs < 2 || n->n_outputs != 1)
		return false;
	d->q = n->inputs[0];
	d->s = n->inputs[1];
	d->z = n->n_inputs > 2 ? n->inputs[2] : "";
	const mfs_tensor *s = rw_const(g, d->s);
	return s && s->dtype == MFS_DT_FLOAT;
}

/* An activation's DequantizeLinear: its zero point must be there, an
 * 8-bit scalar, since it gives x's type (without it x could be int32,
 * which the integer nodes do not take). */
static bool act_dq(const onnx_graph *g, const char *name, dq_in *d)
{
	if (!dq_of(g, name, d) || !scalar_const(g, d->s) || !*d->z)
		return false;
	const mfs_tensor *z = rw_const(g, d->z);
	return z && z->data && mfs_shape_numel(&z->shape) == 1 &&
	       (z->dtype == MFS_DT_UINT8 || z->dtype == MFS_DT_INT8);
}

/* An int8 weight of rank `rank`, scale per tensor or `per` values along
 * `axis`, zero points 0. */
static bool weight_dq(const onnx_graph *g, const char *name, int rank, int axis, dq_in *d)
{
	if (!dq_of(g, name, d))
		return false;
	const mfs_tensor *w = rw_const(g, d->q), *s = rw_const(g, d->s);
	const mfs_tensor *z = *d->z ? rw_const(g, d->z) : NULL;
	if (!w || !w->data || w->dtype != MFS_DT_INT8 || w->shape.rank != rank)
		return false;
	int64_t ns = mfs_shape_numel(&s->shape);
	int ax = (int)onnx_attr_int(&g->nodes[d->node], "axis", 1);
	ax = ax < 0 ? ax + rank : ax;
	if (ns != 1 && (s->shape.rank != 1 || ax != axis || ns != w->shape.dims[axis]))
		return false;
	if (*d->z) {
		if (!z || !z->data || mfs_shape_numel(&z->shape) != ns)
			return false;
		for (int64_t i = 0; i < ns; i++)
			if (mfs_tensor_get_i64(z, i))
				return false;
	}
	return true;
}

/* Quantize node r reading y: its output's scale and zero point. */
static bool q_at(const onnx_graph *g, int r, const char **s, const char **z)
{
	if (r < 0 || !rw_is(&g->nodes[r], "QuantizeLinear") || g->nodes[r].n_inputs < 2 ||
	    g->nodes[r].n_outputs != 1)
		return false;
	const onnx_node *q = &g->nodes[r];
	*s = q->inputs[1];
	*z = q->n_inputs > 2 ? q->inputs[2] : "";
	const mfs_tensor *zt = **z ? rw_const(g, *z) : NULL;
	return scalar_const(g, *s) && rw_const(g, *s)->dtype == MFS_DT_FLOAT &&
	       (!**z || (zt && zt->data && mfs_shape_numel(&zt->shape) == 1));
}

/* The tail after y: optional Relu, optional Q.  Adds the nodes to idx;
 * *relu, *ys, *yz ("" when no Q). */
static void tail(const onnx_graph *g, const char *y, int *idx, int *n, bool *relu,
		 const char **ys, const char **yz)
{
	int r = rw_sole_reader(g, y, NULL);
	*relu = false;
	*ys = *yz = "";
	if (r >= 0 && rw_is(&g->nodes[r], "Relu") && g->nodes[r].n_inputs == 1 && g->nodes[r].n_outputs == 1) {
		*relu = true;
		idx[(*n)++] = r;
		r = rw_sole_reader(g, g->nodes[r].outputs[0], NULL);
	}
	if (q_at(g, r, ys, yz))
		idx[(*n)++] = r;
}

/* Add d's DequantizeLinear to idx when `reader` is its only reader. */
static void take_dq(const onnx_graph *g, const dq_in *d, int reader, int *idx, int *n)
{
	int r;
	if (rw_readers(g, g->nodes[d->node].outputs[0], &r) == 1 && r == reader)
		idx[(*n)++] = d->node;
}

/* take_dq for both operands of a product or a sum, once when one
 * DequantizeLinear feeds both. */
static void take_dq_pair(const onnx_graph *g, const dq_in *a, const dq_in *b, int reader, int *idx,
			 int *n)
{
	take_dq(g, a, reader, idx, n);
	if (b->node != a->node)
		take_dq(g, b, reader, idx, n);
}

/* Move src's attributes to dst (src keeps none). */
static void steal_attrs(onnx_node *dst, onnx_node *src)
{
	dst->attrs = src->attrs;
	dst->n_attrs = src->n_attrs;
	src->attrs = NULL;
	src->n_attrs = 0;
}

static int replace(onnx_model *m, int *idx, int n, const char *op, const char *const *ins,
		   int n_in, onnx_node *attrs_from, bool relu, int trans_b)
{
	int last = idx[0];
	for (int i = 1; i < n; i++)
		last = idx[i] > last ? idx[i] : last;
	if (!rw_internal_only(m->graph, idx, n, last))
		return 0;
	int rc = rw_ensure_opset(m);
	if (rc < 0)
		return rc == -EINVAL ? 0 : rc;
	onnx_node *d = rw_node_new(op, ins, n_in);
	if (!d)
		return -ENOMEM;
	if (attrs_from)
		steal_attrs(d, attrs_from);
	if ((relu && rw_attr_string(d, "activation", "Relu") < 0) ||
	    (trans_b && rw_attr_int(d, "transB", 1) < 0)) {
		rw_node_free(d);
		return -ENOMEM;
	}
	return rw_replace(m, idx, n, d);
}

static int try_conv(onnx_model *m, int i)
{
	onnx_graph *g = m->graph;
	onnx_node *c = &g->nodes[i];
	dq_in x, w;
	int idx[6] = { i }, n = 1;
	bool relu;
	const char *ys, *yz;

	if (!rw_is(c, "Conv") || c->n_inputs < 2 || c->n_outputs != 1 || !act_dq(g, c->inputs[0], &x) ||
	    !weight_dq(g, c->inputs[1], 4, 0, &w))
		return 0;
	tail(g, c->outputs[0], idx, &n, &relu, &ys, &yz);
	take_dq_pair(g, &x, &w, i, idx, &n);
	const char *ins[9] = { x.q, x.s, x.z, w.q, w.s, w.z,
			       c->n_inputs > 2 ? c->inputs[2] : "", ys, yz };
	return replace(m, idx, n, "QConv", ins, *ys ? 9 : 7, c, relu, 0);
}

static bool bias_n(const onnx_graph *g, const char *name, int64_t n)
{
	const mfs_tensor *b = rw_const(g, name);
	if (b && b->dtype == MFS_DT_FLOAT && b->shape.rank == 1 && b->shape.dims[0] == n)
		return true;
	dq_in d;   /* a DequantizeLinear of an int32 bias constant */
	const mfs_tensor *q = dq_of(g, name, &d) ? rw_const(g, d.q) : NULL;
	return q && q->dtype == MFS_DT_INT32 && q->shape.rank == 1 && q->shape.dims[0] == n;
}

static int try_dense(onnx_model *m, int i)
{
	onnx_graph *g = m->graph;
	onnx_node *mm = &g->nodes[i];
	bool gemm = rw_is(mm, "Gemm");
	dq_in a, w;
	int idx[7] = { i }, n = 1, tb = 0;
	const char *bias = "", *y, *ys, *yz;
	bool relu;

	if ((!gemm && !rw_is(mm, "MatMul")) || mm->n_inputs < 2 || mm->n_outputs != 1 ||
	    !act_dq(g, mm->inputs[0], &a))
		return 0;
	y = mm->outputs[0];   /* only now: a node may have no outputs */
	if (gemm) {
		tb = onnx_attr_int(mm, "transB", 0) != 0;
		if (onnx_attr_float(mm, "alpha", 1) != 1 || onnx_attr_float(mm, "beta", 1) != 1 ||
		    onnx_attr_int(mm, "transA", 0))
			return 0;
	}
	if (!weight_dq(g, mm->inputs[1], 2, tb ? 0 : 1, &w))
		return 0;
	int64_t cols = rw_const(g, w.q)->shape.dims[tb ? 0 : 1];
	if (gemm && mm->n_inputs > 2 && *mm->inputs[2]) {
		if (!bias_n(g, mm->inputs[2], cols))
			return 0;
		bias = mm->inputs[2];
	} else if (!gemm) {
		int r = rw_sole_reader(g, y, "Add");
		const char *b = r >= 0 && !g->nodes[r].n_attrs && g->nodes[r].n_outputs == 1 ?
				rw_other(&g->nodes[r], y) : NULL;
		if (b && bias_n(g, b, cols)) {
			bias = b;
			idx[n++] = r;
			y = g->nodes[r].outputs[0];
		}
	}
	tail(g, y, idx, &n, &relu, &ys, &yz);
	take_dq_pair(g, &a, &w, i, idx, &n);
	const char *ins[9] = { a.q, a.s, a.z, w.q, w.s, w.z, bias, ys, yz };
	return replace(m, idx, n, "QDense", ins, *ys ? 9 : 7, NULL, relu, tb);
}

static int try_add(onnx_model *m, int i)
{
	onnx_graph *g = m->graph;
	onnx_node *ad = &g->nodes[i];
	dq_in a, b;
	int idx[6] = { i }, n = 1;
	bool relu;
	const char *ys, *yz;

	if (!rw_is(ad, "Add") || ad->n_inputs != 2 || ad->n_attrs || ad->n_outputs != 1 ||
	    !act_dq(g, ad->inputs[0], &a) || !act_dq(g, ad->inputs[1], &b))
		return 0;
	tail(g, ad->outputs[0], idx, &n, &relu, &ys, &yz);
	mfs_dtype t = rw_const(g, a.z)->dtype;   /* QAdd: a, b and y of one type */
	if (!*ys || rw_const(g, b.z)->dtype != t ||
	    (*yz ? rw_const(g, yz)->dtype : MFS_DT_UINT8) != t)
		return 0;
	take_dq_pair(g, &a, &b, i, idx, &n);
	const char *ins[8] = { a.q, a.s, a.z, b.q, b.s, b.z, ys, yz };
	return replace(m, idx, n, "QAdd", ins, 8, NULL, relu, 0);
}

static bool same_scalar(const onnx_graph *g, const char *a, const char *b)
{
	if (!strcmp(a, b))
		return true;
	const mfs_tensor *x = *a ? rw_const(g, a) : NULL, *y = *b ? rw_const(g, b) : NULL;
	if (!x || !y)   /* an absent zero point is a uint8 0 */
		return (!x && !y) || (x ? !mfs_tensor_get_i64(x, 0) && x->dtype == MFS_DT_UINT8
					: !mfs_tensor_get_i64(y, 0) && y->dtype == MFS_DT_UINT8);
	if (x->dtype != y->dtype)
		return false;
	return x->dtype == MFS_DT_FLOAT ? ((const float *)x->data)[0] == ((const float *)y->data)[0]
					: mfs_tensor_get_i64(x, 0) == mfs_tensor_get_i64(y, 0);
}

/* MaxPool / Flatten between a DQ and a Q of the same parameters. */
static int try_passthrough(onnx_model *m, int i)
{
	onnx_graph *g = m->graph;
	onnx_node *p = &g->nodes[i];
	dq_in x;
	int idx[3] = { i }, n = 1;
	const char *ys, *yz;

	if ((!rw_is(p, "MaxPool") && !rw_is(p, "Flatten")) || p->n_outputs != 1 || p->n_inputs != 1 ||
	    !act_dq(g, p->inputs[0], &x))
		return 0;
	int r = rw_sole_reader(g, p->outputs[0], NULL);
	if (!q_at(g, r, &ys, &yz) || !same_scalar(g, ys, x.s) || !same_scalar(g, yz, x.z))
		return 0;
	idx[n++] = r;
	take_dq(g, &x, i, idx, &n);
	if (!rw_internal_only(g, idx, n, r))
		return 0;
	bool pool = rw_is(p, "MaxPool");
	int rc = pool ? rw_ensure_opset(m) : 0;
	if (rc < 0)
		return rc == -EINVAL ? 0 : rc;
	onnx_node *d = rw_node_new(pool ? "QMaxPool" : "Flatten", &x.q, 1);
	if (d && !pool) {   /* Flatten stays an ONNX Flatten */
		free(d->domain);
		d->domain = strdup("");
	}
	if (!d || !d->domain) {
		rw_node_free(d);
		return -ENOMEM;
	}
	steal_attrs(d, p);
	return rw_replace(m, idx, n, d);
}

/* ONNX's own QLinearConv / QLinearMatMul (the QOperator form) with an int8
 * constant weight of zero points 0 and constant scalar activation
 * parameters -> QConv / QDense (their int32 bias taken as it is). */
static int try_qlinear(onnx_model *m, int i)
{
	onnx_graph *g = m->graph;
	onnx_node *n = &g->nodes[i];
	bool conv = rw_is(n, "QLinearConv");
	int idx[1] = { i };

	if ((!conv && !rw_is(n, "QLinearMatMul")) || n->n_inputs < 8 || n->n_outputs != 1)
		return 0;
	const mfs_tensor *w = rw_const(g, n->inputs[3]), *ws = rw_const(g, n->inputs[4]);
	const mfs_tensor *wz = rw_const(g, n->inputs[5]);
	if (!w || !w->data || w->dtype != MFS_DT_INT8 || w->shape.rank != (conv ? 4 : 2) || !ws ||
	    ws->dtype != MFS_DT_FLOAT || !wz || !wz->data ||
	    !scalar_const(g, n->inputs[1]) || !scalar_const(g, n->inputs[6]) ||
	    (*n->inputs[2] && !scalar_const(g, n->inputs[2])) || !scalar_const(g, n->inputs[7]))
		return 0;
	for (int64_t k = 0; k < mfs_shape_numel(&wz->shape); k++)
		if (mfs_tensor_get_i64(wz, k))
			return 0;
	const char *b = n->n_inputs > 8 ? n->inputs[8] : "";
	const mfs_tensor *bt = *b ? rw_const(g, b) : NULL;
	if (*b && (!bt || bt->dtype != MFS_DT_INT32))
		return 0;
	const char *ins[9] = { n->inputs[0], n->inputs[1], n->inputs[2], n->inputs[3], n->inputs[4],
			       n->inputs[5], b, n->inputs[6], n->inputs[7] };
	return replace(m, idx, 1, conv ? "QConv" : "QDense", ins, 9, conv ? n : NULL, false, 0);
}

/* Drop QuantizeLinear/DequantizeLinear nodes whose output nothing reads. */
static int drop_dead(onnx_model *m)
{
	onnx_graph *g = m->graph;
	int k = 0, r;
	for (int i = 0; i < g->n_nodes; i++) {
		onnx_node *n = &g->nodes[i];
		if ((rw_is(n, "DequantizeLinear") || rw_is(n, "QuantizeLinear")) && n->n_outputs == 1 &&
		    rw_readers(g, n->outputs[0], &r) == 0) {
			onnx_node_release(n);
			continue;
		}
		g->nodes[k++] = *n;
	}
	g->n_nodes = k;
	return 0;
}

int mfs_rewrite_qdq(onnx_model *m)
{
	int (*const pass[])(onnx_model *, int) = { try_conv, try_dense, try_add, try_passthrough,
						     try_qlinear };
	int done = 0;
	for (size_t p = 0; p < sizeof(pass) / sizeof(pass[0]); p++) {
		int rc = rw_each_node(m, pass[p]);
		if (rc < 0)
			return rc;
		done += rc;
	}
	if (done)
		drop_dead(m);
	return done;
}

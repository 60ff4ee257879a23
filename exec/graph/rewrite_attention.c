/* rewrite_attention.c - scaled dot-product attention spelled out ->
 * one com.modelfs Attention node (exec/cpu/ops/attention.c).
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

/* ---- Attention reading Q, K and V where the projections wrote them ----
 *
 * Exporters feed attention through copies: a projection's [B, S, H*d]
 * output is reshaped to [B, S, H, d] and transposed to [B, H, S, d] (K
 * further to [B, H, d, S]), or a packed QKV projection is reshaped to
 * [B, S, 3, H, d], transposed to [3, B, H, S, d] and split (Split and
 * Squeeze, or Gather) into Q, K and V; the output goes back through a
 * Transpose to [B, S, H, d].  When every operand and the output come that
 * way, the Attention node takes layout 1 (exec/op/op_geometry.h): it reads
 * the reshaped projections in place and writes [B, S, H, d], and the
 * Transposes and the Split, read by nobody else, are dropped as dead.
 */

static bool transpose_perm(const onnx_graph *g, int p, const int64_t *perm, size_t n)
{
	const int64_t *v;
	if (p < 0 || !rw_is(&g->nodes[p], "Transpose") || g->nodes[p].n_inputs != 1 ||
	    onnx_attr_ints(&g->nodes[p], "perm", &v) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (v[i] != perm[i])
			return false;
	return true;
}

/* An int constant input or attribute of n holding exactly want[0..n). */
static bool ints_are(const onnx_graph *g, const onnx_node *n, int input, const char *attr,
		     const int64_t *want, size_t len)
{
	const mfs_tensor *t = n->n_inputs > input ? rw_const(g, n->inputs[input]) : NULL;
	const int64_t *v;

	if (t) {
		if (t->dtype != MFS_DT_INT64 || (size_t)mfs_shape_numel(&t->shape) != len || !t->data)
			return false;
		return !memcmp(t->data, want, len * sizeof(int64_t));
	}
	if (n->n_inputs > input && *n->inputs[input])
		return false;   /* computed at run time */
	return onnx_attr_ints(n, attr, &v) == len && !memcmp(v, want, len * sizeof(int64_t));
}

typedef struct heads_src {
	const char *name;   /* [B, L, H, d], or [B, L, P, H, d] with part >= 0 */
	int part, parts;
} heads_src;

static const int64_t PERM_HEADS[4] = { 0, 2, 1, 3 };       /* [B, L, H, d] -> [B, H, L, d] */
static const int64_t PERM_KT[4] = { 0, 2, 3, 1 };          /* [B, L, H, d] -> [B, H, d, L] */
static const int64_t PERM_LAST2[4] = { 0, 1, 3, 2 };
static const int64_t PERM_PACKED[5] = { 2, 0, 3, 1, 4 };   /* [B, L, P, H, d] -> [P, B, H, L, d] */

/* Part `part` of a packed projection: name is Squeeze(axes [0]) of output
 * `part` of a Split along axis 0 into ones, or Gather(axis 0, constant
 * index), of Transpose(x, [2, 0, 3, 1, 4]). */
static bool packed_source(const onnx_graph *g, const onnx_node *n, heads_src *s)
{
	static const int64_t zero[1] = { 0 };
	const onnx_node *sp;
	int p;

	if (rw_is(n, "Gather") && n->n_inputs == 2 && onnx_attr_int(n, "axis", 0) == 0) {
		const mfs_tensor *t = rw_const(g, n->inputs[1]);
		if (!t || t->dtype != MFS_DT_INT64 || t->shape.rank != 0 || !t->data)
			return false;
		s->part = (int)*(const int64_t *)t->data;
		s->parts = 0;   /* Gather checks the index against the dim */
		p = rw_producer(g, n->inputs[0]);
	} else if (rw_is(n, "Squeeze") && ints_are(g, n, 1, "axes", zero, 1)) {
		int sidx = rw_producer(g, n->inputs[0]);
		if (sidx < 0 || !rw_is(&g->nodes[sidx], "Split") || g->nodes[sidx].n_inputs < 1 ||
		    onnx_attr_int(&g->nodes[sidx], "axis", 0) != 0)
			return false;
		sp = &g->nodes[sidx];
		int64_t ones[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
		bool sized = (sp->n_inputs > 1 && *sp->inputs[1]) || onnx_node_attr(sp, "split");
		if (sp->n_outputs > 8 ||
		    (sized && !ints_are(g, sp, 1, "split", ones, (size_t)sp->n_outputs)))
			return false;
		s->part = -1;
		for (int i = 0; i < sp->n_outputs; i++)
			if (!strcmp(sp->outputs[i], n->inputs[0]))
				s->part = i;
		s->parts = sp->n_outputs;
		p = rw_producer(g, sp->inputs[0]);
	} else {
		return false;
	}
	if (s->part < 0 || !transpose_perm(g, p, PERM_PACKED, 5))
		return false;
	s->name = g->nodes[p].inputs[0];
	return true;
}

/* The [B, L, H, d] (or packed) tensor that name, a [B, H, L, d] operand,
 * was transposed from. */
static bool heads_source(const onnx_graph *g, const char *name, heads_src *s)
{
	int p = rw_producer(g, name);
	if (p < 0)
		return false;
	if (transpose_perm(g, p, PERM_HEADS, 4)) {
		*s = (heads_src){ g->nodes[p].inputs[0], -1, 0 };
		return true;
	}
	return packed_source(g, &g->nodes[p], s);
}

/* The same for Kt [B, H, d, L]: Transpose(x, [0, 2, 3, 1]), or the last
 * two dims of a [B, H, L, d] operand swapped. */
static bool kt_source(const onnx_graph *g, const char *name, heads_src *s)
{
	int p = rw_producer(g, name);
	if (transpose_perm(g, p, PERM_KT, 4)) {
		*s = (heads_src){ g->nodes[p].inputs[0], -1, 0 };
		return true;
	}
	return transpose_perm(g, p, PERM_LAST2, 4) && heads_source(g, g->nodes[p].inputs[0], s);
}

static int copy_attrs(onnx_node *to, const onnx_node *from)
{
	for (int i = 0; i < from->n_attrs; i++) {
		const onnx_attr *a = &from->attrs[i];
		int rc = a->type == ONNX_ATTR_FLOAT ? rw_attr_float(to, a->name, a->f) :
			 a->type == ONNX_ATTR_INT ? rw_attr_int(to, a->name, a->i) : -EINVAL;
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int part_attr(onnx_node *a, const char *name, const char *pname, const heads_src *s)
{
	if (s->part < 0)
		return 0;
	int rc = rw_attr_int(a, name, s->part);
	return rc < 0 || !s->parts ? rc : rw_attr_int(a, pname, s->parts);
}

static int try_layout_at(onnx_model *m, int i)
{
	onnx_graph *g = m->graph;
	const onnx_node *at = &g->nodes[i];
	heads_src q, k, v;

	if (strcmp(at->op_type, "Attention") || strcmp(at->domain ? at->domain : "", RW_DOMAIN) ||
	    at->n_inputs < 3 || at->n_outputs != 1 || onnx_attr_int(at, "layout", 0) != 0)
		return 0;
	int t = rw_sole_reader(g, at->outputs[0], "Transpose");
	if (t < 0 || !transpose_perm(g, t, PERM_HEADS, 4) ||
	    !heads_source(g, at->inputs[0], &q) || !kt_source(g, at->inputs[1], &k) ||
	    !heads_source(g, at->inputs[2], &v))
		return 0;
	int idx[2] = { i, t };
	if (!rw_internal_only(g, idx, 2, t))
		return 0;
	const char *ins[4] = { q.name, k.name, v.name, at->n_inputs > 3 ? at->inputs[3] : "" };
	onnx_node *a = rw_node_new("Attention", ins, at->n_inputs > 3 ? 4 : 3);
	if (!a || copy_attrs(a, at) || rw_attr_int(a, "layout", 1) ||
	    part_attr(a, "q_part", "q_parts", &q) || part_attr(a, "k_part", "k_parts", &k) ||
	    part_attr(a, "v_part", "v_parts", &v)) {
		rw_node_free(a);
		return -ENOMEM;
	}
	return rw_replace(m, idx, 2, a);
}

int mfs_rewrite_attention_layout(onnx_model *m)
{
	return rw_each_node(m, try_layout_at);
}

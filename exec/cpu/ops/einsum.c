/* Einsum (12): Einstein summation, numpy semantics.
 *
 * "ij,jk->ik" style equations with letters a-z/A-Z, one "..." per term
 * (broadcast, right-aligned across the inputs), repeated labels within a
 * term (diagonals: the dims must be equal), and the implicit form without
 * "->" (output = the ellipsis dims, then the labels used exactly once, in
 * alphabetical order).  Spaces are ignored.
 *
 * Evaluated directly: for every output element, the sum over all other
 * labels of the product of the input elements, each input addressed
 * through per-label strides (a repeated label adds its strides; a
 * broadcast dim of extent 1 has stride 0).  float and double accumulate in
 * double, int32/int64 in int64.  This is O(product of all label extents):
 * right for the small contractions Einsum usually expresses; a model that
 * hides a large matmul in Einsum runs correctly, not fast.
 */
#include <stdlib.h>
#include <string.h>

#include "op.h"

#define EIN_LETTERS 52
#define EIN_MAX_LABELS (EIN_LETTERS + MFS_MAX_RANK)
#define EIN_MAX_INPUTS 8

typedef struct ein_term {
	int n;                      /* number of dims */
	int label[MFS_MAX_RANK];    /* label id of each dim */
} ein_term;

typedef struct ein_plan {
	int n_in;
	ein_term in[EIN_MAX_INPUTS];
	ein_term out;
	int64_t size[EIN_MAX_LABELS];
	bool used[EIN_MAX_LABELS];
	int n_sum;
	int sum_label[EIN_MAX_LABELS];
	int64_t stride[EIN_MAX_INPUTS][EIN_MAX_LABELS];   /* element strides per label */
} ein_plan;

static int letter_id(char c)
{
	if (c >= 'a' && c <= 'z')
		return c - 'a';
	if (c >= 'A' && c <= 'Z')
		return 26 + c - 'A';
	return -1;
}

/* Parse one term into labels; ellipsis dims become ids EIN_LETTERS + k,
 * right-aligned to erank.  rank < 0: output term (ellipsis spans erank). */
static int parse_term(mfs_op_ctx *ctx, const char *s, size_t len, int rank, int erank,
		      ein_term *t, int *ell_len)
{
	int nl = 0, ell = -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '.') {
			if (ell >= 0 || i + 2 >= len + 0 || s[i + 1] != '.' || s[i + 2] != '.')
				return mfs_op_fail(ctx, EINVAL, "bad ellipsis in the equation");
			ell = nl;
			i += 2;
		} else if (letter_id(s[i]) >= 0) {
			nl++;
		} else {
			return mfs_op_fail(ctx, EINVAL, "unexpected character '%c' in the equation", s[i]);
		}
	}
	int el = 0;
	if (ell >= 0)
		el = rank >= 0 ? rank - nl : erank;
	else if (rank >= 0 && rank != nl)
		return mfs_op_fail(ctx, EINVAL, "term '%.*s' has %d labels for an input of rank %d",
				   (int)len, s, nl, rank);
	if (el < 0 || nl + el > MFS_MAX_RANK)
		return mfs_op_fail(ctx, EINVAL, "term '%.*s' does not fit rank %d", (int)len, s, rank);
	*ell_len = el;
	t->n = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '.') {
			for (int k = 0; k < el; k++)
				t->label[t->n++] = EIN_LETTERS + (erank - el) + k;
			i += 2;
		} else {
			t->label[t->n++] = letter_id(s[i]);
		}
	}
	return 0;
}

/* The equation without spaces into buf, and its input terms (pointers
 * into buf); *arrow at "->" or NULL for the implicit form. */
static int ein_split_terms(mfs_op_ctx *ctx, int n_in, char *buf, size_t size,
			   const char *term_s[EIN_MAX_INPUTS], size_t term_l[EIN_MAX_INPUTS],
			   char **arrow)
{
	const char *eq = onnx_attr_string(ctx->node, "equation", NULL);
	size_t n = 0;

	if (!eq)
		return mfs_op_fail(ctx, EINVAL, "attribute equation is required");
	for (const char *c = eq; *c; c++)
		if (*c != ' ') {
			if (n + 1 >= size)
				return mfs_op_fail(ctx, EINVAL, "equation too long");
			buf[n++] = *c;
		}
	buf[n] = 0;
	*arrow = strstr(buf, "->");
	size_t lhs_len = *arrow ? (size_t)(*arrow - buf) : n;
	if (n_in < 1 || n_in > EIN_MAX_INPUTS)
		return mfs_op_fail(ctx, ENOTSUP, "%d inputs (1 to %d supported)", n_in, EIN_MAX_INPUTS);

	int idx = 0;
	size_t start = 0;
	for (size_t i = 0; i <= lhs_len; i++) {
		if (i == lhs_len || buf[i] == ',') {
			if (idx >= n_in)
				return mfs_op_fail(ctx, EINVAL, "equation has more terms than the %d inputs",
						   n_in);
			term_s[idx] = buf + start;
			term_l[idx++] = i - start;
			start = i + 1;
		}
	}
	if (idx != n_in)
		return mfs_op_fail(ctx, EINVAL, "equation has %d terms for %d inputs", idx, n_in);
	return 0;
}

/* Input i's term into p: its labels, each label's extent (ellipsis dims
 * broadcast: extent 1 against n) and input i's stride per label. */
static int ein_input_term(mfs_op_ctx *ctx, ein_plan *p, int i, const char *term, size_t len,
			  int erank)
{
	const mfs_shape *sh = &ctx->in[i]->shape;
	int el, rc;

	if ((rc = parse_term(ctx, term, len, sh->rank, erank, &p->in[i], &el)) < 0)
		return rc;
	int64_t st = 1;
	for (int d = sh->rank - 1; d >= 0; d--) {
		int l = p->in[i].label[d];
		int64_t ext = sh->dims[d];
		bool ell = l >= EIN_LETTERS;
		if (!p->used[l]) {
			p->size[l] = ext;
			p->used[l] = true;
		} else if (ext != p->size[l]) {
			/* Only ellipsis dims broadcast (extent 1 against n). */
			if (!ell || (ext != 1 && p->size[l] != 1))
				return mfs_op_fail(ctx, EINVAL, "dimension %d of input %d has extent "
						   "%lld, the same label elsewhere %lld", d, i,
						   (long long)ext, (long long)p->size[l]);
			if (ext != 1)
				p->size[l] = ext;
		}
		if (ext != 1)
			p->stride[i][l] += st;
		st *= ext;
	}
	return 0;
}

/* The output term: the one after "->" (out: arrow + 2), or the implicit
 * form's (out NULL: the ellipsis dims, then the labels used once, in
 * alphabetical order); in_out marks its labels. */
static int ein_output_term(mfs_op_ctx *ctx, ein_plan *p, const char *out, int erank,
			   bool in_out[EIN_MAX_LABELS])
{
	int rc;

	if (out) {
		int el;
		if ((rc = parse_term(ctx, out, strlen(out), -1, erank, &p->out, &el)) < 0)
			return rc;
		for (int d = 0; d < p->out.n; d++) {
			int l = p->out.label[d];
			if (!p->used[l])
				return mfs_op_fail(ctx, EINVAL, "output label '%c' appears in no input",
						   l < 26 ? 'a' + l : 'A' + l - 26);
			if (in_out[l])
				return mfs_op_fail(ctx, EINVAL, "output repeats a label");
			in_out[l] = true;
		}
		return 0;
	}
	int count[EIN_MAX_LABELS] = { 0 };
	for (int i = 0; i < p->n_in; i++)
		for (int d = 0; d < p->in[i].n; d++)
			count[p->in[i].label[d]]++;
	p->out.n = 0;
	for (int k = 0; k < erank; k++)
		p->out.label[p->out.n++] = EIN_LETTERS + k;
	/* alphabetical: 'A'..'Z' sort before 'a'..'z' */
	for (int c = 0; c < EIN_LETTERS; c++) {
		int l = c < 26 ? 26 + c : c - 26;
		if (count[l] == 1) {
			if (p->out.n >= MFS_MAX_RANK)
				return mfs_op_fail(ctx, EINVAL, "output rank exceeds %d", MFS_MAX_RANK);
			p->out.label[p->out.n++] = l;
		}
	}
	for (int d = 0; d < p->out.n; d++)
		in_out[p->out.label[d]] = true;
	return 0;
}

static int ein_plan_make(mfs_op_ctx *ctx, ein_plan *p)
{
	char buf[512], *arrow = NULL;
	const char *term_s[EIN_MAX_INPUTS];
	size_t term_l[EIN_MAX_INPUTS];
	int rc;

	memset(p, 0, sizeof(*p));
	p->n_in = ctx->n_in;
	if ((rc = ein_split_terms(ctx, p->n_in, buf, sizeof(buf), term_s, term_l, &arrow)) < 0)
		return rc;

	/* The ellipsis rank: inputs' rank minus their letters, the largest. */
	int erank = 0;
	for (int i = 0; i < p->n_in; i++) {
		if (!ctx->in[i])
			return mfs_op_fail(ctx, EINVAL, "input %d is missing", i);
		int nl = 0;
		for (size_t j = 0; j < term_l[i]; j++)
			nl += letter_id(term_s[i][j]) >= 0;
		int el = ctx->in[i]->shape.rank - nl;
		if (memchr(term_s[i], '.', term_l[i]) && el > erank)
			erank = el;
	}
	for (int i = 0; i < p->n_in; i++)
		if ((rc = ein_input_term(ctx, p, i, term_s[i], term_l[i], erank)) < 0)
			return rc;
	/* Ellipsis dims never seen (an input's ellipsis shorter than erank
	 * only leaves broadcast dims): extent 1 where unused. */
	for (int k = 0; k < erank; k++)
		if (!p->used[EIN_LETTERS + k]) {
			p->used[EIN_LETTERS + k] = true;
			p->size[EIN_LETTERS + k] = 1;
		}

	bool in_out[EIN_MAX_LABELS] = { false };
	if ((rc = ein_output_term(ctx, p, arrow ? arrow + 2 : NULL, erank, in_out)) < 0)
		return rc;
	p->n_sum = 0;
	for (int l = 0; l < EIN_MAX_LABELS; l++)
		if (p->used[l] && !in_out[l])
			p->sum_label[p->n_sum++] = l;
	return 0;
}

static int ein_infer(mfs_op_ctx *ctx)
{
	ein_plan p;
	int rc = ein_plan_make(ctx, &p);
	if (rc < 0)
		return rc;
	mfs_dtype dt = ctx->in[0]->dtype;
	for (int i = 0; i < p.n_in; i++) {
		if (ctx->in[i]->dtype != dt)
			return mfs_op_fail(ctx, EINVAL, "inputs must share one type");
		if (ctx->in[i]->layout != MFS_LAYOUT_PLAIN)
			return mfs_op_fail(ctx, EINVAL, "inputs must be in plain layout");
	}
	if (dt != MFS_DT_FLOAT && dt != MFS_DT_DOUBLE && dt != MFS_DT_INT32 && dt != MFS_DT_INT64)
		return mfs_op_fail(ctx, ENOTSUP, "type %s is not supported", mfs_dtype_onnx_name(dt));
	ctx->out[0]->dtype = dt;
	ctx->out[0]->shape.rank = p.out.n;
	for (int d = 0; d < p.out.n; d++)
		ctx->out[0]->shape.dims[d] = p.size[p.out.label[d]];
	return 0;
}

static double ein_get(const mfs_tensor *t, int64_t i)
{
	switch (t->dtype) {
	case MFS_DT_FLOAT: return ((const float *)t->data)[i];
	case MFS_DT_DOUBLE: return ((const double *)t->data)[i];
	case MFS_DT_INT32: return ((const int32_t *)t->data)[i];
	default: return (double)((const int64_t *)t->data)[i];
	}
}

static int ein_run(mfs_op_ctx *ctx)
{
	ein_plan p;
	int rc = ein_plan_make(ctx, &p);
	if (rc < 0)
		return rc;
	mfs_tensor *y = ctx->out[0];
	int64_t n_out = mfs_shape_numel(&y->shape), n_sum = 1;
	bool is_int = y->dtype == MFS_DT_INT32 || y->dtype == MFS_DT_INT64;

	for (int s = 0; s < p.n_sum; s++)
		n_sum *= p.size[p.sum_label[s]];

	#pragma omp parallel for schedule(static) if (n_out * n_sum > 65536)
	for (int64_t o = 0; o < n_out; o++) {
		int64_t base[EIN_MAX_INPUTS] = { 0 }, rem = o;
		for (int d = p.out.n - 1; d >= 0; d--) {
			int l = p.out.label[d];
			int64_t ix = rem % p.size[l];
			rem /= p.size[l];
			for (int i = 0; i < p.n_in; i++)
				base[i] += ix * p.stride[i][l];
		}
		double accd = 0;
		int64_t acci = 0;
		for (int64_t s = 0; s < n_sum; s++) {
			int64_t off[EIN_MAX_INPUTS], r = s;
			for (int i = 0; i < p.n_in; i++)
				off[i] = base[i];
			for (int k = p.n_sum - 1; k >= 0; k--) {
				int l = p.sum_label[k];
				int64_t ix = r % p.size[l];
				r /= p.size[l];
				for (int i = 0; i < p.n_in; i++)
					off[i] += ix * p.stride[i][l];
			}
			if (is_int) {
				int64_t prod = 1;
				for (int i = 0; i < p.n_in; i++)
					prod *= (int64_t)ein_get(ctx->in[i], off[i]);
				acci += prod;
			} else {
				double prod = 1;
				for (int i = 0; i < p.n_in; i++)
					prod *= ein_get(ctx->in[i], off[i]);
				accd += prod;
			}
		}
		switch (y->dtype) {
		case MFS_DT_FLOAT: ((float *)y->data)[o] = (float)accd; break;
		case MFS_DT_DOUBLE: ((double *)y->data)[o] = accd; break;
		case MFS_DT_INT32: ((int32_t *)y->data)[o] = (int32_t)acci; break;
		default: ((int64_t *)y->data)[o] = acci; break;
		}
	}
	return 0;
}

MFS_OP(Einsum, 12, .infer = ein_infer, .run = ein_run);

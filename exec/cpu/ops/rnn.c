/* RNN, GRU, LSTM (7, 14): the ONNX recurrent layers, FP32.
 *
 * X [seq, batch, input] (layout 1, opset 14: [batch, seq, input]);
 * W [dirs, G*hidden, input], R [dirs, G*hidden, hidden], optional
 * B [dirs, 2*G*hidden] (input then recurrent biases), sequence_lens
 * [batch] (int32), initial_h [dirs, batch, hidden] (layout 1: [batch,
 * dirs, hidden]); LSTM also initial_c and peepholes P [dirs, 3*hidden]
 * (i, o, f).  G = 1 (RNN), 3 (GRU: z, r, h), 4 (LSTM: i, o, f, c).
 * Outputs (each optional): Y [seq, dirs, batch, hidden] (layout 1: [batch,
 * seq, dirs, hidden]), Y_h, and for LSTM Y_c, shaped like initial_h.
 * Attributes: hidden_size, direction (forward, reverse, bidirectional),
 * activations / activation_alpha / activation_beta (every function the
 * spec lists), clip, GRU's linear_before_reset, LSTM's input_forget,
 * layout.
 *
 * Per direction, the input projection of every step is one mfs_sgemm
 * (X * W^T for all steps at once); each step then multiplies the hidden
 * state by R^T (one sgemm over the batch) and applies the gates.  Steps
 * past a batch entry's sequence length leave its state alone and write
 * zeros to Y; the reverse direction starts at each entry's own last step.
 * Scratch buffers live in the node's state and grow only when needed.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>


#include "dense_util.h"

enum rnn_kind { K_RNN, K_GRU, K_LSTM };
enum act_fn { A_RELU, A_TANH, A_SIGMOID, A_AFFINE, A_LEAKY, A_THRESH, A_STANH,
	      A_HSIG, A_ELU, A_SOFTSIGN, A_SOFTPLUS };

typedef struct rnn_act {
	enum act_fn fn;
	float a, b;
} rnn_act;

typedef struct rnn_params {
	enum rnn_kind kind;
	int g;                           /* gates */
	int64_t seq, batch, in, hid;
	int dirs;
	bool reverse;                    /* direction = reverse */
	bool layout1;
	bool has_clip;
	float clip;
	bool lbr, input_forget;
	rnn_act act[2][3];
} rnn_params;

typedef struct rnn_state {
	float *buf;
	size_t n;
} rnn_state;

static const struct {
	const char *name;
	enum act_fn fn;
	int n_alpha, n_beta;
	float da, db;
} act_table[] = {
	{ "Relu", A_RELU, 0, 0, 0, 0 },          { "Tanh", A_TANH, 0, 0, 0, 0 },
	{ "Sigmoid", A_SIGMOID, 0, 0, 0, 0 },    { "Affine", A_AFFINE, 1, 1, 1.0f, 0.0f },
	{ "LeakyRelu", A_LEAKY, 1, 0, 0.01f, 0 }, { "ThresholdedRelu", A_THRESH, 1, 0, 1.0f, 0 },
	{ "ScaledTanh", A_STANH, 1, 1, 1.0f, 1.0f }, { "HardSigmoid", A_HSIG, 1, 1, 0.2f, 0.5f },
	{ "Elu", A_ELU, 1, 0, 1.0f, 0 },         { "Softsign", A_SOFTSIGN, 0, 0, 0, 0 },
	{ "Softplus", A_SOFTPLUS, 0, 0, 0, 0 },
};

static float act_eval(const rnn_act *a, float x)
{
	switch (a->fn) {
	case A_RELU: return x > 0 ? x : 0;
	case A_TANH: return tanhf(x);
	case A_SIGMOID: return 1.0f / (1.0f + expf(-x));
	case A_AFFINE: return a->a * x + a->b;
	case A_LEAKY: return x >= 0 ? x : a->a * x;
	case A_THRESH: return x > a->a ? x : 0;
	case A_STANH: return a->a * tanhf(a->b * x);
	case A_HSIG: { float v = a->a * x + a->b; return v < 0 ? 0 : v > 1 ? 1 : v; }
	case A_ELU: return x >= 0 ? x : a->a * (expf(x) - 1);
	case A_SOFTSIGN: return x / (1 + fabsf(x));
	default: return log1pf(expf(x));
	}
}

static int rnn_acts(mfs_op_ctx *ctx, rnn_params *p)
{
	static const char *const defaults[3][3] = {
		{ "Tanh" }, { "Sigmoid", "Tanh" }, { "Sigmoid", "Tanh", "Tanh" },
	};
	int nf = p->kind == K_RNN ? 1 : p->kind == K_GRU ? 2 : 3;
	const onnx_attr *names = onnx_node_attr(ctx->node, "activations");
	const onnx_attr *al = onnx_node_attr(ctx->node, "activation_alpha");
	const onnx_attr *be = onnx_node_attr(ctx->node, "activation_beta");
	size_t ia = 0, ib = 0;

	if (names && (names->type != ONNX_ATTR_STRINGS || names->n_strings != (size_t)(nf * p->dirs)))
		return mfs_op_fail(ctx, EINVAL, "activations must list %d functions", nf * p->dirs);
	for (int d = 0; d < p->dirs; d++)
		for (int f = 0; f < nf; f++) {
			const char *nm = names ? names->strings[d * nf + f] : defaults[p->kind][f];
			size_t k;
			for (k = 0; k < sizeof(act_table) / sizeof(act_table[0]); k++)
				if (!strcmp(act_table[k].name, nm))
					break;
			if (k == sizeof(act_table) / sizeof(act_table[0]))
				return mfs_op_fail(ctx, EINVAL, "activation '%s' is unknown", nm);
			rnn_act *a = &p->act[d][f];
			a->fn = act_table[k].fn;
			a->a = act_table[k].da;
			a->b = act_table[k].db;
			if (act_table[k].n_alpha && al && al->type == ONNX_ATTR_FLOATS && ia < al->n_floats)
				a->a = al->floats[ia++];
			if (act_table[k].n_beta && be && be->type == ONNX_ATTR_FLOATS && ib < be->n_floats)
				a->b = be->floats[ib++];
		}
	return 0;
}

static const mfs_tensor *opt(mfs_op_ctx *ctx, int i)
{
	return i < ctx->n_in ? ctx->in[i] : NULL;
}

static bool dims_are(const mfs_tensor *t, int rank, int64_t d0, int64_t d1, int64_t d2)
{
	const int64_t d[3] = { d0, d1, d2 };
	if (t->shape.rank != rank)
		return false;
	for (int i = 0; i < rank; i++)
		if (t->shape.dims[i] != d[i])
			return false;
	return true;
}

static int rnn_params_get(mfs_op_ctx *ctx, enum rnn_kind kind, rnn_params *p)
{
	const mfs_tensor *x = ctx->in[0], *w = opt(ctx, 1), *r = opt(ctx, 2);
	int rc;

	memset(p, 0, sizeof(*p));
	p->kind = kind;
	p->g = kind == K_RNN ? 1 : kind == K_GRU ? 3 : 4;
	if (!x || !w || !r)
		return mfs_op_fail(ctx, EINVAL, "needs inputs X, W and R");
	for (int i = 0; i < ctx->n_in; i++) {
		const mfs_tensor *t = ctx->in[i];
		if (!t)
			continue;
		if (t->layout != MFS_LAYOUT_PLAIN)
			return mfs_op_fail(ctx, EINVAL, "inputs must be in plain layout");
		if (t->dtype != (i == 4 ? MFS_DT_INT32 : MFS_DT_FLOAT))
			return mfs_op_fail(ctx, i == 4 ? EINVAL : ENOTSUP, "input %d has type %s (%s expected)",
					   i, mfs_dtype_onnx_name(t->dtype), i == 4 ? "int32" : "float");
	}
	const char *dir = onnx_attr_string(ctx->node, "direction", "forward");
	if (!strcmp(dir, "bidirectional"))
		p->dirs = 2;
	else if (!strcmp(dir, "forward") || !strcmp(dir, "reverse"))
		p->dirs = 1;
	else
		return mfs_op_fail(ctx, EINVAL, "direction '%s' is not forward, reverse or bidirectional", dir);
	p->reverse = !strcmp(dir, "reverse");
	int64_t layout = onnx_attr_int(ctx->node, "layout", 0);
	if (layout != 0 && (layout != 1 || ctx->opset < 14))
		return mfs_op_fail(ctx, EINVAL, "layout %lld is not supported at opset %lld",
				   (long long)layout, (long long)ctx->opset);
	p->layout1 = layout == 1;
	if (x->shape.rank != 3)
		return mfs_op_fail(ctx, EINVAL, "X must have rank 3");
	p->seq = x->shape.dims[p->layout1 ? 1 : 0];
	p->batch = x->shape.dims[p->layout1 ? 0 : 1];
	p->in = x->shape.dims[2];
	p->hid = onnx_attr_int(ctx->node, "hidden_size", w->shape.rank == 3 ? w->shape.dims[1] / p->g : 0);
	if (p->hid < 1 || p->hid > (int64_t)1 << 24)
		return mfs_op_fail(ctx, EINVAL, "hidden_size %lld is not valid", (long long)p->hid);
	int64_t gh = p->g * p->hid;
	if (!dims_are(w, 3, p->dirs, gh, p->in))
		return mfs_op_fail(ctx, EINVAL, "W must have shape [%d,%lld,%lld]", p->dirs,
				   (long long)gh, (long long)p->in);
	if (!dims_are(r, 3, p->dirs, gh, p->hid))
		return mfs_op_fail(ctx, EINVAL, "R must have shape [%d,%lld,%lld]", p->dirs,
				   (long long)gh, (long long)p->hid);
	const mfs_tensor *b = opt(ctx, 3), *sl = opt(ctx, 4), *h0 = opt(ctx, 5);
	if (b && !dims_are(b, 2, p->dirs, 2 * gh, 0))
		return mfs_op_fail(ctx, EINVAL, "B must have shape [%d,%lld]", p->dirs, (long long)(2 * gh));
	if (sl && !dims_are(sl, 1, p->batch, 0, 0))
		return mfs_op_fail(ctx, EINVAL, "sequence_lens must have shape [%lld]", (long long)p->batch);
	bool hok = h0 && (p->layout1 ? dims_are(h0, 3, p->batch, p->dirs, p->hid)
				     : dims_are(h0, 3, p->dirs, p->batch, p->hid));
	if (h0 && !hok)
		return mfs_op_fail(ctx, EINVAL, "initial_h has the wrong shape");
	if (kind == K_LSTM) {
		const mfs_tensor *c0 = opt(ctx, 6), *pp = opt(ctx, 7);
		bool cok = c0 && (p->layout1 ? dims_are(c0, 3, p->batch, p->dirs, p->hid)
					     : dims_are(c0, 3, p->dirs, p->batch, p->hid));
		if (c0 && !cok)
			return mfs_op_fail(ctx, EINVAL, "initial_c has the wrong shape");
		if (pp && !dims_are(pp, 2, p->dirs, 3 * p->hid, 0))
			return mfs_op_fail(ctx, EINVAL, "P must have shape [%d,%lld]", p->dirs,
					   (long long)(3 * p->hid));
		p->input_forget = onnx_attr_int(ctx->node, "input_forget", 0) != 0;
	}
	if (kind == K_GRU)
		p->lbr = onnx_attr_int(ctx->node, "linear_before_reset", 0) != 0;
	const onnx_attr *cl = onnx_node_attr(ctx->node, "clip");
	if (cl) {
		p->has_clip = true;
		p->clip = cl->f;
		if (!(p->clip > 0))
			return mfs_op_fail(ctx, EINVAL, "clip must be positive");
	}
	if ((rc = rnn_acts(ctx, p)) < 0)
		return rc;
	if (p->seq * p->batch > (int64_t)1 << 31 || p->in > (int64_t)1 << 30)
		return mfs_op_fail(ctx, EINVAL, "X is too large");
	return 0;
}

static int rnn_infer_kind(mfs_op_ctx *ctx, enum rnn_kind kind)
{
	rnn_params p;
	int rc = rnn_params_get(ctx, kind, &p);
	if (rc < 0)
		return rc;
	if (ctx->n_out > (kind == K_LSTM ? 3 : 2))
		return mfs_op_fail(ctx, EINVAL, "too many outputs (%d)", ctx->n_out);
	for (int i = 0; i < ctx->n_out; i++) {
		mfs_tensor *o = ctx->out[i];
		if (!o)
			continue;
		o->dtype = MFS_DT_FLOAT;
		if (i == 0)
			o->shape = p.layout1 ? (mfs_shape){ 4, { p.batch, p.seq, p.dirs, p.hid } }
					     : (mfs_shape){ 4, { p.seq, p.dirs, p.batch, p.hid } };
		else
			o->shape = p.layout1 ? (mfs_shape){ 3, { p.batch, p.dirs, p.hid } }
					     : (mfs_shape){ 3, { p.dirs, p.batch, p.hid } };
	}
	return 0;
}

static float clipv(const rnn_params *p, float v)
{
	if (!p->has_clip)
		return v;
	return v < -p->clip ? -p->clip : v > p->clip ? p->clip : v;
}

static void rnn_release(void *state)
{
	rnn_state *s = state;
	if (s)
		free(s->buf);
	free(s);
}

/* One direction's slices of W, R, B and P. */
typedef struct rnn_dir {
	const float *w, *r;         /* W [gh, in], R [gh, H] */
	const float *wb, *rb;       /* Wb, Rb [gh]; NULL without B */
	const float *peep;          /* LSTM's P [3H]; NULL without */
	const rnn_act *act;
	bool rev;
} rnn_dir;

/* The scratch of one run (rnn_state's buffer, grown to need floats). */
static int rnn_scratch(mfs_op_ctx *ctx, size_t need, float **buf)
{
	rnn_state *s = *ctx->state;
	if (!s) {
		if (!(s = calloc(1, sizeof(*s))))
			return mfs_op_fail(ctx, ENOMEM, "out of memory");
		*ctx->state = s;
	}
	if (s->n < need) {
		free(s->buf);
		s->n = 0;
		if (!(s->buf = malloc(need * sizeof(float))))
			return mfs_op_fail(ctx, ENOMEM, "out of memory for %zu floats", need);
		s->n = need;
	}
	*buf = s->buf;
	return 0;
}

/* X through W plus the biases, for every step at once: xw [T*B, gh],
 * rows in X's own order: (t, b) or, layout 1, (b, t). */
static void rnn_project_x(const rnn_params *p, enum rnn_kind kind, const mfs_tensor *x,
			  const rnn_dir *dr, float *xw)
{
	int64_t H = p->hid, B = p->batch, T = p->seq, gh = p->g * H;
	const float *wb = dr->wb, *rb = dr->rb;

	if (T * B > 0 && p->in > 0)
		mfs_sgemm(false, true, T * B, gh, p->in, 1.0f, x->data, p->in, dr->w, p->in, 0.0f,
			  xw, gh);
	else
		memset(xw, 0, sizeof(float) * (size_t)(T * B * gh));
	for (int64_t row = 0; wb && row < T * B; row++)
		for (int64_t j = 0; j < gh; j++) {
			/* GRU's recurrent h-gate bias belongs inside the reset */
			bool grh = kind == K_GRU && j >= 2 * H;
			xw[row * gh + j] += wb[j] + (grh ? 0.0f : rb[j]);
		}
}

/* Direction d's initial h and c [B, H] (zeros where not given). */
static void rnn_initial_state(const rnn_params *p, int d, const mfs_tensor *h0,
			      const mfs_tensor *c0, float *h, float *c)
{
	int64_t H = p->hid, B = p->batch;

	for (int64_t bi = 0; bi < B; bi++)
		for (int64_t k = 0; k < H; k++) {
			int64_t hi = p->layout1 ? (bi * p->dirs + d) * H + k : (d * B + bi) * H + k;
			h[bi * H + k] = h0 ? ((const float *)h0->data)[hi] : 0.0f;
			c[bi * H + k] = c0 ? ((const float *)c0->data)[hi] : 0.0f;
		}
}

/* One step of one batch row: xr, hrr its rows of xw and h R^T; hb, cb
 * its state, hnb, cnb the new state; rh scratch [H] (GRU). */
static inline void rnn_cell(const rnn_params *p, const rnn_dir *dr, const float *xr,
			    const float *hrr, float *hnb)
{
	const rnn_act *act = dr->act;
	int64_t H = p->hid;

	for (int64_t k = 0; k < H; k++)
		hnb[k] = act_eval(&act[0], clipv(p, xr[k] + hrr[k]));
}

static inline void gru_cell(const rnn_params *p, const rnn_dir *dr, const float *xr,
			    const float *hrr, const float *hb, float *rh, float *hnb)
{
	const rnn_act *act = dr->act;
	const float *rb = dr->rb, *rd = dr->r;
	int64_t H = p->hid;

	/* r first: the h gate needs it for every k */
	for (int64_t k = 0; k < H; k++)
		rh[k] = act_eval(&act[0], clipv(p, xr[H + k] + hrr[H + k]));
	for (int64_t k = 0; k < H; k++) {
		float z = act_eval(&act[0], clipv(p, xr[k] + hrr[k]));
		float rbh = rb ? rb[2 * H + k] : 0.0f, pre;
		if (p->lbr) {
			pre = xr[2 * H + k] + rh[k] * (hrr[2 * H + k] + rbh);
		} else {
			const float *rrow = rd + (2 * H + k) * H;
			float sum = 0;
			for (int64_t q = 0; q < H; q++)
				sum += rh[q] * hb[q] * rrow[q];
			pre = xr[2 * H + k] + sum + rbh;
		}
		float hh = act_eval(&act[1], clipv(p, pre));
		hnb[k] = (1 - z) * hh + z * hb[k];
	}
}

static inline void lstm_cell(const rnn_params *p, const rnn_dir *dr, const float *xr,
			     const float *hrr, const float *cb, float *hnb, float *cnb)
{
	const rnn_act *act = dr->act;
	const float *pd = dr->peep;
	int64_t H = p->hid;

	for (int64_t k = 0; k < H; k++) {
		float ci = cb[k];
		float ig = act_eval(&act[0], clipv(p, xr[k] + hrr[k] +
						    (pd ? pd[k] * ci : 0)));
		float fg = p->input_forget ? 1 - ig
			: act_eval(&act[0], clipv(p, xr[2 * H + k] + hrr[2 * H + k] +
					      (pd ? pd[2 * H + k] * ci : 0)));
		float cc = act_eval(&act[1], clipv(p, xr[3 * H + k] + hrr[3 * H + k]));
		float cnew = fg * ci + ig * cc;
		float og = act_eval(&act[0], clipv(p, xr[H + k] + hrr[H + k] +
						    (pd ? pd[H + k] * cnew : 0)));
		cnb[k] = cnew;
		hnb[k] = og * act_eval(&act[2], cnew);
	}
}

/* Direction d through every step: h, c [B, H] its state (initial on
 * entry, final on return), xw its projected X; hr, hn, cn [B, ...] and
 * rh scratch; Y's rows written as they come. */
static void rnn_steps(const rnn_params *p, enum rnn_kind kind, int d, const rnn_dir *dr,
		      const int32_t *lens, const float *xw, float *hr, float *h, float *c,
		      float *hn, float *cn, float *rh, mfs_tensor *y)
{
	int64_t H = p->hid, B = p->batch, T = p->seq, gh = p->g * H;

	for (int64_t step = 0; step < T; step++) {
		mfs_sgemm(false, true, B, gh, H, 1.0f, h, H, dr->r, H, 0.0f, hr, gh);
		for (int64_t bi = 0; bi < B; bi++) {
			int64_t len = lens ? lens[bi] : T;
			if (step >= len)
				continue;
			int64_t t = dr->rev ? len - 1 - step : step;
			const float *xr = xw + (p->layout1 ? bi * T + t : t * B + bi) * gh;
			const float *hrr = hr + bi * gh;
			float *hb = h + bi * H, *cb = c + bi * H;
			float *hnb = hn + bi * H, *cnb = cn + bi * H;
			if (kind == K_RNN)
				rnn_cell(p, dr, xr, hrr, hnb);
			else if (kind == K_GRU)
				gru_cell(p, dr, xr, hrr, hb, rh, hnb);
			else
				lstm_cell(p, dr, xr, hrr, cb, hnb, cnb);
			memcpy(hb, hnb, sizeof(float) * (size_t)H);
			if (kind == K_LSTM)
				memcpy(cb, cnb, sizeof(float) * (size_t)H);
			if (y) {
				int64_t yi = p->layout1 ? ((bi * T + t) * p->dirs + d) * H
							: ((t * p->dirs + d) * B + bi) * H;
				memcpy((float *)y->data + yi, hb, sizeof(float) * (size_t)H);
			}
		}
	}
}

static int rnn_run_kind(mfs_op_ctx *ctx, enum rnn_kind kind)
{
	rnn_params p;
	int rc = rnn_params_get(ctx, kind, &p);
	if (rc < 0)
		return rc;
	const mfs_tensor *x = ctx->in[0], *w = ctx->in[1], *r = ctx->in[2];
	const mfs_tensor *b = opt(ctx, 3), *sl = opt(ctx, 4), *h0 = opt(ctx, 5);
	const mfs_tensor *c0 = kind == K_LSTM ? opt(ctx, 6) : NULL;
	const mfs_tensor *pp = kind == K_LSTM ? opt(ctx, 7) : NULL;
	mfs_tensor *y = ctx->n_out > 0 ? ctx->out[0] : NULL;
	mfs_tensor *yh = ctx->n_out > 1 ? ctx->out[1] : NULL;
	mfs_tensor *yc = ctx->n_out > 2 ? ctx->out[2] : NULL;
	int64_t H = p.hid, B = p.batch, T = p.seq, gh = p.g * H;

	/* scratch: xw [T*B, gh], hr [B, gh], h, c, hn, cn [B, H] each, rh [H] */
	size_t need = (size_t)(T * B * gh + B * gh + 4 * B * H + H + 1);
	float *xw = NULL;
	if ((rc = rnn_scratch(ctx, need, &xw)) < 0)
		return rc;
	float *hr = xw + T * B * gh, *h = hr + B * gh, *c = h + B * H;
	float *hn = c + B * H, *cn = hn + B * H, *rh = cn + B * H;

	if (y && y->nbytes)
		memset(y->data, 0, y->nbytes);
	const int32_t *lens = sl ? sl->data : NULL;
	for (int64_t bi = 0; lens && bi < B; bi++)
		if (lens[bi] < 0 || lens[bi] > T)
			return mfs_op_fail(ctx, EINVAL, "sequence_lens[%lld] = %d is outside [0, %lld]",
					   (long long)bi, lens[bi], (long long)T);

	for (int d = 0; d < p.dirs; d++) {
		rnn_dir dr = {
			.w = (const float *)w->data + d * gh * p.in,
			.r = (const float *)r->data + d * gh * H,
			.wb = b ? (const float *)b->data + d * 2 * gh : NULL,
			.peep = pp ? (const float *)pp->data + d * 3 * H : NULL,
			.act = p.act[d],
			.rev = p.reverse || d == 1,
		};
		dr.rb = dr.wb ? dr.wb + gh : NULL;
		rnn_project_x(&p, kind, x, &dr, xw);
		rnn_initial_state(&p, d, h0, c0, h, c);
		rnn_steps(&p, kind, d, &dr, lens, xw, hr, h, c, hn, cn, rh, y);
		for (int64_t bi = 0; bi < B; bi++) {
			int64_t oi = p.layout1 ? (bi * p.dirs + d) * H : (d * B + bi) * H;
			if (yh)
				memcpy((float *)yh->data + oi, h + bi * H, sizeof(float) * (size_t)H);
			if (yc)
				memcpy((float *)yc->data + oi, c + bi * H, sizeof(float) * (size_t)H);
		}
	}
	return 0;
}

static int rnn_infer(mfs_op_ctx *ctx) { return rnn_infer_kind(ctx, K_RNN); }
static int rnn_run(mfs_op_ctx *ctx) { return rnn_run_kind(ctx, K_RNN); }
static int gru_infer(mfs_op_ctx *ctx) { return rnn_infer_kind(ctx, K_GRU); }
static int gru_run(mfs_op_ctx *ctx) { return rnn_run_kind(ctx, K_GRU); }
static int lstm_infer(mfs_op_ctx *ctx) { return rnn_infer_kind(ctx, K_LSTM); }
static int lstm_run(mfs_op_ctx *ctx) { return rnn_run_kind(ctx, K_LSTM); }

MFS_OP(RNN, 7, .flags = MFS_OP_HALF_VIA_FLOAT, .infer = rnn_infer, .run = rnn_run, .release = rnn_release);
MFS_OP(RNN, 14, .flags = MFS_OP_HALF_VIA_FLOAT, .infer = rnn_infer, .run = rnn_run, .release = rnn_release);
MFS_OP(GRU, 7, .flags = MFS_OP_HALF_VIA_FLOAT, .infer = gru_infer, .run = gru_run, .release = rnn_release);
MFS_OP(GRU, 14, .flags = MFS_OP_HALF_VIA_FLOAT, .infer = gru_infer, .run = gru_run, .release = rnn_release);
MFS_OP(LSTM, 7, .flags = MFS_OP_HALF_VIA_FLOAT, .infer = lstm_infer, .run = lstm_run, .release = rnn_release);
MFS_OP(LSTM, 14, .flags = MFS_OP_HALF_VIA_FLOAT, .infer = lstm_infer, .run = lstm_run, .release = rnn_release);

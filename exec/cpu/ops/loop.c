/* Loop: runs its body while the trip count M and the condition allow,
 * passing N loop-carried values from one iteration to the next and
 * stacking K scan outputs along a new first axis (opsets 1-19: one line;
 * 11 and 13 changed only shape inference and types, 16 added optional
 * types).  M and cond are optional: without M the loop runs until the
 * body's condition turns false.  Carried values may be sequences and
 * optionals (passed on as they are); a scan output must be a tensor.
 * The body reads the enclosing graph's values by name (exec/runtime/subgraph.h). */
#include <stdlib.h>
#include <string.h>

#include "graph.h"   /* engine.h: mfs_engine_max_tensor_bytes, _max_iterations */
#include "subgraph.h"

/* One scan output's rows, appended iteration by iteration. */
typedef struct scan_acc {
	char *bytes;
	size_t len, cap;
	mfs_dtype dtype;
	mfs_shape row;         /* the first iteration's shape */
} scan_acc;

typedef struct loop_state {
	mfs_body_exec *body;
	int n_args, n_outs;
	mfs_tensor *args;      /* iter_num, cond, carried */
	mfs_tensor *outs;      /* cond, carried, scan rows */
	mfs_tensor *carried;   /* owned after the first iteration */
	scan_acc *acc;
	int64_t iter;
	uint8_t cond;
} loop_state;

static void loop_release(void *p)
{
	loop_state *s = p;
	if (!s)
		return;
	mfs_body_exec_free(s->body);
	for (int k = 0; s->acc && k < s->n_outs; k++)
		free(s->acc[k].bytes);
	free(s->args);
	free(s->outs);
	free(s->carried);
	free(s->acc);
	free(s);
}

/* N carried values; the body's outputs beyond them are scan outputs. */
static int loop_check(mfs_op_ctx *ctx, const mfs_graph **body, int *n, int *k)
{
	*body = mfs_op_body(ctx, "body");
	*n = ctx->node->n_inputs - 2;
	if (!*body)
		return mfs_op_fail(ctx, EINVAL, "needs the graph attribute body");
	if (*n < 0)
		return mfs_op_fail(ctx, EINVAL, "takes M and cond (each may be \"\") before the carried values");
	if (mfs_body_n_inputs(*body) != *n + 2)
		return mfs_op_fail(ctx, EINVAL, "body takes %d inputs, expected %d (iteration, condition, %d carried)",
				   mfs_body_n_inputs(*body), *n + 2, *n);
	*k = mfs_body_n_outputs(*body) - 1 - *n;
	if (*k < 0)
		return mfs_op_fail(ctx, EINVAL, "body gives %d outputs, expected at least %d (condition, %d carried)",
				   mfs_body_n_outputs(*body), *n + 1, *n);
	if (ctx->node->n_outputs > *n + *k)
		return mfs_op_fail(ctx, EINVAL, "has %d outputs, the body gives %d carried and %d scan outputs",
				   ctx->node->n_outputs, *n, *k);
	return 0;
}

/* Static shapes: carried values whose body output has the fixed shape of
 * the initial value (then the final one has it too); scan outputs need
 * the trip count, so anything else waits for the run. */
static int loop_infer(mfs_op_ctx *ctx)
{
	const mfs_graph *body;
	int n, k, rc = loop_check(ctx, &body, &n, &k);

	if (rc)
		return rc;
	if (ctx->node->n_outputs > n)
		return MFS_SHAPE_DEPENDS_ON_DATA;
	for (int j = 0; j < n; j++) {
		const mfs_io_desc *d = mfs_body_output(body, 1 + j);
		const mfs_tensor *v = ctx->in[2 + j];
		if (!v)
			return mfs_op_fail(ctx, EINVAL, "carried value %d is omitted", j);
		if (d->dtype != v->dtype || d->rank != v->shape.rank)
			return MFS_SHAPE_DEPENDS_ON_DATA;
		for (int r = 0; r < d->rank; r++)
			if (d->dims[r] != v->shape.dims[r])
				return MFS_SHAPE_DEPENDS_ON_DATA;
	}
	for (int j = 0; j < n; j++)
		if (ctx->out[j]) {
			ctx->out[j]->dtype = ctx->in[2 + j]->dtype;
			ctx->out[j]->shape = ctx->in[2 + j]->shape;
		}
	return 0;
}

static int loop_state_new(mfs_op_ctx *ctx, const mfs_graph *body, int n,
			  loop_state **out)
{
	loop_state *s = calloc(1, sizeof(*s));
	mfs_shape scalar = { .rank = 0 };
	int rc;

	if (!s)
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	s->n_args = n + 2;
	s->n_outs = mfs_body_n_outputs(body);
	s->args = calloc((size_t)s->n_args, sizeof(*s->args));
	s->outs = calloc((size_t)s->n_outs, sizeof(*s->outs));
	s->carried = calloc((size_t)n + 1, sizeof(*s->carried));
	s->acc = calloc((size_t)s->n_outs, sizeof(*s->acc));
	if (!s->args || !s->outs || !s->carried || !s->acc) {
		loop_release(s);
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	}
	s->args[0] = (mfs_tensor){ .dtype = MFS_DT_INT64, .shape = scalar,
				   .data = &s->iter, .nbytes = sizeof(s->iter) };
	s->args[1] = (mfs_tensor){ .dtype = MFS_DT_BOOL, .shape = scalar,
				   .data = &s->cond, .nbytes = 1 };
	if ((rc = mfs_body_exec_new(body, &s->body, ctx->err))) {
		loop_release(s);
		return rc;
	}
	*out = s;
	return 0;
}

static int append_row(mfs_op_ctx *ctx, scan_acc *a, const mfs_tensor *t,
		      int k, int64_t iter)
{
	if (t->kind != MFS_KIND_TENSOR)   /* ONNX stacks tensors only */
		return mfs_op_fail(ctx, EINVAL, "scan output %d is a %s, not a tensor",
				   k, mfs_kind_name(t->kind));
	if (iter == 0) {
		a->dtype = t->dtype;
		a->row = t->shape;
		a->len = 0;
		if (t->shape.rank >= MFS_MAX_RANK)
			return mfs_op_fail(ctx, ENOTSUP, "scan output %d has rank %d: stacked it exceeds %d",
					   k, t->shape.rank, MFS_MAX_RANK);
	} else if (t->dtype != a->dtype || !mfs_shape_equal(&t->shape, &a->row)) {
		char x[160], y[160];
		return mfs_op_fail(ctx, EINVAL, "scan output %d is %s %s in iteration %lld, %s %s before",
				   k, mfs_dtype_onnx_name(t->dtype),
				   mfs_shape_format(&t->shape, x, sizeof(x)), (long long)iter,
				   mfs_dtype_onnx_name(a->dtype),
				   mfs_shape_format(&a->row, y, sizeof(y)));
	}
	if (a->len + t->nbytes > mfs_engine_max_tensor_bytes())
		return mfs_op_fail(ctx, EFBIG, "scan output %d grows past the %zu-byte limit",
				   k, mfs_engine_max_tensor_bytes());
	if (a->len + t->nbytes > a->cap) {
		size_t cap = a->cap ? a->cap : 256;
		char *b;
		while (cap < a->len + t->nbytes)
			cap *= 2;
		if (!(b = realloc(a->bytes, cap)))
			return mfs_op_fail(ctx, ENOMEM, "out of memory");
		a->bytes = b;
		a->cap = cap;
	}
	if (t->nbytes)
		memcpy(a->bytes + a->len, t->data, t->nbytes);
	a->len += t->nbytes;
	return 0;
}

/* Scan output k from its rows; after no iteration, an empty tensor of
 * the type and rank the body declares. */
static int stack_rows(mfs_op_ctx *ctx, const mfs_graph *body, int n, int k,
		      int64_t iters, mfs_tensor *dst)
{
	const scan_acc *a = &((loop_state *)*ctx->state)->acc[k];
	mfs_shape sh = { .rank = 1, .dims = { iters } };
	mfs_dtype dt = a->dtype;
	int rc;

	if (iters > 0) {
		sh.rank = a->row.rank + 1;
		memcpy(sh.dims + 1, a->row.dims, sizeof(int64_t) * (size_t)a->row.rank);
	} else {
		const mfs_io_desc *d = mfs_body_output(body, 1 + n + k);
		dt = d->dtype;
		if (!mfs_dtype_size(dt))
			return mfs_op_fail(ctx, ENOTSUP, "scan output %d: no iteration ran and the body does not declare its type",
					   k);
		if (d->rank >= 0 && d->rank < MFS_MAX_RANK) {
			sh.rank = d->rank + 1;
			for (int r = 0; r < d->rank; r++)
				sh.dims[1 + r] = d->dims[r] > 0 ? d->dims[r] : 0;
		}
	}
	if ((rc = mfs_tensor_alloc(dst, dt, &sh, ctx->err)))
		return rc;
	if (iters > 0 && a->len)
		memcpy(dst->data, a->bytes, a->len);
	return 0;
}

static int read_scalar_inputs(mfs_op_ctx *ctx, int64_t *trips, uint8_t *cond)
{
	const mfs_tensor *m = ctx->in[0], *c = ctx->in[1];

	*trips = INT64_MAX;
	*cond = 1;
	if (m) {
		if (m->dtype != MFS_DT_INT64 || mfs_shape_numel(&m->shape) != 1)
			return mfs_op_fail(ctx, EINVAL, "M must be one int64, got %s of %lld elements",
					   mfs_dtype_onnx_name(m->dtype),
					   (long long)mfs_shape_numel(&m->shape));
		*trips = ((const int64_t *)m->data)[0];
	}
	if (c) {
		if (c->dtype != MFS_DT_BOOL || mfs_shape_numel(&c->shape) != 1)
			return mfs_op_fail(ctx, EINVAL, "cond must be one bool, got %s of %lld elements",
					   mfs_dtype_onnx_name(c->dtype),
					   (long long)mfs_shape_numel(&c->shape));
		*cond = ((const uint8_t *)c->data)[0] != 0;
	}
	return 0;
}

/* One iteration: run the body, take its condition and carried values,
 * append its scan rows. */
static int iterate(mfs_op_ctx *ctx, loop_state *s, int n, int k, bool owned)
{
	const mfs_tensor *c;
	int rc;

	for (int j = 0; j < n; j++)
		s->args[2 + j] = s->carried[j];
	if ((rc = mfs_body_exec_run(s->body, ctx, s->args, s->outs))) {
		mfs_error_prefix(ctx->err, "iteration %lld: ", (long long)s->iter);
		return rc;
	}
	c = &s->outs[0];
	if (c->dtype != MFS_DT_BOOL || mfs_shape_numel(&c->shape) != 1)
		rc = mfs_op_fail(ctx, EINVAL, "the body's condition output must be one bool, got %s",
				 mfs_dtype_onnx_name(c->dtype));
	else
		s->cond = ((const uint8_t *)c->data)[0] != 0;
	for (int q = 0; !rc && q < k; q++)
		rc = append_row(ctx, &s->acc[q], &s->outs[1 + n + q], q, s->iter);
	for (int j = 0; j < n; j++) {
		if (owned)
			mfs_tensor_release(&s->carried[j]);
		s->carried[j] = s->outs[1 + j];
		memset(&s->outs[1 + j], 0, sizeof(s->outs[1 + j]));
	}
	mfs_tensor_release(&s->outs[0]);
	for (int q = 0; q < k; q++)
		mfs_tensor_release(&s->outs[1 + n + q]);
	return rc;
}

static int loop_run(mfs_op_ctx *ctx)
{
	const mfs_graph *body;
	loop_state *s = *ctx->state;
	int n, k, rc = loop_check(ctx, &body, &n, &k);
	int64_t trips;
	bool owned = false;

	if (rc)
		return rc;
	if (!s) {
		if ((rc = loop_state_new(ctx, body, n, &s)))
			return rc;
		*ctx->state = s;
	}
	if ((rc = read_scalar_inputs(ctx, &trips, &s->cond)))
		return rc;
	for (int j = 0; j < n; j++) {
		if (!ctx->in[2 + j])
			return mfs_op_fail(ctx, EINVAL, "carried value %d is omitted", j);
		s->carried[j] = *ctx->in[2 + j];
		s->carried[j].owns_data = false;
	}
	for (s->iter = 0; !rc && s->iter < trips && s->cond; s->iter++) {
		if (mfs_run_cancelled()) {
			rc = mfs_op_fail(ctx, ECANCELED, "cancelled after %lld iterations",
					 (long long)s->iter);
			break;
		}
		if (s->iter >= mfs_engine_max_iterations()) {
			rc = mfs_op_fail(ctx, EFBIG, "more than %lld iterations",
					 (long long)mfs_engine_max_iterations());
			break;
		}
		rc = iterate(ctx, s, n, k, owned);
		owned = true;
	}
	for (int j = 0; j < n; j++) {
		mfs_tensor *o = j < ctx->n_out ? ctx->out[j] : NULL;
		if (!rc && o) {
			if (owned)
				*o = s->carried[j];
			else
				rc = mfs_tensor_copy(o, &s->carried[j], ctx->err);
		} else if (owned) {
			mfs_tensor_release(&s->carried[j]);
		}
		memset(&s->carried[j], 0, sizeof(s->carried[j]));
	}
	for (int q = 0; !rc && q < k; q++)
		if (n + q < ctx->n_out && ctx->out[n + q])
			rc = stack_rows(ctx, body, n, q, s->iter, ctx->out[n + q]);
	/* Small row buffers are reused by the next run; a large one is not
	 * kept between requests. */
	for (int q = 0; q < k; q++)
		if (s->acc[q].cap > ((size_t)1 << 20)) {
			free(s->acc[q].bytes);
			s->acc[q] = (scan_acc){ 0 };
		}
	return rc;
}

MFS_OP(Loop, 1, .flags = MFS_OP_OUTPUTS_AT_RUN | MFS_OP_BODIES | MFS_OP_CONTAINERS, .infer = loop_infer,
       .run = loop_run, .release = loop_release);

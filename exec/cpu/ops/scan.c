/* Scan: runs its body once per slice of its scan inputs, carrying N
 * state values from one step to the next and stacking K scan outputs.
 *   opset 9+ (9, 11 and 16 differ only in negative axes and types): the
 *   inputs are N initial states and M = num_scan_inputs scan inputs,
 *   each sliced along scan_input_axes[j] (forward, or backward where
 *   scan_input_directions[j] is 1); scan output k is stacked along
 *   scan_output_axes[k] (backward where scan_output_directions[k] is 1).
 *   opset 8: axis 0 of every input is a batch, scanned one by one along
 *   axis 1 (directions), for sequence_lens[b] steps when given (later
 *   rows of the scan outputs are zero).
 * Tensors only.  The body reads the enclosing graph's values by name
 * (exec/runtime/subgraph.h). */
#include <stdlib.h>
#include <string.h>

#include "subgraph.h"

typedef struct scan_state {
	mfs_body_exec *body;
	mfs_tensor *args;      /* states, then slices of the scan inputs */
	mfs_tensor *outs;      /* states, then scan rows */
	mfs_tensor *slices;    /* owned buffers behind args[N ...] */
	int n_args, n_outs;
} scan_state;

static void scan_release(void *p)
{
	scan_state *s = p;
	if (!s)
		return;
	mfs_body_exec_free(s->body);
	for (int j = 0; s->slices && j < s->n_args; j++)
		mfs_tensor_release(&s->slices[j]);
	free(s->args);
	free(s->outs);
	free(s->slices);
	free(s);
}

/* What one scan (a batch row for opset 8) works on. */
typedef struct scan_job {
	int n, m, k;
	const mfs_tensor *const *state_in;   /* n */
	const mfs_tensor *const *scan_in;    /* m */
	int in_axis[MFS_MAX_RANK * 4], in_dir[MFS_MAX_RANK * 4];
	int out_axis[MFS_MAX_RANK * 4], out_dir[MFS_MAX_RANK * 4];
	int64_t len;           /* the scan inputs' length along their axis */
	int64_t steps;         /* steps to run (<= len) */
	mfs_tensor *state_out; /* n results, owned */
	mfs_tensor *scan_out;  /* k results, owned, len long */
} scan_job;

/* 32 scan inputs and outputs are more than any exporter writes. */
#define SCAN_MAX_IO (MFS_MAX_RANK * 4)

static int scan_counts(mfs_op_ctx *ctx, const mfs_graph **body, int first,
		       int *n, int *m, int *k)
{
	int64_t ms = onnx_attr_int(ctx->node, "num_scan_inputs", -1);
	*body = mfs_op_body(ctx, "body");
	if (!*body)
		return mfs_op_fail(ctx, EINVAL, "needs the graph attribute body");
	if (ms < 1 || ms > SCAN_MAX_IO || ms > ctx->node->n_inputs - first)
		return mfs_op_fail(ctx, EINVAL, "num_scan_inputs %lld is out of range for %d inputs",
				   (long long)ms, ctx->node->n_inputs - first);
	*m = (int)ms;
	*n = ctx->node->n_inputs - first - *m;
	*k = ctx->node->n_outputs - *n;
	if (*k < 0 || *k > SCAN_MAX_IO)
		return mfs_op_fail(ctx, EINVAL, "has %d outputs for %d states",
				   ctx->node->n_outputs, *n);
	if (mfs_body_n_inputs(*body) != *n + *m ||
	    mfs_body_n_outputs(*body) != *n + *k)
		return mfs_op_fail(ctx, EINVAL, "body has %d inputs and %d outputs, expected %d and %d",
				   mfs_body_n_inputs(*body), mfs_body_n_outputs(*body),
				   *n + *m, *n + *k);
	for (int i = first; i < ctx->node->n_inputs; i++)
		if (!ctx->in[i])
			return mfs_op_fail(ctx, EINVAL, "input %d is omitted", i);
	return 0;
}

/* An INTS attribute of count entries (default def), each 0/1 for
 * directions or an axis normalised against rank[i] for axes. */
static int read_list(mfs_op_ctx *ctx, const char *name, int count,
		     const int *rank, int *out)
{
	const int64_t *v;
	size_t nv = onnx_attr_ints(ctx->node, name, &v);

	if (nv && nv != (size_t)count)
		return mfs_op_fail(ctx, EINVAL, "%s has %zu entries, expected %d",
				   name, nv, count);
	for (int i = 0; i < count; i++) {
		int64_t x = nv ? v[i] : 0;
		if (!rank) {
			if (x != 0 && x != 1)
				return mfs_op_fail(ctx, EINVAL, "%s[%d] is %lld, not 0 or 1",
						   name, i, (long long)x);
			out[i] = (int)x;
		} else {
			int rc = mfs_norm_axis(x, rank[i], &out[i], ctx->err);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static int scan_infer(mfs_op_ctx *ctx)
{
	const mfs_graph *body;
	int n, m, k, first = ctx->opset < 9;
	int rc = scan_counts(ctx, &body, first, &n, &m, &k);
	return rc ? rc : MFS_SHAPE_DEPENDS_ON_DATA;
}

static int state_new(mfs_op_ctx *ctx, const mfs_graph *body, scan_state **out)
{
	scan_state *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	s->n_args = mfs_body_n_inputs(body);
	s->n_outs = mfs_body_n_outputs(body);
	s->args = calloc((size_t)s->n_args + 1, sizeof(*s->args));
	s->slices = calloc((size_t)s->n_args + 1, sizeof(*s->slices));
	s->outs = calloc((size_t)s->n_outs + 1, sizeof(*s->outs));
	if (!s->args || !s->slices || !s->outs) {
		scan_release(s);
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	}
	if ((rc = mfs_body_exec_new(body, &s->body, ctx->err))) {
		scan_release(s);
		return rc;
	}
	*out = s;
	return 0;
}

static int shape_without(mfs_op_ctx *ctx, const mfs_shape *s, int axis,
			 mfs_shape *out)
{
	if (axis < 0 || axis >= s->rank)
		return mfs_op_fail(ctx, EINVAL, "axis %d is out of range for rank %d",
				   axis, s->rank);
	out->rank = s->rank - 1;
	for (int d = 0, o = 0; d < s->rank; d++)
		if (d != axis)
			out->dims[o++] = s->dims[d];
	return 0;
}

/* Scan output row t of step t: allocate the output at the first step. */
static int put_row(mfs_op_ctx *ctx, scan_job *j, int q, int64_t t,
		   const mfs_tensor *row)
{
	mfs_tensor *dst = &j->scan_out[q];
	int axis;
	int64_t at;

	if (t == 0) {
		mfs_shape sh = { .rank = row->shape.rank + 1 };
		int rc;
		if (row->shape.rank >= MFS_MAX_RANK)
			return mfs_op_fail(ctx, ENOTSUP, "scan output %d has rank %d: stacked it exceeds %d",
					   q, row->shape.rank, MFS_MAX_RANK);
		if ((rc = mfs_norm_axis(j->out_axis[q], sh.rank, &axis, ctx->err)))
			return rc;
		for (int d = 0, i = 0; d < sh.rank; d++)
			sh.dims[d] = d == axis ? j->len : row->shape.dims[i++];
		if ((rc = mfs_tensor_alloc(dst, row->dtype, &sh, ctx->err)))
			return rc;
		if (dst->nbytes)
			memset(dst->data, 0, dst->nbytes);
		j->out_axis[q] = axis;
	} else {
		mfs_shape want;
		shape_without(ctx, &dst->shape, j->out_axis[q], &want);
		if (row->dtype != dst->dtype || !mfs_shape_equal(&row->shape, &want))
			return mfs_op_fail(ctx, EINVAL, "scan output %d changes type or shape at step %lld",
					   q, (long long)t);
	}
	at = j->out_dir[q] ? j->len - 1 - t : t;
	mfs_axis_put(dst, j->out_axis[q], at, row);
	return 0;
}

/* Run the steps of one job; on error j's outputs are released. */
static int scan_steps(mfs_op_ctx *ctx, scan_state *s, scan_job *j)
{
	int rc = 0;

	for (int i = 0; i < j->n; i++) {
		j->state_out[i] = *j->state_in[i];
		j->state_out[i].owns_data = false;
	}
	for (int i = 0; i < j->m; i++) {
		mfs_shape sh;
		mfs_tensor_release(&s->slices[i]);
		if ((rc = shape_without(ctx, &j->scan_in[i]->shape, j->in_axis[i], &sh)) ||
		    (rc = mfs_tensor_alloc(&s->slices[i], j->scan_in[i]->dtype, &sh, ctx->err)))
			goto fail;
	}
	for (int64_t t = 0; t < j->steps; t++) {
		for (int i = 0; i < j->n; i++)
			s->args[i] = j->state_out[i];
		for (int i = 0; i < j->m; i++) {
			int64_t at = j->in_dir[i] ? j->steps - 1 - t : t;
			mfs_axis_take(j->scan_in[i], j->in_axis[i], at, &s->slices[i]);
			s->args[j->n + i] = s->slices[i];
		}
		if ((rc = mfs_body_exec_run(s->body, ctx, s->args, s->outs))) {
			mfs_error_prefix(ctx->err, "step %lld: ", (long long)t);
			goto fail;
		}
		for (int i = 0; i < j->n; i++) {
			mfs_tensor_release(&j->state_out[i]);
			j->state_out[i] = s->outs[i];
			memset(&s->outs[i], 0, sizeof(s->outs[i]));
		}
		for (int q = 0; !rc && q < j->k; q++)
			rc = put_row(ctx, j, q, t, &s->outs[j->n + q]);
		for (int q = 0; q < j->k; q++)
			mfs_tensor_release(&s->outs[j->n + q]);
		if (rc)
			goto fail;
	}
	for (int i = 0; i < j->n; i++)
		if (!j->state_out[i].owns_data &&
		    (rc = mfs_tensor_copy(&j->state_out[i], j->state_in[i], ctx->err)))
			goto fail;
	return 0;
fail:
	for (int i = 0; i < j->n; i++)
		mfs_tensor_release(&j->state_out[i]);
	for (int q = 0; q < j->k; q++)
		mfs_tensor_release(&j->scan_out[q]);
	return rc;
}

/* Scan outputs of a job that ran no step: the body's declared type. */
static int empty_outputs(mfs_op_ctx *ctx, const mfs_graph *body, scan_job *j)
{
	for (int q = 0; q < j->k; q++) {
		const mfs_io_desc *d = mfs_body_output(body, j->n + q);
		mfs_shape sh = { .rank = d->rank + 1 };
		int axis, rc;
		if (j->scan_out[q].data || j->scan_out[q].dtype)
			continue;
		if (!mfs_dtype_size(d->dtype) || d->rank < 0 || d->rank >= MFS_MAX_RANK)
			return mfs_op_fail(ctx, ENOTSUP, "scan output %d: no step ran and the body does not declare its type and rank",
					   q);
		if ((rc = mfs_norm_axis(j->out_axis[q], sh.rank, &axis, ctx->err)))
			return rc;
		for (int dd = 0, i = 0; dd < sh.rank; dd++) {
			if (dd == axis) {
				sh.dims[dd] = j->len;
				continue;
			}
			sh.dims[dd] = d->dims[i] > 0 ? d->dims[i] : 0;
			i++;
		}
		if ((rc = mfs_tensor_alloc(&j->scan_out[q], d->dtype, &sh, ctx->err)))
			return rc;
		if (j->scan_out[q].nbytes)
			memset(j->scan_out[q].data, 0, j->scan_out[q].nbytes);
	}
	return 0;
}

/* The scan length of every scan input along its axis: all equal. */
static int scan_length(mfs_op_ctx *ctx, scan_job *j)
{
	for (int i = 0; i < j->m; i++) {
		int64_t l;
		if (j->in_axis[i] >= j->scan_in[i]->shape.rank)
			return mfs_op_fail(ctx, EINVAL, "scan input %d has rank %d", i,
					   j->scan_in[i]->shape.rank);
		l = j->scan_in[i]->shape.dims[j->in_axis[i]];
		if (i && l != j->len)
			return mfs_op_fail(ctx, EINVAL, "scan input %d has length %lld, input 0 %lld",
					   i, (long long)l, (long long)j->len);
		j->len = l;
	}
	j->steps = j->len;
	return 0;
}

static int scan9_run(mfs_op_ctx *ctx)
{
	const mfs_graph *body;
	scan_state *s = *ctx->state;
	scan_job j = { 0 };
	const mfs_tensor *ins[2 * SCAN_MAX_IO + 1];
	int rank[SCAN_MAX_IO];
	mfs_tensor outs[2 * SCAN_MAX_IO + 1];
	int n, m, k, rc = scan_counts(ctx, &body, 0, &n, &m, &k);

	if (rc)
		return rc;
	if (n > SCAN_MAX_IO)
		return mfs_op_fail(ctx, ENOTSUP, "%d states: at most %d", n, SCAN_MAX_IO);
	for (int i = 0; i < n + m; i++)
		ins[i] = ctx->in[i];
	memset(outs, 0, sizeof(outs));
	j = (scan_job){ .n = n, .m = m, .k = k, .state_in = ins, .scan_in = ins + n,
			.state_out = outs, .scan_out = outs + n };
	for (int i = 0; i < m; i++)
		rank[i] = ctx->in[n + i]->shape.rank;
	if ((rc = read_list(ctx, "scan_input_axes", m, rank, j.in_axis)) ||
	    (rc = read_list(ctx, "scan_input_directions", m, NULL, j.in_dir)) ||
	    (rc = read_list(ctx, "scan_output_directions", k, NULL, j.out_dir)))
		return rc;
	{   /* output axes are normalised against the stacked rank later */
		const int64_t *v;
		size_t nv = onnx_attr_ints(ctx->node, "scan_output_axes", &v);
		if (nv && nv != (size_t)k)
			return mfs_op_fail(ctx, EINVAL, "scan_output_axes has %zu entries, expected %d",
					   nv, k);
		for (int q = 0; q < k; q++) {
			if (nv && (v[q] < -MFS_MAX_RANK || v[q] > MFS_MAX_RANK))
				return mfs_op_fail(ctx, EINVAL, "scan_output_axes[%d] is %lld",
						   q, (long long)v[q]);
			j.out_axis[q] = nv ? (int)v[q] : 0;
		}
	}
	if ((rc = scan_length(ctx, &j)))
		return rc;
	if (!s) {
		if ((rc = state_new(ctx, body, &s)))
			return rc;
		*ctx->state = s;
	}
	if ((rc = scan_steps(ctx, s, &j)))
		return rc;
	if ((rc = empty_outputs(ctx, body, &j)))
		goto fail;
	for (int i = 0; i < n + k; i++) {
		if (i < ctx->n_out && ctx->out[i])
			*ctx->out[i] = outs[i];
		else
			mfs_tensor_release(&outs[i]);
	}
	return 0;
fail:
	for (int i = 0; i < n + k; i++)
		mfs_tensor_release(&outs[i]);
	return rc;
}

/* Opset 8: one scan per batch row, the rows put back along axis 0. */
static int scan8_run(mfs_op_ctx *ctx)
{
	const mfs_graph *body;
	scan_state *s = *ctx->state;
	const mfs_tensor *lens = ctx->in[0];
	mfs_tensor rows[2 * SCAN_MAX_IO + 1], outs[2 * SCAN_MAX_IO + 1];
	mfs_tensor parts[2 * SCAN_MAX_IO + 1];
	const mfs_tensor *ins[2 * SCAN_MAX_IO + 1];
	int dir[SCAN_MAX_IO];
	int n, m, k, rc = scan_counts(ctx, &body, 1, &n, &m, &k);
	int64_t batch = -1;

	if (rc)
		return rc;
	if (n > SCAN_MAX_IO)
		return mfs_op_fail(ctx, ENOTSUP, "%d states: at most %d", n, SCAN_MAX_IO);
	if ((rc = read_list(ctx, "directions", m, NULL, dir)))
		return rc;
	for (int i = 0; i < n + m; i++) {
		const mfs_tensor *t = ctx->in[1 + i];
		if (t->shape.rank < (i < n ? 1 : 2))
			return mfs_op_fail(ctx, EINVAL, "input %d has rank %d: needs a batch axis%s",
					   1 + i, t->shape.rank, i < n ? "" : " and a sequence axis");
		if (batch >= 0 && t->shape.dims[0] != batch)
			return mfs_op_fail(ctx, EINVAL, "input %d has batch %lld, input 1 %lld",
					   1 + i, (long long)t->shape.dims[0], (long long)batch);
		batch = t->shape.dims[0];
	}
	if (lens && (lens->dtype != MFS_DT_INT32 ||
		     mfs_shape_numel(&lens->shape) != batch))
		return mfs_op_fail(ctx, EINVAL, "sequence_lens must be int32 of %lld elements",
				   (long long)batch);
	if (!s) {
		if ((rc = state_new(ctx, body, &s)))
			return rc;
		*ctx->state = s;
	}
	memset(rows, 0, sizeof(rows));
	memset(outs, 0, sizeof(outs));
	for (int i = 0; i < n + m; i++) {
		mfs_shape sh;
		shape_without(ctx, &ctx->in[1 + i]->shape, 0, &sh);
		if ((rc = mfs_tensor_alloc(&rows[i], ctx->in[1 + i]->dtype, &sh, ctx->err)))
			goto out;
		ins[i] = &rows[i];
	}
	for (int64_t b = 0; b < batch; b++) {
		scan_job j = { .n = n, .m = m, .k = k, .state_in = ins,
			       .scan_in = ins + n, .state_out = parts,
			       .scan_out = parts + n };
		memset(parts, 0, sizeof(parts));
		memcpy(j.in_dir, dir, sizeof(dir));
		for (int i = 0; i < n + m; i++)
			mfs_axis_take(ctx->in[1 + i], 0, b, &rows[i]);
		if ((rc = scan_length(ctx, &j)))
			goto out;
		if (lens) {
			int32_t l = ((const int32_t *)lens->data)[b];
			if (l < 0 || l > j.len) {
				rc = mfs_op_fail(ctx, EINVAL, "sequence_lens[%lld] is %d, the sequence has %lld",
						 (long long)b, l, (long long)j.len);
				goto out;
			}
			j.steps = l;
		}
		if ((rc = scan_steps(ctx, s, &j)) ||
		    (rc = empty_outputs(ctx, body, &j)))
			goto out_parts;
		for (int i = 0; i < n + k; i++) {
			if (b == 0) {
				mfs_shape sh = { .rank = parts[i].shape.rank + 1, .dims = { batch } };
				if (parts[i].shape.rank >= MFS_MAX_RANK) {
					rc = mfs_op_fail(ctx, ENOTSUP, "output %d exceeds rank %d", i, MFS_MAX_RANK);
					goto out_parts;
				}
				memcpy(sh.dims + 1, parts[i].shape.dims,
				       sizeof(int64_t) * (size_t)parts[i].shape.rank);
				if ((rc = mfs_tensor_alloc(&outs[i], parts[i].dtype, &sh, ctx->err)))
					goto out_parts;
			} else {
				mfs_shape want;
				shape_without(ctx, &outs[i].shape, 0, &want);
				if (parts[i].dtype != outs[i].dtype ||
				    !mfs_shape_equal(&parts[i].shape, &want)) {
					rc = mfs_op_fail(ctx, EINVAL, "output %d changes shape at batch row %lld",
							 i, (long long)b);
					goto out_parts;
				}
			}
			mfs_axis_put(&outs[i], 0, b, &parts[i]);
		}
out_parts:
		for (int i = 0; i < n + k; i++)
			mfs_tensor_release(&parts[i]);
		if (rc)
			goto out;
	}
	if (batch == 0) {
		rc = mfs_op_fail(ctx, ENOTSUP, "a batch of 0 rows");
		goto out;
	}
	for (int i = 0; i < n + k; i++) {
		if (i < ctx->n_out && ctx->out[i])
			*ctx->out[i] = outs[i];
		else
			mfs_tensor_release(&outs[i]);
		memset(&outs[i], 0, sizeof(outs[i]));
	}
out:
	for (int i = 0; i < n + m; i++)
		mfs_tensor_release(&rows[i]);
	for (int i = 0; i < n + k; i++)
		mfs_tensor_release(&outs[i]);
	return rc;
}

MFS_OP(Scan, 8, .flags = MFS_OP_OUTPUTS_AT_RUN | MFS_OP_BODIES, .infer = scan_infer,
       .run = scan8_run, .release = scan_release);
MFS_OP(Scan, 9, .flags = MFS_OP_OUTPUTS_AT_RUN | MFS_OP_BODIES, .infer = scan_infer,
       .run = scan9_run, .release = scan_release);

/* SequenceMap (opset 17): runs its body once per position i of the input
 * sequence, on the sequence's tensor i and, for each additional input,
 * its tensor i (a sequence of the same length) or the input itself (a
 * tensor); each body output is collected into an output sequence.  The
 * body reads the enclosing graph's values by name (exec/runtime/subgraph.h).
 */
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "subgraph.h"

typedef struct smap_state {
	mfs_body_exec *body;
	mfs_tensor *args, *outs;
} smap_state;

static void smap_release(void *p)
{
	smap_state *s = p;
	if (!s)
		return;
	mfs_body_exec_free(s->body);
	free(s->args);
	free(s->outs);
	free(s);
}

/* The body and the inputs: n_in own inputs, the first a sequence, every
 * other sequence as long as it. */
static int smap_check(mfs_op_ctx *ctx, const mfs_graph **body, int *n_in)
{
	const mfs_tensor *seq;
	int rc;

	*n_in = ctx->node->n_inputs;
	*body = mfs_op_body(ctx, "body");
	if (!*body)
		return mfs_op_fail(ctx, EINVAL, "needs the graph attribute body");
	if (mfs_body_n_inputs(*body) != *n_in || mfs_body_n_outputs(*body) != ctx->node->n_outputs)
		return mfs_op_fail(ctx, EINVAL, "body takes %d inputs and gives %d outputs, the node %d and %d",
				   mfs_body_n_inputs(*body), mfs_body_n_outputs(*body),
				   *n_in, ctx->node->n_outputs);
	if ((rc = ct_sequence_in(ctx, 0, &seq)))
		return rc;
	for (int j = 1; j < *n_in; j++) {
		const mfs_tensor *x = ctx->in[j];
		if (!x)
			return mfs_op_fail(ctx, EINVAL, "input %d is omitted", j);
		if (x->kind == MFS_KIND_SEQUENCE && x->n_items != seq->n_items)
			return mfs_op_fail(ctx, EINVAL, "input %d holds %d tensors, input 0 %d",
					   j, x->n_items, seq->n_items);
		if (x->kind == MFS_KIND_OPTIONAL)
			return mfs_op_fail(ctx, EINVAL, "input %d is an optional", j);
	}
	return 0;
}

/* Every output's tensors depend on running the body. */
static int smap_infer(mfs_op_ctx *ctx)
{
	const mfs_graph *body;
	int n_in, rc = smap_check(ctx, &body, &n_in);
	return rc ? rc : MFS_SHAPE_DEPENDS_ON_DATA;
}

static int smap_state_get(mfs_op_ctx *ctx, const mfs_graph *body, smap_state **out)
{
	smap_state *s = *ctx->state;
	int rc = 0;

	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s)
			return mfs_op_fail(ctx, ENOMEM, "out of memory");
		s->args = calloc((size_t)mfs_body_n_inputs(body) + 1, sizeof(*s->args));
		s->outs = calloc((size_t)mfs_body_n_outputs(body) + 1, sizeof(*s->outs));
		if (!s->args || !s->outs)
			rc = mfs_op_fail(ctx, ENOMEM, "out of memory");
		else
			rc = mfs_body_exec_new(body, &s->body, ctx->err);
		if (rc) {
			smap_release(s);
			return rc;
		}
		*ctx->state = s;
	}
	*out = s;
	return 0;
}

/* One position: the body on tensor i of each sequence input, its
 * outputs moved into item i of the output sequences. */
static int smap_step(mfs_op_ctx *ctx, smap_state *s, int n_in, int i)
{
	int rc;

	for (int j = 0; j < n_in; j++) {
		const mfs_tensor *x = ctx->in[j];
		s->args[j] = x->kind == MFS_KIND_SEQUENCE ? x->items[i] : *x;
		s->args[j].owns_data = false;
	}
	if ((rc = mfs_body_exec_run(s->body, ctx, s->args, s->outs))) {
		mfs_error_prefix(ctx->err, "position %d: ", i);
		return rc;
	}
	for (int k = 0; k < ctx->node->n_outputs; k++) {
		mfs_tensor *o = k < ctx->n_out ? ctx->out[k] : NULL;
		if (!rc && o && s->outs[k].kind != MFS_KIND_TENSOR)
			rc = mfs_op_fail(ctx, EINVAL, "output %d of the body is a %s, not a tensor",
					 k, mfs_kind_name(s->outs[k].kind));
		else if (!rc && o && i && s->outs[k].dtype != o->dtype)
			rc = mfs_op_fail(ctx, EINVAL, "output %d of the body is %s at position %d, %s before",
					 k, mfs_dtype_onnx_name(s->outs[k].dtype), i,
					 mfs_dtype_onnx_name(o->dtype));
		if (!rc && o) {
			o->dtype = s->outs[k].dtype;
			o->items[i] = s->outs[k];   /* moved */
		} else {
			mfs_tensor_release(&s->outs[k]);
		}
		memset(&s->outs[k], 0, sizeof(s->outs[k]));
	}
	return rc;
}

static int smap_run(mfs_op_ctx *ctx)
{
	const mfs_graph *body;
	smap_state *s = NULL;
	int n_in, n, rc = smap_check(ctx, &body, &n_in);

	if (rc || (rc = smap_state_get(ctx, body, &s)))
		return rc;
	n = ctx->in[0]->n_items;
	for (int k = 0; !rc && k < ctx->n_out; k++) {
		const mfs_io_desc *d = mfs_body_output(body, k);
		if (ctx->out[k])
			rc = mfs_container_init(ctx->out[k], MFS_KIND_SEQUENCE, MFS_KIND_TENSOR,
						d->dtype != MFS_DT_UNDEFINED ? d->dtype : MFS_DT_FLOAT,
						n, ctx->err);
	}
	for (int i = 0; !rc && i < n; i++)
		rc = smap_step(ctx, s, n_in, i);
	return rc;   /* on error the engine frees the outputs' items */
}

MFS_OP(SequenceMap, 17, .flags = MFS_OP_OUTPUTS_AT_RUN | MFS_OP_BODIES | MFS_OP_CONTAINERS,
       .infer = smap_infer, .run = smap_run, .release = smap_release);

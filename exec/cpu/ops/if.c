/* If: runs then_branch or else_branch by a boolean scalar and returns the
 * branch's outputs (opsets 1-19: one line, the later versions only widen
 * the types, sequences and optionals included).  The branches read the
 * enclosing graph's values by name (exec/runtime/subgraph.h).  The branches may
 * give outputs of different shapes, and sequences or optionals. */
#include <stdlib.h>
#include <string.h>

#include "subgraph.h"

typedef struct if_state {
	mfs_body_exec *branch[2];  /* else, then */
	mfs_tensor *outs;
	int n_outs;
} if_state;

static void if_release(void *p)
{
	if_state *s = p;
	if (!s)
		return;
	mfs_body_exec_free(s->branch[0]);
	mfs_body_exec_free(s->branch[1]);
	free(s->outs);
	free(s);
}

static int if_check(mfs_op_ctx *ctx, const mfs_graph **br)
{
	br[1] = mfs_op_body(ctx, "then_branch");
	br[0] = mfs_op_body(ctx, "else_branch");
	if (!br[0] || !br[1])
		return mfs_op_fail(ctx, EINVAL, "needs graph attributes then_branch and else_branch");
	for (int b = 0; b < 2; b++) {
		if (mfs_body_n_inputs(br[b]))
			return mfs_op_fail(ctx, EINVAL, "%s takes %d inputs, a branch takes none",
					   b ? "then_branch" : "else_branch",
					   mfs_body_n_inputs(br[b]));
		if (mfs_body_n_outputs(br[b]) != ctx->node->n_outputs)
			return mfs_op_fail(ctx, EINVAL, "%s has %d outputs, the node %d",
					   b ? "then_branch" : "else_branch",
					   mfs_body_n_outputs(br[b]), ctx->node->n_outputs);
	}
	return 0;
}

/* Static output shapes where both branches give the same fixed one. */
static int if_infer(mfs_op_ctx *ctx)
{
	const mfs_graph *br[2];
	int rc = if_check(ctx, br);

	if (rc)
		return rc;
	if (ctx->in[0]->dtype != MFS_DT_BOOL)
		return mfs_op_fail(ctx, EINVAL, "cond has type %s, not bool",
				   mfs_dtype_onnx_name(ctx->in[0]->dtype));
	for (int k = 0; k < ctx->node->n_outputs; k++) {
		const mfs_io_desc *a = mfs_body_output(br[0], k);
		const mfs_io_desc *b = mfs_body_output(br[1], k);
		if (a->dtype != b->dtype || a->dtype == MFS_DT_UNDEFINED ||
		    a->rank < 0 || a->rank != b->rank)
			return MFS_SHAPE_DEPENDS_ON_DATA;
		for (int d = 0; d < a->rank; d++)
			if (a->dims[d] < 0 || a->dims[d] != b->dims[d])
				return MFS_SHAPE_DEPENDS_ON_DATA;
	}
	for (int k = 0; k < ctx->node->n_outputs; k++) {
		const mfs_io_desc *a = mfs_body_output(br[0], k);
		if (!ctx->out[k])
			continue;
		ctx->out[k]->dtype = a->dtype;
		ctx->out[k]->shape.rank = a->rank;
		memcpy(ctx->out[k]->shape.dims, a->dims, sizeof(a->dims));
	}
	return 0;
}

static int if_run(mfs_op_ctx *ctx)
{
	const mfs_graph *br[2];
	const mfs_tensor *cond = ctx->in[0];
	if_state *s = *ctx->state;
	int rc = if_check(ctx, br), pick, n = ctx->node->n_outputs;

	if (rc)
		return rc;
	if (cond->dtype != MFS_DT_BOOL || mfs_shape_numel(&cond->shape) != 1)
		return mfs_op_fail(ctx, EINVAL, "cond must be one bool, got %s of %lld elements",
				   mfs_dtype_onnx_name(cond->dtype),
				   (long long)mfs_shape_numel(&cond->shape));
	pick = ((const uint8_t *)cond->data)[0] != 0;
	if (!s) {
		if (!(s = calloc(1, sizeof(*s))) ||
		    !(s->outs = calloc((size_t)n + 1, sizeof(*s->outs)))) {
			free(s);
			return mfs_op_fail(ctx, ENOMEM, "out of memory");
		}
		s->n_outs = n;
		*ctx->state = s;
	}
	if (!s->branch[pick] &&
	    (rc = mfs_body_exec_new(br[pick], &s->branch[pick], ctx->err)))
		return rc;
	if ((rc = mfs_body_exec_run(s->branch[pick], ctx, NULL, s->outs))) {
		mfs_error_prefix(ctx->err, "%s: ", pick ? "then_branch" : "else_branch");
		return rc;
	}
	for (int k = 0; k < n; k++) {
		if (k < ctx->n_out && ctx->out[k])
			*ctx->out[k] = s->outs[k];   /* moved: the engine takes it */
		else
			mfs_tensor_release(&s->outs[k]);
		memset(&s->outs[k], 0, sizeof(s->outs[k]));
	}
	return 0;
}

MFS_OP(If, 1, .flags = MFS_OP_OUTPUTS_AT_RUN | MFS_OP_BODIES | MFS_OP_CONTAINERS, .infer = if_infer,
       .run = if_run, .release = if_release);

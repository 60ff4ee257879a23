/* subgraph.h - running a node's body graph: If's branches, Loop's and
 * Scan's body, and any other operator with a graph attribute
 * (SequenceMap).
 *
 * The compile (graph.c) turns every graph attribute into a compiled
 * mfs_graph owned by the node, reachable from the operator as
 * mfs_op_body(ctx, "body").  ONNX names are lexically scoped: a body may
 * read any value of the graphs around it.  Those reads become extra
 * inputs of the node (ctx->in[node->n_inputs ...]), so the enclosing
 * graph orders the node after their producers and keeps them alive until
 * it ran; the body sees them as inputs after its own, except the
 * enclosing graph's constants (weights), which the body compiles with as
 * constants of its own (borrowed).
 *
 * An operator runs a body through an mfs_body_exec, made once per
 * execution context (in its prepare state) and run as often as it needs:
 *
 *     mfs_body_exec_new(body, &b, ctx->err);
 *     mfs_body_exec_run(b, ctx, args, outs);    -- args: the body's inputs
 *
 * Bodies run on the CPU backend.  Their outputs are new tensors the
 * caller owns.
 */
#ifndef MFS_SUBGRAPH_H
#define MFS_SUBGRAPH_H

#include "engine.h"
#include "op.h"

/* The compiled graph of node attribute attr (borrowed), or NULL when
 * the node has no such graph attribute. */
const mfs_graph *mfs_op_body(const mfs_op_ctx *ctx, const char *attr);

/* The body's own inputs and its outputs, as its graph declares them
 * (dtype UNDEFINED and rank -1 where it does not say). */
int mfs_body_n_inputs(const mfs_graph *body);
int mfs_body_n_outputs(const mfs_graph *body);
const mfs_io_desc *mfs_body_input(const mfs_graph *body, int i);
const mfs_io_desc *mfs_body_output(const mfs_graph *body, int i);

typedef struct mfs_body_exec mfs_body_exec;

/* An execution context for body; -ENOMEM with err filled. */
int mfs_body_exec_new(const mfs_graph *body, mfs_body_exec **out,
		      mfs_error *err);
void mfs_body_exec_free(mfs_body_exec *b);

/* Run the body once: args[i] (borrowed, mfs_body_n_inputs of them) are
 * its own inputs, the values it reads from the enclosing scope come from
 * ctx->in (ctx: the node that owns the body).  outputs
 * (mfs_body_n_outputs entries) receive new tensors the caller releases;
 * on error none needs releasing, and ctx->err says what failed. */
int mfs_body_exec_run(mfs_body_exec *b, mfs_op_ctx *ctx,
		      const mfs_tensor *args, mfs_tensor *outputs);

/* ---- slices along an axis (Scan's inputs, Loop's and Scan's stacked
 * outputs) ---- */

/* dst (allocated by the caller: src's shape without axis) = src[..., i,
 * ...] with i at axis. */
void mfs_axis_take(const mfs_tensor *src, int axis, int64_t i, mfs_tensor *dst);
/* dst[..., i, ...] = src, with i at axis of dst (src: dst's shape
 * without axis). */
void mfs_axis_put(mfs_tensor *dst, int axis, int64_t i, const mfs_tensor *src);

#endif

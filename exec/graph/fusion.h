/* fusion.h - rewrites of the ONNX graph before compile that let one operator
 * do the work of several.
 *
 * The one rewrite: Conv followed by its only reader Relu, LeakyRelu or Clip (with
 * constant bounds) becomes one com.modelfs FusedConv node (exec/cpu/ops/conv.c)
 * that applies the activation as a oneDNN post-op while the output is
 * still in cache, instead of a second pass over memory.  The pattern and
 * its limits are in fusion.c.  Then the transformer rewrites (rewrite.h,
 * one exec/graph/rewrite_*.c each): decomposed LayerNorm -> LayerNormalization,
 * GELU -> Gelu, MatMul / scale / mask / Softmax / MatMul -> Attention,
 * then Attention reading the heads where the projections wrote them
 * (their Transposes and Split dropped), MatMul + bias (+ activation) ->
 * Dense, Conv + Add (+ Relu) -> FusedConv with a residual input.
 * MFS_FUSE=0 in the environment turns the pass off (to compare, or to
 * rule it out); MFS_FUSE_SKIP=name[,name...] leaves out only the rewrites
 * named (layernorm, gelu, attention, attention_layout, dense, residual),
 * for an A/B run of one of them.
 */
#ifndef MFS_FUSION_H
#define MFS_FUSION_H

#include "error.h"
#include "onnx.h"

/* Rewrite m's graph in place.  Returns the number of fusions made (>= 0),
 * or -ENOMEM with err filled (m is then unchanged or consistently
 * partially rewritten: every rewrite is complete or not made). */
int mfs_fuse_graph(onnx_model *m, mfs_error *err);

#endif

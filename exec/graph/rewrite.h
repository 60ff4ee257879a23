/* rewrite.h - what the graph rewrites of fusion.h share: finding readers,
 * producers and constants in an onnx_graph, and replacing a matched group
 * of nodes by one com.modelfs node.
 *
 * A rewrite pass (exec/graph/rewrite_*.c) matches a pattern, checks that every
 * value computed inside it is read only inside it (and is no graph
 * output), builds the replacement node with rw_node_new/rw_attr_*, and
 * calls rw_replace.  The replacement takes the place of the pattern's last
 * node, so the node list stays in topological order: everything the
 * pattern reads from outside exists before that node.
 */
#ifndef MFS_REWRITE_H
#define MFS_REWRITE_H

#include <stdbool.h>

#include "error.h"
#include "onnx.h"

#define RW_DOMAIN "com.modelfs"
#define RW_MAX 16   /* most nodes one pattern may replace */

/* Is d the default (ai.onnx) domain? */
bool rw_default_domain(const char *d);
/* Is n a default-domain node of type op (with at least one output)? */
bool rw_is(const onnx_node *n, const char *op);
/* Readers of name (each input slot counts; a graph output counts as one,
 * so does a node whose body graphs mention it), and the last reading node
 * (-1 if none). */
int rw_readers(const onnx_graph *g, const char *name, int *reader);
/* The node that writes name, or -1. */
int rw_producer(const onnx_graph *g, const char *name);
/* The value of name when it is an initializer or a Constant node's output
 * (borrowed), else NULL. */
const mfs_tensor *rw_const(const onnx_graph *g, const char *name);
/* True when name is a one-element float constant; *v gets it. */
bool rw_scalar(const onnx_graph *g, const char *name, float *v);
/* rw_scalar and |value - want| <= tol * |want|. */
bool rw_scalar_near(const onnx_graph *g, const char *name, float want, float tol);
/* Of a two-input node, the input that is not name (NULL when neither or
 * both are). */
const char *rw_other(const onnx_node *n, const char *name);
/* Does n carry a subgraph attribute (If, Loop, Scan)? */
bool rw_has_graph_attr(const onnx_node *n);
/* True when every output of the nodes idx[0..n) other than the one of
 * idx[last] is read only by nodes in idx and is not a graph output, and
 * every node has exactly one output. */
bool rw_internal_only(const onnx_graph *g, const int *idx, int n, int last);

/* A new com.modelfs node (not in any graph yet) of type op with the given
 * inputs ("" for an omitted one) and no outputs; NULL when out of memory. */
onnx_node *rw_node_new(const char *op, const char *const *inputs, int n_in);
/* Add an attribute to n; -ENOMEM on failure (n unchanged). */
int rw_attr_float(onnx_node *n, const char *name, float v);
int rw_attr_int(onnx_node *n, const char *name, int64_t v);
int rw_attr_string(onnx_node *n, const char *name, const char *v);
/* Free a node built by rw_node_new and its contents. */
void rw_node_free(onnx_node *n);
/* Replace nodes idx[0..n) (conv, a Conv of 2 or 3 inputs, among them) by
 * one com.modelfs FusedConv as rw_replace does: conv's inputs, plus z as
 * input 3 (the bias slot padded with "") when z is not NULL, conv's
 * attributes, plus activation act when not NULL (conv's contents move
 * over).  1, 0 when the model imports com.modelfs below version 1
 * (nothing done), -ENOMEM (rewrite_residual.c). */
int rw_replace_by_fused_conv(onnx_model *m, const int *idx, int n, onnx_node *conv,
			     const char *z, const char *act);

/* Replace nodes idx[0..n) (distinct, n <= RW_MAX) of m's graph by repl
 * (steals it): repl gets the output of the node with the largest index
 * and takes its place; the others are removed.  Adds the com.modelfs
 * opset import.  -ENOMEM (graph unchanged, repl freed) or -EINVAL (the model
 * Returns 1, or 0 when the model imports com.modelfs below version 1
 * (repl freed, nothing done), or -ENOMEM (graph unchanged, repl freed). */
int rw_replace(onnx_model *m, const int *idx, int n, onnx_node *repl);
/* The only reader of name (not a graph output), when it is a
 * default-domain op (any node when op is NULL); -1 otherwise. */
int rw_sole_reader(const onnx_graph *g, const char *name, const char *op);
/* Call try_at(m, i) on every node index until none matches any more
 * (try_at returns 1 when it rewrote, 0, or -ENOMEM); the number of
 * rewrites or -ENOMEM. */
int rw_each_node(onnx_model *m, int (*try_at)(onnx_model *m, int i));

/* Make m use the com.modelfs opset import (version 1): 0, -EINVAL when m
 * imports it below 1, -ENOMEM. */
int rw_ensure_opset(onnx_model *m);

/* QDQ groups -> integer nodes (rewrite_qdq.c); fusion.c runs it first,
 * before any float fusion takes the Conv or MatMul of a group. */
int mfs_rewrite_qdq(onnx_model *m);

/* The passes, in the order fusion.c runs them.  Each returns how many
 * patterns it replaced (>= 0) or -ENOMEM. */
int mfs_rewrite_layernorm(onnx_model *m);   /* rewrite_layernorm.c */
int mfs_rewrite_gelu(onnx_model *m);        /* rewrite_gelu.c */
int mfs_rewrite_attention(onnx_model *m);   /* rewrite_attention.c */
int mfs_rewrite_attention_layout(onnx_model *m);   /* rewrite_attention.c */
int mfs_rewrite_dense(onnx_model *m);       /* rewrite_dense.c */
int mfs_rewrite_residual(onnx_model *m);    /* rewrite_residual.c */
int mfs_rewrite_swish(onnx_model *m);       /* rewrite_swish.c */
int mfs_rewrite_pad(onnx_model *m);         /* rewrite_pad.c */

#endif

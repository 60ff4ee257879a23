/* graph.h - the compiled graph (struct mfs_graph) that backends read.
 * Internal to exec/: the public API is engine.h.
 *
 * mfs_graph_compile (graph.c) turns an onnx_model into:
 *   - a values table: every tensor name the graph mentions, with its
 *     dtype and static shape where known, constant data for initializers
 *     and folded values, and the storage layout chosen for it;
 *   - the nodes left to run, in topological order, each with its resolved
 *     operator definition and its input/output value ids (-1 = omitted);
 *   - for every value, the index of the last node that reads it, so a
 *     backend can give its buffer back right after that node.
 * The graph is immutable after compile and shared by every mfs_exec.
 */
#ifndef MFS_GRAPH_H
#define MFS_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "engine.h"
#include "op.h"

typedef enum mfs_value_kind {
	MFS_VAL_NODE = 0,      /* produced by a node at run time */
	MFS_VAL_INPUT,         /* fed by the caller (mfs_graph_input) */
	MFS_VAL_CONST,         /* initializer or folded at compile */
	MFS_VAL_UNDEFINED,     /* named but never produced (an error if read) */
} mfs_value_kind;

/* Operators get ctx->in / ctx->out arrays with this many NULL entries
 * past n_in / n_out, so `if (ctx->in[2])` on an omitted trailing input is
 * safe (checking n_in is still the rule). */
#define MFS_ARG_PAD 8

/* last_use of a value that must outlive the run (graph outputs). */
#define MFS_LAST_USE_END INT32_MAX

typedef struct mfs_value {
	const char *name;      /* borrowed from the onnx model */
	mfs_value_kind kind;
	mfs_dtype dtype;       /* UNDEFINED when not known at compile */
	bool shape_static;     /* shape fully known at compile */
	mfs_shape shape;       /* valid when shape_static */
	mfs_tensor constant;   /* kind == CONST: data (owned or borrowed) */
	int producer;          /* index into nodes[], -1 if none */
	int last_use;          /* last node index reading it; -1 if never read */
	int input_index;       /* position in mfs_graph_input, or -1 */
	int output_index;      /* first position in outputs, or -1 */
	mfs_layout layout;     /* storage planned at compile (layout pass) */
	/* The shape and type with every variable input dim set to 1: what the
	 * layout pass plans with when shapes are not static (a variable batch
	 * leaves ranks and layouts alone).  Never used for sizes. */
	bool plan_known;
	mfs_dtype plan_dtype;
	mfs_shape plan_shape;
} mfs_value;

typedef struct mfs_node {
	const onnx_node *onnx;
	const mfs_op_def *def;
	int64_t opset;
	int n_in, n_out;
	int *in;               /* value ids; -1 where the input is omitted */
	int *out;              /* value ids; -1 where the output is unnamed */
	bool shapes_static;    /* every input and output shape fixed at compile:
				  a backend may skip infer at run */
	bool conv_layout;      /* may write output 0 in any layout the engine
				  asks (Conv through oneDNN), independent of
				  input 0's layout */
	int *frees;            /* values whose last use is this node */
	int n_frees;
	/* Graph attributes compiled (attribute order), owned; n_in counts
	 * the node's own inputs (onnx->n_inputs) and then the values its
	 * bodies read from this graph's scope, so lifetimes and ordering
	 * see those reads. */
	struct mfs_graph **bodies;
	int n_bodies;
} mfs_node;

struct mfs_graph {
	char *label;
	onnx_model *onnx;      /* owned: nodes and attributes point into it */
	int n_values;
	mfs_value *values;
	int n_nodes;
	mfs_node *nodes;       /* to run, topological order */
	int n_inputs, n_outputs;
	int *input_ids, *output_ids;
	mfs_io_desc *inputs, *outputs;
	/* A body graph (exec/runtime/subgraph.h): inputs [0, n_formal) are the
	 * body's own, the rest are values of the enclosing scope, input
	 * n_formal + j bound from the owning node's in[outer_slot[j]].
	 * For a model's main graph n_formal == n_inputs. */
	int n_formal;
	int *outer_slot;
	bool has_containers;   /* mfs_graph_has_containers (engine.h) */
	bool has_strings;      /* mfs_graph_has_strings (engine.h) */
	int n_folded;          /* nodes folded away at compile (for tests) */
	int n_nhwc;            /* values planned NHWC (for tests) */
	int n_block16;         /* values planned BLOCK16 (for tests) */
};

/* Counters of one execution context, for tests and profiling. */
typedef struct mfs_exec_stats {
	uint64_t runs;
	uint64_t buffer_allocs;   /* malloc of a pool buffer (new or regrown) */
	uint64_t views;           /* VIEW nodes that aliased instead of running */
	uint64_t layout_converts; /* NHWC <-> plain copies made at run */
	uint64_t outputs_over_inputs; /* outputs given their input 3's block
					 (op.h: MFS_OP_OUT0_OVER_IN3) */
	uint64_t prepares;        /* calls of op prepare() */
	uint64_t outputs_handed;  /* CPU: outputs handed to the caller in
				     their pool block, not copied */
	/* OpenCL backend only */
	uint64_t uploads;         /* host -> device copies */
	uint64_t downloads;       /* device -> host copies */
	uint64_t kernels;         /* kernels enqueued (CLBlast calls excluded) */
	uint64_t device_nodes;    /* nodes run on the device */
	uint64_t host_nodes;      /* nodes run by their CPU implementation */
	uint64_t kept_outputs;    /* outputs left on the device (engine.h) */
	uint64_t resident_inputs; /* inputs read where a run kept them */
} mfs_exec_stats;

/* The statistics of e's backend context; zeros for a backend that keeps
 * none.  Not thread-safe against a concurrent run of e. */
void mfs_exec_get_stats(const mfs_exec *e, mfs_exec_stats *out);

/* mfs_exec_run for a body graph run by an operator of the enclosing
 * graph (subgraph.h): the same input checks, no thread accounting (the
 * enclosing run already counts) and no model prefix on errors. */
int mfs_exec_run_nested(mfs_exec *e, const mfs_tensor *inputs,
			mfs_tensor *outputs, mfs_error *err);

/* Convert between storage layouts of a rank-4 tensor (shape is NCHW in
 * both): PLAIN <-> NHWC, and PLAIN <-> BLOCK16 for 4-byte elements
 * (tensor.h; nothing converts NHWC <-> BLOCK16).  dst must hold what its
 * layout stores (mfs_tensor_storage_bytes); dst's layout is set, its
 * nbytes left to the caller. */
void mfs_layout_convert(mfs_tensor *dst, const mfs_tensor *src,
			mfs_layout to);

/* Tests only: resolve operators through fn first (falling back to the
 * registry when it returns NULL); NULL restores the registry alone.  Not
 * thread-safe: set it before compiling. */
typedef const mfs_op_def *(*mfs_op_lookup_fn)(const char *domain,
					      const char *op_type, int64_t opset);
void mfs_graph_set_op_lookup(mfs_op_lookup_fn fn);

#endif

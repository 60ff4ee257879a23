/* op.h - how an operator is written.  Read exec/OPERATORS-HOWTO.md first.
 *
 * One operator (or one small family of trivially related ones) per file in
 * exec/cpu/ops/, registered with one line:
 *
 *     MFS_OP(Relu, 6, .infer = unary_infer, .run = relu_run);
 *
 * The build collects every MFS_OP line (see the Makefile) into the registry,
 * so adding an operator never touches another file.  The registry chooses,
 * for a model importing opset V of a domain, the definition with the largest
 * since_version <= V.  Register a new line only where the semantics change
 * (Clip 6 vs 11, Squeeze 1 vs 13 ...).
 *
 * Contract of the callbacks (all return 0 or a negative errno and fill
 * ctx->err; none may crash on any input a model or request can supply):
 *
 * infer   Required.  Given ctx->in[i] (dtype, shape, layout; data non-NULL
 *         only when the value is known: a constant at load, always at run),
 *         validate attributes and inputs and set dtype and shape of every
 *         ctx->out[i].  If an output shape depends on input data that is not
 *         known (data == NULL), return MFS_SHAPE_DEPENDS_ON_DATA: the engine
 *         then infers again at run time.  Must not allocate output data.
 * prepare Optional.  Called once per node per execution context after the
 *         first successful infer, to build *ctx->state (packed weights, a
 *         oneDNN primitive).  If shapes change between runs, prepare is
 *         called again with the old state still in *ctx->state: reuse or
 *         rebuild it.
 * run     Required.  Output tensors arrive allocated with the inferred shape
 *         (data not zeroed).  Inputs are read-only.  May use OpenMP.
 * release Optional.  Frees a state built by prepare.
 * check   Optional.  Called once per node when the model compiles, with
 *         the node's attributes only (no inputs or outputs): refuses an
 *         attribute that is wrong whatever the inputs (a regular
 *         expression that does not compile), so that the model fails to
 *         load instead of its first request.
 */
#ifndef MFS_OP_H
#define MFS_OP_H

#include "onnx.h"
#include "tensor.h"

#define MFS_SHAPE_DEPENDS_ON_DATA 1

struct mfs_op_def;
struct mfs_graph;

typedef struct mfs_op_ctx {
	const struct mfs_op_def *def;
	const onnx_node *node;       /* attributes: onnx_attr_int() & co */
	int64_t opset;               /* the model's opset for this domain */
	int n_in;
	mfs_tensor **in;             /* in[i] == NULL: optional input omitted */
	int n_out;
	mfs_tensor **out;            /* out[i] == NULL: output not requested */
	void **state;                /* per node, per execution context */
	mfs_error *err;
	/* Bit i set: in[i] is a constant of the model (an initializer or a
	 * folded value): its data never changes between runs, so prepare()
	 * may pack it once (Conv's reordered weights).  Clear bits promise
	 * nothing; inputs past 63 are never marked. */
	uint64_t const_in;
	/* The node's graph attributes (If's branches, Loop's and Scan's
	 * body) compiled once with the model, in attribute order; find one
	 * by name with mfs_op_body (exec/runtime/subgraph.h).  Values a body reads
	 * from the enclosing graphs arrive as extra inputs past the node's
	 * own: in[node->n_inputs ...]. */
	const struct mfs_graph *const *bodies;
	int n_bodies;
} mfs_op_ctx;

/* Flags describing what an operator tolerates. */
enum {
	/* Output 0 may share input 0's data (Reshape, Squeeze, Identity...):
	 * the engine then skips run when it could alias. */
	MFS_OP_VIEW = 1u << 0,
	/* Accepts NHWC inputs and produces its outputs in the layout of its
	 * first input (elementwise ops, Conv, pools, BatchNormalization). */
	MFS_OP_NHWC_OK = 1u << 1,
	/* Result depends on more than the inputs (random ops): never fold. */
	MFS_OP_NONDETERMINISTIC = 1u << 2,
	/* Computes only in FP32: FLOAT16/BFLOAT16 inputs are converted to
	 * FLOAT around it and its FLOAT outputs rounded back (exec/op/op_half.c;
	 * the registry wraps the definition, no call site changes). */
	MFS_OP_HALF_VIA_FLOAT = 1u << 3,
	/* Output shapes are known only by running (If, Loop, Scan run a
	 * body graph): the backend calls run with empty outputs instead of
	 * infer and allocation, and run allocates them itself
	 * (mfs_tensor_alloc; the backend takes them over).  infer is still
	 * called at load for static shapes where the bodies give them. */
	MFS_OP_OUTPUTS_AT_RUN = 1u << 4,
	/* Its graph attributes are bodies it runs (exec/runtime/subgraph.h): the
	 * engine compiles them and binds the values they read from the
	 * enclosing graphs.  Other operators' graph attributes are ignored,
	 * like any attribute an operator does not read. */
	MFS_OP_BODIES = 1u << 5,
	/* Reads or writes sequences and optionals (tensor.h: mfs_kind):
	 * checks the kind of every input it is given and sets the kind of
	 * its outputs in infer; a container output is not allocated by the
	 * engine, run() builds it (mfs_container_init) and owns its items.
	 * The engine refuses a container input to an operator without it. */
	MFS_OP_CONTAINERS = 1u << 6,
	/* With MFS_OP_NHWC_OK: reads NHWC in every input slot, whatever the
	 * input's shape, not only where it has input 0's shape (FusedConv's
	 * residual Z, whose channels and size differ from X's in a ResNet
	 * bottleneck or a MobileNetV2 block: converting it would cost a
	 * reorder there and push its producer and readers to plain). */
	MFS_OP_NHWC_ANY_INPUT = 1u << 7,
	/* Output 0 may be given input 3's memory (FusedConv's residual Z)
	 * when this node is Z's last reader and Z is a float value of the
	 * output's shape, layout and bytes that no view shares: the operator
	 * then finds out[0]->data == in[3]->data and must read each element
	 * of Z before it writes that element of the output (the CPU
	 * backend; a sum into the output instead of a separate add reads
	 * and writes the output's memory once, docs/PERFORMANCE.md, "The
	 * residual in place"). */
	MFS_OP_OUT0_OVER_IN3 = 1u << 8,
	/* Takes or makes string tensors (tensor.h: mfs_string).  Without it
	 * a node with a STRING input or output is refused (mfs_op_check_strings).
	 * A string output is either built element by element with
	 * mfs_string_set/mfs_string_alloc (its arena, out->strings, is then
	 * set), or only copied from the inputs' elements (out->strings left
	 * NULL): the engine then copies those elements' bytes into an arena
	 * of the output's own (mfs_tensor_own_strings).  The engine never
	 * lets a string output alias its input (MFS_OP_VIEW), and run must
	 * not mix the two ways in one output. */
	MFS_OP_STRINGS = 1u << 9,
};

typedef struct mfs_op_def {
	const char *domain;          /* "" = ai.onnx */
	const char *op_type;
	int since_version;
	unsigned flags;
	int (*infer)(mfs_op_ctx *ctx);
	int (*prepare)(mfs_op_ctx *ctx);
	int (*run)(mfs_op_ctx *ctx);
	void (*release)(void *state);
	int (*check)(mfs_op_ctx *ctx);
	/* For an MFS_OP_VIEW operator whose output is its input only for
	 * some inputs (Dropout: not in training mode): false when this run
	 * must compute.  Asked by the backends before they alias; NULL means
	 * always a view. */
	bool (*may_view)(const mfs_op_ctx *ctx);
	/* Whether the node, at ctx's input shapes (as infer sees them) and
	 * the calling thread's OpenMP count, computes in oneDNN's nChw16c
	 * whatever its tensors' layouts (Conv on Winograd), so that the
	 * engine's layout plan stores its neighbours BLOCK16 and saves it
	 * the reorders at its edges (exec/graph/graph_plan.c, plan_block16).  NULL:
	 * never. */
	bool (*computes_blocked)(const mfs_op_ctx *ctx);
} mfs_op_def;

#define MFS_OP_DOMAIN(dom, name, ver, ...)                                   \
	const mfs_op_def mfs_op_def_##name##_##ver = {                        \
		.domain = dom, .op_type = #name, .since_version = ver,        \
		__VA_ARGS__ }
#define MFS_OP(name, ver, ...) MFS_OP_DOMAIN("", name, ver, __VA_ARGS__)

/* Registry lookup: the definition for (domain, op_type) with the largest
 * since_version <= opset, or NULL. */
const mfs_op_def *mfs_op_find(const char *domain, const char *op_type,
			      int64_t opset);
/* All registered definitions (for docs/OPERATORS.md and tests). */
const mfs_op_def *const *mfs_op_all(int *count);

/* Helpers shared by operators (exec/op/op_util.c). */

/* Numpy-style broadcast of two shapes; -EINVAL with message if impossible. */
int mfs_broadcast_shape(const mfs_shape *a, const mfs_shape *b, mfs_shape *out,
			mfs_error *err);
/* Normalise a possibly negative axis against rank; -EINVAL if out of range. */
int mfs_norm_axis(int64_t axis, int rank, int *out, mfs_error *err);
/* -ENOTSUP naming the node when a tensor input or output of ctx is a
 * STRING and the operator does not take strings (MFS_OP_STRINGS); else 0.
 * The engine calls it after infer, at compile and at run. */
int mfs_op_check_strings(mfs_op_ctx *ctx);
/* Fail with a message naming the node: "Conv 'conv1': ..." */
int mfs_op_fail(mfs_op_ctx *ctx, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Was the run this thread executes cancelled (engine.h
 * mfs_exec_watch_cancel)?  An operator that loops without bound (Loop,
 * Scan) asks at each iteration and fails with ECANCELED. */
bool mfs_run_cancelled(void);

#endif

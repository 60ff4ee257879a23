/* backend.h - what a compute backend implements (after ggml's backend
 * table: an interface struct of function pointers beside a context).
 *
 * The graph (mfs_graph) is backend-independent: nodes, operator
 * definitions, constants, static shapes, lifetimes.  A backend turns it into
 * something runnable.  The CPU backend (exec/cpu/cpu_backend.c) runs each
 * operator's run() callback over host buffers; the OpenCL backend keeps
 * tensors on its device and has its own kernels.  A router above both asks
 * supports_op before placing a model and can time a warm-up run on each.
 */
#ifndef MFS_BACKEND_H
#define MFS_BACKEND_H

#include <stdbool.h>

#include "engine.h"
#include "op.h"

struct mfs_exec_stats;

typedef struct mfs_backend_iface {
	/* Short name for status and logs: "cpu", "opencl:NVIDIA H200". */
	const char *(*name)(mfs_backend *b);
	/* Can this backend run the node?  Asked for every node at placement. */
	bool (*supports_op)(mfs_backend *b, const mfs_op_def *def,
			    const onnx_node *node);
	/* Build an execution context for a compiled graph. */
	int (*exec_new)(mfs_backend *b, const mfs_graph *m, void **exec_ctx,
			mfs_error *err);
	/* Run; same contract as mfs_exec_run. */
	int (*exec_run)(void *exec_ctx, const mfs_tensor *inputs,
			mfs_tensor *outputs, mfs_error *err);
	/* Optional (NULL: no device memory): exec_run where inputs may be
	 * device tensors this backend made and outputs with keep[i] set may
	 * come back as device tensors (engine.h, "Resident tensors"). */
	int (*exec_run_keep)(void *exec_ctx, const mfs_tensor *inputs,
			     mfs_tensor *outputs, const bool *keep, mfs_error *err);
	void (*exec_free)(void *exec_ctx);
	/* Release the backend itself (NULL for static backends). */
	void (*free)(mfs_backend *b);
	/* Counters of an execution context (graph.h: mfs_exec_stats). */
	void (*exec_stats)(void *exec_ctx, struct mfs_exec_stats *out);
} mfs_backend_iface;

struct mfs_backend {
	const mfs_backend_iface *iface;
	void *context;
};

#endif

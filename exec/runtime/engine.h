/* engine.h - the public face of exec/: compile an ONNX graph once, then run
 * it on a backend (the CPU, or OpenCL through ocl_backend.h).  What a
 * backend implements is backend.h, for exec/ alone.
 *
 * A compiled mfs_graph is immutable and may be shared by many threads.  An
 * mfs_exec is one execution context (its buffers, its operator states) on
 * one backend; it runs one request at a time, so a server keeps one per
 * concurrent instance (Triton's instance_group count).
 */
#ifndef MFS_ENGINE_H
#define MFS_ENGINE_H

#include "onnx.h"
#include "tensor.h"

/* A graph input or output as a server sees it: dims[i] == -1 is variable;
 * rank == -1 when the model gives no shape at all (any rank is accepted).
 * dtype is UNDEFINED only for an output whose type neither the model nor
 * shape inference knows. */
typedef struct mfs_io_desc {
	char *name;
	mfs_dtype dtype;       /* of the tensors of a sequence or optional */
	mfs_kind kind;         /* tensor, sequence or optional (tensor.h) */
	mfs_kind elem_kind;    /* optional: of a tensor or of a sequence */
	int rank;              /* -1 for a sequence or an optional */
	int64_t dims[MFS_MAX_RANK];
	/* An input that is an initializer made an input at load
	 * (mfs_graph_load_inputs): the value a run that leaves it out gets
	 * (borrowed from the graph); NULL for every other input. */
	const mfs_tensor *default_value;
} mfs_io_desc;

typedef struct mfs_graph mfs_graph;
typedef struct mfs_exec mfs_exec;
typedef struct mfs_backend mfs_backend;

/* Compile: pick an operator definition for every node (by domain, op type
 * and the model's opset), order the nodes, fold constants, infer static
 * shapes, apply graph rewrites (layout, fusion) and compute buffer
 * lifetimes.  Takes ownership of onnx (freed on failure too).  label names
 * the model in messages ("resnet18 v1").  Fails with -ENOTSUP naming the
 * first unsupported operator, or -EINVAL naming the bad node. */
int mfs_graph_compile(onnx_model *onnx, const char *label, mfs_graph **out,
		      mfs_error *err);

/* Read and compile a model file; label as above. */
int mfs_graph_load(const char *path, const char *label, mfs_graph **out,
		   mfs_error *err);

/* The same, where the initializers named in inputs[0..n) become inputs
 * of the graph with their stored value as default (ONNX Runtime's
 * overridable initializers: onnx_model_initializers_as_inputs says which
 * may), so a run may feed them; nothing is folded through them.  A
 * server passes the inputs its config lists. */
int mfs_graph_load_inputs(const char *path, const char *label,
			  const char *const *inputs, int n, mfs_graph **out,
			  mfs_error *err);

void mfs_graph_free(mfs_graph *m);

int mfs_graph_n_inputs(const mfs_graph *m);     /* initializers excluded */
int mfs_graph_n_outputs(const mfs_graph *m);
const mfs_io_desc *mfs_graph_input(const mfs_graph *m, int i);
const mfs_io_desc *mfs_graph_output(const mfs_graph *m, int i);

/* Does the model have sequence or optional values (an input or output
 * of those kinds, or a node that makes or reads them)?  Only the CPU
 * backend runs those (docs/OPENCL.md). */
bool mfs_graph_has_containers(const mfs_graph *m);
/* Does the model carry string tensors (an input, output, constant or
 * value of type STRING, or a Cast to string)?  Only the CPU backend runs
 * those (docs/ARCHITECTURE.md, "String tensors"). */
bool mfs_graph_has_strings(const mfs_graph *m);

/* The CPU backend: a static object, never freed.  Other backends come from
 * their own constructors (ocl_backend.h). */
mfs_backend *mfs_backend_cpu(void);
/* Short name for status and logs: "cpu", "opencl:NVIDIA H200" (owned by
 * the backend). */
const char *mfs_backend_name(mfs_backend *b);

/* A new execution context on backend (NULL = the CPU backend). */
int mfs_exec_new(const mfs_graph *m, mfs_backend *backend, mfs_exec **out,
		 mfs_error *err);
void mfs_exec_free(mfs_exec *e);

/* Run once.  inputs[i] matches mfs_graph_input(m, i) (dtype exactly; shape
 * checked against the fixed dims); a NULL data pointer with numel 0 is
 * fine.  An input with a default_value may be left out: a zeroed tensor
 * (dtype UNDEFINED, no data) there runs with the default.  outputs[] (mfs_graph_n_outputs entries) are filled with new tensors
 * the caller owns and frees with mfs_tensor_release().  On error nothing in
 * outputs needs freeing.  -EINVAL for bad inputs, -EIO (or the operator's
 * errno) when an operator fails; err names the node. */
int mfs_exec_run(mfs_exec *e, const mfs_tensor *inputs, mfs_tensor *outputs,
		 mfs_error *err);

/* Resident tensors: a run may keep outputs in the engine's device memory
 * for a later run to read as inputs without a trip through the host (a
 * decoder's key/value cache, fed back step after step: generate.h).
 * Mark such an output before the run with mfs_tensor_want_device(); a
 * backend with device memory (OpenCL) then fills it as a device tensor
 * (tensor.h MFS_LAYOUT_DEVICE: shape and dtype as usual, the data
 * opaque); the CPU backend ignores the mark.  A device tensor given as
 * an input to a run of any execution context of the same backend is read
 * where it lies, anywhere else it is copied to the host first.  A run
 * consumes a device tensor's data (its memory may hold that run's other
 * values): pass it to one run, then release it; mfs_tensor_to_host reads
 * it before that.  mfs_tensor_release frees it. */

/* Whether runs of inputs' batch size have their thread count decided
 * (exec/runtime/thread_sizing.h: the first runs of each batch size measure one
 * thread against all, all against half): a benchmark warms up until then,
 * so that it times the count the engine keeps, not the trials. */
bool mfs_exec_threads_settled(const mfs_exec *e, const mfs_tensor *inputs);
/* The count decided for inputs' batch size (at most the engine's), 0 while
 * undecided or where the library's defaults apply. */
int mfs_exec_threads_chosen(const mfs_exec *e, const mfs_tensor *inputs);

/* The largest tensor an operator may produce (at load or run); beyond it
 * the node fails with -EFBIG instead of trying to allocate.  Default
 * 16 GiB; fuzzing lowers it.  These limits: engine_limits.c. */
void mfs_engine_set_max_tensor_bytes(size_t n);
size_t mfs_engine_max_tensor_bytes(void);

/* The most iterations one Loop node may run in one run; beyond it the
 * node fails with -EFBIG.  Default: no limit (a model's own trip count
 * or condition ends it); fuzzing lowers it, since a fuzzed trip count
 * would otherwise hang the target.  mfs_engine_max_iterations is the
 * limit in force on the calling thread: the smaller of the global one
 * and the thread's own (mfs_engine_set_thread_max_iterations; 0 lifts
 * it), which the device router sets around its warm-up runs: made-up
 * inputs may never meet a data-dependent loop's exit condition. */
void mfs_engine_set_max_iterations(int64_t n);
void mfs_engine_set_thread_max_iterations(int64_t n);
int64_t mfs_engine_max_iterations(void);

/* Set the compute threads used by operators: one OpenMP team, which
 * OpenBLAS' products run on too (its own thread pool is kept at one
 * thread).  Runs
 * that overlap share them: each gets n / (runs in flight when it starts),
 * at least one.  Without a call, every run uses the libraries' defaults. */
void mfs_engine_set_threads(int n);
/* Make the calling thread's OpenMP team now, of mfs_engine_set_threads'
 * count (nothing before that call or for one thread).  libgomp keeps a
 * pool of threads for each thread that starts a parallel region, and a
 * daemon's runs start on any of its compute threads: on 16 cores a fresh
 * daemon's ResNet-18 runs took 8-36 ms while each compute thread made
 * its pool of 15 threads at its first run (the process went from 44 to
 * 156 threads in 40 runs), 6-8 ms once all had one.  A compute thread
 * calls this when it starts. */
void mfs_engine_thread_warm(void);
/* The threads a run gets when it starts with active runs in flight
 * (itself included) out of threads: threads / active, at least 1. */
int mfs_engine_thread_share(int threads, int active);

/* Cancellation: the runs this thread makes from now on stop, failing
 * with -ECANCELED, once *flag is true: the engine looks at it before each
 * node and at each iteration of Loop and Scan (a single long kernel runs
 * to its end).  NULL: no flag.  The scheduler watches the flag of the
 * instance a run holds (mfs_sched_cancel). */
void mfs_exec_watch_cancel(const _Atomic bool *flag);

/* The budget of the host memory the engine's buffer pools hold (values
 * between nodes, outputs: a run's workspace), process-wide: take(n) before
 * a pool allocates n bytes (nonzero: refused, and the run fails with
 * ENOSPC before it allocates), give(n) when a pool frees them.  Warm runs
 * of the same shapes allocate nothing, so the hooks are off the hot
 * path.  A context keeps its largest run's blocks (counted) until it is
 * freed.  The daemon passes --max-memory's budget; without a call, none. */
void mfs_engine_set_memory_hooks(int (*take)(uint64_t n), void (*give)(uint64_t n));

#endif

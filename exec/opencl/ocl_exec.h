/* ocl_exec.h - the OpenCL execution context, as its two halves share it:
 * ocl_backend.c (contexts, the node loop, the backend object) and ocl_run.c
 * (device memory, value movement, kernel arguments and launches: what the
 * operators of ocl_ops_*.c call through ocl_internal.h).  The arrows run
 * one way: ocl_backend.c calls into ocl_run.c, never the reverse.
 * Internal to exec/opencl/.
 */
#ifndef MFS_OCL_EXEC_H
#define MFS_OCL_EXEC_H

#include <pthread.h>

#include "ocl_internal.h"

/* The backend object: the device and the program every context makes its
 * kernels from.  The program is built by the first context made (under
 * prog_lock), not when the device is opened: opening it to learn its name
 * (KIND_AUTO's stored choices) costs no compile, and a process whose
 * models all run on the CPU compiles nothing.  A build that failed is
 * not tried again: each context gets its error. */
typedef struct ocl_backend_ctx {
	mfs_backend base;
	mfs_ocl_device *dev;
	pthread_mutex_t prog_lock;
	cl_program prog;           /* prog_lock; NULL until built */
	int prog_rc;               /* prog_lock; the failed build's code */
	mfs_error prog_err;        /* prog_lock; and its message */
	char name[300];
} ocl_backend_ctx;

/* A value's runtime slot: where its data is (docs/OPENCL.md). */
typedef struct oval {
	mfs_tensor t;          /* dtype, shape; t.data = host copy or NULL */
	mfs_block *dev;        /* device copy (cl_mem) or NULL */
	void *hbuf;            /* host storage owned by the slot */
	size_t hcap;
	bool on_host;
	bool is_const;
	bool host_made;        /* produced on the host in this run (shape
				  arithmetic), not a caller's input */
} oval;

typedef struct node_rt {
	mfs_node_rt rt;        /* rt.in points into hin */
	mfs_tensor *hin;       /* host views of the inputs for infer/host run */
	cl_mem kept;           /* ocl_node_buffer: kept across runs */
	size_t kept_bytes;
} node_rt;

/* Profile slots past the kernels: CLBlast, then the copies between host
 * and device (the input uploads and output downloads of a run count in
 * its time as much as the kernels do). */
enum { PROF_CLBLAST = K_COUNT, PROF_UPLOAD, PROF_DOWNLOAD, PROF_SLOTS };

struct ocl_exec {
	const mfs_graph *m;
	ocl_backend_ctx *b;
	cl_command_queue queue;
	cl_kernel kernels[K_COUNT];
	size_t wg;             /* work-group size for 1-D launches */
	oval *vals;
	node_rt *nodes;
	mfs_pool pool;
	mfs_block *scratch[OCL_SCRATCH_SLOTS];   /* not in the pool: per
						    context, only grow */
	mfs_exec_stats stats;
	const bool *keep;      /* this run's outputs to leave on the device */
	/* MODELFS_OCL_PROFILE set: each launch waits for its event and adds
	 * its device time here (slot K_COUNT: CLBlast); printed at free */
	bool profile;
	double prof_ms[PROF_SLOTS];
	long prof_calls[PROF_SLOTS];
};

/* The context's device buffer pool (clCreateBuffer blocks), empty. */
void ocl_pool_init(ocl_exec *e);
/* Free the context's scratch buffers (not in the pool). */
void ocl_scratch_free(ocl_exec *e);

/* Input k's slot, or NULL when the node has no such input. */
oval *ocl_in_val(ocl_run *r, int k);
/* Make v's data present on the host (downloads it when only the device
 * has it). */
int ocl_to_host(ocl_run *r, oval *v);
/* Host storage of at least bytes for v (kept across runs). */
int ocl_host_reserve(oval *v, size_t bytes, mfs_error *err);

/* Add a finished event's device time to a profile slot (a kernel id or
 * PROF_*) and release it; NULL does nothing. */
void ocl_prof_record(ocl_exec *e, cl_event ev, int slot);
/* The profile of a context, one line per kernel, to stderr. */
void ocl_prof_print(const ocl_exec *e);

#endif

/* backend_runtime.h - what every backend does the same way around a
 * compiled graph: the block pool that backs its values, the per-node
 * runtime (operator argument arrays, prepare() state and the input
 * signature that decides when prepare() runs again), and naming the node
 * in an error.  Internal to exec/: cpu_backend.c and ocl_backend.c use it;
 * what differs between them (host memory or cl_mem, layouts, transfers)
 * stays in each backend.
 */
#ifndef MFS_BACKEND_RUNTIME_H
#define MFS_BACKEND_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph.h"

/* ---- the block pool ----
 *
 * Blocks are handed out by request number within a run: the block that
 * served the k-th request of the previous run is offered first, so a run
 * with the shapes of the last one replays the same assignment and
 * allocates nothing.  Otherwise best fit among free blocks, then regrowing
 * the largest free block to a quarter more than asked (contents need not
 * survive; a growing value regrows once in a few runs), then a new block:
 * the pool never holds more blocks than the most values ever alive at
 * once.  Reference counts let views share a block. */

typedef struct mfs_block {
	void *mem;             /* what alloc returned: host memory or a cl_mem */
	size_t cap;
	int refs;              /* 0 = free */
	bool pinned;           /* never goes back (an OpenCL constant's copy) */
	bool counted;          /* cap was taken from the memory budget */
} mfs_block;

typedef struct mfs_pool {
	/* The backend's memory: alloc returns NULL and sets *status on
	 * failure; release frees what alloc returned.  Both NULL: 64-byte
	 * aligned host memory (mfs_aligned_block), status ENOMEM. */
	void *(*alloc)(void *arg, size_t size, int *status);
	void (*release)(void *arg, void *mem);
	void *arg;
	int oom_status;        /* *status when the pool's own host memory
				  runs out */
	uint64_t *n_allocs;    /* bumped at every alloc (stats.buffer_allocs) */
	mfs_block **blocks;
	int n_blocks, cap_blocks;
	mfs_block **hints;     /* block given to request k in the last run */
	int n_hints, cap_hints;
	int seq;               /* requests so far in this run */
} mfs_pool;

/* A block of at least size bytes with one reference, or NULL with
 * *status set (the alloc callback's status, or oom_status; ENOSPC when a
 * host pool's memory budget refused it, engine.h
 * mfs_engine_set_memory_hooks). */
mfs_block *mfs_pool_take(mfs_pool *p, size_t size, int *status);

/* Drop one reference (NULL and pinned blocks: nothing). */
static inline void mfs_block_put(mfs_block *b)
{
	if (b && !b->pinned)
		b->refs--;
}

/* A new run starts: request numbers count from 0 again. */
static inline void mfs_pool_new_run(mfs_pool *p)
{
	p->seq = 0;
}

/* Take b (one reference, not pinned) out of the pool, its memory the
 * caller's from now on (what p->alloc returned, or for a host pool a
 * free()able mfs_aligned_block; *cap bytes); b is freed and no later
 * request gets it: the request that got b in this run gets a new block
 * in the next.  A host pool gives b's bytes back to the memory budget
 * (the new owner accounts for them).  For resident tensors (engine.h) and
 * the CPU's graph outputs, handed to the caller without a copy. */
void *mfs_pool_detach(mfs_pool *p, mfs_block *b, size_t *cap);
/* The reverse, for pools with their own alloc: mem (what an alloc of
 * this pool's kind returned, cap bytes) becomes a block of p with one
 * reference, freed with the pool.
 * NULL when out of memory (mem stays the caller's). */
mfs_block *mfs_pool_adopt(mfs_pool *p, void *mem, size_t cap);

/* Free every block and the pool's arrays (the callbacks stay). */
void mfs_pool_release(mfs_pool *p);

/* ---- one run ---- */

/* What differs between backends in running a graph; mfs_run_graph calls
 * them in the order every backend needs.  e is the backend's context. */
typedef struct mfs_run_steps {
	/* Run node i (graph order); a negative errno with err filled. */
	int (*node)(void *e, int i, mfs_error *err);
	/* Value v's last reader ran: give its buffer back. */
	void (*release)(void *e, int v);
	/* Graph output i into dst as a new tensor the caller owns (plain
	 * layout); on error dst holds nothing. */
	int (*output)(void *e, int i, mfs_tensor *dst, mfs_error *err);
} mfs_run_steps;

/* Run m's nodes in order, releasing every value after its last reader,
 * then hand out the graph outputs.  A cancelled run (op.h
 * mfs_run_cancelled) fails with -ECANCELED before its next node.  On
 * error the outputs already made are released, so the caller's outputs
 * need no freeing.  Binding the inputs
 * before and releasing what a failed run still holds after stay with the
 * backend. */
int mfs_run_graph(const mfs_graph *m, const mfs_run_steps *s, void *e,
		  mfs_tensor *outputs, mfs_error *err);

/* ---- one node at run time ---- */

/* What a node's prepare() last saw, to call it again when it changes. */
typedef struct mfs_in_sig {
	mfs_dtype dtype;       /* UNDEFINED: the input was omitted */
	mfs_layout layout;
	mfs_shape shape;
} mfs_in_sig;

typedef struct mfs_node_rt {
	/* The operator's ctx->in / ctx->out arrays, MFS_ARG_PAD NULL
	 * entries past n_in / n_out (op.h's contract). */
	mfs_tensor **in, **out;
	void *state;           /* the operator's prepare() state */
	bool prepared;
	mfs_in_sig *sig;       /* n_in entries */
} mfs_node_rt;

/* Allocate rt's arrays for nd (rt zeroed before); -ENOMEM on failure,
 * after which mfs_node_rt_release still frees what was made. */
int mfs_node_rt_init(mfs_node_rt *rt, const mfs_node *nd);
/* Release the operator's state and free rt's arrays. */
void mfs_node_rt_release(mfs_node_rt *rt, const mfs_node *nd);

/* The operator context for running nd with rt's arrays. */
mfs_op_ctx mfs_node_ctx(const mfs_node *nd, mfs_node_rt *rt, mfs_error *err);

/* Call prepare() when the operator has one and it has not run yet, or the
 * shapes are not static and an input's dtype, layout or shape changed
 * since it last ran.  0, or the operator's error; *prepares counts calls. */
int mfs_node_rt_prepare(mfs_node_rt *rt, const mfs_node *nd, mfs_op_ctx *ctx,
			uint64_t *prepares);

/* Infer the output shapes at run (shapes not static): the outputs drop
 * their data and layout first.  The operator's infer() result. */
int mfs_node_infer(mfs_op_ctx *ctx);

/* Make sure err names the node ("Conv 'conv1': ..."): prefix it when the
 * operator's message does not, or say "failed (<errno text>)" when it left
 * none.  Returns rc as a negative errno (-EIO for a non-negative rc). */
int mfs_node_error(const mfs_node *nd, int rc, mfs_error *err);

/* mfs_fail with the message headed by the node: "Conv 'conv1': <fmt>". */
int mfs_node_fail(const mfs_node *nd, mfs_error *err, int code,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* 64-byte aligned host memory of at least size bytes (at least 64), for
 * vectorised operator loops; free() it. */
void *mfs_aligned_block(size_t size);

/* The bytes of t's dtype and shape; 0 when they overflow. */
static inline size_t mfs_rt_bytes(const mfs_tensor *t)
{
	size_t n = 0;
	mfs_tensor_bytes(t, &n);
	return n;
}

#endif

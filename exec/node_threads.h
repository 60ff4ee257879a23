/* node_threads.h - how many of a run's threads one node gets.
 *
 * Why: every OpenMP region wakes the team's sleeping threads (tens of
 * microseconds each on a virtual machine under OMP_WAIT_POLICY=PASSIVE),
 * and oneDNN's matmul and convolution kernels split even a small product
 * over every thread they are given.  On the 16-core host the encoder's 24
 * Dense nodes took 11.8 ms a run on 16 threads and 3.2 ms on 4
 * (docs/PERFORMANCE.md, "16 cores, threads").  So a node runs on as many
 * threads as its work fills: its estimated work over a grain per thread,
 * at least one, at most the run's threads.
 *
 * Work is counted in multiply-adds: a product's (MatMul, Gemm, Dense,
 * Conv, ConvTranspose, Attention, the RNNs) from its shapes, any other
 * node's as MFS_ELEM_WORK per element it reads or writes (the larger of
 * its first input and its outputs).
 *
 * The CPU backend sets the node's count with omp_set_num_threads before
 * the node's prepare and run, so the oneDNN primitives that prepare
 * builds are built for that count too.
 */
#ifndef MFS_NODE_THREADS_H
#define MFS_NODE_THREADS_H

#include <stdint.h>

#include "op.h"

/* What one element of a memory-bound operator costs, in multiply-adds of
 * a product (a core streams about one element in the time its vector
 * units do this many multiply-adds). */
#define MFS_ELEM_WORK 8
/* Default multiply-adds per thread below which another thread does not
 * pay for itself. */
#define MFS_THREAD_GRAIN_DEFAULT ((int64_t)1 << 19)

/* The node's estimated work (>= 1) from its operator type and the shapes
 * of ctx's inputs and outputs (after infer). */
int64_t mfs_node_work(const mfs_op_ctx *ctx);

/* Threads for work on a run of `threads`: work / grain rounded up,
 * clamped to [1, threads]; `threads` itself when grain <= 0 (no cap). */
int mfs_node_threads(int64_t work, int64_t grain, int threads);

/* The grain: MFS_THREAD_GRAIN from the environment when set (a number of
 * multiply-adds; 0 turns the cap off, for A/B runs), else
 * MFS_THREAD_GRAIN_DEFAULT. */
int64_t mfs_thread_grain(void);

#endif

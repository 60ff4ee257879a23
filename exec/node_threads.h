/* node_threads.h - how many of a run's threads one node gets.
 *
 * Why: every OpenMP region wakes the team's sleeping threads (tens of
 * microseconds each on a virtual machine under OMP_WAIT_POLICY=PASSIVE).
 * On the 16-core host the encoder at batch 1 (142 nodes, most of them
 * Adds, LayerNorms and Transposes of 32k elements) took 12-17 ms a run on
 * 16 threads and 3.3-3.8 ms once those small nodes ran on one thread
 * (docs/PERFORMANCE.md, "16 cores, threads").  So a node whose estimated
 * work is at most a grain runs on the calling thread alone (no fork, no
 * join, no wake-up), and any other node on all of the run's threads.
 * Giving mid-sized nodes a few threads (work / grain of them) was
 * measured too and lost: ResNet-50 went from 17 to 22-28 ms, the encoder
 * at batch 32 from 35 to 58-72 ms.
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
/* Default work (multiply-adds) up to which a node runs on one thread:
 * 64k elements of an elementwise operator. */
#define MFS_THREAD_GRAIN_DEFAULT ((int64_t)1 << 19)

/* The node's estimated work (>= 1) from its operator type and the shapes
 * of ctx's inputs and outputs (after infer). */
int64_t mfs_node_work(const mfs_op_ctx *ctx);

/* Threads for work on a run of `threads` (at least 1): one when work <=
 * grain, else all of them; all of them when grain <= 0 (no cap). */
int mfs_node_threads(int64_t work, int64_t grain, int threads);

/* The grain: MFS_THREAD_GRAIN from the environment when set (a number of
 * multiply-adds; 0 runs every node on all threads, for A/B runs), else
 * MFS_THREAD_GRAIN_DEFAULT. */
int64_t mfs_thread_grain(void);

#endif

/* node_threads.h - how many of a run's threads one node gets.
 *
 * Why: every OpenMP region wakes the team's sleeping threads (tens of
 * microseconds each on a virtual machine under OMP_WAIT_POLICY=PASSIVE),
 * and oneDNN splits even a small product statically over every thread it
 * is given, so one descheduled virtual CPU stalls the whole node.  On the
 * 16-core host the encoder at batch 1 took 12-17 ms a run on 16 threads
 * (ONNX Runtime: 3.3-4.6 ms); with its small nodes on one thread and its
 * products on about one thread per million multiply-adds, 5.7-7.0 ms
 * (docs/PERFORMANCE.md, "16 cores, threads").
 *
 * The rule: a product (MatMul, Gemm, Dense, Conv, ConvTranspose,
 * Attention, the RNNs) of W multiply-adds runs on W / grain threads,
 * rounded up; any other node runs on one thread when the elements it
 * touches (the larger of its first input and its outputs) times
 * MFS_ELEM_WORK are at most a grain, else on all of them.  Memory-bound
 * nodes get no partial count because it was measured to lose: ResNet-50's
 * Adds and Relus (100k-800k elements) on 2-12 threads took it from 17 to
 * 22-28 ms, the encoder's at batch 32 on 4 threads from 35 to 58-72 ms.
 * Every count is clamped to [1, the run's threads].
 *
 * The CPU backend sets the node's count with omp_set_num_threads before
 * the node's prepare and run, so the oneDNN primitives that prepare
 * builds are built for that count too.
 */
#ifndef MFS_NODE_THREADS_H
#define MFS_NODE_THREADS_H

#include <stdbool.h>
#include <stdint.h>

#include "op.h"

/* What one element of a memory-bound operator counts as, in multiply-adds
 * of a product: with the default grain, nodes of up to 64k elements run on
 * one thread. */
#define MFS_ELEM_WORK 16
/* Default multiply-adds per thread. */
#define MFS_THREAD_GRAIN_DEFAULT ((int64_t)1 << 20)

/* The node's estimated work (>= 1) from its operator type and the shapes
 * of ctx's inputs and outputs (after infer); *product says whether it is
 * a product's multiply-adds or elements times MFS_ELEM_WORK. */
int64_t mfs_node_work(const mfs_op_ctx *ctx, bool *product);

/* Threads for a node of that work on a run of `threads` (the rule above);
 * all of them when grain <= 0 (no cap). */
int mfs_node_threads(int64_t work, bool product, int64_t grain, int threads);

/* The grain: MFS_THREAD_GRAIN from the environment when set (a number of
 * multiply-adds; 0 runs every node on all threads, for A/B runs), else
 * MFS_THREAD_GRAIN_DEFAULT. */
int64_t mfs_thread_grain(void);

#endif

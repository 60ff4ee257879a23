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
 * The rule: a node runs on one thread when its work is at most a grain,
 * else on all of the run's threads.  A product's work (MatMul, Gemm,
 * Dense, Conv, ConvTranspose, Attention, the RNNs, the QDQ rewrite's QConv
 * and QDense) is its multiply-adds;
 * any other node's is the elements it touches (the larger of its first
 * input and its outputs) times MFS_ELEM_WORK.  A depthwise convolution's
 * multiply-adds count MFS_DEPTHWISE_WORK times.
 *
 * Never a count in between: libgomp ends the surplus threads of its pool
 * whenever a parallel region asks for fewer threads than the one before
 * (more than one), and creates them again at the next larger region: a
 * thread, its 8 MiB stack and its first page faults each time.  A run of
 * ResNet-50 on the 16-core host put its last product on 2 threads, so
 * every run's first convolution re-created 14 threads: 170 page faults
 * and 0.6-1.8 ms of a 9 ms run.  With one count or the whole team,
 * MobileNetV2 at batch 1 went from 3.3-3.8 to 2.1-2.3 ms there and
 * ResNet-50 from 7.8-10.0 to 8.2-9.2; the encoder, for which products had
 * W / grain threads (12-17 -> 5.7-7.0 ms against all 16 then), was no
 * slower (docs/PERFORMANCE.md, "One thread or the whole team").  Regions
 * of one thread leave the pool alone.  MFS_TEAMS=partial gives products
 * W / grain threads again, for A/B runs.  oneDNN still sizes some of its
 * own regions below the team (ResNet-50's last layers): those re-create
 * threads whatever the engine asks.
 * Memory-bound nodes never had a partial count: ResNet-50's Adds and
 * Relus (100k-800k elements) on 2-12 threads took it from 17 to 22-28
 * ms, the encoder's at batch 32 on 4 threads from 35 to 58-72 ms.
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
/* What one multiply-add of a depthwise convolution (W [M, 1, k...]: each
 * output reads one input channel) counts as: it reuses no loaded input
 * across output channels, so it costs memory traffic that a dense
 * product's does not.  On 1 thread MobileNetV2's depthwise layers from
 * 14x14 on (250k-680k multiply-adds) took 0.02-0.07 ms, 1.5-1.8x their
 * time on 2 threads and ONNX Runtime's on 2; counted 4 times they take
 * the team (docs/PERFORMANCE.md, "Depthwise layers on the team"). */
#define MFS_DEPTHWISE_WORK 4
/* Default multiply-adds per thread. */
#define MFS_THREAD_GRAIN_DEFAULT ((int64_t)1 << 20)
/* A product's grain is the grain on a team of this many threads, and
 * scales with the team: a product goes to the team when each thread gets
 * at least grain / 16 multiply-adds (2^16 by default: 2^20 on 16 threads
 * as before, 2^17 on 2).  Waking a team costs about one wake-up per
 * thread, and a small product that is memory-bound (a one-row product
 * reading its weights) gains from a second core what a compute-bound one
 * does.  On 2 cores GPT-2's one-token products (196k-262k multiply-adds)
 * took 0.27-0.32 ms a run on one thread, 0.21-0.23 on both
 * (docs/PERFORMANCE.md, "Small products on the team"). */
#define MFS_PRODUCT_TEAM_REF 16

/* The node's estimated work (>= 1) from its operator type and the shapes
 * of ctx's inputs and outputs (after infer); *product says whether it is
 * a product's multiply-adds or elements times MFS_ELEM_WORK. */
int64_t mfs_node_work(const mfs_op_ctx *ctx, bool *product);

/* Threads for a node of that work on a run of `threads` (the rule above);
 * all of them when grain <= 0 (no cap).  partial: a product gets work /
 * grain threads, rounded up (MFS_TEAMS=partial). */
int mfs_node_threads(int64_t work, bool product, int64_t grain, int threads, bool partial);

/* The grain: MFS_THREAD_GRAIN from the environment when set (a number of
 * multiply-adds; 0 runs every node on all threads, for A/B runs), else
 * MFS_THREAD_GRAIN_DEFAULT. */
int64_t mfs_thread_grain(void);

/* Whether products take partial teams: MFS_TEAMS=partial in the
 * environment (A/B runs); else one thread or all. */
bool mfs_thread_partial(void);

#endif

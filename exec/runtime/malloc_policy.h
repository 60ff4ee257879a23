/* malloc_policy.h - glibc malloc settings for the engine's buffers, for
 * the daemon and for the tools that measure it (bench_engine,
 * bench_generate).
 *
 * Why: glibc serves a block above its mmap threshold (128 KiB at start)
 * with a fresh mapping, and after freeing one raises the threshold to that
 * block's size only.  A decoder's key/value cache grows by one token at
 * every step: each step's outputs (present.N.key|value, 400-800 KiB each
 * for GPT-2 small) are a little larger than the ones freed before, so all
 * 24 were mapped afresh at every step, their pages faulted in again (about
 * 2 ms per MB on the development VM, where freed pages go back to the
 * host).  GPT-2 small's 128 new tokens after a 128-token prompt took 1.6 s
 * a step on 1 thread; with the settings below 0.43 s, the prompt 7.4 s
 * against 1.7 (the same run, bench_generate, 2026-11-28).
 *
 * So blocks under MFS_MALLOC_MMAP_MIN come from the heap, whose freed
 * space is reused, and up to MFS_MALLOC_TRIM_KEEP of free space at the
 * heap's top stays mapped.  Larger tensors keep their own mappings (and
 * the daemon's kept big buffers, src/core/bigbuf.h).
 */
#ifndef MFS_MALLOC_POLICY_H
#define MFS_MALLOC_POLICY_H

#define MFS_MALLOC_MMAP_MIN (32u << 20)
#define MFS_MALLOC_TRIM_KEEP (64u << 20)

/* Set glibc's mmap and trim thresholds as above, unless the environment
 * already sets them (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_ or
 * GLIBC_TUNABLES: the user's choice, kept).  Returns whether it set them.
 * Call once, early, before the threads start. */
int mfs_malloc_keep_pages(void);

#endif

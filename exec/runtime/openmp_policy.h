/* openmp_policy.h - how OpenMP threads wait between parallel regions, for
 * the daemon and for the tools that measure it (bench_engine).
 *
 * Why: libgomp's default spins about 7 ms (GOMP_SPINCOUNT 300000 on this
 * machine) before a thread sleeps, and OMP_WAIT_POLICY=PASSIVE sleeps at
 * once.  Sleeping costs a futex wake-up of tens of microseconds on a
 * virtual machine at every region (one or more per node): on the quiet
 * 2-core machine PASSIVE ran GPT-2 at batch 8 in 1.2-2.0 ms against 0.6-0.8
 * spinning, MobileNetV2 in 7.3-8.6 ms against 4.8-5.2.  Spinning 7 ms,
 * though, holds a core for that long after every run, and beside busy
 * processes it made runs 10-100x slower.  So the engine spins a bounded
 * MFS_GOMP_SPINCOUNT (about 0.8 ms here: as fast as 300000 on every bench
 * model) and takes one thread while other work keeps the cores busy
 * (cpu_contention.h), which measured as fast as PASSIVE under load
 * (docs/PERFORMANCE.md, "Spinning, and one thread under load").
 */
#ifndef MFS_OPENMP_POLICY_H
#define MFS_OPENMP_POLICY_H

#define MFS_GOMP_SPINCOUNT "30000"

/* libgomp reads its policy before main() runs, so the only way to choose
 * for the user is to start again with it set: unless OMP_WAIT_POLICY or
 * GOMP_SPINCOUNT is already in the environment (the user's choice, kept),
 * set GOMP_SPINCOUNT and execv /proc/self/exe with argv.  Returns when
 * nothing was to be done or the exec failed (then the library default
 * applies). */
void mfs_openmp_prefer_bounded_spin(char **argv);

#endif

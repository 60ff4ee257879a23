/* engine_limits.c - the engine's resource limits (declared in engine.h):
 * the largest tensor an operator may produce, the most iterations a Loop
 * may run.  The compile (graph_fold.c), the backends (cpu_backend.c) and
 * operators (loop.c) read them; they live apart from engine.c, which runs
 * graphs on a backend, so that reading a limit does not make the code
 * depend on the engine that calls it (no call cycle between files).
 */
#include <stdatomic.h>
#include <stdint.h>

#include "engine.h"

static _Atomic size_t max_tensor_bytes = (size_t)16 << 30;

void mfs_engine_set_max_tensor_bytes(size_t n)
{
	atomic_store(&max_tensor_bytes, n);
}

size_t mfs_engine_max_tensor_bytes(void)
{
	return atomic_load(&max_tensor_bytes);
}

static _Atomic int64_t max_iterations = INT64_MAX;
static _Thread_local int64_t thread_max_iterations;   /* 0: none */

void mfs_engine_set_max_iterations(int64_t n)
{
	atomic_store(&max_iterations, n);
}

void mfs_engine_set_thread_max_iterations(int64_t n)
{
	thread_max_iterations = n;
}

int64_t mfs_engine_max_iterations(void)
{
	int64_t n = atomic_load(&max_iterations);
	return thread_max_iterations > 0 && thread_max_iterations < n ?
	       thread_max_iterations : n;
}

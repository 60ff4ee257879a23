/* run_cancel.c - the cancel flag a thread's runs watch (engine.h
 * mfs_exec_watch_cancel, op.h mfs_run_cancelled).  Thread-local: a run
 * and every body graph it runs execute their nodes on the thread that
 * called mfs_exec_run (OpenMP's team works inside one node), so the flag
 * reaches nested runs without passing through every execution context. */
#include <stdatomic.h>
#include <stdbool.h>

#include "engine.h"
#include "op.h"

static _Thread_local const _Atomic bool *watched;

void mfs_exec_watch_cancel(const _Atomic bool *flag)
{
	watched = flag;
}

bool mfs_run_cancelled(void)
{
	return watched && atomic_load_explicit(watched, memory_order_relaxed);
}

/* worker_spawn.h - start a custom backend's worker process
 * (docs/BACKENDS.md, "Isolation"): the daemon's binary in its hidden
 * `--backend-worker` mode, by posix_spawn (the multi-threaded daemon never
 * forks without exec), in a process group of its own, with the socket on
 * MFS_WORKER_FD, /dev/null on stdin and stdout, and nothing else of the
 * daemon's.
 *
 * Every worker is spawned by one thread that lives as long as the process.
 * The worker asks the kernel to kill it when its parent dies
 * (PR_SET_PDEATHSIG, worker_serve.c), and to the kernel the parent is the
 * *thread* that spawned it: a worker spawned by a loader or compute thread
 * would be killed when that thread ends, one spawned here only when the
 * daemon does. */
#ifndef MFS_WORKER_SPAWN_H
#define MFS_WORKER_SPAWN_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"

/* Spawn program with child_sock as the worker's MFS_WORKER_FD (the caller
 * keeps and closes its own child_sock).  quiet_stderr: the worker's stderr
 * is /dev/null, not the daemon's.  On success *pid is the worker, also its
 * process group's id, and *pidfd a close-on-exec pidfd for it. */
int mfs_worker_spawn(const char *program, int child_sock, bool quiet_stderr, pid_t *pid,
		     int *pidfd, mfs_error *err);

#endif

/* main.c - dispatch to the command (see commands.h). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "worker_serve.h"

/* OpenMP threads (oneDNN's and our kernels') spin after every parallel
 * region by default.  A server shares its cores with its clients, other
 * instances and OpenBLAS's own threads, and spinning there cost 100x (MLP
 * batch 64: 160 ms spinning vs 1.5 ms passive on a loaded 2-core machine,
 * docs/PERFORMANCE.md).  libgomp reads its policy before main() runs, so
 * the only way to choose for the user is to start again with it set.  A
 * user who sets OMP_WAIT_POLICY or GOMP_SPINCOUNT keeps their choice. */
static void prefer_passive_openmp(char **argv)
{
	if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT"))
		return;
	setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
	execv("/proc/self/exe", argv);
	/* exec failed: carry on with the default policy */
}

int main(int argc, char **argv)
{
	/* A custom backend's worker process (backend_worker.h): the daemon
	 * starts its own binary in this mode, never a fork of itself. */
	if (argc == 2 && strcmp(argv[1], MFS_WORKER_FLAG) == 0)
		return mfs_worker_serve(MFS_WORKER_FD);
	prefer_passive_openmp(argv);
	if (argc > 1 && strcmp(argv[1], "run") == 0)
		return mfs_cmd_run(argc - 1, argv + 1);
	return mfs_cmd_mount(argc, argv);
}

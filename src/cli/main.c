/* main.c - dispatch to the command (see commands.h). */
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "commands.h"
#include "malloc_policy.h"
#include "openmp_policy.h"
#include "worker_serve.h"

int main(int argc, char **argv)
{
	/* A custom backend's worker process (backend_worker.h): the daemon
	 * starts its own binary in this mode, never a fork of itself. */
	if (argc == 2 && strcmp(argv[1], MFS_WORKER_FLAG) == 0) {
		prctl(PR_SET_NAME, "modelfs-backend");
		return mfs_worker_serve(MFS_WORKER_FD);
	}
	/* Started (or started again below) through /proc/self/exe, the
	 * process would be named "exe": `ps` and `pgrep -x modelfs` must
	 * find modelfs.  Threads made from now on inherit the name. */
	prctl(PR_SET_NAME, "modelfs");
	/* the wait policy of the engine's threads (openmp_policy.h) */
	mfs_openmp_prefer_bounded_spin(argv);
	/* buffers that grow run after run reuse their pages (malloc_policy.h) */
	mfs_malloc_keep_pages();
	if (argc > 1 && strcmp(argv[1], "run") == 0)
		return mfs_cmd_run(argc - 1, argv + 1);
	return mfs_cmd_mount(argc, argv);
}

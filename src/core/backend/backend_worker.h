/* backend_worker.h - one instance of a custom-backend model, seen from the
 * daemon: a worker process that runs the backend's library
 * (docs/BACKENDS.md, "Isolation").
 *
 * mfs_worker_new spawns the worker (the daemon's own binary in its hidden
 * `--backend-worker` mode, by posix_spawn: the multi-threaded daemon never
 * forks) and waits for the library's init: an ABI mismatch or a failing
 * init is a load error with the library's reason.  mfs_worker_run sends
 * one batch and checks what comes back against the config.  When the
 * worker dies during a run, that run fails with -EIO and the reason (the
 * signal or exit status); the next run starts a new worker, waiting first
 * (50 ms, doubling to 5 s) while the crashes keep coming.  One run at a
 * time per worker (the scheduler's instance rule). */
#ifndef MFS_BACKEND_WORKER_H
#define MFS_BACKEND_WORKER_H

#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "error.h"
#include "tensor.h"

typedef struct mfs_worker mfs_worker;

typedef struct mfs_worker_spec {
	const char *program;          /* binary that has the worker mode ("/proc/self/exe") */
	const char *library;          /* the backend's .so, a path */
	const char *model_name;
	int64_t version;
	const char *version_dir;      /* REPOSITORY/model/version */
	int instance;
	const mfs_model_config *config;   /* completed (mfs_config_complete_declared) */
} mfs_worker_spec;

/* Start the worker and init the backend.  Errors name the model, the
 * backend and the reason; nothing is left running on failure. */
int mfs_worker_new(const mfs_worker_spec *spec, mfs_worker **out, mfs_error *err);

/* Workers started from now on get /dev/null as stderr, not the
 * process's: for a daemon that will detach from the terminal or pipe it
 * was started from (a worker holding it would keep the caller waiting).
 * stdin and stdout are always /dev/null. */
void mfs_worker_quiet_stderr(void);

/* Run one batch: inputs[i] is the config's input i (an empty tensor for an
 * optional input not given); on success outputs[i] (config order) own
 * their data.  -EIO when the backend failed (its text), crashed (the
 * signal), or returned a tensor that does not match the config; -EAGAIN
 * is never returned: a dead worker is replaced here. */
int mfs_worker_run(mfs_worker *w, const mfs_tensor *inputs, mfs_tensor *outputs,
		   mfs_error *err);

/* The worker's pid now (0 when none runs); for tests and logs. */
pid_t mfs_worker_pid(const mfs_worker *w);

/* Ask the worker to finalize and exit (killed if it does not within 2 s). */
void mfs_worker_free(mfs_worker *w);

#endif

/* backend_worker.h - one instance of a custom-backend model, seen from the
 * daemon: a worker process that runs the backend's library
 * (docs/BACKENDS.md, "Isolation").
 *
 * mfs_worker_new spawns the worker (worker_spawn.h: the daemon's own
 * binary in its hidden `--backend-worker` mode, in a process group of its
 * own) and waits for the library's init: an ABI mismatch or a failing
 * init is a load error with the library's reason.  mfs_worker_run sends
 * one batch and checks what comes back against the config.
 *
 * Supervision does not rest on the socket alone: the daemon watches the
 * worker process itself (a pidfd), so a worker that dies is noticed at
 * once even while a process the backend started holds the socket open.
 * Whenever a worker ends (a crash, a limit, a protocol error, unload) its
 * whole process group is killed.  init and execute have time limits
 * (mfs_worker_set_timeouts).  When the worker dies or is killed during a
 * run, that run fails with the reason; the next run starts a new worker,
 * waiting first (50 ms, doubling to 5 s) while the crashes keep coming.
 * One run at a time per worker (the scheduler's instance rule). */
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

/* The limits' defaults, in seconds (docs/SPEC.md section 1). */
#define MFS_WORKER_INIT_TIMEOUT_DEFAULT 60
#define MFS_WORKER_EXEC_TIMEOUT_DEFAULT 60

/* The limits for every worker, from now on (--backend-init-timeout,
 * --backend-exec-timeout); a value <= 0 leaves that one as it is. */
void mfs_worker_set_timeouts(int init_secs, int exec_secs);

/* The daemon is stopping: every wait on a worker's init ends now
 * (-ECANCELED), every run's ends within run_grace_ms (then the worker is
 * killed and the run fails -ECANCELED), and no worker is started again.
 * Workers are still ended by mfs_worker_free.  For good: there is no
 * undo. */
void mfs_worker_stop_all(uint64_t run_grace_ms);

/* Start the worker and init the backend.  Errors name the model, the
 * backend and the reason; nothing is left running on failure: -ETIMEDOUT
 * when init did not return within the limit, -EIO when the worker died,
 * -EINVAL when the library or its init refused, -ECANCELED when the
 * daemon is stopping. */
int mfs_worker_new(const mfs_worker_spec *spec, mfs_worker **out, mfs_error *err);

/* Workers started from now on get /dev/null as stderr, not the
 * process's: for a daemon that will detach from the terminal or pipe it
 * was started from (a worker holding it would keep the caller waiting).
 * stdin and stdout are always /dev/null. */
void mfs_worker_quiet_stderr(void);

/* Run one batch: inputs[i] is the config's input i (an empty tensor for an
 * optional input not given); on success outputs[i] (config order) own
 * their data.  -EIO when the backend failed (its text), crashed (the
 * signal), broke the protocol or returned a tensor that does not match
 * the config; -ETIMEDOUT when execute did not return within the limit
 * (the worker is killed); -ECANCELED when the daemon stopped meanwhile.
 * -EAGAIN is never returned: a dead worker is replaced here. */
int mfs_worker_run(mfs_worker *w, const mfs_tensor *inputs, mfs_tensor *outputs,
		   mfs_error *err);

/* The worker's pid now (0 when none runs); for tests and logs. */
pid_t mfs_worker_pid(const mfs_worker *w);

/* Ask the worker to finalize and exit; its process group is killed after
 * 2 s at most. */
void mfs_worker_free(mfs_worker *w);

#endif

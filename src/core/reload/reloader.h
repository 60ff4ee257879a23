/* reloader.h - hot reload (SPEC.md section 8, docs/RELOAD.md): keeps the
 * registry in step with the repository while mounted.
 *
 * A watcher (watcher.h) says which model directory changed; the change is
 * acted on once that directory has been quiet for quiet_ms, on one loader
 * thread (never on a request path).  Acting on a model ("reconciling")
 * reads it from the disk: the versions its version_policy selects are
 * loaded when new or changed (config or any file under the version
 * directory), swapped in only once READY; versions no longer selected are
 * unloaded, draining (requests bound to them still run); a model
 * directory that is gone is unloaded.  A failed load or a bad config
 * leaves what serves in place and shows the reason (registry state); the
 * next change to the model retries.  After each reconcile, changed(ctx,
 * model) is called on the loader thread with no lock held (the daemon
 * drops the kernel's cached entries there).
 *
 * The first load (every model of the repository at start) runs on
 * load_threads threads at once (load_pool.h), ensembles after the
 * models; every model is listed before it starts, LOADING.
 *
 * The model control mode (model_control.h) says what is watched and what
 * is loaded: poll watches; none and explicit watch nothing (SIGHUP's
 * rescan still reconciles).  In explicit mode only the models named at
 * start or loaded since through mfs_reloader_control are loaded; every
 * other model of the repository is listed UNAVAILABLE ("not loaded").
 */
#ifndef MFS_RELOADER_H
#define MFS_RELOADER_H

#include "error.h"
#include "model_control.h"
#include "registry.h"

typedef struct mfs_reloader mfs_reloader;

typedef struct mfs_reloader_conf {
	const char *repository;        /* absolute path */
	mfs_registry *registry;
	mfs_control_mode mode;         /* poll (default), none, explicit */
	char *const *load_models;      /* explicit: loaded at start (borrowed) */
	int n_load_models;
	int poll_secs;                 /* poll mode; 0: inotify */
	int quiet_ms;
	int load_threads;              /* the first load's (--model-load-thread-count); < 1: 1 */
	void (*changed)(void *ctx, const char *model);   /* may be NULL */
	void *ctx;
} mfs_reloader_conf;

/* Start watching and list every model of the repository in the
 * registry: the versions to load LOADING (explicit mode's others "not
 * loaded"); nothing is loaded yet.  0, or a negative errno when the
 * repository cannot be read or watched, or (-ENOENT) a model of
 * load_models is not in it.  Changes are queued but not acted on until
 * mfs_reloader_run. */
int mfs_reloader_new(const mfs_reloader_conf *conf, mfs_reloader **out,
		     mfs_error *err);

/* The first load, on the caller's thread and load_threads threads:
 * every listed model is reconciled (the changed callback called after
 * each).  Returns the number of versions (or configs) that failed.
 * mfs_reloader_run's thread does it first when nobody did; a second
 * call returns the first's count. */
int mfs_reloader_load_first(mfs_reloader *rl);

/* Wait for the first load's end: its failures, or -ESHUTDOWN when the
 * reloader stopped first.  Any thread but the loader's. */
int mfs_reloader_wait_first_load(mfs_reloader *rl);

/* Has the first load ended (every model listed at start tried)? */
bool mfs_reloader_first_load_done(mfs_reloader *rl);

/* Start the loader thread: the first load (unless done), then acting on
 * changes.  Set the callback first if it was not known at new time. */
void mfs_reloader_set_callback(mfs_reloader *rl, void (*changed)(void *, const char *),
			       void *ctx);
int mfs_reloader_run(mfs_reloader *rl, mfs_error *err);

/* Look at every model again, as after an inotify overflow (SIGHUP,
 * `systemctl reload`): models found changed are reloaded, new ones
 * loaded, vanished ones unloaded; unchanged ones are left alone.  Only
 * queues the work for the loader thread; safe from any thread. */
void mfs_reloader_rescan(mfs_reloader *rl);

/* Explicit mode: load (or reload what changed of) model, or unload it,
 * on the loader thread; done(ctx, rc, err) is called there once it is
 * done (after the changed callback), so the model can be used as soon as
 * rc is 0.  rc: 0; -ENOENT: no such model in the repository (load) or
 * listed (unload); -EIO: the load failed (the reason is the model's
 * state, and logged); -ESHUTDOWN: stopping (done is then called by
 * mfs_reloader_stop's caller).  Unloading a model that is not loaded
 * succeeds.  Returns 0 when queued (done will be called exactly once),
 * or -ESHUTDOWN / -ENOMEM (done will not be).  Any thread. */
typedef void (*mfs_control_done)(void *ctx, int rc, const mfs_error *err);
int mfs_reloader_control_async(mfs_reloader *rl, const char *model,
			       mfs_control_verb verb, mfs_control_done done,
			       void *ctx, mfs_error *err);

/* The same, waiting for it; returns done's rc.  Not on the loader
 * thread (nor in a changed callback). */
int mfs_reloader_control(mfs_reloader *rl, const char *model,
			 mfs_control_verb verb, mfs_error *err);

/* Reconcile one model now, on the caller's thread (tests; the loader
 * thread uses the same).  Returns the number of failures. */
int mfs_reloader_reconcile(mfs_reloader *rl, const char *model);

/* Stop both threads (a load in progress finishes first) and answer
 * every control command still waiting (-ESHUTDOWN, as any later one);
 * the reloader stays valid until freed.  Idempotent. */
void mfs_reloader_stop(mfs_reloader *rl);

/* Stop (as above) and free. */
void mfs_reloader_free(mfs_reloader *rl);

#endif

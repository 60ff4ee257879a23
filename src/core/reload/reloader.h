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
 */
#ifndef MFS_RELOADER_H
#define MFS_RELOADER_H

#include "error.h"
#include "registry.h"

typedef struct mfs_reloader mfs_reloader;

typedef struct mfs_reloader_conf {
	const char *repository;        /* absolute path */
	mfs_registry *registry;
	int poll_secs;                 /* 0: inotify */
	int quiet_ms;
	void (*changed)(void *ctx, const char *model);   /* may be NULL */
	void *ctx;
} mfs_reloader_conf;

/* Start watching, then load the whole repository (synchronously, on the
 * caller's thread).  Returns the number of versions (or configs) that
 * failed to load, or a negative errno when the repository cannot be read
 * or watched.  Changes are queued but not acted on until
 * mfs_reloader_run. */
int mfs_reloader_new(const mfs_reloader_conf *conf, mfs_reloader **out,
		     mfs_error *err);

/* Start the loader thread (acting on changes).  Set the callback first
 * if it was not known at new time. */
void mfs_reloader_set_callback(mfs_reloader *rl, void (*changed)(void *, const char *),
			       void *ctx);
int mfs_reloader_run(mfs_reloader *rl, mfs_error *err);

/* Look at every model again, as after an inotify overflow (SIGHUP,
 * `systemctl reload`): models found changed are reloaded, new ones
 * loaded, vanished ones unloaded; unchanged ones are left alone.  Only
 * queues the work for the loader thread; safe from any thread. */
void mfs_reloader_rescan(mfs_reloader *rl);

/* Reconcile one model now, on the caller's thread (tests; the loader
 * thread uses the same).  Returns the number of failures. */
int mfs_reloader_reconcile(mfs_reloader *rl, const char *model);

/* Stop both threads (a load in progress finishes first) and free. */
void mfs_reloader_free(mfs_reloader *rl);

#endif

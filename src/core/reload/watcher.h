/* watcher.h - notice changes in a model repository (SPEC.md section 8).
 *
 * One dedicated thread either follows inotify through libinotifytools
 * (which keeps global state, so only this thread ever calls it; hence at
 * most one inotify watcher per process) or, with poll_secs > 0, compares
 * the modification times, sizes and inodes of every file under every
 * model directory twice every poll_secs seconds, so that a change is
 * noticed within poll_secs (for filesystems where inotify sees nothing,
 * such as NFS).
 *
 * Either way it only says which model directory changed: changed(ctx,
 * name) with the model directory's name, or changed(ctx, NULL) when
 * anything may have changed (the inotify queue overflowed).  It is called
 * on the watcher thread; it must be quick and must not call back in.
 */
#ifndef MFS_WATCHER_H
#define MFS_WATCHER_H

#include "error.h"

typedef struct mfs_watcher mfs_watcher;

typedef struct mfs_watcher_conf {
	const char *repository;        /* absolute path */
	int poll_secs;                 /* 0: inotify */
	void (*changed)(void *ctx, const char *model);
	void *ctx;
} mfs_watcher_conf;

/* Starts the thread and returns once the watches are in place (or the
 * first poll is taken): a change made after this returns is noticed.
 * -EBUSY if another inotify watcher is running in this process. */
int mfs_watcher_start(const mfs_watcher_conf *conf, mfs_watcher **out,
		      mfs_error *err);

/* Stop the thread (within about a second) and free everything. */
void mfs_watcher_stop(mfs_watcher *w);

/* A number that changes when anything under path changes (names, sizes,
 * modification times, inodes, recursively); 0 when path is missing.
 * Used by polling and by the reloader to see whether a version changed. */
unsigned long long mfs_tree_signature(const char *path);

#endif

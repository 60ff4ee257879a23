/* fs.h - the FUSE layer: turns file operations on the mounted tree
 * (SPEC.md sections 3-5) into calls on the core (registry, requests,
 * scheduler).  Uses libfuse's low-level API; see docs/FILESYSTEM.md.
 *
 * Threads: FUSE worker threads run the operations and never run models;
 * a read that must wait for a run stores its fuse_req_t and is answered
 * from the compute thread that ends the run, or with EINTR when the
 * kernel interrupts it, or by mfs_fs_expire() past the read deadline.
 */
#ifndef MFS_FS_H
#define MFS_FS_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "registry.h"
#include "reloader.h"

typedef struct mfs_fs mfs_fs;

typedef struct mfs_fs_conf {
	mfs_registry *registry;
	uint64_t max_request_bytes;
	uint64_t max_json_bytes;      /* a .json input or an infer request */
	uint64_t request_ttl_ns;       /* idle request directories expire */
	int max_requests;              /* live request directories per model (mkdir: ENOSPC beyond) */
	int max_requests_per_uid;      /* of those, one uid's but root's and the daemon's; 0: no limit */
	uint64_t read_deadline_ns;     /* a stored read is answered ETIMEDOUT after this */
	mfs_reloader *control;         /* explicit model control: MODEL/control loads and
					* unloads through it; NULL: no control files */
	mfs_reloader *loader;          /* .ready: has its first load ended?  NULL: yes */
	bool strict_readiness;         /* .ready: every model READY too (health.h) */
} mfs_fs_conf;

int mfs_fs_new(const mfs_fs_conf *conf, mfs_fs **out, mfs_error *err);

/* The operations table; the session's userdata must be the mfs_fs. */
const struct fuse_lowlevel_ops *mfs_fs_ops(void);

/* The session, once created: needed to tell the kernel about changes. */
void mfs_fs_set_session(mfs_fs *fs, struct fuse_session *se);

/* The repository changed under model (loaded, unloaded, a version added
 * or removed): drop the kernel's cached entries for the model directory
 * and its version directories so the next access asks again.  Call from
 * a non-FUSE thread holding no lock (hot reload: reload/reloader.c); a no-op
 * before the session exists. */
void mfs_fs_model_changed(mfs_fs *fs, const char *model);

/* Refuse new requests from now on (mkdir, infer): EAGAIN. */
void mfs_fs_stop_accepting(mfs_fs *fs);

/* Housekeeping, called about once a second from a non-FUSE thread:
 * remove request directories idle for the TTL, answer stored reads past
 * their deadline. */
void mfs_fs_expire(mfs_fs *fs);

/* Files open right now (directories not counted): shutdown lets
 * readers that already have their answer finish reading it. */
int mfs_fs_open_files(mfs_fs *fs);

/* Answer every stored read with err (positive errno); for shutdown. */
void mfs_fs_cancel_reads(mfs_fs *fs, int err);

/* Free everything; the session must be gone (no operation running). */
void mfs_fs_free(mfs_fs *fs);

#endif

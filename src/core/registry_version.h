/* registry_version.h - a served version (registry.h's mfs_version) made
 * from a loaded one; for registry.c, which publishes it.
 *
 * What a version runs on is made here, once: for an ensemble the plan of
 * its steps (ensemble_plan.h); for an ONNX model the engine chosen
 * (device_router.h) and one execution context per instance, each warmed
 * with model_warmup's samples (warmup.h); for a custom backend one worker
 * process per instance (backend_worker.h).  Then its scheduler queue.
 * mfs_version_get/put (registry.h) are here too: the last put frees what
 * was made.
 */
#ifndef MFS_REGISTRY_VERSION_H
#define MFS_REGISTRY_VERSION_H

#include "registry.h"

/* What a new version needs of the registry that will serve it. */
typedef struct mfs_version_env {
	mfs_registry *registry;         /* an ensemble finds its steps there */
	mfs_sched *sched;               /* the version's queue goes on it */
	const mfs_route_opts *route;    /* how an engine is chosen */
	const char *worker_program;     /* custom backends' worker processes run it */
	struct mfs_rcache *cache;       /* the response cache, for models that enable it; may be NULL */
} mfs_version_env;

/* A served version (one reference) from lv, which it takes (freed on
 * failure too).  Errors name the model and version. */
int mfs_version_new(const mfs_version_env *env, mfs_loaded_version *lv,
		    mfs_version **out, mfs_error *err);

#endif

/* registry.h - the models and versions being served.
 *
 * A model (a directory of the repository) has zero or more served
 * versions, each an mfs_version: the loaded config and graph, one
 * execution context per instance, its scheduler queue and its statistics.
 * "Current" is the highest READY version; a request that names no version
 * is bound to it when the request is made.
 *
 * Versions are reference counted: the registry holds one reference while
 * a version is served, every request holds one for its lifetime, and the
 * version (graph, contexts, queue) is freed when the last one is put.
 * Unloading a version takes it out of service at once (new requests
 * cannot find it, queued ones fail with a clear error, running ones
 * finish), so load, unload and swap are cheap and safe while serving; hot
 * reload (reload/reloader.c, docs/RELOAD.md) calls these.
 *
 * An ensemble (platform "ensemble") is a version too, without a graph or
 * a queue: requests bound to it run through its steps' versions
 * (ensemble.h).  It serves (READY) only while every step model has a
 * READY version that fits it; otherwise it is parked, UNAVAILABLE with
 * the reason naming the step, and comes back when the step does.  Every
 * load and unload looks at the ensembles again.
 *
 * Every function is thread-safe.  Nothing here is FUSE-specific.
 */
#ifndef MFS_REGISTRY_H
#define MFS_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "device_router.h"
#include "ensemble_plan.h"
#include "error.h"
#include "metrics.h"
#include "model_load.h"
#include "scheduler.h"

typedef enum mfs_vstate {
	MFS_VS_LOADING = 0,
	MFS_VS_READY,
	MFS_VS_UNAVAILABLE,
	MFS_VS_UNLOADING,
} mfs_vstate;

/* "READY", "LOADING", ... */
const char *mfs_vstate_name(mfs_vstate s);

typedef struct mfs_registry mfs_registry;

typedef struct mfs_version {
	/* Immutable once published. */
	char *model_name;
	int64_t version;
	mfs_loaded_version *lv;        /* config (completed) and graph */
	const mfs_model_config *config;   /* = &lv->config */
	int n_graph_inputs;            /* the engine's view: what a run takes and gives */
	int n_graph_outputs;
	char device[64];               /* "cpu" or "opencl" */
	mfs_placement placement;       /* the engine chosen and why (timings) */
	double load_seconds;
	bool trial_taken;              /* registry lock: mfs_registry_time_next took it */
	mfs_stats stats;
	mfs_queue *queue;              /* NULL for an ensemble: its steps' queues run it */
	struct mfs_seqb *seqb;         /* sequence_batching: in front of the queue; else NULL */
	mfs_ensemble_plan *plan;       /* an ensemble's steps (ensemble.h); NULL for a model */
	struct mfs_registry *registry; /* an ensemble's: where its steps are found */
	struct mfs_rcache *cache;      /* response_cache on and --cache-size given; else NULL */
	uint64_t cache_owner;          /* this load's entries in it (response_cache.h) */
	struct mfs_generator *gen;     /* a decoder that generates (generate.h); else NULL */
	/* Private. */
	int refs;                      /* atomic */
	bool unloaded;                 /* atomic; set once by unload */
	struct mfs_exec **execs;       /* ONNX models: one per instance */
	int n_execs;
	struct mfs_worker **workers;   /* custom backends: one per instance */
	int n_workers;
} mfs_version;

typedef struct mfs_registry_conf {
	const char *repository;        /* absolute path */
	mfs_sched *sched;
	int engine_threads;            /* passed to mfs_engine_set_threads; 0 = leave */
	mfs_route_opts route;          /* --device, --opencl-device (copied) */
	const char *backend_dir;       /* --backend-dir, absolute; NULL: none (copied) */
	const char *worker_program;    /* binary with the --backend-worker mode; NULL: /proc/self/exe */
	struct mfs_rcache *cache;      /* --cache-size's response cache (borrowed); NULL: none */
} mfs_registry_conf;

int mfs_registry_new(const mfs_registry_conf *conf, mfs_registry **out,
		     mfs_error *err);
/* Unloads everything (queued requests fail), then frees the registry.
 * Versions still referenced by requests live on until put. */
void mfs_registry_free(mfs_registry *r);

/* Scan the repository and load every model's versions as the model's
 * version_policy selects.  A model or version that fails is recorded as
 * UNAVAILABLE with its reason (and logged); this returns the number of
 * versions that failed (0 when all loaded), or a negative errno when the
 * repository itself cannot be read. */
int mfs_registry_load_all(mfs_registry *r, mfs_error *err);

/* Load one version and serve it, replacing (and unloading) a version of
 * the same number.  On failure the version's state becomes UNAVAILABLE
 * with the reason (or stays READY with the reason when an earlier load of
 * the same version still serves), anything already serving stays, and
 * the error is returned. */
int mfs_registry_load_version(mfs_registry *r, const char *model,
			      int64_t version, mfs_error *err);

/* KIND_AUTO's deferred trials (device_router.h defer_trial): load again,
 * with the engines timed, one served version whose engine is pending;
 * the old version serves until the new one is READY.  True, with the
 * model's name in name, when one was loaded (or failed: it is not taken
 * again); false when none waits. */
bool mfs_registry_time_next(mfs_registry *r, char *name, size_t size);

/* Take a version out of service (see above).  -ENOENT if not served. */
int mfs_registry_unload_version(mfs_registry *r, const char *model,
				int64_t version, const char *reason);

/* Unload every version and forget the model.  -ENOENT if unknown. */
int mfs_registry_unload_model(mfs_registry *r, const char *model,
			      const char *reason);

/* Explicit model control: unload every version of model (draining as
 * mfs_registry_unload_model does) but keep the model listed, with one
 * UNAVAILABLE entry for version (the one a load would serve) and reason
 * ("not loaded", "unloaded").  Adds the model when unknown. */
int mfs_registry_list_unloaded(mfs_registry *r, const char *model,
			       int64_t version, const char *reason);

/* The first load: list model's version LOADING before its load starts,
 * unless that version is listed already.  Adds the model when unknown. */
void mfs_registry_list_loading(mfs_registry *r, const char *model, int64_t version);

/* Hot reload: from now on an unload (or a replacing load) lets requests
 * already bound to the leaving version run on it (it is freed when the
 * last one lets go) instead of failing them. */
void mfs_registry_set_drain(mfs_registry *r, bool drain);

/* Record a failure that is not a version's load (a bad config.pbtxt):
 * the version shows the reason (UNAVAILABLE, or READY when it serves),
 * whatever serves stays, and the failure is counted. */
void mfs_registry_set_failure(mfs_registry *r, const char *model,
			      int64_t version, const char *reason);

/* Since start: versions loaded, loads that failed, versions unloaded. */
typedef struct mfs_registry_counts {
	uint64_t loads, load_failures, unloads;
} mfs_registry_counts;
void mfs_registry_get_counts(mfs_registry *r, mfs_registry_counts *out);

/* A served version with a new reference (version 0: the current one).
 * -ENOENT: unknown model or version; -EAGAIN: the model has no READY
 * version (or that version is not READY); err says which. */
int mfs_registry_get(mfs_registry *r, const char *model, int64_t version,
		     mfs_version **out, mfs_error *err);

void mfs_version_get(mfs_version *v);
void mfs_version_put(mfs_version *v);
/* True once the version was taken out of service. */
bool mfs_version_unloaded(const mfs_version *v);

/* A copy of what the tree shows. */
typedef struct mfs_version_info {
	int64_t version;
	mfs_vstate state;
	char *reason;                  /* "" when none */
	char device[64];
	bool served;                   /* READY and serving: has a directory */
} mfs_version_info;

typedef struct mfs_model_info {
	char *name;
	mfs_version_info *versions;    /* ascending */
	int n_versions;
	int64_t current;               /* highest served version, 0 if none */
} mfs_model_info;

/* Snapshot every model (sorted by name). */
int mfs_registry_snapshot(mfs_registry *r, mfs_model_info **out, int *n);
/* Snapshot one model; -ENOENT if unknown. */
int mfs_registry_model_snapshot(mfs_registry *r, const char *model,
				mfs_model_info *out);
void mfs_model_info_release(mfs_model_info *m);
void mfs_registry_snapshot_free(mfs_model_info *m, int n);

/* Every served version with a reference each (for .metrics); put each and
 * free the array. */
int mfs_registry_served(mfs_registry *r, mfs_version ***out, int *n);

/* Requests a version's queue holds (SPEC.md section 10): the config's
 * dynamic_batching max_queue_size, or MFS_DEFAULT_MAX_QUEUE_SIZE when it
 * sets none, so that no queue grows without bound; beyond, EAGAIN. */
#define MFS_DEFAULT_MAX_QUEUE_SIZE 1024
int64_t mfs_registry_queue_limit(const mfs_model_config *c);

#endif

/* model_load.h - one model version made ready to serve: its configuration
 * read and completed from the graph, and the graph compiled; or, for a
 * model a custom backend serves (docs/BACKENDS.md), the config completed
 * from what it declares and the backend's library found.  Used by
 * `modelfs run` and by the daemon's loader; nothing here is FUSE-specific. */
#ifndef MFS_MODEL_LOAD_H
#define MFS_MODEL_LOAD_H

#include <stdint.h>

#include "config.h"
#include "engine.h"
#include "labels.h"

typedef struct mfs_loaded_version {
	char *model_name;
	int64_t version;
	char *model_path;          /* REPO/name/version/<default_model_filename>; NULL with a custom backend */
	char *version_dir;         /* REPO/name/version */
	mfs_model_config config;   /* completed: every input/output known */
	mfs_graph *graph;          /* NULL with a custom backend, and for an ensemble (platform "ensemble") */
	char *backend_library;     /* custom backend: its libmodelfs_<name>.so; else NULL */
	mfs_labels **labels;       /* per config output: its label_filename's labels, or NULL */
	double load_seconds;       /* wall time of read + compile */
} mfs_loaded_version;

/* Read the model's config (config.pbtxt or config.json, or none) and
 * return it in *cfg (initialised by this call; release with
 * mfs_config_release).  -EINVAL names the file, line and field. */
int mfs_load_config(const char *repo_root, const char *model_name,
		    mfs_model_config *cfg, mfs_error *err);

/* Load one version: config, model file, compile, complete the config.
 * An ensemble: its config only, completed without a graph.
 * With a custom backend: complete the config from its declarations and
 * find libmodelfs_<backend>.so in the version directory, else in
 * backend_dir (NULL: none); -ENOENT names both places when it is in
 * neither.  Each output's label_filename (in the model directory) is
 * read here: a missing or bad label file fails the load.  (The library is opened by the worker that serves it:
 * backend_worker.h.)  Errors name the model, the version and the file.
 * *out is freed with mfs_loaded_version_free. */
int mfs_load_version(const char *repo_root, const char *model_name,
		     int64_t version, const char *backend_dir,
		     mfs_loaded_version **out, mfs_error *err);

void mfs_loaded_version_free(mfs_loaded_version *v);

#endif

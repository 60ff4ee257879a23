/* repo.h - find models and versions in a Triton-style repository
 * (SPEC.md section 2).  Pure directory scanning: nothing is loaded here. */
#ifndef MFS_REPO_H
#define MFS_REPO_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

typedef struct mfs_repo_entry {
	char *name;              /* the model directory's name */
	char *dir;               /* REPOSITORY/name */
	char *config_path;       /* config.pbtxt, else config.json, else NULL */
	int64_t *versions;       /* every valid version directory, ascending */
	int n_versions;
} mfs_repo_entry;

/* True if name is a version directory name: a positive integer without
 * leading zeros that fits in int64 (value stored in *version). */
bool mfs_repo_version_name(const char *name, int64_t *version);

/* True if name may be a model name: [A-Za-z0-9._-]{1,64}, not starting
 * with '.'. */
bool mfs_repo_model_name_ok(const char *name);

/* Scan one model directory.  -ENOENT if it is not a directory. */
int mfs_repo_scan_model(const char *root, const char *name,
			mfs_repo_entry *out, mfs_error *err);

/* Scan every model directory of root (dot-directories and files skipped),
 * sorted by name.  *out is malloc'd; free with mfs_repo_entries_free. */
int mfs_repo_scan(const char *root, mfs_repo_entry **out, int *n,
		  mfs_error *err);

void mfs_repo_entry_release(mfs_repo_entry *e);
void mfs_repo_entries_free(mfs_repo_entry *entries, int n);

/* Log an entry without version directories: a warning when it has a
 * config (a model missing its versions), a debug line when it has none
 * (a folder beside the models, such as a second repository or sources:
 * examples/backends), so a start-up does not warn about what is no model. */
void mfs_repo_note_unversioned(const mfs_repo_entry *e);

#endif

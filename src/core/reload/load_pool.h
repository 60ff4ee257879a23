/* load_pool.h - run one job per name on up to N threads at once and wait
 * for all of them: how the first load of a repository loads its models in
 * parallel (Triton's --model-load-thread-count; reloader.c).
 *
 * Names are taken in order, each by exactly one thread; a job returns its
 * number of failures, which are summed.  stop(ctx), when given, is asked
 * before each name: once it says true the names not yet taken are skipped
 * (jobs running finish).  The caller's thread is one of the N.
 */
#ifndef MFS_LOAD_POOL_H
#define MFS_LOAD_POOL_H

#include <stdbool.h>

#include "registry.h"
#include "repo.h"

typedef int (*mfs_load_job)(void *ctx, const char *name);

/* The sum of the jobs' returns.  threads < 1 counts as 1; a thread that
 * cannot start leaves its share to the others. */
int mfs_load_pool_run(char *const *names, int n, int threads, mfs_load_job job,
		      bool (*stop)(void *ctx), void *ctx);

/* The threads to use for want (--model-load-thread-count): at least 1,
 * at most the cores online. */
int mfs_load_pool_threads(int want);

/* List the versions of repository entry e that its config selects
 * LOADING in reg (the newest when the config does not parse: its load
 * will say why).  1 when e is an ensemble, else 0. */
int mfs_load_pool_list(mfs_registry *reg, const char *repo, const mfs_repo_entry *e);

#endif

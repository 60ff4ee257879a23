/* ensemble.h - running one request through an ensemble (platform
 * "ensemble", docs/SPEC.md section 11).
 *
 * The ensemble's job (the same mfs_job a request gives a model's queue)
 * is run as a set of step jobs, each submitted to its step model's own
 * queue, so every step keeps its instances, engine (CPU or OpenCL) and
 * dynamic batching.  Nothing blocks a thread: a step's done() stores its
 * outputs in the run's tensor table (in memory; consumers read them
 * without a copy) and submits the steps that were waiting only for it,
 * so steps that do not depend on each other run at once.  The last step
 * to finish completes the ensemble's job.
 *
 * The step versions are resolved once, when the job is submitted, and the
 * run holds a reference to each until it ends: a step model reloaded
 * meanwhile (hot reload drains the leaving version) finishes the run on
 * the version it started with.
 */
#ifndef MFS_ENSEMBLE_H
#define MFS_ENSEMBLE_H

#include "error.h"
#include "registry.h"
#include "scheduler.h"

/* Run job on ensemble version ens (job->inputs: one tensor per config
 * input; job->outputs: one per config output, filled on success).
 * Returns 0 and later calls job->done once (on a compute thread), or a
 * negative errno with err filled and done() not called: -EAGAIN when a
 * step model has no READY version, -EINVAL when an input does not fit the
 * first step that reads it; a full or closed step queue as
 * mfs_sched_submit says.  Messages name the ensemble, the step (index and
 * model) and the reason. */
int mfs_ensemble_submit(mfs_registry *reg, mfs_version *ens, mfs_job *job,
			mfs_error *err);

#endif

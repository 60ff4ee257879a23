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
 *
 * A step model may itself be an ensemble (nested, as in Triton): its
 * version is resolved and held like any step's, and when its step comes
 * it runs as a nested run of the same kind, whose own steps are resolved
 * then (as a request submitted to it at that moment would be).  The
 * registry serves no ensemble that reaches itself again (a cycle).
 */
#ifndef MFS_ENSEMBLE_H
#define MFS_ENSEMBLE_H

#include "error.h"
#include "registry.h"
#include "scheduler.h"

typedef struct mfs_ensemble_run mfs_ensemble_run;

/* Prepare job on ensemble version ens (job->inputs: one tensor per
 * config input; job->outputs: one per config output, filled on success):
 * the step versions are resolved and the inputs checked against the
 * first steps that read them.  A negative errno with err filled (done()
 * will not be called): -EAGAIN when a step model has no READY version,
 * -EINVAL when an input does not fit.  Messages name the ensemble, the
 * step (index and model) and the reason.  May be called under a lock
 * that job->done takes; then mfs_ensemble_start must follow without it. */
int mfs_ensemble_prepare(mfs_registry *reg, mfs_version *ens, mfs_job *job,
			 mfs_ensemble_run **out, mfs_error *err);

/* Submit the prepared run's first steps.  job->done is called once,
 * later on a compute thread, or here when no step could be submitted (a
 * full or closed step queue), so no lock that done() takes may be held. */
void mfs_ensemble_start(mfs_ensemble_run *run);

#endif

/* engine_trial.h - one engine timed on a model for KIND_AUTO
 * (device_router.h), stopped as soon as it is clearly slower than a
 * limit the caller sets from the best engine so far.
 *
 * A trial: an execution context made, one untimed run (the "setup"),
 * then MFS_TRIAL_RUNS timed runs whose median is the figure.  With
 * limits, a watchdog cancels the run in progress (engine.h
 * mfs_exec_watch_cancel: between nodes) when the setup passes
 * setup_ms or a timed run passes run_ms; the trial then reports
 * stopped with the reason, which is not an error.
 */
#ifndef MFS_ENGINE_TRIAL_H
#define MFS_ENGINE_TRIAL_H

#include <stdbool.h>

#include "engine.h"
#include "error.h"

#define MFS_TRIAL_RUNS 3

typedef struct mfs_trial_limit {
	double setup_ms;           /* context + first run; <= 0: no limit */
	double run_ms;             /* each timed run; <= 0: no limit */
} mfs_trial_limit;

typedef struct mfs_trial {
	double median_ms;          /* of the timed runs; -1 when stopped */
	double total_ms;           /* the whole trial, wall time */
	double context_ms;         /* making the execution context */
	double first_ms;           /* the untimed first run; -1: not reached */
	bool stopped;              /* cut short by a limit */
	char why[200];             /* when stopped: which limit, by how much */
} mfs_trial;

/* Time graph on b with inputs in (graph order).  lim may be NULL.  A
 * run that fails for another reason than the limit fails the trial
 * (err says why). */
int mfs_trial_run(const mfs_graph *g, mfs_backend *b, const mfs_tensor *in,
		  const mfs_trial_limit *lim, mfs_trial *out, mfs_error *err);

/* Made-up inputs: every variable dim 1, floats 0.5, the rest zeros.
 * in has mfs_graph_n_inputs(g) slots; released by the caller. */
int mfs_trial_inputs(const mfs_graph *g, mfs_tensor *in, mfs_error *err);

#endif

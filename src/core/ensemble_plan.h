/* ensemble_plan.h - the shape of an ensemble (platform "ensemble",
 * docs/CONFIG.md "Ensembles"): which step produces and which consumes
 * each of the ensemble's tensors, the order the steps can run in, and
 * which steps wait for which.
 *
 * Built from the ensemble's config alone, at load: malformed maps, a
 * tensor produced twice, a tensor consumed that no step or ensemble input
 * produces, an ensemble output nobody produces and cycles are errors
 * here.  What needs the step models' configs (their input and output
 * names, data types and shapes) is checked by mfs_ensemble_plan_check_steps
 * once the step models are loaded.  Pure data: no threads, no registry.
 */
#ifndef MFS_ENSEMBLE_PLAN_H
#define MFS_ENSEMBLE_PLAN_H

#include "config.h"
#include "error.h"

typedef struct mfs_ensemble_plan {
	int n_steps;
	/* Every tensor of the ensemble: its inputs first (tensor i is config
	 * input i), then the steps' outputs. */
	int n_tensors;
	const char **tensor_names;     /* borrowed from the config */
	int *producer;                 /* per tensor: the step, or -1 for an ensemble input */
	int **step_in;                 /* [step][input_map entry]: tensor */
	int **step_out;                /* [step][output_map entry]: tensor */
	int *out_tensor;               /* per ensemble output: tensor */
	int *n_waits;                  /* per step: distinct steps it waits for */
	int **dependents;              /* per step: the steps that wait for it */
	int *n_dependents;
	int *order;                    /* the steps in an order that runs producers first */
	int *level;                    /* per step: 0 when it needs only ensemble inputs, else 1 + its producers' highest */
} mfs_ensemble_plan;

/* Check the ensemble config c (platform "ensemble") and plan it.
 * -EINVAL with a message naming the step (index and model) and the
 * tensor; -ENOMEM. */
int mfs_ensemble_plan_new(const mfs_model_config *c, mfs_ensemble_plan **out,
			  mfs_error *err);
void mfs_ensemble_plan_free(mfs_ensemble_plan *p);

/* Check the ensemble c against its step models' configs (step_cfgs[s]
 * for step s, all loaded): the map keys are each model's inputs and
 * outputs, every required input is mapped, and each tensor's producer
 * and consumers agree on data type and shape (a variable dim agrees with
 * any).  -EINVAL naming the step (index and model) and the tensor. */
int mfs_ensemble_plan_check_steps(const mfs_ensemble_plan *p,
				  const mfs_model_config *c,
				  const mfs_model_config *const *step_cfgs,
				  mfs_error *err);

/* The config that ensemble step model `name` would run as (version: the
 * step's model_version, <= 0 for its newest loaded one), or NULL when
 * no such model is loaded.  Borrowed. */
typedef const mfs_model_config *(*mfs_ensemble_lookup)(void *ctx, const char *name,
							int64_t version);

/* Longest cycle path mfs_ensemble_find_cycle writes (longer ones end in
 * "..."), so that a message quoting it stays a few hundred bytes. */
#define MFS_ENSEMBLE_CYCLE_MAX 240

/* Do ensembles form a cycle through their steps, starting from ensemble
 * `name` (config c) and following each step model that lookup says is an
 * ensemble?  true with the cycle in path ("a -> b -> a"; "a -> a" for an
 * ensemble naming itself; at most MFS_ENSEMBLE_CYCLE_MAX bytes), found
 * from the first ensemble met twice.  Depth is bounded (64 levels). */
bool mfs_ensemble_find_cycle(const char *name, const mfs_model_config *c,
			     mfs_ensemble_lookup lookup, void *ctx,
			     char path[MFS_ENSEMBLE_CYCLE_MAX]);

#endif

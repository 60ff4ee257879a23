/* ensemble.c - see ensemble.h.
 *
 * One ens_run per ensemble job.  run->lock guards the tensor table, the
 * waits and the first error; step jobs are submitted with no lock held.
 * Tensors in the table are either borrowed (the ensemble's inputs, which
 * stay the submitter's until done()) or owned by the run (step outputs);
 * a step reads them through non-owning copies of the tensor struct.
 */
#include "ensemble.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "ensemble_plan.h"
#include "log.h"
#include "membudget.h"

typedef struct step_job {
	mfs_job job;
	struct mfs_ensemble_run *run;
	int step;
	mfs_tensor *in;            /* the step version's graph inputs (views) */
	mfs_tensor *out;           /* its graph outputs, filled by the run */
} step_job;

struct mfs_ensemble_run {
	pthread_mutex_t lock;
	mfs_registry *reg;
	int depth;                 /* 0; 1 + the outer run's for a nested ensemble */
	mfs_job *job;
	mfs_version *ens;          /* a reference */
	const mfs_model_config *c;
	const mfs_ensemble_plan *p;
	mfs_version **steps;       /* a reference each */
	step_job *sj;
	mfs_tensor *tensors;       /* the table: plan->n_tensors */
	bool *owned;               /* tensors[t] is the run's */
	bool *have;                /* tensors[t] was produced */
	int *waits;                /* per step: producers still running */
	int in_flight;             /* steps submitted and not done */
	int n_done;
	int status;                /* the first failure */
	mfs_error err;
	bool started;              /* job->started was called */
	int *first;                /* the steps to submit at the start */
	int n_first;
	uint64_t charged;          /* step outputs counted in --max-memory (membudget.h) */
};

typedef struct mfs_ensemble_run ens_run;

static void run_free(ens_run *run)
{
	const mfs_ensemble_plan *p = run->p;
	for (int t = 0; run->tensors && t < p->n_tensors; t++)
		if (run->owned[t])
			mfs_tensor_release(&run->tensors[t]);
	for (int s = 0; run->sj && s < p->n_steps; s++) {
		step_job *sj = &run->sj[s];
		if (sj->out && run->steps[s])
			for (int i = 0; i < run->steps[s]->n_graph_outputs; i++)
				mfs_tensor_release(&sj->out[i]);
		free(sj->in);
		free(sj->out);
	}
	for (int s = 0; run->steps && s < p->n_steps; s++)
		mfs_version_put(run->steps[s]);
	free(run->steps);
	free(run->sj);
	free(run->tensors);
	free(run->owned);
	free(run->have);
	free(run->waits);
	free(run->first);
	mfs_membudget_give(run->charged);
	mfs_version_put(run->ens);
	pthread_mutex_destroy(&run->lock);
	free(run);
}

static const char *ens_name(const ens_run *run)
{
	return run->ens->model_name;
}

/* Record the run's first failure (lock held). */
static void fail_locked(ens_run *run, int status, const mfs_error *e)
{
	if (run->status)
		return;
	run->status = status;
	run->err = *e;
}

/* Give the ensemble's outputs to the submitter and end its job. */
static void finish(ens_run *run)
{
	mfs_job *job = run->job;
	const mfs_ensemble_plan *p = run->p;
	int status = run->status;
	mfs_error err = run->err;
	for (int i = 0; status == 0 && i < run->c->n_outputs; i++) {
		int t = p->out_tensor[i];
		if (run->owned[t]) {
			/* Moved: the first output that names it takes it (and
			 * the request counts it from now on). */
			job->outputs[i] = run->tensors[t];
			run->owned[t] = false;
			mfs_membudget_give(run->tensors[t].nbytes);
			run->charged -= run->tensors[t].nbytes;
		} else if (mfs_tensor_copy(&job->outputs[i], &run->tensors[t], &err) < 0) {
			status = -ENOMEM;
			for (int k = 0; k < i; k++)
				mfs_tensor_release(&job->outputs[k]);
		}
	}
	job->status = status;
	job->err = err;
	if (status == 0)
		mfs_error_clear(&job->err);
	job->t_end = job->t_infer = mfs_now_ns();
	int64_t rows = run->c->max_batch_size > 0 && job->inputs[0].shape.rank > 0 ?
		job->inputs[0].shape.dims[0] : 1;
	job->batch_size = (int)rows;
	job->batch_requests = 1;
	uint64_t total = job->t_end - job->t_enqueue;
	mfs_stats_add_request(&run->ens->stats, status == 0, total, 0, 0, total, 0,
			      (uint64_t)rows);
	if (status == 0)
		mfs_stats_add_execution(&run->ens->stats, (int)rows, 0, total, 0);
	run_free(run);
	job->done(job);
}

static void step_done(mfs_job *j);
static int prepare_at(mfs_registry *reg, mfs_version *ens, mfs_job *job, int depth,
		      ens_run **out, mfs_error *err);

/* Hand step s's job to its model: the model's queue, or, for a nested
 * ensemble, a run of it (whose steps are resolved now). */
static int submit_step(ens_run *run, int s, mfs_error *err)
{
	mfs_version *sv = run->steps[s];
	if (sv->queue)
		return mfs_sched_submit(sv->queue, &run->sj[s].job, err);
	ens_run *inner = NULL;
	int rc = prepare_at(run->reg, sv, &run->sj[s].job, run->depth + 1, &inner, err);
	if (rc == 0)
		mfs_ensemble_start(inner);
	return rc;
}

static void step_started(mfs_job *j)
{
	ens_run *run = ((step_job *)j)->run;
	pthread_mutex_lock(&run->lock);
	bool first = !run->started;
	run->started = true;
	pthread_mutex_unlock(&run->lock);
	if (first && run->job->started)
		run->job->started(run->job);
}

/* Step s's inputs from the table, checked against its model (lock held:
 * the table is read). */
static int gather_inputs(ens_run *run, int s, mfs_error *err)
{
	const mfs_ensemble_step *st = &run->c->steps[s];
	mfs_version *sv = run->steps[s];
	const mfs_model_config *sc = sv->config;
	step_job *sj = &run->sj[s];
	for (int k = 0; k < st->n_input_map; k++) {
		int i = mfs_config_find_input(sc, st->input_map[k].key);
		const mfs_tensor *t = &run->tensors[run->p->step_in[s][k]];
		mfs_tensor_spec spec;
		mfs_config_input_spec(sc, i, &spec);
		int rc = mfs_tensor_check(t, &spec, err);
		if (rc == 0) {
			mfs_tensor *view = &sj->in[sc->inputs[i].graph_index];
			*view = *t;
			view->owns_data = false;
			rc = mfs_config_input_to_model(sc, i, &t->shape, &view->shape, err);
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Submit the steps in ready[0..n) (no lock held).  A step that cannot
 * be submitted counts as done with the run's error. */
static void submit_steps(ens_run *run, const int *ready, int n)
{
	for (int k = 0; k < n; k++) {
		int s = ready[k];
		step_job *sj = &run->sj[s];
		mfs_error e;
		mfs_error_clear(&e);
		pthread_mutex_lock(&run->lock);
		int rc = run->status ? run->status : gather_inputs(run, s, &e);
		pthread_mutex_unlock(&run->lock);
		if (rc == 0)
			rc = submit_step(run, s, &e);
		if (rc == 0)
			continue;
		/* Not submitted: finish it here as a failed step. */
		sj->job.status = rc;
		sj->job.err = e;
		step_done(&sj->job);
	}
}

/* Move step s's outputs into the table (lock held). */
static void store_outputs(ens_run *run, int s)
{
	const mfs_ensemble_step *st = &run->c->steps[s];
	const mfs_model_config *sc = run->steps[s]->config;
	step_job *sj = &run->sj[s];
	for (int k = 0; k < st->n_output_map; k++) {
		int o = mfs_config_find_output(sc, st->output_map[k].key);
		mfs_tensor *src = &sj->out[sc->outputs[o].graph_index];
		int t = run->p->step_out[s][k];
		mfs_shape client;
		mfs_error e;
		if (mfs_config_output_from_model(sc, o, &src->shape, &client, &e) == 0)
			src->shape = client;
		run->tensors[t] = *src;
		run->owned[t] = src->owns_data;
		run->have[t] = true;
		/* Intermediate tensors are requests' memory too: counted,
		 * never refused (computed already). */
		if (src->owns_data) {
			mfs_membudget_force(src->nbytes);
			run->charged += src->nbytes;
		}
		*src = (mfs_tensor){ 0 };
	}
}

static void step_done(mfs_job *j)
{
	step_job *sj = (step_job *)j;
	ens_run *run = sj->run;
	int s = sj->step;
	int *ready = NULL, n_ready = 0;
	pthread_mutex_lock(&run->lock);
	run->in_flight--;
	run->n_done++;
	if (j->status < 0) {
		mfs_error e;
		mfs_error_clear(&e);
		mfs_fail(&e, -j->status, "ensemble '%s': step %d (model '%s' version %" PRId64 "): %s",
			 ens_name(run), s, run->c->steps[s].model_name, run->steps[s]->version,
			 j->err.msg);
		fail_locked(run, j->status, &e);
	} else if (!run->status) {
		store_outputs(run, s);
		ready = malloc((size_t)run->p->n_dependents[s] * sizeof(int) + 1);
		if (!ready) {
			mfs_error e;
			fail_locked(run, mfs_fail(&e, ENOMEM, "ensemble '%s': out of memory", ens_name(run)), &e);
		}
		for (int d = 0; ready && d < run->p->n_dependents[s]; d++) {
			int q = run->p->dependents[s][d];
			if (--run->waits[q] == 0)
				ready[n_ready++] = q;
		}
		run->in_flight += n_ready;
	}
	bool last = run->in_flight == 0;
	pthread_mutex_unlock(&run->lock);
	if (n_ready)
		submit_steps(run, ready, n_ready);
	free(ready);
	if (last)
		finish(run);
}

/* The step versions, each with a reference; -EAGAIN naming the step. */
static int resolve_steps(mfs_registry *reg, ens_run *run, mfs_error *err)
{
	for (int s = 0; s < run->p->n_steps; s++) {
		const mfs_ensemble_step *st = &run->c->steps[s];
		mfs_error e;
		mfs_error_clear(&e);
		int rc = mfs_registry_get(reg, st->model_name,
					  st->model_version > 0 ? st->model_version : 0,
					  &run->steps[s], &e);
		if (rc < 0) {
			run->steps[s] = NULL;
			return mfs_fail(err, -rc, "ensemble '%s': step %d (model '%s'): %s",
					ens_name(run), s, st->model_name, e.msg);
		}
		if (run->steps[s]->seqb)
			return mfs_fail(err, EINVAL, "ensemble '%s': step %d (model '%s') uses "
					"sequence_batching; a stateful step in an ensemble is not supported",
					ens_name(run), s, st->model_name);
	}
	return 0;
}

static int run_new(mfs_registry *reg, mfs_version *ens, mfs_job *job, int depth,
		   ens_run **out, mfs_error *err)
{
	const mfs_ensemble_plan *p = ens->plan;
	ens_run *run = calloc(1, sizeof(*run));
	if (!run)
		return mfs_fail(err, ENOMEM, "out of memory");
	pthread_mutex_init(&run->lock, NULL);
	run->reg = reg;
	run->depth = depth;
	mfs_version_get(ens);
	run->ens = ens;
	run->job = job;
	run->c = ens->config;
	run->p = p;
	size_t n = (size_t)p->n_steps, nt = (size_t)p->n_tensors;
	run->steps = calloc(n, sizeof(*run->steps));
	run->sj = calloc(n, sizeof(*run->sj));
	run->tensors = calloc(nt, sizeof(*run->tensors));
	run->owned = calloc(nt, sizeof(bool));
	run->have = calloc(nt, sizeof(bool));
	run->waits = calloc(n, sizeof(int));
	if (!run->steps || !run->sj || !run->tensors || !run->owned || !run->have || !run->waits) {
		run_free(run);
		return mfs_fail(err, ENOMEM, "out of memory");
	}
	int rc = resolve_steps(reg, run, err);
	for (int s = 0; rc == 0 && s < p->n_steps; s++) {
		step_job *sj = &run->sj[s];
		mfs_version *sv = run->steps[s];
		sj->run = run;
		sj->step = s;
		sj->in = calloc((size_t)sv->n_graph_inputs + 1, sizeof(mfs_tensor));
		sj->out = calloc((size_t)sv->n_graph_outputs + 1, sizeof(mfs_tensor));
		if (!sj->in || !sj->out)
			rc = mfs_fail(err, ENOMEM, "out of memory");
		sj->job.inputs = sj->in;
		sj->job.outputs = sj->out;
		sj->job.done = step_done;
		sj->job.started = step_started;
		sj->job.arg = run;
		run->waits[s] = p->n_waits[s];
	}
	if (rc < 0) {
		run_free(run);
		return rc;
	}
	for (int i = 0; i < run->c->n_inputs; i++) {
		run->tensors[i] = job->inputs[i];
		run->tensors[i].owns_data = false;
		run->have[i] = job->inputs[i].dtype != MFS_DT_UNDEFINED;
	}
	*out = run;
	return 0;
}

/* Ensembles nested deeper are refused at run time.  The registry serves
 * no ensemble that reaches itself again, so only a very deep (acyclic)
 * nesting meets this. */
#define MAX_DEPTH 32

static int prepare_at(mfs_registry *reg, mfs_version *ens, mfs_job *job, int depth,
		      ens_run **out, mfs_error *err)
{
	ens_run *run = NULL;
	*out = NULL;
	job->t_enqueue = job->t_start = job->t_input = mfs_now_ns();
	if (depth >= MAX_DEPTH)
		return mfs_fail(err, EINVAL, "ensemble '%s': ensembles nested more than %d deep",
				ens->model_name, MAX_DEPTH);
	int rc = run_new(reg, ens, job, depth, &run, err);
	if (rc < 0)
		return rc;
	const mfs_ensemble_plan *p = run->p;
	if (!(run->first = calloc((size_t)p->n_steps, sizeof(int)))) {
		run_free(run);
		return mfs_fail(err, ENOMEM, "out of memory");
	}
	for (int s = 0; s < p->n_steps; s++)
		if (p->n_waits[s] == 0)
			run->first[run->n_first++] = s;
	/* The first steps' inputs are checked now, so that a bad input fails
	 * the submit (the client's close()) rather than the run. */
	int k = 0;
	for (; rc == 0 && k < run->n_first; k++)
		rc = gather_inputs(run, run->first[k], err);
	if (rc < 0) {
		int s = run->first[k - 1];
		mfs_error_prefix(err, "ensemble '%s': step %d (model '%s'): ", ens->model_name, s,
				 run->c->steps[s].model_name);
		run_free(run);
		return rc;
	}
	run->in_flight = run->n_first;
	*out = run;
	return 0;
}

int mfs_ensemble_prepare(mfs_registry *reg, mfs_version *ens, mfs_job *job,
			 mfs_ensemble_run **out, mfs_error *err)
{
	return prepare_at(reg, ens, job, 0, out, err);
}

void mfs_ensemble_start(mfs_ensemble_run *run)
{
	submit_steps(run, run->first, run->n_first);
}

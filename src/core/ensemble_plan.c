/* ensemble_plan.c - see ensemble_plan.h. */
#include "ensemble_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"

void mfs_ensemble_plan_free(mfs_ensemble_plan *p)
{
	if (!p)
		return;
	for (int s = 0; s < p->n_steps; s++) {
		if (p->step_in)
			free(p->step_in[s]);
		if (p->step_out)
			free(p->step_out[s]);
		if (p->dependents)
			free(p->dependents[s]);
	}
	free(p->step_in);
	free(p->step_out);
	free(p->dependents);
	free(p->n_dependents);
	free(p->n_waits);
	free(p->order);
	free(p->level);
	free(p->out_tensor);
	free(p->tensor_names);
	free(p->producer);
	free(p);
}

static int find_tensor(const mfs_ensemble_plan *p, const char *name)
{
	for (int t = 0; t < p->n_tensors; t++)
		if (strcmp(p->tensor_names[t], name) == 0)
			return t;
	return -1;
}

static const char *step_model(const mfs_model_config *c, int s)
{
	return c->steps[s].model_name;
}

/* Name every tensor and its producer: the ensemble's inputs, then each
 * step's outputs (a name produced twice is an error). */
static int name_tensors(mfs_ensemble_plan *p, const mfs_model_config *c, mfs_error *err)
{
	for (int i = 0; i < c->n_inputs; i++) {
		if (find_tensor(p, c->inputs[i].name) >= 0)
			return mfs_fail(err, EINVAL, "ensemble input '%s' is listed twice", c->inputs[i].name);
		p->tensor_names[p->n_tensors] = c->inputs[i].name;
		p->producer[p->n_tensors++] = -1;
	}
	for (int s = 0; s < c->n_steps; s++) {
		const mfs_ensemble_step *st = &c->steps[s];
		if (st->n_output_map == 0)
			return mfs_fail(err, EINVAL, "step %d (model '%s') has no output_map: it would produce nothing",
					s, step_model(c, s));
		if (!(p->step_out[s] = calloc((size_t)st->n_output_map, sizeof(int))))
			return mfs_fail(err, ENOMEM, "out of memory");
		for (int k = 0; k < st->n_output_map; k++) {
			const char *name = st->output_map[k].value;
			int t = find_tensor(p, name);
			if (t >= 0)
				return p->producer[t] < 0 ?
					mfs_fail(err, EINVAL, "step %d (model '%s') output_map writes '%s', which is an ensemble input",
						 s, step_model(c, s), name) :
					mfs_fail(err, EINVAL, "step %d (model '%s') output_map writes '%s', which step %d (model '%s') already produces",
						 s, step_model(c, s), name, p->producer[t], step_model(c, p->producer[t]));
			p->tensor_names[p->n_tensors] = name;
			p->producer[p->n_tensors] = s;
			p->step_out[s][k] = p->n_tensors++;
		}
	}
	return 0;
}

/* Each step's inputs, and who waits for whom. */
static int link_steps(mfs_ensemble_plan *p, const mfs_model_config *c, mfs_error *err)
{
	for (int s = 0; s < c->n_steps; s++) {
		const mfs_ensemble_step *st = &c->steps[s];
		if (!(p->step_in[s] = calloc((size_t)st->n_input_map + 1, sizeof(int))) ||
		    !(p->dependents[s] = calloc((size_t)c->n_steps, sizeof(int))))
			return mfs_fail(err, ENOMEM, "out of memory");
		for (int k = 0; k < st->n_input_map; k++) {
			const char *name = st->input_map[k].value;
			int t = find_tensor(p, name);
			if (t < 0)
				return mfs_fail(err, EINVAL, "step %d (model '%s') input_map reads '%s', which no step and no ensemble input produces",
						s, step_model(c, s), name);
			p->step_in[s][k] = t;
		}
	}
	/* s waits for each distinct producer of its inputs. */
	for (int s = 0; s < c->n_steps; s++)
		for (int q = 0; q < c->n_steps; q++) {
			bool waits = false;
			for (int k = 0; k < c->steps[s].n_input_map; k++)
				waits |= p->producer[p->step_in[s][k]] == q;
			if (!waits)
				continue;
			if (q == s)
				return mfs_fail(err, EINVAL, "step %d (model '%s') reads a tensor it produces itself (a cycle)",
						s, step_model(c, s));
			p->n_waits[s]++;
			p->dependents[q][p->n_dependents[q]++] = s;
		}
	return 0;
}

/* Kahn's algorithm: the order, each step's level, and the cycle check. */
static int order_steps(mfs_ensemble_plan *p, const mfs_model_config *c, mfs_error *err)
{
	int n = c->n_steps, done = 0;
	int *waits = calloc((size_t)n, sizeof(int));
	if (!waits)
		return mfs_fail(err, ENOMEM, "out of memory");
	memcpy(waits, p->n_waits, (size_t)n * sizeof(int));
	for (int s = 0; s < n; s++)
		if (waits[s] == 0)
			p->order[done++] = s;
	for (int i = 0; i < done; i++) {
		int q = p->order[i];
		for (int d = 0; d < p->n_dependents[q]; d++) {
			int s = p->dependents[q][d];
			if (p->level[s] < p->level[q] + 1)
				p->level[s] = p->level[q] + 1;
			if (--waits[s] == 0)
				p->order[done++] = s;
		}
	}
	free(waits);
	if (done == n)
		return 0;
	/* Name one step of the cycle: one that never became ready. */
	char names[256] = "";
	size_t used = 0;
	for (int s = 0; s < n; s++) {
		bool placed = false;
		for (int i = 0; i < done; i++)
			placed |= p->order[i] == s;
		if (!placed && used < sizeof(names))
			used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%d ('%s')",
						 used ? ", " : "", s, step_model(c, s));
	}
	return mfs_fail(err, EINVAL, "the steps form a cycle: steps %s wait for each other", names);
}

static int check_outputs(mfs_ensemble_plan *p, const mfs_model_config *c, mfs_error *err)
{
	for (int i = 0; i < c->n_outputs; i++) {
		int t = find_tensor(p, c->outputs[i].name);
		if (t < 0)
			return mfs_fail(err, EINVAL, "ensemble output '%s' is produced by no step (no output_map writes it)",
					c->outputs[i].name);
		p->out_tensor[i] = t;
	}
	return 0;
}

int mfs_ensemble_plan_new(const mfs_model_config *c, mfs_ensemble_plan **out,
			  mfs_error *err)
{
	*out = NULL;
	if (c->n_steps == 0)
		return mfs_fail(err, EINVAL, "an ensemble needs at least one step");
	if (c->n_outputs == 0)
		return mfs_fail(err, EINVAL, "an ensemble needs at least one output");
	int tensors = c->n_inputs;
	for (int s = 0; s < c->n_steps; s++)
		tensors += c->steps[s].n_output_map;
	size_t n = (size_t)c->n_steps;
	mfs_ensemble_plan *p = calloc(1, sizeof(*p));
	if (!p)
		return mfs_fail(err, ENOMEM, "out of memory");
	p->n_steps = c->n_steps;
	p->tensor_names = calloc((size_t)tensors + 1, sizeof(char *));
	p->producer = calloc((size_t)tensors + 1, sizeof(int));
	p->step_in = calloc(n, sizeof(int *));
	p->step_out = calloc(n, sizeof(int *));
	p->dependents = calloc(n, sizeof(int *));
	p->n_dependents = calloc(n, sizeof(int));
	p->n_waits = calloc(n, sizeof(int));
	p->order = calloc(n, sizeof(int));
	p->level = calloc(n, sizeof(int));
	p->out_tensor = calloc((size_t)c->n_outputs, sizeof(int));
	int rc;
	if (!p->tensor_names || !p->producer || !p->step_in || !p->step_out || !p->dependents ||
	    !p->n_dependents || !p->n_waits || !p->order || !p->level || !p->out_tensor)
		rc = mfs_fail(err, ENOMEM, "out of memory");
	else if ((rc = name_tensors(p, c, err)) == 0 && (rc = link_steps(p, c, err)) == 0 &&
		 (rc = order_steps(p, c, err)) == 0)
		rc = check_outputs(p, c, err);
	if (rc < 0) {
		mfs_ensemble_plan_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

/* ---- against the step models ---- */

void mfs_ensemble_plan_tensor_spec(const mfs_ensemble_plan *p,
				   const mfs_model_config *c, int t,
				   const mfs_model_config *producer_cfg,
				   mfs_tensor_spec *spec)
{
	int s = p->producer[t];
	if (s < 0) {
		mfs_config_input_spec(c, t, spec);
		return;
	}
	const mfs_ensemble_step *st = &c->steps[s];
	for (int k = 0; k < st->n_output_map; k++)
		if (p->step_out[s][k] == t) {
			mfs_config_output_spec(producer_cfg,
					       mfs_config_find_output(producer_cfg, st->output_map[k].key),
					       spec);
			return;
		}
}

static void spec_text(const mfs_tensor_spec *sp, char *buf, size_t size)
{
	size_t used = (size_t)snprintf(buf, size, "%s [", mfs_dtype_config_name(sp->dtype));
	for (int d = 0; d < sp->rank && used < size; d++)
		used += (size_t)snprintf(buf + used, size - used, "%s%lld", d ? "," : "",
					 (long long)sp->dims[d]);
	if (used < size)
		snprintf(buf + used, size - used, "]");
}

static bool specs_agree(const mfs_tensor_spec *a, const mfs_tensor_spec *b)
{
	if (a->dtype != b->dtype || a->rank != b->rank)
		return false;
	for (int d = 0; d < a->rank; d++)
		if (a->dims[d] >= 0 && b->dims[d] >= 0 && a->dims[d] != b->dims[d])
			return false;
	return true;
}

static int mismatch(const mfs_tensor_spec *have, const mfs_tensor_spec *want,
		    const char *tensor, const char *consumer, mfs_error *err)
{
	char h[160], w[160];
	spec_text(have, h, sizeof(h));
	spec_text(want, w, sizeof(w));
	return mfs_fail(err, EINVAL, "tensor '%s' is %s where it is produced, but %s needs %s",
			tensor, h, consumer, w);
}

/* The map keys name the model's tensors, and every required input is fed. */
static int check_names(const mfs_model_config *c, int s, const mfs_model_config *sc,
		       mfs_error *err)
{
	const mfs_ensemble_step *st = &c->steps[s];
	for (int k = 0; k < st->n_input_map; k++)
		if (mfs_config_find_input(sc, st->input_map[k].key) < 0)
			return mfs_fail(err, EINVAL, "step %d (model '%s'): input_map key '%s' is not an input of '%s'",
					s, st->model_name, st->input_map[k].key, st->model_name);
	for (int k = 0; k < st->n_output_map; k++)
		if (mfs_config_find_output(sc, st->output_map[k].key) < 0)
			return mfs_fail(err, EINVAL, "step %d (model '%s'): output_map key '%s' is not an output of '%s'",
					s, st->model_name, st->output_map[k].key, st->model_name);
	for (int i = 0; i < sc->n_inputs; i++) {
		bool mapped = false;
		for (int k = 0; k < st->n_input_map; k++)
			mapped |= strcmp(st->input_map[k].key, sc->inputs[i].name) == 0;
		if (!mapped && !sc->inputs[i].optional)
			return mfs_fail(err, EINVAL, "step %d (model '%s'): input '%s' of '%s' is not in the input_map",
					s, st->model_name, sc->inputs[i].name, st->model_name);
	}
	if (c->max_batch_size > 0 && sc->max_batch_size < c->max_batch_size)
		return mfs_fail(err, EINVAL, "step %d (model '%s'): its max_batch_size %d is less than the ensemble's %d",
				s, st->model_name, sc->max_batch_size, c->max_batch_size);
	return 0;
}

int mfs_ensemble_plan_check_steps(const mfs_ensemble_plan *p,
				  const mfs_model_config *c,
				  const mfs_model_config *const *step_cfgs,
				  mfs_error *err)
{
	int rc;
	for (int s = 0; s < p->n_steps; s++)
		if ((rc = check_names(c, s, step_cfgs[s], err)) < 0)
			return rc;
	mfs_tensor_spec have, want;
	char consumer[256];
	for (int s = 0; s < p->n_steps; s++) {
		const mfs_ensemble_step *st = &c->steps[s];
		const mfs_model_config *sc = step_cfgs[s];
		for (int k = 0; k < st->n_input_map; k++) {
			int t = p->step_in[s][k];
			int q = p->producer[t];
			mfs_ensemble_plan_tensor_spec(p, c, t, q >= 0 ? step_cfgs[q] : NULL, &have);
			mfs_config_input_spec(sc, mfs_config_find_input(sc, st->input_map[k].key), &want);
			snprintf(consumer, sizeof(consumer), "step %d (model '%s') input '%s'", s,
				 st->model_name, st->input_map[k].key);
			if (!specs_agree(&have, &want))
				return mismatch(&have, &want, p->tensor_names[t], consumer, err);
		}
	}
	for (int i = 0; i < c->n_outputs; i++) {
		int t = p->out_tensor[i];
		int q = p->producer[t];
		mfs_ensemble_plan_tensor_spec(p, c, t, q >= 0 ? step_cfgs[q] : NULL, &have);
		mfs_config_output_spec(c, i, &want);
		snprintf(consumer, sizeof(consumer), "the ensemble's output '%s'", c->outputs[i].name);
		if (!specs_agree(&have, &want))
			return mismatch(&have, &want, p->tensor_names[t], consumer, err);
	}
	return 0;
}

/* ---- cycles between ensembles ---- */

#define CYCLE_DEPTH 64

typedef struct cycle_walk {
	mfs_ensemble_lookup lookup;
	void *ctx;
	const char *stack[CYCLE_DEPTH];
	int depth;
	const char *done[256];         /* explored, no cycle (a memo for diamonds) */
	int n_done;
	char *path;
} cycle_walk;

static bool explored(const cycle_walk *w, const char *name)
{
	for (int i = 0; i < w->n_done; i++)
		if (strcmp(w->done[i], name) == 0)
			return true;
	return false;
}

/* The stack from index `from`, then `again`, as "a -> b -> a". */
static void cycle_path(const cycle_walk *w, int from, const char *again)
{
	size_t used = 0, room = MFS_ENSEMBLE_CYCLE_MAX - 4;   /* "..." and NUL */
	for (int i = from; i <= w->depth; i++) {
		const char *n = i < w->depth ? w->stack[i] : again;
		int k = snprintf(w->path + used, room - used, "%s%s", i > from ? " -> " : "", n);
		if (k < 0 || (size_t)k >= room - used) {
			strcpy(w->path + room - 1, "...");
			return;
		}
		used += (size_t)k;
	}
}

/* Walk ensemble stack[depth - 1] (config c): true once a cycle is found. */
static bool walk(cycle_walk *w, const mfs_model_config *c)
{
	for (int s = 0; s < c->n_steps; s++) {
		const mfs_ensemble_step *st = &c->steps[s];
		for (int i = 0; i < w->depth; i++)
			if (strcmp(w->stack[i], st->model_name) == 0) {
				cycle_path(w, i, st->model_name);
				return true;
			}
		if (explored(w, st->model_name) || w->depth == CYCLE_DEPTH)
			continue;
		const mfs_model_config *sc = w->lookup(w->ctx, st->model_name, st->model_version);
		if (!sc || !mfs_config_is_ensemble(sc))
			continue;
		w->stack[w->depth++] = st->model_name;
		if (walk(w, sc))
			return true;
		w->depth--;
		if (w->n_done < (int)(sizeof(w->done) / sizeof(w->done[0])))
			w->done[w->n_done++] = st->model_name;
	}
	return false;
}

bool mfs_ensemble_find_cycle(const char *name, const mfs_model_config *c,
			     mfs_ensemble_lookup lookup, void *ctx,
			     char path[MFS_ENSEMBLE_CYCLE_MAX])
{
	cycle_walk w = { .lookup = lookup, .ctx = ctx, .depth = 1, .path = path };
	w.stack[0] = name;
	path[0] = '\0';
	return walk(&w, c);
}

/* test_ensemble_plan.c - an ensemble's config checked and planned
 * (ensemble_plan.h): the order steps run in and which wait for which
 * (steps that need only the ensemble's inputs, or the same producer, are
 * released together and run concurrently), the errors found from the
 * config alone, and the checks against the step models' configs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ensemble_plan.h"

static void parse(const char *text, mfs_model_config *c)
{
	mfs_error err;
	mfs_error_clear(&err);
	if (mfs_config_parse_pbtxt(text, strlen(text), "config.pbtxt", c, &err))
		fail_msg("unexpected parse error: %s", err.msg);
	if (mfs_config_is_ensemble(c) && mfs_config_complete_ensemble(c, c->name ? c->name : "e", &err))
		fail_msg("unexpected completion error: %s", err.msg);
}

static mfs_ensemble_plan *plan_ok(const char *text, mfs_model_config *c)
{
	mfs_ensemble_plan *p = NULL;
	mfs_error err;
	parse(text, c);
	if (mfs_ensemble_plan_new(c, &p, &err))
		fail_msg("unexpected plan error: %s", err.msg);
	return p;
}

static void plan_fails(const char *text, const char *msg)
{
	mfs_model_config c;
	mfs_ensemble_plan *p = NULL;
	mfs_error err;
	parse(text, &c);
	assert_int_equal(mfs_ensemble_plan_new(&c, &p, &err), -EINVAL);
	assert_null(p);
	assert_string_equal(err.msg, msg);
	mfs_config_release(&c);
}

/* A step model "NAME" of one FP32 input "in" and output "out" of dims. */
#define STEP(name, dims) \
	"name: \"" name "\" max_batch_size: 8\n" \
	"input [ { name: \"in\" data_type: TYPE_FP32 dims: " dims " } ]\n" \
	"output [ { name: \"out\" data_type: TYPE_FP32 dims: " dims " } ]\n"

/* One step entry: MODEL reads tensor IN into "in", writes "out" as OUT. */
#define S(model, in, out) \
	" { model_name: \"" model "\" input_map { key: \"in\" value: \"" in "\" }" \
	" output_map { key: \"out\" value: \"" out "\" } }\n"

#define HEAD "name: \"e\" platform: \"ensemble\" max_batch_size: 8\n" \
	"input [ { name: \"x\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n"

static int position(const mfs_ensemble_plan *p, int step)
{
	for (int i = 0; i < p->n_steps; i++)
		if (p->order[i] == step)
			return i;
	return -1;
}

static void test_linear_pipeline(void **state)
{
	(void)state;
	mfs_model_config c;
	mfs_ensemble_plan *p = plan_ok(HEAD
		"output [ { name: \"z\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n"
		"ensemble_scheduling { step [\n"
		S("a", "x", "y") ","
		S("b", "y", "w") ","
		S("c", "w", "z")
		"] }\n", &c);
	assert_int_equal(p->n_steps, 3);
	assert_int_equal(p->n_tensors, 4);          /* x, y, w, z */
	assert_int_equal(p->producer[0], -1);        /* x: the ensemble's input */
	assert_int_equal(p->producer[p->out_tensor[0]], 2);
	for (int s = 0; s < 3; s++) {
		assert_int_equal(p->order[s], s);
		assert_int_equal(p->level[s], s);
		assert_int_equal(p->n_waits[s], s ? 1 : 0);
	}
	assert_int_equal(p->n_dependents[0], 1);
	assert_int_equal(p->dependents[0][0], 1);
	assert_int_equal(p->n_dependents[2], 0);
	mfs_ensemble_plan_free(p);
	mfs_config_release(&c);
}

/* Listed last-first: the order still runs producers first; the two
 * middle steps wait only for "pre", so its end releases both at once. */
static void test_diamond_releases_independent_steps_together(void **state)
{
	(void)state;
	mfs_model_config c;
	mfs_ensemble_plan *p = plan_ok(HEAD
		"output [ { name: \"z\" data_type: TYPE_FP32 dims: [ 4 ] },\n"
		"         { name: \"l\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n"
		"ensemble_scheduling { step [\n"
		" { model_name: \"join\" input_map { key: \"in\" value: \"l\" } input_map { key: \"in2\" value: \"r\" }\n"
		"   output_map { key: \"out\" value: \"z\" } },\n"
		S("left", "p", "l") ","
		S("right", "p", "r") ","
		S("pre", "x", "p")
		"] }\n", &c);
	assert_int_equal(p->order[0], 3);
	assert_true(position(p, 1) < position(p, 0) && position(p, 2) < position(p, 0));
	assert_int_equal(p->n_waits[3], 0);
	assert_int_equal(p->n_waits[1], 1);
	assert_int_equal(p->n_waits[2], 1);
	assert_int_equal(p->n_waits[0], 2);          /* two distinct producers */
	assert_int_equal(p->n_dependents[3], 2);     /* pre releases left and right */
	assert_int_equal(p->dependents[3][0] + p->dependents[3][1], 1 + 2);
	assert_int_equal(p->level[1], 1);
	assert_int_equal(p->level[2], 1);            /* same level: they run side by side */
	assert_int_equal(p->level[0], 2);
	/* An intermediate tensor may also be an output. */
	assert_int_equal(p->producer[p->out_tensor[1]], 1);
	mfs_ensemble_plan_free(p);
	mfs_config_release(&c);
}

/* Two steps on the ensemble's inputs alone: both ready at the start. */
static void test_steps_on_inputs_start_together(void **state)
{
	(void)state;
	mfs_model_config c;
	mfs_ensemble_plan *p = plan_ok(HEAD
		"output [ { name: \"a\" data_type: TYPE_FP32 dims: [ 4 ] },\n"
		"         { name: \"b\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n"
		"ensemble_scheduling { step [\n"
		S("m", "x", "a") ","
		S("m", "x", "b")
		"] }\n", &c);
	assert_int_equal(p->n_waits[0], 0);
	assert_int_equal(p->n_waits[1], 0);
	assert_int_equal(p->level[0], 0);
	assert_int_equal(p->level[1], 0);
	mfs_ensemble_plan_free(p);
	mfs_config_release(&c);
}

static void test_errors_from_the_config(void **state)
{
	(void)state;
#define OUT_Z "output [ { name: \"z\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n"
	plan_fails(HEAD OUT_Z "ensemble_scheduling { step [\n"
		   S("a", "z", "y") ","
		   S("b", "y", "z")
		   "] }\n",
		   "the steps form a cycle: steps 0 ('a'), 1 ('b') wait for each other");
	plan_fails(HEAD OUT_Z "ensemble_scheduling { step [\n"
		   S("a", "z", "z")
		   "] }\n",
		   "step 0 (model 'a') reads a tensor it produces itself (a cycle)");
	plan_fails(HEAD OUT_Z "ensemble_scheduling { step [\n"
		   S("a", "nowhere", "z")
		   "] }\n",
		   "step 0 (model 'a') input_map reads 'nowhere', which no step and no ensemble input produces");
	plan_fails(HEAD OUT_Z "ensemble_scheduling { step [\n"
		   S("a", "x", "z") ","
		   S("b", "x", "z")
		   "] }\n",
		   "step 1 (model 'b') output_map writes 'z', which step 0 (model 'a') already produces");
	plan_fails(HEAD OUT_Z "ensemble_scheduling { step [\n"
		   S("a", "x", "x")
		   "] }\n",
		   "step 0 (model 'a') output_map writes 'x', which is an ensemble input");
	plan_fails(HEAD OUT_Z "ensemble_scheduling { step [\n"
		   S("a", "x", "y")
		   "] }\n",
		   "ensemble output 'z' is produced by no step (no output_map writes it)");
	plan_fails(HEAD OUT_Z "ensemble_scheduling { step [\n"
		   " { model_name: \"a\" input_map { key: \"in\" value: \"x\" } }\n"
		   "] }\n",
		   "step 0 (model 'a') has no output_map: it would produce nothing");
#undef OUT_Z
}

static void test_inputs_and_outputs_must_be_declared(void **state)
{
	(void)state;
	mfs_model_config c;
	mfs_error err;
	const char *text = "platform: \"ensemble\"\n"
		"input [ { name: \"x\" data_type: TYPE_FP32 } ]\n"
		"output [ { name: \"x\" data_type: TYPE_FP32 dims: [ 1 ] } ]\n"
		"ensemble_scheduling { step { model_name: \"m\" output_map { key: \"o\" value: \"y\" } } }\n";
	assert_int_equal(mfs_config_parse_pbtxt(text, strlen(text), "config.pbtxt", &c, &err), 0);
	assert_int_equal(mfs_config_complete_ensemble(&c, "e", &err), -EINVAL);
	assert_string_equal(err.msg, "ensemble input 'x' needs data_type and dims (an ensemble has no graph to take them from)");
	mfs_config_release(&c);
}

/* The pipeline of the linear test, checked against step configs. */
static int check(const char *ens, const char *a, const char *b, mfs_error *err)
{
	mfs_model_config c, ca, cb;
	mfs_ensemble_plan *p = plan_ok(ens, &c);
	parse(a, &ca);
	parse(b, &cb);
	const mfs_model_config *cfgs[] = { &ca, &cb };
	int rc = mfs_ensemble_plan_check_steps(p, &c, cfgs, err);
	mfs_ensemble_plan_free(p);
	mfs_config_release(&c);
	mfs_config_release(&ca);
	mfs_config_release(&cb);
	return rc;
}

#define TWO_STEPS HEAD \
	"output [ { name: \"z\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n" \
	"ensemble_scheduling { step [\n" \
	S("a", "x", "y") "," \
	S("b", "y", "z") \
	"] }\n"

static void test_checks_against_step_models(void **state)
{
	(void)state;
	mfs_error err;
	assert_int_equal(check(TWO_STEPS, STEP("a", "[ 4 ]"), STEP("b", "[ 4 ]"), &err), 0);
	/* A variable dim agrees with a fixed one. */
	assert_int_equal(check(TWO_STEPS, STEP("a", "[ -1 ]"), STEP("b", "[ 4 ]"), &err), 0);
	assert_int_equal(check(TWO_STEPS, STEP("a", "[ 4 ]"), STEP("b", "[ 5 ]"), &err), -EINVAL);
	assert_string_equal(err.msg, "tensor 'y' is TYPE_FP32 [-1,4] where it is produced, but step 1 (model 'b') input 'in' needs TYPE_FP32 [-1,5]");
	assert_int_equal(check(TWO_STEPS, STEP("a", "[ 4 ]"),
			       "name: \"b\" max_batch_size: 8\n"
			       "input [ { name: \"in\" data_type: TYPE_INT64 dims: [ 4 ] } ]\n"
			       "output [ { name: \"out\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n", &err), -EINVAL);
	assert_string_equal(err.msg, "tensor 'y' is TYPE_FP32 [-1,4] where it is produced, but step 1 (model 'b') input 'in' needs TYPE_INT64 [-1,4]");
	/* The ensemble's output must take what its producer gives. */
	assert_int_equal(check(TWO_STEPS, STEP("a", "[ 4 ]"), STEP("b", "[ -1 ]"), &err), 0);
	assert_int_equal(check(TWO_STEPS, STEP("a", "[ 4 ]"),
			       "name: \"b\" max_batch_size: 8\n"
			       "input [ { name: \"in\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n"
			       "output [ { name: \"out\" data_type: TYPE_FP32 dims: [ 2, 2 ] } ]\n", &err), -EINVAL);
	assert_string_equal(err.msg, "tensor 'z' is TYPE_FP32 [-1,2,2] where it is produced, but the ensemble's output 'z' needs TYPE_FP32 [-1,4]");
}

static void test_names_and_batching_against_step_models(void **state)
{
	(void)state;
	mfs_error err;
	assert_int_equal(check(TWO_STEPS, STEP("a", "[ 4 ]"),
			       "name: \"b\" max_batch_size: 8\n"
			       "input [ { name: \"other\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n"
			       "output [ { name: \"out\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n", &err), -EINVAL);
	assert_string_equal(err.msg, "step 1 (model 'b'): input_map key 'in' is not an input of 'b'");
	assert_int_equal(check(TWO_STEPS, STEP("a", "[ 4 ]"),
			       "name: \"b\" max_batch_size: 8\n"
			       "input [ { name: \"in\" data_type: TYPE_FP32 dims: [ 4 ] },\n"
			       "        { name: \"bias\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n"
			       "output [ { name: \"out\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n", &err), -EINVAL);
	assert_string_equal(err.msg, "step 1 (model 'b'): input 'bias' of 'b' is not in the input_map");
	assert_int_equal(check(TWO_STEPS, STEP("a", "[ 4 ]"),
			       "name: \"b\" max_batch_size: 8\n"
			       "input [ { name: \"in\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n"
			       "output [ { name: \"result\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n", &err), -EINVAL);
	assert_string_equal(err.msg, "step 1 (model 'b'): output_map key 'out' is not an output of 'b'");
	assert_int_equal(check(TWO_STEPS, STEP("a", "[ 4 ]"),
			       "name: \"b\" max_batch_size: 2\n"
			       "input [ { name: \"in\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n"
			       "output [ { name: \"out\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n", &err), -EINVAL);
	assert_string_equal(err.msg, "step 1 (model 'b'): its max_batch_size 2 is less than the ensemble's 8");
}

/* A repository of ensembles for mfs_ensemble_find_cycle: configs by name. */
typedef struct repo {
	const char *names[4];
	mfs_model_config cfgs[4];
	int n;
} repo;

static const mfs_model_config *repo_lookup(void *ctx, const char *name, int64_t version)
{
	(void)version;
	repo *r = ctx;
	for (int i = 0; i < r->n; i++)
		if (strcmp(r->names[i], name) == 0)
			return &r->cfgs[i];
	return NULL;
}

static void repo_add(repo *r, const char *name, const char *text)
{
	r->names[r->n] = name;
	parse(text, &r->cfgs[r->n++]);
}

static void repo_release(repo *r)
{
	for (int i = 0; i < r->n; i++)
		mfs_config_release(&r->cfgs[i]);
}

#define ENS(name, step) "name: \"" name "\" platform: \"ensemble\" max_batch_size: 8\n" \
	"input [ { name: \"x\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n" \
	"output [ { name: \"y\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n" \
	"ensemble_scheduling { step [\n" S(step, "x", "y") "] }\n"

static void test_cycles_between_ensembles(void **state)
{
	(void)state;
	char path[MFS_ENSEMBLE_CYCLE_MAX];
	repo r = { 0 };
	repo_add(&r, "a", ENS("a", "b"));
	repo_add(&r, "b", ENS("b", "a"));
	repo_add(&r, "self", ENS("self", "self"));
	repo_add(&r, "outer", ENS("outer", "inner"));
	/* a -> b -> a, from either end; an ensemble naming itself. */
	assert_true(mfs_ensemble_find_cycle("a", &r.cfgs[0], repo_lookup, &r, path));
	assert_string_equal(path, "a -> b -> a");
	assert_true(mfs_ensemble_find_cycle("b", &r.cfgs[1], repo_lookup, &r, path));
	assert_string_equal(path, "b -> a -> b");
	assert_true(mfs_ensemble_find_cycle("self", &r.cfgs[2], repo_lookup, &r, path));
	assert_string_equal(path, "self -> self");
	/* Nesting without a cycle: an inner ensemble over a plain model
	 * (not in the lookup: not an ensemble), or not loaded at all. */
	assert_false(mfs_ensemble_find_cycle("outer", &r.cfgs[3], repo_lookup, &r, path));
	assert_string_equal(path, "");
	repo_release(&r);
	repo q = { 0 };
	repo_add(&q, "outer", ENS("outer", "inner"));
	repo_add(&q, "inner", ENS("inner", "leaf"));
	assert_false(mfs_ensemble_find_cycle("outer", &q.cfgs[0], repo_lookup, &q, path));
	/* A cycle below the ensemble asked about is found too. */
	repo_release(&q);
	repo t = { 0 };
	repo_add(&t, "top", ENS("top", "p"));
	repo_add(&t, "p", ENS("p", "q"));
	repo_add(&t, "q", ENS("q", "p"));
	assert_true(mfs_ensemble_find_cycle("top", &t.cfgs[0], repo_lookup, &t, path));
	assert_string_equal(path, "p -> q -> p");
	repo_release(&t);
}

/* Long names: the path is cut, so a message quoting it stays short. */
static void test_cycle_path_is_bounded(void **state)
{
	(void)state;
	char path[MFS_ENSEMBLE_CYCLE_MAX];
	char a[200], b[200], ta[1200], tb[1200];
	memset(a, 'a', sizeof(a) - 1);
	a[sizeof(a) - 1] = 0;
	memset(b, 'b', sizeof(b) - 1);
	b[sizeof(b) - 1] = 0;
	snprintf(ta, sizeof(ta), ENS("%s", "%s"), a, b);
	snprintf(tb, sizeof(tb), ENS("%s", "%s"), b, a);
	repo r = { 0 };
	repo_add(&r, a, ta);
	repo_add(&r, b, tb);
	assert_true(mfs_ensemble_find_cycle(a, &r.cfgs[0], repo_lookup, &r, path));
	assert_true(strlen(path) < MFS_ENSEMBLE_CYCLE_MAX);
	assert_int_equal(strncmp(path, a, 20), 0);
	assert_string_equal(path + strlen(path) - 3, "...");
	repo_release(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_linear_pipeline),
		cmocka_unit_test(test_diamond_releases_independent_steps_together),
		cmocka_unit_test(test_steps_on_inputs_start_together),
		cmocka_unit_test(test_errors_from_the_config),
		cmocka_unit_test(test_inputs_and_outputs_must_be_declared),
		cmocka_unit_test(test_checks_against_step_models),
		cmocka_unit_test(test_names_and_batching_against_step_models),
		cmocka_unit_test(test_cycles_between_ensembles),
		cmocka_unit_test(test_cycle_path_is_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

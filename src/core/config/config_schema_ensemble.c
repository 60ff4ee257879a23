/* config_schema_ensemble.c - ensemble_scheduling (config_schema.c's
 * table): the steps with their tensor maps, and the rule that platform
 * "ensemble" and ensemble_scheduling go together.  Whether the steps form
 * a pipeline is ensemble_plan.c's question, asked at load.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "config_fields.h"

/* ensemble_scheduling { step [ { model_name model_version input_map
 * output_map } ] }; maps as protobuf writes them: entries { key value }. */

static int map_key(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return cfg_get_string(cv, n, &((mfs_tensor_map *)obj)->key);
}

static int map_value(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return cfg_get_string(cv, n, &((mfs_tensor_map *)obj)->value);
}

static int append_map_entry(cfg_conv *cv, const cfg_node *n, mfs_tensor_map **arr,
			    int *count)
{
	static const cfg_field_def defs[] = {
		{ "key", false, map_key }, { "value", false, map_value },
	};
	mfs_tensor_map *grown, *e;
	int rc;

	if (*count >= 4096)
		return cfg_fail_at(cv, n, "too many entries in %s", n->name);
	grown = realloc(*arr, (size_t)(*count + 1) * sizeof(*grown));
	if (!grown)
		return cfg_no_memory(cv);
	*arr = grown;
	e = &grown[(*count)++];
	e->key = e->value = NULL;
	rc = cfg_conv_message(cv, n, n->name, defs, N_OF(defs), NULL, e);
	if (rc)
		return rc;
	if (!e->key || !*e->key || !e->value || !*e->value)
		return cfg_fail_at(cv, n, "%s entry needs a non-empty key and value", n->name);
	for (int i = 0; i < *count - 1; i++)
		if (strcmp(grown[i].key, e->key) == 0)
			return cfg_fail_at(cv, n, "%s: key '%s' given twice", n->name, e->key);
	return 0;
}

static int step_model_name(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return cfg_get_string(cv, n, &((mfs_ensemble_step *)obj)->model_name);
}

static int step_model_version(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return cfg_get_i64(cv, n, -1, INT64_MAX, &((mfs_ensemble_step *)obj)->model_version);
}

static int step_input_map(cfg_conv *cv, const cfg_node *n, void *obj)
{
	mfs_ensemble_step *st = obj;
	return append_map_entry(cv, n, &st->input_map, &st->n_input_map);
}

static int step_output_map(cfg_conv *cv, const cfg_node *n, void *obj)
{
	mfs_ensemble_step *st = obj;
	return append_map_entry(cv, n, &st->output_map, &st->n_output_map);
}

static int es_step(cfg_conv *cv, const cfg_node *n, void *obj)
{
	static const cfg_field_def defs[] = {
		{ "model_name", false, step_model_name },
		{ "model_version", false, step_model_version },
		{ "input_map", true, step_input_map },
		{ "output_map", true, step_output_map },
	};
	static const char *const triton[] = { "model_namespace", NULL };
	mfs_model_config *c = obj;
	mfs_ensemble_step *grown, *st;
	int rc;

	if (c->n_steps >= 1024)
		return cfg_fail_at(cv, n, "too many ensemble steps");
	grown = realloc(c->steps, (size_t)(c->n_steps + 1) * sizeof(*grown));
	if (!grown)
		return cfg_no_memory(cv);
	c->steps = grown;
	st = &grown[c->n_steps++];
	memset(st, 0, sizeof(*st));
	st->model_version = -1;
	rc = cfg_conv_message(cv, n, "step", defs, N_OF(defs), triton, st);
	if (rc)
		return rc;
	if (!st->model_name || !*st->model_name)
		return cfg_fail_at(cv, n, "ensemble step %d has no model_name", c->n_steps - 1);
	if (st->model_version == 0)
		return cfg_fail_at(cv, n, "ensemble step %d: model_version must be -1 (the current version) or >= 1",
				   c->n_steps - 1);
	return 0;
}

int cfg_ensemble_scheduling(cfg_conv *cv, const cfg_node *n, void *obj)
{
	static const cfg_field_def defs[] = { { "step", true, es_step } };
	((mfs_model_config *)obj)->has_ensemble_scheduling = true;
	return cfg_conv_message(cv, n, "ensemble_scheduling", defs, N_OF(defs), NULL, obj);
}

/* The top-level field name (for an error's line), else the root. */
static const cfg_node *field_or_root(const cfg_node *root, const char *name)
{
	for (int i = 0; i < root->n_children; i++)
		if (strcmp(root->children[i].name, name) == 0)
			return &root->children[i];
	return root;
}

/* platform "ensemble" and ensemble_scheduling go together, and an
 * ensemble has none of a model's own engine fields. */
int cfg_check_ensemble(cfg_conv *cv, const cfg_node *root, const mfs_model_config *c)
{
	static const char *const own[] = {
		"backend", "dynamic_batching", "instance_group", "default_model_filename",
		"model_warmup",
	};
	bool ensemble = mfs_config_is_ensemble(c);
	if (ensemble && c->n_steps == 0)
		return cfg_fail_at(cv, field_or_root(root, "platform"),
				   "platform 'ensemble' needs ensemble_scheduling with at least one step");
	if (!ensemble && c->has_ensemble_scheduling)
		return cfg_fail_at(cv, field_or_root(root, "ensemble_scheduling"),
				   "ensemble_scheduling needs platform: \"ensemble\"");
	for (size_t i = 0; ensemble && i < N_OF(own); i++) {
		const cfg_node *n = field_or_root(root, own[i]);
		/* Triton prints "" and [] for them ("not set"); an empty
		 * dynamic_batching {} still turns batching on. */
		bool unset = n != root && cfg_is_zero(n, cv->json) && strcmp(own[i], "dynamic_batching") != 0;
		if (n != root && !unset)
			return cfg_fail_at(cv, n, "an ensemble has no %s of its own (each step model has its own)",
					   own[i]);
	}
	return 0;
}

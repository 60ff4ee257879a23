/* config_render.c - the config in effect as Triton prints it
 * (GET v2/models/<m>/config): protobuf's JSON mapping with the proto's
 * field names, enums as their names, and integers as JSON numbers (Triton
 * turns proto3's int64-as-string back into numbers).  Only fields modelfs
 * implements are shown; config_json.c reads this output back unchanged.
 */
#include <stdio.h>
#include <string.h>

#include "config.h"

/* json_object_set_new / json_array_append_new ignore a NULL value, so an
 * allocation failure leaves a field out instead of crashing; the caller
 * sees NULL only when the top object itself cannot be made. */

static json_t *dims_json(const int64_t *dims, int rank)
{
	json_t *a = json_array();

	for (int d = 0; a && d < rank; d++)
		json_array_append_new(a, json_integer(dims[d]));
	return a;
}

static json_t *io_json(const mfs_io_config *io, bool is_input)
{
	json_t *o = json_object();
	const char *dt = mfs_dtype_config_name(io->dtype);

	if (!o)
		return NULL;
	json_object_set_new(o, "name", json_string(io->name ? io->name : ""));
	json_object_set_new(o, "data_type", json_string(dt ? dt : "TYPE_INVALID"));
	if (io->kind != MFS_KIND_TENSOR) {
		static const int64_t any[1] = { -1 };   /* CONFIG.md: sequences */
		json_object_set_new(o, "dims", dims_json(any, 1));
	} else {
		json_object_set_new(o, "dims", dims_json(io->dims, io->rank > 0 ? io->rank : 0));
	}
	if (io->has_reshape) {
		json_t *r = json_object();
		if (r)
			json_object_set_new(r, "shape", dims_json(io->reshape, io->reshape_rank));
		json_object_set_new(o, "reshape", r);
	}
	if (is_input && io->format != MFS_FORMAT_NONE)
		json_object_set_new(o, "format", json_string(mfs_io_format_name(io->format)));
	if (is_input)
		json_object_set_new(o, "optional", json_boolean(io->optional));
	else if (io->label_filename)
		json_object_set_new(o, "label_filename", json_string(io->label_filename));
	return o;
}

/* Triton prints model_warmup's inputs as a map: {"IN": {...}}. */
static json_t *warmup_json(const mfs_warmup *w)
{
	json_t *o = json_object(), *ins = json_object();

	if (!o || !ins) {
		json_decref(o);
		json_decref(ins);
		return NULL;
	}
	json_object_set_new(o, "name", json_string(w->name));
	json_object_set_new(o, "batch_size", json_integer(w->batch_size));
	json_object_set_new(o, "count", json_integer(w->count));
	for (int i = 0; i < w->n_inputs; i++) {
		const mfs_warmup_input *wi = &w->inputs[i];
		const char *dt = mfs_dtype_config_name(wi->dtype);
		json_t *v = json_object();
		if (!v)
			break;
		json_object_set_new(v, "data_type", json_string(dt ? dt : "TYPE_INVALID"));
		json_object_set_new(v, "dims", dims_json(wi->dims, wi->rank));
		if (wi->data == MFS_WARMUP_FILE)
			json_object_set_new(v, "input_data_file", json_string(wi->file));
		else
			json_object_set_new(v, wi->data == MFS_WARMUP_RANDOM ? "random_data" : "zero_data",
					    json_true());
		json_object_set_new(ins, wi->name, v);
	}
	json_object_set_new(o, "inputs", ins);
	return o;
}

static json_t *version_policy_json(const mfs_model_config *c)
{
	json_t *vp = json_object(), *inner = json_object();

	if (!vp || !inner) {
		json_decref(vp);
		json_decref(inner);
		return NULL;
	}
	switch (c->version_policy.kind) {
	case MFS_POLICY_ALL:
		json_object_set_new(vp, "all", inner);
		break;
	case MFS_POLICY_SPECIFIC: {
		json_t *a = json_array();
		for (int i = 0; a && i < c->version_policy.n_versions; i++)
			json_array_append_new(a, json_integer(c->version_policy.versions[i]));
		json_object_set_new(inner, "versions", a);
		json_object_set_new(vp, "specific", inner);
		break;
	}
	case MFS_POLICY_LATEST:
	default:
		json_object_set_new(inner, "num_versions",
				    json_integer(c->version_policy.num_versions));
		json_object_set_new(vp, "latest", inner);
		break;
	}
	return vp;
}

static const char *kind_name(mfs_instance_kind k)
{
	switch (k) {
	case MFS_KIND_CPU: return "KIND_CPU";
	case MFS_KIND_GPU: return "KIND_GPU";
	case MFS_KIND_AUTO: return "KIND_AUTO";
	}
	return "KIND_AUTO";
}

/* Triton's ModelQueuePolicy as it prints it. */
static json_t *queue_policy_json(const mfs_queue_policy *p)
{
	return json_pack("{s:s,s:I,s:b,s:I}",
			 "timeout_action", p->timeout_delay ? "DELAY" : "REJECT",
			 "default_timeout_microseconds", (json_int_t)p->default_timeout_us,
			 "allow_timeout_override", p->allow_timeout_override,
			 "max_queue_size", (json_int_t)p->max_queue_size);
}

static json_t *dynamic_batching_json(const mfs_model_config *c)
{
	json_t *o = json_object(), *a = json_array(), *m = json_object();

	if (!o || !a || !m) {
		json_decref(o);
		json_decref(a);
		json_decref(m);
		return NULL;
	}
	for (int i = 0; i < c->dynamic_batching.n_preferred_batch_size; i++)
		json_array_append_new(a, json_integer(c->dynamic_batching.preferred_batch_size[i]));
	json_object_set_new(o, "preferred_batch_size", a);
	json_object_set_new(o, "max_queue_delay_microseconds",
			    json_integer(c->dynamic_batching.max_queue_delay_us));
	json_object_set_new(o, "default_queue_policy",
			    queue_policy_json(&c->dynamic_batching.default_queue_policy));
	json_object_set_new(o, "priority_levels", json_integer(c->dynamic_batching.priority_levels));
	json_object_set_new(o, "default_priority_level",
			    json_integer(c->dynamic_batching.default_priority_level));
	for (int i = 0; i < c->dynamic_batching.n_level_policies; i++) {
		char key[32];
		snprintf(key, sizeof(key), "%lld", (long long)c->dynamic_batching.level_policies[i].level);
		json_object_set_new(m, key, queue_policy_json(&c->dynamic_batching.level_policies[i].policy));
	}
	json_object_set_new(o, "priority_queue_policy", m);
	return o;
}

static json_t *tensor_map_json(const mfs_tensor_map *m, int n)
{
	json_t *o = json_object();
	for (int i = 0; o && i < n; i++)
		json_object_set_new(o, m[i].key, json_string(m[i].value));
	return o;
}

static json_t *ensemble_scheduling_json(const mfs_model_config *c)
{
	json_t *steps = json_array();
	for (int i = 0; steps && i < c->n_steps; i++) {
		const mfs_ensemble_step *st = &c->steps[i];
		json_array_append_new(steps, json_pack(
			"{s:s,s:I,s:o,s:o}", "model_name", st->model_name,
			"model_version", (json_int_t)st->model_version,
			"input_map", tensor_map_json(st->input_map, st->n_input_map),
			"output_map", tensor_map_json(st->output_map, st->n_output_map)));
	}
	return json_pack("{s:o}", "step", steps);
}

json_t *mfs_config_to_json(const mfs_model_config *c)
{
	json_t *o = json_object(), *a;

	if (!o)
		return NULL;
	json_object_set_new(o, "name", json_string(c->name ? c->name : ""));
	json_object_set_new(o, "platform",
			    json_string(c->platform ? c->platform :
					mfs_config_custom_backend(c) ? "" : "onnxruntime_onnx"));
	/* An ensemble has no backend, model file or instances of its own. */
	bool ensemble = mfs_config_is_ensemble(c);
	if (!ensemble)
		json_object_set_new(o, "backend",
				    json_string(c->backend ? c->backend : "onnxruntime"));
	json_object_set_new(o, "version_policy", version_policy_json(c));
	json_object_set_new(o, "max_batch_size", json_integer(c->max_batch_size));

	a = json_array();
	for (int i = 0; a && i < c->n_inputs; i++)
		json_array_append_new(a, io_json(&c->inputs[i], true));
	json_object_set_new(o, "input", a);
	a = json_array();
	for (int i = 0; a && i < c->n_outputs; i++)
		json_array_append_new(a, io_json(&c->outputs[i], false));
	json_object_set_new(o, "output", a);

	a = json_array();
	for (int i = 0; a && i < c->n_instance_groups; i++) {
		json_t *g = json_object();
		if (!g)
			break;
		json_object_set_new(g, "count", json_integer(c->instance_groups[i].count));
		json_object_set_new(g, "kind", json_string(kind_name(c->instance_groups[i].kind)));
		json_array_append_new(a, g);
	}
	json_object_set_new(o, "instance_group", a);

	if (c->has_dynamic_batching)
		json_object_set_new(o, "dynamic_batching", dynamic_batching_json(c));
	if (c->has_sequence_batching)
		json_object_set_new(o, "sequence_batching", mfs_config_sequence_json(c));
	if (c->response_cache)
		json_object_set_new(o, "response_cache", json_pack("{s:b}", "enable", 1));
	if (ensemble)
		json_object_set_new(o, "ensemble_scheduling", ensemble_scheduling_json(c));
	else
		json_object_set_new(o, "default_model_filename",
				    json_string(c->default_model_filename ?
						c->default_model_filename : "model.onnx"));

	a = json_object();
	for (int i = 0; a && i < c->n_parameters; i++) {
		json_t *v = json_object();
		if (!v)
			break;
		json_object_set_new(v, "string_value", json_string(c->parameters[i].value));
		json_object_set_new(a, c->parameters[i].key, v);
	}
	json_object_set_new(o, "parameters", a);

	if (c->n_warmups > 0) {
		a = json_array();
		for (int i = 0; a && i < c->n_warmups; i++)
			json_array_append_new(a, warmup_json(&c->warmups[i]));
		json_object_set_new(o, "model_warmup", a);
	}
	return o;
}

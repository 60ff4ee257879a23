/* config_render.c - the config in effect as Triton prints it
 * (GET v2/models/<m>/config): protobuf's JSON mapping with the proto's
 * field names, enums as their names, and integers as JSON numbers (Triton
 * turns proto3's int64-as-string back into numbers).  Only fields modelfs
 * implements are shown; config_json.c reads this output back unchanged.
 */
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
	if (is_input)
		json_object_set_new(o, "optional", json_boolean(io->optional));
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

static json_t *dynamic_batching_json(const mfs_model_config *c)
{
	json_t *o = json_object(), *a = json_array(), *q = json_object();

	if (!o || !a || !q) {
		json_decref(o);
		json_decref(a);
		json_decref(q);
		return NULL;
	}
	for (int i = 0; i < c->dynamic_batching.n_preferred_batch_size; i++)
		json_array_append_new(a, json_integer(c->dynamic_batching.preferred_batch_size[i]));
	json_object_set_new(o, "preferred_batch_size", a);
	json_object_set_new(o, "max_queue_delay_microseconds",
			    json_integer(c->dynamic_batching.max_queue_delay_us));
	json_object_set_new(q, "max_queue_size",
			    json_integer(c->dynamic_batching.max_queue_size));
	json_object_set_new(o, "default_queue_policy", q);
	return o;
}

json_t *mfs_config_to_json(const mfs_model_config *c)
{
	json_t *o = json_object(), *a;

	if (!o)
		return NULL;
	json_object_set_new(o, "name", json_string(c->name ? c->name : ""));
	json_object_set_new(o, "platform",
			    json_string(c->platform ? c->platform : "onnxruntime_onnx"));
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
	return o;
}

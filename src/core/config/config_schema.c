/* config_schema.c - Triton's ModelConfig fields, as modelfs supports them:
 * the parse tree of either front-end (config_tree.h) into an
 * mfs_model_config.
 *
 * Each message is a table of the fields modelfs implements plus a list of
 * the other fields Triton defines.  Those others are accepted only at
 * their zero value (protobuf's "not set": false, 0, "", {} or []), which
 * is what Triton's own rendered configs carry; any other value is an error
 * that says modelfs does not implement the field, rather than a silent
 * difference in behaviour.  A name in neither list is an unknown field.
 * Every message names the file and the line (pbtxt) or key path (JSON).
 *
 * This file holds the top-level table, input/output, version_policy,
 * instance_group, parameters and the rules between fields; a message
 * with rules of its own has its file: config_schema_batching.c
 * (dynamic_batching), config_schema_ensemble.c (ensemble_scheduling),
 * config_schema_warmup.c (model_warmup), config_schema_sequence.c
 * (sequence_batching).  How a field is read (scalars,
 * enums, errors, the table dispatch) is config_fields.c's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "config_fields.h"

/* ---- input / output ---- */

static int io_name(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return cfg_get_string(cv, n, &((mfs_io_config *)obj)->name);
}

static int io_data_type(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return cfg_get_data_type(cv, n, &((mfs_io_config *)obj)->dtype);
}

static int io_dims(cfg_conv *cv, const cfg_node *n, void *obj)
{
	mfs_io_config *io = obj;
	int64_t v;

	if (cfg_get_i64(cv, n, -1, INT64_MAX, &v))
		return -EINVAL;
	if (v == 0)
		return cfg_fail_at(cv, n, "dims of %s '%s': a dim is -1 (variable) or at least 1",
				   n->parent->name, io->name ? io->name : "?");
	if (io->rank < 0)
		io->rank = 0;
	if (io->rank == MFS_MAX_RANK)
		return cfg_fail_at(cv, n, "dims: more than %d dims", MFS_MAX_RANK);
	io->dims[io->rank++] = v;
	return 0;
}

static int reshape_shape(cfg_conv *cv, const cfg_node *n, void *obj)
{
	mfs_io_config *io = obj;
	int64_t v;

	if (cfg_get_i64(cv, n, -1, INT64_MAX, &v))
		return -EINVAL;
	if (v == 0)
		return cfg_fail_at(cv, n, "reshape: a dim is -1 or at least 1");
	if (io->reshape_rank == MFS_MAX_RANK)
		return cfg_fail_at(cv, n, "reshape: more than %d dims", MFS_MAX_RANK);
	io->reshape[io->reshape_rank++] = v;
	return 0;
}

static int io_reshape(cfg_conv *cv, const cfg_node *n, void *obj)
{
	static const cfg_field_def defs[] = { { "shape", true, reshape_shape } };
	mfs_io_config *io = obj;

	io->has_reshape = true;
	io->reshape_rank = 0;
	return cfg_conv_message(cv, n, "reshape", defs, N_OF(defs), NULL, obj);
}

static int io_optional(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return cfg_get_bool(cv, n, &((mfs_io_config *)obj)->optional);
}

static int io_format(cfg_conv *cv, const cfg_node *n, void *obj)
{
	static const cfg_enum_def formats[] = {
		{ "FORMAT_NONE", MFS_FORMAT_NONE }, { "FORMAT_NHWC", MFS_FORMAT_NHWC },
		{ "FORMAT_NCHW", MFS_FORMAT_NCHW },
	};
	int v = 0;

	if (cfg_get_enum(cv, n, formats, N_OF(formats), &v))
		return -EINVAL;
	((mfs_io_config *)obj)->format = (mfs_io_format)v;
	return 0;
}

static int io_label_filename(cfg_conv *cv, const cfg_node *n, void *obj)
{
	mfs_io_config *io = obj;

	if (cfg_get_string(cv, n, &io->label_filename))
		return -EINVAL;
	if (io->label_filename && !io->label_filename[0]) {
		free(io->label_filename);   /* "": Triton's unset */
		io->label_filename = NULL;
	}
	if (io->label_filename && (strchr(io->label_filename, '/') ||
				   strcmp(io->label_filename, "..") == 0 ||
				   strcmp(io->label_filename, ".") == 0))
		return cfg_fail_at(cv, n, "label_filename '%s' must be a file name in the model directory (no '/')",
				   io->label_filename);
	return 0;
}

static int append_io(cfg_conv *cv, const cfg_node *n, mfs_io_config **arr, int *count,
		     bool is_input)
{
	static const cfg_field_def in_defs[] = {
		{ "name", false, io_name }, { "data_type", false, io_data_type },
		{ "dims", true, io_dims }, { "reshape", false, io_reshape },
		{ "optional", false, io_optional }, { "format", false, io_format },
	};
	static const cfg_field_def out_defs[] = {
		{ "name", false, io_name }, { "data_type", false, io_data_type },
		{ "dims", true, io_dims }, { "reshape", false, io_reshape },
		{ "label_filename", false, io_label_filename },
	};
	static const char *const in_triton[] = {
		"is_shape_tensor", "allow_ragged_batch",
		"is_non_linear_format_io", NULL,
	};
	static const char *const out_triton[] = {
		"is_shape_tensor", "is_non_linear_format_io", NULL,
	};
	const char *what = is_input ? "input" : "output";
	mfs_io_config *io, *grown;
	int rc;

	if (*count >= 4096)
		return cfg_fail_at(cv, n, "too many %ss", what);
	grown = realloc(*arr, (size_t)(*count + 1) * sizeof(**arr));
	if (!grown)
		return cfg_no_memory(cv);
	*arr = grown;
	io = &grown[*count];
	memset(io, 0, sizeof(*io));
	io->rank = -1;
	io->graph_index = -1;
	(*count)++;
	rc = cfg_conv_message(cv, n, what, is_input ? in_defs : out_defs,
			      is_input ? N_OF(in_defs) : N_OF(out_defs),
			      is_input ? in_triton : out_triton, io);
	if (rc)
		return rc;
	if (!io->name)
		return cfg_fail_at(cv, n, "%s without a name", what);
	for (int i = 0; i < *count - 1; i++)
		if (strcmp(grown[i].name, io->name) == 0)
			return cfg_fail_at(cv, n, "%s '%s' given twice", what, io->name);
	return 0;
}

/* ---- the model config's fields ---- */

static int m_name(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return cfg_get_string(cv, n, &((mfs_model_config *)obj)->name);
}

static int m_platform(cfg_conv *cv, const cfg_node *n, void *obj)
{
	mfs_model_config *c = obj;

	if (cfg_get_string(cv, n, &c->platform))
		return -EINVAL;
	/* "": Triton prints it for models a backend serves; it means unset. */
	if (c->platform && !c->platform[0]) {
		free(c->platform);
		c->platform = NULL;
	}
	if (c->platform && strcmp(c->platform, "onnxruntime_onnx") != 0 &&
	    strcmp(c->platform, "ensemble") != 0)
		return cfg_fail_at(cv, n, "platform '%s' is not supported (modelfs runs ONNX models: onnxruntime_onnx; pipelines: ensemble)",
				   c->platform);
	return 0;
}

static int m_backend(cfg_conv *cv, const cfg_node *n, void *obj)
{
	mfs_model_config *c = obj;

	if (cfg_get_string(cv, n, &c->backend))
		return -EINVAL;
	/* Any other name is a custom backend, libmodelfs_<name>.so: the name
	 * becomes part of a file name, so no '/' or '.' sneaks in. */
	if (!c->backend)
		return 0;
	if (!c->backend[0] || strspn(c->backend, "abcdefghijklmnopqrstuvwxyz"
				     "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != strlen(c->backend) ||
	    strlen(c->backend) > 64)
		return cfg_fail_at(cv, n, "backend '%s' is not a backend name ([A-Za-z0-9_-], 1 to 64 characters)",
				   c->backend);
	return 0;
}

static int m_max_batch_size(cfg_conv *cv, const cfg_node *n, void *obj)
{
	mfs_model_config *c = obj;

	c->max_batch_size_given = true;
	return cfg_get_int(cv, n, 0, INT32_MAX, &c->max_batch_size);
}

static int m_input(cfg_conv *cv, const cfg_node *n, void *obj)
{
	mfs_model_config *c = obj;
	return append_io(cv, n, &c->inputs, &c->n_inputs, true);
}

static int m_output(cfg_conv *cv, const cfg_node *n, void *obj)
{
	mfs_model_config *c = obj;
	return append_io(cv, n, &c->outputs, &c->n_outputs, false);
}

/* version_policy { latest { num_versions } | all {} | specific { versions } } */

static int vp_num_versions(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return cfg_get_int(cv, n, 1, INT32_MAX,
			   &((mfs_model_config *)obj)->version_policy.num_versions);
}

static int vp_version(cfg_conv *cv, const cfg_node *n, void *obj)
{
	mfs_model_config *c = obj;
	int64_t v, *grown;

	if (cfg_get_i64(cv, n, 1, INT64_MAX, &v))
		return -EINVAL;
	if (c->version_policy.n_versions >= 65536)
		return cfg_fail_at(cv, n, "too many versions");
	grown = realloc(c->version_policy.versions,
			(size_t)(c->version_policy.n_versions + 1) * sizeof(*grown));
	if (!grown)
		return cfg_no_memory(cv);
	c->version_policy.versions = grown;
	grown[c->version_policy.n_versions++] = v;
	return 0;
}

static int vp_choice(cfg_conv *cv, const cfg_node *n, mfs_model_config *c,
		     mfs_version_policy_kind kind)
{
	static const cfg_field_def latest[] = { { "num_versions", false, vp_num_versions } };
	static const cfg_field_def specific[] = { { "versions", true, vp_version } };

	if (n->parent->n_children > 1)
		return cfg_fail_at(cv, n, "version_policy takes one of latest, all or specific");
	c->version_policy.kind = kind;
	c->version_policy.num_versions = 1;
	switch (kind) {
	case MFS_POLICY_LATEST:
		return cfg_conv_message(cv, n, "latest", latest, 1, NULL, c);
	case MFS_POLICY_SPECIFIC:
		return cfg_conv_message(cv, n, "specific", specific, 1, NULL, c);
	case MFS_POLICY_ALL:
		break;
	}
	return cfg_conv_message(cv, n, "all", NULL, 0, NULL, c);
}

static int vp_latest(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return vp_choice(cv, n, obj, MFS_POLICY_LATEST);
}

static int vp_all(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return vp_choice(cv, n, obj, MFS_POLICY_ALL);
}

static int vp_specific(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return vp_choice(cv, n, obj, MFS_POLICY_SPECIFIC);
}

static int m_version_policy(cfg_conv *cv, const cfg_node *n, void *obj)
{
	static const cfg_field_def defs[] = {
		{ "latest", false, vp_latest }, { "all", false, vp_all },
		{ "specific", false, vp_specific },
	};
	return cfg_conv_message(cv, n, "version_policy", defs, N_OF(defs), NULL, obj);
}

/* instance_group { name count kind } */

static const cfg_enum_def instance_kinds[] = {
	{ "KIND_AUTO", 0 }, { "KIND_GPU", 1 }, { "KIND_CPU", 2 }, { "KIND_MODEL", 3 },
};

static int ig_count(cfg_conv *cv, const cfg_node *n, void *obj)
{
	mfs_instance_group *g = obj;

	if (cfg_get_int(cv, n, 0, 1024, &g->count))
		return -EINVAL;
	g->count_given = g->count > 0;
	if (g->count == 0)      /* protobuf's unset: Triton's default */
		g->count = 1;
	return 0;
}

static int ig_kind(cfg_conv *cv, const cfg_node *n, void *obj)
{
	mfs_instance_group *g = obj;
	int v = 0;

	if (cfg_get_enum(cv, n, instance_kinds, N_OF(instance_kinds), &v))
		return -EINVAL;
	switch (v) {
	case 0: g->kind = MFS_KIND_AUTO; return 0;
	case 1: g->kind = MFS_KIND_GPU; return 0;
	case 2: g->kind = MFS_KIND_CPU; return 0;
	}
	return cfg_fail_at(cv, n, "instance_group kind KIND_MODEL is not supported (KIND_CPU, KIND_GPU or KIND_AUTO)");
}

/* Triton names groups only to label them in its logs; accepted, checked
 * to be a string, not kept. */
static int ig_name(cfg_conv *cv, const cfg_node *n, void *obj)
{
	char *s = NULL;
	int rc = cfg_get_string(cv, n, &s);

	(void)obj;
	free(s);
	return rc;
}

static int m_instance_group(cfg_conv *cv, const cfg_node *n, void *obj)
{
	static const cfg_field_def defs[] = {
		{ "name", false, ig_name }, { "count", false, ig_count },
		{ "kind", false, ig_kind },
	};
	static const char *const triton[] = {
		"gpus", "secondary_devices", "profile", "passive", "host_policy",
		"rate_limiter", NULL,
	};
	mfs_model_config *c = obj;
	mfs_instance_group *grown;

	if (c->n_instance_groups >= 256)
		return cfg_fail_at(cv, n, "too many instance groups");
	grown = realloc(c->instance_groups,
			(size_t)(c->n_instance_groups + 1) * sizeof(*grown));
	if (!grown)
		return cfg_no_memory(cv);
	c->instance_groups = grown;
	grown[c->n_instance_groups].count = 1;
	grown[c->n_instance_groups].count_given = false;
	grown[c->n_instance_groups].kind = MFS_KIND_AUTO;
	c->n_instance_groups++;
	return cfg_conv_message(cv, n, "instance_group", defs, N_OF(defs), triton,
				&grown[c->n_instance_groups - 1]);
}

/* response_cache { enable } (Triton's ModelResponseCache). */
static int m_cache_enable(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return cfg_get_bool(cv, n, &((mfs_model_config *)obj)->response_cache);
}

static int m_response_cache(cfg_conv *cv, const cfg_node *n, void *obj)
{
	static const cfg_field_def defs[] = { { "enable", false, m_cache_enable } };
	return cfg_conv_message(cv, n, "response_cache", defs, N_OF(defs), NULL, obj);
}

static int m_default_model_filename(cfg_conv *cv, const cfg_node *n, void *obj)
{
	mfs_model_config *c = obj;

	if (cfg_get_string(cv, n, &c->default_model_filename))
		return -EINVAL;
	/* The file lives in the version directory: a plain name only. */
	if (c->default_model_filename &&
	    (strchr(c->default_model_filename, '/') ||
	     strcmp(c->default_model_filename, ".") == 0 ||
	     strcmp(c->default_model_filename, "..") == 0))
		return cfg_fail_at(cv, n, "default_model_filename '%s' must be a file name, not a path",
				   c->default_model_filename);
	return 0;
}

/* parameters { key: "k" value { string_value: "v" } } */

static int par_key(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return cfg_get_string(cv, n, &((mfs_parameter *)obj)->key);
}

static int par_string_value(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return cfg_get_string(cv, n, &((mfs_parameter *)obj)->value);
}

static int par_value(cfg_conv *cv, const cfg_node *n, void *obj)
{
	static const cfg_field_def defs[] = { { "string_value", false, par_string_value } };
	return cfg_conv_message(cv, n, "parameter value", defs, 1, NULL, obj);
}

static int m_parameters(cfg_conv *cv, const cfg_node *n, void *obj)
{
	static const cfg_field_def defs[] = {
		{ "key", false, par_key }, { "value", false, par_value },
	};
	mfs_model_config *c = obj;
	mfs_parameter *grown, *p;
	int rc;

	if (c->n_parameters >= 4096)
		return cfg_fail_at(cv, n, "too many parameters");
	grown = realloc(c->parameters, (size_t)(c->n_parameters + 1) * sizeof(*grown));
	if (!grown)
		return cfg_no_memory(cv);
	c->parameters = grown;
	p = &grown[c->n_parameters++];
	p->key = p->value = NULL;
	rc = cfg_conv_message(cv, n, "parameters", defs, N_OF(defs), NULL, p);
	if (rc)
		return rc;
	if (!p->key)
		return cfg_fail_at(cv, n, "parameter without a key");
	if (!p->value) {
		p->value = strdup("");
		if (!p->value)
			return cfg_no_memory(cv);
	}
	for (int i = 0; i < c->n_parameters - 1; i++)
		if (strcmp(grown[i].key, p->key) == 0)
			return cfg_fail_at(cv, n, "parameter '%s' given twice", p->key);
	return 0;
}

/* Rules between fields, once all are read. */
static int check_whole(cfg_conv *cv, const cfg_node *root, mfs_model_config *c)
{
	int rc = cfg_check_ensemble(cv, root, c);
	if (rc == 0)
		rc = cfg_check_sequence(cv, root, c);
	if (rc)
		return rc;
	/* Triton's rule: a sample's batch fits the model's batching. */
	for (int i = 0; i < c->n_warmups; i++)
		if (c->warmups[i].batch_size > (c->max_batch_size > 0 ? c->max_batch_size : 1))
			return cfg_fail_at(cv, root, "model_warmup '%s': batch_size %d exceeds %s %d",
					   c->warmups[i].name, c->warmups[i].batch_size,
					   c->max_batch_size > 0 ? "max_batch_size" : "1 (max_batch_size is 0:",
					   c->max_batch_size > 0 ? c->max_batch_size : 1);
	if (!c->has_dynamic_batching)
		return 0;
	if (c->max_batch_size == 0)
		return cfg_fail_at(cv, root, "dynamic_batching needs max_batch_size > 0");
	for (int i = 0; i < c->dynamic_batching.n_preferred_batch_size; i++)
		if (c->dynamic_batching.preferred_batch_size[i] > c->max_batch_size)
			return cfg_fail_at(cv, root,
					   "dynamic_batching: preferred_batch_size %d exceeds max_batch_size %d",
					   c->dynamic_batching.preferred_batch_size[i],
					   c->max_batch_size);
	return cfg_check_priorities(cv, root, c);
}

int cfg_tree_to_config(const cfg_node *root, const char *source, bool json,
		       mfs_model_config *out, mfs_error *err)
{
	static const cfg_field_def defs[] = {
		{ "name", false, m_name },
		{ "platform", false, m_platform },
		{ "backend", false, m_backend },
		{ "max_batch_size", false, m_max_batch_size },
		{ "input", true, m_input },
		{ "output", true, m_output },
		{ "version_policy", false, m_version_policy },
		{ "instance_group", true, m_instance_group },
		{ "dynamic_batching", false, cfg_dynamic_batching },
		{ "default_model_filename", false, m_default_model_filename },
		{ "parameters", true, m_parameters },
		{ "ensemble_scheduling", false, cfg_ensemble_scheduling },
		{ "model_warmup", true, cfg_model_warmup },
		{ "sequence_batching", false, cfg_sequence_batching },
		{ "response_cache", false, m_response_cache },
	};
	static const char *const triton[] = {
		"runtime", "batch_input", "batch_output", "optimization",
		"cc_model_filenames",
		"metric_tags", "model_operations",
		"model_transaction_policy", "model_repository_agents", NULL,
	};
	cfg_conv cv = { .source = source, .json = json, .err = err };
	int rc;

	rc = cfg_conv_message(&cv, root, "the model config", defs, N_OF(defs), triton, out);
	if (rc == 0)
		rc = check_whole(&cv, root, out);
	return rc;
}

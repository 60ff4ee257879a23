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
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_tree.h"

typedef struct conv {
	const char *source;
	bool json;
	mfs_error *err;
} conv;

/* ---- locations and errors ---- */

static void node_path(const cfg_node *n, char *buf, size_t size)
{
	char here[160];

	if (!n || !n->parent) {
		buf[0] = '\0';
		return;
	}
	node_path(n->parent, buf, size);
	if (n->index >= 0)
		snprintf(here, sizeof(here), "%s%.100s[%d]", buf[0] ? "." : "",
			 n->name, n->index);
	else
		snprintf(here, sizeof(here), "%s%.100s", buf[0] ? "." : "", n->name);
	strncat(buf, here, size - strlen(buf) - 1);
}

static int fail_at(conv *cv, const cfg_node *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail_at(conv *cv, const cfg_node *n, const char *fmt, ...)
{
	char msg[512], where[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!cv->json) {
		if (n && n->line > 0)
			return mfs_fail(cv->err, EINVAL, "%s:%d: %s", cv->source,
					n->line, msg);
		return mfs_fail(cv->err, EINVAL, "%s: %s", cv->source, msg);
	}
	node_path(n, where, sizeof(where));
	if (where[0])
		return mfs_fail(cv->err, EINVAL, "%s: %s: %s", cv->source, where, msg);
	return mfs_fail(cv->err, EINVAL, "%s: %s", cv->source, msg);
}

static int no_memory(conv *cv)
{
	return mfs_fail(cv->err, ENOMEM, "%s: out of memory", cv->source);
}

/* Name of the message a node is a field of, for messages. */
static const char *owner_name(const cfg_node *n)
{
	return n->parent && n->parent->parent ? n->parent->name : "the model config";
}

static const char *kind_word(cfg_kind k)
{
	switch (k) {
	case CFG_IDENT: return "a name";
	case CFG_NUMBER: return "a number";
	case CFG_STRING: return "a string";
	case CFG_MESSAGE: return "a message";
	}
	return "?";
}

/* ---- scalars ---- */

static int want_scalar(conv *cv, const cfg_node *n, const char *what)
{
	if (n->kind == CFG_MESSAGE)
		return fail_at(cv, n, "field '%s' in %s must be %s, not a message",
			       n->name, owner_name(n), what);
	return 0;
}

static int get_i64(conv *cv, const cfg_node *n, int64_t lo, int64_t hi,
		   int64_t *out)
{
	char *end;
	long long v;

	if (want_scalar(cv, n, "an integer"))
		return -EINVAL;
	/* proto3 JSON writes 64-bit integers as strings ("dims": ["16"]). */
	if (n->kind != CFG_NUMBER && !(cv->json && n->kind == CFG_STRING))
		return fail_at(cv, n, "field '%s' in %s must be an integer, not %s",
			       n->name, owner_name(n), kind_word(n->kind));
	errno = 0;
	/* Base 0 as protobuf's text format: 0x1f hex, 017 octal. */
	v = strtoll(n->text, &end, cv->json ? 10 : 0);
	if (end == n->text || *end != '\0' || errno == ERANGE)
		return fail_at(cv, n, "field '%s' in %s must be an integer, not '%.40s'",
			       n->name, owner_name(n), n->text);
	if (v < lo || v > hi)
		return fail_at(cv, n, "field '%s' in %s: %lld is out of range [%lld, %lld]",
			       n->name, owner_name(n), v, (long long)lo, (long long)hi);
	*out = v;
	return 0;
}

static int get_int(conv *cv, const cfg_node *n, int lo, int hi, int *out)
{
	int64_t v;
	int rc = get_i64(cv, n, lo, hi, &v);

	if (rc == 0)
		*out = (int)v;
	return rc;
}

static int get_bool(conv *cv, const cfg_node *n, bool *out)
{
	static const char *const yes[] = { "true", "True", "t", "1" };
	static const char *const no[] = { "false", "False", "f", "0" };

	if (want_scalar(cv, n, "true or false"))
		return -EINVAL;
	if (n->kind == CFG_IDENT || (!cv->json && n->kind == CFG_NUMBER)) {
		for (size_t i = 0; i < 4; i++) {
			if (strcmp(n->text, yes[i]) == 0) {
				*out = true;
				return 0;
			}
			if (strcmp(n->text, no[i]) == 0) {
				*out = false;
				return 0;
			}
		}
	}
	return fail_at(cv, n, "field '%s' in %s must be true or false, not '%.40s'",
		       n->name, owner_name(n), n->text);
}

/* Well-formed UTF-8 (protobuf's string fields, and what JSON can show). */
static bool utf8_valid(const unsigned char *s)
{
	while (*s) {
		unsigned char c = *s++;
		int more;
		uint32_t cp;

		if (c < 0x80)
			continue;
		if (c >= 0xC2 && c <= 0xDF) {
			more = 1;
			cp = c & 0x1F;
		} else if (c >= 0xE0 && c <= 0xEF) {
			more = 2;
			cp = c & 0x0F;
		} else if (c >= 0xF0 && c <= 0xF4) {
			more = 3;
			cp = c & 0x07;
		} else {
			return false;
		}
		for (int i = 0; i < more; i++, s++) {
			if ((*s & 0xC0) != 0x80)
				return false;
			cp = (cp << 6) | (*s & 0x3F);
		}
		if ((more == 2 && cp < 0x800) || (more == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
		    (cp >= 0xD800 && cp <= 0xDFFF))
			return false;
	}
	return true;
}

/* A new copy of a string field's value; "" (protobuf's unset) gives NULL. */
static int get_string(conv *cv, const cfg_node *n, char **out)
{
	if (want_scalar(cv, n, "a string"))
		return -EINVAL;
	if (n->kind != CFG_STRING)
		return fail_at(cv, n, "field '%s' in %s must be a quoted string, not %s",
			       n->name, owner_name(n), kind_word(n->kind));
	if (!utf8_valid((const unsigned char *)n->text))
		return fail_at(cv, n, "field '%s' in %s is not valid UTF-8",
			       n->name, owner_name(n));
	free(*out);
	*out = NULL;
	if (!n->text[0])
		return 0;
	*out = strdup(n->text);
	return *out ? 0 : no_memory(cv);
}

typedef struct enum_def {
	const char *name;
	int number;     /* the value in Triton's model_config.proto */
} enum_def;

/* Enum by name (pbtxt identifier, JSON string) or by number. */
static int get_enum(conv *cv, const cfg_node *n, const enum_def *defs,
		    size_t n_defs, int *out)
{
	if (want_scalar(cv, n, "an enum value"))
		return -EINVAL;
	if (n->kind == CFG_IDENT || (cv->json && n->kind == CFG_STRING)) {
		for (size_t i = 0; i < n_defs; i++)
			if (strcmp(n->text, defs[i].name) == 0) {
				*out = defs[i].number;
				return 0;
			}
	} else if (n->kind == CFG_NUMBER) {
		char *end;
		long v = strtol(n->text, &end, 10);
		for (size_t i = 0; *end == '\0' && i < n_defs; i++)
			if (v == defs[i].number) {
				*out = defs[i].number;
				return 0;
			}
	}
	return fail_at(cv, n, "field '%s' in %s: unknown value '%.40s'",
		       n->name, owner_name(n), n->text ? n->text : "{...}");
}

/* protobuf's zero value ("not set"), recursively for messages.  JSON
 * writes enums as strings. */
static bool is_zero(const cfg_node *n, bool json)
{
	static const char *const zero_names[] = {
		"false", "False", "f", "FORMAT_NONE", "TYPE_INVALID",
		"PRIORITY_DEFAULT", "REJECT", "KIND_AUTO",
	};
	char *end;

	switch (n->kind) {
	case CFG_MESSAGE:
		for (int i = 0; i < n->n_children; i++)
			if (!is_zero(&n->children[i], json))
				return false;
		return true;
	case CFG_STRING:
		if (n->text[0] == '\0')
			return true;
		if (!json)
			return false;
		__attribute__((fallthrough));   /* an enum's name */
	case CFG_IDENT:
		for (size_t i = 0; i < sizeof(zero_names) / sizeof(zero_names[0]); i++)
			if (strcmp(n->text, zero_names[i]) == 0)
				return true;
		return false;
	case CFG_NUMBER:
		return strtod(n->text, &end) == 0 && *end == '\0';
	}
	return false;
}

/* ---- messages ---- */

typedef int (*field_fn)(conv *cv, const cfg_node *n, void *obj);

typedef struct field_def {
	const char *name;
	bool repeated;
	field_fn fn;
} field_def;

#define MAX_FIELDS 16

/* Dispatch every field of msg to its handler; see the comment at the top
 * for `triton_only`. */
static int conv_message(conv *cv, const cfg_node *msg, const char *what,
			const field_def *defs, size_t n_defs,
			const char *const *triton_only, void *obj)
{
	bool seen[MAX_FIELDS] = { false };
	int rc;

	if (msg->kind != CFG_MESSAGE)
		return fail_at(cv, msg, "field '%s' must be a message, not %s",
			       msg->name, kind_word(msg->kind));
	for (int i = 0; i < msg->n_children; i++) {
		const cfg_node *f = &msg->children[i];
		size_t d;

		for (d = 0; d < n_defs; d++)
			if (strcmp(f->name, defs[d].name) == 0)
				break;
		if (d == n_defs) {
			bool known = false;
			for (size_t t = 0; triton_only && triton_only[t]; t++)
				if (strcmp(f->name, triton_only[t]) == 0)
					known = true;
			if (!known)
				return fail_at(cv, f, "unknown field '%s' in %s",
					       f->name, what);
			if (!is_zero(f, cv->json))
				return fail_at(cv, f,
					       "field '%s' in %s is a Triton feature modelfs does not support",
					       f->name, what);
			continue;
		}
		if (!defs[d].repeated) {
			if (seen[d])
				return fail_at(cv, f, "field '%s' given twice in %s",
					       f->name, what);
			if (f->index >= 0)
				return fail_at(cv, f, "field '%s' in %s takes one value, not a list",
					       f->name, what);
			seen[d] = true;
		}
		rc = defs[d].fn(cv, f, obj);
		if (rc)
			return rc;
	}
	return 0;
}

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- input / output ---- */

/* Triton's DataType numbers (model_config.proto). */
static const enum_def data_types[] = {
	{ "TYPE_INVALID", 0 }, { "TYPE_BOOL", 1 }, { "TYPE_UINT8", 2 },
	{ "TYPE_UINT16", 3 }, { "TYPE_UINT32", 4 }, { "TYPE_UINT64", 5 },
	{ "TYPE_INT8", 6 }, { "TYPE_INT16", 7 }, { "TYPE_INT32", 8 },
	{ "TYPE_INT64", 9 }, { "TYPE_FP16", 10 }, { "TYPE_FP32", 11 },
	{ "TYPE_FP64", 12 }, { "TYPE_STRING", 13 }, { "TYPE_BF16", 14 },
};

static int io_name(conv *cv, const cfg_node *n, void *obj)
{
	return get_string(cv, n, &((mfs_io_config *)obj)->name);
}

static int io_data_type(conv *cv, const cfg_node *n, void *obj)
{
	mfs_io_config *io = obj;
	int v = 0;

	if (get_enum(cv, n, data_types, N_OF(data_types), &v))
		return -EINVAL;
	for (size_t i = 0; i < N_OF(data_types); i++)
		if (data_types[i].number == v) {
			if (v == 0) {
				io->dtype = MFS_DT_UNDEFINED;
				return 0;
			}
			if (v == 13)
				return fail_at(cv, n, "data_type TYPE_STRING is not supported");
			io->dtype = mfs_dtype_from_config(data_types[i].name);
			if (io->dtype == MFS_DT_UNDEFINED)
				return fail_at(cv, n, "data_type %s is not supported",
					       data_types[i].name);
		}
	return 0;
}

static int io_dims(conv *cv, const cfg_node *n, void *obj)
{
	mfs_io_config *io = obj;
	int64_t v;

	if (get_i64(cv, n, -1, INT64_MAX, &v))
		return -EINVAL;
	if (v == 0)
		return fail_at(cv, n, "dims of %s '%s': a dim is -1 (variable) or at least 1",
			       n->parent->name, io->name ? io->name : "?");
	if (io->rank < 0)
		io->rank = 0;
	if (io->rank == MFS_MAX_RANK)
		return fail_at(cv, n, "dims: more than %d dims", MFS_MAX_RANK);
	io->dims[io->rank++] = v;
	return 0;
}

static int reshape_shape(conv *cv, const cfg_node *n, void *obj)
{
	mfs_io_config *io = obj;
	int64_t v;

	if (get_i64(cv, n, -1, INT64_MAX, &v))
		return -EINVAL;
	if (v == 0)
		return fail_at(cv, n, "reshape: a dim is -1 or at least 1");
	if (io->reshape_rank == MFS_MAX_RANK)
		return fail_at(cv, n, "reshape: more than %d dims", MFS_MAX_RANK);
	io->reshape[io->reshape_rank++] = v;
	return 0;
}

static int io_reshape(conv *cv, const cfg_node *n, void *obj)
{
	static const field_def defs[] = { { "shape", true, reshape_shape } };
	mfs_io_config *io = obj;

	io->has_reshape = true;
	io->reshape_rank = 0;
	return conv_message(cv, n, "reshape", defs, N_OF(defs), NULL, obj);
}

static int io_optional(conv *cv, const cfg_node *n, void *obj)
{
	return get_bool(cv, n, &((mfs_io_config *)obj)->optional);
}

static int io_label_filename(conv *cv, const cfg_node *n, void *obj)
{
	mfs_io_config *io = obj;

	if (get_string(cv, n, &io->label_filename))
		return -EINVAL;
	if (io->label_filename && !io->label_filename[0]) {
		free(io->label_filename);   /* "": Triton's unset */
		io->label_filename = NULL;
	}
	if (io->label_filename && (strchr(io->label_filename, '/') ||
				   strcmp(io->label_filename, "..") == 0 ||
				   strcmp(io->label_filename, ".") == 0))
		return fail_at(cv, n, "label_filename '%s' must be a file name in the model directory (no '/')",
			       io->label_filename);
	return 0;
}

static int append_io(conv *cv, const cfg_node *n, mfs_io_config **arr, int *count,
		     bool is_input)
{
	static const field_def in_defs[] = {
		{ "name", false, io_name }, { "data_type", false, io_data_type },
		{ "dims", true, io_dims }, { "reshape", false, io_reshape },
		{ "optional", false, io_optional },
	};
	static const field_def out_defs[] = {
		{ "name", false, io_name }, { "data_type", false, io_data_type },
		{ "dims", true, io_dims }, { "reshape", false, io_reshape },
		{ "label_filename", false, io_label_filename },
	};
	static const char *const in_triton[] = {
		"format", "is_shape_tensor", "allow_ragged_batch",
		"is_non_linear_format_io", NULL,
	};
	static const char *const out_triton[] = {
		"is_shape_tensor", "is_non_linear_format_io", NULL,
	};
	const char *what = is_input ? "input" : "output";
	mfs_io_config *io, *grown;
	int rc;

	if (*count >= 4096)
		return fail_at(cv, n, "too many %ss", what);
	grown = realloc(*arr, (size_t)(*count + 1) * sizeof(**arr));
	if (!grown)
		return no_memory(cv);
	*arr = grown;
	io = &grown[*count];
	memset(io, 0, sizeof(*io));
	io->rank = -1;
	io->graph_index = -1;
	(*count)++;
	rc = conv_message(cv, n, what, is_input ? in_defs : out_defs,
			  is_input ? N_OF(in_defs) : N_OF(out_defs),
			  is_input ? in_triton : out_triton, io);
	if (rc)
		return rc;
	if (!io->name)
		return fail_at(cv, n, "%s without a name", what);
	for (int i = 0; i < *count - 1; i++)
		if (strcmp(grown[i].name, io->name) == 0)
			return fail_at(cv, n, "%s '%s' given twice", what, io->name);
	return 0;
}

/* ---- the model config's fields ---- */

static int m_name(conv *cv, const cfg_node *n, void *obj)
{
	return get_string(cv, n, &((mfs_model_config *)obj)->name);
}

static int m_platform(conv *cv, const cfg_node *n, void *obj)
{
	mfs_model_config *c = obj;

	if (get_string(cv, n, &c->platform))
		return -EINVAL;
	/* "": Triton prints it for models a backend serves; it means unset. */
	if (c->platform && !c->platform[0]) {
		free(c->platform);
		c->platform = NULL;
	}
	if (c->platform && strcmp(c->platform, "onnxruntime_onnx") != 0 &&
	    strcmp(c->platform, "ensemble") != 0)
		return fail_at(cv, n, "platform '%s' is not supported (modelfs runs ONNX models: onnxruntime_onnx; pipelines: ensemble)",
			       c->platform);
	return 0;
}

static int m_backend(conv *cv, const cfg_node *n, void *obj)
{
	mfs_model_config *c = obj;

	if (get_string(cv, n, &c->backend))
		return -EINVAL;
	/* Any other name is a custom backend, libmodelfs_<name>.so: the name
	 * becomes part of a file name, so no '/' or '.' sneaks in. */
	if (!c->backend)
		return 0;
	if (!c->backend[0] || strspn(c->backend, "abcdefghijklmnopqrstuvwxyz"
				     "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != strlen(c->backend) ||
	    strlen(c->backend) > 64)
		return fail_at(cv, n, "backend '%s' is not a backend name ([A-Za-z0-9_-], 1 to 64 characters)",
			       c->backend);
	return 0;
}

static int m_max_batch_size(conv *cv, const cfg_node *n, void *obj)
{
	return get_int(cv, n, 0, INT32_MAX, &((mfs_model_config *)obj)->max_batch_size);
}

static int m_input(conv *cv, const cfg_node *n, void *obj)
{
	mfs_model_config *c = obj;
	return append_io(cv, n, &c->inputs, &c->n_inputs, true);
}

static int m_output(conv *cv, const cfg_node *n, void *obj)
{
	mfs_model_config *c = obj;
	return append_io(cv, n, &c->outputs, &c->n_outputs, false);
}

/* version_policy { latest { num_versions } | all {} | specific { versions } } */

static int vp_num_versions(conv *cv, const cfg_node *n, void *obj)
{
	return get_int(cv, n, 1, INT32_MAX,
		       &((mfs_model_config *)obj)->version_policy.num_versions);
}

static int vp_version(conv *cv, const cfg_node *n, void *obj)
{
	mfs_model_config *c = obj;
	int64_t v, *grown;

	if (get_i64(cv, n, 1, INT64_MAX, &v))
		return -EINVAL;
	if (c->version_policy.n_versions >= 65536)
		return fail_at(cv, n, "too many versions");
	grown = realloc(c->version_policy.versions,
			(size_t)(c->version_policy.n_versions + 1) * sizeof(*grown));
	if (!grown)
		return no_memory(cv);
	c->version_policy.versions = grown;
	grown[c->version_policy.n_versions++] = v;
	return 0;
}

static int vp_choice(conv *cv, const cfg_node *n, mfs_model_config *c,
		     mfs_version_policy_kind kind)
{
	static const field_def latest[] = { { "num_versions", false, vp_num_versions } };
	static const field_def specific[] = { { "versions", true, vp_version } };

	if (n->parent->n_children > 1)
		return fail_at(cv, n, "version_policy takes one of latest, all or specific");
	c->version_policy.kind = kind;
	c->version_policy.num_versions = 1;
	switch (kind) {
	case MFS_POLICY_LATEST:
		return conv_message(cv, n, "latest", latest, 1, NULL, c);
	case MFS_POLICY_SPECIFIC:
		return conv_message(cv, n, "specific", specific, 1, NULL, c);
	case MFS_POLICY_ALL:
		break;
	}
	return conv_message(cv, n, "all", NULL, 0, NULL, c);
}

static int vp_latest(conv *cv, const cfg_node *n, void *obj)
{
	return vp_choice(cv, n, obj, MFS_POLICY_LATEST);
}

static int vp_all(conv *cv, const cfg_node *n, void *obj)
{
	return vp_choice(cv, n, obj, MFS_POLICY_ALL);
}

static int vp_specific(conv *cv, const cfg_node *n, void *obj)
{
	return vp_choice(cv, n, obj, MFS_POLICY_SPECIFIC);
}

static int m_version_policy(conv *cv, const cfg_node *n, void *obj)
{
	static const field_def defs[] = {
		{ "latest", false, vp_latest }, { "all", false, vp_all },
		{ "specific", false, vp_specific },
	};
	return conv_message(cv, n, "version_policy", defs, N_OF(defs), NULL, obj);
}

/* instance_group { name count kind } */

static const enum_def instance_kinds[] = {
	{ "KIND_AUTO", 0 }, { "KIND_GPU", 1 }, { "KIND_CPU", 2 }, { "KIND_MODEL", 3 },
};

static int ig_count(conv *cv, const cfg_node *n, void *obj)
{
	mfs_instance_group *g = obj;

	if (get_int(cv, n, 0, 1024, &g->count))
		return -EINVAL;
	if (g->count == 0)      /* protobuf's unset: Triton's default */
		g->count = 1;
	return 0;
}

static int ig_kind(conv *cv, const cfg_node *n, void *obj)
{
	mfs_instance_group *g = obj;
	int v = 0;

	if (get_enum(cv, n, instance_kinds, N_OF(instance_kinds), &v))
		return -EINVAL;
	switch (v) {
	case 0: g->kind = MFS_KIND_AUTO; return 0;
	case 1: g->kind = MFS_KIND_GPU; return 0;
	case 2: g->kind = MFS_KIND_CPU; return 0;
	}
	return fail_at(cv, n, "instance_group kind KIND_MODEL is not supported (KIND_CPU, KIND_GPU or KIND_AUTO)");
}

/* Triton names groups only to label them in its logs; accepted, checked
 * to be a string, not kept. */
static int ig_name(conv *cv, const cfg_node *n, void *obj)
{
	char *s = NULL;
	int rc = get_string(cv, n, &s);

	(void)obj;
	free(s);
	return rc;
}

static int m_instance_group(conv *cv, const cfg_node *n, void *obj)
{
	static const field_def defs[] = {
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
		return fail_at(cv, n, "too many instance groups");
	grown = realloc(c->instance_groups,
			(size_t)(c->n_instance_groups + 1) * sizeof(*grown));
	if (!grown)
		return no_memory(cv);
	c->instance_groups = grown;
	grown[c->n_instance_groups].count = 1;
	grown[c->n_instance_groups].kind = MFS_KIND_AUTO;
	c->n_instance_groups++;
	return conv_message(cv, n, "instance_group", defs, N_OF(defs), triton,
			    &grown[c->n_instance_groups - 1]);
}

/* dynamic_batching { max_queue_delay_microseconds preferred_batch_size
 *   max_queue_size default_queue_policy { ... } priority_levels
 *   default_priority_level priority_queue_policy { key value { ... } } }
 * where a queue policy is Triton's ModelQueuePolicy: timeout_action,
 * default_timeout_microseconds, allow_timeout_override, max_queue_size. */

static int db_delay(conv *cv, const cfg_node *n, void *obj)
{
	mfs_model_config *c = obj;
	/* An hour: a longer wait is a typo, and keeps arithmetic in ns safe. */
	return get_i64(cv, n, 0, 3600000000LL, &c->dynamic_batching.max_queue_delay_us);
}

static int db_preferred(conv *cv, const cfg_node *n, void *obj)
{
	mfs_model_config *c = obj;
	int v, *grown;

	if (get_int(cv, n, 1, INT32_MAX, &v))
		return -EINVAL;
	if (c->dynamic_batching.n_preferred_batch_size >= 1024)
		return fail_at(cv, n, "too many preferred batch sizes");
	grown = realloc(c->dynamic_batching.preferred_batch_size,
			(size_t)(c->dynamic_batching.n_preferred_batch_size + 1) * sizeof(*grown));
	if (!grown)
		return no_memory(cv);
	c->dynamic_batching.preferred_batch_size = grown;
	grown[c->dynamic_batching.n_preferred_batch_size++] = v;
	return 0;
}

static int qp_max_queue_size(conv *cv, const cfg_node *n, void *obj)
{
	return get_i64(cv, n, 0, INT64_MAX, &((mfs_queue_policy *)obj)->max_queue_size);
}

static int qp_timeout_action(conv *cv, const cfg_node *n, void *obj)
{
	static const enum_def actions[] = { { "REJECT", 0 }, { "DELAY", 1 } };
	int v = 0;

	if (get_enum(cv, n, actions, N_OF(actions), &v))
		return -EINVAL;
	((mfs_queue_policy *)obj)->timeout_delay = v == 1;
	return 0;
}

static int qp_default_timeout(conv *cv, const cfg_node *n, void *obj)
{
	/* About 11 days: keeps the deadline's arithmetic in ns safe. */
	return get_i64(cv, n, 0, MFS_MAX_QUEUE_TIMEOUT_US,
		       &((mfs_queue_policy *)obj)->default_timeout_us);
}

static int qp_allow_override(conv *cv, const cfg_node *n, void *obj)
{
	return get_bool(cv, n, &((mfs_queue_policy *)obj)->allow_timeout_override);
}

static int queue_policy(conv *cv, const cfg_node *n, const char *what, mfs_queue_policy *p)
{
	static const field_def defs[] = {
		{ "timeout_action", false, qp_timeout_action },
		{ "default_timeout_microseconds", false, qp_default_timeout },
		{ "allow_timeout_override", false, qp_allow_override },
		{ "max_queue_size", false, qp_max_queue_size },
	};
	return conv_message(cv, n, what, defs, N_OF(defs), NULL, p);
}

static int db_queue_size(conv *cv, const cfg_node *n, void *obj)
{
	mfs_model_config *c = obj;
	return qp_max_queue_size(cv, n, &c->dynamic_batching.default_queue_policy);
}

static int db_queue_policy(conv *cv, const cfg_node *n, void *obj)
{
	mfs_model_config *c = obj;
	return queue_policy(cv, n, "default_queue_policy", &c->dynamic_batching.default_queue_policy);
}

static int db_priority_levels(conv *cv, const cfg_node *n, void *obj)
{
	mfs_model_config *c = obj;
	return get_int(cv, n, 0, MFS_MAX_PRIORITY_LEVELS, &c->dynamic_batching.priority_levels);
}

static int db_default_priority(conv *cv, const cfg_node *n, void *obj)
{
	mfs_model_config *c = obj;
	return get_int(cv, n, 0, MFS_MAX_PRIORITY_LEVELS, &c->dynamic_batching.default_priority_level);
}

static int lp_key(conv *cv, const cfg_node *n, void *obj)
{
	return get_i64(cv, n, 1, MFS_MAX_PRIORITY_LEVELS, &((mfs_level_policy *)obj)->level);
}

static int lp_value(conv *cv, const cfg_node *n, void *obj)
{
	return queue_policy(cv, n, "priority_queue_policy value", &((mfs_level_policy *)obj)->policy);
}

static int db_priority_policy(conv *cv, const cfg_node *n, void *obj)
{
	static const field_def defs[] = {
		{ "key", false, lp_key }, { "value", false, lp_value },
	};
	mfs_model_config *c = obj;
	mfs_level_policy *grown, *p;
	int rc;

	if (c->dynamic_batching.n_level_policies >= MFS_MAX_PRIORITY_LEVELS)
		return fail_at(cv, n, "too many priority_queue_policy entries");
	grown = realloc(c->dynamic_batching.level_policies,
			(size_t)(c->dynamic_batching.n_level_policies + 1) * sizeof(*grown));
	if (!grown)
		return no_memory(cv);
	c->dynamic_batching.level_policies = grown;
	p = &grown[c->dynamic_batching.n_level_policies++];
	memset(p, 0, sizeof(*p));
	rc = conv_message(cv, n, "priority_queue_policy", defs, N_OF(defs), NULL, p);
	if (rc)
		return rc;
	if (!p->level)
		return fail_at(cv, n, "priority_queue_policy entry without a key (its priority level)");
	for (int i = 0; i < c->dynamic_batching.n_level_policies - 1; i++)
		if (grown[i].level == p->level)
			return fail_at(cv, n, "priority_queue_policy for level %lld given twice",
				       (long long)p->level);
	return 0;
}

static int m_dynamic_batching(conv *cv, const cfg_node *n, void *obj)
{
	static const field_def defs[] = {
		{ "max_queue_delay_microseconds", false, db_delay },
		{ "preferred_batch_size", true, db_preferred },
		{ "max_queue_size", false, db_queue_size },
		{ "default_queue_policy", false, db_queue_policy },
		{ "priority_levels", false, db_priority_levels },
		{ "default_priority_level", false, db_default_priority },
		{ "priority_queue_policy", true, db_priority_policy },
	};
	static const char *const triton[] = { "preserve_ordering", NULL };
	mfs_model_config *c = obj;

	c->has_dynamic_batching = true;
	return conv_message(cv, n, "dynamic_batching", defs, N_OF(defs), triton, obj);
}

/* Triton's rules between the priority fields. */
static int check_priorities(conv *cv, const cfg_node *root, const mfs_model_config *c)
{
	int levels = c->dynamic_batching.priority_levels;
	int def = c->dynamic_batching.default_priority_level;

	if (levels == 0 && def != 0)
		return fail_at(cv, root, "dynamic_batching: default_priority_level %d needs priority_levels", def);
	if (levels > 0 && (def < 1 || def > levels))
		return fail_at(cv, root, "dynamic_batching: default_priority_level must be 1..%d "
			       "(priority_levels), not %d", levels, def);
	for (int i = 0; i < c->dynamic_batching.n_level_policies; i++)
		if (c->dynamic_batching.level_policies[i].level > levels)
			return fail_at(cv, root, "dynamic_batching: priority_queue_policy for level %lld, "
				       "but priority_levels is %d",
				       (long long)c->dynamic_batching.level_policies[i].level, levels);
	return 0;
}

static int m_default_model_filename(conv *cv, const cfg_node *n, void *obj)
{
	mfs_model_config *c = obj;

	if (get_string(cv, n, &c->default_model_filename))
		return -EINVAL;
	/* The file lives in the version directory: a plain name only. */
	if (c->default_model_filename &&
	    (strchr(c->default_model_filename, '/') ||
	     strcmp(c->default_model_filename, ".") == 0 ||
	     strcmp(c->default_model_filename, "..") == 0))
		return fail_at(cv, n, "default_model_filename '%s' must be a file name, not a path",
			       c->default_model_filename);
	return 0;
}

/* parameters { key: "k" value { string_value: "v" } } */

static int par_key(conv *cv, const cfg_node *n, void *obj)
{
	return get_string(cv, n, &((mfs_parameter *)obj)->key);
}

static int par_string_value(conv *cv, const cfg_node *n, void *obj)
{
	return get_string(cv, n, &((mfs_parameter *)obj)->value);
}

static int par_value(conv *cv, const cfg_node *n, void *obj)
{
	static const field_def defs[] = { { "string_value", false, par_string_value } };
	return conv_message(cv, n, "parameter value", defs, 1, NULL, obj);
}

static int m_parameters(conv *cv, const cfg_node *n, void *obj)
{
	static const field_def defs[] = {
		{ "key", false, par_key }, { "value", false, par_value },
	};
	mfs_model_config *c = obj;
	mfs_parameter *grown, *p;
	int rc;

	if (c->n_parameters >= 4096)
		return fail_at(cv, n, "too many parameters");
	grown = realloc(c->parameters, (size_t)(c->n_parameters + 1) * sizeof(*grown));
	if (!grown)
		return no_memory(cv);
	c->parameters = grown;
	p = &grown[c->n_parameters++];
	p->key = p->value = NULL;
	rc = conv_message(cv, n, "parameters", defs, N_OF(defs), NULL, p);
	if (rc)
		return rc;
	if (!p->key)
		return fail_at(cv, n, "parameter without a key");
	if (!p->value) {
		p->value = strdup("");
		if (!p->value)
			return no_memory(cv);
	}
	for (int i = 0; i < c->n_parameters - 1; i++)
		if (strcmp(grown[i].key, p->key) == 0)
			return fail_at(cv, n, "parameter '%s' given twice", p->key);
	return 0;
}

/* ensemble_scheduling { step [ { model_name model_version input_map
 * output_map } ] }; maps as protobuf writes them: entries { key value }. */

static int map_key(conv *cv, const cfg_node *n, void *obj)
{
	return get_string(cv, n, &((mfs_tensor_map *)obj)->key);
}

static int map_value(conv *cv, const cfg_node *n, void *obj)
{
	return get_string(cv, n, &((mfs_tensor_map *)obj)->value);
}

static int append_map_entry(conv *cv, const cfg_node *n, mfs_tensor_map **arr,
			    int *count)
{
	static const field_def defs[] = {
		{ "key", false, map_key }, { "value", false, map_value },
	};
	mfs_tensor_map *grown, *e;
	int rc;

	if (*count >= 4096)
		return fail_at(cv, n, "too many entries in %s", n->name);
	grown = realloc(*arr, (size_t)(*count + 1) * sizeof(*grown));
	if (!grown)
		return no_memory(cv);
	*arr = grown;
	e = &grown[(*count)++];
	e->key = e->value = NULL;
	rc = conv_message(cv, n, n->name, defs, N_OF(defs), NULL, e);
	if (rc)
		return rc;
	if (!e->key || !*e->key || !e->value || !*e->value)
		return fail_at(cv, n, "%s entry needs a non-empty key and value", n->name);
	for (int i = 0; i < *count - 1; i++)
		if (strcmp(grown[i].key, e->key) == 0)
			return fail_at(cv, n, "%s: key '%s' given twice", n->name, e->key);
	return 0;
}

static int step_model_name(conv *cv, const cfg_node *n, void *obj)
{
	return get_string(cv, n, &((mfs_ensemble_step *)obj)->model_name);
}

static int step_model_version(conv *cv, const cfg_node *n, void *obj)
{
	return get_i64(cv, n, -1, INT64_MAX, &((mfs_ensemble_step *)obj)->model_version);
}

static int step_input_map(conv *cv, const cfg_node *n, void *obj)
{
	mfs_ensemble_step *st = obj;
	return append_map_entry(cv, n, &st->input_map, &st->n_input_map);
}

static int step_output_map(conv *cv, const cfg_node *n, void *obj)
{
	mfs_ensemble_step *st = obj;
	return append_map_entry(cv, n, &st->output_map, &st->n_output_map);
}

static int es_step(conv *cv, const cfg_node *n, void *obj)
{
	static const field_def defs[] = {
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
		return fail_at(cv, n, "too many ensemble steps");
	grown = realloc(c->steps, (size_t)(c->n_steps + 1) * sizeof(*grown));
	if (!grown)
		return no_memory(cv);
	c->steps = grown;
	st = &grown[c->n_steps++];
	memset(st, 0, sizeof(*st));
	st->model_version = -1;
	rc = conv_message(cv, n, "step", defs, N_OF(defs), triton, st);
	if (rc)
		return rc;
	if (!st->model_name || !*st->model_name)
		return fail_at(cv, n, "ensemble step %d has no model_name", c->n_steps - 1);
	if (st->model_version == 0)
		return fail_at(cv, n, "ensemble step %d: model_version must be -1 (the current version) or >= 1",
			       c->n_steps - 1);
	return 0;
}

static int m_ensemble_scheduling(conv *cv, const cfg_node *n, void *obj)
{
	static const field_def defs[] = { { "step", true, es_step } };
	((mfs_model_config *)obj)->has_ensemble_scheduling = true;
	return conv_message(cv, n, "ensemble_scheduling", defs, N_OF(defs), NULL, obj);
}

/* model_warmup [ { name batch_size count inputs { key: "IN" value {
 *     data_type dims zero_data | random_data | input_data_file } } } ] */

static int wi_data_type(conv *cv, const cfg_node *n, void *obj)
{
	mfs_io_config io = { .rank = -1 };
	int rc = io_data_type(cv, n, &io);
	((mfs_warmup_input *)obj)->dtype = io.dtype;
	return rc;
}

static int wi_dims(conv *cv, const cfg_node *n, void *obj)
{
	mfs_warmup_input *wi = obj;
	int64_t v;

	/* A sample is one concrete tensor: no variable dims. */
	if (get_i64(cv, n, 1, INT64_MAX, &v))
		return -EINVAL;
	if (wi->rank == MFS_MAX_RANK)
		return fail_at(cv, n, "dims: more than %d dims", MFS_MAX_RANK);
	wi->dims[wi->rank++] = v;
	return 0;
}

static int wi_zero(conv *cv, const cfg_node *n, void *obj)
{
	bool on = false;
	(void)obj;   /* MFS_WARMUP_ZERO is the zero value: nothing to set */
	return get_bool(cv, n, &on);
}

static int wi_random(conv *cv, const cfg_node *n, void *obj)
{
	bool on = false;
	if (get_bool(cv, n, &on))
		return -EINVAL;
	if (on)
		((mfs_warmup_input *)obj)->data = MFS_WARMUP_RANDOM;
	return 0;
}

static int wi_file(conv *cv, const cfg_node *n, void *obj)
{
	mfs_warmup_input *wi = obj;
	char *f = NULL;

	if (get_string(cv, n, &f))
		return -EINVAL;
	if (!f)
		return 0;
	if (strchr(f, '/') || strcmp(f, ".") == 0 || strcmp(f, "..") == 0) {
		int rc = fail_at(cv, n, "input_data_file '%s' must be a file name in the version's warmup/ folder, not a path", f);
		free(f);
		return rc;
	}
	free(wi->file);
	wi->file = f;
	wi->data = MFS_WARMUP_FILE;
	return 0;
}

static int wi_value(conv *cv, const cfg_node *n, void *obj)
{
	static const field_def defs[] = {
		{ "data_type", false, wi_data_type }, { "dims", true, wi_dims },
		{ "zero_data", false, wi_zero }, { "random_data", false, wi_random },
		{ "input_data_file", false, wi_file },
	};
	mfs_warmup_input *wi = obj;
	const char *name = wi->name ? wi->name : "?";
	/* Triton's oneof: exactly one of the three says where the data is. */
	int given = 0;
	for (int i = 0; n->kind == CFG_MESSAGE && i < n->n_children; i++) {
		const cfg_node *f = &n->children[i];
		if ((strcmp(f->name, "zero_data") == 0 || strcmp(f->name, "random_data") == 0 ||
		     strcmp(f->name, "input_data_file") == 0) && !is_zero(f, cv->json))
			given++;
	}
	int rc = conv_message(cv, n, "warm-up input", defs, N_OF(defs), NULL, obj);
	if (rc)
		return rc;
	if (given != 1)
		return fail_at(cv, n, "warm-up input '%s': give one of zero_data: true, random_data: true or input_data_file", name);
	if (wi->dtype == MFS_DT_UNDEFINED)
		return fail_at(cv, n, "warm-up input '%s': data_type is required", name);
	return 0;
}

static int wi_key(conv *cv, const cfg_node *n, void *obj)
{
	return get_string(cv, n, &((mfs_warmup_input *)obj)->name);
}

static int mw_inputs(conv *cv, const cfg_node *n, void *obj)
{
	static const field_def defs[] = {
		{ "key", false, wi_key }, { "value", false, wi_value },
	};
	mfs_warmup *w = obj;
	mfs_warmup_input *grown, *wi;

	if (w->n_inputs >= 1024)
		return fail_at(cv, n, "too many warm-up inputs");
	grown = realloc(w->inputs, (size_t)(w->n_inputs + 1) * sizeof(*grown));
	if (!grown)
		return no_memory(cv);
	w->inputs = grown;
	wi = &grown[w->n_inputs++];
	memset(wi, 0, sizeof(*wi));
	int rc = conv_message(cv, n, "model_warmup inputs", defs, N_OF(defs), NULL, wi);
	if (rc)
		return rc;
	if (!wi->name)
		return fail_at(cv, n, "warm-up input without a key (the model input's name)");
	for (int i = 0; i < w->n_inputs - 1; i++)
		if (strcmp(grown[i].name, wi->name) == 0)
			return fail_at(cv, n, "warm-up input '%s' given twice", wi->name);
	return 0;
}

static int mw_name(conv *cv, const cfg_node *n, void *obj)
{
	return get_string(cv, n, &((mfs_warmup *)obj)->name);
}

static int mw_batch_size(conv *cv, const cfg_node *n, void *obj)
{
	return get_int(cv, n, 0, INT32_MAX, &((mfs_warmup *)obj)->batch_size);
}

static int mw_count(conv *cv, const cfg_node *n, void *obj)
{
	/* A bound against a typo that would hold a load for hours. */
	return get_int(cv, n, 0, 10000, &((mfs_warmup *)obj)->count);
}

static int m_model_warmup(conv *cv, const cfg_node *n, void *obj)
{
	static const field_def defs[] = {
		{ "name", false, mw_name }, { "batch_size", false, mw_batch_size },
		{ "inputs", true, mw_inputs }, { "count", false, mw_count },
	};
	mfs_model_config *c = obj;
	mfs_warmup *grown, *w;

	if (c->n_warmups >= 256)
		return fail_at(cv, n, "too many warm-up samples");
	grown = realloc(c->warmups, (size_t)(c->n_warmups + 1) * sizeof(*grown));
	if (!grown)
		return no_memory(cv);
	c->warmups = grown;
	w = &grown[c->n_warmups++];
	memset(w, 0, sizeof(*w));
	int rc = conv_message(cv, n, "model_warmup", defs, N_OF(defs), NULL, w);
	if (rc)
		return rc;
	if (!w->name)
		return fail_at(cv, n, "model_warmup without a name (messages name the sample)");
	if (w->n_inputs == 0)
		return fail_at(cv, n, "model_warmup '%s' has no inputs", w->name);
	if (w->batch_size == 0)
		w->batch_size = 1;
	if (w->count == 0)
		w->count = 1;
	for (int i = 0; i < c->n_warmups - 1; i++)
		if (strcmp(grown[i].name, w->name) == 0)
			return fail_at(cv, n, "model_warmup '%s' given twice", w->name);
	return 0;
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
static int check_ensemble(conv *cv, const cfg_node *root, const mfs_model_config *c)
{
	static const char *const own[] = {
		"backend", "dynamic_batching", "instance_group", "default_model_filename",
		"model_warmup",
	};
	bool ensemble = mfs_config_is_ensemble(c);
	if (ensemble && c->n_steps == 0)
		return fail_at(cv, field_or_root(root, "platform"),
			       "platform 'ensemble' needs ensemble_scheduling with at least one step");
	if (!ensemble && c->has_ensemble_scheduling)
		return fail_at(cv, field_or_root(root, "ensemble_scheduling"),
			       "ensemble_scheduling needs platform: \"ensemble\"");
	for (size_t i = 0; ensemble && i < N_OF(own); i++) {
		const cfg_node *n = field_or_root(root, own[i]);
		/* Triton prints "" and [] for them ("not set"); an empty
		 * dynamic_batching {} still turns batching on. */
		bool unset = n != root && is_zero(n, cv->json) && strcmp(own[i], "dynamic_batching") != 0;
		if (n != root && !unset)
			return fail_at(cv, n, "an ensemble has no %s of its own (each step model has its own)",
				       own[i]);
	}
	return 0;
}

/* Rules between fields, once all are read. */
static int check_whole(conv *cv, const cfg_node *root, mfs_model_config *c)
{
	int rc = check_ensemble(cv, root, c);
	if (rc)
		return rc;
	/* Triton's rule: a sample's batch fits the model's batching. */
	for (int i = 0; i < c->n_warmups; i++)
		if (c->warmups[i].batch_size > (c->max_batch_size > 0 ? c->max_batch_size : 1))
			return fail_at(cv, root, "model_warmup '%s': batch_size %d exceeds %s %d",
				       c->warmups[i].name, c->warmups[i].batch_size,
				       c->max_batch_size > 0 ? "max_batch_size" : "1 (max_batch_size is 0:",
				       c->max_batch_size > 0 ? c->max_batch_size : 1);
	if (!c->has_dynamic_batching)
		return 0;
	if (c->max_batch_size == 0)
		return fail_at(cv, root, "dynamic_batching needs max_batch_size > 0");
	for (int i = 0; i < c->dynamic_batching.n_preferred_batch_size; i++)
		if (c->dynamic_batching.preferred_batch_size[i] > c->max_batch_size)
			return fail_at(cv, root,
				       "dynamic_batching: preferred_batch_size %d exceeds max_batch_size %d",
				       c->dynamic_batching.preferred_batch_size[i],
				       c->max_batch_size);
	return check_priorities(cv, root, c);
}

int cfg_tree_to_config(const cfg_node *root, const char *source, bool json,
		       mfs_model_config *out, mfs_error *err)
{
	static const field_def defs[] = {
		{ "name", false, m_name },
		{ "platform", false, m_platform },
		{ "backend", false, m_backend },
		{ "max_batch_size", false, m_max_batch_size },
		{ "input", true, m_input },
		{ "output", true, m_output },
		{ "version_policy", false, m_version_policy },
		{ "instance_group", true, m_instance_group },
		{ "dynamic_batching", false, m_dynamic_batching },
		{ "default_model_filename", false, m_default_model_filename },
		{ "parameters", true, m_parameters },
		{ "ensemble_scheduling", false, m_ensemble_scheduling },
		{ "model_warmup", true, m_model_warmup },
	};
	static const char *const triton[] = {
		"runtime", "batch_input", "batch_output", "optimization",
		"sequence_batching", "cc_model_filenames",
		"metric_tags", "model_operations",
		"model_transaction_policy", "model_repository_agents",
		"response_cache", NULL,
	};
	conv cv = { .source = source, .json = json, .err = err };
	int rc;

	rc = conv_message(&cv, root, "the model config", defs, N_OF(defs), triton, out);
	if (rc == 0)
		rc = check_whole(&cv, root, out);
	return rc;
}

/* config_json.c - config.json (Triton's ModelConfig in protobuf's JSON
 * mapping, as Triton prints it) into the tree of config_tree.h.
 *
 * The mapping: an object is a message, an array is a repeated field (one
 * tree entry per element), strings, numbers and true/false are scalars,
 * null is "not set".  64-bit integers may be numbers or strings ("dims":
 * ["16"] as proto3 JSON writes them, or [16] as Triton prints them); the
 * schema accepts both.  `parameters` is a map in JSON ({"key":
 * {"string_value": "v"}}) and becomes the same key/value entries the text
 * format has.  jansson reports syntax errors with a line; errors in the
 * content name the key path, since jansson keeps no positions for values.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_tree.h"

typedef struct jconv {
	const char *source;
	mfs_error *err;
	int nodes;
} jconv;

static int no_memory(jconv *jc)
{
	return mfs_fail(jc->err, ENOMEM, "%s: out of memory", jc->source);
}

static int object_to_node(jconv *jc, json_t *obj, cfg_node *msg, int depth);

/* The value v of field `name` (element `index` of a list, or -1). */
static int value_to_node(jconv *jc, cfg_node *msg, const char *name,
			 json_t *v, int index, int depth, const char *path)
{
	cfg_node *n;

	if (json_is_null(v))
		return 0;
	if (json_is_array(v)) {
		size_t i;
		json_t *e;
		if (index >= 0)
			return mfs_fail(jc->err, EINVAL, "%s: %s: a list inside a list",
					jc->source, path);
		json_array_foreach(v, i, e) {
			int rc;
			if (i > INT32_MAX)
				break;
			rc = value_to_node(jc, msg, name, e, (int)i, depth, path);
			if (rc)
				return rc;
		}
		return 0;
	}
	if (++jc->nodes > CFG_MAX_NODES)
		return mfs_fail(jc->err, EINVAL, "%s: too many fields", jc->source);
	n = cfg_node_add(msg, name, strlen(name), 0);
	if (!n)
		return no_memory(jc);
	n->index = index;
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		n->kind = CFG_MESSAGE;
		return object_to_node(jc, v, n, depth + 1);
	case JSON_STRING:
		if (strlen(json_string_value(v)) != json_string_length(v))
			return mfs_fail(jc->err, EINVAL, "%s: %s: NUL byte in a string",
					jc->source, path);
		n->kind = CFG_STRING;
		n->text = strdup(json_string_value(v));
		break;
	case JSON_INTEGER:
		n->kind = CFG_NUMBER;
		if (asprintf(&n->text, "%" JSON_INTEGER_FORMAT, json_integer_value(v)) < 0)
			n->text = NULL;
		break;
	case JSON_REAL:
		n->kind = CFG_NUMBER;
		if (asprintf(&n->text, "%.17g", json_real_value(v)) < 0)
			n->text = NULL;
		break;
	case JSON_TRUE:
	case JSON_FALSE:
		n->kind = CFG_IDENT;
		n->text = strdup(json_is_true(v) ? "true" : "false");
		break;
	default:
		return mfs_fail(jc->err, EINVAL, "%s: %s: unexpected value", jc->source, path);
	}
	return n->text ? 0 : no_memory(jc);
}

/* A protobuf map in JSON, {"k": {...}}, -> entries name {key: "k"
 * value {...}} as the text format writes it (parameters,
 * dynamic_batching.priority_queue_policy, model_warmup.inputs, an
 * ensemble step's input_map {"k": "tensor"}). */
static int map_to_nodes(jconv *jc, cfg_node *root, const char *name, json_t *map, int depth)
{
	const char *key;
	json_t *v;

	json_object_foreach(map, key, v) {
		cfg_node *p, *k;
		int rc;

		if (++jc->nodes > CFG_MAX_NODES)
			return mfs_fail(jc->err, EINVAL, "%s: too many fields", jc->source);
		p = cfg_node_add(root, name, strlen(name), 0);
		if (!p)
			return no_memory(jc);
		p->kind = CFG_MESSAGE;
		k = cfg_node_add(p, "key", 3, 0);
		if (!k || !(k->text = strdup(key)))
			return no_memory(jc);
		k->kind = CFG_STRING;
		rc = value_to_node(jc, p, "value", v, -1, depth + 1, name);
		if (rc)
			return rc;
	}
	return 0;
}

/* Is field key of msg (depth levels down) one of ModelConfig's maps? */
static bool is_map(const cfg_node *msg, const char *key, int depth)
{
	if (depth == 0)
		return strcmp(key, "parameters") == 0;
	/* ensemble_scheduling { step [ { input_map output_map } ] } */
	if (strcmp(msg->name, "step") == 0)
		return strcmp(key, "input_map") == 0 || strcmp(key, "output_map") == 0;
	if (depth != 1)
		return false;
	return (strcmp(msg->name, "dynamic_batching") == 0 &&
		strcmp(key, "priority_queue_policy") == 0) ||
	       (strcmp(msg->name, "model_warmup") == 0 &&
		strcmp(key, "inputs") == 0);
}

static int object_to_node(jconv *jc, json_t *obj, cfg_node *msg, int depth)
{
	const char *key;
	json_t *v;

	if (depth >= CFG_MAX_DEPTH)
		return mfs_fail(jc->err, EINVAL, "%s: objects nested more than %d deep",
				jc->source, CFG_MAX_DEPTH);
	json_object_foreach(obj, key, v) {
		int rc;

		/* The map form only where the schema has a map (the list form
		 * goes through value_to_node like any repeated message). */
		if (json_is_object(v) && is_map(msg, key, depth))
			rc = map_to_nodes(jc, msg, key, v, depth);
		else
			rc = value_to_node(jc, msg, key, v, -1, depth, key);
		if (rc)
			return rc;
	}
	return 0;
}

int mfs_config_parse_json(const char *text, size_t len, const char *source,
			  mfs_model_config *out, mfs_error *err)
{
	jconv jc = { .source = source ? source : "config.json", .err = err };
	json_error_t jerr;
	json_t *doc;
	cfg_node root;
	int rc;

	mfs_config_init(out);
	/* Duplicate keys are an error, as repeated singular fields are in pbtxt. */
	doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc)
		return mfs_fail(err, EINVAL, "%s:%d: %s", jc.source, jerr.line, jerr.text);
	if (!json_is_object(doc)) {
		json_decref(doc);
		return mfs_fail(err, EINVAL, "%s: the config must be a JSON object", jc.source);
	}
	memset(&root, 0, sizeof(root));
	root.kind = CFG_MESSAGE;
	root.index = -1;
	rc = object_to_node(&jc, doc, &root, 0);
	json_decref(doc);
	if (rc == 0) {
		cfg_node_link(&root);
		rc = cfg_tree_to_config(&root, jc.source, true, out, err);
	}
	cfg_node_release(&root);
	if (rc)
		mfs_config_release(out);
	return rc;
}

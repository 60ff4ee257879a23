/* config_fields.c - see config_fields.h: how config_schema*.c read a
 * field of the parse tree (config_tree.h): where an error is (a line for
 * pbtxt, a key path for JSON), scalars with their ranges, enums by name or
 * number, protobuf's zero value, and one message's fields dispatched
 * through a table.
 */
#include "config_fields.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int cfg_fail_at(cfg_conv *cv, const cfg_node *n, const char *fmt, ...)
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

int cfg_no_memory(cfg_conv *cv)
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

static int want_scalar(cfg_conv *cv, const cfg_node *n, const char *what)
{
	if (n->kind == CFG_MESSAGE)
		return cfg_fail_at(cv, n, "field '%s' in %s must be %s, not a message",
				   n->name, owner_name(n), what);
	return 0;
}

int cfg_get_i64(cfg_conv *cv, const cfg_node *n, int64_t lo, int64_t hi,
		int64_t *out)
{
	char *end;
	long long v;

	if (want_scalar(cv, n, "an integer"))
		return -EINVAL;
	/* proto3 JSON writes 64-bit integers as strings ("dims": ["16"]). */
	if (n->kind != CFG_NUMBER && !(cv->json && n->kind == CFG_STRING))
		return cfg_fail_at(cv, n, "field '%s' in %s must be an integer, not %s",
				   n->name, owner_name(n), kind_word(n->kind));
	errno = 0;
	/* Base 0 as protobuf's text format: 0x1f hex, 017 octal. */
	v = strtoll(n->text, &end, cv->json ? 10 : 0);
	if (end == n->text || *end != '\0' || errno == ERANGE)
		return cfg_fail_at(cv, n, "field '%s' in %s must be an integer, not '%.40s'",
				   n->name, owner_name(n), n->text);
	if (v < lo || v > hi)
		return cfg_fail_at(cv, n, "field '%s' in %s: %lld is out of range [%lld, %lld]",
				   n->name, owner_name(n), v, (long long)lo, (long long)hi);
	*out = v;
	return 0;
}

int cfg_get_int(cfg_conv *cv, const cfg_node *n, int lo, int hi, int *out)
{
	int64_t v;
	int rc = cfg_get_i64(cv, n, lo, hi, &v);

	if (rc == 0)
		*out = (int)v;
	return rc;
}

int cfg_get_bool(cfg_conv *cv, const cfg_node *n, bool *out)
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
	return cfg_fail_at(cv, n, "field '%s' in %s must be true or false, not '%.40s'",
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
int cfg_get_string(cfg_conv *cv, const cfg_node *n, char **out)
{
	if (want_scalar(cv, n, "a string"))
		return -EINVAL;
	if (n->kind != CFG_STRING)
		return cfg_fail_at(cv, n, "field '%s' in %s must be a quoted string, not %s",
				   n->name, owner_name(n), kind_word(n->kind));
	if (!utf8_valid((const unsigned char *)n->text))
		return cfg_fail_at(cv, n, "field '%s' in %s is not valid UTF-8",
				   n->name, owner_name(n));
	free(*out);
	*out = NULL;
	if (!n->text[0])
		return 0;
	*out = strdup(n->text);
	return *out ? 0 : cfg_no_memory(cv);
}

/* Enum by name (pbtxt identifier, JSON string) or by number. */
int cfg_get_enum(cfg_conv *cv, const cfg_node *n, const cfg_enum_def *defs,
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
	return cfg_fail_at(cv, n, "field '%s' in %s: unknown value '%.40s'",
			   n->name, owner_name(n), n->text ? n->text : "{...}");
}

/* protobuf's zero value ("not set"), recursively for messages.  JSON
 * writes enums as strings. */
bool cfg_is_zero(const cfg_node *n, bool json)
{
	static const char *const zero_names[] = {
		"false", "False", "f", "FORMAT_NONE", "TYPE_INVALID",
		"PRIORITY_DEFAULT", "REJECT", "KIND_AUTO",
	};
	char *end;

	switch (n->kind) {
	case CFG_MESSAGE:
		for (int i = 0; i < n->n_children; i++)
			if (!cfg_is_zero(&n->children[i], json))
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

#define MAX_FIELDS 16

/* The fields seen once are counted in seen[]: a message's table has at
 * most MAX_FIELDS entries. */
int cfg_conv_message(cfg_conv *cv, const cfg_node *msg, const char *what,
		     const cfg_field_def *defs, size_t n_defs,
		     const char *const *triton_only, void *obj)
{
	bool seen[MAX_FIELDS] = { false };
	int rc;

	if (msg->kind != CFG_MESSAGE)
		return cfg_fail_at(cv, msg, "field '%s' must be a message, not %s",
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
				return cfg_fail_at(cv, f, "unknown field '%s' in %s",
						   f->name, what);
			/* An element of a list is set, even a zero one (gpus: [0]). */
			if (f->index >= 0 || !cfg_is_zero(f, cv->json))
				return cfg_fail_at(cv, f,
						   "field '%s' in %s is a Triton feature modelfs does not support",
						   f->name, what);
			continue;
		}
		if (!defs[d].repeated) {
			if (seen[d])
				return cfg_fail_at(cv, f, "field '%s' given twice in %s",
						   f->name, what);
			if (f->index >= 0)
				return cfg_fail_at(cv, f, "field '%s' in %s takes one value, not a list",
						   f->name, what);
			seen[d] = true;
		}
		rc = defs[d].fn(cv, f, obj);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- Triton's DataType ---- */

/* Triton's DataType numbers (model_config.proto). */
static const cfg_enum_def data_types[] = {
	{ "TYPE_INVALID", 0 }, { "TYPE_BOOL", 1 }, { "TYPE_UINT8", 2 },
	{ "TYPE_UINT16", 3 }, { "TYPE_UINT32", 4 }, { "TYPE_UINT64", 5 },
	{ "TYPE_INT8", 6 }, { "TYPE_INT16", 7 }, { "TYPE_INT32", 8 },
	{ "TYPE_INT64", 9 }, { "TYPE_FP16", 10 }, { "TYPE_FP32", 11 },
	{ "TYPE_FP64", 12 }, { "TYPE_STRING", 13 }, { "TYPE_BF16", 14 },
};

int cfg_get_data_type(cfg_conv *cv, const cfg_node *n, mfs_dtype *out)
{
	int v = 0;

	if (cfg_get_enum(cv, n, data_types, N_OF(data_types), &v))
		return -EINVAL;
	for (size_t i = 0; i < N_OF(data_types); i++)
		if (data_types[i].number == v) {
			if (v == 0) {
				*out = MFS_DT_UNDEFINED;
				return 0;
			}
			*out = mfs_dtype_from_config(data_types[i].name);
			if (*out == MFS_DT_UNDEFINED)
				return cfg_fail_at(cv, n, "data_type %s is not supported",
						   data_types[i].name);
		}
	return 0;
}

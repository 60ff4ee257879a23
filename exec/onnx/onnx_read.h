/* onnx_read.h - the reader's state and wire helpers, shared by the parts
 * of the ModelProto reader: onnx_reader.c (graphs, nodes, attributes),
 * onnx_types.c (value infos and types), onnx_model.c (models, loading).
 * Private to exec/onnx/.
 */
#ifndef MFS_ONNX_READ_H
#define MFS_ONNX_READ_H

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"
#include "pb_wire.h"

typedef struct rd {
	const char *base_dir;
	onnx_ext_budget budget;   /* external bytes, see onnx_internal.h */
	mfs_error *err;
	int depth;
} rd;



/* Errors name where they are ("graph 'g': node 3 (...): attribute ..."),
 * but only for the outer graphs: a message has 1 KiB, and the innermost
 * part, which says what is wrong, must survive deep nesting. */
#define CONTEXT_DEPTH 3
static inline bool want_context(const rd *c)
{
	return c->depth <= CONTEXT_DEPTH;
}

/* After rc: say which element failed ("initializer 3 'w': ..."), when
 * the depth allows.  name may be NULL (not read yet); read it after the
 * parse, not in the same call's arguments.  Returns rc. */
static inline int in_element(rd *c, int rc, const char *kind, int idx,
			     const char *name)
{
	if (rc && want_context(c))
		mfs_error_prefix(c->err, "%s %d%s%s%s: ", kind, idx,
				 name ? " '" : "", name ? name : "",
				 name ? "'" : "");
	return rc;
}

static inline int malformed(rd *c, const char *what, const char *why)
{
	return mfs_fail(c->err, EINVAL, "malformed %s: %s", what, why);
}

static inline int wrong_wire(rd *c, const char *msg, const char *field,
			     const pb_field *f)
{
	return mfs_fail(c->err, EINVAL, "%s.%s (field %u) has wire type %s",
			msg, field, f->num, pb_wire_type_name(f->wt));
}

static inline int oom(rd *c)
{
	return mfs_fail(c->err, ENOMEM, "out of memory");
}

/* Copy a string field (replacing *dst). */
static inline int get_string(rd *c, const pb_field *f, const char *msg,
			     const char *field, char **dst)
{
	char *s;
	int rc;

	if (f->wt != PB_WT_LEN)
		return wrong_wire(c, msg, field, f);
	rc = pb_strdup(f->data, f->len, &s);
	if (rc == -ENOMEM)
		return oom(c);
	if (rc)
		return mfs_fail(c->err, EINVAL, "%s.%s contains a NUL byte",
				msg, field);
	free(*dst);
	*dst = s;
	return 0;
}

static inline int get_varint(rd *c, const pb_field *f, const char *msg,
			     const char *field, int64_t *dst)
{
	if (f->wt != PB_WT_VARINT)
		return wrong_wire(c, msg, field, f);
	*dst = (int64_t)f->u;
	return 0;
}

/* A missing string reads as "" so users need no NULL checks. */
static inline int default_string(rd *c, char **s)
{
	if (!*s && !(*s = strdup("")))
		return oom(c);
	return 0;
}

/* Count occurrences of each field number below `nmax` in a message (the
 * counting pass that sizes arrays by what the bytes really hold). */
static inline int count_fields(rd *c, const uint8_t *buf, size_t len,
			       const char *what, long long *counts, uint32_t nmax)
{
	pb_reader r = pb_reader_init(buf, len);
	pb_field f;
	const char *why = NULL;
	int rc;

	while ((rc = pb_next(&r, &f, &why)) > 0)
		if (f.num < nmax)
			counts[f.num]++;
	if (rc < 0)
		return malformed(c, what, why);
	return 0;
}

static inline void *alloc_array(long long n, size_t size)
{
	if (n <= 0)
		return NULL;
	if (n > INT_MAX || (unsigned long long)n > SIZE_MAX / size)
		return NULL;
	return calloc((size_t)n, size);
}

/* onnx_reader.c: a GraphProto (nesting bounded), and its release. */
int onnx_parse_graph(rd *c, const uint8_t *buf, size_t len, onnx_graph *g);
void onnx_graph_release(onnx_graph *g);

/* onnx_types.c: a TypeProto into v's kind, dtype and shape; *other set
 * for a type the engine has no kind for (depth: 0 at the top). */
int onnx_parse_type(rd *c, const uint8_t *buf, size_t len,
		    onnx_value_info *v, int depth, bool *other);
/* onnx_types.c: a ValueInfoProto into v, and its release. */
int onnx_parse_value_info(rd *c, const uint8_t *buf, size_t len,
			  onnx_value_info *v);
void onnx_value_info_release(onnx_value_info *v);

#endif

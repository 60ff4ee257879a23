/* json_stream.h - JSON tensors read without building a document tree.
 *
 * A jansson tree costs 25-30x the text (a json_t per number), so a 50 MB
 * .json input took 1.5 GB (issue 17).  Here the text is walked in place:
 * objects are split at their keys into spans (pointers into the text),
 * the small structured parts (shape, datatype, name, parameters, the
 * infer request's outputs) are handed to jansson, and a tensor's "data"
 * is read in two passes straight into the typed buffer: the first checks
 * the syntax and the nesting and counts the values (no allocation), the
 * second parses each number into its slot.  The cost is the text plus
 * the tensor.
 *
 * Used by codec_json.c (the .json format) and infer_json.c (the infer
 * file's "inputs"), so both follow one set of rules (SPEC.md section 6).
 * Messages give the line and column of the whole document.
 */
#ifndef MFS_JSON_STREAM_H
#define MFS_JSON_STREAM_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "codec.h"
#include "error.h"

/* One JSON value inside a document: p[0..len) (p == NULL: absent); doc is
 * the document's start, for line and column in messages.  checked: the
 * span lies in a document mfs_json_value accepted, so walking it skips
 * values without checking them again (a request's data was otherwise
 * checked once per level it is nested in); spans taken from a checked
 * one are checked too. */
typedef struct mfs_jspan {
	const char *doc;
	const char *p;
	size_t len;
	bool checked;
} mfs_jspan;

/* A whole document as a span (leading and trailing white space kept). */
mfs_jspan mfs_jspan_doc(const char *text, size_t len);

/* Check that span holds exactly one JSON value (white space around it
 * allowed) and narrow it to that value (and mark it checked).  -EINVAL
 * naming line and column. */
int mfs_json_value(mfs_jspan *span, mfs_error *err);

/* Call fn for each member of the object in obj (a span from
 * mfs_json_value or from another walk), in text order, with the key
 * (decoded; keys longer than 255 bytes are cut, which only matters for
 * keys nobody looks for) and the value's span.  fn returns 0 to go on or
 * a negative errno to stop (returned).  -EINVAL when obj is not an object
 * or is malformed.  Duplicate keys are the caller's to find. */
typedef int (*mfs_json_member_fn)(void *ctx, const char *key, mfs_jspan val,
				  mfs_error *err);
int mfs_json_members(mfs_jspan obj, mfs_json_member_fn fn, void *ctx,
		     mfs_error *err);

/* Same for the elements of an array, with their index. */
typedef int (*mfs_json_element_fn)(void *ctx, size_t i, mfs_jspan val,
				   mfs_error *err);
int mfs_json_elements(mfs_jspan arr, mfs_json_element_fn fn, void *ctx,
		      mfs_error *err);

/* Parse a small part with jansson (flags as json_loadb's; JSON_DECODE_ANY
 * is added).  Returns a new reference, or NULL with err filled: -ENOMEM
 * "out of memory", else -EINVAL naming what and where. */
json_t *mfs_json_load(mfs_jspan span, const char *what, mfs_error *err);

/* A string value of printable ASCII without escapes ("INPUT0", "FP32"),
 * copied out without a parser (the common case of names and datatypes;
 * jansson's setup cost more than the rest of a small request's parse).
 * False for anything else, or when it does not fit out: parse that with
 * mfs_json_load. */
bool mfs_json_plain_string(mfs_jspan span, char *out, size_t size);

/* s as a JSON string value (quoted, escaped), malloc'd; NULL when out of
 * memory or s is not UTF-8.  Plain printable ASCII is quoted as it is,
 * the rest by jansson. */
char *mfs_json_quoted(const char *s);

/* The parts of a KServe tensor object (each absent: p == NULL). */
typedef struct mfs_json_tensor {
	mfs_jspan name, shape, datatype, data, parameters;
} mfs_json_tensor;

/* Split a tensor object (a span narrowed by mfs_json_value) at its keys.
 * -EINVAL for an unknown or repeated key.  A missing part stays absent
 * (the caller says what a missing "data" means). */
int mfs_json_tensor_split(mfs_jspan obj, mfs_json_tensor *parts,
			  mfs_error *err);

/* Decode a tensor from its parts: datatype from "datatype" (which must
 * then be a KServe name) or from spec, shape from the nesting of "data"
 * or from "shape" (the value counts must agree), values checked to fit.
 * On error out is left empty. */
int mfs_json_tensor_decode(const mfs_json_tensor *parts,
			   const mfs_tensor_spec *spec, mfs_tensor *out,
			   mfs_error *err);

#endif

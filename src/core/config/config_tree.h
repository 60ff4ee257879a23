/* config_tree.h - the parse tree shared by the two config front-ends.
 *
 * config_pbtxt.c (protobuf text format) and config_json.c (jansson) both
 * turn their text into this schema-free tree of named fields; config_schema.c
 * (with config_schema_*.c and config_fields.c) is the one place that knows
 * Triton's ModelConfig fields and turns the tree into an mfs_model_config.  So both formats accept exactly the same fields,
 * with the same checks and the same messages; only where an error is
 * reported differs: a line for pbtxt ("config.pbtxt:12"), a key path for
 * JSON ("config.json: input[0].dims"), since jansson keeps no positions for
 * values it parsed.
 *
 * Internal to src/config*.c.
 */
#ifndef MFS_CONFIG_TREE_H
#define MFS_CONFIG_TREE_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "error.h"

typedef enum cfg_kind {
	CFG_IDENT,      /* pbtxt identifier (enum value, true/false); JSON true/false */
	CFG_NUMBER,     /* text of a number, sign included */
	CFG_STRING,     /* decoded string (may not contain NUL) */
	CFG_MESSAGE,    /* { ... } */
} cfg_kind;

typedef struct cfg_node {
	char *name;                 /* the field's name */
	cfg_kind kind;
	char *text;                 /* scalars: the value; NULL for messages */
	int line;                   /* pbtxt: 1-based line; JSON: 0 */
	int index;                  /* element of a [...] list, else -1 */
	struct cfg_node *parent;    /* NULL for the root */
	struct cfg_node *children;  /* CFG_MESSAGE: its fields, in order */
	int n_children;
	int cap_children;
} cfg_node;

/* Bounds that keep a hostile file from costing much (a config is small). */
#define CFG_MAX_DEPTH 32
#define CFG_MAX_NODES 100000

/* Append an empty child to parent (may move parent->children: pointers to
 * earlier children become stale).  NULL on allocation failure. */
cfg_node *cfg_node_add(cfg_node *parent, const char *name, size_t name_len,
		       int line);
/* Free the contents of a node and its subtree (not the node itself). */
void cfg_node_release(cfg_node *n);
/* Point every child's parent at its node (after the tree stops growing). */
void cfg_node_link(cfg_node *n);

/* Convert a parsed tree into *out (already initialised).  source names the
 * file in messages; json says the tree came from JSON (integers may then
 * be strings, and locations are key paths). */
int cfg_tree_to_config(const cfg_node *root, const char *source, bool json,
		       mfs_model_config *out, mfs_error *err);

#endif

/* config_fields.h - reading the fields of a parsed config (config_tree.h)
 * into an mfs_model_config: the toolkit config_schema*.c share.
 *
 * Every function reports an error once, into cv->err, naming the file and
 * the line (pbtxt) or key path (JSON) of node n, and returns -EINVAL (or
 * -ENOMEM); 0 on success.  Internal to src/core/config/.
 */
#ifndef MFS_CONFIG_FIELDS_H
#define MFS_CONFIG_FIELDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config_tree.h"

/* One conversion: the file it reads and where errors go. */
typedef struct cfg_conv {
	const char *source;         /* the file, for messages */
	bool json;                  /* the tree came from JSON (key paths; integers may be strings) */
	mfs_error *err;
} cfg_conv;

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* An error at node n (formatted like printf): -EINVAL. */
int cfg_fail_at(cfg_conv *cv, const cfg_node *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* "out of memory" in the file: -ENOMEM. */
int cfg_no_memory(cfg_conv *cv);

/* Scalars, each checked to be one (not a message) of the right kind. */
int cfg_get_i64(cfg_conv *cv, const cfg_node *n, int64_t lo, int64_t hi,
		int64_t *out);
int cfg_get_int(cfg_conv *cv, const cfg_node *n, int lo, int hi, int *out);
int cfg_get_bool(cfg_conv *cv, const cfg_node *n, bool *out);
/* A new copy of a string field (well-formed UTF-8) into *out, freeing
 * what was there; "" (protobuf's unset) gives NULL. */
int cfg_get_string(cfg_conv *cv, const cfg_node *n, char **out);

typedef struct cfg_enum_def {
	const char *name;
	int number;     /* the value in Triton's model_config.proto */
} cfg_enum_def;

/* Enum by name (pbtxt identifier, JSON string) or by number. */
int cfg_get_enum(cfg_conv *cv, const cfg_node *n, const cfg_enum_def *defs,
		 size_t n_defs, int *out);
/* Triton's DataType (TYPE_FP32, ...): TYPE_INVALID gives
 * MFS_DT_UNDEFINED (unset); types modelfs lacks are
 * errors. */
int cfg_get_data_type(cfg_conv *cv, const cfg_node *n, mfs_dtype *out);

/* protobuf's zero value ("not set"), recursively for messages. */
bool cfg_is_zero(const cfg_node *n, bool json);

/* One field of a message: its handler gets the field's node and obj. */
typedef int (*cfg_field_fn)(cfg_conv *cv, const cfg_node *n, void *obj);

typedef struct cfg_field_def {
	const char *name;
	bool repeated;              /* a list; otherwise given at most once */
	cfg_field_fn fn;
} cfg_field_def;

/* Dispatch every field of msg (what: its name in messages) to its
 * handler in defs (at most 16), with obj.  A field not in defs must be
 * in triton_only (NULL-terminated; may be NULL): the fields Triton
 * defines and modelfs does not implement, accepted only at their zero
 * value ("a Triton feature modelfs does not support" otherwise); any
 * other name is an unknown field. */
int cfg_conv_message(cfg_conv *cv, const cfg_node *msg, const char *what,
		     const cfg_field_def *defs, size_t n_defs,
		     const char *const *triton_only, void *obj);

/* ---- the messages config_schema.c's table hands to other files ---- */

/* config_schema_batching.c: dynamic_batching and its queue policies;
 * Triton's rules between the priority fields, once all are read. */
int cfg_dynamic_batching(cfg_conv *cv, const cfg_node *n, void *obj);
/* One preferred_batch_size entry appended to *sizes (dynamic_batching's
 * or sequence_batching oldest's). */
int cfg_preferred_batch_size(cfg_conv *cv, const cfg_node *n, int **sizes, int *count);
int cfg_check_priorities(cfg_conv *cv, const cfg_node *root, const mfs_model_config *c);
/* config_schema_ensemble.c: ensemble_scheduling; platform "ensemble"
 * and ensemble_scheduling go together, once all are read. */
int cfg_ensemble_scheduling(cfg_conv *cv, const cfg_node *n, void *obj);
int cfg_check_ensemble(cfg_conv *cv, const cfg_node *root, const mfs_model_config *c);
/* config_schema_sequence.c: sequence_batching; its rules against the
 * other fields once all are read (fills max_candidate_sequences' default). */
int cfg_sequence_batching(cfg_conv *cv, const cfg_node *n, void *obj);
int cfg_check_sequence(cfg_conv *cv, const cfg_node *root, mfs_model_config *c);
/* config_schema_warmup.c: model_warmup samples. */
int cfg_model_warmup(cfg_conv *cv, const cfg_node *n, void *obj);

#endif

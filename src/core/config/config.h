/* config.h - a Triton model configuration (SPEC.md section 2).
 *
 * Parsed from config.pbtxt (protobuf text format, config_pbtxt.c) or
 * config.json (jansson, config_json.c) into one struct; completed from the
 * model's graph (config_complete.c); rendered as Triton's JSON
 * (config_render.c).  An unknown field is an error naming the field and its
 * line.  docs/CONFIG.md lists the fields and the auto-complete rules.
 */
#ifndef MFS_CONFIG_H
#define MFS_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "engine.h"
#include "tensor.h"

typedef struct mfs_io_config {
	char *name;
	mfs_dtype dtype;             /* UNDEFINED until known */
	int rank;                    /* -1 until known */
	int64_t dims[MFS_MAX_RANK];  /* -1 = variable; batch dim NOT included */
	bool has_reshape;
	int reshape_rank;
	int64_t reshape[MFS_MAX_RANK];
	bool optional;
	int graph_index;             /* the graph's input/output number; -1 until completed */
	/* A sequence or optional (tensor.h), as the graph declares it: the
	 * config has no syntax for them (CONFIG.md), completion copies them;
	 * dtype is then of the tensors, rank -1 (each tensor its own shape). */
	mfs_kind kind, elem_kind;
} mfs_io_config;

typedef enum mfs_version_policy_kind {
	MFS_POLICY_LATEST = 0,       /* default: latest { num_versions: 1 } */
	MFS_POLICY_ALL,
	MFS_POLICY_SPECIFIC,
} mfs_version_policy_kind;

typedef enum mfs_instance_kind {
	MFS_KIND_AUTO = 0,
	MFS_KIND_CPU,
	MFS_KIND_GPU,
} mfs_instance_kind;

typedef struct mfs_instance_group {
	int count;                   /* default 1 */
	mfs_instance_kind kind;
} mfs_instance_group;

typedef struct mfs_parameter {
	char *key;
	char *value;                 /* Triton: parameters { key: "k" value { string_value: "v" } } */
} mfs_parameter;

typedef struct mfs_model_config {
	char *name;
	char *platform;              /* NULL or "onnxruntime_onnx" */
	char *backend;               /* NULL, "onnxruntime" or "onnx" */
	int max_batch_size;
	mfs_io_config *inputs;  int n_inputs;
	mfs_io_config *outputs; int n_outputs;
	struct {
		mfs_version_policy_kind kind;
		int num_versions;            /* LATEST */
		int64_t *versions; int n_versions;   /* SPECIFIC */
	} version_policy;
	mfs_instance_group *instance_groups; int n_instance_groups;
	bool has_dynamic_batching;
	struct {
		int64_t max_queue_delay_us;
		int *preferred_batch_size; int n_preferred_batch_size;
		int64_t max_queue_size;      /* 0 = unbounded */
	} dynamic_batching;
	char *default_model_filename;    /* NULL = "model.onnx" */
	mfs_parameter *parameters; int n_parameters;
} mfs_model_config;

/* Zero-initialise with Triton's defaults. */
void mfs_config_init(mfs_model_config *c);
/* Free contents (the struct itself is the caller's). */
void mfs_config_release(mfs_model_config *c);

/* Parse config.pbtxt text.  source names the file in messages.  -EINVAL
 * with "config.pbtxt:12: unknown field 'foo'" style messages. */
int mfs_config_parse_pbtxt(const char *text, size_t len, const char *source,
			   mfs_model_config *out, mfs_error *err);
/* Parse config.json (same schema as Triton's JSON form). */
int mfs_config_parse_json(const char *text, size_t len, const char *source,
			  mfs_model_config *out, mfs_error *err);
/* Read and parse config.pbtxt or config.json (chosen by the file name). */
int mfs_config_load_file(const char *path, mfs_model_config *out,
			 mfs_error *err);

/* Check the config against the model directory name and complete it from
 * the compiled graph: missing inputs/outputs, datatypes and dims come from
 * the graph; given ones must agree with it (with the batch dim rule of
 * max_batch_size > 0).  -EINVAL naming the field on disagreement. */
int mfs_config_complete(mfs_model_config *c, const char *model_name,
			const mfs_graph *graph, mfs_error *err);

/* Triton's JSON form of the config in effect (a new reference). */
json_t *mfs_config_to_json(const mfs_model_config *c);

/* The tensor spec of input/output i as a request sees it (batch dim -1
 * prepended when max_batch_size > 0). */
struct mfs_tensor_spec;
void mfs_config_input_spec(const mfs_model_config *c, int i,
			   struct mfs_tensor_spec *spec);
void mfs_config_output_spec(const mfs_model_config *c, int i,
			    struct mfs_tensor_spec *spec);

/* Shape a request's input i takes inside the model: with a reshape, the
 * dims after the batch dim are replaced by the reshape (one -1 in it
 * inferred from the element count); otherwise unchanged.  -EINVAL when the
 * element counts cannot agree. */
int mfs_config_input_to_model(const mfs_model_config *c, int i,
			      const mfs_shape *request, mfs_shape *model,
			      mfs_error *err);
/* The inverse for output i: the model's output shape as the client sees
 * it (the config's dims in place of the reshape). */
int mfs_config_output_from_model(const mfs_model_config *c, int i,
				 const mfs_shape *model, mfs_shape *request,
				 mfs_error *err);

/* Index of the config input/output with that name, or -1. */
int mfs_config_find_input(const mfs_model_config *c, const char *name);
int mfs_config_find_output(const mfs_model_config *c, const char *name);

/* Which versions the policy selects from the available ones (sorted
 * ascending, in place); returns the new count. */
int mfs_config_apply_version_policy(const mfs_model_config *c,
				    int64_t *versions, int n);

#endif

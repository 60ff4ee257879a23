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

/* Triton's ModelInput.Format (its numbers): how an image input lays out
 * its 3 dims after the batch dim.  Shown, checked, not acted on (Triton's
 * ONNX Runtime backend does not act on it either). */
typedef enum mfs_io_format {
	MFS_FORMAT_NONE = 0,
	MFS_FORMAT_NHWC = 1,
	MFS_FORMAT_NCHW = 2,
} mfs_io_format;

/* "FORMAT_NONE", "FORMAT_NHWC", "FORMAT_NCHW". */
const char *mfs_io_format_name(mfs_io_format f);

typedef struct mfs_io_config {
	char *name;
	mfs_dtype dtype;             /* UNDEFINED until known */
	int rank;                    /* -1 until known */
	int64_t dims[MFS_MAX_RANK];  /* -1 = variable; batch dim NOT included */
	bool has_reshape;
	int reshape_rank;
	int64_t reshape[MFS_MAX_RANK];
	bool optional;
	/* Completed: the input is an initializer of the graph made an input
	 * (mfs_graph_load_inputs), so a run that leaves it out gets the
	 * stored value; whoever builds a run's inputs leaves it zeroed then. */
	bool has_default;
	mfs_io_format format;        /* inputs: FORMAT_NCHW/NHWC need 3 dims after the batch dim */
	char *label_filename;        /* outputs: labels file in the model directory; NULL = none */
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
	bool count_given;            /* the config set count (else ONNX KIND_CPU: 2) */
	mfs_instance_kind kind;
} mfs_instance_group;

typedef struct mfs_parameter {
	char *key;
	char *value;                 /* Triton: parameters { key: "k" value { string_value: "v" } } */
} mfs_parameter;

/* One key/value of an ensemble step's input_map or output_map. */
typedef struct mfs_tensor_map {
	char *key;                   /* the step model's input/output name */
	char *value;                 /* the ensemble's tensor name */
} mfs_tensor_map;

/* ensemble_scheduling { step [ ... ] } (platform "ensemble"). */
typedef struct mfs_ensemble_step {
	char *model_name;
	int64_t model_version;       /* -1 (Triton's default): the current version */
	mfs_tensor_map *input_map; int n_input_map;
	mfs_tensor_map *output_map; int n_output_map;
} mfs_ensemble_step;
/* model_warmup (Triton's ModelWarmup): samples run at load; the version
 * is READY only once every one ran (src/core/warmup.h). */
typedef enum mfs_warmup_data {
	MFS_WARMUP_ZERO = 0,         /* zero_data: true */
	MFS_WARMUP_RANDOM,           /* random_data: true */
	MFS_WARMUP_FILE,             /* input_data_file: raw bytes in VERSION/warmup/ */
} mfs_warmup_data;

typedef struct mfs_warmup_input {
	char *name;                  /* the model input (the map's key) */
	mfs_dtype dtype;
	int rank;
	int64_t dims[MFS_MAX_RANK];  /* every dim >= 1; batch dim NOT included */
	mfs_warmup_data data;
	char *file;                  /* MFS_WARMUP_FILE: a file name, no '/' */
} mfs_warmup_input;

typedef struct mfs_warmup {
	char *name;                  /* required: messages name the sample */
	int batch_size;              /* >= 1 (0 in the file means 1) */
	int count;                   /* runs; >= 1 (0 in the file means 1) */
	mfs_warmup_input *inputs; int n_inputs;
} mfs_warmup;

/* Triton's ModelQueuePolicy: what a queue of one priority level does. */
typedef struct mfs_queue_policy {
	bool timeout_delay;          /* timeout_action: DELAY (true) or REJECT (false) */
	int64_t default_timeout_us;  /* 0: requests never time out in the queue */
	bool allow_timeout_override; /* a request may set its own timeout */
	int64_t max_queue_size;      /* 0: MFS_DEFAULT_MAX_QUEUE_SIZE (registry.h) */
} mfs_queue_policy;

/* One entry of priority_queue_policy (a map from level to policy). */
typedef struct mfs_level_policy {
	int64_t level;               /* 1 .. priority_levels */
	mfs_queue_policy policy;
} mfs_level_policy;

/* Most priority levels a model may have (each is a queue). */
#define MFS_MAX_PRIORITY_LEVELS 1024
/* Longest queue timeout (about 11.6 days): deadlines in ns stay in 64 bits. */
#define MFS_MAX_QUEUE_TIMEOUT_US 1000000000000LL

/* sequence_batching (Triton's ModelSequenceBatching; the sequence
 * batcher is src/core/sequence_batcher.h). */
typedef enum mfs_seq_control_kind {
	MFS_SEQ_CTRL_START = 0,      /* Triton's Control.Kind numbers */
	MFS_SEQ_CTRL_READY = 1,
	MFS_SEQ_CTRL_END = 2,
	MFS_SEQ_CTRL_CORRID = 3,
} mfs_seq_control_kind;

/* One control_input: a model input the daemon fills (one control each). */
typedef struct mfs_seq_control {
	char *name;                  /* the graph input */
	mfs_seq_control_kind kind;
	mfs_dtype dtype;             /* INT32, FP32 or BOOL (the *_false_true given); CORRID: data_type */
	double false_true[2];        /* START/READY/END: the false and the true value */
} mfs_seq_control;

/* One implicit state: output_name of a step is input_name of the next. */
typedef struct mfs_seq_state {
	char *input_name, *output_name;
	mfs_dtype dtype;
	int rank;                    /* -1 until given */
	int64_t dims[MFS_MAX_RANK];  /* batch dim NOT included; -1: variable */
	bool has_initial;            /* initial_state given; else zeros of dims */
	char *init_name;
	mfs_dtype init_dtype;
	int init_rank;
	int64_t init_dims[MFS_MAX_RANK];
	char *init_file;             /* data_file in MODEL/initial_state/; NULL: zero_data */
} mfs_seq_state;

/* max_sequence_idle_microseconds when not given (Triton's default). */
#define MFS_SEQ_DEFAULT_IDLE_US 1000000LL

typedef struct mfs_model_config {
	char *name;
	char *platform;              /* NULL, "onnxruntime_onnx" or "ensemble" (never set with a custom backend) */
	char *backend;               /* NULL, "onnxruntime", "onnx", or a custom backend's name */
	int max_batch_size;
	bool max_batch_size_given;   /* the config set it (0 included): no auto-complete of it */
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
		mfs_queue_policy default_queue_policy;
		int priority_levels;         /* 0: one level, priorities unused */
		int default_priority_level;  /* 1 .. priority_levels (0 when none) */
		mfs_level_policy *level_policies; int n_level_policies;
	} dynamic_batching;
	char *default_model_filename;    /* NULL = "model.onnx" */
	mfs_parameter *parameters; int n_parameters;
	bool has_ensemble_scheduling;
	bool response_cache;         /* response_cache { enable: true } (response_cache.h) */
	mfs_ensemble_step *steps; int n_steps;
	mfs_warmup *warmups; int n_warmups;
	bool has_sequence_batching;
	struct {
		bool oldest;                 /* strategy oldest; else direct */
		int64_t max_queue_delay_us;  /* the strategy's */
		int max_candidate_sequences; /* oldest; 0: max_batch_size (at least 1) */
		int *preferred_batch_size; int n_preferred_batch_size;   /* oldest */
		int64_t max_idle_us;         /* 0: MFS_SEQ_DEFAULT_IDLE_US */
		mfs_seq_control *controls; int n_controls;
		mfs_seq_state *states; int n_states;
	} sequence_batching;
} mfs_model_config;

/* platform "ensemble": the model is a pipeline of other models
 * (ensemble_plan.h), not a graph. */
bool mfs_config_is_ensemble(const mfs_model_config *c);

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

/* Triton's --backend-config=onnxruntime,default-max-batch-size=N: the
 * max_batch_size auto-complete gives an ONNX model that can batch (every
 * input and output has a variable first dim) when its config sets no
 * max_batch_size and does not list both inputs and outputs; dynamic
 * batching comes with it when N > 1.  0 turns that off.  Default 4; set
 * once at start-up, before any model loads. */
#define MFS_DEFAULT_MAX_BATCH_SIZE 4
void mfs_config_set_default_max_batch_size(int n);

/* True when the config names a custom backend (docs/BACKENDS.md): a
 * shared library serves the model, there is no ONNX graph. */
bool mfs_config_custom_backend(const mfs_model_config *c);

/* Complete a custom backend's config, which has no graph to complete it
 * from: every input and output must be listed with data_type and dims
 * (-EINVAL naming the first that is not); reshape is refused; graph
 * indices follow the config's order. */
int mfs_config_complete_declared(mfs_model_config *c, const char *model_name,
				 mfs_error *err);

/* The same for an ensemble (platform "ensemble"), which has no graph
 * either: every input and output must give its data_type and dims
 * (Triton's rule); graph_index is the config's own index. */
int mfs_config_complete_ensemble(mfs_model_config *c, const char *model_name,
				 mfs_error *err);

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
/* A request's input i with the shape the client sent: -EINVAL "input
 * 'NAME': batch of N exceeds max_batch_size M" when the model batches
 * (max_batch_size > 0) and the first dim is larger.  The daemon's
 * requests and `modelfs run` both make this check. */
int mfs_config_check_batch(const mfs_model_config *c, int i, const mfs_shape *request,
			   mfs_error *err);
/* The inverse for output i: the model's output shape as the client sees
 * it (the config's dims in place of the reshape). */
int mfs_config_output_from_model(const mfs_model_config *c, int i,
				 const mfs_shape *model, mfs_shape *request,
				 mfs_error *err);

/* Is name a graph input (is_input) or output the sequence batcher
 * fills or takes (a control input, a state's input or output)?  Such a
 * tensor is not the client's: completion leaves it out of the config's
 * inputs and outputs. */
bool mfs_config_seq_owns(const mfs_model_config *c, const char *name, bool is_input);
/* sequence_batching as Triton prints it (a new reference). */
json_t *mfs_config_sequence_json(const mfs_model_config *c);

/* Index of the config input/output with that name, or -1. */
int mfs_config_find_input(const mfs_model_config *c, const char *name);
int mfs_config_find_output(const mfs_model_config *c, const char *name);

/* Which versions the policy selects from the available ones (sorted
 * ascending, in place); returns the new count. */
int mfs_config_apply_version_policy(const mfs_model_config *c,
				    int64_t *versions, int n);

#endif

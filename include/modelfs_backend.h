/* modelfs_backend.h - the C ABI of a modelfs custom backend.
 *
 * A model whose config.pbtxt says `backend: "NAME"` (anything but
 * onnxruntime/onnx) is served by the shared library libmodelfs_NAME.so,
 * found in the model's version directory, else in --backend-dir.  The
 * library exports one object:
 *
 *     const modelfs_backend_api modelfs_backend = {
 *             .abi_version = MODELFS_BACKEND_ABI_VERSION,
 *             .init = my_init, .execute = my_execute, .finalize = my_finalize,
 *     };
 *
 * modelfs reads abi_version first and refuses the library (a load error
 * naming the library and both versions) unless it equals the version
 * modelfs was built with; the rest of the struct is read only then, so a
 * later ABI may change it.
 *
 * Each instance of the model (instance_group count) runs in its own worker
 * process: init once, execute once per batch (never two at a time on one
 * instance), finalize at unload.  A crash kills that worker only; the
 * request in flight fails with the signal as its reason and a new worker
 * starts for the next request.  docs/BACKENDS.md has the whole contract.
 *
 * Everything modelfs passes in is borrowed for the duration of the call.
 * Errors: return non-zero and write one line into err (err_size bytes,
 * NUL-terminated; longer text is cut); modelfs shows it in the request's
 * `error` file and the log, after the model and backend names.
 *
 * This header is self-contained (C99, no modelfs headers) and is installed
 * as $(PREFIX)/include/modelfs_backend.h.
 */
#ifndef MODELFS_BACKEND_H
#define MODELFS_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MODELFS_BACKEND_ABI_VERSION 1u

/* The name of the object the library exports. */
#define MODELFS_BACKEND_SYMBOL "modelfs_backend"

/* Data types: ONNX TensorProto numbers (Triton's TYPE_* in the comments). */
enum modelfs_dtype {
	MODELFS_FP32 = 1,     /* TYPE_FP32 */
	MODELFS_UINT8 = 2,    /* TYPE_UINT8 */
	MODELFS_INT8 = 3,     /* TYPE_INT8 */
	MODELFS_UINT16 = 4,   /* TYPE_UINT16 */
	MODELFS_INT16 = 5,    /* TYPE_INT16 */
	MODELFS_INT32 = 6,    /* TYPE_INT32 */
	MODELFS_INT64 = 7,    /* TYPE_INT64 */
	MODELFS_BOOL = 9,     /* TYPE_BOOL, one byte 0 or 1 */
	MODELFS_FP16 = 10,    /* TYPE_FP16 */
	MODELFS_FP64 = 11,    /* TYPE_FP64 */
	MODELFS_UINT32 = 12,  /* TYPE_UINT32 */
	MODELFS_UINT64 = 13,  /* TYPE_UINT64 */
	MODELFS_BF16 = 16,    /* TYPE_BF16 */
};

#define MODELFS_MAX_RANK 8

/* An input or output as config.pbtxt declares it. */
typedef struct modelfs_io_decl {
	const char *name;
	int32_t dtype;                   /* enum modelfs_dtype */
	int32_t rank;                    /* dims after the batch dim */
	int64_t dims[MODELFS_MAX_RANK];  /* -1: variable */
} modelfs_io_decl;

typedef struct modelfs_parameter {
	const char *key;
	const char *value;               /* parameters { key value { string_value } } */
} modelfs_parameter;

/* What init gets: the model's identity and its config in effect. */
typedef struct modelfs_backend_config {
	const char *model_name;
	int64_t version;
	const char *version_dir;         /* REPOSITORY/<model>/<version>: the backend's own files */
	int32_t instance;                /* 0 .. instances-1 */
	int32_t max_batch_size;          /* > 0: every tensor has a leading batch dim */
	const modelfs_io_decl *inputs;   /* config order */
	int32_t n_inputs;
	const modelfs_io_decl *outputs;  /* config order */
	int32_t n_outputs;
	const modelfs_parameter *parameters;
	int32_t n_parameters;
} modelfs_backend_config;

/* A tensor of a run: dense, C order, little-endian. */
typedef struct modelfs_tensor {
	const char *name;
	int32_t dtype;                   /* enum modelfs_dtype */
	int32_t rank;                    /* the batch dim included, when there is one */
	int64_t shape[MODELFS_MAX_RANK];
	void *data;
	uint64_t byte_size;
} modelfs_tensor;

/* One run.  inputs are every config input, in config order (an optional
 * input that was not given has rank 0, data NULL and byte_size 0).
 * outputs are every config output in config order, with name and dtype
 * set; the backend gives each one its shape and data by calling
 * alloc_output, which sets rank, shape, data and byte_size (zeroed
 * memory, owned by modelfs) and returns data, or NULL when the rank is
 * out of range or memory is short.  An output left without data fails
 * the run.  modelfs then checks each output against the config (dtype,
 * rank, fixed dims, the batch dim equal to the inputs'). */
typedef struct modelfs_batch {
	const modelfs_tensor *inputs;
	int32_t n_inputs;
	modelfs_tensor *outputs;
	int32_t n_outputs;
	void *(*alloc_output)(struct modelfs_batch *batch, int32_t index,
			      int32_t rank, const int64_t *shape);
	void *host;                      /* modelfs's; do not touch */
} modelfs_batch;

typedef struct modelfs_backend_api {
	uint32_t abi_version;            /* MODELFS_BACKEND_ABI_VERSION; must come first */
	/* Set up one instance; *state is handed back to execute and finalize.
	 * Non-zero fails the model's load with err as the reason. */
	int (*init)(const modelfs_backend_config *config, void **state,
		    char *err, size_t err_size);
	/* Run one batch.  Non-zero fails the request(s) of this batch. */
	int (*execute)(void *state, modelfs_batch *batch, char *err, size_t err_size);
	/* Free the instance (may be NULL). */
	void (*finalize)(void *state);
} modelfs_backend_api;

#ifdef __cplusplus
}
#endif

#endif

/* infer_json.h - KServe v2 inference request and response JSON for the
 * transaction file MOUNT/<model>/infer (SPEC.md section 5).
 *
 * Request:  {"id"?, "inputs": [{"name","shape","datatype","data"}...],
 *            "outputs"?: [{"name", "parameters"?: {"classification": K}}...],
 *            "parameters"?: {"priority"?, "timeout"?, "sequence_id"?,
 *            "sequence_start"?, "sequence_end"?, ...}}  (Triton's
 *            names; checked against the queue policy by the request,
 *            request.h)
 * Response: {"model_name","model_version","id"?, "outputs":
 *            [{"name","datatype","shape","data"}...]}
 * or, on any failure, {"error": "..."}.  An output asked for with
 * "classification": K is answered as Triton's classification extension
 * does: a BYTES tensor of "score:index:label" strings (classify.h).
 * Each input tensor is decoded by the .json tensor codec, so the rules of
 * SPEC.md section 6 (nested or flat data, values must fit) hold here too.
 */
#ifndef MFS_INFER_JSON_H
#define MFS_INFER_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "error.h"
#include "labels.h"
#include "sequence_batcher.h"
#include "tensor.h"

typedef struct mfs_infer_req {
	mfs_tensor *inputs;        /* one per config input, config order; absent: dtype UNDEFINED */
	int n_inputs;
	bool *want;                /* per config output: include in the response */
	int64_t *classify;         /* per config output: K of "classification", 0: the tensor */
	int n_outputs;
	char *id;                  /* NULL if none */
	int64_t priority;          /* "parameters": {"priority": N}; 0 if none */
	int64_t timeout_us;        /* "parameters": {"timeout": µs}; 0 if none */
	mfs_seq_params seq;        /* "sequence_id" (number or string), "sequence_start", "sequence_end" */
} mfs_infer_req;

/* Parse text against the config.  -EINVAL (bad JSON, bad tensor, a
 * "binary_data" request, a "classification" that is not a positive
 * integer or names an output that cannot be classified), -ENOENT
 * (unknown input or output name). */
int mfs_infer_parse(const mfs_model_config *cfg, const char *text,
		    size_t len, mfs_infer_req *out, mfs_error *err);
void mfs_infer_req_release(mfs_infer_req *req);

/* Build the response.  outs[i] is config output i; labels[i] its labels
 * for classification (labels, or any labels[i], may be NULL).  Returns
 * malloc'd text (with a trailing newline) or NULL with err filled. */
char *mfs_infer_response(const mfs_model_config *cfg, const char *model,
			 int64_t version, const mfs_infer_req *req,
			 const mfs_tensor *const *outs, const mfs_labels *const *labels,
			 size_t *len, mfs_error *err);

/* {"error": msg}\n, malloc'd; never NULL unless out of memory. */
char *mfs_infer_error_json(const char *msg, size_t *len);

#endif

/* request_internal.h - shared between the request's files (request.h
 * is the contract; this is how they share the struct):
 *   request.c          life, inputs (commit, dot files, infer tensors),
 *                      runs and waits; the helpers below
 *   request_params.c   .priority / .timeout and the infer file's queue
 *                      parameters, checked against the queue policy
 *   request_files.c    the request directory as files: names, sizes,
 *                      listing, inputs read back or removed
 *   request_output.c   a finished run's outputs, their encodings cached
 *   request_status.c   $req/status, $req/error, $req/trace.json
 *   request_cache.c    the response cache: answers at submit, keeps at done
 *   request_generate.c input_ids on a generator model starts a generation
 * The others call request.c's helpers and request.c calls
 * request_params.c's; nothing calls back (tests/layers/check-cycles.sh).
 * "locked": r->lock is held by the caller.
 */
#ifndef MFS_REQUEST_INTERNAL_H
#define MFS_REQUEST_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ensemble.h"
#include "request.h"
#include "response_cache.h"
#include "scheduler.h"
#include "sequence_batcher.h"

enum { W_NEW = 0, W_QUEUED, W_CANCELLED, W_WOKEN };

typedef struct input_slot {
	bool present;
	mfs_tensor t;
	char *filename;            /* as written: "INPUT0.npy"; NULL for tensors */
	char *blob;                /* the file's bytes, to read back */
	size_t blob_len;
	char *link;                /* committed by symlink: its text (for readlink), else NULL */
	int graph_idx;
	mfs_shape model_shape;     /* t's shape as the graph sees it (config reshape) */
} input_slot;

/* A file whose name starts with '.': a temporary a tool writes before
 * renaming it into place (cp --backup, rsync, editors, Python's
 * tempfile + os.replace).  Kept as bytes; checked when renamed to an
 * input's name. */
typedef struct staged_file {
	char *name;
	char *blob;
	size_t len;
} staged_file;

typedef struct enc_cache {
	char *buf;
	size_t len;
	bool valid;
} enc_cache;

typedef struct trace {
	bool valid;
	uint64_t run, decode, queue, input, infer, output, total;
	int batch_size, batch_requests;
	bool cache_hit;            /* answered from the response cache, not run */
} trace;

struct mfs_request {
	pthread_mutex_t lock;
	int refs;                  /* atomic */
	char *name;
	mfs_version *v;
	mfs_queue *run_here;        /* a job submit left to this thread (unlock_and_run) */
	mfs_ensemble_run *ens_start;   /* an ensemble run to start once unlocked */
	const mfs_model_config *cfg;
	uint64_t max_bytes;
	int n_in, n_out;           /* config inputs/outputs */
	int n_gin, n_gout;         /* graph inputs/outputs */
	input_slot *in;
	int *out_graph_idx;        /* config output -> graph output */
	mfs_tensor *run_in;        /* n_gin: the run in flight's inputs */
	char **run_blob;           /* n_gin: the file bytes a run_in tensor points into, or NULL */
	mfs_tensor *run_out;       /* n_gout: filled by the run */
	enc_cache *enc;            /* n_out * MFS_FMT_COUNT, for the last DONE run */
	mfs_req_state state;
	mfs_error error;           /* code 0: none */
	bool have_fmt;
	mfs_format list_fmt;
	uint64_t decode_ns;        /* decoding the current run's inputs */
	uint64_t runs;
	uint64_t gen;              /* the run inputs go to now: +1 when a finished run's result is dropped */
	trace tr;
	mfs_job job;
	mfs_waiter *waiters;       /* doubly linked, NULL-terminated */
	uint64_t last_use;
	bool removed;              /* atomic */
	staged_file *staged;       /* dot files: kept as written, never decoded */
	int n_staged;
	uint64_t charged;          /* bytes counted in the daemon's --max-memory budget */
	int64_t priority;          /* chosen by .priority or infer's "priority"; 0: the default */
	int64_t timeout_us;        /* chosen by .timeout or infer's "timeout"; 0: the default */
	mfs_seq_params seq;        /* .sequence_* files or infer's "sequence_*" (sequence_batcher.h) */
	mfs_rcache_key cache_key;  /* the run in flight's key, kept at done (response cache) */
	uint64_t cache_miss_ns;    /* its lookup's time */
	struct mfs_gen *generation;   /* a generator's: the generation input_ids started, or NULL */
	bool failure_counted;      /* this attempt's failure is in the metrics (once per attempt) */
};

/* ---- request.c ---- */

/* Record an error for $req/error and the log; returns rc.  The first
 * error of an attempt (until the next submit) counts one failed request
 * (reason OTHER) in the version's metrics. */
int req_record(mfs_request *r, int rc, const mfs_error *err);
/* The same for an error the scheduler has counted already. */
int req_record_counted(mfs_request *r, int rc, const mfs_error *err);
/* Bring the request's share of the memory budget (membudget.h) to what
 * it holds now. */
void req_recharge_locked(mfs_request *r);
/* Bytes of the committed inputs and dot files (the max_bytes check). */
uint64_t req_input_bytes_locked(const mfs_request *r);
/* Config input index of an input's name, or -1 (no lock: fixed). */
int req_input_index(const mfs_request *r, const char *name);
/* Empty an input slot (its tensor, bytes, link). */
void req_clear_slot(input_slot *s);
/* The dot file named name: its index in r->staged, or -1. */
int req_find_staged(const mfs_request *r, const char *name);
/* Forget dot file i (a parameter file's value goes back to the default). */
void req_drop_staged(mfs_request *r, int i);
/* "INPUT0 INPUT1": the required inputs not present, into buf. */
void req_missing_inputs(const mfs_request *r, char *buf, size_t size);

/* ---- request_params.c ---- */

/* The request-directory files that set the request's queue parameters
 * rather than hold a tensor (SPEC.md section 4). */
enum { PARAM_NONE, PARAM_PRIORITY, PARAM_TIMEOUT, PARAM_SEQ_ID, PARAM_SEQ_START, PARAM_SEQ_END };

int req_param_of(const char *filename);
/* Parse and check a parameter file's bytes against the model's queue
 * policy (r->priority is the priority a timeout is checked for).
 * 0 and *value, or -EINVAL with err naming the file. */
int req_parse_param_locked(mfs_request *r, int param, const void *buf, size_t len,
			   int64_t *value, mfs_error *err);
/* Keep a parameter file's value in the request once stored (buf NULL:
 * the file was removed, back to the default); the bytes were checked. */
void req_store_param_locked(mfs_request *r, int param, const void *buf, size_t len);

/* ---- request_cache.c (r->v->cache set) ---- */

/* Is the answer to the committed inputs in the response cache?  Then
 * true: the outputs are in run_out, the request is DONE, its trace says
 * cache_hit, the statistics count a hit.  Else false, with the key kept
 * for req_cache_keep_locked (none when the inputs are not cacheable). */
bool req_cache_answer_locked(mfs_request *r);
/* The run of a missed lookup ended (ok: it succeeded, run_out holds the
 * outputs as the client sees them): keep them in the cache, count the
 * miss.  Nothing without a key. */
void req_cache_keep_locked(mfs_request *r, bool ok);

/* ---- request_generate.c ---- */

/* Is config input idx the input_ids of a generator model? */
bool req_gen_input_locked(const mfs_request *r, int idx);
/* Start a generation of input idx's ids with the dot files' parameters,
 * replacing (and cancelling) the request's last one.  0 or -errno. */
int req_gen_start_locked(mfs_request *r, int idx, mfs_error *err);

#endif

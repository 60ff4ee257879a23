/* request.h - one inference request and its life (SPEC.md section 4):
 *
 *   WAITING (inputs missing) -> QUEUED -> RUNNING -> DONE | FAILED
 *        ^_____________ a new input after DONE/FAILED ______|
 *
 * A request is bound at creation to one served version (it holds a
 * reference).  Inputs arrive as whole tensor files (request directories)
 * or as decoded tensors (the infer file); each is decoded and checked
 * against the version's config when committed.  When every required input
 * is present the request is submitted to the version's queue; the run
 * consumes the inputs.  Outputs can then be read in any format.
 *
 * A reader that must wait registers an mfs_waiter, whose wake() is called
 * once when the run ends (on the compute thread, no lock held).  The
 * request is reference counted; every function is thread-safe.  Nothing
 * here is FUSE-specific.
 */
#ifndef MFS_REQUEST_H
#define MFS_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec.h"
#include "error.h"
#include "registry.h"
#include "tensor.h"

typedef enum mfs_req_state {
	MFS_REQ_WAITING = 0,
	MFS_REQ_QUEUED,
	MFS_REQ_RUNNING,
	MFS_REQ_DONE,
	MFS_REQ_FAILED,
} mfs_req_state;

typedef struct mfs_request mfs_request;
typedef struct mfs_waiter mfs_waiter;

struct mfs_waiter {
	void (*wake)(mfs_waiter *w);    /* set by the owner */
	/* Private. */
	mfs_waiter *next, *prev;
	int wstate;
	mfs_request *req;
};

/* True for a valid request name: [A-Za-z0-9._-]{1,64}, not "." or "..". */
bool mfs_request_name_ok(const char *name);

/* A new request (one reference) on version v (a reference is taken).
 * max_bytes bounds the sum of the inputs' sizes (EFBIG beyond). */
int mfs_request_new(mfs_version *v, const char *name, uint64_t max_bytes,
		    mfs_request **out, mfs_error *err);
void mfs_request_get(mfs_request *r);
void mfs_request_put(mfs_request *r);

const char *mfs_request_name(const mfs_request *r);
mfs_version *mfs_request_version(const mfs_request *r);   /* borrowed */
mfs_req_state mfs_request_state(mfs_request *r);

/* What a file name in the request directory is, found under one lock
 * (the filesystem asks this at lookup, create, stat, unlink, rename). */
typedef enum mfs_file_kind {
	MFS_FILE_NONE = 0,      /* nothing the request knows */
	MFS_FILE_INPUT_NAME,    /* "INPUT.EXT" of a config input, or a dot file: may be created */
	MFS_FILE_INPUT,         /* a committed input or a kept temporary: size is set */
	MFS_FILE_OUTPUT,        /* "OUTPUT.EXT" of a config output: idx and fmt are set */
} mfs_file_kind;

/* "OUTPUT.topK.txt", the classification view of an output (classify.h,
 * SPEC.md section 4), is told apart from the tensor formats by its "fmt"
 * value, past them, so the filesystem carries it as it carries a format.
 * K from 1 to MFS_VIEW_TOPK_MAX; a larger K is no file. */
#define MFS_VIEW_TOPK_MAX (1 << 30)
#define MFS_VIEW_TOPK(k) ((mfs_format)(MFS_FMT_COUNT + (k)))
#define MFS_VIEW_IS_TOPK(fmt) ((int)(fmt) > (int)MFS_FMT_COUNT)
#define MFS_VIEW_K(fmt) ((int64_t)(fmt) - MFS_FMT_COUNT)

typedef struct mfs_file_info {
	mfs_file_kind kind;
	int idx;                /* MFS_FILE_OUTPUT: config output index */
	mfs_format fmt;         /* MFS_FILE_OUTPUT: a format, or MFS_VIEW_TOPK(K) */
	int64_t size;           /* MFS_FILE_INPUT: bytes as written */
	bool link;              /* MFS_FILE_INPUT: committed by a symlink (commit_link) */
} mfs_file_info;

mfs_file_kind mfs_request_find_file(mfs_request *r, const char *filename,
				    mfs_file_info *info);

/* Bytes that filename may still hold: max_bytes less what every other
 * file of the request holds (the EFBIG check while it is written). */
uint64_t mfs_request_room(mfs_request *r, const char *filename);

/* Commit one tensor file "NAME.EXT": decode and check it; when it was
 * the last missing input, submit the request.  Errors (also kept for
 * mfs_request_error_text and logged once):
 *   -ENOENT  no input of that name (or the name has no known extension)
 *   -EINVAL  undecodable, wrong datatype or shape
 *   -EFBIG   the request's inputs exceed max_bytes
 *   -EBUSY   the request is queued or running
 *   -EAGAIN  the model's queue is full (the request is FAILED)
 *   -EINVAL  also: a .priority or .timeout the queue policy refuses
 * Committing to a DONE or FAILED request starts a new run. */
int mfs_request_commit_file(mfs_request *r, const char *filename,
			    const void *buf, size_t len, mfs_error *err);

/* commit_file without a copy: the request takes *buf (malloc'd, len
 * bytes) and sets *buf to NULL, unless the commit fails (the caller
 * keeps it then) or filename is a temporary (its bytes are copied as by
 * commit_file).  A large input written through a file is then held
 * once, not once in the writer's buffer and again in the request. */
int mfs_request_commit_take(mfs_request *r, const char *filename, char **buf,
			    size_t len, mfs_error *err);

/* Commit an input whose bytes the caller read from the target of a
 * symlink the client made ("NAME.EXT" -> link): as commit_file, but the
 * request takes buf over (malloc'd; freed on failure too) instead of
 * copying it, and keeps link for readlink (mfs_request_input_link) and
 * mfs_file_info.link while the input is present. */
int mfs_request_commit_link(mfs_request *r, const char *filename, const char *link,
			    char *buf, size_t len, mfs_error *err);
/* The symlink text of a present input committed by commit_link (a
 * malloc'd copy), or NULL. */
char *mfs_request_input_link(mfs_request *r, const char *filename);

/* May filename be created in the request?  0 for an input's "NAME.EXT"
 * and for a temporary (a dot file); -ENOENT (kept for $req/error and
 * logged) for an unknown name or extension, as commit_file would say. */
int mfs_request_check_file_name(mfs_request *r, const char *filename, mfs_error *err);

/* A file whose name starts with '.' is a temporary: commit_file keeps its
 * bytes as written (listed, readable, removable, counted in max_bytes)
 * and checks nothing.  Renaming it to an input's name commits it then,
 * with commit_file's errors (the temporary stays when it fails).  Only
 * temporaries can be renamed: -EXDEV otherwise. */
int mfs_request_rename_file(mfs_request *r, const char *from, const char *to,
			    mfs_error *err);

/* Replace all inputs at once and submit (the infer file).  tensors[i]
 * (one per config input, in config order; an absent optional input has
 * dtype UNDEFINED) are moved into the request.  Same errors as above. */
int mfs_request_submit_tensors(mfs_request *r, mfs_tensor *tensors,
			       mfs_error *err);

/* The request's place in the queue (SPEC.md section 4).  The files
 * "$req/.priority" and "$req/.timeout" (µs) set them when committed
 * (mfs_request_commit_file, as any dot file; removing them restores the
 * default); the infer file calls mfs_request_set_queue_params.  Both
 * check the value against the model's queue policy (queue_policy.h):
 * -EINVAL with err saying why (priority not a level, a timeout where
 * allow_timeout_override is false, not a number).
 * mfs_request_check_param is that check alone for the bytes written so
 * far to filename (0 for any other file): the filesystem asks it at each
 * write so that bash's echo sees the error. */
/* Is filename (NAME.EXT) an input the model takes as strings?  Their
 * .txt lines are text, not numbers: no prefix check applies. */
bool mfs_request_input_is_string(mfs_request *r, const char *filename);
int mfs_request_check_param(mfs_request *r, const char *filename, const void *buf,
			    size_t len, mfs_error *err);
int mfs_request_set_queue_params(mfs_request *r, int64_t priority, int64_t timeout_us,
				 mfs_error *err);
/* The infer file's sequence parameters (sequence_batcher.h) for the
 * request's next run; a model without sequence_batching ignores them. */
struct mfs_seq_params;
void mfs_request_set_seq_params(mfs_request *r, const struct mfs_seq_params *p);

/* Record an error found outside the request (a write refused by the
 * filesystem) for $req/error, and log it once. */
void mfs_request_note_error(mfs_request *r, const mfs_error *err);

/* Forget an input file ("NAME.EXT") that was committed; -ENOENT if none. */
int mfs_request_remove_input(mfs_request *r, const char *filename);

/* A copy of a committed input file's bytes; -ENOENT if none. */
int mfs_request_input_file(mfs_request *r, const char *filename,
			   char **buf, size_t *len);

/* The run a reader that opens an output now is bound to (a request
 * directory reused by several writers must not hand one writer's result
 * to another's reader silently): the run the inputs present now belong
 * to, waiting, queued, running or finished.  It changes when an input
 * is committed to a finished request (reuse).  Counts from 1. */
uint64_t mfs_request_run_id(mfs_request *r);

/* The encoded bytes of output idx in fmt of run (mfs_request_run_id at
 * open; 0: whatever run is current), a malloc'd copy.
 *   0            done; *buf owned by the caller
 *   -EINPROGRESS queued or running: wait (mfs_request_wait) and retry
 *   -ENODATA     inputs are missing (err names them; kept for $req/error)
 *   -EIO         the run failed (err says why)
 *   -ETIMEDOUT   the request waited in the queue past its timeout (REJECT)
 *   -ESTALE      run was replaced: new inputs were committed after it
 *   -EINVAL      a top-K view of an output that cannot be classified
 *                (kept for $req/error) */
int mfs_request_read_output(mfs_request *r, uint64_t run, int idx, mfs_format fmt,
			    char **buf, size_t *len, mfs_error *err);

/* Size of output idx in fmt once the run is DONE (encodes and caches);
 * -1 before. */
int64_t mfs_request_output_size(mfs_request *r, int idx, mfs_format fmt);

/* The outputs of the last run, when DONE: outs[i] (config output i) is
 * a borrowed tensor valid while the caller holds a reference and starts
 * no new run (the infer file).  -EIO when the run failed, -EINPROGRESS
 * before it ends, -ENODATA when nothing ran. */
int mfs_request_outputs(mfs_request *r, const mfs_tensor **outs,
			mfs_error *err);

/* Wait for the run to end.  Returns 1 when w was registered (wake() will
 * be called), 0 when there is nothing to wait for (read now), -EINTR
 * when w was cancelled before it could be registered. */
int mfs_request_wait(mfs_request *r, mfs_waiter *w);
/* Cancel a wait.  Returns true when w was registered and is now removed
 * (wake() will not be called: the caller answers the reader); false when
 * wake() has been or is being called, or w was not registered yet (then
 * mfs_request_wait returns -EINTR). */
bool mfs_request_cancel_wait(mfs_request *r, mfs_waiter *w);

/* The generation that committing input_ids on a generator model started
 * (generate.h), with a reference; NULL before. */
struct mfs_gen *mfs_request_gen(mfs_request *r);

/* Contents of $req/status ("DONE\n"), $req/error ("" or "reason\n") and
 * $req/trace.json; malloc'd, NUL-terminated. */
char *mfs_request_status_text(mfs_request *r);
char *mfs_request_error_text(mfs_request *r);
char *mfs_request_trace_json(mfs_request *r);

/* Names to list in the request directory (inputs present, and the
 * outputs in the format of the first input); free each and the array. */
int mfs_request_list(mfs_request *r, char ***names, int *n);

/* Directory bookkeeping (the filesystem's): a removed request keeps
 * serving what is in flight but is no longer listed or found; its run,
 * queued or running, is cancelled unless a read waits for its result
 * (mfs_sched_cancel; an ensemble's steps run on). */
void mfs_request_mark_removed(mfs_request *r);
bool mfs_request_removed(mfs_request *r);

/* A request directory is used (looked at, opened, written): false when
 * it was removed, else its idle time restarts.  For expiry:
 * mfs_now_ns() of the last use, and whether anything is pending (queued,
 * running or waited on). */
bool mfs_request_use(mfs_request *r);
uint64_t mfs_request_last_use(mfs_request *r);
bool mfs_request_busy(mfs_request *r);

#endif

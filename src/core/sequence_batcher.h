/* sequence_batcher.h - Triton's sequence batcher (config
 * sequence_batching; SPEC.md section 12): requests that belong to a
 * sequence (a sequence id, start and end flags) run one at a time and in
 * the order they came, each sequence's implicit state is kept here
 * between its requests, and the batcher fills the model's control inputs
 * (START, END, READY, CORRID) and state inputs.
 *
 * It sits in front of the version's scheduler queue (scheduler.h): a
 * request's job is given to mfs_seqb_submit instead of the queue; when
 * it is the sequence's turn, the batcher makes a job of its own (the
 * client's inputs as views, plus control and state tensors) and submits
 * that to the queue, whose dynamic batching then puts one row per
 * sequence into a run.  Each sequence holds a slot while it lives:
 * direct gives max_batch_size (at least 1) slots per instance, oldest
 * max_candidate_sequences; a sequence that finds no free slot waits (its
 * requests stay queued here) until one is freed.  A sequence is freed
 * after its END request ran, or once it has had no request queued or
 * running for max_sequence_idle_microseconds; its next request then
 * fails saying so.  State bytes are counted in --max-memory
 * (membudget.h).
 *
 * Lock order: the request's lock, then the batcher's, then the
 * scheduler's.  done() callbacks are called with none of the batcher's
 * locks held.
 */
#ifndef MFS_SEQUENCE_BATCHER_H
#define MFS_SEQUENCE_BATCHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "error.h"
#include "scheduler.h"

/* Longest string sequence id, in bytes. */
#define MFS_SEQ_ID_MAX 128

/* A sequence id: a number from 1, or a string (Triton's correlation ID).
 * A string of digits is the number. */
typedef struct mfs_seq_id {
	bool set;
	bool is_string;
	uint64_t num;
	char str[MFS_SEQ_ID_MAX + 1];
} mfs_seq_id;

/* What a request says about its sequence. */
typedef struct mfs_seq_params {
	mfs_seq_id id;
	bool start, end;
} mfs_seq_params;

/* Parse a sequence id from bytes (a file's; one trailing newline is
 * allowed): 0 and *out, or -EINVAL with err naming what. */
int mfs_seq_parse_id(const char *what, const void *buf, size_t len, mfs_seq_id *out,
		     mfs_error *err);
/* Parse a flag: "1" or "true" is set, "0", "false" or nothing is not
 * (one trailing newline allowed); -EINVAL otherwise. */
int mfs_seq_parse_flag(const char *what, const void *buf, size_t len, bool *out,
		       mfs_error *err);
/* "7" or "'abc'" into buf. */
const char *mfs_seq_id_format(const mfs_seq_id *id, char *buf, size_t size);

typedef struct mfs_seqb mfs_seqb;

typedef struct mfs_seqb_conf {
	const char *label;                 /* "model 'acc' version 1", copied */
	const mfs_model_config *cfg;       /* borrowed for the batcher's life */
	mfs_queue *queue;                  /* where the steps run */
	int instances;
	/* The graph's inputs and outputs, in the order of a job's tensors. */
	int n_inputs, n_outputs;
	const char *const *input_names;
	const mfs_dtype *input_dtypes;
	const char *const *output_names;
	const char *model_dir;             /* initial_state/ files are read from here */
} mfs_seqb_conf;

/* A batcher for conf; the controls and states must name graph inputs and
 * outputs of their data types, and a data_file must hold exactly the
 * state's bytes (-EINVAL naming which otherwise). */
int mfs_seqb_new(const mfs_seqb_conf *conf, mfs_seqb **out, mfs_error *err);

/* Queue a request's job in its sequence.  job->inputs/outputs are in the
 * graph's order; the control and state inputs are left empty by the
 * caller and filled here.  Returns 0 (done() is called later, once), or
 * with done() NOT called and err filled: -EINVAL (no sequence id, more
 * than one row, a string id where CORRID takes a number), -EIO (a
 * sequence that is not started, ended, or was freed after idling: the
 * request fails as a failed run does), -ENOSPC (the state would pass
 * --max-memory), -ESHUTDOWN (closed), -ENOMEM. */
int mfs_seqb_submit(mfs_seqb *sb, mfs_job *job, const mfs_seq_params *p, mfs_error *err);

/* Sequences that hold a slot or wait for one. */
int mfs_seqb_live(mfs_seqb *sb);

/* Refuse new requests and fail the waiting ones (ESHUTDOWN, reason);
 * steps in the queue finish.  Idempotent. */
void mfs_seqb_close(mfs_seqb *sb, const char *reason);

/* Close and free; the queue must have been freed (no step in flight). */
void mfs_seqb_free(mfs_seqb *sb);

#endif

/* generate.h - text generation from a decoder with a key/value cache
 * (SPEC.md section 5b).
 *
 * A generator model follows the Hugging Face / Optimum decoder
 * convention: inputs input_ids [B,S], attention_mask [B,P+S], optionally
 * position_ids [B,S], past_key_values.N.key / .value [B,H,P,D]; outputs
 * logits [B,S,V] and present.N.key / .value [B,H,P+S,D]; an empty past
 * (P = 0) at the first step.  A model is a generator when its graph has
 * exactly those inputs (found by their names), unless its config says
 * parameters { key: "generator" value: { string_value: "false" } }; with
 * "true" a model that does not follow the convention fails to load with
 * the reason.
 *
 * The daemon runs the loop.  Each version that is a generator has one
 * mfs_generator: generations started on it wait until the next step,
 * then run their prompt (the prefill: one step of their own, empty past)
 * and join the running batch, which advances every member by one token
 * per step (in-flight batching).  Rows of different lengths are
 * left-padded to the longest and the padding masked with
 * attention_mask 0 (and each row gets its own position_ids); a model
 * without position_ids batches only rows of equal length.  A finished
 * or cancelled generation leaves the batch at the next step.  Steps are
 * jobs on the version's queue (scheduler.h): they share its instances
 * with the model's other requests.
 *
 * The cache: each step's present tensors are the next step's past as
 * they are (the daemon copies nothing per token), and on an engine with
 * device memory (OpenCL) they stay there between steps (engine.h,
 * "Resident tensors"): nothing of the cache crosses the bus per token.
 * The model's own Concat(past, new) makes the grown tensor, one copy of
 * the cache per token inside the engine (on the device), as in ONNX
 * Runtime.  The batch is re-packed (one copy, through the host) only
 * when a row joins or leaves.
 *
 * A generation (mfs_gen) is reference counted and outlives its
 * generator: readers take the ids produced so far and wait for more
 * without holding a thread (mfs_gen_wait).  Every function is
 * thread-safe.  Nothing here is FUSE-specific.
 */
#ifndef MFS_GENERATE_H
#define MFS_GENERATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "engine.h"
#include "error.h"
#include "generate_sampling.h"
#include "request.h"
#include "scheduler.h"

typedef struct mfs_generator mfs_generator;
typedef struct mfs_gen mfs_gen;

/* The generator of a loaded version: *out NULL when the model is not one
 * (or its config says "generator": "false").  -EINVAL naming what is
 * missing when the config says "true" and the graph does not follow the
 * convention.  label names the model in messages ("gpt v1"). */
int mfs_generator_new(const mfs_model_config *cfg, const mfs_graph *graph,
		      mfs_queue *queue, const char *label, mfs_generator **out,
		      mfs_error *err);
/* After the version's queue was freed (no step in flight): generations
 * still running fail ("the model was unloaded"). */
void mfs_generator_free(mfs_generator *g);

/* Start a generation of prompt[0..n) (copied).  *out has one reference
 * (the generator holds its own until the generation ends).  -EINVAL for
 * an empty prompt or bad parameters (mfs_gen_params_check), an id
 * outside the vocabulary is the model's to refuse (the first step
 * fails). */
int mfs_gen_start(mfs_generator *g, const int64_t *prompt, int64_t n, const mfs_gen_params *p,
		  mfs_gen **out, mfs_error *err);
void mfs_gen_get(mfs_gen *gen);
void mfs_gen_put(mfs_gen *gen);
/* Stop a generation (a removed request directory, a closed generate
 * file): it leaves the batch at the next step and ends as finished
 * with the ids it has ("cancelled"). */
void mfs_gen_cancel(mfs_gen *gen);

typedef enum mfs_gen_state { MFS_GEN_RUNNING = 0, MFS_GEN_DONE, MFS_GEN_FAILED } mfs_gen_state;

/* The ids produced from index from on: a malloc'd copy in *ids (NULL
 * when none), *n of them; the state, and on MFS_GEN_DONE the reason in
 * *finish ("length", "stop" or "cancelled"; static), on MFS_GEN_FAILED
 * the error in err.  Returns the total produced so far. */
size_t mfs_gen_read(mfs_gen *gen, size_t from, int64_t **ids, size_t *n,
		    mfs_gen_state *state, const char **finish, mfs_error *err);

/* Wait until more than have ids exist or the generation ends: 1 when w
 * was registered (w->wake is called once, on the compute thread, no lock
 * held), 0 when there is something to read now.  Cancel as
 * mfs_request_cancel_wait does (true: removed, wake will not come). */
int mfs_gen_wait(mfs_gen *gen, size_t have, mfs_waiter *w);
bool mfs_gen_cancel_wait(mfs_gen *gen, mfs_waiter *w);

/* For $req/status: "GENERATING 5/100", "DONE 100 length", "FAILED reason". */
void mfs_gen_status(mfs_gen *gen, char *buf, size_t size);

/* The generate file's request (SPEC.md section 5b): {"input_ids": [ids],
 * "max_tokens", "temperature", "top_k", "top_p", "seed", "stop": [ids],
 * "stream": bool}, all but input_ids optional.  *prompt malloc'd, *n ids;
 * p filled from the defaults (mfs_gen_params_init) and checked.  -EINVAL
 * with err saying what is wrong; unknown keys are refused too (a typo
 * must not silently sample). */
int mfs_gen_parse_json(const char *text, size_t len, int64_t **prompt, int64_t *n,
		       mfs_gen_params *p, mfs_error *err);

#endif

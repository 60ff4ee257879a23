/* generate_internal.h - shared between generate.c (the generator: the
 * model's layout, the steps, the batch) and generate_gen.c (one
 * generation: its ids, state and waiters).  generate.c calls
 * generate_gen.c, never the other way (tests/layers/check-cycles.sh). */
#ifndef MFS_GENERATE_INTERNAL_H
#define MFS_GENERATE_INTERNAL_H

#include <pthread.h>

#include "generate.h"

struct mfs_gen {
	pthread_mutex_t lock;          /* ids, state, finish, err, waiters */
	int refs;                      /* atomic */
	int64_t *prompt;
	int64_t n_prompt;
	mfs_gen_params p;
	mfs_gen_rng rng;
	int64_t *ids;
	size_t n_ids, cap;
	mfs_gen_state state;
	const char *finish;
	mfs_error err;
	mfs_waiter *waiters;
	bool cancelled;                /* atomic */
	/* The generator's, under its lock. */
	int64_t len;                   /* positions in the cache */
	int64_t last;                  /* the id to feed at the next step */
	struct mfs_gen *next;          /* waiting to start */
};

/* A new generation (one reference), RUNNING, nothing produced. */
mfs_gen *gen_new(const int64_t *prompt, int64_t n, const mfs_gen_params *p);
/* Append the id a step chose; the readers to wake go onto *later (the
 * generator wakes them with gen_wake once it holds no lock: a wake
 * replies to a reader, whose handle's lock may be held by a thread that
 * waits for the generator's).  True when that ended the generation (a
 * stop id, max_tokens, or it was cancelled). */
bool gen_push(mfs_gen *gen, int64_t id, mfs_waiter **later);
/* End it: DONE with finish, or FAILED with err (when err is not NULL);
 * its readers onto *later.  Nothing when it had ended. */
void gen_end(mfs_gen *gen, const char *finish, const mfs_error *err, mfs_waiter **later);
/* Wake a list gen_push and gen_end made (no lock held). */
void gen_wake(mfs_waiter *list);
bool gen_cancelled(mfs_gen *gen);

#endif

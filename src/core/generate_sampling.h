/* generate_sampling.h - choosing the next token from a row of logits
 * (SPEC.md section 5b): greedy (argmax, the lowest id on a tie) when the
 * temperature is 0, else a draw from softmax(logits / temperature)
 * restricted to the top_k most likely ids and then to the smallest set
 * whose probability reaches top_p, as Hugging Face's sampling does.
 * Draws come from the generation's own generator (splitmix64 seeded by
 * the request's seed), so a seed gives the same ids every time, whatever
 * else the daemon runs.
 */
#ifndef MFS_GENERATE_SAMPLING_H
#define MFS_GENERATE_SAMPLING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define MFS_GEN_MAX_STOP 64

/* What a generation asks for (the generate file's JSON keys, the
 * request directory's dot files). */
typedef struct mfs_gen_params {
	int64_t max_tokens;           /* new ids at most; default 16 */
	double temperature;           /* 0 (default): greedy */
	int64_t top_k;                /* 0 (default): every id */
	double top_p;                 /* 1 (default): no nucleus cut */
	uint64_t seed;                /* default 0 */
	int64_t stop[MFS_GEN_MAX_STOP];   /* ids that end the generation (kept in the output) */
	int n_stop;
	bool stream;                  /* the generate file: one line per token */
} mfs_gen_params;

/* The defaults above. */
void mfs_gen_params_init(mfs_gen_params *p);
/* -EINVAL with err naming the parameter when a value is out of range
 * (max_tokens < 1, temperature < 0, top_k < 0, top_p not in (0, 1]). */
int mfs_gen_params_check(const mfs_gen_params *p, mfs_error *err);

/* Parse one parameter's text (a dot file's bytes: ".max_tokens",
 * ".temperature", ".top_k", ".top_p", ".seed", ".stop" with ids
 * separated by spaces, commas or newlines) into p.  name is without the
 * dot.  -ENOENT for a name that is not a parameter, -EINVAL for a bad
 * value (err names the file). */
int mfs_gen_param_parse(mfs_gen_params *p, const char *name, const char *text, size_t len,
			mfs_error *err);

typedef struct mfs_gen_rng {
	uint64_t s;
} mfs_gen_rng;

void mfs_gen_rng_seed(mfs_gen_rng *g, uint64_t seed);
/* A double in [0, 1) with 53 random bits. */
double mfs_gen_rng_double(mfs_gen_rng *g);

/* The next id from logits[0..n).  scratch holds n ints and n floats
 * (mfs_gen_scratch_bytes(n)), reused between calls. */
size_t mfs_gen_scratch_bytes(int64_t n);
int64_t mfs_gen_sample(const float *logits, int64_t n, const mfs_gen_params *p,
		       mfs_gen_rng *rng, void *scratch);

#endif

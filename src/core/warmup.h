/* warmup.h - a version's model_warmup samples (Triton's ModelWarmup;
 * SPEC.md section 9, docs/CONFIG.md).
 *
 * At load, once the config is completed against the graph, each sample
 * of config.model_warmup is checked (every input a config input, of its
 * datatype and dims; every required input given; an input_data_file
 * present in VERSION_DIR/warmup/ and holding exactly the sample's bytes)
 * and made into the engine's inputs: zero_data zeros, random_data
 * reproducible pseudo-random values (floats in [0, 1), integers 0..9,
 * booleans), input_data_file the file's raw little-endian bytes.  The
 * registry then times the engines on the first sample (device_router.h)
 * and runs every sample `count` times on every instance before the
 * version is READY.  Errors name the sample, the input and the file; the
 * caller prefixes the model and version.
 */
#ifndef MFS_WARMUP_H
#define MFS_WARMUP_H

#include "config.h"
#include "engine.h"
#include "error.h"

typedef struct mfs_warmup_sample {
	const mfs_warmup *def;     /* borrowed from the config */
	mfs_tensor *inputs;        /* the engine's inputs, in graph order */
	int n_inputs;
} mfs_warmup_sample;

/* Check and build every sample of c (completed) for graph g.  *out is
 * NULL and *n 0 when the config has none.  -EINVAL or -ENOENT (a missing
 * file) with a message naming the sample, the input and the file. */
int mfs_warmup_prepare(const mfs_model_config *c, const mfs_graph *g,
		       const char *version_dir, mfs_warmup_sample **out, int *n,
		       mfs_error *err);

void mfs_warmup_samples_free(mfs_warmup_sample *s, int n);

/* Run each sample def->count times on e; an error names the sample. */
int mfs_warmup_run(struct mfs_exec *e, const mfs_graph *g,
		   const mfs_warmup_sample *s, int n, mfs_error *err);

#endif

/* route_cache.h - the engine choices of KIND_AUTO kept on disk
 * (SPEC.md section 9), so that a restart, a second mount or `modelfs
 * run` reuses a trial instead of timing the engines again.
 *
 * One file per key under the cache's "routes" directory
 * (src/base/cache_dir.h), named by a hash of the key and holding the key
 * itself, so that a hash collision is a miss, not a wrong answer.  The
 * key: a hash of the model file's bytes, a hash of the config fields
 * that change a run (inputs, outputs, max_batch_size, optimization,
 * parameters, model_warmup), the warm-up sample's name, the OpenCL
 * device (name and driver version), the batch size timed and the modelfs
 * build that timed it (build_id.h: an upgrade times the engines again).  Files are
 * written to a temporary name and renamed: a reader never sees half an
 * entry.  An entry that does not parse, or whose key differs, is ignored
 * with a warning in the log (and overwritten by the next trial).
 */
#ifndef MFS_ROUTE_CACHE_H
#define MFS_ROUTE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "error.h"

typedef struct mfs_route_key {
	uint64_t model_hash;       /* mfs_route_hash_file of the model file */
	uint64_t config_hash;      /* mfs_route_hash_config */
	char sample[128];          /* the warm-up sample's name; "" = made-up inputs */
	char opencl[256];          /* "platform / device" */
	char driver[128];          /* its driver version */
	int64_t batch;             /* the batch size timed (0: the model does not batch) */
	char build[96];            /* mfs_build_id() of the build that timed it */
} mfs_route_key;

typedef struct mfs_route_entry {
	char device[16];           /* "cpu" or "opencl" */
	double cpu_ms, opencl_ms;  /* the trial's medians; -1 = not measured */
	char note[320];            /* the trial's note, one line */
} mfs_route_entry;

/* A fast non-cryptographic 64-bit hash of a file's bytes (read(), 1 MiB at
 * a time).  Errors name no path; the caller prefixes it. */
int mfs_route_hash_file(const char *path, uint64_t *out, mfs_error *err);

/* The same hash over a buffer (seed chains several pieces). */
uint64_t mfs_route_hash_bytes(const void *p, size_t n, uint64_t seed);

/* A hash of the fields of cfg that change what a trial measures. */
uint64_t mfs_route_hash_config(const mfs_model_config *cfg);

/* The entry for key in dir (a "routes" directory): 1 and *out set when
 * there is a valid one; 0 when there is none or it is ignored (corrupt,
 * another key: a warning names the file and the reason). */
int mfs_route_cache_get(const char *dir, const mfs_route_key *key,
			mfs_route_entry *out);

/* Keep e for key in dir (made if missing).  0, or -errno with err set
 * (the caller logs it: a cache that cannot be written only costs a trial
 * next time). */
int mfs_route_cache_put(const char *dir, const mfs_route_key *key,
			const mfs_route_entry *e, mfs_error *err);

/* The entry's file name for key in dir, into buf. */
void mfs_route_cache_file(const char *dir, const mfs_route_key *key,
			  char *buf, size_t size);

#endif

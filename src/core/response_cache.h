/* response_cache.h - Triton's response cache (docs/SPEC.md section 7,
 * docs/CONFIG.md "Response cache"): the outputs of a model's request
 * kept in memory, keyed by its inputs, so that the same request again is
 * answered without running the model.
 *
 * One cache per daemon, of a fixed size in bytes (--cache-size), shared
 * by every model whose config says response_cache { enable: true };
 * least recently used entries go first when an entry does not fit.
 *
 * A key is the bytes of everything that decides the answer: the caller
 * appends them (model name, version, each input's name, type, shape and
 * data).  Its 64-bit hash finds the entry; a hit also compares the whole
 * key, so two requests whose keys differ are never answered from each
 * other's entry, whatever their hashes.  Every entry belongs to an owner
 * (one loaded model version, mfs_rcache_new_owner): owners never share
 * entries, and mfs_rcache_drop_owner forgets one's entries (a reload or
 * unload).
 *
 * Thread-safe: one lock, held for the table's work and the copies in
 * and out of it.
 */
#ifndef MFS_RESPONSE_CACHE_H
#define MFS_RESPONSE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "tensor.h"

typedef struct mfs_rcache mfs_rcache;

/* A key under construction: the bytes appended so far. */
typedef struct mfs_rcache_key {
	char *buf;                 /* owned */
	size_t len, cap;
	bool failed;               /* an append ran out of memory: not usable */
} mfs_rcache_key;

/* A cache of capacity bytes (entries' keys, outputs and bookkeeping);
 * -ENOMEM. */
int mfs_rcache_new(uint64_t capacity, mfs_rcache **out);
/* Frees the cache and every entry.  NULL is a no-op. */
void mfs_rcache_free(mfs_rcache *c);

/* A new owner id, never returned before in this process. */
uint64_t mfs_rcache_new_owner(void);

/* Append n bytes to k (on failure k->failed is set and stays). */
void mfs_rcache_key_add(mfs_rcache_key *k, const void *p, size_t n);
void mfs_rcache_key_release(mfs_rcache_key *k);

/* Is there an entry of owner with exactly key k?  Then 1, with a copy of
 * its n_out outputs in out[] (the caller owns them), and the entry
 * becomes the most recently used.  0 on a miss (out untouched); -ENOMEM
 * with err when the copy failed (out untouched). */
int mfs_rcache_lookup(mfs_rcache *c, uint64_t owner, const mfs_rcache_key *k,
		      mfs_tensor *out, int n_out, mfs_error *err);

/* Keep outs[0..n_out) for (owner, k): the key's bytes are taken (k is
 * emptied, whether the entry is kept or not) and the outputs copied.  Least recently used entries are
 * dropped until it fits; an entry larger than the whole cache, one
 * already there, or a failed copy is not kept (0 all the same: the
 * cache is an optimisation).  Only plain tensors are kept. */
int mfs_rcache_insert(mfs_rcache *c, uint64_t owner, mfs_rcache_key *k,
		      const mfs_tensor *outs, int n_out);

/* Forget every entry of owner. */
void mfs_rcache_drop_owner(mfs_rcache *c, uint64_t owner);

/* Bytes held and entries, now. */
void mfs_rcache_usage(mfs_rcache *c, uint64_t *bytes, uint64_t *entries);

#endif

/* response_cache.c - see response_cache.h.
 *
 * A chained hash table of entries (buckets: a power of two, doubled when
 * the entries outnumber them) and a doubly linked list in order of use,
 * the most recent at the head.  c->lock guards both and every entry.
 */
#include "response_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
	struct entry *chain;       /* the bucket's next */
	struct entry *newer, *older;
	uint64_t owner, hash;
	char *key;
	size_t key_len;
	mfs_tensor *outs;
	int n_out;
	uint64_t size;             /* counted against the capacity */
} entry;

struct mfs_rcache {
	pthread_mutex_t lock;
	uint64_t capacity, used, n_entries;
	entry **buckets;
	size_t n_buckets;          /* a power of two */
	entry *newest, *oldest;
};

int mfs_rcache_new(uint64_t capacity, mfs_rcache **out)
{
	mfs_rcache *c = calloc(1, sizeof(*c));
	if (!c || !(c->buckets = calloc(64, sizeof(*c->buckets)))) {
		free(c);
		return -ENOMEM;
	}
	c->n_buckets = 64;
	c->capacity = capacity;
	pthread_mutex_init(&c->lock, NULL);
	*out = c;
	return 0;
}

static void entry_free(entry *e)
{
	for (int i = 0; i < e->n_out; i++)
		mfs_tensor_release(&e->outs[i]);
	free(e->outs);
	free(e->key);
	free(e);
}

void mfs_rcache_free(mfs_rcache *c)
{
	if (!c)
		return;
	for (entry *e = c->newest, *next; e; e = next) {
		next = e->older;
		entry_free(e);
	}
	free(c->buckets);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

uint64_t mfs_rcache_new_owner(void)
{
	static uint64_t next;
	return __atomic_add_fetch(&next, 1, __ATOMIC_RELAXED);
}

void mfs_rcache_key_add(mfs_rcache_key *k, const void *p, size_t n)
{
	if (k->failed)
		return;
	if (k->len + n > k->cap) {
		size_t cap = k->cap ? k->cap : 256;
		while (cap < k->len + n)
			cap *= 2;
		char *b = realloc(k->buf, cap);
		if (!b) {
			k->failed = true;
			return;
		}
		k->buf = b;
		k->cap = cap;
	}
	if (n)
		memcpy(k->buf + k->len, p, n);
	k->len += n;
}

void mfs_rcache_key_release(mfs_rcache_key *k)
{
	free(k->buf);
	*k = (mfs_rcache_key){ 0 };
}

/* ---- the table (lock held) ---- */

static uint64_t mix(uint64_t h)
{
	h ^= h >> 31;
	h *= 0x7fb5d329728ea185ull;
	h ^= h >> 27;
	h *= 0x81dadef4bc2dd44dull;
	return h ^ (h >> 33);
}

/* A 64-bit hash of the owner and the key's bytes, eight at a time.
 * tests/unit/test_response_cache.c builds this file with every hash the
 * same (MFS_RCACHE_TEST_HASH), so that only the full key tells entries
 * apart. */
static uint64_t key_hash(uint64_t owner, const char *p, size_t n)
{
#ifdef MFS_RCACHE_TEST_HASH
	return MFS_RCACHE_TEST_HASH;
#endif
	uint64_t h = mix(owner ^ 0x9e3779b97f4a7c15ull) ^ n;
	uint64_t w;
	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&w, p, 8);
		h = (h ^ mix(w)) * 0x9fb21c651e98df25ull;
		h = (h << 29) | (h >> 35);
	}
	w = 0;
	memcpy(&w, p, n);
	return mix(h ^ mix(w ^ ((uint64_t)n << 56)));
}

static entry **bucket(mfs_rcache *c, uint64_t hash)
{
	return &c->buckets[hash & (c->n_buckets - 1)];
}

static entry *find(mfs_rcache *c, uint64_t owner, uint64_t hash, const char *key, size_t len)
{
	for (entry *e = *bucket(c, hash); e; e = e->chain)
		if (e->hash == hash && e->owner == owner && e->key_len == len &&
		    memcmp(e->key, key, len) == 0)
			return e;
	return NULL;
}

static void lru_unlink(mfs_rcache *c, entry *e)
{
	if (e->newer)
		e->newer->older = e->older;
	else
		c->newest = e->older;
	if (e->older)
		e->older->newer = e->newer;
	else
		c->oldest = e->newer;
	e->newer = e->older = NULL;
}

static void lru_push(mfs_rcache *c, entry *e)
{
	e->older = c->newest;
	e->newer = NULL;
	if (c->newest)
		c->newest->newer = e;
	c->newest = e;
	if (!c->oldest)
		c->oldest = e;
}

static void remove_entry(mfs_rcache *c, entry *e)
{
	entry **pp = bucket(c, e->hash);
	while (*pp != e)
		pp = &(*pp)->chain;
	*pp = e->chain;
	lru_unlink(c, e);
	c->used -= e->size;
	c->n_entries--;
	entry_free(e);
}

/* Twice the buckets, when the entries outnumber them (best effort). */
static void grow(mfs_rcache *c)
{
	if (c->n_entries < c->n_buckets)
		return;
	size_t n = c->n_buckets * 2;
	entry **b = calloc(n, sizeof(*b));
	if (!b)
		return;
	for (entry *e = c->newest; e; e = e->older) {
		entry **slot = &b[e->hash & (n - 1)];
		e->chain = *slot;
		*slot = e;
	}
	free(c->buckets);
	c->buckets = b;
	c->n_buckets = n;
}

/* ---- the contract ---- */

int mfs_rcache_lookup(mfs_rcache *c, uint64_t owner, const mfs_rcache_key *k,
		      mfs_tensor *out, int n_out, mfs_error *err)
{
	if (k->failed)
		return 0;
	uint64_t hash = key_hash(owner, k->buf, k->len);
	pthread_mutex_lock(&c->lock);
	entry *e = find(c, owner, hash, k->buf, k->len);
	int rc = 0;
	if (e && e->n_out == n_out) {
		int i = 0;
		for (; i < n_out; i++)
			if (mfs_tensor_copy(&out[i], &e->outs[i], err) < 0)
				break;
		if (i < n_out) {
			while (i-- > 0)
				mfs_tensor_release(&out[i]);
			rc = -ENOMEM;
		} else {
			lru_unlink(c, e);
			lru_push(c, e);
			rc = 1;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* A new entry holding copies of outs, or NULL. */
static entry *entry_new(uint64_t owner, mfs_rcache_key *k, const mfs_tensor *outs, int n_out)
{
	entry *e = calloc(1, sizeof(*e));
	if (!e || !(e->outs = calloc((size_t)n_out + 1, sizeof(mfs_tensor)))) {
		free(e);
		return NULL;
	}
	e->owner = owner;
	e->size = sizeof(*e) + k->len + (size_t)n_out * sizeof(mfs_tensor);
	mfs_error err;
	for (int i = 0; i < n_out; i++) {
		const mfs_tensor *t = &outs[i];
		if (t->kind != MFS_KIND_TENSOR || t->layout != MFS_LAYOUT_PLAIN ||
		    mfs_dtype_size(t->dtype) == 0 || mfs_tensor_copy(&e->outs[e->n_out], t, &err) < 0) {
			entry_free(e);
			return NULL;
		}
		e->n_out++;
		e->size += t->nbytes;
	}
	e->hash = key_hash(owner, k->buf, k->len);
	e->key = k->buf;
	e->key_len = k->len;
	*k = (mfs_rcache_key){ 0 };
	return e;
}

int mfs_rcache_insert(mfs_rcache *c, uint64_t owner, mfs_rcache_key *k,
		      const mfs_tensor *outs, int n_out)
{
	uint64_t need = sizeof(entry) + k->len + (size_t)n_out * sizeof(mfs_tensor);
	for (int i = 0; i < n_out; i++)
		need += outs[i].nbytes;
	/* Copied outside the lock: the copy is the slow part. */
	entry *e = k->failed || need > c->capacity ? NULL : entry_new(owner, k, outs, n_out);
	mfs_rcache_key_release(k);
	if (!e)
		return 0;
	pthread_mutex_lock(&c->lock);
	if (find(c, owner, e->hash, e->key, e->key_len)) {
		pthread_mutex_unlock(&c->lock);
		entry_free(e);   /* a concurrent miss kept the same answer */
		return 0;
	}
	while (c->oldest && c->used + e->size > c->capacity)
		remove_entry(c, c->oldest);
	entry **slot = bucket(c, e->hash);
	e->chain = *slot;
	*slot = e;
	lru_push(c, e);
	c->used += e->size;
	c->n_entries++;
	grow(c);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

void mfs_rcache_drop_owner(mfs_rcache *c, uint64_t owner)
{
	pthread_mutex_lock(&c->lock);
	for (entry *e = c->newest, *next; e; e = next) {
		next = e->older;
		if (e->owner == owner)
			remove_entry(c, e);
	}
	pthread_mutex_unlock(&c->lock);
}

void mfs_rcache_usage(mfs_rcache *c, uint64_t *bytes, uint64_t *entries)
{
	pthread_mutex_lock(&c->lock);
	*bytes = c->used;
	*entries = c->n_entries;
	pthread_mutex_unlock(&c->lock);
}

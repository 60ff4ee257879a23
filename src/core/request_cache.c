/* request_cache.c - a request answered from the response cache
 * (response_cache.h; SPEC.md section 7): the key made of the request's
 * inputs, the answer taken from the cache at submit, and a run's answer
 * kept at its end.  request.c calls these with r->lock held; they read
 * the input slots and fill the outputs, the trace and the statistics,
 * and call nothing of request.c.
 */
#include <stdint.h>
#include <string.h>

#include "metrics.h"
#include "request_internal.h"
#include "response_cache.h"

static void add_u64(mfs_rcache_key *k, uint64_t v)
{
	mfs_rcache_key_add(k, &v, sizeof(v));
}

static void add_str(mfs_rcache_key *k, const char *s)
{
	mfs_rcache_key_add(k, s, strlen(s) + 1);
}

/* The key of r's committed inputs: the model, the version, and each
 * config input's name, then whether it is given and its data type,
 * shape (as the client gave it) and bytes.  false when an input is not
 * a plain tensor of fixed-size elements (such a request is not cached). */
static bool make_key(const mfs_request *r, mfs_rcache_key *k)
{
	/* A stateful model's answer depends on its sequence's state, which
	 * no key holds: never cached. */
	if (r->v->seqb)
		return false;
	add_str(k, r->v->model_name);
	add_u64(k, (uint64_t)r->v->version);
	for (int i = 0; i < r->n_in; i++) {
		const input_slot *s = &r->in[i];
		add_str(k, r->cfg->inputs[i].name);
		add_u64(k, s->present);
		if (!s->present)
			continue;
		const mfs_tensor *t = &s->t;
		/* A STRING tensor's data is pointers into its arena: the
		 * same pointers may hold other text.  Not cached. */
		if (t->kind != MFS_KIND_TENSOR || t->layout != MFS_LAYOUT_PLAIN ||
		    t->dtype == MFS_DT_STRING ||
		    mfs_dtype_size(t->dtype) == 0 || (t->nbytes && !t->data))
			return false;
		add_u64(k, (uint64_t)t->dtype);
		add_u64(k, (uint64_t)t->shape.rank);
		for (int d = 0; d < t->shape.rank; d++)
			add_u64(k, (uint64_t)t->shape.dims[d]);
		add_u64(k, t->nbytes);
		mfs_rcache_key_add(k, t->data, t->nbytes);
	}
	return !k->failed;
}

bool req_cache_answer_locked(mfs_request *r)
{
	mfs_rcache_key_release(&r->cache_key);
	uint64_t t0 = mfs_now_ns();
	if (!make_key(r, &r->cache_key)) {
		mfs_rcache_key_release(&r->cache_key);
		return false;
	}
	mfs_error err;
	int hit = mfs_rcache_lookup(r->v->cache, r->v->cache_owner, &r->cache_key,
				    r->run_out, r->n_gout, &err);
	uint64_t ns = mfs_now_ns() - t0;
	if (hit != 1) {
		r->cache_miss_ns = ns;   /* the insert adds its time at the end */
		return false;
	}
	mfs_rcache_key_release(&r->cache_key);
	r->state = MFS_REQ_DONE;
	r->runs++;
	r->tr = (trace){ .valid = true, .run = r->runs, .decode = r->decode_ns,
			 .total = ns, .cache_hit = true };
	r->decode_ns = 0;
	mfs_stats_add_cache_hit(&r->v->stats, ns, ns);
	return true;
}

void req_cache_keep_locked(mfs_request *r, bool ok)
{
	if (!r->cache_key.buf)
		return;
	uint64_t t0 = mfs_now_ns();
	if (ok && !mfs_version_unloaded(r->v))
		mfs_rcache_insert(r->v->cache, r->v->cache_owner, &r->cache_key,
				  r->run_out, r->n_gout);
	mfs_rcache_key_release(&r->cache_key);
	mfs_stats_add_cache_miss(&r->v->stats, r->cache_miss_ns + (mfs_now_ns() - t0));
	r->cache_miss_ns = 0;
}

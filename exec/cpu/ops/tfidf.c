/* TfIdfVectorizer (9), integer input: count the pool's n-grams
 * (min..max_gram_length, tokens max_skip_count apart at most) in each row
 * of X [N] or [B, N], then output TF (counts), IDF (weight where seen) or
 * TFIDF (count x weight) at each n-gram's ngram_indexes slot.  String pools
 * are refused (the engine has no string tensors). */
#include <string.h>

#include "op_common.h"

typedef struct tfidf {
	int64_t minn, maxn, skip, out_dim, n_pool, n_counts, n_idx;
	const int64_t *pool, *counts, *idx;
	const float *weights;
	size_t n_weights;
	int mode;                 /* 0 TF, 1 IDF, 2 TFIDF */
} tfidf;

static int tfidf_cfg(mfs_op_ctx *ctx, tfidf *t)
{
	const onnx_node *n = ctx->node;
	const onnx_attr *w = onnx_node_attr(n, "weights");
	const char *mode = onnx_attr_string(n, "mode", "TF");
	const mfs_tensor *x = ctx->in[0];

	memset(t, 0, sizeof(*t));
	if (onnx_node_attr(n, "pool_strings"))
		return mfs_op_fail(ctx, ENOTSUP, "string pools are not supported");
	if (x->dtype != MFS_DT_INT32 && x->dtype != MFS_DT_INT64)
		return mfs_op_fail(ctx, ENOTSUP, "input must be int32 or int64");
	if (x->shape.rank != 1 && x->shape.rank != 2)
		return mfs_op_fail(ctx, EINVAL, "input must be [N] or [B, N]");
	t->mode = !strcmp(mode, "TF") ? 0 : !strcmp(mode, "IDF") ? 1 : !strcmp(mode, "TFIDF") ? 2 : -1;
	if (t->mode < 0)
		return mfs_op_fail(ctx, EINVAL, "unknown mode '%s'", mode);
	t->minn = onnx_attr_int(n, "min_gram_length", 1);
	t->maxn = onnx_attr_int(n, "max_gram_length", 1);
	t->skip = onnx_attr_int(n, "max_skip_count", 0);
	t->n_pool = (int64_t)onnx_attr_ints(n, "pool_int64s", &t->pool);
	t->n_counts = (int64_t)onnx_attr_ints(n, "ngram_counts", &t->counts);
	t->n_idx = (int64_t)onnx_attr_ints(n, "ngram_indexes", &t->idx);
	if (w) {
		t->weights = w->floats;
		t->n_weights = w->n_floats;
	}
	if (t->minn < 1 || t->maxn < t->minn || t->maxn > t->n_counts || t->skip < 0 ||
	    t->skip > 1024)
		return mfs_op_fail(ctx, EINVAL, "bad gram lengths or skip count");
	/* Validate the pool layout: ngram_counts are increasing starts. */
	int64_t ngrams = 0;
	for (int64_t k = 0; k < t->n_counts; k++) {
		int64_t b = t->counts[k], e = k + 1 < t->n_counts ? t->counts[k + 1] : t->n_pool;
		if (b < 0 || e < b || e > t->n_pool || (e - b) % (k + 1))
			return mfs_op_fail(ctx, EINVAL, "ngram_counts do not fit the pool");
		ngrams += (e - b) / (k + 1);
	}
	if (ngrams != t->n_idx)
		return mfs_op_fail(ctx, EINVAL, "ngram_indexes must have one entry per n-gram");
	for (int64_t k = 0; k < t->n_idx; k++) {
		if (t->idx[k] < 0 || t->idx[k] >= OC_MAX_NUMEL)
			return mfs_op_fail(ctx, EINVAL, "ngram index %lld is invalid",
					   (long long)t->idx[k]);
		if (t->idx[k] + 1 > t->out_dim)
			t->out_dim = t->idx[k] + 1;
	}
	if (t->weights && (int64_t)t->n_weights < t->out_dim)
		return mfs_op_fail(ctx, EINVAL, "too few weights");
	return 0;
}

static int tfidf_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 1, true);
	tfidf t;
	int rc = tfidf_cfg(ctx, &t);
	mfs_shape s = ctx->in[0]->shape;

	if (rc)
		return rc;
	s.dims[s.rank - 1] = t.out_dim;
	oc_set_out(ctx, 0, MFS_DT_FLOAT, &s);
	return 0;
}

/* Output slot of the n-gram at row[pos], row[pos+step], ..., or -1. */
static int64_t lookup(const tfidf *t, const mfs_tensor *x, int64_t base, int64_t pos,
		      int64_t step, int64_t n)
{
	int64_t b = t->counts[n - 1], e = n < t->n_counts ? t->counts[n] : t->n_pool;
	int64_t first = 0;

	for (int64_t k = 0; k < n - 1; k++) {
		int64_t kb = t->counts[k], ke = t->counts[k + 1];
		first += (ke - kb) / (k + 1);
	}
	for (int64_t g = b, id = first; g < e; g += n, id++) {
		int64_t k = 0;
		while (k < n && t->pool[g + k] == mfs_tensor_get_i64(x, base + pos + k * step))
			k++;
		if (k == n)
			return t->idx[id];
	}
	return -1;
}

static int tfidf_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];
	float *y = ctx->out[0]->data;
	tfidf t;
	int rc = tfidf_cfg(ctx, &t);
	int64_t rows = x->shape.rank == 2 ? x->shape.dims[0] : 1;
	int64_t len = x->shape.dims[x->shape.rank - 1];

	if (rc)
		return rc;
	if (!rows || !t.out_dim)
		return 0;
	memset(y, 0, (size_t)(rows * t.out_dim) * sizeof(float));
	for (int64_t r = 0; r < rows; r++) {
		float *yr = y + r * t.out_dim;
		for (int64_t n = t.minn; n <= t.maxn; n++)
			/* Unigrams have no gaps to skip: count them once. */
			for (int64_t s = 0; s <= (n == 1 ? 0 : t.skip); s++)
				for (int64_t p = 0; p + (n - 1) * (s + 1) < len; p++) {
					int64_t o = lookup(&t, x, r * len, p, s + 1, n);
					if (o >= 0)
						yr[o] += 1;
				}
		for (int64_t o = 0; o < t.out_dim; o++) {
			float w = t.weights ? t.weights[o] : 1;
			if (t.mode == 1)
				yr[o] = yr[o] > 0 ? w : 0;
			else if (t.mode == 2)
				yr[o] *= w;
		}
	}
	return 0;
}

MFS_OP(TfIdfVectorizer, 9, .infer = tfidf_infer, .run = tfidf_run);

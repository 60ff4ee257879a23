/* generate_sampling.c - see generate_sampling.h. */
#include "generate_sampling.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mfs_gen_params_init(mfs_gen_params *p)
{
	memset(p, 0, sizeof(*p));
	p->max_tokens = 16;
	p->top_p = 1.0;
}

int mfs_gen_params_check(const mfs_gen_params *p, mfs_error *err)
{
	if (p->max_tokens < 1)
		return mfs_fail(err, EINVAL, "\"max_tokens\" must be at least 1");
	if (!(p->temperature >= 0) || isinf(p->temperature))
		return mfs_fail(err, EINVAL, "\"temperature\" must be a number from 0 (0: greedy)");
	if (p->top_k < 0)
		return mfs_fail(err, EINVAL, "\"top_k\" must be a whole number from 0 (0: every id)");
	if (!(p->top_p > 0 && p->top_p <= 1))
		return mfs_fail(err, EINVAL, "\"top_p\" must be in (0, 1]");
	return 0;
}

/* Whole numbers separated by blanks or commas; at most max. */
static int parse_ints(const char *text, size_t len, int64_t *out, int max, int *n)
{
	char buf[4096];
	if (len >= sizeof(buf))
		return -1;
	memcpy(buf, text, len);
	buf[len] = '\0';
	*n = 0;
	for (char *p = buf;;) {
		while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == ',')
			p++;
		if (!*p)
			return 0;
		char *end;
		errno = 0;
		long long v = strtoll(p, &end, 10);
		if (end == p || errno || *n >= max)
			return -1;
		out[(*n)++] = v;
		p = end;
	}
}

int mfs_gen_param_parse(mfs_gen_params *p, const char *name, const char *text, size_t len,
			mfs_error *err)
{
	static const char *const names[] = { "max_tokens", "temperature", "top_k", "top_p", "seed", "stop" };
	int which = -1;
	for (int i = 0; i < 6; i++)
		if (strcmp(name, names[i]) == 0)
			which = i;
	if (which < 0)
		return -ENOENT;
	if (which == 5) {
		if (parse_ints(text, len, p->stop, MFS_GEN_MAX_STOP, &p->n_stop) < 0)
			return mfs_fail(err, EINVAL, "'.stop': ids separated by blanks or commas, at most %d",
					MFS_GEN_MAX_STOP);
		return 0;
	}
	char buf[64];
	while (len && (text[len - 1] == '\n' || text[len - 1] == ' ' || text[len - 1] == '\r'))
		len--;
	if (len == 0 || len >= sizeof(buf))
		return mfs_fail(err, EINVAL, "'.%s': not a number", name);
	memcpy(buf, text, len);
	buf[len] = '\0';
	char *end;
	errno = 0;
	if (which == 1 || which == 3) {
		double d = strtod(buf, &end);
		if (*end || errno)
			return mfs_fail(err, EINVAL, "'.%s': not a number", name);
		*(which == 1 ? &p->temperature : &p->top_p) = d;
	} else {
		long long v = strtoll(buf, &end, 10);
		if (*end || errno || (which == 4 && v < 0))
			return mfs_fail(err, EINVAL, "'.%s': not a whole number%s", name,
					which == 4 ? " from 0" : "");
		if (which == 0)
			p->max_tokens = v;
		else if (which == 2)
			p->top_k = v;
		else
			p->seed = (uint64_t)v;
	}
	int rc = mfs_gen_params_check(p, err);
	if (rc < 0)
		mfs_error_prefix(err, "'.%s': ", name);
	return rc;
}

void mfs_gen_rng_seed(mfs_gen_rng *g, uint64_t seed)
{
	g->s = seed;
}

/* splitmix64 (Steele, Lea, Flood 2014). */
static uint64_t next64(mfs_gen_rng *g)
{
	uint64_t z = (g->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

double mfs_gen_rng_double(mfs_gen_rng *g)
{
	return (double)(next64(g) >> 11) * (1.0 / 9007199254740992.0);
}

size_t mfs_gen_scratch_bytes(int64_t n)
{
	return (size_t)n * (sizeof(int) + sizeof(float));
}

/* Descending by logit, the lower id first on a tie: a total order, so
 * the draw does not depend on qsort's algorithm. */
static int by_logit(const void *a, const void *b, void *ctx)
{
	const float *l = ctx;
	int i = *(const int *)a, j = *(const int *)b;
	if (l[i] != l[j])
		return l[i] > l[j] ? -1 : 1;
	return (i > j) - (i < j);
}

int64_t mfs_gen_sample(const float *logits, int64_t n, const mfs_gen_params *p,
		       mfs_gen_rng *rng, void *scratch)
{
	int64_t best = 0;
	for (int64_t i = 1; i < n; i++)
		if (logits[i] > logits[best])
			best = i;
	if (p->temperature <= 0 || n < 2)
		return best;
	int *idx = scratch;
	float *prob = (float *)(idx + n);
	for (int64_t i = 0; i < n; i++)
		idx[i] = (int)i;
	qsort_r(idx, (size_t)n, sizeof(int), by_logit, (void *)logits);
	int64_t keep = p->top_k > 0 && p->top_k < n ? p->top_k : n;
	double sum = 0, top = logits[idx[0]];
	for (int64_t i = 0; i < keep; i++) {
		prob[i] = (float)exp((logits[idx[i]] - top) / p->temperature);
		sum += prob[i];
	}
	if (p->top_p < 1) {
		double cum = 0;
		for (int64_t i = 0; i < keep; i++) {
			cum += prob[i] / sum;
			if (cum >= p->top_p) {
				keep = i + 1;
				break;
			}
		}
		sum = 0;
		for (int64_t i = 0; i < keep; i++)
			sum += prob[i];
	}
	double u = mfs_gen_rng_double(rng) * sum, acc = 0;
	for (int64_t i = 0; i < keep; i++) {
		acc += prob[i];
		if (u < acc)
			return idx[i];
	}
	return idx[keep - 1];
}

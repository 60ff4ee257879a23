/* warmup.c - see warmup.h. */
#include "warmup.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file_util.h"

/* A sample's file is at most what a request may be by default (1 GiB):
 * a bigger one is a mistake, not a sample. */
#define WARMUP_FILE_MAX ((size_t)1 << 30)

/* xorshift64: the same "random" sample on every load, so a load that
 * worked works again. */
static uint64_t next_random(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void fill_random(mfs_tensor *t, uint64_t seed)
{
	size_t n = mfs_dtype_size(t->dtype) ? t->nbytes / mfs_dtype_size(t->dtype) : 0;
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
	for (size_t i = 0; i < n; i++) {
		uint64_t r = next_random(&s);
		double u = (double)(r >> 11) / 9007199254740992.0;   /* [0, 1) */
		int64_t k = (int64_t)(r % 10);
		switch (t->dtype) {
		case MFS_DT_FLOAT: ((float *)t->data)[i] = (float)u; break;
		case MFS_DT_DOUBLE: ((double *)t->data)[i] = u; break;
		case MFS_DT_FLOAT16: ((uint16_t *)t->data)[i] = mfs_float_to_half((float)u); break;
		case MFS_DT_BFLOAT16: ((uint16_t *)t->data)[i] = mfs_float_to_bf16((float)u); break;
		case MFS_DT_BOOL: ((uint8_t *)t->data)[i] = (uint8_t)(r & 1); break;
		case MFS_DT_UINT8: case MFS_DT_INT8: ((uint8_t *)t->data)[i] = (uint8_t)k; break;
		case MFS_DT_UINT16: case MFS_DT_INT16: ((uint16_t *)t->data)[i] = (uint16_t)k; break;
		case MFS_DT_UINT32: case MFS_DT_INT32: ((uint32_t *)t->data)[i] = (uint32_t)k; break;
		case MFS_DT_UINT64: case MFS_DT_INT64: ((uint64_t *)t->data)[i] = (uint64_t)k; break;
		default: break;
		}
	}
}

static void dims_text(const int64_t *dims, int rank, char *buf, size_t size)
{
	size_t at = (size_t)snprintf(buf, size, "[");
	for (int d = 0; d < rank && at < size; d++)
		at += (size_t)snprintf(buf + at, size - at, "%s%" PRId64, d ? ", " : "", dims[d]);
	if (at < size)
		snprintf(buf + at, size - at, "]");
}

/* The sample's input wi, checked against config input ci, as the tensor
 * the request path would hand the engine. */
static int build_input(const mfs_model_config *c, const mfs_warmup *w, const mfs_warmup_input *wi,
		       int ci, const char *version_dir, uint64_t seed, mfs_tensor *t, mfs_error *err)
{
	const mfs_io_config *io = &c->inputs[ci];
	char want[160], got[160];
	if (wi->dtype != io->dtype)
		return mfs_fail(err, EINVAL, "warm-up sample '%s': input '%s' is %s, the model's is %s",
				w->name, wi->name, mfs_dtype_config_name(wi->dtype),
				mfs_dtype_config_name(io->dtype));
	bool fits = wi->rank == io->rank;
	for (int d = 0; fits && d < wi->rank; d++)
		fits = io->dims[d] < 0 || io->dims[d] == wi->dims[d];
	if (!fits) {
		dims_text(wi->dims, wi->rank, got, sizeof(got));
		dims_text(io->dims, io->rank, want, sizeof(want));
		return mfs_fail(err, EINVAL, "warm-up sample '%s': input '%s' has dims %s, the model's are %s%s",
				w->name, wi->name, got, want,
				c->max_batch_size > 0 ? " (without the batch dim: batch_size gives it)" : "");
	}
	mfs_shape request = { .rank = 0 };
	if (c->max_batch_size > 0)
		request.dims[request.rank++] = w->batch_size;
	for (int d = 0; d < wi->rank; d++)
		request.dims[request.rank++] = wi->dims[d];
	int rc = mfs_tensor_alloc(t, wi->dtype, &request, err);
	if (rc) {
		mfs_error_prefix(err, "warm-up sample '%s': input '%s': ", w->name, wi->name);
		return rc;
	}
	if (wi->data == MFS_WARMUP_RANDOM) {
		fill_random(t, seed);
	} else if (wi->data == MFS_WARMUP_FILE) {
		char path[PATH_MAX];
		char *buf = NULL;
		size_t len = 0;
		snprintf(path, sizeof(path), "%s/warmup/%s", version_dir, wi->file);
		rc = mfs_read_file(path, WARMUP_FILE_MAX, &buf, &len, err);
		if (rc) {
			mfs_error_prefix(err, "warm-up sample '%s': input '%s': input_data_file '%s': ",
					 w->name, wi->name, path);
			return rc;
		}
		/* Triton's rule: the file holds the whole batch's bytes. */
		if (len != t->nbytes) {
			free(buf);
			return mfs_fail(err, EINVAL,
					"warm-up sample '%s': input '%s': input_data_file '%s' holds %zu bytes, "
					"the sample needs %zu (%s, batch %d)", w->name, wi->name, path, len,
					t->nbytes, mfs_dtype_config_name(wi->dtype), w->batch_size);
		}
		memcpy(t->data, buf, len);
		free(buf);
	}
	mfs_shape model;
	rc = mfs_config_input_to_model(c, ci, &t->shape, &model, err);
	if (rc) {
		mfs_error_prefix(err, "warm-up sample '%s': input '%s': ", w->name, wi->name);
		return rc;
	}
	t->shape = model;
	return 0;
}

static int build_sample(const mfs_model_config *c, const mfs_graph *g, const mfs_warmup *w,
			const char *version_dir, uint64_t seed, mfs_warmup_sample *s, mfs_error *err)
{
	s->def = w;
	s->n_inputs = mfs_graph_n_inputs(g);
	s->inputs = calloc((size_t)s->n_inputs + 1, sizeof(*s->inputs));
	if (!s->inputs)
		return mfs_fail(err, ENOMEM, "out of memory");
	for (int k = 0; k < w->n_inputs; k++) {
		const mfs_warmup_input *wi = &w->inputs[k];
		int ci = mfs_config_find_input(c, wi->name);
		if (ci < 0 || c->inputs[ci].graph_index < 0 || c->inputs[ci].graph_index >= s->n_inputs) {
			char names[512] = "";
			for (int j = 0; j < c->n_inputs; j++) {
				size_t used = strlen(names);
				snprintf(names + used, sizeof(names) - used, "%s%s", j ? ", " : "",
					 c->inputs[j].name);
			}
			return mfs_fail(err, EINVAL, "warm-up sample '%s': the model has no input '%s' (inputs: %s)",
					w->name, wi->name, names);
		}
		int rc = build_input(c, w, wi, ci, version_dir, seed * 131 + (uint64_t)k,
				     &s->inputs[c->inputs[ci].graph_index], err);
		if (rc)
			return rc;
	}
	for (int i = 0; i < c->n_inputs; i++) {
		mfs_tensor *t = &s->inputs[c->inputs[i].graph_index];
		if (t->dtype != MFS_DT_UNDEFINED)
			continue;
		if (!c->inputs[i].optional)
			return mfs_fail(err, EINVAL, "warm-up sample '%s': input '%s' is missing (every required input needs a value)",
					w->name, c->inputs[i].name);
		/* An optional input left out: an empty tensor of its type, as
		 * `modelfs run` gives it, or where the graph stores a value
		 * for it (an initializer made an input), left to the engine. */
		if (c->inputs[i].has_default)
			continue;
		t->dtype = c->inputs[i].dtype;
		t->shape.rank = 1;
		t->shape.dims[0] = 0;
	}
	return 0;
}

void mfs_warmup_samples_free(mfs_warmup_sample *s, int n)
{
	for (int i = 0; s && i < n; i++) {
		for (int k = 0; s[i].inputs && k < s[i].n_inputs; k++)
			mfs_tensor_release(&s[i].inputs[k]);
		free(s[i].inputs);
	}
	free(s);
}

int mfs_warmup_prepare(const mfs_model_config *c, const mfs_graph *g, const char *version_dir,
		       mfs_warmup_sample **out, int *n, mfs_error *err)
{
	*out = NULL;
	*n = 0;
	if (c->n_warmups == 0)
		return 0;
	mfs_warmup_sample *s = calloc((size_t)c->n_warmups, sizeof(*s));
	if (!s)
		return mfs_fail(err, ENOMEM, "out of memory");
	for (int i = 0; i < c->n_warmups; i++) {
		int rc = build_sample(c, g, &c->warmups[i], version_dir, (uint64_t)i + 1, &s[i], err);
		if (rc) {
			mfs_warmup_samples_free(s, i + 1);
			return rc;
		}
	}
	*out = s;
	*n = c->n_warmups;
	return 0;
}

int mfs_warmup_run(mfs_exec *e, const mfs_graph *g, const mfs_warmup_sample *s, int n,
		   mfs_error *err)
{
	int n_out = mfs_graph_n_outputs(g);
	mfs_tensor *out = calloc((size_t)n_out + 1, sizeof(*out));
	if (!out)
		return mfs_fail(err, ENOMEM, "out of memory");
	int rc = 0;
	for (int i = 0; rc == 0 && i < n; i++)
		for (int r = 0; rc == 0 && r < s[i].def->count; r++) {
			rc = mfs_exec_run(e, s[i].inputs, out, err);
			if (rc)
				mfs_error_prefix(err, "warm-up sample '%s' failed: ", s[i].def->name);
			for (int k = 0; k < n_out; k++)
				mfs_tensor_release(&out[k]);
		}
	free(out);
	return rc;
}

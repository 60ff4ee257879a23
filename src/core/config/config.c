/* config.c - life cycle of mfs_model_config, the tensor specs and
 * reshapes a request sees, and the version policy.  Reading a config file
 * is config_file.c's (-> config_pbtxt.c / config_json.c ->
 * config_schema.c), auto-complete config_complete.c's, rendering
 * config_render.c's.  This file calls none of them: they use it. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"

void mfs_config_init(mfs_model_config *c)
{
	memset(c, 0, sizeof(*c));
	c->version_policy.kind = MFS_POLICY_LATEST;
	c->version_policy.num_versions = 1;
}

static void io_release(mfs_io_config *io, int n)
{
	for (int i = 0; i < n; i++) {
		free(io[i].name);
		free(io[i].label_filename);
	}
	free(io);
}

void mfs_config_release(mfs_model_config *c)
{
	if (!c)
		return;
	free(c->name);
	free(c->platform);
	free(c->backend);
	io_release(c->inputs, c->n_inputs);
	io_release(c->outputs, c->n_outputs);
	free(c->version_policy.versions);
	free(c->instance_groups);
	free(c->dynamic_batching.preferred_batch_size);
	free(c->dynamic_batching.level_policies);
	free(c->sequence_batching.preferred_batch_size);
	for (int i = 0; i < c->sequence_batching.n_controls; i++)
		free(c->sequence_batching.controls[i].name);
	free(c->sequence_batching.controls);
	for (int i = 0; i < c->sequence_batching.n_states; i++) {
		mfs_seq_state *s = &c->sequence_batching.states[i];
		free(s->input_name);
		free(s->output_name);
		free(s->init_name);
		free(s->init_file);
	}
	free(c->sequence_batching.states);
	free(c->default_model_filename);
	for (int i = 0; i < c->n_parameters; i++) {
		free(c->parameters[i].key);
		free(c->parameters[i].value);
	}
	free(c->parameters);
	for (int i = 0; i < c->n_steps; i++) {
		mfs_ensemble_step *st = &c->steps[i];
		free(st->model_name);
		for (int k = 0; k < st->n_input_map; k++) {
			free(st->input_map[k].key);
			free(st->input_map[k].value);
		}
		free(st->input_map);
		for (int k = 0; k < st->n_output_map; k++) {
			free(st->output_map[k].key);
			free(st->output_map[k].value);
		}
		free(st->output_map);
	}
	free(c->steps);
	for (int i = 0; i < c->n_warmups; i++) {
		for (int k = 0; k < c->warmups[i].n_inputs; k++) {
			free(c->warmups[i].inputs[k].name);
			free(c->warmups[i].inputs[k].file);
		}
		free(c->warmups[i].inputs);
		free(c->warmups[i].name);
	}
	free(c->warmups);
	mfs_config_init(c);
}

bool mfs_config_is_ensemble(const mfs_model_config *c)
{
	return c->platform && strcmp(c->platform, "ensemble") == 0;
}

const char *mfs_io_format_name(mfs_io_format f)
{
	switch (f) {
	case MFS_FORMAT_NHWC: return "FORMAT_NHWC";
	case MFS_FORMAT_NCHW: return "FORMAT_NCHW";
	case MFS_FORMAT_NONE: break;
	}
	return "FORMAT_NONE";
}

/* ---- what a request sees ---- */

static void io_spec(const mfs_model_config *c, const mfs_io_config *io,
		    mfs_tensor_spec *spec)
{
	int b = c->max_batch_size > 0 ? 1 : 0;

	memset(spec, 0, sizeof(*spec));
	spec->name = io->name;
	spec->dtype = io->dtype;
	if (io->rank < 0 || io->rank + b > MFS_MAX_RANK) {
		spec->rank = -1;
		return;
	}
	spec->rank = io->rank + b;
	if (b)
		spec->dims[0] = -1;
	for (int d = 0; d < io->rank; d++)
		spec->dims[b + d] = io->dims[d];
}

void mfs_config_input_spec(const mfs_model_config *c, int i,
			   struct mfs_tensor_spec *spec)
{
	io_spec(c, &c->inputs[i], spec);
}

void mfs_config_output_spec(const mfs_model_config *c, int i,
			    struct mfs_tensor_spec *spec)
{
	io_spec(c, &c->outputs[i], spec);
}

/* Replace the dims after the batch prefix of `in` (whose non-batch part
 * must match `from`) by `to` (rank to_rank, at most one -1, inferred). */
static int swap_dims(const char *what, const char *name, int batch,
		     const mfs_shape *in, const int64_t *to, int to_rank,
		     mfs_shape *out, mfs_error *err)
{
	int64_t count = 1, known = 1;
	int unknown = -1;

	if (in->rank < batch || batch + to_rank > MFS_MAX_RANK)
		return mfs_fail(err, EINVAL, "%s '%s': rank %d cannot be reshaped",
				what, name, in->rank);
	for (int d = batch; d < in->rank; d++) {
		if (in->dims[d] < 0)
			return mfs_fail(err, EINVAL, "%s '%s': unknown dim to reshape",
					what, name);
		if (in->dims[d] && count > INT64_MAX / in->dims[d])
			return mfs_fail(err, EINVAL, "%s '%s': too many elements",
					what, name);
		count *= in->dims[d];
	}
	out->rank = batch + to_rank;
	for (int d = 0; d < batch; d++)
		out->dims[d] = in->dims[d];
	for (int d = 0; d < to_rank; d++) {
		out->dims[batch + d] = to[d];
		if (to[d] < 0) {
			if (unknown >= 0)
				return mfs_fail(err, EINVAL,
						"%s '%s': reshape has more than one -1",
						what, name);
			unknown = batch + d;
		} else {
			if (to[d] && known > INT64_MAX / to[d])
				return mfs_fail(err, EINVAL, "%s '%s': too many elements",
						what, name);
			known *= to[d];
		}
	}
	if (unknown >= 0) {
		if (known == 0 || count % known != 0)
			return mfs_fail(err, EINVAL,
					"%s '%s': %lld elements do not fit the reshape",
					what, name, (long long)count);
		out->dims[unknown] = count / known;
	} else if (known != count) {
		return mfs_fail(err, EINVAL,
				"%s '%s': %lld elements, the reshape needs %lld",
				what, name, (long long)count, (long long)known);
	}
	return 0;
}

int mfs_config_input_to_model(const mfs_model_config *c, int i,
			      const mfs_shape *request, mfs_shape *model,
			      mfs_error *err)
{
	const mfs_io_config *io = &c->inputs[i];

	if (!io->has_reshape) {
		*model = *request;
		return 0;
	}
	return swap_dims("input", io->name, c->max_batch_size > 0 ? 1 : 0,
			 request, io->reshape, io->reshape_rank, model, err);
}

int mfs_config_check_batch(const mfs_model_config *c, int i, const mfs_shape *request,
			   mfs_error *err)
{
	if (c->max_batch_size > 0 && request->rank > 0 && request->dims[0] > c->max_batch_size)
		return mfs_fail(err, EINVAL, "input '%s': batch of %lld exceeds max_batch_size %d",
				c->inputs[i].name, (long long)request->dims[0], c->max_batch_size);
	return 0;
}

int mfs_config_output_from_model(const mfs_model_config *c, int i,
				 const mfs_shape *model, mfs_shape *request,
				 mfs_error *err)
{
	const mfs_io_config *io = &c->outputs[i];

	if (!io->has_reshape) {
		*request = *model;
		return 0;
	}
	return swap_dims("output", io->name, c->max_batch_size > 0 ? 1 : 0,
			 model, io->dims, io->rank, request, err);
}

static int find_io(const mfs_io_config *io, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (io[i].name && strcmp(io[i].name, name) == 0)
			return i;
	return -1;
}

int mfs_config_find_input(const mfs_model_config *c, const char *name)
{
	return find_io(c->inputs, c->n_inputs, name);
}

int mfs_config_find_output(const mfs_model_config *c, const char *name)
{
	return find_io(c->outputs, c->n_outputs, name);
}

/* ---- version policy ---- */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

int mfs_config_apply_version_policy(const mfs_model_config *c,
				    int64_t *versions, int n)
{
	int kept = 0;

	if (n <= 0)
		return 0;
	qsort(versions, (size_t)n, sizeof(*versions), cmp_i64);
	switch (c->version_policy.kind) {
	case MFS_POLICY_ALL:
		return n;
	case MFS_POLICY_LATEST: {
		int keep = c->version_policy.num_versions;
		if (keep < 1)
			keep = 1;
		if (keep >= n)
			return n;
		memmove(versions, versions + (n - keep), (size_t)keep * sizeof(*versions));
		return keep;
	}
	case MFS_POLICY_SPECIFIC:
		for (int i = 0; i < n; i++)
			for (int j = 0; j < c->version_policy.n_versions; j++)
				if (versions[i] == c->version_policy.versions[j]) {
					versions[kept++] = versions[i];
					break;
				}
		return kept;
	}
	return n;
}

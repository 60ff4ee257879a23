/* config_schema_warmup.c - model_warmup (config_schema.c's table):
 * the samples a version runs before it is READY (warmup.h runs them);
 * each input's data is zeros, random or a file in warmup/.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "config_fields.h"

/* model_warmup [ { name batch_size count inputs { key: "IN" value {
 *     data_type dims zero_data | random_data | input_data_file } } } ] */

static int wi_data_type(cfg_conv *cv, const cfg_node *n, void *obj)
{
	mfs_dtype dtype = MFS_DT_UNDEFINED;
	int rc = cfg_get_data_type(cv, n, &dtype);
	((mfs_warmup_input *)obj)->dtype = dtype;
	return rc;
}

static int wi_dims(cfg_conv *cv, const cfg_node *n, void *obj)
{
	mfs_warmup_input *wi = obj;
	int64_t v;

	/* A sample is one concrete tensor: no variable dims. */
	if (cfg_get_i64(cv, n, 1, INT64_MAX, &v))
		return -EINVAL;
	if (wi->rank == MFS_MAX_RANK)
		return cfg_fail_at(cv, n, "dims: more than %d dims", MFS_MAX_RANK);
	wi->dims[wi->rank++] = v;
	return 0;
}

static int wi_zero(cfg_conv *cv, const cfg_node *n, void *obj)
{
	bool on = false;
	(void)obj;   /* MFS_WARMUP_ZERO is the zero value: nothing to set */
	return cfg_get_bool(cv, n, &on);
}

static int wi_random(cfg_conv *cv, const cfg_node *n, void *obj)
{
	bool on = false;
	if (cfg_get_bool(cv, n, &on))
		return -EINVAL;
	if (on)
		((mfs_warmup_input *)obj)->data = MFS_WARMUP_RANDOM;
	return 0;
}

static int wi_file(cfg_conv *cv, const cfg_node *n, void *obj)
{
	mfs_warmup_input *wi = obj;
	char *f = NULL;

	if (cfg_get_string(cv, n, &f))
		return -EINVAL;
	if (!f)
		return 0;
	if (strchr(f, '/') || strcmp(f, ".") == 0 || strcmp(f, "..") == 0) {
		int rc = cfg_fail_at(cv, n, "input_data_file '%s' must be a file name in the version's warmup/ folder, not a path", f);
		free(f);
		return rc;
	}
	free(wi->file);
	wi->file = f;
	wi->data = MFS_WARMUP_FILE;
	return 0;
}

static int wi_value(cfg_conv *cv, const cfg_node *n, void *obj)
{
	static const cfg_field_def defs[] = {
		{ "data_type", false, wi_data_type }, { "dims", true, wi_dims },
		{ "zero_data", false, wi_zero }, { "random_data", false, wi_random },
		{ "input_data_file", false, wi_file },
	};
	mfs_warmup_input *wi = obj;
	const char *name = wi->name ? wi->name : "?";
	/* Triton's oneof: exactly one of the three says where the data is. */
	int given = 0;
	for (int i = 0; n->kind == CFG_MESSAGE && i < n->n_children; i++) {
		const cfg_node *f = &n->children[i];
		if ((strcmp(f->name, "zero_data") == 0 || strcmp(f->name, "random_data") == 0 ||
		     strcmp(f->name, "input_data_file") == 0) && !cfg_is_zero(f, cv->json))
			given++;
	}
	int rc = cfg_conv_message(cv, n, "warm-up input", defs, N_OF(defs), NULL, obj);
	if (rc)
		return rc;
	if (given != 1)
		return cfg_fail_at(cv, n, "warm-up input '%s': give one of zero_data: true, random_data: true or input_data_file", name);
	if (wi->dtype == MFS_DT_UNDEFINED)
		return cfg_fail_at(cv, n, "warm-up input '%s': data_type is required", name);
	return 0;
}

static int wi_key(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return cfg_get_string(cv, n, &((mfs_warmup_input *)obj)->name);
}

static int mw_inputs(cfg_conv *cv, const cfg_node *n, void *obj)
{
	static const cfg_field_def defs[] = {
		{ "key", false, wi_key }, { "value", false, wi_value },
	};
	mfs_warmup *w = obj;
	mfs_warmup_input *grown, *wi;

	if (w->n_inputs >= 1024)
		return cfg_fail_at(cv, n, "too many warm-up inputs");
	grown = realloc(w->inputs, (size_t)(w->n_inputs + 1) * sizeof(*grown));
	if (!grown)
		return cfg_no_memory(cv);
	w->inputs = grown;
	wi = &grown[w->n_inputs++];
	memset(wi, 0, sizeof(*wi));
	int rc = cfg_conv_message(cv, n, "model_warmup inputs", defs, N_OF(defs), NULL, wi);
	if (rc)
		return rc;
	if (!wi->name)
		return cfg_fail_at(cv, n, "warm-up input without a key (the model input's name)");
	for (int i = 0; i < w->n_inputs - 1; i++)
		if (strcmp(grown[i].name, wi->name) == 0)
			return cfg_fail_at(cv, n, "warm-up input '%s' given twice", wi->name);
	return 0;
}

static int mw_name(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return cfg_get_string(cv, n, &((mfs_warmup *)obj)->name);
}

static int mw_batch_size(cfg_conv *cv, const cfg_node *n, void *obj)
{
	return cfg_get_int(cv, n, 0, INT32_MAX, &((mfs_warmup *)obj)->batch_size);
}

static int mw_count(cfg_conv *cv, const cfg_node *n, void *obj)
{
	/* A bound against a typo that would hold a load for hours. */
	return cfg_get_int(cv, n, 0, 10000, &((mfs_warmup *)obj)->count);
}

int cfg_model_warmup(cfg_conv *cv, const cfg_node *n, void *obj)
{
	static const cfg_field_def defs[] = {
		{ "name", false, mw_name }, { "batch_size", false, mw_batch_size },
		{ "inputs", true, mw_inputs }, { "count", false, mw_count },
	};
	mfs_model_config *c = obj;
	mfs_warmup *grown, *w;

	if (c->n_warmups >= 256)
		return cfg_fail_at(cv, n, "too many warm-up samples");
	grown = realloc(c->warmups, (size_t)(c->n_warmups + 1) * sizeof(*grown));
	if (!grown)
		return cfg_no_memory(cv);
	c->warmups = grown;
	w = &grown[c->n_warmups++];
	memset(w, 0, sizeof(*w));
	int rc = cfg_conv_message(cv, n, "model_warmup", defs, N_OF(defs), NULL, w);
	if (rc)
		return rc;
	if (!w->name)
		return cfg_fail_at(cv, n, "model_warmup without a name (messages name the sample)");
	if (w->n_inputs == 0)
		return cfg_fail_at(cv, n, "model_warmup '%s' has no inputs", w->name);
	if (w->batch_size == 0)
		w->batch_size = 1;
	if (w->count == 0)
		w->count = 1;
	for (int i = 0; i < c->n_warmups - 1; i++)
		if (strcmp(grown[i].name, w->name) == 0)
			return cfg_fail_at(cv, n, "model_warmup '%s' given twice", w->name);
	return 0;
}

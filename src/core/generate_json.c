/* generate_json.c - the generate file's JSON request (generate.h). */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "generate.h"

static int int_array(json_t *a, const char *key, int64_t *out, size_t max, size_t *n, mfs_error *err)
{
	if (!json_is_array(a))
		return mfs_fail(err, EINVAL, "\"%s\" must be an array of whole numbers", key);
	if (json_array_size(a) > max)
		return mfs_fail(err, EINVAL, "\"%s\" has more than %zu ids", key, max);
	size_t i;
	json_t *v;
	json_array_foreach(a, i, v) {
		if (!json_is_integer(v))
			return mfs_fail(err, EINVAL, "\"%s\"[%zu] is not a whole number", key, i);
		out[i] = json_integer_value(v);
	}
	*n = json_array_size(a);
	return 0;
}

static int number(json_t *v, const char *key, bool whole, double *out, mfs_error *err)
{
	if (whole ? !json_is_integer(v) : !json_is_number(v))
		return mfs_fail(err, EINVAL, "\"%s\" must be a %s", key, whole ? "whole number" : "number");
	*out = json_number_value(v);
	return 0;
}

static int member(const char *key, json_t *v, int64_t **prompt, int64_t *n, mfs_gen_params *p,
		  mfs_error *err)
{
	double d = 0;
	size_t k;
	int rc = 0;
	if (strcmp(key, "input_ids") == 0) {
		size_t max = json_is_array(v) ? json_array_size(v) : 0;
		if (!(*prompt = malloc((max ? max : 1) * sizeof(int64_t))))
			return mfs_fail(err, ENOMEM, "out of memory");
		rc = int_array(v, key, *prompt, max, &k, err);
		*n = (int64_t)k;
	} else if (strcmp(key, "stop") == 0) {
		rc = int_array(v, key, p->stop, MFS_GEN_MAX_STOP, &k, err);
		p->n_stop = (int)k;
	} else if (strcmp(key, "stream") == 0) {
		if (!json_is_boolean(v))
			return mfs_fail(err, EINVAL, "\"stream\" must be true or false");
		p->stream = json_is_true(v);
	} else if (strcmp(key, "max_tokens") == 0 || strcmp(key, "top_k") == 0 || strcmp(key, "seed") == 0) {
		if ((rc = number(v, key, true, &d, err)) == 0) {
			int64_t x = json_integer_value(v);
			if (key[0] == 'm')
				p->max_tokens = x;
			else if (key[0] == 't')
				p->top_k = x;
			else if (x < 0)
				rc = mfs_fail(err, EINVAL, "\"seed\" must be a whole number from 0");
			else
				p->seed = (uint64_t)x;
		}
	} else if (strcmp(key, "temperature") == 0 || strcmp(key, "top_p") == 0) {
		if ((rc = number(v, key, false, &d, err)) == 0)
			*(key[0] == 't' ? &p->temperature : &p->top_p) = d;
	} else {
		rc = mfs_fail(err, EINVAL, "unknown key \"%s\" (input_ids, max_tokens, temperature, top_k, "
			      "top_p, seed, stop, stream)", key);
	}
	return rc;
}

int mfs_gen_parse_json(const char *text, size_t len, int64_t **prompt, int64_t *n,
		       mfs_gen_params *p, mfs_error *err)
{
	json_error_t je;
	*prompt = NULL;
	*n = 0;
	mfs_gen_params_init(p);
	json_t *root = json_loadb(text, len, 0, &je);
	if (!root)
		return mfs_fail(err, EINVAL, "request is not JSON: %s (line %d)", je.text, je.line);
	int rc = 0;
	if (!json_is_object(root))
		rc = mfs_fail(err, EINVAL, "request must be a JSON object with \"input_ids\"");
	const char *key;
	json_t *v;
	json_object_foreach(root, key, v) {
		if (rc == 0)
			rc = member(key, v, prompt, n, p, err);
	}
	json_decref(root);
	if (rc == 0 && *n == 0)
		rc = mfs_fail(err, EINVAL, "request has no \"input_ids\" (a non-empty array of ids)");
	if (rc == 0)
		rc = mfs_gen_params_check(p, err);
	if (rc < 0) {
		free(*prompt);
		*prompt = NULL;
	}
	return rc;
}

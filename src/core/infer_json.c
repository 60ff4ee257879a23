/* infer_json.c - see infer_json.h. */
#include "infer_json.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"

void mfs_infer_req_release(mfs_infer_req *req)
{
	for (int i = 0; req->inputs && i < req->n_inputs; i++)
		mfs_tensor_release(&req->inputs[i]);
	free(req->inputs);
	free(req->want);
	free(req->id);
	memset(req, 0, sizeof(*req));
}

static int config_input(const mfs_model_config *c, const char *name)
{
	for (int i = 0; i < c->n_inputs; i++)
		if (strcmp(c->inputs[i].name, name) == 0)
			return i;
	return -1;
}

static int config_output(const mfs_model_config *c, const char *name)
{
	for (int i = 0; i < c->n_outputs; i++)
		if (strcmp(c->outputs[i].name, name) == 0)
			return i;
	return -1;
}

static bool binary_requested(json_t *obj)
{
	json_t *p = json_object_get(obj, "parameters");
	return json_is_true(json_object_get(p, "binary_data")) ||
	       json_object_get(p, "binary_data_size") != NULL;
}

int mfs_infer_parse(const mfs_model_config *cfg, const char *text,
		    size_t len, mfs_infer_req *out, mfs_error *err)
{
	json_error_t jerr;
	int rc = 0;
	memset(out, 0, sizeof(*out));
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return mfs_fail(err, EINVAL, "request is not JSON: %s (line %d, column %d)",
				jerr.text, jerr.line, jerr.column);
	out->n_inputs = cfg->n_inputs;
	out->n_outputs = cfg->n_outputs;
	out->inputs = calloc((size_t)cfg->n_inputs + 1, sizeof(mfs_tensor));
	out->want = calloc((size_t)cfg->n_outputs + 1, sizeof(bool));
	if (!out->inputs || !out->want) {
		rc = mfs_fail(err, ENOMEM, "out of memory");
		goto out;
	}
	if (!json_is_object(root)) {
		rc = mfs_fail(err, EINVAL, "request must be a JSON object with \"inputs\"");
		goto out;
	}
	json_t *id = json_object_get(root, "id");
	if (json_is_string(id) && !(out->id = strdup(json_string_value(id)))) {
		rc = mfs_fail(err, ENOMEM, "out of memory");
		goto out;
	}
	json_t *inputs = json_object_get(root, "inputs");
	if (!json_is_array(inputs)) {
		rc = mfs_fail(err, EINVAL, "request has no \"inputs\" array");
		goto out;
	}
	size_t i;
	json_t *in;
	json_array_foreach(inputs, i, in) {
		const char *name = json_string_value(json_object_get(in, "name"));
		if (!name) {
			rc = mfs_fail(err, EINVAL, "inputs[%zu] has no \"name\"", i);
			goto out;
		}
		int idx = config_input(cfg, name);
		if (idx < 0) {
			rc = mfs_fail(err, ENOENT, "model '%s' has no input named '%s'", cfg->name, name);
			goto out;
		}
		if (out->inputs[idx].dtype != MFS_DT_UNDEFINED) {
			rc = mfs_fail(err, EINVAL, "input '%s' is given twice", name);
			goto out;
		}
		if (binary_requested(in) || !json_object_get(in, "data")) {
			rc = mfs_fail(err, EINVAL, "input '%s': only JSON \"data\" is supported (no binary extension)", name);
			goto out;
		}
		/* Hand the tensor object to the .json codec: one set of rules
		 * for files and for this file. */
		char *obj = json_dumps(in, JSON_COMPACT);
		if (!obj) {
			rc = mfs_fail(err, ENOMEM, "out of memory");
			goto out;
		}
		mfs_tensor_spec spec;
		mfs_config_input_spec(cfg, idx, &spec);
		rc = mfs_tensor_decode(MFS_FMT_JSON, obj, strlen(obj), &spec, &out->inputs[idx], err);
		free(obj);
		if (rc < 0)
			goto out;
	}
	json_t *outputs = json_object_get(root, "outputs");
	if (outputs && !json_is_array(outputs)) {
		rc = mfs_fail(err, EINVAL, "\"outputs\" must be an array");
		goto out;
	}
	if (!outputs || json_array_size(outputs) == 0) {
		for (int k = 0; k < cfg->n_outputs; k++)
			out->want[k] = true;
	} else {
		json_t *o;
		json_array_foreach(outputs, i, o) {
			const char *name = json_string_value(json_object_get(o, "name"));
			int idx = name ? config_output(cfg, name) : -1;
			if (idx < 0) {
				rc = mfs_fail(err, ENOENT, "model '%s' has no output named '%s'", cfg->name,
					      name ? name : "(none)");
				goto out;
			}
			if (binary_requested(o)) {
				rc = mfs_fail(err, EINVAL, "output '%s': binary data is not supported", name);
				goto out;
			}
			out->want[idx] = true;
		}
	}
out:
	json_decref(root);
	if (rc < 0)
		mfs_infer_req_release(out);
	return rc;
}

char *mfs_infer_response(const mfs_model_config *cfg, const char *model,
			 int64_t version, const mfs_infer_req *req,
			 const mfs_tensor *const *outs, size_t *len,
			 mfs_error *err)
{
	char vbuf[32];
	snprintf(vbuf, sizeof(vbuf), "%" PRId64, version);
	json_t *root = json_pack("{s:s,s:s}", "model_name", model, "model_version", vbuf);
	json_t *arr = json_array();
	if (!root || !arr)
		goto oom;
	if (req->id)
		json_object_set_new(root, "id", json_string(req->id));
	for (int i = 0; i < cfg->n_outputs; i++) {
		if (!req->want[i])
			continue;
		char *buf = NULL;
		size_t n = 0;
		if (mfs_tensor_encode(MFS_FMT_JSON, outs[i], cfg->outputs[i].name, &buf, &n, err) < 0)
			goto fail;
		json_error_t jerr;
		json_t *t = json_loadb(buf, n, 0, &jerr);
		free(buf);
		if (!json_is_object(t)) {
			json_decref(t);
			mfs_fail(err, EIO, "output '%s': the JSON encoder gave no object", cfg->outputs[i].name);
			goto fail;
		}
		json_object_set_new(t, "name", json_string(cfg->outputs[i].name));
		json_array_append_new(arr, t);
	}
	json_object_set_new(root, "outputs", arr);
	arr = NULL;
	char *text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (!text) {
		mfs_fail(err, ENOMEM, "out of memory");
		return NULL;
	}
	size_t tl = strlen(text);
	char *t2 = realloc(text, tl + 2);
	if (!t2) {
		free(text);
		mfs_fail(err, ENOMEM, "out of memory");
		return NULL;
	}
	t2[tl] = '\n';
	t2[tl + 1] = '\0';
	*len = tl + 1;
	return t2;
oom:
	mfs_fail(err, ENOMEM, "out of memory");
fail:
	json_decref(arr);
	json_decref(root);
	return NULL;
}

char *mfs_infer_error_json(const char *msg, size_t *len)
{
	json_t *o = json_pack("{s:s}", "error", msg);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!text)
		return NULL;
	size_t tl = strlen(text);
	char *t2 = realloc(text, tl + 2);
	if (!t2) {
		free(text);
		return NULL;
	}
	t2[tl] = '\n';
	t2[tl + 1] = '\0';
	*len = tl + 1;
	return t2;
}

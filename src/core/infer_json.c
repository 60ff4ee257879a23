/* infer_json.c - see infer_json.h. */
#include "infer_json.h"

#include "classify.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "json_stream.h"

void mfs_infer_req_release(mfs_infer_req *req)
{
	for (int i = 0; req->inputs && i < req->n_inputs; i++)
		mfs_tensor_release(&req->inputs[i]);
	free(req->inputs);
	free(req->want);
	free(req->classify);
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

/* "parameters": {"binary_data": true} or a "binary_data_size" asks for
 * the binary extension, which is not served. */
static int binary_requested(mfs_jspan params, bool *yes, mfs_error *err)
{
	*yes = false;
	if (!params.p)
		return 0;
	json_t *p = mfs_json_load(params, "\"parameters\"", err);
	if (!p)
		return err->code == ENOMEM ? -ENOMEM : -EINVAL;
	*yes = json_is_true(json_object_get(p, "binary_data")) ||
	       json_object_get(p, "binary_data_size") != NULL;
	json_decref(p);
	return 0;
}

struct parse_ctx {
	const mfs_model_config *cfg;
	mfs_infer_req *out;
	mfs_jspan id, inputs, outputs, parameters;
	bool seen_params;
};

/* One of "inputs": a tensor object whose "data" is streamed into the
 * typed buffer by the .json codec's reader (json_stream.c): one set of
 * rules for files and for this file, and no document tree. */
static int parse_input(void *vctx, size_t i, mfs_jspan val, mfs_error *err)
{
	struct parse_ctx *ctx = vctx;
	const mfs_model_config *cfg = ctx->cfg;
	mfs_json_tensor parts;
	int rc;

	if (*val.p != '{')
		return mfs_fail(err, EINVAL, "inputs[%zu] is not an object", i);
	if ((rc = mfs_json_tensor_split(val, &parts, err)) < 0)
		return rc;
	if (!parts.name.p)
		return mfs_fail(err, EINVAL, "inputs[%zu] has no \"name\"", i);
	char name[256];
	if (!mfs_json_plain_string(parts.name, name, sizeof(name))) {
		json_t *jname = mfs_json_load(parts.name, "an input's \"name\"", err);
		if (!jname)
			return err->code == ENOMEM ? -ENOMEM : -EINVAL;
		if (!json_is_string(jname)) {
			json_decref(jname);
			return mfs_fail(err, EINVAL, "inputs[%zu] has no \"name\"", i);
		}
		snprintf(name, sizeof(name), "%s", json_string_value(jname));
		json_decref(jname);
	}
	int idx = config_input(cfg, name);
	if (idx < 0)
		return mfs_fail(err, ENOENT, "model '%s' has no input named '%s'", cfg->name, name);
	if (ctx->out->inputs[idx].dtype != MFS_DT_UNDEFINED)
		return mfs_fail(err, EINVAL, "input '%s' is given twice", name);
	bool binary;
	if ((rc = binary_requested(parts.parameters, &binary, err)))
		return rc;
	if (binary || !parts.data.p)
		return mfs_fail(err, EINVAL, "input '%s': only JSON \"data\" is supported (no binary extension)", name);
	mfs_tensor_spec spec;
	mfs_tensor *t = &ctx->out->inputs[idx], value;
	const mfs_io_config *io = &cfg->inputs[idx];
	if (io->kind != MFS_KIND_TENSOR && !(io->kind == MFS_KIND_OPTIONAL &&
					      io->elem_kind == MFS_KIND_TENSOR))
		return mfs_fail(err, ENOTSUP,
				"input '%s' is a sequence: the infer file carries tensors only (write %s.pb in a request directory)",
				name, name);
	mfs_config_input_spec(cfg, idx, &spec);
	/* BYTES: the .json codec's string reader takes the whole object */
	rc = spec.dtype == MFS_DT_STRING
		? mfs_tensor_decode(MFS_FMT_JSON, val.p, val.len, &spec, &value, err)
		: mfs_json_tensor_decode(&parts, &spec, &value, err);
	if (rc < 0) {
		if (spec.dtype != MFS_DT_STRING)   /* mfs_tensor_decode names it */
			mfs_error_prefix(err, "input '%s': ", name);
		return rc;
	}
	/* The check's message names the input itself. */
	if ((rc = mfs_tensor_check(&value, &spec, err)) < 0) {
		mfs_tensor_release(&value);
		return rc;
	}
	if (io->kind == MFS_KIND_TENSOR) {
		*t = value;
		return 0;
	}
	/* an optional given: it holds this tensor */
	if ((rc = mfs_container_init(t, MFS_KIND_OPTIONAL, MFS_KIND_TENSOR,
				     value.dtype, 1, err)) < 0) {
		mfs_tensor_release(&value);
		memset(t, 0, sizeof(*t));
		return rc;
	}
	t->items[0] = value;
	return 0;
}

static int request_member(void *vctx, const char *key, mfs_jspan val, mfs_error *err)
{
	struct parse_ctx *ctx = vctx;
	mfs_jspan *slot = strcmp(key, "id") == 0 ? &ctx->id :
			  strcmp(key, "inputs") == 0 ? &ctx->inputs :
			  strcmp(key, "outputs") == 0 ? &ctx->outputs :
			  strcmp(key, "parameters") == 0 ? &ctx->parameters : NULL;
	if (!slot)
		return 0;   /* what KServe may add */
	if (slot->p)
		return mfs_fail(err, EINVAL, "request is not JSON: duplicate key \"%s\"", key);
	*slot = val;
	return 0;
}

static int parse_outputs(struct parse_ctx *ctx, mfs_error *err)
{
	const mfs_model_config *cfg = ctx->cfg;
	json_t *outputs = NULL;
	int rc = 0;

	if (ctx->outputs.p && !(outputs = mfs_json_load(ctx->outputs, "\"outputs\"", err)))
		return err->code == ENOMEM ? -ENOMEM : -EINVAL;
	if (outputs && !json_is_array(outputs)) {
		rc = mfs_fail(err, EINVAL, "\"outputs\" must be an array");
	} else if (!outputs || json_array_size(outputs) == 0) {
		for (int k = 0; k < cfg->n_outputs; k++)
			ctx->out->want[k] = true;
	} else {
		size_t i;
		json_t *o;
		json_array_foreach(outputs, i, o) {
			const char *name = json_string_value(json_object_get(o, "name"));
			int idx = name ? config_output(cfg, name) : -1;
			if (idx < 0) {
				rc = mfs_fail(err, ENOENT, "model '%s' has no output named '%s'", cfg->name,
					      name ? name : "(none)");
				break;
			}
			json_t *p = json_object_get(o, "parameters");
			if (json_is_true(json_object_get(p, "binary_data")) ||
			    json_object_get(p, "binary_data_size")) {
				rc = mfs_fail(err, EINVAL, "output '%s': binary data is not supported", name);
				break;
			}
			json_t *k = json_object_get(p, "classification");
			if (k) {
				const mfs_io_config *io = &cfg->outputs[idx];
				if (!json_is_integer(k) || json_integer_value(k) < 1) {
					rc = mfs_fail(err, EINVAL, "output '%s': \"classification\" must be a "
						      "positive integer", name);
					break;
				}
				rc = mfs_classify_check(name, io->dtype,
							io->rank + (cfg->max_batch_size > 0), err);
				if (rc)
					break;
				ctx->out->classify[idx] = json_integer_value(k);
			}
			ctx->out->want[idx] = true;
		}
	}
	json_decref(outputs);
	return rc;
}

/* "sequence_id" (a number from 1 or a string), "sequence_start" and
 * "sequence_end" (booleans): Triton's sequence parameters. */
static int parse_sequence(json_t *p, mfs_seq_params *seq, mfs_error *err)
{
	json_t *id = json_object_get(p, "sequence_id");
	const char *flags[] = { "sequence_start", "sequence_end" };
	bool *dest[] = { &seq->start, &seq->end };
	char num[32];
	if (id && json_is_integer(id) && json_integer_value(id) > 0) {
		snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(id));
		if (mfs_seq_parse_id("parameter \"sequence_id\"", num, strlen(num), &seq->id, err) < 0)
			return -EINVAL;
	} else if (id && json_is_string(id)) {
		if (mfs_seq_parse_id("parameter \"sequence_id\"", json_string_value(id),
				     json_string_length(id), &seq->id, err) < 0)
			return -EINVAL;
	} else if (id) {
		return mfs_fail(err, EINVAL, "parameter \"sequence_id\" must be a number from 1 or a string");
	}
	for (int i = 0; i < 2; i++) {
		json_t *v = json_object_get(p, flags[i]);
		if (v && !json_is_boolean(v))
			return mfs_fail(err, EINVAL, "parameter \"%s\" must be true or false", flags[i]);
		*dest[i] = v && json_is_true(v);
	}
	return 0;
}

/* The request's "parameters": Triton's "priority" and "timeout" (µs),
 * whole numbers from 0, and the sequence's; other keys are KServe's or a
 * client's own. */
static int parse_parameters(struct parse_ctx *ctx, mfs_error *err)
{
	static const char *const keys[] = { "priority", "timeout" };
	int64_t *dest[] = { &ctx->out->priority, &ctx->out->timeout_us };
	if (!ctx->parameters.p)
		return 0;
	json_t *p = mfs_json_load(ctx->parameters, "\"parameters\"", err);
	if (!p)
		return err->code == ENOMEM ? -ENOMEM : -EINVAL;
	int rc = 0;
	if (!json_is_object(p))
		rc = mfs_fail(err, EINVAL, "\"parameters\" must be an object");
	for (int i = 0; rc == 0 && i < 2; i++) {
		json_t *v = json_object_get(p, keys[i]);
		if (!v)
			continue;
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			rc = mfs_fail(err, EINVAL, "parameter \"%s\" must be a whole number from 0", keys[i]);
		else
			*dest[i] = json_integer_value(v);
	}
	if (rc == 0)
		rc = parse_sequence(p, &ctx->out->seq, err);
	json_decref(p);
	return rc;
}

int mfs_infer_parse(const mfs_model_config *cfg, const char *text,
		    size_t len, mfs_infer_req *out, mfs_error *err)
{
	struct parse_ctx ctx = { .cfg = cfg, .out = out };
	mfs_jspan doc = mfs_jspan_doc(text, len);
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = mfs_json_value(&doc, err)) < 0) {
		mfs_error_prefix(err, "request is not JSON: ");
		return rc;
	}
	out->n_inputs = cfg->n_inputs;
	out->n_outputs = cfg->n_outputs;
	out->inputs = calloc((size_t)cfg->n_inputs + 1, sizeof(mfs_tensor));
	out->want = calloc((size_t)cfg->n_outputs + 1, sizeof(bool));
	out->classify = calloc((size_t)cfg->n_outputs + 1, sizeof(int64_t));
	if (!out->inputs || !out->want || !out->classify) {
		rc = mfs_fail(err, ENOMEM, "out of memory");
		goto out;
	}
	if (*doc.p != '{') {
		rc = mfs_fail(err, EINVAL, "request must be a JSON object with \"inputs\"");
		goto out;
	}
	if ((rc = mfs_json_members(doc, request_member, &ctx, err)) < 0)
		goto out;
	if (ctx.id.p) {
		json_t *id = mfs_json_load(ctx.id, "\"id\"", err);
		if (!id) {
			rc = err->code == ENOMEM ? -ENOMEM : -EINVAL;
			goto out;
		}
		if (json_is_string(id) && !(out->id = strdup(json_string_value(id))))
			rc = mfs_fail(err, ENOMEM, "out of memory");
		json_decref(id);
		if (rc < 0)
			goto out;
	}
	if ((rc = parse_parameters(&ctx, err)) < 0)
		goto out;
	if (!ctx.inputs.p || *ctx.inputs.p != '[') {
		rc = mfs_fail(err, EINVAL, "request has no \"inputs\" array");
		goto out;
	}
	if ((rc = mfs_json_elements(ctx.inputs, parse_input, &ctx, err)) < 0)
		goto out;
	rc = parse_outputs(&ctx, err);
out:
	if (rc < 0)
		mfs_infer_req_release(out);
	return rc;
}

char *mfs_infer_response(const mfs_model_config *cfg, const char *model,
			 int64_t version, const mfs_infer_req *req,
			 const mfs_tensor *const *outs, const mfs_labels *const *labels,
			 size_t *len, mfs_error *err)
{
	/* Spliced from the .json encoder's objects (each already starts with
	 * its "name"): a document tree of a large output would cost 25-30x
	 * its text (issue 17).  The first object's buffer grows to hold the
	 * whole response, so the peak is about one copy of the text. */
	char *head = NULL, *qm = mfs_json_quoted(model), *qid = req->id ? mfs_json_quoted(req->id) : NULL;
	char **enc = calloc((size_t)cfg->n_outputs + 1, sizeof(char *));
	size_t *elen = calloc((size_t)cfg->n_outputs + 1, sizeof(size_t));
	char *text = NULL;
	size_t total, hl;
	int n = 0;

	if (!qm || (req->id && !qid) || !enc || !elen) {
		mfs_fail(err, ENOMEM, "out of memory");
		goto out;
	}
	if (asprintf(&head, "{\"model_name\":%s,\"model_version\":\"%" PRId64 "\",%s%s%s\"outputs\":[",
		     qm, version, qid ? "\"id\":" : "", qid ? qid : "", qid ? "," : "") < 0) {
		head = NULL;
		mfs_fail(err, ENOMEM, "out of memory");
		goto out;
	}
	hl = strlen(head);
	total = hl + 3;   /* "]}\n" */
	for (int i = 0; i < cfg->n_outputs; i++) {
		const mfs_tensor *o = outs[i];
		if (!req->want[i])
			continue;
		if (o->kind == MFS_KIND_OPTIONAL && o->elem_kind == MFS_KIND_TENSOR) {
			if (!o->n_items)
				continue;   /* no value: left out of "outputs" */
			o = &o->items[0];
		}
		if (o->kind != MFS_KIND_TENSOR) {
			mfs_fail(err, ENOTSUP,
				 "output '%s' is a sequence: the infer file carries tensors only (read %s.pb in a request directory)",
				 cfg->outputs[i].name, cfg->outputs[i].name);
			goto out;
		}
		if (req->classify[i] ?
		    mfs_classify_json(o, cfg->outputs[i].name, req->classify[i],
				      labels ? labels[i] : NULL, &enc[n], &elen[n], err) < 0 :
		    mfs_tensor_encode(MFS_FMT_JSON, o, cfg->outputs[i].name, &enc[n],
				      &elen[n], err) < 0)
			goto out;
		while (elen[n] && enc[n][elen[n] - 1] == '\n')
			elen[n]--;
		total += elen[n] + (n ? 1 : 0);
		n++;
	}
	if (n == 0) {
		text = malloc(total + 1);
		if (text)
			memcpy(text, head, hl);
	} else if ((text = realloc(enc[0], total + 1))) {
		enc[0] = NULL;
		memmove(text + hl, text, elen[0]);
		memcpy(text, head, hl);
	}
	if (!text) {
		mfs_fail(err, ENOMEM, "out of memory");
		goto out;
	}
	size_t at = hl + (n ? elen[0] : 0);
	for (int k = 1; k < n; k++) {
		text[at++] = ',';
		memcpy(text + at, enc[k], elen[k]);
		at += elen[k];
	}
	memcpy(text + at, "]}\n", 4);
	*len = at + 3;
out:
	for (int k = 0; enc && k < n; k++)
		free(enc[k]);
	free(enc);
	free(elen);
	free(head);
	free(qm);
	free(qid);
	return text;
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

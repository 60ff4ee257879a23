/* model_load.c - read a model's config, compile one version's graph, and
 * complete the config from it (model_load.h).  Every message starts with
 * the model (and version) so that a log line or `modelfs run`'s one line
 * says which model failed, then names the file. */
#include "model_load.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "repo.h"

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int mfs_load_config(const char *repo_root, const char *model_name,
		    mfs_model_config *cfg, mfs_error *err)
{
	static const char *const names[] = { "config.pbtxt", "config.json" };
	char path[4096];
	struct stat st;
	int rc;

	mfs_config_init(cfg);
	if (!mfs_repo_model_name_ok(model_name))
		return mfs_fail(err, ENOENT, "'%s' is not a model name", model_name);
	snprintf(path, sizeof(path), "%s/%s", repo_root, model_name);
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
		return mfs_fail(err, ENOENT, "model '%s': no such model in %s",
				model_name, repo_root);
	/* config.pbtxt first: it is the file Triton reads. */
	for (size_t i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s/%s", repo_root, model_name, names[i]);
		if (stat(path, &st) != 0)
			continue;
		rc = mfs_config_load_file(path, cfg, err);
		if (rc)
			mfs_error_prefix(err, "model '%s': ", model_name);
		return rc;
	}
	return 0;   /* no config: everything comes from the graph */
}

void mfs_loaded_version_free(mfs_loaded_version *v)
{
	if (!v)
		return;
	free(v->model_name);
	free(v->model_path);
	free(v->version_dir);
	free(v->backend_library);
	for (int i = 0; v->labels && i < v->config.n_outputs; i++)
		mfs_labels_free(v->labels[i]);
	free(v->labels);
	mfs_config_release(&v->config);
	mfs_graph_free(v->graph);
	free(v);
}

/* Every output's label_filename, from the model directory (Triton's
 * place for it: shared by the versions). */
static int load_labels(mfs_loaded_version *v, const char *repo_root, mfs_error *err)
{
	const mfs_model_config *c = &v->config;

	v->labels = calloc((size_t)c->n_outputs + 1, sizeof(*v->labels));
	if (!v->labels)
		return mfs_fail(err, ENOMEM, "out of memory");
	for (int i = 0; i < c->n_outputs; i++) {
		char *path;
		int rc;

		if (!c->outputs[i].label_filename)
			continue;
		if (asprintf(&path, "%s/%s/%s", repo_root, v->model_name,
			     c->outputs[i].label_filename) < 0)
			return mfs_fail(err, ENOMEM, "out of memory");
		rc = mfs_labels_load(path, &v->labels[i], err);
		free(path);
		if (rc) {
			mfs_error_prefix(err, "model '%s' version %lld: output '%s': ", v->model_name,
					 (long long)v->version, c->outputs[i].name);
			return rc;
		}
	}
	return 0;
}

/* A custom backend's library: the version directory first (a model may
 * carry its own build), then --backend-dir. */
static int find_backend_library(mfs_loaded_version *v, const char *backend_dir,
				mfs_error *err)
{
	char *file = NULL, *path = NULL;
	int rc = 0;

	if (asprintf(&file, "libmodelfs_%s.so", v->config.backend) < 0)
		return mfs_fail(err, ENOMEM, "out of memory");
	if (asprintf(&path, "%s/%s", v->version_dir, file) < 0)
		path = NULL;
	else if (access(path, F_OK) != 0 && backend_dir) {
		free(path);
		if (asprintf(&path, "%s/%s", backend_dir, file) < 0)
			path = NULL;
	}
	if (!path)
		rc = mfs_fail(err, ENOMEM, "out of memory");
	else if (access(path, F_OK) != 0)
		rc = mfs_fail(err, ENOENT, "model '%s' version %lld: backend '%s': %s is not in %s%s%s",
			      v->model_name, (long long)v->version, v->config.backend, file,
			      v->version_dir, backend_dir ? " nor in --backend-dir " : " and no --backend-dir is set",
			      backend_dir ? backend_dir : "");
	if (rc == 0)
		v->backend_library = path;
	else
		free(path);
	free(file);
	return rc;
}

static int load_custom_backend(mfs_loaded_version *v, const char *backend_dir,
			       mfs_error *err)
{
	int rc = mfs_config_complete_declared(&v->config, v->model_name, err);

	if (rc) {
		mfs_error_prefix(err, "model '%s' version %lld: ", v->model_name,
				 (long long)v->version);
		return rc;
	}
	return find_backend_library(v, backend_dir, err);
}

/* An ensemble: a pipeline of other models, no file and no graph of its
 * own (ensemble_plan.h checks its steps). */
static int load_ensemble(mfs_loaded_version *v, mfs_error *err)
{
	int rc = mfs_config_complete_ensemble(&v->config, v->model_name, err);

	if (rc)
		mfs_error_prefix(err, "model '%s' version %lld: ", v->model_name,
				 (long long)v->version);
	return rc;
}

/* The version's ONNX file, compiled, and the config completed from it. */
static int load_onnx(mfs_loaded_version *v, mfs_error *err)
{
	const char *file = v->config.default_model_filename ?
			   v->config.default_model_filename : "model.onnx";
	const char *name = v->model_name;
	long long version = (long long)v->version;
	char label[160];
	struct stat st;
	int rc;

	if (asprintf(&v->model_path, "%s/%s", v->version_dir, file) < 0) {
		v->model_path = NULL;
		return mfs_fail(err, ENOMEM, "out of memory");
	}
	if (stat(v->model_path, &st) != 0) {
		int e = errno;
		return mfs_fail(err, ENOENT, "model '%s' version %lld: %s: %s", name,
				version, v->model_path, strerror(e));
	}
	snprintf(label, sizeof(label), "%s v%lld", name, version);
	/* The config's inputs: an initializer among them becomes an input
	 * (Triton's L0_initializer_as_input; completion checks the rest). */
	const char **inputs = calloc((size_t)v->config.n_inputs + 1, sizeof(*inputs));
	if (!inputs)
		return mfs_fail(err, ENOMEM, "out of memory");
	for (int i = 0; i < v->config.n_inputs; i++)
		inputs[i] = v->config.inputs[i].name;
	rc = mfs_graph_load_inputs(v->model_path, label, inputs, v->config.n_inputs,
				   &v->graph, err);
	free(inputs);
	if (rc) {
		v->graph = NULL;
		/* Name the file unless the engine's message already does. */
		if (err && !strstr(err->msg, v->model_path))
			mfs_error_prefix(err, "model '%s' version %lld: %s: ", name,
					 version, file);
		else
			mfs_error_prefix(err, "model '%s' version %lld: ", name, version);
		return rc;
	}
	rc = mfs_config_complete(&v->config, name, v->graph, err);
	if (rc)
		mfs_error_prefix(err, "model '%s' version %lld: ", name, version);
	return rc;
}

int mfs_load_version(const char *repo_root, const char *model_name,
		     int64_t version, const char *backend_dir,
		     mfs_loaded_version **out, mfs_error *err)
{
	double t0 = now_seconds();
	mfs_loaded_version *v;
	int rc;

	*out = NULL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return mfs_fail(err, ENOMEM, "out of memory");
	mfs_config_init(&v->config);
	v->version = version;
	v->model_name = strdup(model_name);
	if (!v->model_name) {
		rc = mfs_fail(err, ENOMEM, "out of memory");
		goto fail;
	}
	rc = mfs_load_config(repo_root, model_name, &v->config, err);
	if (rc)
		goto fail;
	if (asprintf(&v->version_dir, "%s/%s/%lld", repo_root, model_name,
		     (long long)version) < 0) {
		v->version_dir = NULL;
		rc = mfs_fail(err, ENOMEM, "out of memory");
		goto fail;
	}
	if (mfs_config_is_ensemble(&v->config))
		rc = load_ensemble(v, err);
	else if (mfs_config_custom_backend(&v->config))
		rc = load_custom_backend(v, backend_dir, err);
	else
		rc = load_onnx(v, err);
	/* every kind of model may label its outputs */
	if (rc == 0)
		rc = load_labels(v, repo_root, err);
	if (rc)
		goto fail;
	v->load_seconds = now_seconds() - t0;
	*out = v;
	return 0;
fail:
	mfs_loaded_version_free(v);
	return rc;
}

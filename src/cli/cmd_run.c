/* cmd_run.c - `modelfs run`: one request without mounting (SPEC.md
 * section 1).
 *
 * Built on the daemon's parts, so that it checks what the daemon checks
 * with the same words: the daemon's command line (options.h: every
 * option that applies to one run, with the same meaning); the daemon's
 * registry (registry.h) loads the version (config, completion against
 * the graph, every validation, the engine choice, the warm-up, one
 * execution context or backend worker per instance, the queue); and the
 * request goes through that version's queue (scheduler.h), after the
 * checks the daemon makes on a request's inputs.  What is run's own:
 * picking the one version the repository would serve, reading NAME=FILE
 * by its extension, writing each output to DIR/OUTPUT.EXT.  Every
 * failure is one line, "modelfs run: <model>: <reason>", and exit status
 * 1 (2 for a command line that cannot be understood); --log-level adds
 * the daemon's log lines on stderr. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend_worker.h"
#include "cache_dir.h"
#include "codec.h"
#include "commands.h"
#include "config.h"
#include "device_router.h"
#include "engine.h"
#include "file_util.h"
#include "log.h"
#include "options.h"
#include "registry.h"
#include "repo.h"
#include "scheduler.h"

typedef struct run_args {
	mfs_options opts;            /* the daemon's options */
	mfs_run_options run;         /* run's own: target, --version, --out, --format, NAME=FILE */
	char *repo, *model;          /* from run.target */
	uint64_t input_bytes;        /* read so far, against --max-request-bytes */
} run_args;

static int usage_error(const char *msg)
{
	fprintf(stderr, "modelfs run: %s\nTry 'modelfs run --help'.\n", msg);
	return 2;
}

/* REPOSITORY/MODEL -> repo, model (trailing slashes ignored; no slash
 * means the model is in the current directory). */
static int split_target(run_args *a)
{
	const char *target = a->run.target;
	size_t len = strlen(target);
	const char *slash;
	char *t;

	while (len > 1 && target[len - 1] == '/')
		len--;
	t = strndup(target, len);
	if (!t)
		return -ENOMEM;
	slash = strrchr(t, '/');
	if (!slash) {
		a->repo = strdup(".");
		a->model = t;
	} else {
		a->model = strdup(slash + 1);
		a->repo = slash == t ? strdup("/") : strndup(t, (size_t)(slash - t));
		free(t);
	}
	return a->repo && a->model ? 0 : -ENOMEM;
}

static const char *file_ext(const char *path)
{
	const char *base = strrchr(path, '/'), *dot;

	base = base ? base + 1 : path;
	dot = strrchr(base, '.');
	return dot ? dot + 1 : "";
}

/* An input file, within what the daemon would take: the request's
 * inputs together at most --max-request-bytes, a .json one at most
 * --max-json-bytes. */
static int read_file(run_args *a, const char *path, char **buf, size_t *len, mfs_error *err)
{
	uint64_t room = a->opts.max_request_bytes - a->input_bytes;
	bool json = mfs_format_from_ext(file_ext(path)) == MFS_FMT_JSON;
	uint64_t limit = json && a->opts.max_json_bytes < room ? a->opts.max_json_bytes : room;
	int rc = mfs_read_file(path, limit > SIZE_MAX ? SIZE_MAX : (size_t)limit, buf, len, err);

	if (rc == -EFBIG && limit == room)
		rc = mfs_fail(err, EFBIG, "'%s' refused: the request would pass --max-request-bytes=%llu",
			      path, (unsigned long long)a->opts.max_request_bytes);
	else if (rc == -EFBIG)
		rc = mfs_fail(err, EFBIG, "'%s' refused: JSON text past --max-json-bytes=%llu",
			      path, (unsigned long long)a->opts.max_json_bytes);
	else if (rc < 0)
		mfs_error_prefix(err, "%s: ", path);
	else
		a->input_bytes += *len;
	return rc;
}

/* Write through a temporary name and rename, so a reader never sees half a
 * file and a failed run leaves no truncated output behind. */
static int write_file(const char *path, const char *buf, size_t len, mfs_error *err)
{
	char tmp[4200];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp-%ld", path, (long)getpid());
	f = fopen(tmp, "wb");
	if (!f)
		return mfs_fail(err, errno, "%s: %s", path, strerror(errno));
	if (fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
		unlink(tmp);
		return mfs_fail(err, EIO, "%s: write error", path);
	}
	if (rename(tmp, path) != 0) {
		int e = errno;
		unlink(tmp);
		return mfs_fail(err, e, "%s: %s", path, strerror(e));
	}
	return 0;
}

/* The format of an input file; of a sequence directory, that of its
 * first tensor (0.EXT). */
static int input_format(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *de;
	int fmt = -1;

	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
		return mfs_format_from_ext(file_ext(path));
	if (!(d = opendir(path)))
		return -1;
	while ((de = readdir(d)))
		if (strncmp(de->d_name, "0.", 2) == 0) {
			fmt = mfs_format_from_ext(file_ext(de->d_name));
			break;
		}
	closedir(d);
	return fmt;
}

/* The version to run: --version if the policy serves it, else the
 * highest it serves (the reloader's choice, reload/reloader.c).  An
 * ensemble is refused here: its steps are other models, which only the
 * daemon loads. */
static int pick_version(const run_args *a, int64_t *out, mfs_error *err)
{
	mfs_model_config cfg;
	mfs_repo_entry e;
	int64_t *all;
	int rc, n;
	char list[256] = "";

	rc = mfs_repo_scan_model(a->repo, a->model, &e, err);
	if (rc) {
		if (rc == -ENOENT)
			return mfs_fail(err, ENOENT, "no such model in %s", a->repo);
		return rc;
	}
	rc = mfs_load_config(a->repo, a->model, &cfg, err);
	if (rc) {
		mfs_repo_entry_release(&e);
		return rc;
	}
	if (mfs_config_is_ensemble(&cfg) || cfg.has_sequence_batching) {
		bool ens = mfs_config_is_ensemble(&cfg);
		mfs_repo_entry_release(&e);
		mfs_config_release(&cfg);
		return mfs_fail(err, EINVAL, "model '%s' is %s: `modelfs run` runs one request; mount the repository to run %s",
				a->model, ens ? "an ensemble" : "stateful (sequence_batching)",
				ens ? "an ensemble" : "its sequences");
	}
	if (e.n_versions == 0) {
		mfs_repo_entry_release(&e);
		mfs_config_release(&cfg);
		return mfs_fail(err, ENOENT, "no version directory (1, 2, ...) in %s/%s",
				a->repo, a->model);
	}
	/* The policy compacts in place: keep every version for messages. */
	all = malloc((size_t)e.n_versions * sizeof(*all));
	if (!all) {
		mfs_repo_entry_release(&e);
		mfs_config_release(&cfg);
		return mfs_fail(err, ENOMEM, "out of memory");
	}
	memcpy(all, e.versions, (size_t)e.n_versions * sizeof(*all));
	n = mfs_config_apply_version_policy(&cfg, e.versions, e.n_versions);
	for (int i = 0; i < n; i++) {
		size_t used = strlen(list);
		snprintf(list + used, sizeof(list) - used, "%s%lld", i ? ", " : "",
			 (long long)e.versions[i]);
	}
	rc = 0;
	if (n == 0) {
		rc = mfs_fail(err, ENOENT, "the version policy serves none of its versions");
	} else if (a->run.version == 0) {
		*out = e.versions[n - 1];
	} else {
		int64_t want = a->run.version;
		rc = mfs_fail(err, ENOENT, "no version %lld (versions: %s)", (long long)want, list);
		for (int i = 0; i < n; i++)
			if (e.versions[i] == want) {
				*out = want;
				rc = 0;
			}
		for (int i = 0; rc && i < e.n_versions; i++)
			if (all[i] == want)
				rc = mfs_fail(err, ENOENT,
					      "version %lld is not served by the version policy (served: %s)",
					      (long long)want, list);
	}
	free(all);
	mfs_repo_entry_release(&e);
	mfs_config_release(&cfg);
	return rc;
}

/* model_load's messages start "model 'm'[ version N]: "; the line already
 * names the model, so drop that part (keeping "version N: "). */
static const char *reason(const char *msg, const char *model)
{
	size_t n = strlen(model);

	if (strncmp(msg, "model '", 7) == 0 && strncmp(msg + 7, model, n) == 0 &&
	    msg[7 + n] == '\'') {
		const char *rest = msg + 8 + n;
		if (rest[0] == ':' && rest[1] == ' ')
			return rest + 2;
		if (rest[0] == ' ')
			return rest + 1;
	}
	return msg;
}

/* ---- sequences and optionals (SPEC.md section 6) ---- */

/* A directory of tensor files 0.EXT, 1.EXT, ... (each in its own format)
 * into a sequence of io's tensors. */
static int read_sequence_dir(run_args *a, const char *dir, const mfs_io_config *io,
			     mfs_tensor *t, mfs_error *err)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **names = NULL;
	int n = 0, rc = 0;

	if (!d)
		return mfs_fail(err, errno, "%s: %s", dir, strerror(errno));
	while (!rc && (de = readdir(d))) {
		char *end;
		long k;
		if (de->d_name[0] == '.')
			continue;
		k = strtol(de->d_name, &end, 10);
		if (end == de->d_name || *end != '.' || k < 0 || k > 100000) {
			rc = mfs_fail(err, EINVAL,
				      "%s: '%s' is not named INDEX.EXT (0.npy, 1.npy, ...)",
				      dir, de->d_name);
			break;
		}
		if (k >= n) {
			char **nn = realloc(names, (size_t)(k + 1) * sizeof(*nn));
			if (!nn) {
				rc = mfs_fail(err, ENOMEM, "out of memory");
				break;
			}
			memset(nn + n, 0, (size_t)(k + 1 - n) * sizeof(*nn));
			names = nn;
			n = (int)k + 1;
		}
		if (names[k]) {
			rc = mfs_fail(err, EINVAL, "%s: tensor %ld is given twice", dir, k);
			break;
		}
		if (!(names[k] = strdup(de->d_name)))
			rc = mfs_fail(err, ENOMEM, "out of memory");
	}
	closedir(d);
	for (int k = 0; !rc && k < n; k++)
		if (!names[k])
			rc = mfs_fail(err, EINVAL, "%s: tensor %d is missing (%d.EXT)", dir, k, k);
	if (!rc)
		rc = mfs_container_init(t, MFS_KIND_SEQUENCE, MFS_KIND_TENSOR, io->dtype,
					n, err);
	for (int k = 0; !rc && k < n; k++) {
		char path[4096], item[300], *buf;
		mfs_tensor_spec spec = { .name = item, .dtype = io->dtype, .rank = -1 };
		size_t len = 0;
		int fmt = mfs_format_from_ext(file_ext(names[k]));

		snprintf(path, sizeof(path), "%s/%s", dir, names[k]);
		snprintf(item, sizeof(item), "%s/%s", io->name, names[k]);
		if (fmt < 0) {
			rc = mfs_fail(err, EINVAL, "%s: unknown format '.%s'", path,
				      file_ext(names[k]));
			break;
		}
		if ((rc = read_file(a, path, &buf, &len, err)))
			break;
		rc = mfs_tensor_decode((mfs_format)fmt, buf, len, &spec, &t->items[k], err);
		free(buf);
		if (rc)
			mfs_error_prefix(err, "%s: ", path);
	}
	for (int k = 0; k < n; k++)
		free(names[k]);
	free(names);
	if (rc)
		mfs_tensor_release(t);
	return rc;
}

/* A sequence or optional input from path: a .pb file holds the ONNX
 * message (SequenceProto, OptionalProto); a directory is a sequence; a
 * tensor file is an optional's tensor. */
static int read_container(run_args *a, const char *path, const mfs_io_config *io,
			  mfs_tensor *t, mfs_error *err)
{
	mfs_kind want = io->kind == MFS_KIND_OPTIONAL ? io->elem_kind : io->kind;
	struct stat st;
	int rc;

	if (strcmp(file_ext(path), "pb") == 0 && stat(path, &st) == 0 &&
	    S_ISREG(st.st_mode)) {
		mfs_tensor like = { .kind = io->kind, .elem_kind = io->elem_kind,
				    .dtype = io->dtype };
		char *buf;
		size_t len = 0;
		if ((rc = read_file(a, path, &buf, &len, err)))
			return rc;
		rc = onnx_value_decode(buf, len, NULL, &like, t, err);
		free(buf);
		if (rc)
			mfs_error_prefix(err, "%s: ", path);
		return rc;
	}
	if (io->kind == MFS_KIND_OPTIONAL) {
		rc = mfs_container_init(t, MFS_KIND_OPTIONAL, io->elem_kind, io->dtype, 1,
					err);
		t = rc ? NULL : &t->items[0];
	} else {
		rc = 0;
	}
	if (!rc && want == MFS_KIND_SEQUENCE) {
		rc = read_sequence_dir(a, path, io, t, err);
	} else if (!rc) {
		mfs_tensor_spec spec = { .name = io->name, .dtype = io->dtype, .rank = -1 };
		int fmt = mfs_format_from_ext(file_ext(path));
		char *buf;
		size_t len = 0;
		if (fmt < 0)
			return mfs_fail(err, EINVAL, "%s: unknown format '.%s'", path,
					file_ext(path));
		if ((rc = read_file(a, path, &buf, &len, err)))
			return rc;
		rc = mfs_tensor_decode((mfs_format)fmt, buf, len, &spec, t, err);
		free(buf);
	}
	return rc;
}

/* NAME=FILE for a tensor input i of the config: decoded against the
 * config's spec, then the daemon's checks on a request's input (the
 * batch against max_batch_size, the reshape). */
static int decode_tensor(run_args *a, const mfs_model_config *c, int i, const char *file,
			 mfs_tensor *t, mfs_error *err)
{
	int fmt = mfs_format_from_ext(file_ext(file)), rc;
	mfs_tensor_spec spec;
	mfs_shape model_shape;
	char *buf;
	size_t len = 0;

	if (fmt < 0)
		return mfs_fail(err, EINVAL, "%s: unknown format '.%s' (npy, json, txt, raw, pb)",
				file, file_ext(file));
	rc = read_file(a, file, &buf, &len, err);
	if (rc)
		return rc;
	mfs_config_input_spec(c, i, &spec);
	rc = mfs_tensor_decode((mfs_format)fmt, buf, len, &spec, t, err);
	free(buf);
	if (rc) {
		memset(t, 0, sizeof(*t));
	} else {
		rc = mfs_config_check_batch(c, i, &t->shape, err);
		if (rc == 0)
			rc = mfs_config_input_to_model(c, i, &t->shape, &model_shape, err);
		if (rc == 0)
			t->shape = model_shape;
	}
	if (rc)
		mfs_error_prefix(err, "%s: ", file);
	return rc;
}

/* One NAME=FILE into inputs[] (indexed as the engine takes them). */
static int decode_input(run_args *a, const mfs_model_config *c, const char *arg,
			mfs_tensor *inputs, mfs_error *err)
{
	const char *file = strchr(arg, '=') + 1;
	char name[256];
	mfs_tensor *t;
	int i, rc;

	snprintf(name, sizeof(name), "%.*s", (int)(file - 1 - arg), arg);
	i = mfs_config_find_input(c, name);
	if (i < 0) {
		char names[512] = "";
		for (int j = 0; j < c->n_inputs; j++) {
			size_t used = strlen(names);
			snprintf(names + used, sizeof(names) - used, "%s%s", j ? ", " : "",
				 c->inputs[j].name);
		}
		return mfs_fail(err, ENOENT, "unknown input '%s' (inputs: %s)", name, names);
	}
	t = &inputs[c->inputs[i].graph_index];
	if (t->dtype != MFS_DT_UNDEFINED)
		return mfs_fail(err, EINVAL, "input '%s' given twice", name);
	if (c->inputs[i].kind == MFS_KIND_TENSOR)
		return decode_tensor(a, c, i, file, t, err);
	rc = read_container(a, file, &c->inputs[i], t, err);
	if (rc)
		mfs_tensor_release(t);
	return rc;
}

static int decode_inputs(run_args *a, const mfs_model_config *c, mfs_tensor *inputs,
			 mfs_error *err)
{
	for (int k = 0; k < a->run.n_inputs; k++) {
		int rc = decode_input(a, c, a->run.inputs[k], inputs, err);
		if (rc)
			return rc;
	}
	for (int i = 0; i < c->n_inputs; i++) {
		mfs_tensor *t = &inputs[c->inputs[i].graph_index];
		if (t->dtype != MFS_DT_UNDEFINED)
			continue;
		if (!c->inputs[i].optional)
			return mfs_fail(err, EINVAL, "missing input '%s' (give %s=FILE)",
					c->inputs[i].name, c->inputs[i].name);
		/* An optional input left out: an optional without a value,
		 * the stored value of an initializer made an input (left
		 * zeroed: the engine fills it), or an empty tensor of its type. */
		if (c->inputs[i].has_default)
			continue;
		if (c->inputs[i].kind == MFS_KIND_OPTIONAL) {
			int rc = mfs_container_init(t, MFS_KIND_OPTIONAL,
						    c->inputs[i].elem_kind,
						    c->inputs[i].dtype, 0, err);
			if (rc)
				return rc;
			continue;
		}
		t->dtype = c->inputs[i].dtype;
		t->shape.rank = 1;
		t->shape.dims[0] = 0;
	}
	return 0;
}

static int write_tensor(const char *dir, const char *name, const mfs_tensor *t,
			mfs_format fmt, mfs_error *err)
{
	char path[4096], *buf;
	size_t len;
	int rc = mfs_tensor_encode(fmt, t, name, &buf, &len, err);

	if (rc)
		return rc;
	snprintf(path, sizeof(path), "%s/%s.%s", dir, name, mfs_format_ext(fmt));
	rc = write_file(path, buf, len, err);
	free(buf);
	return rc;
}

/* A sequence or optional output (SPEC.md section 6): as .pb, its ONNX
 * message in NAME.pb; else a sequence is the directory NAME/ of 0.EXT,
 * 1.EXT, ... (stale higher numbers removed), an optional its value's
 * form, or nothing when it has none (a stale NAME.EXT is removed). */
static int write_container(const char *dir, const char *name, const mfs_tensor *t,
			   mfs_format fmt, mfs_error *err)
{
	char path[4096];
	int rc = 0;

	if (fmt == MFS_FMT_PB) {
		void *buf;
		size_t len;
		if ((rc = onnx_value_encode(t, name, &buf, &len, err)))
			return rc;
		snprintf(path, sizeof(path), "%s/%s.pb", dir, name);
		rc = write_file(path, buf, len, err);
		free(buf);
		return rc;
	}
	if (t->kind == MFS_KIND_OPTIONAL) {
		if (t->n_items)
			return t->items[0].kind == MFS_KIND_TENSOR
			       ? write_tensor(dir, name, &t->items[0], fmt, err)
			       : write_container(dir, name, &t->items[0], fmt, err);
		snprintf(path, sizeof(path), "%s/%s.%s", dir, name, mfs_format_ext(fmt));
		unlink(path);
		return 0;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (mkdir(path, 0777) != 0 && errno != EEXIST)
		return mfs_fail(err, errno, "%s: %s", path, strerror(errno));
	for (int k = 0; !rc && k < t->n_items; k++) {
		char item[32];
		snprintf(item, sizeof(item), "%d", k);
		rc = write_tensor(path, item, &t->items[k], fmt, err);
	}
	for (int k = t->n_items; !rc; k++) {
		char stale[4200];
		snprintf(stale, sizeof(stale), "%s/%d.%s", path, k, mfs_format_ext(fmt));
		if (unlink(stale) != 0)
			break;
	}
	return rc;
}

static int write_outputs(const run_args *a, const mfs_model_config *c,
			 const mfs_tensor *outputs, mfs_format fmt, mfs_error *err)
{
	const char *dir = a->run.out_dir ? a->run.out_dir : ".";

	if (a->run.out_dir) {
		/* mkdir -p */
		char path[4096];
		snprintf(path, sizeof(path), "%s", dir);
		for (char *p = path + 1; ; p++) {
			if (*p != '/' && *p != '\0')
				continue;
			char saved = *p;
			*p = '\0';
			if (mkdir(path, 0777) != 0 && errno != EEXIST)
				return mfs_fail(err, errno, "%s: %s", path, strerror(errno));
			*p = saved;
			if (!saved)
				break;
		}
	}
	for (int i = 0; i < c->n_outputs; i++) {
		mfs_tensor t = outputs[c->outputs[i].graph_index];
		int rc;

		if (strchr(c->outputs[i].name, '/') || strcmp(c->outputs[i].name, ".") == 0 ||
		    strcmp(c->outputs[i].name, "..") == 0)
			return mfs_fail(err, EINVAL, "output '%s' cannot be a file name",
					c->outputs[i].name);
		if (t.kind != MFS_KIND_TENSOR) {
			rc = write_container(dir, c->outputs[i].name, &t, fmt, err);
			if (rc)
				return rc;
			continue;
		}
		rc = mfs_config_output_from_model(c, i, &outputs[c->outputs[i].graph_index].shape,
						  &t.shape, err);
		if (rc)
			return rc;
		t.owns_data = false;
		rc = write_tensor(dir, c->outputs[i].name, &t, fmt, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- the run: the daemon's registry and queue ---- */

typedef struct one_job {
	mfs_job job;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
} one_job;

static void job_done(mfs_job *job)
{
	one_job *j = job->arg;
	pthread_mutex_lock(&j->lock);
	j->done = true;
	pthread_cond_signal(&j->cond);
	pthread_mutex_unlock(&j->lock);
}

/* The request through the version's queue, as the daemon's requests go
 * (scheduler.h: its checks, its instance, a custom backend's worker). */
static int run_job(mfs_version *v, const mfs_tensor *inputs, mfs_tensor *outputs,
		   mfs_error *err)
{
	one_job j = { .job = { .inputs = inputs, .outputs = outputs, .done = job_done } };
	int rc;

	j.job.arg = &j;
	pthread_mutex_init(&j.lock, NULL);
	pthread_cond_init(&j.cond, NULL);
	rc = mfs_sched_submit(v->queue, &j.job, err);
	if (rc == 0) {
		pthread_mutex_lock(&j.lock);
		while (!j.done)
			pthread_cond_wait(&j.cond, &j.lock);
		pthread_mutex_unlock(&j.lock);
		rc = j.job.status;
		if (rc)
			*err = j.job.err;
	}
	pthread_mutex_destroy(&j.lock);
	pthread_cond_destroy(&j.cond);
	return rc;
}

/* Inputs decoded, run, outputs written, for a served version. */
static int run_version(run_args *a, mfs_version *v, int fmt, mfs_error *err)
{
	const mfs_model_config *c = v->config;
	mfs_tensor *inputs = calloc((size_t)v->n_graph_inputs + 1, sizeof(*inputs));
	mfs_tensor *outputs = calloc((size_t)v->n_graph_outputs + 1, sizeof(*outputs));
	bool ran = false;
	int rc;

	if (!inputs || !outputs)
		rc = mfs_fail(err, ENOMEM, "out of memory");
	else
		rc = decode_inputs(a, c, inputs, err);
	if (rc == 0) {
		rc = run_job(v, inputs, outputs, err);
		ran = rc == 0;
		if (rc)
			mfs_error_prefix(err, "version %lld: ", (long long)v->version);
	}
	if (rc == 0)
		rc = write_outputs(a, c, outputs, (mfs_format)fmt, err);
	for (int i = 0; inputs && i < v->n_graph_inputs; i++)
		mfs_tensor_release(&inputs[i]);
	for (int i = 0; ran && i < v->n_graph_outputs; i++)
		mfs_tensor_release(&outputs[i]);
	free(inputs);
	free(outputs);
	return rc;
}

/* The daemon's start-up, cut to one model: the compute thread and the
 * registry as cmd_mount.c makes them, the one version loaded by
 * mfs_registry_load_version (every check, the same messages). */
static int load_and_run(run_args *a, int64_t version, int fmt, mfs_error *err)
{
	char repo[PATH_MAX];
	mfs_sched *sched = NULL;
	mfs_registry *reg = NULL;
	mfs_version *v = NULL;
	int threads = a->opts.threads > 0 ? a->opts.threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
	int rc;

	if (!realpath(a->repo, repo))
		return mfs_fail(err, errno, "%s: %s", a->repo, strerror(errno));
	mfs_engine_set_threads(threads > 0 ? threads : 1);
	mfs_worker_set_timeouts(a->opts.backend_init_timeout_secs, a->opts.backend_exec_timeout_secs);
	mfs_config_set_default_max_batch_size(a->opts.default_max_batch_size);
	/* One request: one compute thread runs it. */
	rc = mfs_sched_new_with_init(1, mfs_engine_thread_warm, &sched, err);
	mfs_registry_conf conf = { .repository = repo, .sched = sched,
				   .route = { .device = a->opts.device,
					      .opencl_device = a->opts.opencl_device },
				   .backend_dir = a->opts.backend_dir };
	if (rc == 0)
		rc = mfs_registry_new(&conf, &reg, err);
	if (rc == 0)
		rc = mfs_registry_load_version(reg, a->model, version, err);
	if (rc == 0)
		rc = mfs_registry_get(reg, a->model, version, &v, err);
	if (rc == 0) {
		mfs_log_debug("model '%s' version %lld: running on %s (%s)", a->model,
			      (long long)version, v->device, v->placement.note);
		rc = run_version(a, v, fmt, err);
		mfs_version_put(v);
	}
	if (sched)
		mfs_sched_stop(sched, 0);
	mfs_registry_free(reg);
	mfs_sched_free(sched);
	mfs_router_shutdown();     /* after every engine context is gone */
	return rc;
}

static int run(run_args *a, mfs_error *err)
{
	int64_t version = 0;
	const char *first = a->run.n_inputs ? strchr(a->run.inputs[0], '=') + 1 : NULL;
	int fmt, rc;

	fmt = a->run.format ? mfs_format_from_ext(a->run.format)
			    : first ? input_format(first) : MFS_FMT_NPY;
	if (fmt < 0)
		return mfs_fail(err, EINVAL, "%s: unknown format '.%s' (npy, json, txt, raw, pb)",
				first, file_ext(first));
	if (!mfs_repo_model_name_ok(a->model))
		return mfs_fail(err, EINVAL, "'%s' is not a model name ([A-Za-z0-9._-], not starting with '.')",
				a->model);
	rc = pick_version(a, &version, err);
	if (rc)
		return rc;
	return load_and_run(a, version, fmt, err);
}

int mfs_cmd_run(int argc, char **argv)
{
	run_args a = { 0 };
	mfs_error err;
	int rc;

	mfs_error_clear(&err);
	mfs_options_init_run(&a.opts, &a.run);
	if (mfs_options_parse_run(&a.opts, &a.run, argc, argv, &err) < 0) {
		if (err.code == ENOMEM)
			fprintf(stderr, "modelfs run: %s\n", err.msg);
		rc = err.code == ENOMEM ? 1 : usage_error(err.msg);
	} else if (a.opts.help) {
		fputs(mfs_options_run_usage(), stdout);
		rc = 0;
	} else if (a.opts.version) {
		printf("modelfs %s\n", MODELFS_VERSION);
		rc = 0;
	} else if (split_target(&a) != 0) {
		fprintf(stderr, "modelfs run: out of memory\n");
		rc = 1;
	} else {
		mfs_log_set_level((mfs_log_level)a.opts.log_level);
		mfs_cache_set_base(a.opts.cache_dir);
		rc = run(&a, &err) != 0;
		if (rc)
			fprintf(stderr, "modelfs run: %s: %s\n", a.model, reason(err.msg, a.model));
	}
	free(a.repo);
	free(a.model);
	mfs_run_options_release(&a.run);
	mfs_options_release(&a.opts);
	return rc;
}

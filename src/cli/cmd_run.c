/* cmd_run.c - `modelfs run`: one request without mounting (SPEC.md
 * section 1).  Load the version the repository would serve, decode each
 * NAME=FILE by its extension against the config in effect, run once on
 * the CPU engine, write each output to DIR/OUTPUT.EXT.  Every failure is
 * one line, "modelfs run: <model>: <reason>", and exit status 1 (2 for a
 * command line that cannot be understood). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codec.h"
#include "commands.h"
#include "config.h"
#include "engine.h"
#include "file_util.h"
#include "installed_backends.h"
#include "backend_worker.h"
#include "device_router.h"
#include "log.h"
#include "model_load.h"
#include "repo.h"
#include "warmup.h"

/* Inputs larger than this are refused (the daemon's --max-request-bytes
 * default). */
#define RUN_MAX_INPUT_BYTES (1ull << 30)

static const char usage_text[] =
	"usage: modelfs run REPOSITORY/MODEL [--version N] NAME=FILE... [--out DIR]\n"
	"                   [--format EXT] [--threads N] [--device cpu|opencl|auto]\n"
	"                   [--opencl-device N|TEXT] [--backend-dir DIR]\n"
	"\n"
	"Run MODEL of REPOSITORY once on the input files and write each output to\n"
	"DIR/OUTPUT.EXT, without mounting anything.\n"
	"\n"
	"  NAME=FILE      input NAME read from FILE; the extension names the format:\n"
	"                 .npy .json .txt .raw .pb (see SPEC.md section 6); a sequence\n"
	"                 input may be a directory of 0.EXT, 1.EXT, ...\n"
	"  --version N    run version N (default: the latest the version policy serves)\n"
	"  --out DIR      write outputs into DIR, created if missing (default: .)\n"
	"  --format EXT   write outputs as EXT (default: the first input's format)\n"
	"  --threads N    compute threads (default: the number of cores)\n"
	"  --device D     engine when the config's instance_group does not choose:\n"
	"                 cpu, opencl, or auto (time both, keep the faster; default)\n"
	"  --opencl-device N|TEXT  OpenCL device by index or name substring\n"
	"  --backend-dir DIR  where custom backends (libmodelfs_NAME.so) are looked for\n"
	"                 when not in the model's version directory (default: the\n"
	"                 installed BINDIR/../lib/modelfs/backends, if there is one)\n"
	"  -h, --help     show this text\n"
	"\n"
	"Exit status: 0 on success; 1 if the model or a file failed (one line on\n"
	"stderr says why); 2 for a bad command line.\n";

typedef struct run_args {
	const char *target;          /* REPOSITORY/MODEL as given */
	char *repo, *model;
	int64_t version;             /* 0 = the policy's latest */
	const char *out_dir;
	const char *format;
	int threads;
	mfs_route_opts route;        /* --device, --opencl-device */
	const char *backend_dir;     /* --backend-dir */
	const char **names, **files;
	int n_inputs;
} run_args;

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "modelfs run: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'modelfs run --help'.\n");
	return 2;
}

/* "--opt=value" or "--opt value": the value, advancing *i; NULL if absent. */
static const char *opt_value(int argc, char **argv, int *i, const char *opt)
{
	size_t n = strlen(opt);

	if (strncmp(argv[*i], opt, n) != 0)
		return NULL;
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (argv[*i][n] == '\0' && *i + 1 < argc)
		return argv[++*i];
	return NULL;
}

static bool is_opt(const char *arg, const char *opt)
{
	size_t n = strlen(opt);
	return strncmp(arg, opt, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

static bool parse_positive(const char *s, int64_t max, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s || *end || errno || v < 1 || v > max)
		return false;
	*out = v;
	return true;
}

static int parse_args(int argc, char **argv, run_args *a)
{
	const char *v;
	int64_t n;

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];

		if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
			fputs(usage_text, stdout);
			return 0;
		}
		if (is_opt(arg, "--version")) {
			if (!(v = opt_value(argc, argv, &i, "--version")) ||
			    !parse_positive(v, INT64_MAX, &a->version))
				return usage_error("--version needs a positive integer", NULL);
		} else if (is_opt(arg, "--out")) {
			if (!(v = opt_value(argc, argv, &i, "--out")) || !*v)
				return usage_error("--out needs a directory", NULL);
			a->out_dir = v;
		} else if (is_opt(arg, "--format")) {
			if (!(v = opt_value(argc, argv, &i, "--format")) ||
			    mfs_format_from_ext(v) < 0)
				return usage_error("--format needs one of npy, json, txt, raw, pb%s", "");
			a->format = v;
		} else if (is_opt(arg, "--device")) {
			if (!(v = opt_value(argc, argv, &i, "--device")))
				return usage_error("--device needs cpu, opencl or auto%s", "");
			if (!strcmp(v, "cpu"))
				a->route.device = MFS_DEVICE_CPU;
			else if (!strcmp(v, "opencl"))
				a->route.device = MFS_DEVICE_OPENCL;
			else if (!strcmp(v, "auto"))
				a->route.device = MFS_DEVICE_AUTO;
			else
				return usage_error("--device: expected cpu, opencl or auto, got '%s'", v);
		} else if (is_opt(arg, "--opencl-device")) {
			if (!(v = opt_value(argc, argv, &i, "--opencl-device")) || !*v)
				return usage_error("--opencl-device needs an index or a name%s", "");
			a->route.opencl_device = v;
		} else if (is_opt(arg, "--backend-dir")) {
			if (!(v = opt_value(argc, argv, &i, "--backend-dir")) || !*v)
				return usage_error("--backend-dir needs a directory%s", "");
			a->backend_dir = v;
		} else if (is_opt(arg, "--threads")) {
			if (!(v = opt_value(argc, argv, &i, "--threads")) ||
			    !parse_positive(v, 4096, &n))
				return usage_error("--threads needs a positive integer", NULL);
			a->threads = (int)n;
		} else if (arg[0] == '-' && arg[1] != '\0') {
			return usage_error("unknown option '%s'", arg);
		} else if (!a->target) {
			a->target = arg;
		} else {
			const char *eq = strchr(arg, '=');
			if (!eq || eq == arg || !eq[1])
				return usage_error("'%s' is not NAME=FILE", arg);
			a->names[a->n_inputs] = arg;
			a->files[a->n_inputs] = eq + 1;
			a->n_inputs++;
		}
	}
	if (!a->target)
		return usage_error("no REPOSITORY/MODEL given%s", "");
	return -1;   /* go on */
}

/* REPOSITORY/MODEL -> repo, model (trailing slashes ignored; no slash
 * means the model is in the current directory). */
static int split_target(run_args *a)
{
	size_t len = strlen(a->target);
	const char *slash;
	char *t;

	while (len > 1 && a->target[len - 1] == '/')
		len--;
	t = strndup(a->target, len);
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

static int read_file(const char *path, char **buf, size_t *len, mfs_error *err)
{
	int rc = mfs_read_file(path, RUN_MAX_INPUT_BYTES, buf, len, err);
	if (rc < 0)
		mfs_error_prefix(err, "%s: ", path);
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

static const char *file_ext(const char *path)
{
	const char *base = strrchr(path, '/'), *dot;

	base = base ? base + 1 : path;
	dot = strrchr(base, '.');
	return dot ? dot + 1 : "";
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
 * highest it serves. */
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
	} else if (a->version == 0) {
		*out = e.versions[n - 1];
	} else {
		rc = mfs_fail(err, ENOENT, "no version %lld (versions: %s)",
			      (long long)a->version, list);
		for (int i = 0; i < n; i++)
			if (e.versions[i] == a->version) {
				*out = a->version;
				rc = 0;
			}
		for (int i = 0; rc && i < e.n_versions; i++)
			if (all[i] == a->version)
				rc = mfs_fail(err, ENOENT,
					      "version %lld is not served by the version policy (served: %s)",
					      (long long)a->version, list);
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
static int read_sequence_dir(const char *dir, const mfs_io_config *io,
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
		if ((rc = read_file(path, &buf, &len, err)))
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
static int read_container(const char *path, const mfs_io_config *io,
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
		if ((rc = read_file(path, &buf, &len, err)))
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
		rc = read_sequence_dir(path, io, t, err);
	} else if (!rc) {
		mfs_tensor_spec spec = { .name = io->name, .dtype = io->dtype, .rank = -1 };
		int fmt = mfs_format_from_ext(file_ext(path));
		char *buf;
		size_t len = 0;
		if (fmt < 0)
			return mfs_fail(err, EINVAL, "%s: unknown format '.%s'", path,
					file_ext(path));
		if ((rc = read_file(path, &buf, &len, err)))
			return rc;
		rc = mfs_tensor_decode((mfs_format)fmt, buf, len, &spec, t, err);
		free(buf);
	}
	return rc;
}

static int decode_inputs(const run_args *a, const mfs_loaded_version *lv,
			 mfs_tensor *inputs, mfs_error *err)
{
	const mfs_model_config *c = &lv->config;

	for (int k = 0; k < a->n_inputs; k++) {
		size_t name_len = (size_t)(strchr(a->names[k], '=') - a->names[k]);
		char name[256];
		int i, fmt, rc;
		mfs_tensor_spec spec;
		mfs_shape model_shape;
		mfs_tensor *t;
		char *buf;
		size_t len = 0;

		snprintf(name, sizeof(name), "%.*s", (int)name_len, a->names[k]);
		i = mfs_config_find_input(c, name);
		if (i < 0) {
			char names[512] = "";
			for (int j = 0; j < c->n_inputs; j++) {
				size_t used = strlen(names);
				snprintf(names + used, sizeof(names) - used, "%s%s",
					 j ? ", " : "", c->inputs[j].name);
			}
			return mfs_fail(err, ENOENT, "unknown input '%s' (inputs: %s)",
					name, names);
		}
		t = &inputs[c->inputs[i].graph_index];
		if (t->dtype != MFS_DT_UNDEFINED)
			return mfs_fail(err, EINVAL, "input '%s' given twice", name);
		if (c->inputs[i].kind != MFS_KIND_TENSOR) {
			rc = read_container(a->files[k], &c->inputs[i], t, err);
			if (rc) {
				mfs_tensor_release(t);
				return rc;
			}
			continue;
		}
		fmt = mfs_format_from_ext(file_ext(a->files[k]));
		if (fmt < 0)
			return mfs_fail(err, EINVAL,
					"%s: unknown format '.%s' (npy, json, txt, raw, pb)",
					a->files[k], file_ext(a->files[k]));
		rc = read_file(a->files[k], &buf, &len, err);
		if (rc)
			return rc;
		mfs_config_input_spec(c, i, &spec);
		rc = mfs_tensor_decode((mfs_format)fmt, buf, len, &spec, t, err);
		free(buf);
		if (rc) {
			memset(t, 0, sizeof(*t));
			mfs_error_prefix(err, "%s: ", a->files[k]);
			return rc;
		}
		rc = mfs_config_input_to_model(c, i, &t->shape, &model_shape, err);
		if (rc) {
			mfs_error_prefix(err, "%s: ", a->files[k]);
			return rc;
		}
		t->shape = model_shape;
	}
	for (int i = 0; i < c->n_inputs; i++) {
		mfs_tensor *t = &inputs[c->inputs[i].graph_index];
		if (t->dtype != MFS_DT_UNDEFINED)
			continue;
		if (!c->inputs[i].optional)
			return mfs_fail(err, EINVAL, "missing input '%s' (give %s=FILE)",
					c->inputs[i].name, c->inputs[i].name);
		/* An optional input left out: an optional without a value, or
		 * an empty tensor of its type. */
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

static int write_outputs(const run_args *a, const mfs_loaded_version *lv,
			 const mfs_tensor *outputs, mfs_format fmt, mfs_error *err)
{
	const mfs_model_config *c = &lv->config;
	const char *dir = a->out_dir ? a->out_dir : ".";

	if (a->out_dir) {
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

/* A custom backend's one run: a worker process, as the daemon would use
 * (backend_worker.h), so a crashing backend is reported, not inherited. */
static int run_backend(const mfs_loaded_version *lv, const mfs_tensor *inputs,
		       mfs_tensor *outputs, mfs_error *err)
{
	mfs_worker_spec spec = {
		.program = "/proc/self/exe", .library = lv->backend_library,
		.model_name = lv->model_name, .version = lv->version,
		.version_dir = lv->version_dir, .instance = 0, .config = &lv->config,
	};
	mfs_worker *w;
	int rc = mfs_worker_new(&spec, &w, err);

	if (rc)
		return rc;
	rc = mfs_worker_run(w, inputs, outputs, err);
	mfs_worker_free(w);
	return rc;
}

static int run(const run_args *a, mfs_error *err)
{
	mfs_loaded_version *lv = NULL;
	mfs_tensor *inputs = NULL, *outputs = NULL;
	mfs_exec *ex = NULL;
	mfs_placement placement;
	int64_t version = 0;
	int n_in, n_out, fmt, rc, n_samples = 0;
	mfs_warmup_sample *samples = NULL;
	bool ran = false;

	fmt = a->format ? mfs_format_from_ext(a->format)
			: a->n_inputs ? input_format(a->files[0])
				      : MFS_FMT_NPY;
	if (fmt < 0)
		return mfs_fail(err, EINVAL, "%s: unknown format '.%s' (npy, json, txt, raw, pb)",
				a->files[0], file_ext(a->files[0]));
	rc = pick_version(a, &version, err);
	if (rc)
		return rc;
	if (a->threads > 0)
		mfs_engine_set_threads(a->threads);
	char *installed_backends = a->backend_dir ? NULL : mfs_installed_backend_dir();
	rc = mfs_load_version(a->repo, a->model, version,
			      a->backend_dir ? a->backend_dir : installed_backends, &lv, err);
	free(installed_backends);
	if (rc)
		return rc;
	if (mfs_config_is_ensemble(&lv->config)) {
		/* Its steps are other models, which only the daemon loads. */
		rc = mfs_fail(err, EINVAL, "model '%s' is an ensemble: `modelfs run` runs one model; mount the repository to run an ensemble",
			      a->model);
		mfs_loaded_version_free(lv);
		return rc;
	}
	/* A custom backend has no graph: its tensors are the config's. */
	n_in = lv->graph ? mfs_graph_n_inputs(lv->graph) : lv->config.n_inputs;
	n_out = lv->graph ? mfs_graph_n_outputs(lv->graph) : lv->config.n_outputs;
	inputs = calloc((size_t)n_in + 1, sizeof(*inputs));
	outputs = calloc((size_t)n_out + 1, sizeof(*outputs));
	if (!inputs || !outputs) {
		rc = mfs_fail(err, ENOMEM, "out of memory");
		goto out;
	}
	rc = decode_inputs(a, lv, inputs, err);
	if (rc)
		goto out;
	if (lv->backend_library) {
		rc = run_backend(lv, inputs, outputs, err);
		if (rc)
			goto out;
		ran = true;
		rc = write_outputs(a, lv, outputs, (mfs_format)fmt, err);
		goto out;
	}
	/* The model's warm-up (warmup.h) runs as in the daemon: a sample
	 * that fails fails the load here too. */
	rc = mfs_warmup_prepare(&lv->config, lv->graph, lv->version_dir, &samples, &n_samples, err);
	if (rc == 0)
		rc = mfs_route(lv->graph, &lv->config, &a->route, n_samples ? samples[0].inputs : NULL,
			       n_samples ? samples[0].def->name : NULL, &placement, err);
	if (rc == 0) {
		mfs_log_debug("model '%s': running on %s (%s)", a->model, placement.device,
			     placement.note);
		rc = mfs_exec_new(lv->graph, placement.backend, &ex, err);
	}
	if (rc == 0)
		rc = mfs_warmup_run(ex, lv->graph, samples, n_samples, err);
	if (rc == 0)
		rc = mfs_exec_run(ex, inputs, outputs, err);
	if (rc) {
		mfs_error_prefix(err, "version %lld: ", (long long)version);
		goto out;
	}
	ran = true;
	rc = write_outputs(a, lv, outputs, (mfs_format)fmt, err);
out:
	for (int i = 0; inputs && i < n_in; i++)
		mfs_tensor_release(&inputs[i]);
	for (int i = 0; ran && i < n_out; i++)
		mfs_tensor_release(&outputs[i]);
	free(inputs);
	free(outputs);
	mfs_warmup_samples_free(samples, n_samples);
	mfs_exec_free(ex);
	mfs_loaded_version_free(lv);
	mfs_router_shutdown();
	return rc;
}

int mfs_cmd_run(int argc, char **argv)
{
	run_args a = { 0 };
	mfs_error err;
	int rc;

	a.names = calloc((size_t)argc + 1, sizeof(*a.names));
	a.files = calloc((size_t)argc + 1, sizeof(*a.files));
	if (!a.names || !a.files) {
		fprintf(stderr, "modelfs run: out of memory\n");
		rc = 1;
		goto out;
	}
	rc = parse_args(argc, argv, &a);
	if (rc >= 0)
		goto out;
	if (split_target(&a) != 0) {
		fprintf(stderr, "modelfs run: out of memory\n");
		rc = 1;
		goto out;
	}
	mfs_error_clear(&err);
	if (run(&a, &err) != 0) {
		fprintf(stderr, "modelfs run: %s: %s\n", a.model, reason(err.msg, a.model));
		rc = 1;
	} else {
		rc = 0;
	}
out:
	free(a.names);
	free(a.files);
	free(a.repo);
	free(a.model);
	return rc;
}

/* options.c - see options.h.  Options may come before or after the
 * operands (fuse's own programs allow both); `--name=value` and
 * `--name value` are both accepted; `--` ends the options.  One parser
 * serves both commands: a table says which command takes each option. */
#include "options.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codec.h"
#include "config.h"
#include "backend_worker.h"
#include "installed_backends.h"
#include "log.h"
#include "membudget.h"
#include "repo.h"

void mfs_options_init(mfs_options *o)
{
	memset(o, 0, sizeof(*o));
	o->device = MFS_DEVICE_AUTO;
	mfs_metrics_config_init(&o->metrics);
	o->reload_quiet_ms = 250;
	o->max_request_bytes = (uint64_t)1 << 30;
	o->max_json_bytes = (uint64_t)256 << 20;
	o->max_memory = mfs_membudget_default();
	o->request_ttl_secs = 300;
	o->max_requests = 10000;
	o->backend_init_timeout_secs = MFS_WORKER_INIT_TIMEOUT_DEFAULT;
	o->backend_exec_timeout_secs = MFS_WORKER_EXEC_TIMEOUT_DEFAULT;
	o->log_level = MFS_LOG_INFO;
	o->default_max_batch_size = MFS_DEFAULT_MAX_BATCH_SIZE;
	o->model_load_threads = 4;
	o->strict_readiness = true;
}

void mfs_options_init_run(mfs_options *o, mfs_run_options *r)
{
	mfs_options_init(o);
	memset(r, 0, sizeof(*r));
	o->log_level = MFS_LOG_OFF;
}

void mfs_run_options_release(mfs_run_options *r)
{
	free(r->target);
	free(r->out_dir);
	free(r->format);
	for (int i = 0; i < r->n_inputs; i++)
		free(r->inputs[i]);
	free(r->inputs);
	memset(r, 0, sizeof(*r));
}

void mfs_options_release(mfs_options *o)
{
	free(o->opencl_device);
	free(o->cache_dir);
	free(o->backend_dir);
	for (int i = 0; i < o->n_load_models; i++)
		free(o->load_models[i]);
	free(o->load_models);
	free(o->fuse_opts);
	free(o->log_file);
	free(o->repository);
	free(o->mountpoint);
	memset(o, 0, sizeof(*o));
}

/* The options the daemon and `modelfs run` share, for both --help texts. */
#define SHARED_OPTIONS_HELP \
	"  --device=cpu|opencl|auto  engine for models whose config does not choose (auto)\n" \
	"  --opencl-device=N|TEXT    OpenCL device by index or name substring\n" \
	"  --backend-dir=DIR         custom backends (libmodelfs_NAME.so) not in a model's\n" \
	"                            version directory are looked for here (the installed\n" \
	"                            BINDIR/../lib/modelfs/backends, if there is one)\n" \
	"  --cache-dir=DIR           keep compiled OpenCL programs and KIND_AUTO's engine\n" \
	"                            choices here ($XDG_CACHE_HOME/modelfs, ~/.cache/modelfs,\n" \
	"                            /var/cache/modelfs for root)\n" \
	"  --threads=N               compute threads (number of cores)\n" \
	"  --max-request-bytes=N     largest request accepted, K/M/G suffixes (1G)\n" \
	"  --max-json-bytes=N        largest .json input or infer request (256M)\n" \
	"  --backend-init-timeout=S  a custom backend's init that has not returned after\n" \
	"                            S seconds fails its load; the worker is killed (60)\n" \
	"  --backend-exec-timeout=S  a custom backend's execute that has not returned after\n" \
	"                            S seconds fails its request; the worker is killed (60)\n" \
	"  --backend-config=SETTING  Triton's onnxruntime,default-max-batch-size=N (or\n" \
	"                            default-max-batch-size=N): the max_batch_size an ONNX\n" \
	"                            model that can batch gets when its config sets none (4)\n"

int mfs_options_requests_per_uid(const mfs_options *o)
{
	return o->max_requests_per_uid ? o->max_requests_per_uid : (o->max_requests + 1) / 2;
}

const char *mfs_options_usage(void)
{
	return "usage: modelfs [OPTIONS] REPOSITORY MOUNTPOINT\n"
	       "       modelfs run [OPTIONS] REPOSITORY/MODEL NAME=FILE... (see modelfs run --help)\n"
	       "\n"
	       "Mount a Triton-style model repository as a filesystem: write input\n"
	       "tensor files into MOUNTPOINT/<model>/requests/<name>/, read the outputs.\n"
	       "Unmount with `fusermount3 -u MOUNTPOINT` or SIGINT/SIGTERM.\n"
	       "\n"
	       "options:\n"
	       "  -f                        stay in the foreground (default: daemonize)\n"
	       SHARED_OPTIONS_HELP
	       "  --log-level=LEVEL         error|warn|info|debug (info)\n"
	       "  --log-format=FORMAT       default: local time and zone; ISO8601: UTC (default)\n"
	       "  --log-file=FILE           append the log to FILE, not stderr or syslog\n"
	       "  --model-load-thread-count=N  models loaded at once, at most one per core (4)\n"
	       "  --exit-on-error=BOOL      true: a model that fails its first load fails the\n"
	       "                            start (reason on stderr, exit 1) (false)\n"
	       "  --strict-readiness=BOOL   true: MOUNT/.ready and systemd's READY=1 wait for\n"
	       "                            every model READY; false: for the first load (true)\n"
	       "  --metrics-config=K=V      MOUNT/.metrics as Triton's: summary_latencies=true,\n"
	       "                            summary_quantiles=Q:E,..., counter_latencies=false\n"
	       "                            (repeatable)\n"
	       "  --model-control=MODE      poll: follow the repository; none: load all at start,\n"
	       "                            watch nothing; explicit: load what --load-model names\n"
	       "                            and what is loaded through MODEL/control (poll)\n"
	       "  --load-model=NAME         explicit mode: load NAME at start (repeatable)\n"
	       "  --poll-secs=N             poll mode: notice repository changes within N s by\n"
	       "                            polling, not inotify (0)\n"
	       "  --reload-quiet-ms=N       act on a repository change after N ms of quiet (250)\n"
	       "  --max-memory=N            bytes all requests may hold together; a write past\n"
	       "                            it fails with ENOSPC; 0: no limit (half of RAM)\n"
	       "  --cache-size=N            bytes of the response cache for models whose config\n"
	       "                            enables response_cache; LRU (0: no cache)\n"
	       "  --cache-config=local,size=N  the same, as Triton spells it\n"
	       "  --request-ttl-secs=N      abandoned request directories expire (300)\n"
	       "  --max-requests=N          live request directories per model; mkdir beyond: ENOSPC (10000)\n"
	       "  --max-requests-per-uid=N  of those, what one user other than root and the\n"
	       "                            daemon's may have (half of --max-requests)\n"
	       "  -o OPT[,OPT...]           FUSE mount options (allow_other, default_permissions, ...);\n"
	       "                            every option above also as -o name=value (poll_secs=5)\n"
	       "  -h, --help                this text\n"
	       "  -V, --version             print the version\n";
}

const char *mfs_options_run_usage(void)
{
	return "usage: modelfs run [OPTIONS] REPOSITORY/MODEL NAME=FILE...\n"
	       "\n"
	       "Run MODEL of REPOSITORY once on the input files and write each output to\n"
	       "DIR/OUTPUT.EXT, without mounting anything.  The model version is loaded as\n"
	       "the daemon loads it (every check, the engine choice, the warm-up) and the\n"
	       "request is checked as the daemon checks one, with the same messages.\n"
	       "\n"
	       "  NAME=FILE                 input NAME read from FILE; the extension names the\n"
	       "                            format: .npy .json .txt .raw .pb (SPEC.md section 6);\n"
	       "                            a sequence input may be a directory of 0.EXT, 1.EXT, ...\n"
	       "  --version=N               run version N (the latest the version policy serves)\n"
	       "  --out=DIR                 write outputs into DIR, created if missing (.)\n"
	       "  --format=EXT              write outputs as EXT (the first input's format)\n"
	       SHARED_OPTIONS_HELP
	       "  --log-level=LEVEL         error|warn|info|debug: the daemon's log lines on\n"
	       "                            stderr (none: only the line saying why a run failed)\n"
	       "  -h, --help                this text\n"
	       "  -V                        print the version of modelfs\n"
	       "\n"
	       "The daemon's options about the mount, the repository's changes and many\n"
	       "requests (-f, -o, --model-control, --load-model, --poll-secs,\n"
	       "--reload-quiet-ms, --max-memory, --cache-size, --request-ttl-secs,\n"
	       "--max-requests, --metrics-config) are refused.  Exit status: 0 on\n"
	       "success; 1 if the model or a file failed (one line on stderr says why);\n"
	       "2 for a bad command line.\n";
}

/* A non-negative integer within [0, max]; false if not one. */
static bool parse_int(const char *s, long long max, long long *out)
{
	char *end;
	if (!s || !*s || *s == '-' || *s == '+')
		return false;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *end || v < 0 || v > max)
		return false;
	*out = v;
	return true;
}

/* Bytes with an optional K/M/G/T suffix (powers of 1024). */
static bool parse_bytes(const char *s, uint64_t *out)
{
	char *end;
	if (!s || !*s || *s == '-' || *s == '+')
		return false;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return false;
	unsigned shift = 0;
	if (*end) {
		switch (*end) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		case 't': case 'T': shift = 40; break;
		default: return false;
		}
		end++;
		if (*end == 'i' && end[1] == 'B')
			end += 2;
		else if (*end == 'B')
			end++;
		if (*end)
			return false;
	}
	if (v == 0 || (shift && v > (UINT64_MAX >> shift)))
		return false;
	*out = (uint64_t)v << shift;
	return true;
}

static int append_fuse_opt(mfs_options *o, const char *opt, mfs_error *err)
{
	size_t old = o->fuse_opts ? strlen(o->fuse_opts) : 0;
	char *s = realloc(o->fuse_opts, old + strlen(opt) + 2);
	if (!s)
		return mfs_fail(err, ENOMEM, "out of memory");
	if (old)
		s[old++] = ',';
	strcpy(s + old, opt);
	o->fuse_opts = s;
	return 0;
}

/* Options that take a value; the value is given with '=' or as the next
 * argument, or as `-o name=value` (see split_mount_opts).  `use` says
 * which command takes it; why_not_run is the reason `modelfs run`
 * refuses a daemon-only one. */
enum { FOR_BOTH, FOR_DAEMON, FOR_RUN };
#define NOT_FOLLOWING "`modelfs run` loads the one model it is given, once"
#define ONE_REQUEST "`modelfs run` makes one request (--max-request-bytes bounds it)"
static const struct valued_opt {
	const char *name;
	int use;
	const char *why_not_run;
} valued[] = {
	{ "device", FOR_BOTH, NULL },
	{ "opencl-device", FOR_BOTH, NULL },
	{ "backend-dir", FOR_BOTH, NULL },
	{ "cache-dir", FOR_BOTH, NULL },
	{ "metrics-config", FOR_DAEMON, "`modelfs run` serves no metrics" },
	{ "model-control", FOR_DAEMON, NOT_FOLLOWING },
	{ "load-model", FOR_DAEMON, NOT_FOLLOWING },
	{ "poll-secs", FOR_DAEMON, NOT_FOLLOWING },
	{ "reload-quiet-ms", FOR_DAEMON, NOT_FOLLOWING },
	{ "threads", FOR_BOTH, NULL },
	{ "max-request-bytes", FOR_BOTH, NULL },
	{ "max-json-bytes", FOR_BOTH, NULL },
	{ "max-memory", FOR_DAEMON, ONE_REQUEST },
	{ "cache-size", FOR_DAEMON, ONE_REQUEST },
	{ "cache-config", FOR_DAEMON, ONE_REQUEST },
	{ "request-ttl-secs", FOR_DAEMON, ONE_REQUEST },
	{ "max-requests", FOR_DAEMON, ONE_REQUEST },
	{ "max-requests-per-uid", FOR_DAEMON, ONE_REQUEST },
	{ "log-level", FOR_BOTH, NULL },
	{ "log-format", FOR_DAEMON, "`modelfs run` logs to stderr in the default format" },
	{ "log-file", FOR_DAEMON, "`modelfs run` logs to stderr (--log-level)" },
	{ "model-load-thread-count", FOR_DAEMON, NOT_FOLLOWING },
	{ "exit-on-error", FOR_DAEMON, NOT_FOLLOWING },
	{ "strict-readiness", FOR_DAEMON, "`modelfs run` mounts nothing" },
	{ "backend-init-timeout", FOR_BOTH, NULL },
	{ "backend-exec-timeout", FOR_BOTH, NULL },
	{ "backend-config", FOR_BOTH, NULL },
	{ "version", FOR_RUN, NULL },
	{ "out", FOR_RUN, NULL },
	{ "format", FOR_RUN, NULL },
	{ NULL, 0, NULL }
};

/* The entry of valued[] named by the first len bytes of name that the
 * command takes (run: also the daemon-only ones, to refuse them by
 * name), NULL if none.  With mount_style, '_' in name stands for '-'
 * (poll_secs). */
static const struct valued_opt *find_valued(const char *name, size_t len, bool mount_style,
					    bool run)
{
	for (int k = 0; valued[k].name; k++) {
		const char *v = valued[k].name;
		if (strlen(v) != len || (!run && valued[k].use == FOR_RUN))
			continue;
		size_t i = 0;
		while (i < len && (name[i] == v[i] || (mount_style && name[i] == '_' && v[i] == '-')))
			i++;
		if (i == len)
			return &valued[k];
	}
	return NULL;
}

/* `modelfs run`'s own options. */
static int set_run_valued(mfs_run_options *r, const char *name, const char *val,
			  mfs_error *err)
{
	long long n;
	char **slot = strcmp(name, "out") == 0 ? &r->out_dir : &r->format;
	if (strcmp(name, "version") == 0) {
		if (!parse_int(val, INT64_MAX, &n) || n == 0)
			return mfs_fail(err, EINVAL, "--version: expected a positive version number, got '%s'", val);
		r->version = n;
		return 0;
	}
	if (strcmp(name, "out") == 0 && !*val)
		return mfs_fail(err, EINVAL, "--out: empty directory name");
	if (strcmp(name, "format") == 0 && mfs_format_from_ext(val) < 0)
		return mfs_fail(err, EINVAL, "--format: expected npy, json, txt, raw or pb, got '%s'", val);
	free(*slot);
	if (!(*slot = strdup(val)))
		return mfs_fail(err, ENOMEM, "out of memory");
	return 0;
}

/* Triton's --backend-config=onnxruntime,default-max-batch-size=N, or its
 * global form default-max-batch-size=N (the one -o can carry: a mount
 * option's value holds no comma).  The one setting modelfs has. */
static int set_backend_config(mfs_options *o, const char *val, mfs_error *err)
{
	static const char key[] = "default-max-batch-size=";
	const char *setting = val;
	long long n;

	if (strncmp(val, "onnxruntime,", 12) == 0)
		setting = val + 12;
	if (strncmp(setting, key, sizeof(key) - 1) != 0)
		return mfs_fail(err, EINVAL, "--backend-config: expected [onnxruntime,]default-max-batch-size=N "
				"(the one backend setting modelfs has), got '%s'", val);
	if (!parse_int(setting + sizeof(key) - 1, INT32_MAX, &n))
		return mfs_fail(err, EINVAL, "--backend-config: default-max-batch-size: expected 0 or more, got '%s'",
				setting + sizeof(key) - 1);
	o->default_max_batch_size = (int)n;
	return 0;
}

/* The operator's options (issue 31): logs, the first load, readiness.
 * 1 when name is none of them. */
static int set_ops_valued(mfs_options *o, const char *name, const char *val,
			  mfs_error *err)
{
	long long n;
	if (strcmp(name, "log-format") == 0) {
		if ((o->log_format = mfs_log_format_parse(val)) < 0)
			return mfs_fail(err, EINVAL, "--log-format: expected default or ISO8601, got '%s'", val);
	} else if (strcmp(name, "log-file") == 0) {
		if (!*val)
			return mfs_fail(err, EINVAL, "--log-file: empty file name");
		free(o->log_file);
		if (!(o->log_file = strdup(val)))
			return mfs_fail(err, ENOMEM, "out of memory");
	} else if (strcmp(name, "model-load-thread-count") == 0) {
		if (!parse_int(val, 64, &n) || n == 0)
			return mfs_fail(err, EINVAL, "--model-load-thread-count: expected 1-64, got '%s'", val);
		o->model_load_threads = (int)n;
	} else if (strcmp(name, "exit-on-error") == 0 || strcmp(name, "strict-readiness") == 0) {
		bool *slot = name[0] == 'e' ? &o->exit_on_error : &o->strict_readiness;
		if (strcmp(val, "true") == 0 || strcmp(val, "1") == 0)
			*slot = true;
		else if (strcmp(val, "false") == 0 || strcmp(val, "0") == 0)
			*slot = false;
		else
			return mfs_fail(err, EINVAL, "--%s: expected true or false, got '%s'", name, val);
	} else {
		return 1;
	}
	return 0;
}

/* --cache-dir (made absolute: the daemon changes its directory to /
 * when it detaches; it need not exist yet) and --metrics-config. */
static int set_operator_opt(mfs_options *o, const char *name, const char *val,
			    mfs_error *err)
{
	if (strcmp(name, "metrics-config") == 0)
		return mfs_metrics_config_parse(&o->metrics, val, err);
	if (!*val)
		return mfs_fail(err, EINVAL, "--cache-dir: empty value");
	char cwd[PATH_MAX], *abs = NULL;
	if (val[0] == '/')
		abs = strdup(val);
	else if (getcwd(cwd, sizeof(cwd)) && asprintf(&abs, "%s/%s", cwd, val) < 0)
		abs = NULL;
	if (!abs)
		return mfs_fail(err, ENOMEM, "--cache-dir '%s': cannot make it absolute", val);
	free(o->cache_dir);
	o->cache_dir = abs;
	return 0;
}

static int set_valued(mfs_options *o, const char *name, const char *val,
		      mfs_error *err)
{
	long long n;
	int ops = set_ops_valued(o, name, val, err);
	if (ops <= 0)
		return ops;
	if (strcmp(name, "device") == 0) {
		if (strcmp(val, "cpu") == 0)
			o->device = MFS_DEVICE_CPU;
		else if (strcmp(val, "opencl") == 0)
			o->device = MFS_DEVICE_OPENCL;
		else if (strcmp(val, "auto") == 0)
			o->device = MFS_DEVICE_AUTO;
		else
			return mfs_fail(err, EINVAL, "--device: expected cpu, opencl or auto, got '%s'", val);
	} else if (strcmp(name, "opencl-device") == 0) {
		if (!*val)
			return mfs_fail(err, EINVAL, "--opencl-device: empty value");
		free(o->opencl_device);
		o->opencl_device = strdup(val);
		if (!o->opencl_device)
			return mfs_fail(err, ENOMEM, "out of memory");
	} else if (strcmp(name, "backend-dir") == 0) {
		/* Absolute now: the daemon changes its directory to / when it
		 * detaches, and a worker must find the library from anywhere. */
		char *abs = *val ? realpath(val, NULL) : NULL;
		struct stat st;
		if (!abs || stat(abs, &st) != 0 || !S_ISDIR(st.st_mode)) {
			int e = abs ? ENOTDIR : errno;
			free(abs);
			return mfs_fail(err, EINVAL, "--backend-dir '%s': %s", val,
					*val ? strerror(e) : "empty value");
		}
		free(o->backend_dir);
		o->backend_dir = abs;
	} else if (strcmp(name, "model-control") == 0) {
		int m = mfs_control_mode_parse(val);
		if (m < 0)
			return mfs_fail(err, EINVAL, "--model-control: expected none, poll or explicit, got '%s'", val);
		o->model_control = (mfs_control_mode)m;
	} else if (strcmp(name, "load-model") == 0) {
		if (!mfs_repo_model_name_ok(val))
			return mfs_fail(err, EINVAL, "--load-model: '%s' is not a model name ([A-Za-z0-9._-], not starting with '.')", val);
		char **l = realloc(o->load_models, (size_t)(o->n_load_models + 1) * sizeof(*l));
		if (!l)
			return mfs_fail(err, ENOMEM, "out of memory");
		o->load_models = l;
		if (!(l[o->n_load_models] = strdup(val)))
			return mfs_fail(err, ENOMEM, "out of memory");
		o->n_load_models++;
	} else if (strcmp(name, "poll-secs") == 0) {
		if (!parse_int(val, 86400, &n))
			return mfs_fail(err, EINVAL, "--poll-secs: expected seconds (0-86400), got '%s'", val);
		o->poll_secs = (int)n;
	} else if (strcmp(name, "reload-quiet-ms") == 0) {
		if (!parse_int(val, 3600000, &n))
			return mfs_fail(err, EINVAL, "--reload-quiet-ms: expected milliseconds, got '%s'", val);
		o->reload_quiet_ms = (int)n;
	} else if (strcmp(name, "threads") == 0) {
		if (!parse_int(val, 1024, &n) || n == 0)
			return mfs_fail(err, EINVAL, "--threads: expected 1-1024, got '%s'", val);
		o->threads = (int)n;
	} else if (strcmp(name, "max-request-bytes") == 0) {
		if (!parse_bytes(val, &o->max_request_bytes))
			return mfs_fail(err, EINVAL, "--max-request-bytes: expected a positive size like 1048576 or 64M, got '%s'", val);
	} else if (strcmp(name, "max-json-bytes") == 0) {
		if (!parse_bytes(val, &o->max_json_bytes))
			return mfs_fail(err, EINVAL, "--max-json-bytes: expected a positive size like 1048576 or 64M, got '%s'", val);
	} else if (strcmp(name, "max-memory") == 0) {
		if (strcmp(val, "0") == 0)
			o->max_memory = 0;
		else if (!parse_bytes(val, &o->max_memory))
			return mfs_fail(err, EINVAL, "--max-memory: expected a size like 4G, or 0 for no limit, got '%s'", val);
	} else if (strcmp(name, "cache-size") == 0 || strcmp(name, "cache-config") == 0) {
		/* Triton's spelling: --cache-config local,size=N. */
		bool triton = strcmp(name, "cache-config") == 0;
		const char *size = triton && strncmp(val, "local,size=", 11) == 0 ? val + 11 : val;
		if (triton && size == val)
			return mfs_fail(err, EINVAL, "--cache-config: expected local,size=BYTES (modelfs has Triton's local cache only), got '%s'", val);
		if (strcmp(size, "0") == 0)
			o->cache_size = 0;
		else if (!parse_bytes(size, &o->cache_size))
			return mfs_fail(err, EINVAL, "--%s: expected a size like 256M, or 0 for no response cache, got '%s'",
					name, val);
	} else if (strcmp(name, "request-ttl-secs") == 0) {
		if (!parse_int(val, INT_MAX, &n) || n == 0)
			return mfs_fail(err, EINVAL, "--request-ttl-secs: expected a positive number of seconds, got '%s'", val);
		o->request_ttl_secs = (int)n;
	} else if (strcmp(name, "max-requests") == 0) {
		if (!parse_int(val, 10000000, &n) || n == 0)
			return mfs_fail(err, EINVAL, "--max-requests: expected 1-10000000, got '%s'", val);
		o->max_requests = (int)n;
	} else if (strcmp(name, "max-requests-per-uid") == 0) {
		if (!parse_int(val, 10000000, &n) || n == 0)
			return mfs_fail(err, EINVAL, "--max-requests-per-uid: expected 1-10000000, got '%s'", val);
		o->max_requests_per_uid = (int)n;
	} else if (strcmp(name, "backend-init-timeout") == 0 ||
		   strcmp(name, "backend-exec-timeout") == 0) {
		int *slot = strcmp(name, "backend-init-timeout") == 0 ? &o->backend_init_timeout_secs
								      : &o->backend_exec_timeout_secs;
		if (!parse_int(val, 86400, &n) || n == 0)
			return mfs_fail(err, EINVAL, "--%s: expected seconds (1-86400), got '%s'", name, val);
		*slot = (int)n;
	} else if (strcmp(name, "backend-config") == 0) {
		return set_backend_config(o, val, err);
	} else if (strcmp(name, "cache-dir") == 0 || strcmp(name, "metrics-config") == 0) {
		return set_operator_opt(o, name, val, err);
	} else if (strcmp(name, "log-level") == 0) {
		int l = mfs_log_level_parse(val);
		if (l < 0)
			return mfs_fail(err, EINVAL, "--log-level: expected error, warn, info or debug, got '%s'", val);
		o->log_level = l;
	}
	return 0;
}

/* `-o a,b=c,...`: mount(8) and fstab hand every option over this way
 * (mount.fuse3 runs `modelfs SOURCE MOUNTPOINT -o OPTS`), so each
 * daemon option is also accepted as `-o name=value` (poll_secs=5, or
 * poll-secs=5); the rest go to FUSE.  Values cannot hold a comma. */
static int split_mount_opts(mfs_options *o, const char *list, mfs_error *err)
{
	char *copy = strdup(list), *save = NULL;
	int r = 0;
	if (!copy)
		return mfs_fail(err, ENOMEM, "out of memory");
	for (char *opt = strtok_r(copy, ",", &save); opt && r == 0;
	     opt = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(opt, '=');
		const struct valued_opt *known =
			find_valued(opt, eq ? (size_t)(eq - opt) : strlen(opt), true, false);
		if (!known)
			r = append_fuse_opt(o, opt, err);
		else if (!eq)
			r = mfs_fail(err, EINVAL, "-o %s needs a value (-o %s=VALUE)", opt, opt);
		else
			r = set_valued(o, known->name, eq + 1, err);
	}
	free(copy);
	return r;
}

static int set_operand(mfs_options *o, const char *arg, mfs_error *err)
{
	char **slot = !o->repository ? &o->repository
		    : !o->mountpoint ? &o->mountpoint : NULL;
	if (!slot)
		return mfs_fail(err, EINVAL, "unexpected argument '%s' (expected REPOSITORY MOUNTPOINT)", arg);
	*slot = strdup(arg);
	if (!*slot)
		return mfs_fail(err, ENOMEM, "out of memory");
	return 0;
}

/* run: REPOSITORY/MODEL, then NAME=FILE each. */
static int set_run_operand(mfs_run_options *r, const char *arg, mfs_error *err)
{
	const char *eq = strchr(arg, '=');
	char **slot;
	if (!r->target) {
		slot = &r->target;
	} else if (!eq || eq == arg || !eq[1]) {
		return mfs_fail(err, EINVAL, "'%s' is not NAME=FILE", arg);
	} else {
		char **l = realloc(r->inputs, (size_t)(r->n_inputs + 1) * sizeof(*l));
		if (!l)
			return mfs_fail(err, ENOMEM, "out of memory");
		r->inputs = l;
		slot = &l[r->n_inputs++];
		*slot = NULL;
	}
	if (!(*slot = strdup(arg)))
		return mfs_fail(err, ENOMEM, "out of memory");
	return 0;
}

/* `--name[=value]` (a value not after '=' is the next argument). */
static int long_option(mfs_options *o, mfs_run_options *r, int argc, char **argv, int *i,
		       mfs_error *err)
{
	const char *a = argv[*i], *name = a + 2;
	const char *eq = strchr(name, '=');
	size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
	const struct valued_opt *known = find_valued(name, nlen, false, r != NULL);
	if (!known)
		return mfs_fail(err, EINVAL, "unknown option '%s' (see --help)", a);
	if (r && known->use == FOR_DAEMON)
		return mfs_fail(err, EINVAL, "--%s is an option of the daemon only: %s", known->name,
				known->why_not_run);
	const char *v = eq ? eq + 1 : (*i + 1 < argc ? argv[++*i] : NULL);
	if (!v)
		return mfs_fail(err, EINVAL, "--%s needs a value", known->name);
	if (known->use == FOR_RUN)
		return set_run_valued(r, known->name, v, err);
	return set_valued(o, known->name, v, err);
}

/* One option argv[*i] (advancing *i past its value); r is NULL for the
 * daemon.  1: stop parsing (--help, --version). */
static int one_option(mfs_options *o, mfs_run_options *r, int argc, char **argv, int *i,
		      mfs_error *err)
{
	const char *a = argv[*i];
	if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
		o->help = true;
		return 1;
	}
	if (strcmp(a, "-V") == 0 || (!r && strcmp(a, "--version") == 0)) {
		o->version = true;
		return 1;
	}
	if (strcmp(a, "-f") == 0) {
		if (r)
			return mfs_fail(err, EINVAL, "-f is an option of the daemon only: `modelfs run` always runs in the foreground");
		o->foreground = true;
		return 0;
	}
	if (strncmp(a, "-o", 2) == 0) {
		if (r)
			return mfs_fail(err, EINVAL, "%s: mount options are the daemon's only: `modelfs run` mounts nothing", a);
		const char *v = a[2] ? a + 2 : (*i + 1 < argc ? argv[++*i] : NULL);
		if (!v || !*v)
			return mfs_fail(err, EINVAL, "-o needs a mount option");
		return split_mount_opts(o, v, err);
	}
	if (a[1] == '-')
		return long_option(o, r, argc, argv, i, err);
	return mfs_fail(err, EINVAL, "unknown option '%s' (see --help)", a);
}

/* Both command lines: options may come before or after the operands. */
static int parse(mfs_options *o, mfs_run_options *r, int argc, char **argv, mfs_error *err)
{
	bool only_operands = false;
	int rc;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (only_operands || a[0] != '-' || a[1] == '\0')
			rc = r ? set_run_operand(r, a, err) : set_operand(o, a, err);
		else if (strcmp(a, "--") == 0)
			only_operands = true, rc = 0;
		else
			rc = one_option(o, r, argc, argv, &i, err);
		if (rc != 0)
			return rc < 0 ? rc : 0;
	}
	if (!o->backend_dir)
		o->backend_dir = mfs_installed_backend_dir();
	return 0;
}

int mfs_options_parse(mfs_options *o, int argc, char **argv, mfs_error *err)
{
	int r = parse(o, NULL, argc, argv, err);
	if (r < 0 || o->help || o->version)
		return r;
	/* Triton's rules: models named at start only where nothing else
	 * loads; polling only where something is followed. */
	if (o->n_load_models > 0 && o->model_control != MFS_CONTROL_EXPLICIT)
		return mfs_fail(err, EINVAL, "--load-model needs --model-control=explicit (in %s mode every model is loaded)",
				mfs_control_mode_name(o->model_control));
	if (o->poll_secs > 0 && o->model_control != MFS_CONTROL_POLL)
		return mfs_fail(err, EINVAL, "--poll-secs needs --model-control=poll (%s mode watches nothing)",
				mfs_control_mode_name(o->model_control));
	if (!o->repository)
		return mfs_fail(err, EINVAL, "missing REPOSITORY and MOUNTPOINT (see --help)");
	if (!o->mountpoint)
		return mfs_fail(err, EINVAL, "missing MOUNTPOINT (see --help)");
	return 0;
}

int mfs_options_parse_run(mfs_options *o, mfs_run_options *r, int argc, char **argv,
			  mfs_error *err)
{
	int rc = parse(o, r, argc, argv, err);
	if (rc < 0 || o->help || o->version)
		return rc;
	if (!r->target)
		return mfs_fail(err, EINVAL, "no REPOSITORY/MODEL given");
	return 0;
}

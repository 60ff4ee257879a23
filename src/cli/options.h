/* options.h - the command lines of the daemon and of `modelfs run`
 * (SPEC.md section 1).
 *
 * mfs_options_parse() understands every option of `modelfs [OPTIONS]
 * REPOSITORY MOUNTPOINT`; mfs_options_parse_run() those of `modelfs run
 * [OPTIONS] REPOSITORY/MODEL NAME=FILE...`: every daemon option that
 * applies to one run (--device, --threads, --log-level, ...) with the
 * same meaning and the same checks, plus run's own (--version N, --out,
 * --format); a daemon option that makes no sense for one run (-f, -o,
 * --poll-secs, ...) is refused with a message naming it.  Neither prints
 * nor exits: the caller (cmd_mount.c, cmd_run.c) prints the one-line
 * error or the help text.
 */
#ifndef MFS_OPTIONS_H
#define MFS_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device_router.h"
#include "error.h"
#include "metrics.h"
#include "model_control.h"

typedef struct mfs_options {
	bool foreground;              /* -f */
	mfs_device_choice device;     /* --device */
	char *opencl_device;          /* --opencl-device (NULL = first GPU) */
	char *backend_dir;            /* --backend-dir, made absolute (NULL = none) */
	char *cache_dir;              /* --cache-dir, made absolute (NULL = the default) */
	mfs_metrics_config metrics;   /* --metrics-config */
	mfs_control_mode model_control;   /* --model-control (poll) */
	char **load_models;           /* --load-model, each time given (explicit mode) */
	int n_load_models;
	int poll_secs;                /* --poll-secs (0 = inotify) */
	int reload_quiet_ms;          /* --reload-quiet-ms */
	int threads;                  /* --threads (0 = number of cores) */
	uint64_t max_request_bytes;   /* --max-request-bytes */
	uint64_t max_json_bytes;      /* --max-json-bytes */
	uint64_t max_memory;          /* --max-memory (0 = no limit) */
	uint64_t cache_size;          /* --cache-size, or --cache-config local,size=N (0 = no response cache) */
	int request_ttl_secs;         /* --request-ttl-secs */
	int max_requests;             /* --max-requests: live request directories per model */
	int max_requests_per_uid;     /* --max-requests-per-uid; 0: not given (see below) */
	int backend_init_timeout_secs;    /* --backend-init-timeout */
	int backend_exec_timeout_secs;    /* --backend-exec-timeout */
	int log_level;                /* mfs_log_level */
	int default_max_batch_size;   /* --backend-config=onnxruntime,default-max-batch-size=N */
	int log_format;               /* --log-format: mfs_log_format */
	char *log_file;               /* --log-file, as given (NULL = stderr / syslog) */
	int model_load_threads;       /* --model-load-thread-count (4) */
	bool exit_on_error;           /* --exit-on-error (false) */
	bool strict_readiness;        /* --strict-readiness (true) */
	char *fuse_opts;              /* -o items that are not ours, comma-joined; NULL if none */
	char *repository;             /* as given */
	char *mountpoint;             /* as given */
	bool help;                    /* --help / -h: nothing else is checked */
	bool version;                 /* --version / -V */
} mfs_options;

/* What `modelfs run` takes besides the daemon's options. */
typedef struct mfs_run_options {
	char *target;                 /* REPOSITORY/MODEL as given */
	int64_t version;              /* --version N; 0 = the latest the policy serves */
	char *out_dir;                /* --out (NULL = the current directory) */
	char *format;                 /* --format (NULL = the first input's) */
	char **inputs;                /* NAME=FILE, as given (each has a '=') */
	int n_inputs;
} mfs_run_options;

/* Defaults of SPEC.md section 1. */
void mfs_options_init(mfs_options *o);
void mfs_options_release(mfs_options *o);

/* The daemon's defaults in o, run's in r; the log level is MFS_LOG_OFF
 * (only run's own one line) until --log-level says otherwise. */
void mfs_options_init_run(mfs_options *o, mfs_run_options *r);
void mfs_run_options_release(mfs_run_options *r);

/* Parse argv (argv[0] is the program).  -EINVAL with a one-line message
 * naming the bad option or the missing operand. */
int mfs_options_parse(mfs_options *o, int argc, char **argv, mfs_error *err);

/* argv[0] is "run".  The same contract; o->repository, o->mountpoint and
 * o->fuse_opts stay NULL. */
int mfs_options_parse_run(mfs_options *o, mfs_run_options *r, int argc, char **argv,
			  mfs_error *err);

/* Request directories one uid other than root and the daemon's own may
 * have under one model: --max-requests-per-uid, or when not given half
 * of --max-requests (at least 1), so that one user cannot take them all
 * (docs/SECURITY.md). */
int mfs_options_requests_per_uid(const mfs_options *o);

/* The --help texts (each ends with a newline). */
const char *mfs_options_usage(void);
const char *mfs_options_run_usage(void);

#endif

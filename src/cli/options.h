/* options.h - the daemon's command line (SPEC.md section 1).
 *
 * mfs_options_parse() understands every option of `modelfs [OPTIONS]
 * REPOSITORY MOUNTPOINT`; it never prints and never exits: the caller
 * (cmd_mount.c) prints the one-line error or the help text.
 */
#ifndef MFS_OPTIONS_H
#define MFS_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device_router.h"
#include "error.h"
#include "model_control.h"

typedef struct mfs_options {
	bool foreground;              /* -f */
	mfs_device_choice device;     /* --device */
	char *opencl_device;          /* --opencl-device (NULL = first GPU) */
	char *backend_dir;            /* --backend-dir, made absolute (NULL = none) */
	mfs_control_mode model_control;   /* --model-control (poll) */
	char **load_models;           /* --load-model, each time given (explicit mode) */
	int n_load_models;
	int poll_secs;                /* --poll-secs (0 = inotify) */
	int reload_quiet_ms;          /* --reload-quiet-ms */
	int threads;                  /* --threads (0 = number of cores) */
	uint64_t max_request_bytes;   /* --max-request-bytes */
	uint64_t max_json_bytes;      /* --max-json-bytes */
	uint64_t max_memory;          /* --max-memory (0 = no limit) */
	int request_ttl_secs;         /* --request-ttl-secs */
	int max_requests;             /* --max-requests: live request directories per model */
	int backend_init_timeout_secs;    /* --backend-init-timeout */
	int backend_exec_timeout_secs;    /* --backend-exec-timeout */
	int log_level;                /* mfs_log_level */
	char *fuse_opts;              /* -o items that are not ours, comma-joined; NULL if none */
	char *repository;             /* as given */
	char *mountpoint;             /* as given */
	bool help;                    /* --help / -h: nothing else is checked */
	bool version;                 /* --version / -V */
} mfs_options;

/* Defaults of SPEC.md section 1. */
void mfs_options_init(mfs_options *o);
void mfs_options_release(mfs_options *o);

/* Parse argv (argv[0] is the program).  -EINVAL with a one-line message
 * naming the bad option or the missing operand. */
int mfs_options_parse(mfs_options *o, int argc, char **argv, mfs_error *err);

/* The --help text (ends with a newline). */
const char *mfs_options_usage(void);

#endif

/* test_options.c - the command lines of the daemon and of `modelfs run`
 * (SPEC.md section 1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"
#include "membudget.h"
#include "options.h"

static int parse(mfs_options *o, mfs_error *err, int argc, char **argv)
{
	mfs_options_init(o);
	mfs_error_clear(err);
	return mfs_options_parse(o, argc, argv, err);
}

static void test_defaults(void **state)
{
	(void)state;
	mfs_options o;
	mfs_error err;
	char *argv[] = { "modelfs", "repo", "mnt" };
	assert_int_equal(parse(&o, &err, 3, argv), 0);
	assert_string_equal(o.repository, "repo");
	assert_string_equal(o.mountpoint, "mnt");
	assert_false(o.foreground);
	assert_int_equal(o.device, MFS_DEVICE_AUTO);
	assert_int_equal(o.poll_secs, 0);
	assert_int_equal(o.reload_quiet_ms, 250);
	assert_int_equal(o.threads, 0);
	assert_true(o.max_request_bytes == (uint64_t)1 << 30);
	assert_true(o.max_json_bytes == (uint64_t)256 << 20);
	/* Half of the machine's memory. */
	assert_true(o.max_memory == mfs_membudget_default());
	assert_true(o.max_memory > 0);
	assert_int_equal(o.request_ttl_secs, 300);
	assert_int_equal(o.max_requests, 10000);
	assert_int_equal(mfs_options_requests_per_uid(&o), 5000);   /* half */
	assert_int_equal(o.log_level, MFS_LOG_INFO);
	assert_null(o.fuse_opts);
	mfs_options_release(&o);
}

static void test_every_option(void **state)
{
	(void)state;
	mfs_options o;
	mfs_error err;
	char *argv[] = { "modelfs", "-f", "--device=cpu", "--opencl-device", "NVIDIA",
			 "--poll-secs=2", "--reload-quiet-ms=100", "--threads=3",
			 "--max-request-bytes=64M", "--request-ttl-secs=9", "--max-requests=7",
			 "--log-level=debug", "-o", "allow_other", "-odefault_permissions",
			 "--max-json-bytes=8M", "--max-memory", "3G", "repo", "mnt" };
	assert_int_equal(parse(&o, &err, 20, argv), 0);
	assert_true(o.max_json_bytes == 8ull << 20);
	assert_true(o.max_memory == 3ull << 30);
	assert_true(o.foreground);
	assert_int_equal(o.device, MFS_DEVICE_CPU);
	assert_string_equal(o.opencl_device, "NVIDIA");
	assert_int_equal(o.poll_secs, 2);
	assert_int_equal(o.reload_quiet_ms, 100);
	assert_int_equal(o.threads, 3);
	assert_true(o.max_request_bytes == 64ull << 20);
	assert_int_equal(o.request_ttl_secs, 9);
	assert_int_equal(o.max_requests, 7);
	assert_int_equal(mfs_options_requests_per_uid(&o), 4);   /* half, rounded up */
	assert_int_equal(o.log_level, MFS_LOG_DEBUG);
	assert_string_equal(o.fuse_opts, "allow_other,default_permissions");
	mfs_options_release(&o);

	char *share[] = { "modelfs", "-o", "max_requests_per_uid=3", "--max-requests=1", "repo", "mnt" };
	assert_int_equal(parse(&o, &err, 6, share), 0);
	assert_int_equal(mfs_options_requests_per_uid(&o), 3);
	mfs_options_release(&o);
	char *one[] = { "modelfs", "--max-requests=1", "repo", "mnt" };
	assert_int_equal(parse(&o, &err, 4, one), 0);
	assert_int_equal(mfs_options_requests_per_uid(&o), 1);
	mfs_options_release(&o);

	char *argv0[] = { "modelfs", "--max-memory=0", "repo", "mnt" };
	assert_int_equal(parse(&o, &err, 4, argv0), 0);
	assert_true(o.max_memory == 0);   /* no limit */
	assert_true(o.cache_size == 0);   /* no response cache unless asked */
	mfs_options_release(&o);

	/* The response cache's size, also as Triton spells it and as -o. */
	char *cache[] = { "modelfs", "--cache-size=256M", "repo", "mnt" };
	assert_int_equal(parse(&o, &err, 4, cache), 0);
	assert_true(o.cache_size == 256ull << 20);
	mfs_options_release(&o);
	char *triton[] = { "modelfs", "--cache-config", "local,size=1048576", "repo", "mnt" };
	assert_int_equal(parse(&o, &err, 5, triton), 0);
	assert_true(o.cache_size == 1048576);
	mfs_options_release(&o);
	char *mount_o[] = { "modelfs", "-o", "cache_size=2M", "repo", "mnt" };
	assert_int_equal(parse(&o, &err, 5, mount_o), 0);
	assert_true(o.cache_size == 2ull << 20);
	mfs_options_release(&o);

	/* Options after the operands, as fuse programs allow. */
	char *argv2[] = { "modelfs", "repo", "mnt", "-f", "--device", "opencl" };
	assert_int_equal(parse(&o, &err, 6, argv2), 0);
	assert_true(o.foreground);
	assert_int_equal(o.device, MFS_DEVICE_OPENCL);
	mfs_options_release(&o);
}

/* mount(8) and fstab pass everything as -o (mount.fuse3): the daemon's
 * own options are split out, the rest stay FUSE options. */
static void test_daemon_options_as_mount_options(void **state)
{
	(void)state;
	mfs_options o;
	mfs_error err;
	char *argv[] = { "modelfs", "/srv/models", "/mnt/models", "-o",
			 "rw,allow_other,poll_secs=5,threads=2,device=cpu,log-level=warn,"
			 "max_request_bytes=8M,opencl_device=NVIDIA,nodev" };
	assert_int_equal(parse(&o, &err, 5, argv), 0);
	assert_int_equal(o.poll_secs, 5);
	assert_int_equal(o.threads, 2);
	assert_int_equal(o.device, MFS_DEVICE_CPU);
	assert_int_equal(o.log_level, MFS_LOG_WARN);
	assert_true(o.max_request_bytes == 8ull << 20);
	assert_string_equal(o.opencl_device, "NVIDIA");
	assert_string_equal(o.fuse_opts, "rw,allow_other,nodev");
	mfs_options_release(&o);

	/* --backend-dir: made absolute (the daemon leaves its directory when
	 * it detaches); one that is not a directory is an error naming it. */
	char *argv_bd[] = { "modelfs", "-o", "backend_dir=/usr/../usr/lib,allow_other", "r", "m" };
	assert_int_equal(parse(&o, &err, 5, argv_bd), 0);
	assert_string_equal(o.backend_dir, "/usr/lib");
	assert_string_equal(o.fuse_opts, "allow_other");
	mfs_options_release(&o);
	char *argv_bd2[] = { "modelfs", "--backend-dir", ".", "r", "m" };
	assert_int_equal(parse(&o, &err, 5, argv_bd2), 0);
	assert_int_equal(o.backend_dir[0], '/');
	mfs_options_release(&o);
	char *argv_bd3[] = { "modelfs", "--backend-dir=/nonexistent/backends", "r", "m" };
	assert_int_equal(parse(&o, &err, 4, argv_bd3), -EINVAL);
	assert_non_null(strstr(err.msg, "--backend-dir '/nonexistent/backends': No such file or directory"));
	mfs_options_release(&o);
	char *argv_bd4[] = { "modelfs", "--backend-dir=/etc/passwd", "r", "m" };
	assert_int_equal(parse(&o, &err, 4, argv_bd4), -EINVAL);
	assert_non_null(strstr(err.msg, "Not a directory"));
	mfs_options_release(&o);

	/* Only daemon options: no FUSE options left. */
	char *argv2[] = { "modelfs", "-oreload_quiet_ms=10", "r", "m" };
	assert_int_equal(parse(&o, &err, 4, argv2), 0);
	assert_int_equal(o.reload_quiet_ms, 10);
	assert_null(o.fuse_opts);
	mfs_options_release(&o);

	/* A bad value or a missing one names the option. */
	char *argv3[] = { "modelfs", "-o", "allow_other,threads=0", "r", "m" };
	assert_int_equal(parse(&o, &err, 5, argv3), -EINVAL);
	assert_non_null(strstr(err.msg, "--threads"));
	mfs_options_release(&o);
	char *argv4[] = { "modelfs", "-o", "poll_secs", "r", "m" };
	assert_int_equal(parse(&o, &err, 5, argv4), -EINVAL);
	assert_non_null(strstr(err.msg, "poll_secs=VALUE"));
	mfs_options_release(&o);
}

/* Triton's --model-control-mode and --load-model (model_control.h). */
static void test_model_control(void **state)
{
	(void)state;
	mfs_options o;
	mfs_error err;
	char *argv0[] = { "modelfs", "r", "m" };
	assert_int_equal(parse(&o, &err, 3, argv0), 0);
	assert_int_equal(o.model_control, MFS_CONTROL_POLL);   /* today's behaviour */
	assert_int_equal(o.n_load_models, 0);
	mfs_options_release(&o);

	char *argv[] = { "modelfs", "--model-control=explicit", "--load-model=a", "--load-model",
			 "b.v2", "-o", "load_model=c,allow_other", "r", "m" };
	assert_int_equal(parse(&o, &err, 9, argv), 0);
	assert_int_equal(o.model_control, MFS_CONTROL_EXPLICIT);
	assert_int_equal(o.n_load_models, 3);
	assert_string_equal(o.load_models[0], "a");
	assert_string_equal(o.load_models[1], "b.v2");
	assert_string_equal(o.load_models[2], "c");
	assert_string_equal(o.fuse_opts, "allow_other");
	mfs_options_release(&o);

	char *argv2[] = { "modelfs", "-o", "model_control=none", "r", "m" };
	assert_int_equal(parse(&o, &err, 5, argv2), 0);
	assert_int_equal(o.model_control, MFS_CONTROL_NONE);
	mfs_options_release(&o);
	char *argv3[] = { "modelfs", "--model-control=poll", "--poll-secs=3", "r", "m" };
	assert_int_equal(parse(&o, &err, 5, argv3), 0);
	assert_int_equal(o.poll_secs, 3);
	mfs_options_release(&o);
	/* the order of the options does not matter */
	char *argv4[] = { "modelfs", "--load-model=x", "r", "m", "--model-control", "explicit" };
	assert_int_equal(parse(&o, &err, 6, argv4), 0);
	assert_int_equal(o.n_load_models, 1);
	mfs_options_release(&o);
}

static void test_errors_name_the_option(void **state)
{
	(void)state;
	mfs_options o;
	mfs_error err;
	struct {
		int argc;
		char *argv[5];
		const char *msg;
	} cases[] = {
		{ 2, { "modelfs", "repo" }, "MOUNTPOINT" },
		{ 1, { "modelfs" }, "REPOSITORY" },
		{ 4, { "modelfs", "--bogus", "r", "m" }, "--bogus" },
		{ 4, { "modelfs", "--device=gpu", "r", "m" }, "--device" },
		{ 4, { "modelfs", "--threads=0", "r", "m" }, "--threads" },
		{ 4, { "modelfs", "--threads=x", "r", "m" }, "--threads" },
		{ 4, { "modelfs", "--max-request-bytes=12Q", "r", "m" }, "--max-request-bytes" },
		{ 4, { "modelfs", "--log-level=loud", "r", "m" }, "--log-level" },
		{ 4, { "modelfs", "--max-requests=0", "r", "m" }, "--max-requests" },
		{ 4, { "modelfs", "--max-requests-per-uid=0", "r", "m" }, "--max-requests-per-uid: expected 1-10000000" },
		{ 4, { "modelfs", "--max-json-bytes=0", "r", "m" }, "--max-json-bytes" },
		{ 4, { "modelfs", "--max-memory=-1", "r", "m" }, "--max-memory" },
		{ 4, { "modelfs", "--max-memory=lots", "r", "m" }, "--max-memory" },
		{ 4, { "modelfs", "--cache-size=big", "r", "m" }, "--cache-size: expected a size" },
		{ 4, { "modelfs", "--cache-config=redis,host=x", "r", "m" }, "--cache-config: expected local,size=BYTES" },
		{ 4, { "modelfs", "--poll-secs=-1", "r", "m" }, "--poll-secs" },
		{ 4, { "modelfs", "r", "m", "extra" }, "extra" },
		{ 3, { "modelfs", "r", "--threads" }, "--threads" },
		{ 4, { "modelfs", "--model-control=watch", "r", "m" }, "expected none, poll or explicit" },
		{ 4, { "modelfs", "--load-model=a", "r", "m" }, "--load-model needs --model-control=explicit" },
		{ 5, { "modelfs", "--model-control=explicit", "--load-model=.hidden", "r", "m" }, "not a model name" },
		{ 5, { "modelfs", "--model-control=explicit", "--load-model=a/b", "r", "m" }, "not a model name" },
		{ 5, { "modelfs", "--model-control=none", "--poll-secs=5", "r", "m" }, "--poll-secs needs --model-control=poll" },
		{ 5, { "modelfs", "--model-control=explicit", "--poll-secs=5", "r", "m" }, "explicit mode watches nothing" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(parse(&o, &err, cases[i].argc, cases[i].argv), -EINVAL);
		assert_non_null(strstr(err.msg, cases[i].msg));
		mfs_options_release(&o);
	}
}

static void test_help_and_version_win(void **state)
{
	(void)state;
	mfs_options o;
	mfs_error err;
	char *argv[] = { "modelfs", "--bogus-later?", "--help" };
	/* --help stops parsing wherever it is... unless an error comes first. */
	assert_int_equal(parse(&o, &err, 3, argv), -EINVAL);
	mfs_options_release(&o);
	char *argv2[] = { "modelfs", "--help", "--bogus" };
	assert_int_equal(parse(&o, &err, 3, argv2), 0);
	assert_true(o.help);
	mfs_options_release(&o);
	char *argv3[] = { "modelfs", "--version" };
	assert_int_equal(parse(&o, &err, 2, argv3), 0);
	assert_true(o.version);
	mfs_options_release(&o);
	assert_non_null(strstr(mfs_options_usage(), "--max-request-bytes"));
	assert_non_null(strstr(mfs_options_usage(), "--max-json-bytes=N"));
	assert_non_null(strstr(mfs_options_usage(), "--max-memory=N"));
	assert_non_null(strstr(mfs_options_usage(), "--cache-size=N"));
}

static int parse_run(mfs_options *o, mfs_run_options *r, mfs_error *err, int argc, char **argv)
{
	mfs_options_init_run(o, r);
	mfs_error_clear(err);
	return mfs_options_parse_run(o, r, argc, argv, err);
}

static void test_run_takes_the_shared_options(void **state)
{
	(void)state;
	mfs_options o;
	mfs_run_options r;
	mfs_error err;
	char *argv[] = { "run", "--device=cpu", "repo/m", "--threads", "3", "A=a.npy",
			 "--log-level=debug", "--version", "2", "B=x=y.txt", "--out=o",
			 "--format", "json", "--max-request-bytes=1K", "--max-json-bytes", "2K",
			 "--opencl-device=1" };
	assert_int_equal(parse_run(&o, &r, &err, 17, argv), 0);
	assert_string_equal(r.target, "repo/m");
	assert_int_equal(r.n_inputs, 2);
	assert_string_equal(r.inputs[0], "A=a.npy");
	assert_string_equal(r.inputs[1], "B=x=y.txt");
	assert_int_equal(r.version, 2);
	assert_string_equal(r.out_dir, "o");
	assert_string_equal(r.format, "json");
	assert_int_equal(o.device, MFS_DEVICE_CPU);
	assert_int_equal(o.threads, 3);
	assert_int_equal(o.log_level, MFS_LOG_DEBUG);
	assert_true(o.max_request_bytes == 1024);
	assert_true(o.max_json_bytes == 2048);
	assert_string_equal(o.opencl_device, "1");
	assert_null(o.repository);
	mfs_run_options_release(&r);
	mfs_options_release(&o);
	/* Nothing is logged unless asked: run's one line says why it failed. */
	char *argv2[] = { "run", "m" };
	assert_int_equal(parse_run(&o, &r, &err, 2, argv2), 0);
	assert_int_equal(o.log_level, MFS_LOG_OFF);
	assert_int_equal(r.version, 0);
	mfs_run_options_release(&r);
	mfs_options_release(&o);
}

static void test_run_refuses_daemon_options_by_name(void **state)
{
	(void)state;
	mfs_options o;
	mfs_run_options r;
	mfs_error err;
	struct {
		int argc;
		char *argv[4];
		const char *msg;
	} cases[] = {
		{ 1, { "run" }, "no REPOSITORY/MODEL given" },
		{ 3, { "run", "m", "A" }, "'A' is not NAME=FILE" },
		{ 3, { "run", "m", "=a.npy" }, "'=a.npy' is not NAME=FILE" },
		{ 3, { "run", "-f", "m" }, "-f is an option of the daemon only" },
		{ 4, { "run", "-o", "allow_other", "m" }, "-o: mount options are the daemon's only" },
		{ 3, { "run", "--poll-secs=5", "m" }, "--poll-secs is an option of the daemon only" },
		{ 3, { "run", "--max-memory=1G", "m" }, "--max-memory is an option of the daemon only" },
		{ 3, { "run", "--model-control", "none" }, "--model-control is an option of the daemon only" },
		{ 3, { "run", "--version=0", "m" }, "--version: expected a positive version number" },
		{ 3, { "run", "m", "--version" }, "--version needs a value" },
		{ 3, { "run", "--format=csv", "m" }, "--format: expected npy, json, txt, raw or pb" },
		{ 3, { "run", "--out=", "m" }, "--out: empty directory name" },
		{ 3, { "run", "--threads=0", "m" }, "--threads: expected 1-1024, got '0'" },
		{ 3, { "run", "--bogus", "m" }, "unknown option '--bogus'" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(parse_run(&o, &r, &err, cases[i].argc, cases[i].argv), -EINVAL);
		if (!strstr(err.msg, cases[i].msg))
			fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, cases[i].msg);
		mfs_run_options_release(&r);
		mfs_options_release(&o);
	}
	/* run's own options are not the daemon's */
	char *argv[] = { "modelfs", "--out=o", "r", "m" };
	assert_int_equal(parse(&o, &err, 4, argv), -EINVAL);
	assert_non_null(strstr(err.msg, "unknown option '--out=o'"));
	mfs_options_release(&o);
	char *argv2[] = { "modelfs", "-o", "format=npy", "r", "m" };
	assert_int_equal(parse(&o, &err, 5, argv2), 0);
	assert_string_equal(o.fuse_opts, "format=npy");
	mfs_options_release(&o);
	assert_non_null(strstr(mfs_options_run_usage(), "--log-level=LEVEL"));
}

/* The custom backends' limits: 60 s each by default, 1-86400 s, also as
 * -o backend_init_timeout=S. */
static void test_backend_timeouts(void **state)
{
	(void)state;
	mfs_options o;
	mfs_error err;
	char *defaults[] = { "modelfs", "repo", "mnt" };
	assert_int_equal(parse(&o, &err, 3, defaults), 0);
	assert_int_equal(o.backend_init_timeout_secs, 60);
	assert_int_equal(o.backend_exec_timeout_secs, 60);
	mfs_options_release(&o);

	char *given[] = { "modelfs", "--backend-init-timeout=300", "-o",
			  "backend_exec_timeout=5", "repo", "mnt" };
	assert_int_equal(parse(&o, &err, 6, given), 0);
	assert_int_equal(o.backend_init_timeout_secs, 300);
	assert_int_equal(o.backend_exec_timeout_secs, 5);
	mfs_options_release(&o);

	char *zero[] = { "modelfs", "--backend-exec-timeout=0", "repo", "mnt" };
	assert_int_equal(parse(&o, &err, 4, zero), -EINVAL);
	assert_string_equal(err.msg, "--backend-exec-timeout: expected seconds (1-86400), got '0'");
	mfs_options_release(&o);
}

/* The operator's options (issue 31): Triton's names and meanings. */
static void test_operator_options(void **state)
{
	(void)state;
	mfs_options o;
	mfs_error err;
	char *defaults[] = { "modelfs", "repo", "mnt" };
	assert_int_equal(parse(&o, &err, 3, defaults), 0);
	assert_int_equal(o.model_load_threads, 4);
	assert_false(o.exit_on_error);           /* modelfs keeps its old behaviour */
	assert_true(o.strict_readiness);         /* Triton's default */
	assert_int_equal(o.log_format, MFS_LOG_FORMAT_DEFAULT);
	assert_null(o.log_file);
	mfs_options_release(&o);
	char *argv[] = { "modelfs", "--exit-on-error=true", "--strict-readiness", "false",
			 "--log-format=ISO8601", "--log-file=/tmp/x.log", "-o",
			 "model_load_thread_count=2", "repo", "mnt" };
	assert_int_equal(parse(&o, &err, 10, argv), 0);
	assert_true(o.exit_on_error);
	assert_false(o.strict_readiness);
	assert_int_equal(o.log_format, MFS_LOG_FORMAT_ISO8601);
	assert_string_equal(o.log_file, "/tmp/x.log");
	assert_int_equal(o.model_load_threads, 2);
	mfs_options_release(&o);
	static const char *bad[][2] = {
		{ "--exit-on-error=yes", "--exit-on-error: expected true or false, got 'yes'" },
		{ "--strict-readiness=", "--strict-readiness: expected true or false" },
		{ "--model-load-thread-count=0", "--model-load-thread-count: expected 1-64" },
		{ "--model-load-thread-count=65", "--model-load-thread-count: expected 1-64" },
		{ "--log-format=json", "--log-format: expected default or ISO8601" },
		{ "--log-file=", "--log-file: empty file name" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *a[] = { "modelfs", (char *)bad[i][0], "repo", "mnt" };
		mfs_error_clear(&err);
		assert_int_equal(parse(&o, &err, 4, a), -EINVAL);
		assert_non_null(strstr(err.msg, bad[i][1]));
		mfs_options_release(&o);
	}
	/* modelfs run mounts nothing and loads one model: refused by name */
	mfs_run_options r;
	char *run[] = { "run", "--exit-on-error=true", "repo/m" };
	mfs_options_init_run(&o, &r);
	assert_int_equal(mfs_options_parse_run(&o, &r, 3, run, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "--exit-on-error is an option of the daemon only"));
	mfs_options_release(&o);
	mfs_run_options_release(&r);
}

/* --cache-dir is made absolute (it need not exist); --metrics-config
 * items add up; run takes the first and refuses the second by name. */
static void test_cache_dir_and_metrics_config(void **state)
{
	(void)state;
	mfs_options o;
	mfs_run_options r;
	mfs_error err;
	char cwd[1024], want[1100];
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	char *argv[] = { "modelfs", "--cache-dir", "not/yet", "--metrics-config",
			 "summary_latencies=true", "-o", "metrics_config=summary_quantiles=0.5:0.05",
			 "repo", "mnt" };
	assert_int_equal(parse(&o, &err, 9, argv), 0);
	snprintf(want, sizeof(want), "%s/not/yet", cwd);
	assert_string_equal(o.cache_dir, want);
	assert_true(o.metrics.summary_latencies);
	assert_true(o.metrics.counter_latencies);
	assert_int_equal(o.metrics.n_quantiles, 1);
	mfs_options_release(&o);
	char *abs[] = { "modelfs", "--cache-dir=/var/cache/x", "repo", "mnt" };
	assert_int_equal(parse(&o, &err, 4, abs), 0);
	assert_string_equal(o.cache_dir, "/var/cache/x");
	mfs_options_release(&o);
	char *bad[] = { "modelfs", "--metrics-config", "summary_latencies=maybe", "repo", "mnt" };
	assert_int_equal(parse(&o, &err, 5, bad), -EINVAL);
	assert_non_null(strstr(err.msg, "summary_latencies"));
	mfs_options_release(&o);
	char *empty[] = { "modelfs", "--cache-dir=", "repo", "mnt" };
	assert_int_equal(parse(&o, &err, 4, empty), -EINVAL);
	mfs_options_release(&o);
	char *run_ok[] = { "run", "--cache-dir=/tmp/c", "repo/m", "x=a.npy" };
	assert_int_equal(parse_run(&o, &r, &err, 4, run_ok), 0);
	assert_string_equal(o.cache_dir, "/tmp/c");
	mfs_options_release(&o);
	mfs_run_options_release(&r);
	char *run_bad[] = { "run", "--metrics-config=summary_latencies=true", "repo/m", "x=a.npy" };
	assert_int_equal(parse_run(&o, &r, &err, 4, run_bad), -EINVAL);
	assert_non_null(strstr(err.msg, "--metrics-config"));
	mfs_options_release(&o);
	mfs_run_options_release(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_every_option),
		cmocka_unit_test(test_daemon_options_as_mount_options),
		cmocka_unit_test(test_model_control),
		cmocka_unit_test(test_errors_name_the_option),
		cmocka_unit_test(test_help_and_version_win),
		cmocka_unit_test(test_run_takes_the_shared_options),
		cmocka_unit_test(test_run_refuses_daemon_options_by_name),
		cmocka_unit_test(test_backend_timeouts),
		cmocka_unit_test(test_operator_options),
		cmocka_unit_test(test_cache_dir_and_metrics_config),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

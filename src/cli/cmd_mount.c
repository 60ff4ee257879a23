/* cmd_mount.c - `modelfs [OPTIONS] REPOSITORY MOUNTPOINT`: the daemon.
 *
 * Start-up, in this order so that every error is one line on the terminal
 * and `modelfs REPO MNT` returns once the mount is there (SPEC.md section
 * 1: mount first, load after):
 *   parse options; open --log-file; check the repository and the
 *   mountpoint; fork (unless -f; the parent waits for the child's word and
 *   exits with it); block SIGINT/SIGTERM/SIGHUP in every thread; start the
 *   compute threads; list every model (LOADING); mount; start the first
 *   load (the reloader's thread, --model-load-thread-count at once) and
 *   the FUSE loop side by side; with --exit-on-error wait for the first
 *   load (a failure: its reasons on stderr, stop, exit 1); tell the
 *   parent; serve.  systemd's READY=1 comes from the reaper thread the
 *   first time MOUNT/.ready would succeed (health.h).
 *
 * Serving: our own FUSE loop (fuse_loop.h: N threads blocked in the
 * device read, one woken per request, stopped from any thread) instead
 * of fuse_session_loop_mt, whose threads a signal cannot reliably wake on
 * libfuse 3.14.  Signals reach a handler that only writes the signal
 * number to a pipe (OpenBLAS and OpenMP start threads before main, so a
 * signal may land on a thread we did not create: blocking it in ours and
 * sigwait() would not be enough); one thread reads the pipe.  SIGHUP
 * asks the reloader to look at every model again (`systemctl reload`);
 * SIGINT or SIGTERM stops taking requests, lets queued and running ones finish (bounded), answers every
 * stored read, and stops the loop; then the mount goes away.  A
 * `fusermount3 -u` from outside ends the loop the same way (ENODEV).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "backend_worker.h"
#include "bigbuf.h"
#include "cache_dir.h"
#include "commands.h"
#include "engine.h"
#include "fs.h"
#include "fuse_loop.h"
#include "health.h"
#include "load_pool.h"
#include "log.h"
#include "membudget.h"
#include "response_cache.h"
#include "metrics.h"
#include "options.h"
#include "registry.h"
#include "reloader.h"
#include "scheduler.h"

/* FUSE operations served at once: a short run computes on the thread
 * that committed its last input, and a request-directory cycle has two
 * or three operations in flight (an asynchronous RELEASE beside the
 * next one). */
#define FUSE_THREADS 8
#define DRAIN_NS (10ull * 1000000000ull)   /* how long running requests get at shutdown */
#define CLOSE_GRACE_NS (2ull * 1000000000ull)   /* and then open files to be read and closed */

typedef struct daemon_ctx {
	mfs_options opts;
	struct fuse_session *se;
	mfs_fs *fs;
	mfs_registry *reg;
	mfs_reloader *reloader;      /* hot reload (reloader.h) */
	mfs_sched *sched;
	mfs_rcache *cache;           /* --cache-size's response cache; NULL: none */
	mfs_fuse_loop *loop;         /* set before any signal can stop it */
	pthread_t sig_thread, reaper;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stopping;               /* under lock */
	bool notified_ready;         /* reaper thread only: READY=1 sent */
} daemon_ctx;

/* Is path a mount point (listed in /proc/self/mountinfo)? */
static bool is_mounted(const char *path)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[8192];
	bool found = false;
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		/* id parent major:minor root mountpoint ... (octal escapes) */
		char *p = line;
		for (int field = 0; field < 4 && p; field++) {
			p = strchr(p, ' ');
			if (p)
				p++;
		}
		if (!p)
			continue;
		char mp[PATH_MAX];
		size_t k = 0;
		while (*p && *p != ' ' && k + 1 < sizeof(mp)) {
			if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] && p[3]) {
				mp[k++] = (char)(((p[1] - '0') << 6) | ((p[2] - '0') << 3) | (p[3] - '0'));
				p += 4;
			} else {
				mp[k++] = *p++;
			}
		}
		mp[k] = '\0';
		found = strcmp(mp, path) == 0;
	}
	fclose(f);
	return found;
}

/* --log-file: opened (appending) before the daemon detaches and changes
 * its directory, so that a file it cannot write is a start-up error. */
static int open_log_file(const mfs_options *o)
{
	if (!o->log_file)
		return 0;
	int fd = open(o->log_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (fd < 0) {
		fprintf(stderr, "modelfs: --log-file '%s': %s\n", o->log_file, strerror(errno));
		return -1;
	}
	mfs_log_use_fd(fd);
	return 0;
}

/* One clear line for each reason not to start. */
static int check_paths(mfs_options *o, char *repo, char *mnt)
{
	struct stat st;
	if (!realpath(o->repository, repo) || stat(repo, &st) < 0) {
		fprintf(stderr, "modelfs: repository '%s': %s\n", o->repository, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "modelfs: repository '%s' is not a directory\n", o->repository);
		return -1;
	}
	if (!realpath(o->mountpoint, mnt) || stat(mnt, &st) < 0) {
		if (errno == ENOTCONN)
			fprintf(stderr, "modelfs: mountpoint '%s' is busy (a dead FUSE mount: run fusermount3 -u %s)\n",
				o->mountpoint, o->mountpoint);
		else
			fprintf(stderr, "modelfs: mountpoint '%s': %s\n", o->mountpoint, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "modelfs: mountpoint '%s' is not a directory\n", o->mountpoint);
		return -1;
	}
	if (is_mounted(mnt)) {
		fprintf(stderr, "modelfs: mountpoint '%s' is busy (something is mounted there)\n", o->mountpoint);
		return -1;
	}
	size_t rl = strlen(repo);
	if (strncmp(mnt, repo, rl) == 0 && (mnt[rl] == '/' || mnt[rl] == '\0')) {
		fprintf(stderr, "modelfs: mountpoint '%s' must not be inside the repository\n", o->mountpoint);
		return -1;
	}
	return 0;
}

/* Fork; the parent waits for one status byte from the child and exits
 * with it (0: mounted and serving).  Returns the write end in the child. */
static int daemonize(void)
{
	int p[2];
	if (pipe(p) < 0) {
		fprintf(stderr, "modelfs: pipe: %s\n", strerror(errno));
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "modelfs: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid > 0) {
		unsigned char status = 1;
		close(p[1]);
		ssize_t n;
		do
			n = read(p[0], &status, 1);
		while (n < 0 && errno == EINTR);
		if (n != 1) {
			/* The child died without a word: report how. */
			int ws;
			waitpid(pid, &ws, 0);
			_exit(WIFEXITED(ws) && WEXITSTATUS(ws) ? WEXITSTATUS(ws) : 1);
		}
		_exit(status);
	}
	close(p[0]);
	setsid();
	/* Until it detaches, the daemon's stdio is the caller's terminal or
	 * pipe, for one line saying why it could not start (and fusermount3's
	 * own); no custom-backend worker it starts may keep them open. */
	mfs_worker_quiet_stderr();
	return p[1];
}

static void tell_parent(int *fd, unsigned char status)
{
	if (*fd < 0)
		return;
	ssize_t n;
	do
		n = write(*fd, &status, 1);
	while (n < 0 && errno == EINTR);
	close(*fd);
	*fd = -1;
}

/* The graceful part of stopping, run once by whoever notices first. */
static void shut_down(daemon_ctx *d, const char *why)
{
	pthread_mutex_lock(&d->lock);
	bool first = !d->stopping;
	d->stopping = true;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	if (!first)
		return;
	mfs_log_info("stopping (%s): no new requests; letting running ones finish", why);
	/* Custom backends: a load in progress stops waiting for init now (a
	 * hung one would hold the reloader below), a run in progress gets
	 * the drain's time and then its worker is killed. */
	mfs_worker_stop_all(DRAIN_NS / 1000000u);
	sd_notify(0, "STOPPING=1");
	mfs_fs_stop_accepting(d->fs);
	/* No more reloads; stopped while the FUSE loop still runs, so a
	 * reload's notification to the kernel can never wait on a loop that
	 * has ended.  Freed once the loop is over: a control file write may
	 * still reach it (and is refused). */
	mfs_reloader_stop(d->reloader);
	mfs_sched_stop(d->sched, DRAIN_NS);
	mfs_fs_cancel_reads(d->fs, EINTR);
	uint64_t t0 = mfs_now_ns();
	/* Readers that got their answer may need more reads to take all of
	 * it (a result over one read's size): serve them a little longer. */
	while (mfs_fs_open_files(d->fs) > 0 && mfs_now_ns() - t0 < CLOSE_GRACE_NS) {
		struct timespec ts = { 0, 20000000 };
		nanosleep(&ts, NULL);
	}
	mfs_fuse_loop_stop(d->loop);
}

static int sig_pipe[2] = { -1, -1 };

static void on_signal(int sig)
{
	int saved = errno;
	unsigned char c = (unsigned char)sig;
	ssize_t n = write(sig_pipe[1], &c, 1);
	(void)n;
	errno = saved;
}

/* SIGHUP: rescan, and go on reading.  Byte 0 on the pipe: the loop
 * ended by itself (unmounted from outside). */
static void *signal_thread(void *arg)
{
	daemon_ctx *d = arg;
	unsigned char sig = 0;
	ssize_t n;
	for (;;) {
		do
			n = read(sig_pipe[0], &sig, 1);
		while (n < 0 && errno == EINTR);
		if (n != 1 || sig != SIGHUP)
			break;
		mfs_log_info("SIGHUP: looking at every model in the repository again");
		mfs_reloader_rescan(d->reloader);
	}
	if (n != 1 || sig == 0)
		shut_down(d, "the filesystem was unmounted");
	else
		shut_down(d, sig == SIGINT ? "SIGINT" : "SIGTERM");
	return NULL;
}

static int install_signals(void)
{
	if (pipe2(sig_pipe, O_CLOEXEC) < 0)
		return -1;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

/* systemd's Type=notify: READY=1 the first time MOUNT/.ready would
 * succeed (nothing happens without $NOTIFY_SOCKET). */
static void notify_ready(daemon_ctx *d)
{
	char why[MFS_ERROR_MSG_MAX];
	if (d->notified_ready ||
	    mfs_health_ready(d->reg, mfs_reloader_first_load_done(d->reloader),
			     d->opts.strict_readiness, why, sizeof(why)) < 0)
		return;
	d->notified_ready = true;
	mfs_log_info("ready (MOUNT/.ready reads \"ready\"; strict readiness %s)",
		     d->opts.strict_readiness ? "true" : "false");
	sd_notifyf(0, "READY=1\nSTATUS=serving %s on %s", d->opts.repository, d->opts.mountpoint);
}

/* Request expiry and read deadlines, and the readiness notification,
 * once a second (not a FUSE thread). */
static void *reaper_thread(void *arg)
{
	daemon_ctx *d = arg;
	pthread_mutex_lock(&d->lock);
	while (!d->stopping) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&d->cond, &d->lock, &ts);
		if (d->stopping)
			break;
		pthread_mutex_unlock(&d->lock);
		notify_ready(d);
		mfs_fs_expire(d->fs);
		mfs_bigbuf_trim(MFS_BIGBUF_IDLE_NS);
		pthread_mutex_lock(&d->lock);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

/* Reloader callback (loader thread, no lock held): the kernel's cached
 * entries for the model are stale now. */
static void model_changed(void *ctx, const char *model)
{
	mfs_fs_model_changed(ctx, model);
}

/* The compute threads, the registry, the reloader (which loads the
 * models) and the filesystem's state; one line on stderr for a failure. */
/* The engine's buffer pools against --max-memory (engine.h). */
static int budget_take(uint64_t n)
{
	return mfs_membudget_take(n, NULL);
}

static int start_parts(daemon_ctx *d, const char *repo, int threads)
{
	mfs_error err;
	mfs_error_clear(&err);
	/* Set before the compute threads start: each makes its OpenMP team
	 * at once (mfs_engine_thread_warm), not at its first run. */
	mfs_engine_set_threads(threads);
	if (mfs_sched_new_with_init(threads, mfs_engine_thread_warm, &d->sched, &err) < 0)
		goto fail;
	mfs_worker_set_timeouts(d->opts.backend_init_timeout_secs, d->opts.backend_exec_timeout_secs);
	mfs_config_set_default_max_batch_size(d->opts.default_max_batch_size);
	/* engine_threads left 0: set above */
	if (d->opts.cache_size && mfs_rcache_new(d->opts.cache_size, &d->cache) < 0) {
		mfs_fail(&err, ENOMEM, "out of memory");
		goto fail;
	}
	mfs_registry_conf rc_ = { .repository = repo, .sched = d->sched,
				  .route = { .device = d->opts.device,
					     .opencl_device = d->opts.opencl_device,
					     .defer_trial = true },
				  .backend_dir = d->opts.backend_dir, .cache = d->cache };
	if (mfs_registry_new(&rc_, &d->reg, &err) < 0)
		goto fail;
	/* Watches the repository, then loads it (hot reload: reloader.h). */
	mfs_reloader_conf rlc = { .repository = repo, .registry = d->reg,
				  .mode = d->opts.model_control,
				  .load_models = d->opts.load_models,
				  .n_load_models = d->opts.n_load_models,
				  .load_threads = mfs_load_pool_threads(d->opts.model_load_threads),
				  .poll_secs = d->opts.poll_secs, .quiet_ms = d->opts.reload_quiet_ms };
	/* Large tensors (a model's 100 MB output) come from the pool of kept
	 * large buffers, as the file buffers do: set before any model loads. */
	mfs_tensor_set_big_storage(mfs_bigbuf_alloc, mfs_bigbuf_free, MFS_BIGBUF_MIN);
	if (mfs_reloader_new(&rlc, &d->reloader, &err) < 0) {
		fprintf(stderr, "modelfs: repository '%s': %s\n", d->opts.repository, err.msg);
		return -1;
	}
	mfs_membudget_init(d->opts.max_memory);
	/* From now on what runs allocate counts too; the load's warm-up
	 * buffers were made before (a model that loaded keeps them). */
	mfs_engine_set_memory_hooks(budget_take, mfs_membudget_give);
	mfs_fs_conf fc = {
		.registry = d->reg,
		.max_request_bytes = d->opts.max_request_bytes,
		.max_json_bytes = d->opts.max_json_bytes,
		.request_ttl_ns = (uint64_t)d->opts.request_ttl_secs * 1000000000ull,
		.max_requests = d->opts.max_requests,
		.max_requests_per_uid = mfs_options_requests_per_uid(&d->opts),
		.read_deadline_ns = (uint64_t)(d->opts.request_ttl_secs > 60 ? d->opts.request_ttl_secs : 60) * 1000000000ull,
		.control = d->opts.model_control == MFS_CONTROL_EXPLICIT ? d->reloader : NULL,
		.loader = d->reloader,
		.strict_readiness = d->opts.strict_readiness,
	};
	if (mfs_fs_new(&fc, &d->fs, &err) < 0)
		goto fail;
	return 0;
fail:
	fprintf(stderr, "modelfs: %s\n", err.msg);
	return -1;
}

/* The FUSE session, with the -o options that are FUSE's, mounted on mnt. */
static int mount_session(daemon_ctx *d, const char *repo, const char *mnt)
{
	char fsname[PATH_MAX + 16];
	snprintf(fsname, sizeof(fsname), "-ofsname=%s,subtype=modelfs", repo);
	char *fargv[4] = { "modelfs", fsname, NULL, NULL };
	int fargc = 2;
	char extra[4096];
	if (d->opts.fuse_opts) {
		snprintf(extra, sizeof(extra), "-o%s", d->opts.fuse_opts);
		fargv[fargc++] = extra;
	}
	struct fuse_args args = FUSE_ARGS_INIT(fargc, fargv);
	d->se = fuse_session_new(&args, mfs_fs_ops(), sizeof(struct fuse_lowlevel_ops), d->fs);
	fuse_opt_free_args(&args);
	if (!d->se) {
		fprintf(stderr, "modelfs: bad FUSE mount options '%s'\n", d->opts.fuse_opts ? d->opts.fuse_opts : "");
		return -1;
	}
	mfs_fs_set_session(d->fs, d->se);
	mfs_reloader_set_callback(d->reloader, model_changed, d->fs);
	if (fuse_session_mount(d->se, mnt) != 0) {
		fprintf(stderr, "modelfs: cannot mount on '%s' (see the line above)\n", d->opts.mountpoint);
		return -1;
	}
	return 0;
}

/* Start-up worked: tell the parent, and (a daemon) leave the terminal. */
static void detach(int *notify_fd)
{
	if (*notify_fd < 0)
		return;
	int nullfd = open("/dev/null", O_RDWR);
	tell_parent(notify_fd, 0);
	if (nullfd >= 0) {
		dup2(nullfd, 0);
		dup2(nullfd, 1);
		dup2(nullfd, 2);
		if (nullfd > 2)
			close(nullfd);
	}
}

/* --exit-on-error: wait for the first load; false (and every failed
 * version's reason on stderr, still the caller's) when a version failed
 * or the daemon stopped first. */
static bool first_load_ok(daemon_ctx *d)
{
	int failed = mfs_reloader_wait_first_load(d->reloader);
	if (failed == 0)
		return true;
	if (failed < 0) {
		fprintf(stderr, "modelfs: stopped before the models had loaded\n");
		return false;
	}
	mfs_model_info *ms;
	int n;
	if (mfs_registry_snapshot(d->reg, &ms, &n) == 0) {
		for (int i = 0; i < n; i++)
			for (int k = 0; k < ms[i].n_versions; k++)
				if (ms[i].versions[k].state == MFS_VS_UNAVAILABLE)
					fprintf(stderr, "modelfs: model '%s' version %lld: %s\n", ms[i].name,
						(long long)ms[i].versions[k].version, ms[i].versions[k].reason);
		mfs_registry_snapshot_free(ms, n);
	}
	fprintf(stderr, "modelfs: %d model version(s) failed to load; stopping (--exit-on-error=true)\n",
		failed);
	return false;
}

/* Serve until a signal's shutdown or an unmount ends the FUSE loop; the
 * first load runs beside it.  0, or -1 when the loop's threads could not
 * start or (--exit-on-error) a model failed its first load. */
static int serve_loop(daemon_ctx *d, int *notify_fd)
{
	/* The loop first: a signal's shutdown stops it. */
	d->loop = mfs_fuse_loop_start(d->se, FUSE_THREADS);
	if (!d->loop) {
		mfs_log_error("cannot start the threads that serve the mount");
		return -1;
	}
	pthread_create(&d->sig_thread, NULL, signal_thread, d);
	pthread_create(&d->reaper, NULL, reaper_thread, d);
	bool ok = !d->opts.exit_on_error || first_load_ok(d);
	if (ok)
		detach(notify_fd);
	else
		shut_down(d, "a model failed its first load (--exit-on-error=true)");
	mfs_fuse_loop_join(d->loop);
	/* Ended from outside (unmount): run the same shutdown. */
	unsigned char zero = 0;
	ssize_t wn = write(sig_pipe[1], &zero, 1);
	(void)wn;
	pthread_join(d->sig_thread, NULL);
	pthread_join(d->reaper, NULL);
	mfs_fuse_loop_free(d->loop);
	d->loop = NULL;
	return ok ? 0 : -1;
}

static int serve(daemon_ctx *d, const char *repo, const char *mnt, int notify_fd)
{
	mfs_error err;
	int rc = 1;
	mfs_error_clear(&err);
	int threads = d->opts.threads > 0 ? d->opts.threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (threads < 1)
		threads = 1;

	if (start_parts(d, repo, threads) < 0 || mount_session(d, repo, mnt) < 0)
		goto out;
	if (mfs_reloader_run(d->reloader, &err) < 0) {
		fprintf(stderr, "modelfs: %s\n", err.msg);
		goto unmount;
	}
	mfs_log_info("serving '%s' on '%s' (%d compute threads); the models load on %d thread(s)",
		     repo, mnt, threads, mfs_load_pool_threads(d->opts.model_load_threads));
	if (serve_loop(d, &notify_fd) == 0)
		rc = 0;
unmount:
	/* No reload may notify the kernel about a session that is gone. */
	mfs_reloader_free(d->reloader);
	d->reloader = NULL;
	fuse_session_unmount(d->se);
	mfs_log_info("unmounted '%s'", mnt);
out:
	mfs_reloader_free(d->reloader);
	if (d->se)
		fuse_session_destroy(d->se);
	if (d->sched)
		mfs_sched_stop(d->sched, 0);
	mfs_fs_free(d->fs);
	mfs_registry_free(d->reg);
	mfs_sched_free(d->sched);
	mfs_rcache_free(d->cache);   /* after the last version that used it */
	mfs_router_shutdown();     /* after every engine context is gone */
	mfs_bigbuf_drain();
	tell_parent(&notify_fd, (unsigned char)rc);
	return rc;
}

int mfs_cmd_mount(int argc, char **argv)
{
	daemon_ctx d;
	mfs_error err;
	char repo[PATH_MAX], mnt[PATH_MAX];

	memset(&d, 0, sizeof(d));
	mfs_error_clear(&err);
	mfs_options_init(&d.opts);
	if (mfs_options_parse(&d.opts, argc, argv, &err) < 0) {
		fprintf(stderr, "modelfs: %s\n", err.msg);
		mfs_options_release(&d.opts);
		return 2;
	}
	if (d.opts.help) {
		fputs(mfs_options_usage(), stdout);
		mfs_options_release(&d.opts);
		return 0;
	}
	if (d.opts.version) {
		printf("modelfs %s (libfuse %d.%d)\n", MODELFS_VERSION, FUSE_MAJOR_VERSION, FUSE_MINOR_VERSION);
		mfs_options_release(&d.opts);
		return 0;
	}
	mfs_log_set_level((mfs_log_level)d.opts.log_level);
	mfs_log_set_format((mfs_log_format)d.opts.log_format);
	mfs_cache_set_base(d.opts.cache_dir);
	mfs_metrics_configure(&d.opts.metrics);
	if (open_log_file(&d.opts) < 0 || check_paths(&d.opts, repo, mnt) < 0) {
		mfs_options_release(&d.opts);
		return 1;
	}

	int notify_fd = -1;
	if (!d.opts.foreground && (notify_fd = daemonize()) < 0) {
		mfs_options_release(&d.opts);
		return 1;
	}
	/* A daemon logs to syslog from the start; only a reason not to start
	 * is printed (one line, on the terminal it was started from). */
	if (notify_fd >= 0 && !d.opts.log_file)
		mfs_log_use_syslog(1);
	/* The daemon never touches the mountpoint through its own mount. */
	if (chdir("/") != 0)
		mfs_log_warn("chdir /: %s", strerror(errno));

	if (install_signals() < 0) {
		fprintf(stderr, "modelfs: pipe: %s\n", strerror(errno));
		mfs_options_release(&d.opts);
		return 1;
	}
	pthread_mutex_init(&d.lock, NULL);
	pthread_cond_init(&d.cond, NULL);

	int rc = serve(&d, repo, mnt, notify_fd);

	pthread_mutex_destroy(&d.lock);
	pthread_cond_destroy(&d.cond);
	mfs_options_release(&d.opts);
	return rc;
}

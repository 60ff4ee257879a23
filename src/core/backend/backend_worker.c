/* backend_worker.c - see backend_worker.h. */
#include "backend_worker.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "log.h"
#include "worker_proto.h"
#include "worker_serve.h"

extern char **environ;

enum { BACKOFF_FIRST_MS = 50, BACKOFF_MAX_MS = 5000 };

struct mfs_worker {
	char *program;
	char *init_json;              /* the INIT payload, kept to restart */
	char *label;                  /* "model 'x' version 1: backend 'y'" */
	const mfs_model_config *config;
	pid_t pid;                    /* 0: no worker running */
	int sock;
	mfs_shm shm;
	int crashes;                  /* in a row, without a run that succeeded */
	uint64_t last_crash_ms;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* "killed by signal 11 (Segmentation fault)" or "exited with status 3". */
static void describe_exit(int status, char *buf, size_t size)
{
	if (WIFSIGNALED(status))
		snprintf(buf, size, "killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else if (WIFEXITED(status))
		snprintf(buf, size, "exited with status %d", WEXITSTATUS(status));
	else
		snprintf(buf, size, "stopped");
}

/* Collect the worker (it died or was told to go); kill it after
 * grace_ms.  The socket and pid are cleared. */
static void reap(mfs_worker *w, int grace_ms, char *why, size_t why_size)
{
	int status = 0;
	pid_t got = 0;

	if (w->sock >= 0)
		close(w->sock);
	w->sock = -1;
	if (w->pid <= 0)
		return;
	for (int waited = 0; waited <= grace_ms; waited += 5) {
		got = waitpid(w->pid, &status, WNOHANG);
		if (got != 0)
			break;
		usleep(5000);
	}
	if (got == 0) {
		kill(w->pid, SIGKILL);
		got = waitpid(w->pid, &status, 0);
	}
	if (why)
		describe_exit(got == w->pid ? status : 0, why, why_size);
	w->pid = 0;
}

static atomic_bool quiet_stderr;

void mfs_worker_quiet_stderr(void)
{
	atomic_store(&quiet_stderr, true);
}

/* Spawn the worker and run INIT.  On failure nothing runs. */
static int start(mfs_worker *w, mfs_error *err)
{
	int sv[2], child_fd, rc;
	posix_spawn_file_actions_t fa;
	/* argv[0] "modelfs": what ps shows, whatever the program path. */
	char *argv[] = { (char *)"modelfs", (char *)MFS_WORKER_FLAG, NULL };
	size_t len = strlen(w->init_json);
	mfs_wmsg m = { .op = MFS_WOP_INIT, .len = len };
	char why[160];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		return mfs_fail(err, errno, "%s: socketpair: %s", w->label, strerror(errno));
	/* dup2 onto MFS_WORKER_FD clears close-on-exec there; if the socket
	 * already is that fd, dup2 would be a no-op that keeps the flag. */
	child_fd = sv[1];
	if (child_fd == MFS_WORKER_FD) {
		child_fd = fcntl(sv[1], F_DUPFD_CLOEXEC, MFS_WORKER_FD + 1);
		close(sv[1]);
		if (child_fd < 0) {
			close(sv[0]);
			return mfs_fail(err, errno, "%s: %s", w->label, strerror(errno));
		}
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, child_fd, MFS_WORKER_FD);
	/* The worker reads and writes nothing on stdin and stdout.  Its
	 * stderr (a backend's own messages, a sanitizer's report) is the
	 * daemon's, unless the daemon will detach (mfs_worker_quiet_stderr):
	 * a worker holding the terminal or pipe it was started from would
	 * keep `$(modelfs ...)` and ssh waiting forever. */
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	if (atomic_load(&quiet_stderr) || fcntl(2, F_GETFD) < 0)
		posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	/* Nothing else of the daemon's (the /dev/fuse fd, other workers'
	 * sockets) goes to the worker. */
	posix_spawn_file_actions_addclosefrom_np(&fa, MFS_WORKER_FD + 1);
	/* The daemon ignores SIGPIPE and its threads may block signals; the
	 * worker starts with every signal at its default and none blocked,
	 * so that a backend dies of what would kill a program of its own. */
	posix_spawnattr_t attr;
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	rc = posix_spawn(&w->pid, w->program, &fa, &attr, argv, environ);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	close(child_fd);
	if (rc != 0) {
		close(sv[0]);
		w->pid = 0;
		return mfs_fail(err, EIO, "%s: cannot start a worker (%s): %s", w->label,
				w->program, strerror(rc));
	}
	w->sock = sv[0];
	rc = mfs_shm_reserve(&w->shm, len, err);
	if (rc == 0) {
		memcpy(w->shm.base, w->init_json, len);
		rc = mfs_wire_send(w->sock, &m, w->shm.fd, err);
	}
	if (rc == 0)
		rc = mfs_wire_recv(w->sock, &m, NULL, err);
	if (rc == -EPIPE) {
		reap(w, 1000, why, sizeof(why));
		return mfs_fail(err, EIO, "%s: the worker died while starting: %s", w->label, why);
	}
	if (rc)
		mfs_error_prefix(err, "%s: ", w->label);
	else if (m.status != 0)
		rc = mfs_fail(err, EINVAL, "%s: %s", w->label, m.text);
	if (rc) {
		reap(w, 2000, NULL, 0);
		return rc;
	}
	mfs_log_debug("%s: worker %d started", w->label, (int)w->pid);
	return 0;
}

static char *init_payload(const mfs_worker_spec *s)
{
	json_t *env = json_object();
	char *text;

	json_object_set_new(env, "library", json_string(s->library));
	json_object_set_new(env, "model", json_string(s->model_name));
	json_object_set_new(env, "version", json_integer(s->version));
	json_object_set_new(env, "version_dir", json_string(s->version_dir));
	json_object_set_new(env, "instance", json_integer(s->instance));
	json_object_set_new(env, "config", mfs_config_to_json(s->config));
	text = json_dumps(env, JSON_COMPACT);
	json_decref(env);
	return text;
}

int mfs_worker_new(const mfs_worker_spec *spec, mfs_worker **out, mfs_error *err)
{
	mfs_worker *w = calloc(1, sizeof(*w));
	int rc;

	*out = NULL;
	if (!w)
		return mfs_fail(err, ENOMEM, "out of memory");
	w->sock = -1;
	w->shm.fd = -1;
	w->config = spec->config;
	w->program = strdup(spec->program);
	w->init_json = init_payload(spec);
	if (asprintf(&w->label, "model '%s' version %" PRId64 ": backend '%s'", spec->model_name,
		     spec->version, spec->config->backend) < 0)
		w->label = NULL;
	if (!w->program || !w->init_json || !w->label) {
		mfs_worker_free(w);
		return mfs_fail(err, ENOMEM, "out of memory");
	}
	rc = mfs_shm_create(&w->shm, err);
	if (rc == 0)
		rc = start(w, err);
	if (rc) {
		mfs_worker_free(w);
		return rc;
	}
	*out = w;
	return 0;
}

pid_t mfs_worker_pid(const mfs_worker *w)
{
	return w->pid;
}

/* A fresh worker after a crash, not sooner than the backoff allows. */
static int restart(mfs_worker *w, mfs_error *err)
{
	if (w->crashes > 0) {
		uint64_t wait = BACKOFF_FIRST_MS;
		for (int i = 1; i < w->crashes && wait < BACKOFF_MAX_MS; i++)
			wait *= 2;
		if (wait > BACKOFF_MAX_MS)
			wait = BACKOFF_MAX_MS;
		uint64_t since = now_ms() - w->last_crash_ms;
		if (since < wait)
			usleep((useconds_t)(wait - since) * 1000u);
	}
	int rc = start(w, err);
	if (rc == 0)
		mfs_log_info("%s: new worker %d after %d crash%s", w->label, (int)w->pid,
			     w->crashes, w->crashes == 1 ? "" : "es");
	return rc;
}

/* The outputs against the config: data type, rank, fixed dims, and the
 * batch dim equal to the inputs'. */
static int check_outputs(const mfs_worker *w, const mfs_tensor *inputs, const mfs_tensor *outs,
			 mfs_error *err)
{
	const mfs_model_config *c = w->config;
	int batched = c->max_batch_size > 0;
	int64_t batch = -1;

	for (int i = 0; batched && i < c->n_inputs && batch < 0; i++)
		if (inputs[i].shape.rank > 0)
			batch = inputs[i].shape.dims[0];
	for (int i = 0; i < c->n_outputs; i++) {
		const mfs_io_config *io = &c->outputs[i];
		const mfs_tensor *t = &outs[i];
		char got[128];

		mfs_shape_format(&t->shape, got, sizeof(got));
		if (t->dtype != io->dtype)
			return mfs_fail(err, EIO, "%s: output '%s' came back as %s, the config says %s",
					w->label, io->name, mfs_dtype_config_name(t->dtype),
					mfs_dtype_config_name(io->dtype));
		if (t->shape.rank != io->rank + batched)
			return mfs_fail(err, EIO, "%s: output '%s' came back with shape %s, the config "
					"says %d dims%s", w->label, io->name, got, io->rank,
					batched ? " after the batch dim" : "");
		if (batched && batch >= 0 && t->shape.dims[0] != batch)
			return mfs_fail(err, EIO, "%s: output '%s' came back with shape %s, a batch of "
					"%lld where the inputs have %lld", w->label, io->name, got,
					(long long)t->shape.dims[0], (long long)batch);
		for (int d = 0; d < io->rank; d++)
			if (io->dims[d] >= 0 && t->shape.dims[d + batched] != io->dims[d])
				return mfs_fail(err, EIO, "%s: output '%s' came back with shape %s, "
						"the config fixes dim %d at %lld", w->label, io->name,
						got, d, (long long)io->dims[d]);
	}
	return 0;
}

int mfs_worker_run(mfs_worker *w, const mfs_tensor *inputs, mfs_tensor *outputs,
		   mfs_error *err)
{
	const mfs_model_config *c = w->config;
	mfs_wmsg m = { .op = MFS_WOP_EXEC };
	char why[160];
	int rc;

	/* A worker that fails to start again fails this run (EIO: the
	 * model is loaded, its backend did not run). */
	if (w->pid <= 0 && (rc = restart(w, err))) {
		err->code = EIO;
		return -EIO;
	}
	rc = mfs_wire_put_tensors(&w->shm, inputs, c->n_inputs, &m.len, err);
	if (rc)
		return rc;
	rc = mfs_wire_send(w->sock, &m, -1, err);
	if (rc == 0)
		rc = mfs_wire_recv(w->sock, &m, NULL, err);
	if (rc == -EPIPE) {
		pid_t pid = w->pid;
		reap(w, 1000, why, sizeof(why));
		w->crashes++;
		w->last_crash_ms = now_ms();
		mfs_log_error("%s: worker %d crashed: %s", w->label, (int)pid, why);
		return mfs_fail(err, EIO, "%s: the worker crashed (%s); the next request starts a new one",
				w->label, why);
	}
	if (rc) {
		/* The worker said something we cannot read: it is not to be
		 * trusted with the next request. */
		reap(w, 0, NULL, 0);
		return mfs_fail(err, EIO, "%s: %s", w->label, err->msg);
	}
	if (m.status != 0)
		return mfs_fail(err, EIO, "%s: %s", w->label, m.text);
	rc = mfs_shm_sync(&w->shm, m.len, err);
	if (rc == 0)
		rc = mfs_wire_get_tensors(&w->shm, m.len, outputs, c->n_outputs, 1, err);
	if (rc) {
		reap(w, 0, NULL, 0);
		return mfs_fail(err, EIO, "%s: the worker's answer is malformed: %s", w->label, err->msg);
	}
	rc = check_outputs(w, inputs, outputs, err);
	if (rc) {
		for (int i = 0; i < c->n_outputs; i++)
			mfs_tensor_release(&outputs[i]);
		return rc;
	}
	w->crashes = 0;
	return 0;
}

void mfs_worker_free(mfs_worker *w)
{
	if (!w)
		return;
	if (w->pid > 0) {
		mfs_wmsg m = { .op = MFS_WOP_QUIT };
		mfs_error err;
		mfs_wire_send(w->sock, &m, -1, &err);
		reap(w, 2000, NULL, 0);
	}
	mfs_shm_release(&w->shm);
	free(w->program);
	free(w->init_json);
	free(w->label);
	free(w);
}

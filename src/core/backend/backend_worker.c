/* backend_worker.c - see backend_worker.h. */
#include "backend_worker.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
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
#include "worker_spawn.h"

enum {
	BACKOFF_FIRST_MS = 50, BACKOFF_MAX_MS = 5000,
	QUIT_GRACE_MS = 2000,     /* finalize at unload */
	EOF_GRACE_MS = 1000,      /* a worker that closed its socket, to exit */
	POLL_SLICE_MS = 100,      /* how soon a wait notices mfs_worker_stop_all */
	KILL_WAIT_MS = 5000,      /* for a SIGKILLed worker to end */
};

struct mfs_worker {
	char *program;
	char *init_json;              /* the INIT payload, kept to restart */
	char *label;                  /* "model 'x' version 1: backend 'y'" */
	const mfs_model_config *config;
	pid_t pid;                    /* 0: no worker running; also its process group */
	int pidfd;                    /* -1 with pid 0 */
	int sock;
	uint64_t seq;                 /* of the last message sent */
	mfs_shm shm;
	int crashes;                  /* in a row, without a run that succeeded */
	uint64_t last_crash_ms;
};

/* Process-wide: the limits (mfs_worker_set_timeouts) and shutdown. */
static atomic_int init_timeout_s = MFS_WORKER_INIT_TIMEOUT_DEFAULT;
static atomic_int exec_timeout_s = MFS_WORKER_EXEC_TIMEOUT_DEFAULT;
static atomic_bool quiet_stderr;
static atomic_bool stopping;
static _Atomic uint64_t stop_runs_at_ms;     /* with stopping: when runs are cut */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void mfs_worker_set_timeouts(int init_secs, int exec_secs)
{
	if (init_secs > 0)
		atomic_store(&init_timeout_s, init_secs);
	if (exec_secs > 0)
		atomic_store(&exec_timeout_s, exec_secs);
}

void mfs_worker_stop_all(uint64_t run_grace_ms)
{
	atomic_store(&stop_runs_at_ms, now_ms() + run_grace_ms);
	atomic_store(&stopping, true);
}

void mfs_worker_quiet_stderr(void)
{
	atomic_store(&quiet_stderr, true);
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

/* Has the worker process ended (not reaped yet)? */
static bool exited(const mfs_worker *w)
{
	struct pollfd p = { .fd = w->pidfd, .events = POLLIN };

	return w->pid > 0 && poll(&p, 1, 0) == 1;
}

/* End the worker: close the socket, give it grace_ms to exit by itself,
 * then kill its process group (the worker if it is still there, and
 * whatever the backend started: a child left holding the socket must not
 * outlive it) and reap it.  The group id is still ours until the reap.
 * why gets how the worker ended. */
static void reap(mfs_worker *w, int grace_ms, char *why, size_t why_size)
{
	int status = 0;
	pid_t got;

	if (w->sock >= 0)
		close(w->sock);
	w->sock = -1;
	if (w->pid <= 0)
		return;
	if (grace_ms > 0) {
		struct pollfd p = { .fd = w->pidfd, .events = POLLIN };
		int64_t until = (int64_t)now_ms() + grace_ms, left;
		while ((left = until - (int64_t)now_ms()) > 0 &&
		       poll(&p, 1, (int)left) < 0 && errno == EINTR)
			;
	}
	kill(-w->pid, SIGKILL);
	kill(w->pid, SIGKILL);     /* in case the backend left the group */
	/* SIGKILL ends a process unless it sleeps uninterruptibly (a FUSE
	 * read of a busy mount, a dead NFS server): wait that long at most,
	 * then leave it to the kernel rather than hang an unload. */
	struct pollfd p = { .fd = w->pidfd, .events = POLLIN };
	int64_t until = (int64_t)now_ms() + KILL_WAIT_MS, left;
	int n = 0;
	while ((left = until - (int64_t)now_ms()) > 0 &&
	       (n = poll(&p, 1, (int)left)) < 0 && errno == EINTR)
		;
	got = -1;
	if (n == 1)
		do
			got = waitpid(w->pid, &status, 0);
		while (got < 0 && errno == EINTR);
	else
		mfs_log_error("%s: worker %d does not end after SIGKILL; left to the kernel",
			      w->label, (int)w->pid);
	if (why) {
		if (got == w->pid)
			describe_exit(status, why, why_size);
		else
			snprintf(why, why_size, "did not end when killed");
	}
	close(w->pidfd);
	w->pidfd = -1;
	w->pid = 0;
}

/* Send one message (a new seq) with fd attached (>= 0). */
static int send_msg(mfs_worker *w, mfs_wmsg *m, int fd, mfs_error *err)
{
	m->seq = ++w->seq;
	return mfs_wire_send(w->sock, m, fd, err);
}

/* The worker's answer to message seq, waited for until deadline_ms
 * (CLOCK_MONOTONIC), earlier when the daemon stops (run: at the stop's
 * grace; otherwise at once).  0 with the answer in *m; -EPIPE: the worker
 * is gone (its process ended, or its end of the socket closed: the
 * process itself is watched, so a child of the backend holding the
 * socket hides nothing); -ETIMEDOUT: past the deadline; -ECANCELED: the
 * daemon is stopping; -EPROTO: not an answer to seq. */
static int await_reply(mfs_worker *w, bool run, uint64_t deadline_ms, mfs_wmsg *m,
		       mfs_error *err)
{
	uint64_t seq = w->seq;

	for (;;) {
		uint64_t now = now_ms(), until = deadline_ms;
		bool cut = false;
		if (atomic_load(&stopping)) {
			uint64_t stop = run ? atomic_load(&stop_runs_at_ms) : 0;
			if (stop < until) {
				until = stop;
				cut = true;
			}
		}
		if (now >= until)
			return cut ? mfs_fail(err, ECANCELED, "the daemon is stopping")
				   : mfs_fail(err, ETIMEDOUT, "no answer in time");
		uint64_t slice = until - now < POLL_SLICE_MS ? until - now : POLL_SLICE_MS;
		struct pollfd p[2] = { { .fd = w->sock, .events = POLLIN },
				       { .fd = w->pidfd, .events = POLLIN } };
		int n = poll(p, 2, (int)slice);
		if (n < 0 && errno != EINTR)
			return mfs_fail(err, EPIPE, "poll: %s", strerror(errno));
		if (n <= 0)
			continue;
		/* The socket first: an answer sent just before an exit counts. */
		if (p[0].revents) {
			int rc = mfs_wire_recv(w->sock, m, NULL, err);
			if (rc)
				return rc;
			if (m->op != MFS_WOP_REPLY || m->seq != seq)
				return mfs_fail(err, EPROTO, "a message out of turn (op %u, seq %llu, "
						"expected the answer to %llu)", m->op,
						(unsigned long long)m->seq, (unsigned long long)seq);
			return 0;
		}
		if (p[1].revents)
			return mfs_fail(err, EPIPE, "the worker process ended");
	}
}

/* Spawn the worker and run INIT.  On failure nothing runs. */
static int start(mfs_worker *w, mfs_error *err)
{
	int sv[2], rc, limit = atomic_load(&init_timeout_s);
	size_t len = strlen(w->init_json);
	mfs_wmsg m = { .op = MFS_WOP_INIT, .len = len };
	char why[160];

	if (atomic_load(&stopping))
		return mfs_fail(err, ECANCELED, "%s: not started: the daemon is stopping", w->label);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		return mfs_fail(err, errno, "%s: socketpair: %s", w->label, strerror(errno));
	rc = mfs_worker_spawn(w->program, sv[1], atomic_load(&quiet_stderr), &w->pid, &w->pidfd,
			      err);
	close(sv[1]);
	if (rc != 0) {
		close(sv[0]);
		mfs_error_prefix(err, "%s: ", w->label);
		return rc;
	}
	w->sock = sv[0];
	uint64_t deadline = now_ms() + (uint64_t)limit * 1000u;
	rc = mfs_shm_write(&w->shm, 0, w->init_json, len, err);
	if (rc == 0)
		rc = send_msg(w, &m, w->shm.fd, err);
	if (rc == 0)
		rc = await_reply(w, false, deadline, &m, err);
	if (rc == -EPIPE) {
		reap(w, EOF_GRACE_MS, why, sizeof(why));
		return mfs_fail(err, EIO, "%s: the worker died while starting: %s", w->label, why);
	}
	if (rc == -ETIMEDOUT)
		rc = mfs_fail(err, ETIMEDOUT, "%s: init did not return within %d s "
			      "(--backend-init-timeout); the worker was killed", w->label, limit);
	else if (rc == -ECANCELED)
		rc = mfs_fail(err, ECANCELED, "%s: init cut short: the daemon is stopping", w->label);
	else if (rc)
		mfs_error_prefix(err, "%s: ", w->label);
	else if (m.status != 0)
		rc = mfs_fail(err, EINVAL, "%s: %s", w->label, m.text);
	if (rc) {
		/* A worker that answered (init failed) exits by itself. */
		reap(w, rc == -EINVAL ? QUIT_GRACE_MS : 0, NULL, 0);
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
	w->pidfd = -1;
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

/* The worker died or was killed during a run: count it for the backoff. */
static void crashed(mfs_worker *w, const char *why)
{
	w->crashes++;
	w->last_crash_ms = now_ms();
	mfs_log_error("%s: %s", w->label, why);
}

int mfs_worker_run(mfs_worker *w, const mfs_tensor *inputs, mfs_tensor *outputs,
		   mfs_error *err)
{
	const mfs_model_config *c = w->config;
	mfs_wmsg m = { .op = MFS_WOP_EXEC };
	int limit = atomic_load(&exec_timeout_s);
	char why[160], line[256];
	pid_t pid = w->pid;
	int rc;

	/* A worker that died between runs (no request was in flight) is
	 * replaced without failing this one. */
	if (exited(w)) {
		reap(w, 0, why, sizeof(why));
		snprintf(line, sizeof(line), "worker %d died between requests: %s", (int)pid, why);
		crashed(w, line);
	}
	/* A worker that fails to start again fails this run (EIO: the
	 * model is loaded, its backend did not run). */
	if (w->pid <= 0 && (rc = restart(w, err))) {
		if (rc == -ECANCELED)
			return rc;
		err->code = EIO;
		return -EIO;
	}
	pid = w->pid;
	uint64_t deadline = now_ms() + (uint64_t)limit * 1000u;
	rc = mfs_wire_put_tensors(&w->shm, inputs, c->n_inputs, &m.len, err);
	if (rc)
		return rc;
	rc = send_msg(w, &m, -1, err);
	if (rc == 0)
		rc = await_reply(w, true, deadline, &m, err);
	if (rc == -EPIPE) {
		reap(w, EOF_GRACE_MS, why, sizeof(why));
		snprintf(line, sizeof(line), "worker %d crashed: %s", (int)pid, why);
		crashed(w, line);
		return mfs_fail(err, EIO, "%s: the worker crashed (%s); the next request starts a new one",
				w->label, why);
	}
	if (rc == -ETIMEDOUT || rc == -ECANCELED) {
		reap(w, 0, NULL, 0);
		if (rc == -ECANCELED)
			return mfs_fail(err, ECANCELED, "%s: execute cut short: the daemon is stopping",
					w->label);
		snprintf(line, sizeof(line), "worker %d killed: execute did not return within %d s",
			 (int)pid, limit);
		crashed(w, line);
		return mfs_fail(err, ETIMEDOUT, "%s: execute did not return within %d s "
				"(--backend-exec-timeout); the worker was killed, the next request "
				"starts a new one", w->label, limit);
	}
	if (rc) {
		/* The worker said something we cannot read: it is not to be
		 * trusted with the next request. */
		reap(w, 0, NULL, 0);
		return mfs_fail(err, EIO, "%s: %s", w->label, err->msg);
	}
	if (m.status != 0)
		return mfs_fail(err, EIO, "%s: %s", w->label, m.text);
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
		send_msg(w, &m, -1, &err);
		reap(w, QUIT_GRACE_MS, NULL, 0);
	}
	mfs_shm_release(&w->shm);
	free(w->program);
	free(w->init_json);
	free(w->label);
	free(w);
}

/* fault.c - a custom backend for the tests: it fails, crashes, hangs and
 * breaks the worker protocol on demand, so that the daemon's handling of
 * each can be tested through a real mount (tests/e2e/backends.bats,
 * tests/e2e/backend_hostile.bats) and the worker (test_backend_worker).
 *
 *   input X (any numeric type the config says, read as float) -> output Y = 2 X,
 *   same shape and type as X; with the first value of X:
 *     -1   execute returns an error ("asked to fail")
 *     -2   the worker crashes with SIGABRT (abort(): the same under ASan,
 *          which does not catch it, so the e2e tests see one reason)
 *     -5   the worker crashes with a write through a null pointer (SIGSEGV)
 *     -3   Y gets one dim more than the config allows (the daemon must refuse it)
 *     -4   Y is left without data
 *     -6   execute never returns
 *     -7   forks a child that sleeps 60 s (it inherits the worker's socket, as
 *          `sleep 60 &` would), then aborts
 *     -8   answers, and shrinks the shared memory to nothing while the
 *          daemon reads the answer
 *     -9   writes a truncated message (8 bytes) on the worker's socket,
 *          then answers
 *     -10  writes an oversized message (4096 bytes), then answers
 *     -11  writes a whole message that answers nothing (a REPLY of seq 0,
 *          status 1, text "forged"), then answers
 *     -12  the worker exits with status 0 in the middle of execute
 *     -13  closes the worker's socket, then never returns
 *     -14  answers, then the worker aborts right after (between requests)
 *   parameters:
 *     fail_init       init fails with the value as the reason
 *     crash_init      init aborts
 *     hang_init       init never returns
 *     hang_finalize   finalize never returns
 *     crash_finalize  finalize aborts
 *     wait_init       init waits until the file named by the value exists
 *                     (polled every 10 ms; with mark_dir it first creates
 *                     mark_dir/waiting.PID): a load as slow as a test wants
 *     mark_dir        before hanging (init or execute), create the file
 *                     mark_dir/hanging.PID (PID: the worker's), for a
 *                     test to wait on
 *
 * -8, -9 to -11 and -14 act on the worker's own plumbing, as a hostile
 * library can: the socket is fd 3 (MFS_WORKER_FD), the shared memory the
 * memfd named "modelfs-backend", a message 1048 bytes (mfs_wmsg in
 * src/core/backend/worker_proto.h; test_backend_worker checks the
 * daemon's complaint about a message of the wrong size names that size).
 *
 * Built twice: libmodelfs_fault.so, and libmodelfs_badabi.so with
 * FAULT_ABI_VERSION=99 (an ABI this modelfs does not speak). */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "modelfs_backend.h"

#ifndef FAULT_ABI_VERSION
#define FAULT_ABI_VERSION MODELFS_BACKEND_ABI_VERSION
#endif

enum { WORKER_SOCK = 3 };

/* The worker protocol's message, as the daemon's binary lays it out. */
typedef struct wire_msg {
	uint32_t op;
	int32_t status;
	uint64_t seq;
	uint64_t len;
	char text[1024];
} wire_msg;
enum { WIRE_REPLY = 4 };

typedef struct fault_state {
	int hang_finalize, crash_finalize;
} fault_state;

static const char *param(const modelfs_backend_config *cfg, const char *key)
{
	for (int i = 0; i < cfg->n_parameters; i++)
		if (strcmp(cfg->parameters[i].key, key) == 0)
			return cfg->parameters[i].value;
	return NULL;
}

static char mark_dir[512];

static void mark(const char *what)
{
	if (mark_dir[0]) {
		char path[600];
		snprintf(path, sizeof(path), "%s/%s.%d", mark_dir, what, (int)getpid());
		FILE *f = fopen(path, "w");
		if (f)
			fclose(f);
	}
}

static void hang(void)
{
	mark("hanging");
	for (;;)
		pause();
}

static void wait_for(const char *path)
{
	mark("waiting");
	struct timespec ts = { 0, 10000000 };
	while (access(path, F_OK) != 0)
		nanosleep(&ts, NULL);
}

static int fault_init(const modelfs_backend_config *cfg, void **state, char *err, size_t err_size)
{
	const char *reason = param(cfg, "fail_init");
	fault_state *s;

	if (reason) {
		snprintf(err, err_size, "%s", reason);
		return -1;
	}
	if (param(cfg, "mark_dir"))
		snprintf(mark_dir, sizeof(mark_dir), "%s", param(cfg, "mark_dir"));
	if (param(cfg, "crash_init"))
		abort();
	if (param(cfg, "hang_init"))
		hang();
	if (param(cfg, "wait_init"))
		wait_for(param(cfg, "wait_init"));
	if (cfg->n_inputs != 1 || cfg->n_outputs != 1 || cfg->inputs[0].dtype != MODELFS_FP32 ||
	    cfg->outputs[0].dtype != MODELFS_FP32) {
		snprintf(err, err_size, "fault takes one FP32 input and gives one FP32 output");
		return -1;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, err_size, "out of memory");
		return -1;
	}
	s->hang_finalize = param(cfg, "hang_finalize") != NULL;
	s->crash_finalize = param(cfg, "crash_finalize") != NULL;
	*state = s;
	return 0;
}

static void fault_finalize(void *state)
{
	fault_state *s = state;

	if (s->crash_finalize)
		abort();
	if (s->hang_finalize)
		hang();
	free(s);
}

/* Is thread tid blocked reading the worker's socket (back in the worker's
 * loop after its answer went out)?  /proc's syscall file names the call
 * a blocked thread is in and its first argument. */
static int reading_socket(pid_t tid)
{
	char path[64], line[256];
	FILE *f;
	long nr = -1;
	unsigned long fd = 0;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(line, sizeof(line), f) || sscanf(line, "%ld %lx", &nr, &fd) != 2)
		nr = -1;
	fclose(f);
	return nr == SYS_recvmsg && fd == WORKER_SOCK;
}

/* Truncate every shared-memory file of the worker to nothing. */
static void shrink_shared_memory(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[300], target[256];
		ssize_t n;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (strstr(target, "memfd:modelfs-backend"))
			(void)!ftruncate(atoi(e->d_name), 0);
	}
	closedir(d);
}

typedef struct after_answer {
	pid_t tid;             /* the worker's thread that called execute */
	int shrink;            /* 1: shrink the shared memory; 0: abort */
} after_answer;

/* The thread acting after an answer: one at a time, and joined before
 * the library goes (its code must not run on in an unmapped library). */
static pthread_t helper;
static int helper_running;
static atomic_int helper_stop;

/* Once the answer is out (the worker's thread is back reading the
 * socket): let the daemon start copying it, then act.  A next request
 * may come first; then the chance has passed. */
static void *act_after_answer(void *arg)
{
	after_answer a = *(after_answer *)arg;
	struct timespec ms = { 0, 1000000 };

	free(arg);
	while (!reading_socket(a.tid))
		if (atomic_load(&helper_stop))
			return NULL;
	nanosleep(&ms, NULL);
	if (a.shrink)
		shrink_shared_memory();
	else
		abort();
	return NULL;
}

static void stop_helper(void)
{
	if (!helper_running)
		return;
	atomic_store(&helper_stop, 1);
	pthread_join(helper, NULL);
	helper_running = 0;
	atomic_store(&helper_stop, 0);
}

__attribute__((destructor)) static void unloading(void)
{
	stop_helper();
}

static void start_after_answer(int shrink)
{
	after_answer *a = malloc(sizeof(*a));

	stop_helper();
	if (!a)
		return;
	a->tid = (pid_t)syscall(SYS_gettid);
	a->shrink = shrink;
	if (pthread_create(&helper, NULL, act_after_answer, a) == 0)
		helper_running = 1;
	else
		free(a);
}

/* `sleep 60 &` and abort(): the child holds the worker's socket.  It is
 * known to run before the abort (else the request fails with that
 * reason, not a crash, and the test that expects the crash fails). */
static int abort_leaving_child(char *err, size_t err_size)
{
	int p[2];
	char b;
	pid_t child;

	if (pipe(p) != 0) {
		snprintf(err, err_size, "pipe failed");
		return -1;
	}
	child = fork();
	if (child == 0) {
		close(p[0]);
		(void)!write(p[1], "x", 1);
		close(p[1]);
		sleep(60);
		_exit(0);
	}
	close(p[1]);
	if (child < 0 || read(p[0], &b, 1) != 1) {
		snprintf(err, err_size, "no child started");
		close(p[0]);
		return -1;
	}
	close(p[0]);
	abort();
}

static void send_raw(const void *p, size_t n)
{
	(void)!send(WORKER_SOCK, p, n, MSG_NOSIGNAL);
}

static int fault_execute(void *state, modelfs_batch *b, char *err, size_t err_size)
{
	const modelfs_tensor *x = &b->inputs[0];
	size_t n = x->byte_size / sizeof(float);
	const float *in = x->data;
	float first = n ? in[0] : 0.0f;
	int64_t shape[MODELFS_MAX_RANK + 1];
	int rank = x->rank;
	float *out;

	(void)state;
	if (first == -1.0f) {
		snprintf(err, err_size, "asked to fail (X[0] = -1)");
		return -1;
	}
	if (first == -2.0f)
		abort();
	if (first == -5.0f) {
		volatile int *nowhere = NULL;
		*nowhere = 1;
	}
	if (first == -4.0f)
		return 0;
	if (first == -6.0f)
		hang();
	if (first == -7.0f)
		return abort_leaving_child(err, err_size);
	if (first == -8.0f || first == -14.0f)
		start_after_answer(first == -8.0f);
	if (first == -9.0f) {
		char bytes[8] = { 0 };
		send_raw(bytes, sizeof(bytes));
	}
	if (first == -10.0f) {
		static char bytes[4096];
		send_raw(bytes, sizeof(bytes));
	}
	if (first == -11.0f) {
		wire_msg m = { .op = WIRE_REPLY, .status = 1, .seq = 0 };
		snprintf(m.text, sizeof(m.text), "forged");
		send_raw(&m, sizeof(m));
	}
	if (first == -12.0f)
		_exit(0);
	if (first == -13.0f) {
		close(WORKER_SOCK);
		hang();
	}
	memcpy(shape, x->shape, sizeof(int64_t) * (size_t)rank);
	if (first == -3.0f && rank < MODELFS_MAX_RANK)
		shape[rank++] = 1;
	out = b->alloc_output(b, 0, rank, shape);
	if (!out) {
		snprintf(err, err_size, "no memory for Y");
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		out[i] = 2.0f * in[i];
	return 0;
}

const modelfs_backend_api modelfs_backend = {
	.abi_version = FAULT_ABI_VERSION,
	.init = fault_init,
	.execute = fault_execute,
	.finalize = fault_finalize,
};

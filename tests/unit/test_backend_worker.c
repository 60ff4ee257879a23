/* test_backend_worker.c - a custom backend's worker process and its
 * protocol (backend_worker.h, worker_proto.h), with the test backend
 * tests/backends/fault.c.  This binary is its own worker: run with
 * --backend-worker it serves fd 3, as `modelfs --backend-worker` does.
 *
 * A run through the worker gives the backend's answer; the backend's
 * error comes back as its text; a crash fails that run with the signal
 * and the next run starts a new worker; an ABI mismatch and a failing
 * init fail mfs_worker_new; a tensor table whose offsets point outside
 * the shared memory is refused (the worker's answers are untrusted), and
 * so is one the worker shrank under the daemon.  The hostile modes of
 * fault.c, one after the other: each fails its own run (or load) with the
 * reason, kills the worker's whole process group, and the next run is
 * served; hung init and execute time out; the daemon's stop cuts a run
 * short. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <libgen.h>

#include <cmocka.h>

#include "backend_worker.h"
#include "worker_proto.h"
#include "worker_serve.h"
#include "build_dir.h"

static char backends_dir[4096];   /* $(BUILD)/tests/backends */

static const char fault_config[] =
	"backend: \"fault\"\n"
	"input [ { name: \"X\" data_type: TYPE_FP32 dims: [ -1 ] } ]\n"
	"output [ { name: \"Y\" data_type: TYPE_FP32 dims: [ -1 ] } ]\n";

typedef struct fixture {
	mfs_model_config cfg;
	char library[4200];
} fixture;

static void load_config(fixture *f, const char *text, const char *lib)
{
	mfs_error err;

	mfs_config_init(&f->cfg);
	assert_int_equal(mfs_config_parse_pbtxt(text, strlen(text), "config.pbtxt", &f->cfg, &err), 0);
	assert_int_equal(mfs_config_complete_declared(&f->cfg, "fault", &err), 0);
	snprintf(f->library, sizeof(f->library), "%s/%s", backends_dir, lib);
}

static int start(fixture *f, mfs_worker **w, mfs_error *err)
{
	mfs_worker_spec spec = {
		.program = "/proc/self/exe", .library = f->library, .model_name = "fault",
		.version = 1, .version_dir = "/tmp", .instance = 0, .config = &f->cfg,
	};
	return mfs_worker_new(&spec, w, err);
}

/* Run X = values through w; returns the run's status, Y in *y. */
static int run(mfs_worker *w, const float *values, int n, mfs_tensor *y, mfs_error *err)
{
	mfs_tensor x = { .dtype = MFS_DT_FLOAT, .shape = { .rank = 1, .dims = { n } },
			 .data = (void *)values, .nbytes = (size_t)n * sizeof(float) };
	return mfs_worker_run(w, &x, y, err);
}

static void test_runs_fail_and_crash(void **state)
{
	(void)state;
	fixture f;
	mfs_worker *w;
	mfs_tensor y;
	mfs_error err;

	load_config(&f, fault_config, "libmodelfs_fault.so");
	assert_int_equal(start(&f, &w, &err), 0);
	pid_t first = mfs_worker_pid(w);
	assert_true(first > 0);

	const float ok[3] = { 1, 2, 3 };
	assert_int_equal(run(w, ok, 3, &y, &err), 0);
	assert_int_equal(y.shape.rank, 1);
	assert_int_equal(y.shape.dims[0], 3);
	assert_float_equal(((float *)y.data)[2], 6.0f, 0);
	mfs_tensor_release(&y);

	/* A large input grows the shared memory on both sides. */
	float *big = calloc(1 << 20, sizeof(float));
	big[(1 << 20) - 1] = 4;
	assert_int_equal(run(w, big, 1 << 20, &y, &err), 0);
	assert_float_equal(((float *)y.data)[(1 << 20) - 1], 8.0f, 0);
	mfs_tensor_release(&y);
	free(big);

	const float fail[1] = { -1 };
	assert_int_equal(run(w, fail, 1, &y, &err), -EIO);
	assert_string_equal(err.msg, "model 'fault' version 1: backend 'fault': asked to fail (X[0] = -1)");
	assert_int_equal(mfs_worker_pid(w), first);   /* an error is no crash */

	const float wrong[2] = { -3, 0 };
	assert_int_equal(run(w, wrong, 2, &y, &err), -EIO);
	assert_non_null(strstr(err.msg, "output 'Y' came back with shape [2,1], the config says 1 dims"));

	const float crash[1] = { -2 };
	assert_int_equal(run(w, crash, 1, &y, &err), -EIO);
	assert_non_null(strstr(err.msg, "backend 'fault': the worker crashed (killed by signal 6"));
	assert_int_equal(mfs_worker_pid(w), 0);

	/* The next run gets a new worker. */
	assert_int_equal(run(w, ok, 3, &y, &err), 0);
	assert_true(mfs_worker_pid(w) > 0 && mfs_worker_pid(w) != first);
	mfs_tensor_release(&y);

	/* A segfault: SIGSEGV, or, when this binary is built with ASan (its
	 * handler catches the fault and exits), an exit status. */
	const float segv[1] = { -5 };
	assert_int_equal(run(w, segv, 1, &y, &err), -EIO);
	if (!strstr(err.msg, "the worker crashed (killed by signal 11 (Segmentation fault))") &&
	    !strstr(err.msg, "the worker crashed (exited with status "))
		fail_msg("%s", err.msg);
	assert_int_equal(run(w, ok, 3, &y, &err), 0);
	mfs_tensor_release(&y);
	mfs_worker_free(w);
	mfs_config_release(&f.cfg);
}

static void test_load_errors(void **state)
{
	(void)state;
	fixture f;
	mfs_worker *w = NULL;
	mfs_error err;

	load_config(&f, fault_config, "libmodelfs_badabi.so");
	assert_int_equal(start(&f, &w, &err), -EINVAL);
	assert_null(w);
	assert_non_null(strstr(err.msg, "model 'fault' version 1: backend 'fault': "));
	assert_non_null(strstr(err.msg, "libmodelfs_badabi.so declares backend ABI version 99, "
				       "this modelfs speaks version 1"));
	mfs_config_release(&f.cfg);

	char text[1024];
	snprintf(text, sizeof(text), "%sparameters { key: \"fail_init\" value { string_value: "
		 "\"no weights in /tmp\" } }\n", fault_config);
	load_config(&f, text, "libmodelfs_fault.so");
	assert_int_equal(start(&f, &w, &err), -EINVAL);
	assert_string_equal(err.msg, "model 'fault' version 1: backend 'fault': no weights in /tmp");
	mfs_config_release(&f.cfg);
}

/* A table written by the daemon's side (pwrite) and read back by both
 * sides, then broken in the ways a worker could break it. */
static void test_tensor_table_is_checked(void **state)
{
	(void)state;
	mfs_shm s, mapped;
	mfs_error err;
	const float v[4] = { 1, 2, 3, 4 };
	mfs_tensor in[2] = {
		{ .dtype = MFS_DT_FLOAT, .shape = { .rank = 2, .dims = { 2, 2 } }, .data = (void *)v,
		  .nbytes = sizeof(v) },
		{ 0 },   /* an optional input not given */
	};
	mfs_tensor out[3];
	uint64_t len;

	assert_int_equal(mfs_shm_create(&s, &err), 0);
	assert_false(s.mapped);
	assert_int_equal(mfs_wire_put_tensors(&s, in, 2, &len, &err), 0);
	assert_int_equal(mfs_wire_get_tensors(&s, len, out, 2, 1, &err), 0);
	assert_int_equal(out[0].shape.dims[1], 2);
	assert_memory_equal(out[0].data, v, sizeof(v));
	assert_int_equal(out[1].dtype, MFS_DT_UNDEFINED);
	assert_null(out[1].data);
	mfs_tensor_release(&out[0]);
	/* The worker's side maps the same file and sees the same table. */
	assert_int_equal(mfs_shm_adopt(&mapped, dup(s.fd), &err), 0);
	assert_int_equal(mfs_wire_get_tensors(&mapped, len, out, 2, 0, &err), 0);
	assert_memory_equal(out[0].data, v, sizeof(v));
	/* Wrong count, a payload longer than the memory, an offset outside. */
	assert_int_equal(mfs_wire_get_tensors(&s, len, out, 3, 0, &err), -EPROTO);
	assert_int_equal(mfs_wire_get_tensors(&mapped, mapped.size + 1, out, 2, 0, &err), -EPROTO);
	/* Tensor 0's offset (the table starts at byte 4: unaligned). */
	assert_int_equal(pwrite(s.fd, &len, sizeof(len), 4 + 8 + 8 * 8), (ssize_t)sizeof(len));
	assert_int_equal(mfs_wire_get_tensors(&s, len, out, 2, 1, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "tensor 0:"));
	assert_int_equal(mfs_wire_get_tensors(&mapped, len, out, 2, 0, &err), -EPROTO);
	/* The file shrunk under the daemon's reader: a refusal, not SIGBUS. */
	assert_int_equal(ftruncate(s.fd, 8), 0);
	assert_int_equal(mfs_wire_get_tensors(&s, len, out, 2, 1, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "the worker shrank it"));
	mfs_shm_release(&mapped);
	mfs_shm_release(&s);
}

/* The process group pid led has no process left (the worker was reaped
 * and whatever the backend started went with it). */
static bool group_gone(pid_t pid)
{
	for (int i = 0; i < 500; i++) {
		if (kill(-pid, 0) != 0 && errno == ESRCH)
			return true;
		usleep(10000);
	}
	return false;
}

/* Every hostile execute of fault.c fails its own run with the errno and
 * text expected, leaves nothing of its worker's process group, and the
 * next run gets a working worker. */
static void test_hostile_execute(void **state)
{
	(void)state;
	static const struct {
		float mode;
		int rc;
		const char *msg;
	} cases[] = {
		{ -2, -EIO, "the worker crashed (killed by signal 6" },
		{ -7, -EIO, "the worker crashed (killed by signal 6" },
		{ -9, -EIO, "a message of 8 bytes, expected 1048" },
		{ -10, -EIO, "a message longer than 1048 bytes" },
		{ -11, -EIO, "a message out of turn (op 4, seq 0" },
		{ -12, -EIO, "the worker crashed (exited with status 0)" },
		{ -13, -EIO, "the worker crashed (killed by signal 9" },
		{ -6, -ETIMEDOUT, "execute did not return within 3 s (--backend-exec-timeout)" },
	};
	fixture f;
	mfs_worker *w;
	mfs_tensor y;
	mfs_error err;
	const float ok[2] = { 1, 2 };

	/* Limits with room for an ASan build on a loaded machine. */
	mfs_worker_set_timeouts(30, 3);
	load_config(&f, fault_config, "libmodelfs_fault.so");
	assert_int_equal(start(&f, &w, &err), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const float x[2] = { cases[i].mode, 1 };
		pid_t pid = mfs_worker_pid(w);
		int rc = run(w, x, 2, &y, &err);
		if (rc != cases[i].rc || !strstr(err.msg, cases[i].msg))
			fail_msg("X[0] = %g: %d '%s'", cases[i].mode, rc, err.msg);
		assert_int_equal(mfs_worker_pid(w), 0);
		if (!group_gone(pid))
			fail_msg("X[0] = %g: the worker's group is still there", cases[i].mode);
		assert_int_equal(run(w, ok, 2, &y, &err), 0);
		assert_float_equal(((float *)y.data)[1], 4.0f, 0);
		mfs_tensor_release(&y);
	}
	/* Death right after an answer: the answer counts, and the next run
	 * gets a new worker without failing. */
	const float late[2] = { -14, 1 };
	pid_t pid = mfs_worker_pid(w);
	assert_int_equal(run(w, late, 2, &y, &err), 0);
	mfs_tensor_release(&y);
	for (int i = 0; i < 500; i++) {     /* until it has died (not reaped: WNOWAIT) */
		siginfo_t si = { 0 };
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid)
			break;
		usleep(10000);
	}
	assert_int_equal(run(w, ok, 2, &y, &err), 0);
	assert_int_not_equal(mfs_worker_pid(w), pid);
	mfs_tensor_release(&y);
	/* The answer shrunk while the daemon reads it: that run may fail,
	 * the daemon does not fault. */
	float *big = calloc(1 << 22, sizeof(float));
	big[0] = -8;
	for (int i = 0; i < 4; i++) {
		int rc = run(w, big, 1 << 22, &y, &err);
		if (rc == 0)
			mfs_tensor_release(&y);
		else if (!strstr(err.msg, "the worker shrank it"))
			fail_msg("%s", err.msg);
	}
	free(big);
	assert_int_equal(run(w, ok, 2, &y, &err), 0);
	mfs_tensor_release(&y);
	mfs_worker_free(w);
	mfs_config_release(&f.cfg);
	mfs_worker_set_timeouts(MFS_WORKER_INIT_TIMEOUT_DEFAULT, MFS_WORKER_EXEC_TIMEOUT_DEFAULT);
}

static void with_parameter(fixture *f, const char *key)
{
	char text[1024];

	snprintf(text, sizeof(text), "%sparameters { key: \"%s\" value { string_value: \"1\" } }\n",
		 fault_config, key);
	load_config(f, text, "libmodelfs_fault.so");
}

/* Death and hangs in init and finalize. */
static void test_hostile_init_finalize(void **state)
{
	(void)state;
	fixture f;
	mfs_worker *w = NULL;
	mfs_error err;

	mfs_worker_set_timeouts(30, 30);
	with_parameter(&f, "crash_init");
	assert_int_equal(start(&f, &w, &err), -EIO);
	assert_non_null(strstr(err.msg, "the worker died while starting: killed by signal 6"));
	mfs_config_release(&f.cfg);

	mfs_worker_set_timeouts(2, 30);
	with_parameter(&f, "hang_init");
	assert_int_equal(start(&f, &w, &err), -ETIMEDOUT);
	assert_string_equal(err.msg, "model 'fault' version 1: backend 'fault': init did not return "
			    "within 2 s (--backend-init-timeout); the worker was killed");
	mfs_worker_set_timeouts(30, 30);
	assert_null(w);
	mfs_config_release(&f.cfg);

	/* A finalize that never returns holds the unload 2 s, no more. */
	with_parameter(&f, "hang_finalize");
	assert_int_equal(start(&f, &w, &err), 0);
	pid_t pid = mfs_worker_pid(w);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	mfs_worker_free(w);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < 5);
	assert_true(group_gone(pid));
	mfs_config_release(&f.cfg);
	mfs_worker_set_timeouts(MFS_WORKER_INIT_TIMEOUT_DEFAULT, MFS_WORKER_EXEC_TIMEOUT_DEFAULT);
}

/* The daemon stopping: a run in progress is cut at the grace, and no
 * worker starts after.  Last: the stop is for good. */
static void test_stop_all(void **state)
{
	(void)state;
	fixture f;
	mfs_worker *w, *w2 = NULL;
	mfs_tensor y;
	mfs_error err;
	const float x[1] = { -6 };

	mfs_worker_set_timeouts(MFS_WORKER_INIT_TIMEOUT_DEFAULT, MFS_WORKER_EXEC_TIMEOUT_DEFAULT);
	load_config(&f, fault_config, "libmodelfs_fault.so");
	assert_int_equal(start(&f, &w, &err), 0);
	pid_t pid = mfs_worker_pid(w);
	mfs_worker_stop_all(300);
	assert_int_equal(run(w, x, 1, &y, &err), -ECANCELED);
	assert_non_null(strstr(err.msg, "execute cut short: the daemon is stopping"));
	assert_true(group_gone(pid));
	assert_int_equal(run(w, x, 1, &y, &err), -ECANCELED);
	assert_int_equal(start(&f, &w2, &err), -ECANCELED);
	mfs_worker_free(w);
	mfs_config_release(&f.cfg);
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], MFS_WORKER_FLAG) == 0)
		return mfs_worker_serve(MFS_WORKER_FD);
	if (test_build_path(backends_dir, sizeof(backends_dir), "/tests/backends") < 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runs_fail_and_crash),
		cmocka_unit_test(test_load_errors),
		cmocka_unit_test(test_tensor_table_is_checked),
		cmocka_unit_test(test_hostile_execute),
		cmocka_unit_test(test_hostile_init_finalize),
		cmocka_unit_test(test_stop_all),   /* last: for good */
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

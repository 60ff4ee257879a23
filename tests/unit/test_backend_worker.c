/* test_backend_worker.c - a custom backend's worker process and its
 * protocol (backend_worker.h, worker_proto.h), with the test backend
 * tests/backends/fault.c.  This binary is its own worker: run with
 * --backend-worker it serves fd 3, as `modelfs --backend-worker` does.
 *
 * A run through the worker gives the backend's answer; the backend's
 * error comes back as its text; a crash fails that run with the signal
 * and the next run starts a new worker; an ABI mismatch and a failing
 * init fail mfs_worker_new; a tensor table whose offsets point outside
 * the shared memory is refused (the worker's answers are untrusted). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static void test_tensor_table_is_checked(void **state)
{
	(void)state;
	mfs_shm s;
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
	assert_int_equal(mfs_wire_put_tensors(&s, in, 2, &len, &err), 0);
	assert_int_equal(mfs_wire_get_tensors(&s, len, out, 2, 1, &err), 0);
	assert_int_equal(out[0].shape.dims[1], 2);
	assert_memory_equal(out[0].data, v, sizeof(v));
	assert_int_equal(out[1].dtype, MFS_DT_UNDEFINED);
	assert_null(out[1].data);
	mfs_tensor_release(&out[0]);
	/* Wrong count, a payload longer than the memory, an offset outside. */
	assert_int_equal(mfs_wire_get_tensors(&s, len, out, 3, 0, &err), -EPROTO);
	assert_int_equal(mfs_wire_get_tensors(&s, s.size + 1, out, 2, 0, &err), -EPROTO);
	/* Tensor 0's offset (the table starts at byte 4: unaligned). */
	memcpy((char *)s.base + 4 + 8 + 8 * 8, &len, sizeof(len));
	assert_int_equal(mfs_wire_get_tensors(&s, len, out, 2, 0, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "tensor 0:"));
	mfs_shm_release(&s);
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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

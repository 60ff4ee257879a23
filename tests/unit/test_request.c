/* test_request.c - the request state machine on a fake served version: a
 * real scheduler whose runner computes add/sub, and a config parsed from
 * text (what the loader would complete from the graph is set by hand). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "request.h"

#include "fake_version.h"

typedef struct tw {
	mfs_waiter w;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int woken;
} tw;

static void tw_wake(mfs_waiter *w)
{
	tw *t = (tw *)w;
	pthread_mutex_lock(&t->lock);
	t->woken++;
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

static void tw_init(tw *t)
{
	memset(t, 0, sizeof(*t));
	t->w.wake = tw_wake;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->cond, NULL);
}

/* Wait for the run to end through the waiter interface. */
static void wait_done(mfs_request *r)
{
	tw t;
	tw_init(&t);
	if (mfs_request_wait(r, &t.w) == 1) {
		pthread_mutex_lock(&t.lock);
		while (!t.woken)
			pthread_cond_wait(&t.cond, &t.lock);
		pthread_mutex_unlock(&t.lock);
	}
	pthread_mutex_destroy(&t.lock);
	pthread_cond_destroy(&t.cond);
}

/* Bytes held by a committed input file, -1 when there is none. */
static int64_t file_size(mfs_request *r, const char *filename)
{
	mfs_file_info fi;
	return mfs_request_find_file(r, filename, &fi) == MFS_FILE_INPUT ? fi.size : -1;
}

static char *read_out(mfs_request *r, const char *name, mfs_format fmt, int *rc)
{
	char *buf = NULL, file[64];
	size_t len = 0;
	mfs_error err;
	mfs_file_info fi;
	snprintf(file, sizeof(file), "%s.%s", name, mfs_format_ext(fmt));
	assert_int_equal(mfs_request_find_file(r, file, &fi), MFS_FILE_OUTPUT);
	assert_int_equal(fi.fmt, fmt);
	*rc = mfs_request_read_output(r, 0, fi.idx, fmt, &buf, &len, &err);
	if (*rc < 0)
		return NULL;
	char *s = malloc(len + 1);
	memcpy(s, buf, len);
	s[len] = '\0';
	free(buf);
	return s;
}

static int commit(mfs_request *r, const char *file, const char *text, mfs_error *err)
{
	mfs_error_clear(err);
	return mfs_request_commit_file(r, file, text, strlen(text), err);
}

static void test_life_of_a_request(void **state)
{
	fixture *f = *state;
	mfs_request *r;
	mfs_error err;
	int rc;
	assert_int_equal(mfs_request_new(f->v, "job42", 1 << 20, &r, &err), 0);
	assert_int_equal(mfs_request_state(r), MFS_REQ_WAITING);
	char *s = mfs_request_status_text(r);
	assert_string_equal(s, "WAITING INPUT0 INPUT1\n");
	free(s);
	/* Nothing to read yet: ENODATA naming the missing inputs. */
	assert_null(read_out(r, "OUTPUT0", MFS_FMT_TXT, &rc));
	assert_int_equal(rc, -ENODATA);
	assert_int_equal(commit(r, "INPUT0.txt", "1 2 3 4", &err), 0);
	s = mfs_request_status_text(r);
	assert_string_equal(s, "WAITING INPUT1\n");
	free(s);
	assert_int_equal(file_size(r, "INPUT0.txt"), 7);
	assert_int_equal(commit(r, "INPUT1.json", "[10, 20, 30, 40]", &err), 0);
	wait_done(r);
	assert_int_equal(mfs_request_state(r), MFS_REQ_DONE);
	s = read_out(r, "OUTPUT0", MFS_FMT_TXT, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s, "11 22 33 44\n");
	free(s);
	s = read_out(r, "OUTPUT1", MFS_FMT_TXT, &rc);
	assert_string_equal(s, "-9 -18 -27 -36\n");
	free(s);
	assert_int_equal(mfs_request_output_size(r, 0, MFS_FMT_RAW), 16);
	/* The run consumed the inputs; ls shows outputs as .txt (first input). */
	assert_int_equal(file_size(r, "INPUT0.txt"), -1);
	char **names;
	int n;
	assert_int_equal(mfs_request_list(r, &names, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(names[0], "OUTPUT0.txt");
	assert_string_equal(names[1], "OUTPUT1.txt");
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	s = mfs_request_trace_json(r);
	assert_non_null(strstr(s, "\"batch_size\":1"));
	assert_non_null(strstr(s, "\"device\":\"cpu\""));
	assert_non_null(strstr(s, "\"run\":1"));
	free(s);
	/* Reuse: a new input starts a new run; old outputs are gone. */
	assert_int_equal(commit(r, "INPUT1.txt", "0 0 0 0", &err), 0);
	assert_int_equal(mfs_request_state(r), MFS_REQ_WAITING);
	assert_null(read_out(r, "OUTPUT0", MFS_FMT_TXT, &rc));
	assert_int_equal(rc, -ENODATA);
	assert_int_equal(commit(r, "INPUT0.txt", "5 6 7 8", &err), 0);
	wait_done(r);
	s = read_out(r, "OUTPUT0", MFS_FMT_TXT, &rc);
	assert_string_equal(s, "5 6 7 8\n");
	free(s);
	mfs_request_put(r);
	assert_int_equal(f->runs, 2);
}

/* commit_take: the request takes the buffer when the commit works, the
 * caller keeps it when it fails, and a temporary's bytes are copied. */
static void test_commit_take(void **state)
{
	fixture *f = *state;
	mfs_request *r;
	mfs_error err;
	assert_int_equal(mfs_request_new(f->v, "take", 1 << 20, &r, &err), 0);
	char *bad = strdup("1 2 3");
	assert_int_equal(mfs_request_commit_take(r, "INPUT0.txt", &bad, 5, &err), -EINVAL);
	assert_non_null(bad);   /* refused: still the caller's */
	assert_memory_equal(bad, "1 2 3", 5);
	free(bad);
	char *tmp = strdup("1 1 1 1");
	assert_int_equal(mfs_request_commit_take(r, ".INPUT1.txt", &tmp, 7, &err), 0);
	assert_non_null(tmp);   /* a temporary is copied */
	free(tmp);
	char *good = strdup("1 2 3 4");
	assert_int_equal(mfs_request_commit_take(r, "INPUT0.txt", &good, 7, &err), 0);
	assert_null(good);      /* taken */
	assert_int_equal(file_size(r, "INPUT0.txt"), 7);
	char *buf;
	size_t len;
	assert_int_equal(mfs_request_input_file(r, "INPUT0.txt", &buf, &len), 0);
	assert_int_equal(len, 7);
	assert_memory_equal(buf, "1 2 3 4", 7);
	free(buf);
	assert_int_equal(mfs_request_rename_file(r, ".INPUT1.txt", "INPUT1.txt", &err), 0);
	wait_done(r);
	int rc;
	char *s = read_out(r, "OUTPUT0", MFS_FMT_TXT, &rc);
	assert_string_equal(s, "2 3 4 5\n");
	free(s);
	mfs_request_put(r);
}

static void test_bad_inputs_keep_the_rest(void **state)
{
	fixture *f = *state;
	mfs_request *r;
	mfs_error err;
	assert_int_equal(mfs_request_new(f->v, "bad", 1 << 20, &r, &err), 0);
	assert_int_equal(commit(r, "INPUT0.txt", "1 2 3 4", &err), 0);
	assert_int_equal(commit(r, "INPUT1.txt", "1 2 3", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "INPUT1"));
	char *e = mfs_request_error_text(r);
	assert_non_null(strstr(e, "INPUT1"));
	free(e);
	assert_int_equal(commit(r, "NOPE.txt", "1", &err), -ENOENT);
	assert_non_null(strstr(err.msg, "NOPE"));
	assert_int_equal(commit(r, "INPUT1.bin", "1", &err), -ENOENT);
	assert_int_equal(commit(r, "INPUT1.npy", "garbage", &err), -EINVAL);
	assert_int_equal(commit(r, "INPUT1.txt", "1 2 3 4.5e40", &err), -EINVAL);
	/* INPUT0 survived all of that. */
	assert_int_equal(file_size(r, "INPUT0.txt"), 7);
	assert_int_equal(mfs_request_state(r), MFS_REQ_WAITING);
	assert_int_equal(commit(r, "INPUT1.txt", "1 1 1 1", &err), 0);
	wait_done(r);
	e = mfs_request_error_text(r);
	assert_string_equal(e, "");
	free(e);
	mfs_request_put(r);
}

static void test_size_limit(void **state)
{
	fixture *f = *state;
	mfs_request *r;
	mfs_error err;
	assert_int_equal(mfs_request_new(f->v, "small", 12, &r, &err), 0);
	assert_int_equal(commit(r, "INPUT0.txt", "1 2 3 4", &err), 0);
	assert_int_equal(commit(r, "INPUT1.txt", "1 2 3 4", &err), -EFBIG);
	assert_non_null(strstr(err.msg, "max-request-bytes"));
	/* Replacing a file counts its new size, not both. */
	assert_int_equal(commit(r, "INPUT0.txt", "4 3 2 1", &err), 0);
	/* Room while a file is written: the limit less the other files. */
	assert_int_equal(mfs_request_room(r, "INPUT0.txt"), 12);
	assert_int_equal(mfs_request_room(r, "INPUT1.txt"), 5);
	assert_int_equal(mfs_request_room(r, ".tmp"), 5);
	mfs_request_put(r);
}

static int read_run(mfs_request *r, uint64_t run, char *out, size_t size)
{
	char *buf;
	size_t len;
	mfs_error err;
	int rc = mfs_request_read_output(r, run, 0, MFS_FMT_TXT, &buf, &len, &err);
	if (rc == 0) {
		snprintf(out, size, "%.*s", (int)len, buf);
		free(buf);
	}
	return rc;
}

/* A reader is bound to the run current when it opened: a later run's
 * result is never handed to it (ESTALE instead). */
static void test_reads_bound_to_a_run(void **state)
{
	fixture *f = *state;
	mfs_request *r;
	mfs_error err;
	char out[64];
	assert_int_equal(mfs_request_new(f->v, "shared", 1 << 20, &r, &err), 0);
	uint64_t first = mfs_request_run_id(r);   /* opened before any input */
	assert_int_equal(first, 1);
	assert_int_equal(read_run(r, first, out, sizeof(out)), -ENODATA);
	assert_int_equal(commit(r, "INPUT0.txt", "1 1 1 1", &err), 0);
	assert_int_equal(commit(r, "INPUT1.txt", "1 1 1 1", &err), 0);
	wait_done(r);
	assert_int_equal(mfs_request_run_id(r), 1);
	assert_int_equal(read_run(r, first, out, sizeof(out)), 0);
	assert_string_equal(out, "2 2 2 2\n");
	/* Another writer starts run 2: run 1's reader is told, not misled. */
	assert_int_equal(commit(r, "INPUT0.txt", "5 5 5 5", &err), 0);
	assert_int_equal(read_run(r, first, out, sizeof(out)), -ESTALE);
	/* A reader opening now reads run 2: missing inputs are ENODATA. */
	assert_int_equal(mfs_request_run_id(r), 2);
	assert_int_equal(read_run(r, 2, out, sizeof(out)), -ENODATA);
	assert_int_equal(commit(r, "INPUT1.txt", "5 5 5 5", &err), 0);
	wait_done(r);
	assert_int_equal(read_run(r, first, out, sizeof(out)), -ESTALE);
	uint64_t second = mfs_request_run_id(r);
	assert_int_equal(second, 2);
	assert_int_equal(read_run(r, second, out, sizeof(out)), 0);
	assert_string_equal(out, "10 10 10 10\n");
	assert_int_equal(read_run(r, 0, out, sizeof(out)), 0);   /* 0: the current run */
	mfs_request_put(r);
}

/* What the filesystem learns of a name in one call. */
static void test_find_file(void **state)
{
	fixture *f = *state;
	mfs_request *r;
	mfs_error err;
	mfs_file_info fi;
	assert_int_equal(mfs_request_new(f->v, "names", 1 << 20, &r, &err), 0);
	assert_int_equal(mfs_request_find_file(r, "OUTPUT1.json", &fi), MFS_FILE_OUTPUT);
	assert_int_equal(fi.idx, 1);
	assert_int_equal(fi.fmt, MFS_FMT_JSON);
	assert_int_equal(mfs_request_find_file(r, "OUTPUT1", &fi), MFS_FILE_NONE);
	assert_int_equal(mfs_request_find_file(r, "OUTPUT1.bin", &fi), MFS_FILE_NONE);
	assert_int_equal(mfs_request_find_file(r, "INPUT0.npy", &fi), MFS_FILE_INPUT_NAME);
	assert_int_equal(mfs_request_find_file(r, "NOPE.npy", &fi), MFS_FILE_NONE);
	assert_int_equal(mfs_request_find_file(r, ".partial", &fi), MFS_FILE_INPUT_NAME);
	assert_int_equal(commit(r, "INPUT0.txt", "1 2 3 4", &err), 0);
	assert_int_equal(commit(r, ".partial", "xyz", &err), 0);
	assert_int_equal(mfs_request_find_file(r, "INPUT0.txt", &fi), MFS_FILE_INPUT);
	assert_int_equal(fi.size, 7);
	assert_int_equal(mfs_request_find_file(r, ".partial", &fi), MFS_FILE_INPUT);
	assert_int_equal(fi.size, 3);
	/* Another format of a committed input is a name, not the file. */
	assert_int_equal(mfs_request_find_file(r, "INPUT0.npy", &fi), MFS_FILE_INPUT_NAME);
	/* A removed request is not used any more; a live one is. */
	assert_true(mfs_request_use(r));
	mfs_request_mark_removed(r);
	assert_false(mfs_request_use(r));
	mfs_request_put(r);
}

static void test_run_failure_is_eio(void **state)
{
	fixture *f = *state;
	mfs_request *r;
	mfs_error err;
	int rc;
	f->fail_next = 1;
	assert_int_equal(mfs_request_new(f->v, "fails", 1 << 20, &r, &err), 0);
	assert_int_equal(commit(r, "INPUT0.txt", "1 2 3 4", &err), 0);
	assert_int_equal(commit(r, "INPUT1.txt", "1 2 3 4", &err), 0);
	wait_done(r);
	assert_int_equal(mfs_request_state(r), MFS_REQ_FAILED);
	assert_null(read_out(r, "OUTPUT0", MFS_FMT_TXT, &rc));
	assert_int_equal(rc, -EIO);
	char *s = mfs_request_status_text(r);
	assert_non_null(strstr(s, "FAILED"));
	assert_non_null(strstr(s, "injected failure"));
	free(s);
	f->fail_next = 0;
	mfs_request_put(r);
}

static void test_busy_and_cancelled_waits(void **state)
{
	fixture *f = *state;
	mfs_request *r;
	mfs_error err;
	f->delay_ms = 100;
	assert_int_equal(mfs_request_new(f->v, "slow", 1 << 20, &r, &err), 0);
	assert_int_equal(commit(r, "INPUT0.txt", "1 2 3 4", &err), 0);
	assert_int_equal(commit(r, "INPUT1.txt", "1 2 3 4", &err), 0);
	/* Inputs while queued or running are refused, not mixed in. */
	assert_int_equal(commit(r, "INPUT0.txt", "1 2 3 4", &err), -EBUSY);
	assert_true(mfs_request_busy(r));
	tw a, b;
	tw_init(&a);
	tw_init(&b);
	assert_int_equal(mfs_request_wait(r, &a.w), 1);
	assert_int_equal(mfs_request_wait(r, &b.w), 1);
	/* An interrupted reader leaves; the other is woken once. */
	assert_true(mfs_request_cancel_wait(r, &a.w));
	assert_false(mfs_request_cancel_wait(r, &a.w));
	wait_done(r);
	pthread_mutex_lock(&b.lock);
	while (!b.woken)
		pthread_cond_wait(&b.cond, &b.lock);
	pthread_mutex_unlock(&b.lock);
	assert_int_equal(a.woken, 0);
	assert_int_equal(b.woken, 1);
	assert_false(mfs_request_cancel_wait(r, &b.w));
	/* A cancel that comes before registration makes the wait fail. */
	tw c;
	tw_init(&c);
	assert_false(mfs_request_cancel_wait(r, &c.w));
	assert_int_equal(mfs_request_wait(r, &c.w), -EINTR);
	f->delay_ms = 0;
	mfs_request_put(r);
}

static void test_tensors_and_outputs(void **state)
{
	fixture *f = *state;
	mfs_request *r;
	mfs_error err;
	assert_int_equal(mfs_request_new(f->v, "infer-1", 1 << 20, &r, &err), 0);
	mfs_tensor in[2];
	mfs_shape s = { .rank = 1, .dims = { 4 } };
	for (int i = 0; i < 2; i++) {
		assert_int_equal(mfs_tensor_alloc(&in[i], MFS_DT_FLOAT, &s, &err), 0);
		for (int k = 0; k < 4; k++)
			((float *)in[i].data)[k] = (float)(k + 10 * i);
	}
	assert_int_equal(mfs_request_submit_tensors(r, in, &err), 0);
	assert_null(in[0].data);   /* moved */
	wait_done(r);
	const mfs_tensor *outs[2];
	assert_int_equal(mfs_request_outputs(r, outs, &err), 0);
	assert_true(((float *)outs[0]->data)[3] == 3.0f + 13.0f);
	assert_true(((float *)outs[1]->data)[3] == 3.0f - 13.0f);
	/* A missing input is ENOENT naming it. */
	mfs_tensor only[2] = { 0 };
	assert_int_equal(mfs_tensor_alloc(&only[0], MFS_DT_FLOAT, &s, &err), 0);
	assert_int_equal(mfs_request_submit_tensors(r, only, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "INPUT1"));
	mfs_request_put(r);
}

static void test_names(void **state)
{
	(void)state;
	assert_true(mfs_request_name_ok("job42"));
	assert_true(mfs_request_name_ok("a.b-c_D"));
	assert_true(mfs_request_name_ok(".hidden"));
	assert_false(mfs_request_name_ok(""));
	assert_false(mfs_request_name_ok("."));
	assert_false(mfs_request_name_ok(".."));
	assert_false(mfs_request_name_ok("a b"));
	assert_false(mfs_request_name_ok("a/b"));
	char big[66];
	memset(big, 'x', 65);
	big[65] = '\0';
	assert_false(mfs_request_name_ok(big));
	big[64] = '\0';
	assert_true(mfs_request_name_ok(big));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_life_of_a_request, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_inputs_keep_the_rest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_commit_take, setup, teardown),
		cmocka_unit_test_setup_teardown(test_size_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_find_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reads_bound_to_a_run, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_failure_is_eio, setup, teardown),
		cmocka_unit_test_setup_teardown(test_busy_and_cancelled_waits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tensors_and_outputs, setup, teardown),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

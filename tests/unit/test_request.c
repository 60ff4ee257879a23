/* test_request.c - the request state machine on a fake served version: a
 * real scheduler whose runner computes add/sub, and a config parsed from
 * text (what the loader would complete from the graph is set by hand). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "request.h"

static const char *ADD_SUB =
	"name: \"add_sub\"\n"
	"input [ { name: \"INPUT0\" data_type: TYPE_FP32 dims: [ 4 ] },\n"
	"        { name: \"INPUT1\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n"
	"output [ { name: \"OUTPUT0\" data_type: TYPE_FP32 dims: [ 4 ] },\n"
	"         { name: \"OUTPUT1\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n";

typedef struct fixture {
	mfs_sched *sched;
	mfs_model_config cfg;
	mfs_version *v;
	int runs;
	int fail_next;
	int delay_ms;
} fixture;

/* The graph's order is reversed from the config's, to prove the mapping. */
static int add_sub_run(void *ctx, int instance, const mfs_tensor *in, mfs_tensor *out, mfs_error *err)
{
	fixture *f = ctx;
	(void)instance;
	__atomic_add_fetch(&f->runs, 1, __ATOMIC_RELAXED);
	if (f->delay_ms)
		usleep((useconds_t)f->delay_ms * 1000);
	if (f->fail_next)
		return mfs_fail(err, EIO, "node 'Add': injected failure");
	const mfs_tensor *a = &in[1], *b = &in[0];   /* graph inputs: INPUT1, INPUT0 */
	for (int o = 0; o < 2; o++) {
		int rc = mfs_tensor_alloc(&out[o], MFS_DT_FLOAT, &a->shape, err);
		if (rc < 0)
			return rc;
	}
	for (int64_t i = 0; i < mfs_shape_numel(&a->shape); i++) {
		float x = ((const float *)a->data)[i], y = ((const float *)b->data)[i];
		((float *)out[1].data)[i] = x + y;   /* graph output 1: OUTPUT0 */
		((float *)out[0].data)[i] = x - y;   /* graph output 0: OUTPUT1 */
	}
	return 0;
}

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	mfs_error err;
	assert_int_equal(mfs_sched_new(2, &f->sched, &err), 0);
	assert_int_equal(mfs_config_parse_pbtxt(ADD_SUB, strlen(ADD_SUB), "config.pbtxt", &f->cfg, &err), 0);
	f->cfg.inputs[0].graph_index = 1;
	f->cfg.inputs[1].graph_index = 0;
	f->cfg.outputs[0].graph_index = 1;
	f->cfg.outputs[1].graph_index = 0;
	mfs_version *v = calloc(1, sizeof(*v));
	v->model_name = strdup("add_sub");
	v->version = 1;
	v->config = &f->cfg;
	v->n_graph_inputs = 2;
	v->n_graph_outputs = 2;
	snprintf(v->device, sizeof(v->device), "cpu");
	mfs_stats_init(&v->stats);
	v->refs = 1;
	mfs_runner r = { .run = add_sub_run, .ctx = f, .n_inputs = 2, .n_outputs = 2 };
	mfs_queue_conf qc = { .label = "add_sub v1", .instances = 1, .stats = &v->stats };
	assert_int_equal(mfs_sched_queue_new(f->sched, &qc, &r, &v->queue, &err), 0);
	f->v = v;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	mfs_version_put(f->v);   /* the last reference: frees queue and version */
	mfs_sched_stop(f->sched, 0);
	mfs_sched_free(f->sched);
	mfs_config_release(&f->cfg);
	free(f);
	return 0;
}

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

static char *read_out(mfs_request *r, const char *name, mfs_format fmt, int *rc)
{
	char *buf = NULL;
	size_t len = 0;
	mfs_error err;
	*rc = mfs_request_read_output(r, mfs_request_output_index(r, name), fmt, &buf, &len, &err);
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
	assert_int_equal(mfs_request_input_file_size(r, "INPUT0.txt"), 7);
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
	assert_int_equal(mfs_request_input_file_size(r, "INPUT0.txt"), -1);
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
	assert_int_equal(mfs_request_input_file_size(r, "INPUT0.txt"), 7);
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
		cmocka_unit_test_setup_teardown(test_size_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_failure_is_eio, setup, teardown),
		cmocka_unit_test_setup_teardown(test_busy_and_cancelled_waits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tensors_and_outputs, setup, teardown),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

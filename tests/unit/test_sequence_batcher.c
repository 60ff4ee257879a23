/* test_sequence_batcher.c - the sequence batcher in front of a real
 * scheduler queue, with a fake model: OUTPUT = STATE_IN + INPUT,
 * STATE_OUT = OUTPUT, and the control inputs START and CORRID recorded
 * per row.  Order within a sequence, one row per sequence in a batch,
 * slots, errors, idle expiry, the memory budget and closing. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "membudget.h"
#include "scheduler.h"
#include "sequence_batcher.h"

/* Graph order of the fake model's tensors. */
enum { IN, STATE_IN, START, CORRID, N_IN };
enum { OUT, STATE_OUT, N_OUT };
static const char *const in_names[] = { "INPUT", "STATE_IN", "START", "CORRID" };
static const mfs_dtype in_dtypes[] = { MFS_DT_FLOAT, MFS_DT_FLOAT, MFS_DT_INT32, MFS_DT_UINT64 };
static const char *const out_names[] = { "OUTPUT", "STATE_OUT" };

typedef struct fake {
	pthread_mutex_t lock;
	int runs, max_rows, sleep_ms;
	bool repeated_id;            /* a run held two rows of one sequence */
} fake;

static int fake_run(void *ctx, int instance, const mfs_tensor *in, mfs_tensor *out, mfs_error *err)
{
	fake *f = ctx;
	(void)instance;
	int rows = (int)in[IN].shape.dims[0];
	if (f->sleep_ms)
		usleep((useconds_t)f->sleep_ms * 1000);
	pthread_mutex_lock(&f->lock);
	f->runs++;
	if (rows > f->max_rows)
		f->max_rows = rows;
	for (int a = 0; a < rows; a++)
		for (int b = a + 1; b < rows; b++)
			if (((const uint64_t *)in[CORRID].data)[a] == ((const uint64_t *)in[CORRID].data)[b])
				f->repeated_id = true;
	pthread_mutex_unlock(&f->lock);
	for (int o = 0; o < N_OUT; o++) {
		int rc = mfs_tensor_alloc(&out[o], MFS_DT_FLOAT, &in[IN].shape, err);
		if (rc < 0)
			return rc;
		for (int i = 0; i < rows; i++) {
			float v = ((const float *)in[STATE_IN].data)[i] + ((const float *)in[IN].data)[i];
			/* The START row of a sequence: the state must be the initial 0.5. */
			if (((const int32_t *)in[START].data)[i] == 1 &&
			    ((const float *)in[STATE_IN].data)[i] != 0.5f)
				v = -1000;
			((float *)out[o].data)[i] = v;
		}
	}
	return 0;
}

typedef struct tstep {
	mfs_job job;
	mfs_tensor in[N_IN], out[N_OUT];
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
} tstep;

static void tstep_done(mfs_job *j)
{
	tstep *t = j->arg;
	pthread_mutex_lock(&t->lock);
	t->done = true;
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

static void tstep_init(tstep *t, float x)
{
	memset(t, 0, sizeof(*t));
	mfs_shape s = { .rank = 2, .dims = { 1, 1 } };
	assert_int_equal(mfs_tensor_alloc(&t->in[IN], MFS_DT_FLOAT, &s, NULL), 0);
	*(float *)t->in[IN].data = x;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->cond, NULL);
	t->job.inputs = t->in;
	t->job.outputs = t->out;
	t->job.done = tstep_done;
	t->job.arg = t;
}

/* Wait for the step; its OUTPUT, or NAN-like -9999 when it failed. */
static float tstep_wait(tstep *t)
{
	pthread_mutex_lock(&t->lock);
	while (!t->done)
		pthread_cond_wait(&t->cond, &t->lock);
	pthread_mutex_unlock(&t->lock);
	float v = t->job.status == 0 ? *(float *)t->out[OUT].data : -9999;
	for (int i = 0; i < N_IN; i++)
		mfs_tensor_release(&t->in[i]);
	for (int i = 0; i < N_OUT; i++)
		mfs_tensor_release(&t->out[i]);
	return v;
}

typedef struct rig {
	fake f;
	mfs_model_config cfg;
	mfs_sched *sched;
	mfs_queue *q;
	mfs_seqb *sb;
} rig;

static void rig_up(rig *r, const char *strategy, int idle_us, int instances)
{
	char text[1024];
	mfs_error err;
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->f.lock, NULL);
	snprintf(text, sizeof(text),
		 "max_batch_size: 2\n"
		 "sequence_batching { %s max_sequence_idle_microseconds: %d\n"
		 "  control_input [{ name: \"START\" control [{ kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] }] },\n"
		 "                 { name: \"CORRID\" control [{ kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 }] }]\n"
		 "  state [{ input_name: \"STATE_IN\" output_name: \"STATE_OUT\" data_type: TYPE_FP32 dims: [1]\n"
		 "           initial_state { data_type: TYPE_FP32 dims: [1] data_file: \"half.bin\" } }] }\n",
		 strategy, idle_us);
	if (mfs_config_parse_pbtxt(text, strlen(text), "config.pbtxt", &r->cfg, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(mfs_sched_new(2, &r->sched, &err), 0);
	mfs_queue_conf qc = { .label = "m", .instances = instances, .max_batch_size = 2,
			      .dynamic_batching = true };
	mfs_runner runner = { .run = fake_run, .ctx = &r->f, .n_inputs = N_IN, .n_outputs = N_OUT };
	assert_int_equal(mfs_sched_queue_new(r->sched, &qc, &runner, &r->q, &err), 0);
	/* The initial state comes from MODEL/initial_state/half.bin: 0.5. */
	char dir[] = "/tmp/test_seqb.XXXXXX", path[64];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/initial_state", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/initial_state/half.bin", dir);
	FILE *fp = fopen(path, "wb");
	float half = 0.5f;
	fwrite(&half, 4, 1, fp);
	fclose(fp);
	mfs_seqb_conf sc = { .label = "model 'm' version 1", .cfg = &r->cfg, .queue = r->q,
			     .instances = instances, .n_inputs = N_IN, .n_outputs = N_OUT,
			     .input_names = in_names, .input_dtypes = in_dtypes,
			     .output_names = out_names, .model_dir = dir };
	if (mfs_seqb_new(&sc, &r->sb, &err))
		fail_msg("%s", err.msg);
	unlink(path);
	snprintf(path, sizeof(path), "%s/initial_state", dir);
	rmdir(path);
	rmdir(dir);
}

static void rig_down(rig *r)
{
	mfs_sched_queue_free(r->q);
	mfs_seqb_free(r->sb);
	mfs_sched_stop(r->sched, 0);
	mfs_sched_free(r->sched);
	mfs_config_release(&r->cfg);
}

static mfs_seq_params P(uint64_t id, bool start, bool end)
{
	return (mfs_seq_params){ .id = { .set = true, .num = id }, .start = start, .end = end };
}

static int submit(rig *r, tstep *t, float x, mfs_seq_params p, mfs_error *err)
{
	tstep_init(t, x);
	return mfs_seqb_submit(r->sb, &t->job, &p, err);
}

static void test_in_order_and_batched(void **state)
{
	(void)state;
	rig r;
	mfs_error err;
	tstep a[4], b[4];
	rig_up(&r, "oldest { max_candidate_sequences: 4 max_queue_delay_microseconds: 2000 }", 1000000, 1);
	r.f.sleep_ms = 5;
	/* Both sequences' steps are queued at once: each sequence's run one
	 * after the other, in order; the two share runs. */
	for (int k = 0; k < 4; k++) {
		assert_int_equal(submit(&r, &a[k], 1, P(1, k == 0, k == 3), &err), 0);
		assert_int_equal(submit(&r, &b[k], 10, P(2, k == 0, k == 3), &err), 0);
	}
	for (int k = 0; k < 4; k++) {
		assert_float_equal(tstep_wait(&a[k]), 0.5f + (float)(k + 1), 0);
		assert_float_equal(tstep_wait(&b[k]), 0.5f + 10.0f * (float)(k + 1), 0);
	}
	assert_false(r.f.repeated_id);
	assert_int_equal(r.f.max_rows, 2);
	assert_int_equal(mfs_seqb_live(r.sb), 0);
	rig_down(&r);
}

static void test_errors(void **state)
{
	(void)state;
	rig r;
	mfs_error err;
	tstep t;
	rig_up(&r, "direct { }", 1000000, 1);
	mfs_seq_params none = { 0 };
	tstep_init(&t, 1);
	assert_int_equal(mfs_seqb_submit(r.sb, &t.job, &none, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "a request needs a sequence id"));
	mfs_tensor_release(&t.in[IN]);
	assert_int_equal(submit(&r, &t, 1, P(5, false, false), &err), -EIO);
	assert_string_equal(err.msg, "model 'm' version 1: sequence 5 is not started: its first request "
			    "needs sequence_start (a sequence lives in the version it started on)");
	mfs_tensor_release(&t.in[IN]);
	assert_int_equal(submit(&r, &t, 1, P(5, true, true), &err), 0);
	assert_float_equal(tstep_wait(&t), 1.5f, 0);
	assert_int_equal(submit(&r, &t, 1, P(5, false, false), &err), -EIO);
	assert_non_null(strstr(err.msg, "sequence 5 has ended"));
	mfs_tensor_release(&t.in[IN]);
	/* Two rows in one request of a sequence. */
	tstep_init(&t, 1);
	t.in[IN].shape.dims[0] = 2;
	mfs_seq_params p = P(6, true, false);
	assert_int_equal(mfs_seqb_submit(r.sb, &t.job, &p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "carries one row (batch size 1), not 2"));
	mfs_tensor_release(&t.in[IN]);
	/* A string id where CORRID takes a number. */
	tstep_init(&t, 1);
	p = (mfs_seq_params){ .start = true };
	assert_int_equal(mfs_seq_parse_id("id", "abc\n", 4, &p.id, &err), 0);
	assert_int_equal(mfs_seqb_submit(r.sb, &t.job, &p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "sequence id 'abc' is a string"));
	mfs_tensor_release(&t.in[IN]);
	rig_down(&r);
}

static void test_slots_and_budget(void **state)
{
	(void)state;
	rig r;
	mfs_error err;
	tstep a, b, c, d, e, f;
	uint64_t used0 = mfs_membudget_used();
	/* direct, max_batch_size 2, one instance: two slots. */
	rig_up(&r, "direct { }", 60000000, 1);
	assert_int_equal(submit(&r, &a, 1, P(1, true, false), &err), 0);
	assert_int_equal(submit(&r, &b, 2, P(2, true, false), &err), 0);
	assert_float_equal(tstep_wait(&a), 1.5f, 0);
	assert_float_equal(tstep_wait(&b), 2.5f, 0);
	/* Two states of one float (with its batch dim) are counted. */
	assert_int_equal(mfs_membudget_used() - used0, 8);
	/* A third sequence waits for a slot until sequence 1 ends. */
	assert_int_equal(submit(&r, &c, 3, P(3, true, false), &err), 0);
	assert_int_equal(mfs_seqb_live(r.sb), 3);
	pthread_mutex_lock(&c.lock);
	assert_false(c.done);
	pthread_mutex_unlock(&c.lock);
	assert_int_equal(submit(&r, &d, 1, P(1, false, true), &err), 0);
	assert_float_equal(tstep_wait(&d), 2.5f, 0);
	assert_float_equal(tstep_wait(&c), 3.5f, 0);
	assert_int_equal(mfs_membudget_used() - used0, 8);
	assert_int_equal(submit(&r, &e, 1, P(2, false, true), &err), 0);
	assert_int_equal(submit(&r, &f, 1, P(3, false, true), &err), 0);
	assert_float_equal(tstep_wait(&e), 3.5f, 0);
	assert_float_equal(tstep_wait(&f), 4.5f, 0);
	/* Ended: the states and the budget are back. */
	assert_int_equal(mfs_seqb_live(r.sb), 0);
	assert_int_equal(mfs_membudget_used(), used0);
	rig_down(&r);
}

static void test_idle(void **state)
{
	(void)state;
	rig r;
	mfs_error err;
	tstep a, b;
	rig_up(&r, "direct { }", 50000, 1);
	assert_int_equal(submit(&r, &a, 1, P(1, true, false), &err), 0);
	assert_float_equal(tstep_wait(&a), 1.5f, 0);
	/* The reaper frees it 50 ms after its step ended. */
	for (int i = 0; i < 1000 && mfs_seqb_live(r.sb); i++)
		usleep(5000);
	assert_int_equal(mfs_seqb_live(r.sb), 0);
	assert_int_equal(submit(&r, &b, 1, P(1, false, false), &err), -EIO);
	assert_string_equal(err.msg, "model 'm' version 1: sequence 1 was freed after idling more than "
			    "50000 µs (max_sequence_idle_microseconds); its state is gone: start it again "
			    "with sequence_start");
	mfs_tensor_release(&b.in[IN]);
	rig_down(&r);
}

static void test_state_over_budget(void **state)
{
	(void)state;
	rig r;
	mfs_error err;
	tstep a;
	rig_up(&r, "direct { }", 60000000, 1);
	/* The state (4 bytes) would pass --max-memory: the START fails. */
	mfs_membudget_init(mfs_membudget_used() + 3);
	assert_int_equal(submit(&r, &a, 1, P(1, true, false), &err), -ENOSPC);
	assert_non_null(strstr(err.msg, "model 'm' version 1: the sequence's state: "));
	mfs_tensor_release(&a.in[IN]);
	assert_int_equal(mfs_seqb_live(r.sb), 0);
	assert_int_equal(submit(&r, &a, 1, P(1, false, false), &err), -EIO);
	assert_non_null(strstr(err.msg, "sequence 1 is not started"));
	mfs_tensor_release(&a.in[IN]);
	mfs_membudget_init(0);
	assert_int_equal(submit(&r, &a, 1, P(1, true, true), &err), 0);
	assert_float_equal(tstep_wait(&a), 1.5f, 0);
	rig_down(&r);
}

static void test_close_fails_waiting(void **state)
{
	(void)state;
	rig r;
	mfs_error err;
	tstep a[3];
	rig_up(&r, "direct { }", 1000000, 1);
	r.f.sleep_ms = 50;
	for (int k = 0; k < 3; k++)
		assert_int_equal(submit(&r, &a[k], 1, P(9, k == 0, false), &err), 0);
	mfs_seqb_close(r.sb, "unloaded");
	/* The first is in the queue and runs; the others fail. */
	assert_float_equal(tstep_wait(&a[0]), 1.5f, 0);
	assert_float_equal(tstep_wait(&a[1]), -9999, 0);
	assert_int_equal(a[1].job.status, -ESHUTDOWN);
	assert_string_equal(a[1].job.err.msg, "model 'm' version 1: unloaded");
	tstep_wait(&a[2]);
	tstep t;
	assert_int_equal(submit(&r, &t, 1, P(10, true, false), &err), -ESHUTDOWN);
	mfs_tensor_release(&t.in[IN]);
	rig_down(&r);
}

static void test_parse(void **state)
{
	(void)state;
	mfs_seq_id id;
	bool b;
	mfs_error err;
	char buf[64];
	assert_int_equal(mfs_seq_parse_id("x", "42\n", 3, &id, &err), 0);
	assert_false(id.is_string);
	assert_int_equal(id.num, 42);
	assert_string_equal(mfs_seq_id_format(&id, buf, sizeof(buf)), "42");
	assert_int_equal(mfs_seq_parse_id("x", "0", 1, &id, &err), -EINVAL);
	assert_int_equal(mfs_seq_parse_id("x", "99999999999999999999", 20, &id, &err), -EINVAL);
	assert_int_equal(mfs_seq_parse_id("x", "", 0, &id, &err), -EINVAL);
	assert_int_equal(mfs_seq_parse_id("x", "a\tb", 3, &id, &err), -EINVAL);
	assert_int_equal(mfs_seq_parse_id("x", "utt-7", 5, &id, &err), 0);
	assert_true(id.is_string);
	assert_string_equal(mfs_seq_id_format(&id, buf, sizeof(buf)), "'utt-7'");
	assert_int_equal(mfs_seq_parse_flag("f", "1\n", 2, &b, &err), 0);
	assert_true(b);
	assert_int_equal(mfs_seq_parse_flag("f", "false", 5, &b, &err), 0);
	assert_false(b);
	assert_int_equal(mfs_seq_parse_flag("f", "", 0, &b, &err), 0);
	assert_false(b);
	assert_int_equal(mfs_seq_parse_flag("f", "yes", 3, &b, &err), -EINVAL);
	assert_string_equal(err.msg, "f: 'yes' is not 1, 0, true or false");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_in_order_and_batched),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_slots_and_budget),
		cmocka_unit_test(test_idle),
		cmocka_unit_test(test_state_over_budget),
		cmocka_unit_test(test_close_fails_waiting),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

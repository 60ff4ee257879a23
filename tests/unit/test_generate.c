/* Unit tests for src/core/generate*.c: sampling (greedy, seeded
 * reproducible draws, top_k and top_p cuts), the parameters, and the
 * loop's bookkeeping with a fake engine: generations of different
 * lengths joining and leaving the batch, whose runner checks at every
 * step that each row's mask, position and re-packed cache are its own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "generate.h"
#include "graph_builder.h"

static void test_greedy(void **state)
{
	(void)state;
	mfs_gen_params p;
	mfs_gen_params_init(&p);
	float l[5] = { 0.1f, 3.0f, -1.0f, 3.0f, 2.0f };
	mfs_gen_rng g;
	mfs_gen_rng_seed(&g, 1);
	assert_int_equal(mfs_gen_sample(l, 5, &p, &g, NULL), 1);   /* lowest id on a tie */
}

static void test_seeded_sampling(void **state)
{
	(void)state;
	mfs_gen_params p;
	mfs_gen_params_init(&p);
	p.temperature = 1.0;
	float l[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
	char scratch[8 * 8];
	int64_t a[64], b[64];
	mfs_gen_rng g;
	mfs_gen_rng_seed(&g, 42);
	for (int i = 0; i < 64; i++)
		a[i] = mfs_gen_sample(l, 8, &p, &g, scratch);
	mfs_gen_rng_seed(&g, 42);
	for (int i = 0; i < 64; i++)
		b[i] = mfs_gen_sample(l, 8, &p, &g, scratch);
	assert_memory_equal(a, b, sizeof(a));
	int seen[8] = { 0 };
	for (int i = 0; i < 64; i++)
		seen[a[i]]++;
	for (int k = 0; k < 8; k++)
		assert_true(seen[k] > 0);   /* uniform logits: every id comes up */
	/* top_k 2: only the two most likely */
	float m[6] = { 0, 5, 0, 4.9f, 0, 0 };
	p.top_k = 2;
	for (int i = 0; i < 200; i++) {
		int64_t id = mfs_gen_sample(m, 6, &p, &g, scratch);
		assert_true(id == 1 || id == 3);
	}
	/* top_p: the first id alone holds more than 0.5 */
	p.top_k = 0;
	p.top_p = 0.5;
	for (int i = 0; i < 200; i++)
		assert_int_equal(mfs_gen_sample(m, 6, &p, &g, scratch), 1);
}

static void test_params(void **state)
{
	(void)state;
	mfs_gen_params p;
	mfs_error err;
	mfs_gen_params_init(&p);
	assert_int_equal(mfs_gen_param_parse(&p, "max_tokens", "12\n", 3, &err), 0);
	assert_int_equal(p.max_tokens, 12);
	assert_int_equal(mfs_gen_param_parse(&p, "stop", "3, 4\n5", 6, &err), 0);
	assert_int_equal(p.n_stop, 3);
	assert_int_equal(p.stop[2], 5);
	assert_int_equal(mfs_gen_param_parse(&p, "top_p", "1.5", 3, &err), -EINVAL);
	assert_int_equal(mfs_gen_param_parse(&p, "priority", "1", 1, &err), -ENOENT);
	int64_t *prompt, n;
	const char *j = "{\"input_ids\":[4,5],\"max_tokens\":3,\"stream\":true,\"seed\":9}";
	assert_int_equal(mfs_gen_parse_json(j, strlen(j), &prompt, &n, &p, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(prompt[1], 5);
	assert_true(p.stream);
	free(prompt);
	j = "{\"input_ids\":[4],\"top_k\":-1}";
	assert_int_equal(mfs_gen_parse_json(j, strlen(j), &prompt, &n, &p, &err), -EINVAL);
}

/* ---- the loop with a fake engine: H = D = 1, V = 16 ---- */

#define V 16
static int bad_steps, steps, max_rows;

/* Next id: (last + 1) mod V.  The cache holds each position's id + 100;
 * every row checks that its real positions (the mask's ones, right
 * aligned) hold its own ids, and position_ids = its length. */
static int fake_run(void *ctx, int inst, const mfs_tensor *in, mfs_tensor *out, mfs_error *err)
{
	(void)ctx;
	(void)inst;
	(void)err;
	const mfs_tensor *ids = &in[0], *mask = &in[1], *pos = &in[2], *pk = &in[3];
	int64_t B = ids->shape.dims[0], S = ids->shape.dims[1], T = mask->shape.dims[1];
	int64_t P = pk->shape.dims[2];
	steps++;
	max_rows = B > max_rows ? (int)B : max_rows;
	if (T != P + S)
		bad_steps++;
	mfs_shape ls = { 3, { B, S, V } }, ps = { 4, { B, 1, P + S, 1 } };
	mfs_tensor_alloc(&out[0], MFS_DT_FLOAT, &ls, err);
	mfs_tensor_alloc(&out[1], MFS_DT_FLOAT, &ps, err);
	mfs_tensor_alloc(&out[2], MFS_DT_FLOAT, &ps, err);
	for (int64_t b = 0; b < B; b++) {
		const int64_t *m = (const int64_t *)mask->data + b * T;
		int64_t ones = 0;
		for (int64_t t = 0; t < T; t++) {
			ones += m[t];
			if (t > 0 && m[t - 1] > m[t])
				bad_steps++;   /* not right-aligned */
		}
		int64_t len = ones - S, p0 = ((const int64_t *)pos->data)[b * S];
		if (p0 != len)
			bad_steps++;
		/* the cached ids must run on to the first new one */
		const float *k = P ? (const float *)pk->data + b * P : NULL;
		int64_t first = ((const int64_t *)ids->data)[b * S];
		if (len > 0 && k && (int64_t)k[P - 1] - 100 != (first + V - 1) % V && S == 1)
			bad_steps++;
		float *ok = (float *)out[1].data + b * (P + S), *ov = (float *)out[2].data + b * (P + S);
		if (P) {   /* the first step's past is empty (no data) */
			memcpy(ok, k, (size_t)P * sizeof(float));
			memcpy(ov, k, (size_t)P * sizeof(float));
		}
		for (int64_t s = 0; s < S; s++)
			ok[P + s] = ov[P + s] = (float)(((const int64_t *)ids->data)[b * S + s] + 100);
		int64_t last = ((const int64_t *)ids->data)[b * S + S - 1];
		((float *)out[0].data)[(b * S + S - 1) * V + (last + 1) % V] = 1.0f;
	}
	return 0;
}

static mfs_graph *decoder_graph(void)
{
	onnx_model *m = gb_new(13);
	int64_t d2[2] = { -1, -1 }, d4[4] = { -1, 1, -1, 1 };
	gb_input(m, "input_ids", MFS_DT_INT64, 2, d2);
	gb_input(m, "attention_mask", MFS_DT_INT64, 2, d2);
	gb_input(m, "position_ids", MFS_DT_INT64, 2, d2);
	gb_input(m, "past_key_values.0.key", MFS_DT_FLOAT, 4, d4);
	gb_input(m, "past_key_values.0.value", MFS_DT_FLOAT, 4, d4);
	onnx_node *c = gb_node(m, "", "Cast", "c", "attention_mask", "logits");
	attr_int(c, "to", 1);
	gb_node(m, "", "Identity", "i0", "past_key_values.0.key", "present.0.key");
	gb_node(m, "", "Identity", "i1", "past_key_values.0.value", "present.0.value");
	gb_output(m, "logits");
	gb_output(m, "present.0.key");
	gb_output(m, "present.0.value");
	mfs_graph *g = NULL;
	mfs_error err;
	assert_int_equal(mfs_graph_compile(m, "fake", &g, &err), 0);
	return g;
}

static void test_loop_batches_rows(void **state)
{
	(void)state;
	mfs_sched *s;
	mfs_queue *q;
	mfs_error err;
	mfs_graph *graph = decoder_graph();
	assert_int_equal(mfs_sched_new(2, &s, &err), 0);
	mfs_queue_conf qc = { .label = "fake", .instances = 1 };
	mfs_runner r = { .run = fake_run, .n_inputs = 5, .n_outputs = 3 };
	assert_int_equal(mfs_sched_queue_new(s, &qc, &r, &q, &err), 0);
	mfs_model_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	mfs_generator *gen;
	mfs_parameter par = { (char *)"generator", (char *)"true" };
	cfg.parameters = &par;
	cfg.n_parameters = 1;
	int grc = mfs_generator_new(&cfg, graph, q, "fake", &gen, &err);
	if (grc < 0)
		fail_msg("%s", err.msg);
	assert_non_null(gen);
	mfs_gen *gs[6];
	for (int i = 0; i < 6; i++) {
		int64_t prompt[8];
		for (int k = 0; k <= i; k++)
			prompt[k] = (i + k) % V;
		mfs_gen_params p;
		mfs_gen_params_init(&p);
		p.max_tokens = 5 + 3 * i;
		assert_int_equal(mfs_gen_start(gen, prompt, i + 1, &p, &gs[i], &err), 0);
	}
	for (int i = 0; i < 6; i++) {
		mfs_gen_state st = MFS_GEN_RUNNING;
		int64_t *ids = NULL;
		size_t n = 0;
		const char *fin;
		for (int tries = 0; tries < 10000 && st == MFS_GEN_RUNNING; tries++) {
			free(ids);
			mfs_gen_read(gs[i], 0, &ids, &n, &st, &fin, &err);
			if (st == MFS_GEN_RUNNING)
				usleep(1000);
		}
		assert_int_equal(st, MFS_GEN_DONE);
		assert_int_equal(n, 5 + 3 * i);
		int64_t want = (2 * i + 1) % V;   /* last prompt id + 1 */
		for (size_t k = 0; k < n; k++, want = (want + 1) % V)
			assert_int_equal(ids[k], want);
		free(ids);
		mfs_gen_put(gs[i]);
	}
	assert_int_equal(bad_steps, 0);
	assert_true(max_rows > 1);   /* they shared steps */
	mfs_sched_queue_free(q);
	mfs_generator_free(gen);
	mfs_sched_stop(s, 0);
	mfs_sched_free(s);
	mfs_graph_free(graph);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_greedy),
		cmocka_unit_test(test_seeded_sampling),
		cmocka_unit_test(test_params),
		cmocka_unit_test(test_loop_batches_rows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* bench_generate.c - time greedy text generation with the modelfs engine
 * in-process: the decode loop a client of the engine writes, feeding each
 * step's present.N.key|value back as past_key_values.N.key|value.
 *
 *   bench_generate MODEL.onnx [--prompt N] [--new N] [--batch N]
 *                  [--threads N] [--rounds N] [--ids]
 *                  [--device cpu|opencl[:SELECTOR]] [--host-cache]
 *
 * The model follows the Hugging Face / Optimum convention (input_ids,
 * attention_mask, optional position_ids, past_key_values.N.key|value in;
 * logits, present.N.key|value out; empty past at the first step).  One
 * generation: a prompt of --prompt tokens (ids (7 i + 13 b) % 1000 for
 * row b), then --new tokens greedy; --batch rows generate together in
 * one run per step (what a server's in-flight batching does with
 * concurrent streams).  After a warm-up generation of 2 tokens, prints
 * one JSON line, the best of --rounds generations: {"ttft_ms", "total_ms", "tokens_per_s" (all rows' new
 * tokens over total_ms), "step_ms" (median decode step),
 * "cpu_ms_per_token" (the process's CPU time over the rounds' tokens: what
 * waiting for a CPU on a shared machine does not inflate)}; --ids adds
 * row 0's ids (to compare with another engine's).  The cache stays in the
 * engine's device memory between steps (engine.h, "Resident tensors");
 * --host-cache brings it to the host and back at every step instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

#include "engine.h"
#include "ocl_backend.h"
#include "malloc_policy.h"
#include "openmp_policy.h"

#define MAX_IO 256

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* CPU time of the process (all threads), ms: on this shared VM a figure
 * that waiting for a CPU does not inflate. */
static double cpu_ms(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

typedef struct gen {
	const mfs_graph *m;
	int n_in, n_out;
	int ids, mask, pos;          /* input indices (-1: absent) */
	int past_of_out[MAX_IO];     /* output k feeds input past_of_out[k] */
	int logits;                  /* output index */
	mfs_tensor in[MAX_IO], out[MAX_IO];
} gen;

static int bind(gen *g, const mfs_graph *m)
{
	memset(g, 0, sizeof(*g));
	g->m = m;
	g->n_in = mfs_graph_n_inputs(m);
	g->n_out = mfs_graph_n_outputs(m);
	g->ids = g->mask = g->pos = g->logits = -1;
	if (g->n_in > MAX_IO || g->n_out > MAX_IO)
		return -1;
	for (int i = 0; i < g->n_in; i++) {
		const char *n = mfs_graph_input(m, i)->name;
		if (!strcmp(n, "input_ids"))
			g->ids = i;
		else if (!strcmp(n, "attention_mask"))
			g->mask = i;
		else if (!strcmp(n, "position_ids"))
			g->pos = i;
		else if (strncmp(n, "past_key_values.", 16) != 0)
			return -1;
	}
	for (int k = 0; k < g->n_out; k++) {
		const char *n = mfs_graph_output(m, k)->name;
		char want[256];
		g->past_of_out[k] = -1;
		if (!strcmp(n, "logits")) {
			g->logits = k;
			continue;
		}
		if (strncmp(n, "present.", 8) != 0)
			return -1;
		snprintf(want, sizeof(want), "past_key_values.%s", n + 8);
		for (int i = 0; i < g->n_in; i++)
			if (!strcmp(mfs_graph_input(m, i)->name, want))
				g->past_of_out[k] = i;
		if (g->past_of_out[k] < 0)
			return -1;
	}
	return g->ids < 0 || g->mask < 0 || g->logits < 0 ? -1 : 0;
}

static void set_i64(mfs_tensor *t, int64_t rows, int64_t cols)
{
	mfs_shape s = { .rank = 2, .dims = { rows, cols } };
	mfs_error err;
	mfs_tensor_release(t);
	if (mfs_tensor_alloc_uninit(t, MFS_DT_INT64, &s, &err)) {
		fprintf(stderr, "bench_generate: %s\n", err.msg);
		exit(1);
	}
}

/* The step's inputs: tokens[b * seq + j] at positions past..past+seq. */
static void step_inputs(gen *g, int batch, const int64_t *tokens, int seq, int64_t past)
{
	set_i64(&g->in[g->ids], batch, seq);
	memcpy(g->in[g->ids].data, tokens, sizeof(int64_t) * batch * seq);
	set_i64(&g->in[g->mask], batch, past + seq);
	for (int64_t i = 0; i < batch * (past + seq); i++)
		((int64_t *)g->in[g->mask].data)[i] = 1;
	if (g->pos >= 0) {
		set_i64(&g->in[g->pos], batch, seq);
		for (int b = 0; b < batch; b++)
			for (int j = 0; j < seq; j++)
				((int64_t *)g->in[g->pos].data)[b * seq + j] = past + j;
	}
}

/* Greedy pick of every row's last position. */
static void argmax_last(const mfs_tensor *logits, int64_t *next)
{
	int64_t batch = logits->shape.dims[0], seq = logits->shape.dims[1];
	int64_t vocab = logits->shape.dims[2];
	for (int64_t b = 0; b < batch; b++) {
		const float *row = (const float *)logits->data + (b * seq + seq - 1) * vocab;
		int64_t best = 0;
		for (int64_t v = 1; v < vocab; v++)
			if (row[v] > row[best])
				best = v;
		next[b] = best;
	}
}

static int host_cache;

/* One generation; fills *ttft, *total and step times; row 0's ids. */
static int generate(gen *g, mfs_exec *e, int batch, int prompt, int n_new,
		    double *ttft, double *total, double *steps, int64_t *ids0)
{
	int64_t *tokens = malloc(sizeof(int64_t) * batch * prompt), next[256];
	mfs_error err;
	double t0 = now_ms();

	for (int b = 0; b < batch; b++)
		for (int j = 0; j < prompt; j++)
			tokens[b * prompt + j] = (7 * j + 13 * b) % 1000;
	for (int i = 0; i < g->n_in; i++) {
		const mfs_io_desc *d = mfs_graph_input(g->m, i);
		if (i == g->ids || i == g->mask || i == g->pos)
			continue;
		mfs_shape s = { .rank = 4, .dims = { batch, d->dims[1], 0, d->dims[3] } };
		mfs_tensor_release(&g->in[i]);
		g->in[i] = (mfs_tensor){ .dtype = d->dtype, .shape = s, .kind = MFS_KIND_TENSOR };
	}
	int64_t past = 0;
	int seq = prompt;
	for (int step = 0; step < n_new; step++) {
		double s0 = now_ms();
		step_inputs(g, batch, step ? next : tokens, seq, past);
		for (int k = 0; k < g->n_out && !host_cache; k++)
			if (k != g->logits)
				mfs_tensor_want_device(&g->out[k]);
		if (mfs_exec_run(e, g->in, g->out, &err)) {
			fprintf(stderr, "bench_generate: %s\n", err.msg);
			return -1;
		}
		argmax_last(&g->out[g->logits], next);
		ids0[step] = next[0];
		for (int k = 0; k < g->n_out; k++) {
			if (k == g->logits) {
				mfs_tensor_release(&g->out[k]);
				continue;
			}
			mfs_tensor_release(&g->in[g->past_of_out[k]]);
			g->in[g->past_of_out[k]] = g->out[k];   /* present -> past */
		}
		past += seq;
		seq = 1;
		double s1 = now_ms();
		if (step == 0)
			*ttft = s1 - t0;
		else
			steps[step - 1] = s1 - s0;
	}
	*total = now_ms() - t0;
	free(tokens);
	return 0;
}

int main(int argc, char **argv)
{
	const char *path = NULL, *device = "cpu";
	mfs_backend *backend = NULL;
	int prompt = 128, n_new = 128, batch = 1, threads = 2, rounds = 1, print_ids = 0;
	mfs_graph *model;
	mfs_exec *exec;
	mfs_error err;
	gen g;

	mfs_openmp_prefer_bounded_spin(argv);
	mfs_malloc_keep_pages();   /* as the daemon does (malloc_policy.h) */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--prompt") && i + 1 < argc)
			prompt = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--new") && i + 1 < argc)
			n_new = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
			batch = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--device") && i + 1 < argc)
			device = argv[++i];
		else if (!strcmp(argv[i], "--ids"))
			print_ids = 1;
		else if (!strcmp(argv[i], "--host-cache"))
			host_cache = 1;
		else
			path = argv[i];
	}
	if (!path || prompt < 1 || n_new < 2 || batch < 1 || batch > 256 || rounds < 1) {
		fprintf(stderr, "usage: bench_generate MODEL.onnx [--prompt N] [--new N>=2] [--batch N<=256] [--threads N] [--rounds N] [--ids] [--device cpu|opencl[:SEL]] [--host-cache]\n");
		return 2;
	}
	mfs_engine_set_threads(threads);
	if (mfs_graph_load(path, path, &model, &err)) {
		fprintf(stderr, "bench_generate: %s\n", err.msg);
		return 1;
	}
	if (bind(&g, model)) {
		fprintf(stderr, "bench_generate: %s: not a decoder with a key/value cache (input_ids, attention_mask, past_key_values.N.key|value; logits, present.N.key|value)\n", path);
		return 1;
	}
	if (strncmp(device, "opencl", 6) == 0) {
		if (mfs_backend_opencl_new(device[6] == ':' ? device + 7 : NULL, &backend, &err)) {
			fprintf(stderr, "bench_generate: %s\n", err.msg);
			return 1;
		}
		fprintf(stderr, "bench_generate: %s\n", mfs_backend_name(backend));
	} else if (strcmp(device, "cpu") != 0) {
		fprintf(stderr, "bench_generate: --device: cpu or opencl[:SELECTOR]\n");
		return 2;
	}
	if (mfs_exec_new(model, backend, &exec, &err)) {
		fprintf(stderr, "bench_generate: %s\n", err.msg);
		return 1;
	}
	double *steps = calloc((size_t)n_new, sizeof(double));
	int64_t *ids0 = calloc((size_t)n_new, sizeof(int64_t));
	double best_total = 0, best_ttft = 0, best_step = 0;
	/* warm-up: a generation of 2 tokens (the first runs prepare every
	 * node for the prompt's and a step's shapes) */
	double wt, wtot;
	if (generate(&g, exec, batch, prompt, 2, &wt, &wtot, steps, ids0))
		return 1;
	double c0 = cpu_ms();
	for (int r = 0; r < rounds; r++) {
		double ttft = 0, total = 0;
		if (generate(&g, exec, batch, prompt, n_new, &ttft, &total, steps, ids0))
			return 1;
		qsort(steps, (size_t)n_new - 1, sizeof(double), cmp_double);
		if (r == 0 || total < best_total) {
			best_total = total;
			best_ttft = ttft;
			best_step = steps[(n_new - 1) / 2];
		}
	}
	double cpu = (cpu_ms() - c0) / rounds;
	printf("{\"ttft_ms\": %.2f, \"total_ms\": %.2f, \"tokens_per_s\": %.2f, \"step_ms\": %.3f, "
	       "\"cpu_ms_per_token\": %.2f",
	       best_ttft, best_total, batch * n_new * 1e3 / best_total, best_step, cpu / (batch * n_new));
	if (print_ids) {
		printf(", \"ids\": [");
		for (int i = 0; i < n_new; i++)
			printf("%s%lld", i ? ", " : "", (long long)ids0[i]);
		printf("]");
	}
	printf("}\n");
	for (int i = 0; i < g.n_in; i++)
		mfs_tensor_release(&g.in[i]);
	free(steps);
	free(ids0);
	mfs_exec_free(exec);
	mfs_graph_free(model);
	mfs_backend_opencl_free(backend);
	return 0;
}

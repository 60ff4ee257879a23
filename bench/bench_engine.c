/* bench_engine.c - time the modelfs engine on one model, and raw OpenBLAS.
 *
 *   bench_engine --describe MODEL.onnx [--batch N]
 *       print the inputs as JSON (for the ONNX Runtime peer)
 *   bench_engine MODEL.onnx [--batch N] [--iters N] [--threads N]
 *                [--device cpu|opencl[:SELECTOR]] [--gap-us N]
 *       run the model on deterministic inputs; print {"median_ms","min_ms"}
 *       (a run includes uploading the inputs and downloading the outputs);
 *       --gap-us sleeps N us between runs, as a server idles between one
 *       client's requests (caches and cores go cold: make bench-fs
 *       compares the daemon's compute with the engine's at its gap)
 *   bench_engine --list-devices
 *       print the OpenCL devices (index: platform / device)
 *   bench_engine --sgemm N [--iters N] [--threads N]
 *       raw cblas_sgemm N x N x N; print {"median_ms","gflops"}
 *
 * Variable dims are set to --batch for the first dim and 1 elsewhere; the
 * inputs are filled the same way as bench/ort_bench.js fills them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include <cblas.h>

#include "backend.h"
#include "engine.h"
#include "ocl_backend.h"
#include "ocl_device.h"
#include "malloc_policy.h"
#include "openmp_policy.h"

#define MAX_IO 32

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static const char *js_dtype(mfs_dtype dt)
{
	switch (dt) {
	case MFS_DT_FLOAT: return "float32";
	case MFS_DT_DOUBLE: return "float64";
	case MFS_DT_INT64: return "int64";
	case MFS_DT_INT32: return "int32";
	case MFS_DT_INT8: return "int8";
	case MFS_DT_UINT8: return "uint8";
	case MFS_DT_BOOL: return "bool";
	default: return NULL;
	}
}

static void concrete_shape(const mfs_io_desc *d, int batch, mfs_shape *s)
{
	s->rank = d->rank;
	for (int i = 0; i < d->rank; i++)
		s->dims[i] = d->dims[i] >= 0 ? d->dims[i] : (i == 0 ? batch : 1);
}

static void fill(mfs_tensor *t)
{
	int64_t n = mfs_shape_numel(&t->shape);
	for (int64_t i = 0; i < n; i++) {
		switch (t->dtype) {
		case MFS_DT_FLOAT: ((float *)t->data)[i] = (float)sin((double)i); break;
		case MFS_DT_DOUBLE: ((double *)t->data)[i] = sin((double)i); break;
		case MFS_DT_INT64: ((int64_t *)t->data)[i] = i % 7; break;
		case MFS_DT_INT32: ((int32_t *)t->data)[i] = (int32_t)(i % 7); break;
		default: ((uint8_t *)t->data)[i * (int64_t)mfs_dtype_size(t->dtype)] = (uint8_t)(i % 7);
		}
	}
}

/* threads: the count the engine settled on for the model's runs (0: not
 * printed) */
static void report(double *times, int iters, double flops, int threads)
{
	double sum = 0;
	for (int i = 0; i < iters; i++)
		sum += times[i];
	qsort(times, (size_t)iters, sizeof(double), cmp_double);
	/* the mean too: what a server's cumulative statistics give */
	printf("{\"median_ms\": %.4f, \"min_ms\": %.4f, \"mean_ms\": %.4f", times[iters / 2], times[0],
	       sum / iters);
	if (flops > 0)
		printf(", \"gflops\": %.1f", flops / (times[iters / 2] * 1e6));
	if (threads > 0)
		printf(", \"threads\": %d", threads);
	printf("}\n");
}

static int bench_sgemm(int n, int iters, int threads)
{
	float *a = malloc(sizeof(float) * (size_t)n * n);
	float *b = malloc(sizeof(float) * (size_t)n * n);
	float *c = malloc(sizeof(float) * (size_t)n * n);
	double *times = calloc((size_t)iters, sizeof(double));

	for (long i = 0; i < (long)n * n; i++) {
		a[i] = (float)sin((double)i);
		b[i] = (float)cos((double)i);
	}
	/* raw OpenBLAS: its own threads (the engine keeps it at one) */
	openblas_set_num_threads(threads);
	for (int i = -2; i < iters; i++) {
		double t0 = now_ms();
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
			    a, n, b, n, 0.0f, c, n);
		if (i >= 0)
			times[i] = now_ms() - t0;
	}
	report(times, iters, 2.0 * n * n * n, 0);
	free(a);
	free(b);
	free(c);
	free(times);
	return 0;
}

int main(int argc, char **argv)
{
	const char *path = NULL, *device = "cpu";
	mfs_backend *backend = NULL;
	int describe = 0, batch = 1, iters = 20, threads = 2, sgemm = 0, gap_us = 0;
	mfs_error err;
	mfs_graph *model;
	mfs_exec *exec;
	mfs_tensor in[MAX_IO], out[MAX_IO];

	/* measure the daemon's OpenMP wait policy (src/cli/main.c) */
	mfs_openmp_prefer_bounded_spin(argv);
	mfs_malloc_keep_pages();   /* as the daemon does (malloc_policy.h) */

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--describe") == 0)
			describe = 1;
		else if (strcmp(argv[i], "--list-devices") == 0)
			return mfs_ocl_list(stdout) > 0 ? 0 : 1;
		else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc)
			batch = atoi(argv[++i]);
		else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc)
			iters = atoi(argv[++i]);
		else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (strcmp(argv[i], "--gap-us") == 0 && i + 1 < argc)
			gap_us = atoi(argv[++i]);
		else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc)
			device = argv[++i];
		else if (strcmp(argv[i], "--sgemm") == 0 && i + 1 < argc)
			sgemm = atoi(argv[++i]);
		else
			path = argv[i];
	}
	if (iters < 1)
		iters = 1;
	mfs_engine_set_threads(threads);
	if (sgemm)
		return bench_sgemm(sgemm, iters, threads);
	if (!path) {
		fprintf(stderr, "usage: bench_engine [--describe] MODEL.onnx [--batch N] [--iters N] [--threads N] [--device cpu|opencl[:SEL]] [--gap-us N] | --sgemm N\n");
		return 2;
	}
	if (mfs_graph_load(path, path, &model, &err)) {
		fprintf(stderr, "bench_engine: %s\n", err.msg);
		return 1;
	}
	int n_in = mfs_graph_n_inputs(model), n_out = mfs_graph_n_outputs(model);
	if (n_in > MAX_IO || n_out > MAX_IO) {
		fprintf(stderr, "bench_engine: too many inputs or outputs\n");
		return 1;
	}
	if (describe) {
		printf("[");
		for (int i = 0; i < n_in; i++) {
			const mfs_io_desc *d = mfs_graph_input(model, i);
			mfs_shape s;
			concrete_shape(d, batch, &s);
			printf("%s{\"name\": \"%s\", \"dtype\": \"%s\", \"shape\": [", i ? ", " : "",
			       d->name, js_dtype(d->dtype) ? js_dtype(d->dtype) : "unsupported");
			for (int k = 0; k < s.rank; k++)
				printf("%s%lld", k ? ", " : "", (long long)s.dims[k]);
			printf("]}");
		}
		printf("]\n");
		mfs_graph_free(model);
		return 0;
	}
	for (int i = 0; i < n_in; i++) {
		const mfs_io_desc *d = mfs_graph_input(model, i);
		mfs_shape s;
		concrete_shape(d, batch, &s);
		if (mfs_tensor_alloc(&in[i], d->dtype, &s, &err)) {
			fprintf(stderr, "bench_engine: %s\n", err.msg);
			return 1;
		}
		fill(&in[i]);
	}
	if (strncmp(device, "opencl", 6) == 0) {
		if (mfs_backend_opencl_new(device[6] == ':' ? device + 7 : NULL, &backend, &err)) {
			fprintf(stderr, "bench_engine: %s\n", err.msg);
			return 1;
		}
		fprintf(stderr, "bench_engine: %s\n", mfs_backend_name(backend));
	} else if (strcmp(device, "cpu") != 0) {
		fprintf(stderr, "bench_engine: --device: cpu or opencl[:SELECTOR]\n");
		return 2;
	}
	if (mfs_exec_new(model, backend, &exec, &err)) {
		fprintf(stderr, "bench_engine: %s\n", err.msg);
		return 1;
	}
	double *times = calloc((size_t)iters, sizeof(double));
	/* Three runs of warm-up, and more until the engine has settled how
	 * many threads this batch size takes (its first runs are trials of
	 * all, then one or half: exec/runtime/thread_sizing.h), at most 20 in all. */
	for (int i = 0, warm = 0; i < iters;) {
		double t0 = now_ms();
		if (mfs_exec_run(exec, in, out, &err)) {
			fprintf(stderr, "bench_engine: %s\n", err.msg);
			return 1;
		}
		double ms = now_ms() - t0;
		for (int k = 0; k < n_out; k++)
			mfs_tensor_release(&out[k]);
		if (gap_us > 0)
			usleep((useconds_t)gap_us);
		if (warm < 20 && (warm < 3 || !mfs_exec_threads_settled(exec, in)))
			warm++;
		else
			times[i++] = ms;
	}
	report(times, iters, 0, mfs_exec_threads_chosen(exec, in));
	free(times);
	for (int i = 0; i < n_in; i++)
		mfs_tensor_release(&in[i]);
	mfs_exec_free(exec);
	mfs_graph_free(model);
	mfs_backend_opencl_free(backend);
	return 0;
}

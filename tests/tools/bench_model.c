/* bench_model.c - load a model, run it on deterministic pseudo-random
 * inputs, print load time, first-run time and the median of warm runs.
 *
 *   bench_model MODEL.onnx [--runs N] [--threads T] [--dim D]
 *               [--dims D1,D2,...] [--out FILE] [--in FILE] [--opencl]
 *
 * Variable dims take D (default 1), or in order the values of --dims.  Float inputs get values in [-1, 1)
 * from a fixed LCG, unless --in gives raw little-endian bytes for input 0.
 * --out writes output 0's raw bytes (for comparing with a reference).
 * For engine overhead: a model of many tiny nodes shows the per-node cost.
 * --opencl runs on the default OpenCL device and also prints the nodes
 * that ran on the device and on the host per run, and the transfers (a
 * host fallback shows as host nodes and as transfers).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph.h"
#include "ocl_backend.h"

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

int main(int argc, char **argv)
{
	const char *path = NULL, *out_path = NULL, *in_path = NULL;
	int runs = 20, threads = 0;
	int64_t dim = 1, dims[32];
	int n_dims = 0, used_dims = 0;
	mfs_graph *m;
	mfs_exec *e;
	mfs_error err;
	double t0, load_ms, first_ms, *times;
	mfs_tensor *in, *out;
	int n_in, n_out;
	uint32_t seed = 12345;
	mfs_exec_stats st;
	mfs_backend *ocl = NULL;
	bool use_ocl = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--dim") && i + 1 < argc)
			dim = atoll(argv[++i]);
		else if (!strcmp(argv[i], "--dims") && i + 1 < argc) {
			char *p = argv[++i];
			while (*p && n_dims < 32) {
				dims[n_dims++] = strtoll(p, &p, 10);
				if (*p == ',')
					p++;
			}
		} else if (!strcmp(argv[i], "--out") && i + 1 < argc)
			out_path = argv[++i];
		else if (!strcmp(argv[i], "--in") && i + 1 < argc)
			in_path = argv[++i];
		else if (!strcmp(argv[i], "--opencl"))
			use_ocl = true;
		else if (!path)
			path = argv[i];
		else {
			fprintf(stderr, "usage: bench_model MODEL [--runs N] [--threads T] [--dim D] [--dims D1,D2..] [--out FILE] [--in FILE] [--opencl]\n");
			return 2;
		}
	}
	if (!path || runs < 1) {
		fprintf(stderr, "usage: bench_model MODEL [--runs N] [--threads T] [--dim D] [--dims D1,D2..] [--out FILE] [--in FILE] [--opencl]\n");
		return 2;
	}
	if (threads > 0)
		mfs_engine_set_threads(threads);
	t0 = now_ms();
	if (mfs_graph_load(path, path, &m, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	load_ms = now_ms() - t0;
	n_in = mfs_graph_n_inputs(m);
	n_out = mfs_graph_n_outputs(m);
	in = calloc((size_t)n_in + 1, sizeof(*in));
	out = calloc((size_t)n_out + 1, sizeof(*out));
	times = calloc((size_t)runs, sizeof(*times));
	for (int i = 0; i < n_in; i++) {
		const mfs_io_desc *d = mfs_graph_input(m, i);
		mfs_shape s = { .rank = d->rank < 0 ? 1 : d->rank };
		for (int k = 0; k < s.rank; k++)
			s.dims[k] = d->rank >= 0 && d->dims[k] >= 0 ? d->dims[k]
				    : used_dims < n_dims ? dims[used_dims++] : dim;
		if (mfs_tensor_alloc(&in[i], d->dtype, &s, &err)) {
			fprintf(stderr, "input '%s': %s\n", d->name, err.msg);
			return 1;
		}
		if (i == 0 && in_path) {
			FILE *f = fopen(in_path, "rb");
			if (!f || fread(in[i].data, 1, in[i].nbytes, f) != in[i].nbytes) {
				fprintf(stderr, "%s: cannot read %zu bytes\n", in_path, in[i].nbytes);
				return 1;
			}
			fclose(f);
		} else if (d->dtype == MFS_DT_FLOAT) {
			float *p = in[i].data;
			for (int64_t k = 0; k < mfs_shape_numel(&s); k++) {
				seed = seed * 1664525u + 1013904223u;
				p[k] = (float)(seed >> 8) / (float)(1 << 23) - 1.0f;
			}
		}
	}
	if (use_ocl && mfs_backend_opencl_new(NULL, &ocl, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	if (mfs_exec_new(m, ocl, &e, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	t0 = now_ms();
	if (mfs_exec_run(e, in, out, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	first_ms = now_ms() - t0;
	if (out_path) {
		FILE *f = fopen(out_path, "wb");
		if (!f || fwrite(out[0].data, 1, out[0].nbytes, f) != out[0].nbytes) {
			fprintf(stderr, "%s: cannot write\n", out_path);
			return 1;
		}
		fclose(f);
	}
	for (int i = 0; i < n_out; i++)
		mfs_tensor_release(&out[i]);
	for (int r = 0; r < runs; r++) {
		t0 = now_ms();
		if (mfs_exec_run(e, in, out, &err)) {
			fprintf(stderr, "%s\n", err.msg);
			return 1;
		}
		times[r] = now_ms() - t0;
		for (int i = 0; i < n_out; i++)
			mfs_tensor_release(&out[i]);
	}
	qsort(times, (size_t)runs, sizeof(*times), cmp_double);
	mfs_exec_get_stats(e, &st);
	printf("%s: %d nodes (%d folded, %d values NHWC), load %.1f ms, first run %.3f ms, "
	       "warm median %.3f ms (min %.3f), %.2f us/node; blocks allocated %llu, "
	       "views %llu, layout conversions %llu, outputs over inputs %llu\n",
	       path, m->n_nodes, m->n_folded, m->n_nhwc, load_ms, first_ms,
	       times[runs / 2], times[0],
	       m->n_nodes ? times[runs / 2] * 1e3 / m->n_nodes : 0.0,
	       (unsigned long long)st.buffer_allocs, (unsigned long long)st.views,
	       (unsigned long long)st.layout_converts,
	       (unsigned long long)st.outputs_over_inputs);
	if (ocl) {
		uint64_t n = st.runs ? st.runs : 1;
		printf("opencl per run: %llu device nodes, %llu host nodes, %llu uploads, "
		       "%llu downloads\n", (unsigned long long)(st.device_nodes / n),
		       (unsigned long long)(st.host_nodes / n), (unsigned long long)(st.uploads / n),
		       (unsigned long long)(st.downloads / n));
	}
	for (int i = 0; i < n_in; i++)
		mfs_tensor_release(&in[i]);
	free(in);
	free(out);
	free(times);
	mfs_exec_free(e);
	mfs_graph_free(m);
	if (ocl)
		mfs_backend_opencl_free(ocl);
	return 0;
}

/* bench_gemm - FP32 GEMM through mfs_sgemm with oneDNN's sgemm and with
 * OpenBLAS, on the transformer encoder's shapes and a few others: the
 * measurement behind mfs_sgemm's default (exec/cpu/ops/dense_util.h).
 *
 *   build/tools/bench_gemm [repeats]      (threads: OMP_NUM_THREADS and
 *                                          OPENBLAS_NUM_THREADS)
 *
 * Prints the best time of each library per shape (best, not median: the
 * development machine is shared and noisy).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ops/dense_util.h"

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	static const int shapes[][3] = {
		{ 128, 768, 256 }, { 128, 256, 256 }, { 128, 1024, 256 }, { 128, 256, 1024 },
		{ 128, 128, 64 }, { 1, 512, 784 }, { 512, 512, 512 },
	};
	int reps = argc > 1 ? atoi(argv[1]) : 100;
	if (reps < 1)
		reps = 1;
	printf("%-16s %22s %22s %7s\n", "M x N x K", "oneDNN", "OpenBLAS", "ratio");
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
		float *a = malloc(sizeof(float) * (size_t)m * k);
		float *b = malloc(sizeof(float) * (size_t)k * n);
		float *c = malloc(sizeof(float) * (size_t)m * n);
		if (!a || !b || !c)
			return 1;
		for (long i = 0; i < (long)m * k; i++)
			a[i] = (float)(i % 7) * 0.1f;
		for (long i = 0; i < (long)k * n; i++)
			b[i] = (float)(i % 5) * 0.1f;
		double best[2] = { 1e9, 1e9 };
		/* one library at a time: alternating calls would let one
		 * pool's spinning threads slow the other's */
		for (int lib = 0; lib < 2; lib++)
			for (int r = 0; r < reps; r++) {
				if (lib)
					setenv("MFS_GEMM", "openblas", 1);
				else
					unsetenv("MFS_GEMM");
				double t = now();
				mfs_sgemm(false, false, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
				t = now() - t;
				if (t < best[lib])
					best[lib] = t;
			}
		double f = 2.0 * m * n * k;
		char label[32];
		snprintf(label, sizeof(label), "%dx%dx%d", m, n, k);
		printf("%-16s %8.3f ms %6.1f GF/s %8.3f ms %6.1f GF/s %6.2fx\n", label,
		       best[0] * 1e3, f / best[0] * 1e-9, best[1] * 1e3, f / best[1] * 1e-9,
		       best[1] / best[0]);
		free(a);
		free(b);
		free(c);
	}
	unsetenv("MFS_GEMM");
	return 0;
}

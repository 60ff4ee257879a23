/* sgemm.c - mfs_sgemm (dense_util.h): every FP32 product of MatMul, Gemm,
 * ConvTranspose and the RNNs goes to oneDNN's dnnl_sgemm or OpenBLAS'
 * cblas_sgemm (on the engine's OpenMP team: blas_team.c), whichever
 * measured faster for that shape.
 *
 * Why per shape: neither library wins everywhere on this machine.  At the
 * encoder's M = 128 products dnnl_sgemm ran 1.5-2.3x OpenBLAS on two
 * threads, but at the MLP's batch-64 shapes it took 1.48 ms against
 * OpenBLAS' 0.64 (docs/PERFORMANCE.md).  So the first product of each
 * (transposes, M, N, K, thread count) runs both libraries, alternately,
 * three times each after a warm-up call, on a scratch copy of C, and keeps
 * the one with the lower minimum in a process-wide table; later products
 * of that shape go straight to it.  Products under 64k multiply-adds are
 * not worth measuring and stay on oneDNN (lower call overhead).
 * MFS_GEMM=openblas or MFS_GEMM=onednn in the environment forces one
 * library (read at each call, so tests can run both in one process).
 */
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dense_util.h"

enum { LIB_UNKNOWN, LIB_ONEDNN, LIB_OPENBLAS };

#define TABLE 512            /* shapes remembered (open addressing) */
#define MEASURE_MIN 65536    /* m * n * k below this: oneDNN, unmeasured */

typedef struct shape_key {
	int64_t m, n, k;
	int flags;                /* ta | tb << 1 | threads << 2 */
} shape_key;

static struct {
	pthread_mutex_t lock;
	shape_key key[TABLE];
	unsigned char lib[TABLE];
	int used;
} table = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int forced(void)
{
	const char *e = getenv("MFS_GEMM");
	if (e && !strcmp(e, "openblas"))
		return LIB_OPENBLAS;
	if (e && !strcmp(e, "onednn"))
		return LIB_ONEDNN;
	return LIB_UNKNOWN;
}

static unsigned slot_of(const shape_key *k)
{
	uint64_t h = (uint64_t)k->m * 0x9E3779B97F4A7C15ull ^ (uint64_t)k->n * 0xC2B2AE3D27D4EB4Full ^
		     (uint64_t)k->k * 0x165667B19E3779F9ull ^ (uint64_t)k->flags;
	return (unsigned)(h ^ (h >> 29)) % TABLE;
}

/* The remembered library for k (LIB_UNKNOWN if none); with store != 0,
 * remember that one instead (silently not when the table is full). */
static int lookup(const shape_key *k, int store)
{
	int lib = LIB_UNKNOWN;
	pthread_mutex_lock(&table.lock);
	for (unsigned i = slot_of(k), n = 0; n < TABLE; i = (i + 1) % TABLE, n++) {
		if (table.lib[i] == LIB_UNKNOWN) {
			if (store && table.used < TABLE * 3 / 4) {
				table.key[i] = *k;
				table.lib[i] = (unsigned char)store;
				table.used++;
			}
			break;
		}
		if (!memcmp(&table.key[i], k, sizeof(*k))) {
			lib = table.lib[i];
			break;
		}
	}
	pthread_mutex_unlock(&table.lock);
	return lib;
}

static bool call(int lib, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
		 const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
		 float *c, int64_t ldc)
{
	if (lib == LIB_ONEDNN)
		return dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb,
				  beta, c, ldc) == dnnl_success;
	mfs_blas_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
	return true;
}

double mfs_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Time both libraries on this product (into scratch, C untouched). */
static int measure(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
		   const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
		   const float *c, int64_t ldc)
{
	size_t len = (size_t)((m - 1) * ldc + n);
	float *scratch = malloc(len * sizeof(float));
	double best[3] = { 1e30, 1e30, 1e30 };

	if (!scratch)
		return LIB_ONEDNN;
	memcpy(scratch, c, len * sizeof(float));   /* beta != 0 reads C */
	for (int round = 0; round < 4; round++)
		for (int lib = LIB_ONEDNN; lib <= LIB_OPENBLAS; lib++) {
			double t0 = mfs_seconds();
			if (!call(lib, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, scratch, ldc)) {
				free(scratch);
				return LIB_OPENBLAS;   /* oneDNN refuses this product */
			}
			double t = mfs_seconds() - t0;
			if (round > 0 && t < best[lib])   /* round 0 warms up (JIT) */
				best[lib] = t;
		}
	free(scratch);
	return best[LIB_OPENBLAS] < best[LIB_ONEDNN] ? LIB_OPENBLAS : LIB_ONEDNN;
}

static int choose(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
		  const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
		  const float *c, int64_t ldc)
{
	int lib = forced();
	if (lib != LIB_UNKNOWN)
		return lib;
	if (m * n * k < MEASURE_MIN || k == 0)
		return LIB_ONEDNN;
	shape_key key = { m, n, k, (int)ta | (int)tb << 1 | omp_get_max_threads() << 2 };
	if ((lib = lookup(&key, 0)) != LIB_UNKNOWN)
		return lib;
	lib = measure(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
	lookup(&key, lib);
	return lib;
}

const char *mfs_sgemm_library(void)
{
	return forced() == LIB_OPENBLAS ? "openblas" : forced() == LIB_ONEDNN ? "onednn"
										  : "measured";
}

void mfs_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
	       const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
	       float *c, int64_t ldc)
{
	if (m <= 0 || n <= 0)
		return;
	int lib = choose(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
	if (!call(lib, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
		call(LIB_OPENBLAS, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

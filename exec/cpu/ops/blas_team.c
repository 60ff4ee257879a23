/* blas_team.c - mfs_blas_sgemm and mfs_blas_dgemm (dense_util.h):
 * OpenBLAS products run on the engine's OpenMP team.
 *
 * Why: the engine keeps OpenBLAS' own pthread pool at one thread
 * (mfs_engine_set_threads).  On the 16-core host its threads, spinning
 * after each call, took the cores that the next node's OpenMP threads
 * needed: ResNet-50 at batch 1 ran 46-64 ms with them and 17-19 ms
 * without (docs/PERFORMANCE.md, "16 cores, threads").  So a product is
 * split here into blocks of rows of C (or of columns, when C is wider than
 * tall), one single-threaded cblas call per OpenMP thread.  Inside a
 * parallel region the product runs whole on the calling thread.
 */
#include <omp.h>

#include <cblas.h>

#include "dense_util.h"

/* Splitting: at least this many multiply-adds per thread (about 10 us on
 * one core: less does not pay for waking a sleeping thread), blocks of
 * whole register tiles. */
#define SPLIT_MIN_WORK (1 << 18)
#define SPLIT_ROWS 16
#define SPLIT_COLS 64

int mfs_sgemm_split(int64_t m, int64_t n, int64_t k, int threads, int64_t *chunk, bool *by_rows)
{
	int64_t work = m * n * k, parts = work / SPLIT_MIN_WORK;
	if (parts > threads)
		parts = threads;
	*by_rows = m >= n;
	int64_t len = *by_rows ? m : n, unit = *by_rows ? SPLIT_ROWS : SPLIT_COLS;
	if (parts < 2 || len < 2 * unit) {
		*chunk = len;
		return 1;
	}
	*chunk = ((len + parts - 1) / parts + unit - 1) / unit * unit;
	return (int)((len + *chunk - 1) / *chunk);
}

/* One row-major product, float or double. */
typedef struct product {
	bool ta, tb, dbl;
	int64_t m, n, k, lda, ldb, ldc;
	double alpha, beta;
	const void *a, *b;
	void *c;
} product;

/* Columns [c0, c0 + cols) of a one-row C (a vector times a matrix, as a
 * classifier's last Gemm at batch 1) through OpenBLAS' gemv, which reads
 * op(B) as a stream: its gemm kernels pack B first, for a single row
 * (ResNet-50's 1x2048x1000 Gemm: 0.83 ms against 0.30 on oneDNN on two
 * threads, docs/PERFORMANCE.md, "A vector times a matrix").  With a zero
 * beta, OpenBLAS' gemv sets C without reading it (C may hold anything:
 * test_blas_one_row gives it NaNs). */
static void row_block(const product *p, int64_t c0, int64_t cols)
{
	size_t es = p->dbl ? sizeof(double) : sizeof(float);
	/* A's one row: contiguous, or a column of A^T */
	int inca = p->ta ? (int)p->lda : 1;
	const char *b = (const char *)p->b + es * (size_t)(p->tb ? c0 * p->ldb : c0);
	char *c = (char *)p->c + es * (size_t)c0;
	/* op(B) = B^T when tb: C's columns are B's rows */
	enum CBLAS_TRANSPOSE t = p->tb ? CblasNoTrans : CblasTrans;
	int gm = (int)(p->tb ? cols : p->k), gn = (int)(p->tb ? p->k : cols);

	if (p->dbl)
		cblas_dgemv(CblasRowMajor, t, gm, gn, p->alpha, (const double *)b, (int)p->ldb,
			    (const double *)p->a, inca, p->beta, (double *)c, 1);
	else
		cblas_sgemv(CblasRowMajor, t, gm, gn, (float)p->alpha, (const float *)b, (int)p->ldb,
			    (const float *)p->a, inca, (float)p->beta, (float *)c, 1);
}

/* Rows [r0, r0 + rows) and columns [c0, c0 + cols) of C, on this thread. */
static void block(const product *p, int64_t r0, int64_t rows, int64_t c0, int64_t cols)
{
	size_t es = p->dbl ? sizeof(double) : sizeof(float);
	if (p->m == 1 && p->k > 0) {
		row_block(p, c0, cols);
		return;
	}
	const char *a = (const char *)p->a + es * (size_t)(p->ta ? r0 : r0 * p->lda);
	const char *b = (const char *)p->b + es * (size_t)(p->tb ? c0 * p->ldb : c0);
	char *c = (char *)p->c + es * (size_t)(r0 * p->ldc + c0);
	enum CBLAS_TRANSPOSE ta = p->ta ? CblasTrans : CblasNoTrans;
	enum CBLAS_TRANSPOSE tb = p->tb ? CblasTrans : CblasNoTrans;

	if (p->dbl)
		cblas_dgemm(CblasRowMajor, ta, tb, (int)rows, (int)cols, (int)p->k, p->alpha,
			    (const double *)a, (int)p->lda, (const double *)b, (int)p->ldb,
			    p->beta, (double *)c, (int)p->ldc);
	else
		cblas_sgemm(CblasRowMajor, ta, tb, (int)rows, (int)cols, (int)p->k,
			    (float)p->alpha, (const float *)a, (int)p->lda, (const float *)b,
			    (int)p->ldb, (float)p->beta, (float *)c, (int)p->ldc);
}

static void on_team(const product *p)
{
	int64_t chunk = 0;
	bool by_rows = true;
	int parts = 1;

	if (p->m <= 0 || p->n <= 0)
		return;
	if (openblas_get_num_threads() == 1 && !omp_in_parallel())
		parts = mfs_sgemm_split(p->m, p->n, p->k, omp_get_max_threads(), &chunk, &by_rows);
	if (parts <= 1) {
		block(p, 0, p->m, 0, p->n);
		return;
	}
	/* The whole team, parts of it idle: a smaller team would make
	 * libgomp end the surplus threads and create them again at the next
	 * node (node_threads.h). */
	#pragma omp parallel for schedule(static, 1)
	for (int t = 0; t < parts; t++) {
		int64_t lo = (int64_t)t * chunk, len = (by_rows ? p->m : p->n) - lo;
		if (len > chunk)
			len = chunk;
		if (by_rows)
			block(p, lo, len, 0, p->n);
		else
			block(p, 0, p->m, lo, len);
	}
}

void mfs_blas_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
		    const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
		    float *c, int64_t ldc)
{
	product p = { ta, tb, false, m, n, k, lda, ldb, ldc, alpha, beta, a, b, c };
	on_team(&p);
}

void mfs_blas_dgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
		    const double *a, int64_t lda, const double *b, int64_t ldb, double beta,
		    double *c, int64_t ldc)
{
	product p = { ta, tb, true, m, n, k, lda, ldb, ldc, alpha, beta, a, b, c };
	on_team(&p);
}

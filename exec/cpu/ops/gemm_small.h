/* gemm_small.h - C = A W (+ bias) for a few rows of A against a constant
 * W packed once: a decoder's step, one row per stream (exec/cpu/ops/
 * gemm_small.c says why and how). */
#ifndef MFS_GEMM_SMALL_H
#define MFS_GEMM_SMALL_H

#include <stdbool.h>
#include <stdint.h>

/* The rows up to which Dense takes this path (dense.c). */
#define MFS_SMALLM_ROWS 8

/* W [K, N] packed: ceil(N / 32) panels of [K][32] floats, columns past N
 * zero.  Owned by whoever called mfs_smallm_pack_init. */
typedef struct mfs_smallm_pack {
	float *p;
	int64_t k, n;
} mfs_smallm_pack;

/* Whether this CPU runs the kernel (AVX-512F); MFS_DENSE_SMALL=0 in the
 * environment says no (A/B against the other paths). */
bool mfs_smallm_usable(void);

/* Pack w ([K, N], or [N, K] with tb) into pk; 0, or -ENOMEM (pk empty). */
int mfs_smallm_pack_init(mfs_smallm_pack *pk, const float *w, int64_t k, int64_t n, bool tb);

void mfs_smallm_pack_free(mfs_smallm_pack *pk);

/* C[m, N] = A[m, K] W (+ bias[N], NULL: none) for any m (fastest at
 * m <= 8: each panel of W is read once per 8 rows), A's rows lda apart,
 * C's ldc apart; on the OpenMP team of the calling thread, split by
 * panels.  Only where mfs_smallm_usable(). */
void mfs_smallm_gemm(const mfs_smallm_pack *pk, int64_t m, const float *a, int64_t lda,
		     const float *bias, float *c, int64_t ldc);

#endif

/* gemm_small.c - the product of a few rows of A with a constant W, each
 * weight read once for up to 8 rows (gemm_small.h).
 *
 * Why: a decoder's step multiplies one row per stream by every weight of
 * the model.  At 8 streams, GPT-2 small's step (bench/gpt2_kv.py) spent
 * ~100 ms in Dense and ~26 ms in the LM head on this 2-core VM, about 14
 * GFLOP/s: neither oneDNN's matmul primitive nor sgemm is built for 8
 * rows, and a step should cost little more than one read of the weights
 * (the one-row step's time).  Here W is packed once into panels of 32
 * columns, [K][32] each, read in order; for each panel 8 rows keep their
 * 8 x 32 sums in 16 AVX-512 registers over the whole of K, each weight
 * vector loaded once and multiplied by the 8 rows' broadcast values.  More
 * rows go 8 at a time over the same panel (then in cache).  The sums
 * start at the bias and add k in order: a different rounding than sgemm's
 * blocked sums, within the tests' tolerances.
 *
 * Threads: the panels are split over the caller's OpenMP team.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_small.h"

#define NB 32   /* columns per panel: two AVX-512 vectors */
#define MR 8    /* rows per pass over a panel */
#define PFD 32  /* prefetch distance in rows of a panel (4 KB; 16 and 64
		   measured no better) */

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SMALLM_X86 1
#endif

bool mfs_smallm_usable(void)
{
	const char *e = getenv("MFS_DENSE_SMALL");
	if (e && !strcmp(e, "0"))
		return false;
#ifdef SMALLM_X86
	return __builtin_cpu_supports("avx512f");
#else
	return false;
#endif
}

int mfs_smallm_pack_init(mfs_smallm_pack *pk, const float *w, int64_t k, int64_t n, bool tb)
{
	int64_t panels = (n + NB - 1) / NB;
	size_t bytes = sizeof(float) * (size_t)(panels * k * NB);

	memset(pk, 0, sizeof(*pk));
	if (bytes == 0)
		bytes = 64;
	bytes = (bytes + 63) & ~(size_t)63;
	if (!(pk->p = aligned_alloc(64, bytes)))
		return -ENOMEM;
	pk->k = k;
	pk->n = n;
	#pragma omp parallel for schedule(static)
	for (int64_t j = 0; j < panels; j++) {
		float *dst = pk->p + j * k * NB;
		int64_t n0 = j * NB, cols = n - n0 < NB ? n - n0 : NB;
		for (int64_t q = 0; q < k; q++) {
			for (int64_t c = 0; c < cols; c++)
				dst[q * NB + c] = tb ? w[(n0 + c) * k + q] : w[q * n + n0 + c];
			for (int64_t c = cols; c < NB; c++)
				dst[q * NB + c] = 0;
		}
	}
	return 0;
}

void mfs_smallm_pack_free(mfs_smallm_pack *pk)
{
	free(pk->p);
	memset(pk, 0, sizeof(*pk));
}

#ifdef SMALLM_X86
/* rows x 32 of C from one panel over all of K.  rows is a constant after
 * inlining (tile() below) and the sums are named variables, not an array,
 * so that they stay in registers (an array of them went to the stack). */
#define SM_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
__attribute__((target("avx512f"), always_inline)) static inline void
tile_rows(const int rows, int64_t k, const float *a, int64_t lda, const float *p,
	  const float *bias, float *c, int64_t ldc, __mmask16 m0, __mmask16 m1)
{
	__m512 b0 = bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
	__m512 b1 = bias ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_setzero_ps();
#define SM_INIT(r) __m512 s##r##a = b0, s##r##b = b1;
	SM_ROWS(SM_INIT)
#undef SM_INIT

	for (int64_t q = 0; q < k; q++) {
		__m512 w0 = _mm512_load_ps(p + q * NB), w1 = _mm512_load_ps(p + q * NB + 16);
		_mm_prefetch((const char *)(p + q * NB + PFD * NB), _MM_HINT_T0);
		_mm_prefetch((const char *)(p + q * NB + PFD * NB + 16), _MM_HINT_T0);
#define SM_FMA(r)                                                         \
		if (rows > r) {                                           \
			__m512 x = _mm512_set1_ps(a[r * lda + q]);        \
			s##r##a = _mm512_fmadd_ps(x, w0, s##r##a);        \
			s##r##b = _mm512_fmadd_ps(x, w1, s##r##b);        \
		}
		SM_ROWS(SM_FMA)
#undef SM_FMA
	}
#define SM_STORE(r)                                                       \
	if (rows > r) {                                                   \
		_mm512_mask_storeu_ps(c + r * ldc, m0, s##r##a);          \
		_mm512_mask_storeu_ps(c + r * ldc + 16, m1, s##r##b);     \
	}
	SM_ROWS(SM_STORE)
#undef SM_STORE
}

/* Up to MR rows of C's columns n0.. from panel p. */
__attribute__((target("avx512f"))) static void
tile(int rows, int64_t k, const float *a, int64_t lda, const float *p, const float *bias,
     float *c, int64_t ldc, int cols)
{
	__mmask16 m0 = cols >= 16 ? 0xFFFF : (__mmask16)((1u << cols) - 1);
	__mmask16 m1 = cols >= 32 ? 0xFFFF : cols <= 16 ? 0 : (__mmask16)((1u << (cols - 16)) - 1);

	switch (rows) {
#define ROWS(r) case r: tile_rows(r, k, a, lda, p, bias, c, ldc, m0, m1); break;
	ROWS(1) ROWS(2) ROWS(3) ROWS(4) ROWS(5) ROWS(6) ROWS(7) ROWS(8)
#undef ROWS
	}
}
#endif

void mfs_smallm_gemm(const mfs_smallm_pack *pk, int64_t m, const float *a, int64_t lda,
		     const float *bias, float *c, int64_t ldc)
{
#ifdef SMALLM_X86
	int64_t panels = (pk->n + NB - 1) / NB, k = pk->k;

	/* a team for more than ~64k multiply-adds (below, the fork costs
	 * more than it saves) */
	#pragma omp parallel for schedule(static) if (m * k * pk->n > 65536)
	for (int64_t j = 0; j < panels; j++) {
		int64_t n0 = j * NB;
		int cols = (int)(pk->n - n0 < NB ? pk->n - n0 : NB);
		for (int64_t r0 = 0; r0 < m; r0 += MR)
			tile((int)(m - r0 < MR ? m - r0 : MR), k, a + r0 * lda, lda,
			     pk->p + j * k * NB, bias ? bias + n0 : NULL, c + r0 * ldc + n0, ldc,
			     cols);
	}
#else
	(void)pk; (void)m; (void)a; (void)lda; (void)bias; (void)c; (void)ldc;
#endif
}

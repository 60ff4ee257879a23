/* layout.c - NCHW <-> NHWC storage conversion of rank-4 tensors. */
#include <stdbool.h>
#include <string.h>

#include "graph.h"

/* One element of size es from s to d. */
static inline void copy_elem(char *d, const char *s, size_t es)
{
	switch (es) {
	case 4: memcpy(d, s, 4); break;
	case 2: memcpy(d, s, 2); break;
	case 8: memcpy(d, s, 8); break;
	default: memcpy(d, s, es); break;
	}
}

/* Plain <-> BLOCK16 of 4-byte elements (tensor.h): element (n, c, p) is
 * at (n*C + c)*HW + p plain, and at ((n*CB + c/16)*HW + p)*16 + c%16
 * blocked, CB = ceil(C/16); the blocked channels past C are zero. */
static void block16_convert(uint32_t *d, const uint32_t *s, int64_t N, int64_t C,
			    int64_t HW, bool to_blocked)
{
	const int64_t CB = (C + 15) / 16;
	#pragma omp parallel for collapse(2) if (N * C * HW > 65536)
	for (int64_t n = 0; n < N; n++)
		for (int64_t cb = 0; cb < CB; cb++) {
			uint32_t *bk = (to_blocked ? d : (uint32_t *)s) + (n * CB + cb) * HW * 16;
			uint32_t *pl = (to_blocked ? (uint32_t *)s : d) + (n * C + cb * 16) * HW;
			int64_t cn = C - cb * 16 < 16 ? C - cb * 16 : 16;
			for (int64_t p = 0; p < HW; p++)
				for (int64_t c = 0; c < 16; c++) {
					if (to_blocked)
						bk[p * 16 + c] = c < cn ? pl[c * HW + p] : 0;
					else if (c < cn)
						pl[c * HW + p] = bk[p * 16 + c];
				}
		}
}

void mfs_layout_convert(mfs_tensor *dst, const mfs_tensor *src, mfs_layout to)
{
	const int64_t N = src->shape.dims[0], C = src->shape.dims[1];
	const int64_t HW = src->shape.dims[2] * src->shape.dims[3];
	const size_t es = mfs_dtype_size(src->dtype);

	dst->layout = to;
	if (src->nbytes == 0 || src->layout == to)
		goto same;
	if (src->layout == MFS_LAYOUT_BLOCK16 || to == MFS_LAYOUT_BLOCK16) {
		if (HW == 1 && C % 16 == 0)
			goto same;   /* N, C/16, 1, 1, 16 is N, C */
		block16_convert(dst->data, src->data, N, C, HW, to == MFS_LAYOUT_BLOCK16);
		return;
	}
	/* With one channel or one pixel both orders are the same bytes. */
	if (C == 1 || HW == 1)
		goto same;
	for (int64_t n = 0; n < N; n++) {
		const char *s = (const char *)src->data + (size_t)(n * C * HW) * es;
		char *d = (char *)dst->data + (size_t)(n * C * HW) * es;
		if (to == MFS_LAYOUT_NHWC) {
			if (es == 4) {
				const uint32_t *sf = (const uint32_t *)s;
				uint32_t *df = (uint32_t *)d;
				#pragma omp parallel for if (C * HW > 65536)
				for (int64_t p = 0; p < HW; p++)
					for (int64_t c = 0; c < C; c++)
						df[p * C + c] = sf[c * HW + p];
			} else {
				for (int64_t c = 0; c < C; c++)
					for (int64_t p = 0; p < HW; p++)
						copy_elem(d + (size_t)(p * C + c) * es,
							  s + (size_t)(c * HW + p) * es, es);
			}
		} else {
			if (es == 4) {
				const uint32_t *sf = (const uint32_t *)s;
				uint32_t *df = (uint32_t *)d;
				#pragma omp parallel for if (C * HW > 65536)
				for (int64_t c = 0; c < C; c++)
					for (int64_t p = 0; p < HW; p++)
						df[c * HW + p] = sf[p * C + c];
			} else {
				for (int64_t c = 0; c < C; c++)
					for (int64_t p = 0; p < HW; p++)
						copy_elem(d + (size_t)(c * HW + p) * es,
							  s + (size_t)(p * C + c) * es, es);
			}
		}
	}
	return;
same:
	if (dst->data != src->data && src->nbytes)
		memcpy(dst->data, src->data, src->nbytes);
}

/* ocl_blast.h - the CLBlast products the dense operators share
 * (ocl_blast.c): row-major, on the context's queue, profiled as CLBlast.
 * Internal to exec/opencl/.
 */
#ifndef MFS_OCL_BLAST_H
#define MFS_OCL_BLAST_H

#include "ocl_internal.h"   /* first: sets CL_TARGET_OPENCL_VERSION */
#include <clblast_c.h>

/* Fail the node with a CLBlast status in words ("CLBlast Sgemm failed:
 * out of resources (-5)"); ENOMEM for the out-of-memory ones. */
int ocl_blast_fail(ocl_run *r, CLBlastStatusCode s, const char *what);

/* Around every CLBlast call made outside this file: CLBlast's per-call
 * routine set-up is not thread-safe (ocl_blast.c). */
void ocl_blast_lock(void);
void ocl_blast_unlock(void);

/* Row-major C[m,n] = alpha op(A) op(B) + beta C, offsets in floats. */
int ocl_sgemm(ocl_run *r, bool ta, bool tb, size_t m, size_t n, size_t k,
	      float alpha, cl_mem a, size_t aoff, size_t lda, cl_mem b, size_t boff,
	      size_t ldb, float beta, cl_mem c, size_t coff, size_t ldc);

/* The same (no transposes, beta 0) over batch items of regular strides
 * (sa, sb, sc floats apart): one CLBlast call. */
int ocl_sgemm_batched(ocl_run *r, size_t m, size_t n, size_t k, float alpha,
		      cl_mem a, size_t lda, size_t sa, cl_mem b, size_t ldb, size_t sb,
		      cl_mem c, size_t ldc, size_t sc, size_t batch);

#endif

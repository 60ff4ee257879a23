/* dense_util.h - what the compute-heavy operators (Conv, ConvTranspose, the
 * pools, the normalisations) share on the CPU: the process-wide oneDNN
 * engine, its primitives and packed weights, NCHW<->NHWC copies, the
 * GEMM choice.  The shape rules shared with the OpenCL engine (window and
 * matmul geometry) are exec/op/op_geometry.h, included here.
 */
#ifndef MFS_DENSE_UTIL_H
#define MFS_DENSE_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include <dnnl.h>

#include "op.h"

#include "op_geometry.h"


/* The oneDNN CPU engine, created once per process; NULL with err filled
 * when oneDNN cannot create it. */
dnnl_engine_t mfs_dnnl_engine(mfs_error *err);

/* A oneDNN primitive with a user-managed scratchpad.  oneDNN's default
 * (library) scratchpad is shared by all primitives unless the library was
 * built with DNNL_ENABLE_CONCURRENT_EXEC, and then a primitive must run on
 * the thread that created it; the server runs a model on whichever worker
 * thread is free, several models at once.  A user scratchpad taken from a
 * per-thread buffer at each execution has neither limit. */
typedef struct mfs_dnnl_prim {
	dnnl_primitive_t prim;
	dnnl_memory_t scratch;       /* NULL when the primitive needs none */
	size_t scratch_size;
} mfs_dnnl_prim;

/* The threads a primitive built now is made for: the calling thread's
 * OpenMP count (node_threads.h sets it per node).  oneDNN fixes a
 * primitive's work split and scratchpad at creation, so a state built for
 * one count is rebuilt when a node runs on another (engine.c runs on one
 * thread while the cores are busy, cpu_contention.h): a primitive built
 * for two threads kept both busy, and spinning, on a run given one. */
int mfs_dnnl_threads(void);

/* Primitives created so far in this process (tests: whether a state was
 * rebuilt). */
uint64_t mfs_dnnl_prims_created(void);
/* oneDNN's name for the implementation of the primitive, other than a
 * reorder, this thread created last ("" before any; tests: which kernel
 * a choice took). */
const char *mfs_dnnl_last_impl(void);

/* A new attribute object with the user scratchpad mode (caller destroys). */
dnnl_status_t mfs_dnnl_attr_create(dnnl_primitive_attr_t *attr);
/* Create p from pd (which must have been made with such an attribute). */
dnnl_status_t mfs_dnnl_prim_create(mfs_dnnl_prim *p, const_dnnl_primitive_desc_t pd,
				   dnnl_engine_t eng);
/* A reorder between two memory descriptors, as an mfs_dnnl_prim. */
dnnl_status_t mfs_dnnl_reorder_create(mfs_dnnl_prim *p, const dnnl_memory_desc_t *from,
				      const dnnl_memory_desc_t *to, dnnl_engine_t eng);
/* Execute (args: at most 7) with the calling thread's scratch buffer.  On
 * the CPU engine the call returns when the work is done. */
dnnl_status_t mfs_dnnl_prim_exec(mfs_dnnl_prim *p, dnnl_stream_t stream, int nargs,
				 const dnnl_exec_arg_t *args);
/* Frees what p holds and zeroes it; safe on a zeroed p. */
void mfs_dnnl_prim_destroy(mfs_dnnl_prim *p);

/* A primitive's weights: in the layout it chose, reordered from the
 * model's plain layout at most once while they are a model constant
 * (Conv, Dense). */
typedef struct mfs_dnnl_weights {
	dnnl_memory_t mem;           /* what the primitive reads */
	dnnl_memory_t plain;         /* the model's layout; NULL when the same */
	mfs_dnnl_prim reorder;       /* plain -> mem; none when the same */
	void *buf;                   /* mem's storage when reordered */
	const void *src;             /* the data buf holds a copy of */
	bool is_const;               /* the data never changes (ctx->const_in) */
} mfs_dnnl_weights;

/* Set w up for a primitive wanting layout want of weights stored as plain
 * (is_const kept).  When w already holds that layout (a primitive rebuilt
 * for another thread count) it is kept as it is, packed constants
 * included; else it is freed and made anew.  On failure w holds nothing. */
dnnl_status_t mfs_dnnl_weights_init(mfs_dnnl_weights *w, const dnnl_memory_desc_t *want,
				    const dnnl_memory_desc_t *plain, dnnl_engine_t eng);
/* Whether w holds weights packed as want from plain (a packing to keep). */
bool mfs_dnnl_weights_hold(const mfs_dnnl_weights *w, const dnnl_memory_desc_t *want,
			   const dnnl_memory_desc_t *plain);
/* Point w at data, reordering it unless a constant already packed; 0 or
 * -EIO naming the node. */
int mfs_dnnl_weights_set(mfs_op_ctx *ctx, mfs_dnnl_weights *w, const void *data,
			 dnnl_stream_t stream);
/* Weight reorders run so far in this process (tests: whether a packing
 * was reused). */
uint64_t mfs_dnnl_weights_packed(void);
/* Free what w holds (is_const kept). */
void mfs_dnnl_weights_free(mfs_dnnl_weights *w);

/* Human-readable oneDNN status for messages. */
const char *mfs_dnnl_status_str(dnnl_status_t s);

/* Copy between plain N,C,S and N,S,C storage (S = product of spatial
 * dims), float elements.  OpenMP over N*S. */
void mfs_nchw_to_nhwc(const float *src, float *dst, int64_t n, int64_t c, int64_t s);
void mfs_nhwc_to_nchw(const float *src, float *dst, int64_t n, int64_t c, int64_t s);

/* Checks an input's layout against what the operator can read: PLAIN
 * always, NHWC only for rank 4. */
int mfs_check_layout(mfs_op_ctx *ctx, const mfs_tensor *t, const char *what);

/* FP32 product C = alpha * op(A) * op(B) + beta * C, row-major, through
 * oneDNN's dnnl_sgemm or OpenBLAS' cblas_sgemm: the one measured faster
 * for this shape and thread count at its first product (sgemm.c says how
 * and why), or the one MFS_GEMM=onednn|openblas names.  OpenBLAS when
 * oneDNN reports an error.  Extents must be >= 0; lda/ldb/ldc >= 1. */
void mfs_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
	       const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
	       float *c, int64_t ldc);
/* OpenBLAS' cblas_sgemm / cblas_dgemm (row-major, same arguments as
 * mfs_sgemm) on the engine's OpenMP team: when OpenBLAS runs on one thread
 * (as the engine keeps it) and the caller is outside a parallel region,
 * the product is split into blocks of C, one single-threaded call per
 * thread (blas_team.c says why). */
void mfs_blas_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
		    const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
		    float *c, int64_t ldc);
void mfs_blas_dgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
		    const double *a, int64_t lda, const double *b, int64_t ldb, double beta,
		    double *c, int64_t ldc);
/* How they split a product over `threads` OpenMP threads: blocks of
 * *chunk rows of C (*by_rows) or columns, at least 2^18 multiply-adds
 * each; returns the number of blocks (1: not split). */
int mfs_sgemm_split(int64_t m, int64_t n, int64_t k, int threads, int64_t *chunk, bool *by_rows);
/* A monotonic clock in seconds, for choosing between kernels by timing
 * them (sgemm.c, dense.c). */
double mfs_seconds(void);

/* Which library mfs_sgemm uses: "onednn" or "openblas" when MFS_GEMM
 * forces one, else "measured". */
const char *mfs_sgemm_library(void);


/* Integer product with zero points (MatMulInteger, ConvInteger, the
 * QLinear ops): C[i,j] = sum_p (A[i,p] - za[i*zas]) * (B[p,j] - zb[j*zbs]),
 * A and B int8 (a_signed/b_signed) or uint8, row-major with leading
 * dimensions lda/ldb; za/zb with stride 0 are scalars. */
void mfs_qgemm(int64_t m, int64_t n, int64_t k, const void *a, bool a_signed, int64_t lda,
	       const int32_t *za, int64_t zas, const void *b, bool b_signed, int64_t ldb,
	       const int32_t *zb, int64_t zbs, int32_t *c, int64_t ldc);

#endif

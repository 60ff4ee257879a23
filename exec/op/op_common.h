/* op_common.h - helpers for reading a node's inputs and attributes and for
 * shapes, shared by the operators of both engines (exec/cpu/ops/ and
 * exec/opencl/; not part of the operator interface, op.h).
 *
 * Conventions: every helper that can fail returns 0 or a negative errno and
 * reports through mfs_op_fail() so the message names the node.  Helpers that
 * read a shape-determining input return MFS_SHAPE_DEPENDS_ON_DATA when its
 * data is not known yet (load-time inference), which callers pass up.
 */
#ifndef MFS_OP_COMMON_H
#define MFS_OP_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "op.h"

/* Largest element count any operator here will produce: keeps every byte
 * count and every int64 offset far from overflow. */
#define OC_MAX_NUMEL (INT64_C(1) << 40)

/* Input i, or NULL when omitted or beyond n_in. */
static inline const mfs_tensor *oc_in(const mfs_op_ctx *ctx, int i)
{
	return i < ctx->n_in ? ctx->in[i] : NULL;
}

/* Output i, or NULL when not requested. */
static inline mfs_tensor *oc_out(const mfs_op_ctx *ctx, int i)
{
	return i < ctx->n_out ? ctx->out[i] : NULL;
}

/* Set dtype and shape of output i when it is requested. */
void oc_set_out(mfs_op_ctx *ctx, int i, mfs_dtype dt, const mfs_shape *s);

/* Fail unless input i is present. */
int oc_need(mfs_op_ctx *ctx, int i);

/* Fail unless inputs 0..n_in-1 are present and, when out0, output 0 is
 * requested: a model may leave any name empty.  Every infer starts with
 * OC_CHECK_IO, so run (called only after infer succeeded) may rely on it. */
int oc_check_io(mfs_op_ctx *ctx, int n_in, bool out0);
#define OC_CHECK_IO(ctx, n_in, out0)                                         \
	do {                                                                  \
		int rc_io_ = oc_check_io(ctx, n_in, out0);                    \
		if (rc_io_)                                                   \
			return rc_io_;                                        \
	} while (0)

/* Bytes per element of t, failing with ENOTSUP for strings and unknown
 * dtypes; *es receives the size. */
int oc_elem_size(mfs_op_ctx *ctx, const mfs_tensor *t, size_t *es);

/* Check every dim is >= 0 and the element count stays <= OC_MAX_NUMEL. */
int oc_check_shape(mfs_op_ctx *ctx, const mfs_shape *s);

/* Dtype classes. */
bool oc_is_float(mfs_dtype dt);   /* FLOAT, DOUBLE, FLOAT16, BFLOAT16 */
bool oc_is_int(mfs_dtype dt);     /* signed/unsigned integers (not BOOL) */
/* Fail with ENOTSUP unless t's dtype is a float type (or, when
 * allow_int, also an integer type). */
int oc_need_numeric(mfs_op_ctx *ctx, const mfs_tensor *t, bool allow_int);

/* Read a scalar or 1-D integer tensor (input idx) into vals[0..*n).  At
 * most max values; more is an error.  Returns MFS_SHAPE_DEPENDS_ON_DATA
 * when the data is not known. */
int oc_read_ints(mfs_op_ctx *ctx, int idx, int64_t *vals, int max, int *n);

/* Copy INTS attribute `name` into vals (at most max); *n is the count, or
 * -1 when the attribute is absent (vals untouched). */
int oc_attr_ints(mfs_op_ctx *ctx, const char *name, int64_t *vals, int max, int *n);

/* The `axes` attribute (default: every axis, in order) normalised against
 * rank into ax[]; *n receives the count. */
int oc_attr_axes(mfs_op_ctx *ctx, int rank, int *ax, int *n);

/* Cubic convolution weights (Keys, coefficient A) of the four taps around
 * a point at fraction t in (0, 1] past the second tap (Resize, GridSample). */
void oc_cubic_coeffs(double t, double A, double *w);

/* Normalise n axes against rank into a bit mask; duplicates and out-of-range
 * axes fail.  out (may be NULL) receives the normalised axes in order. */
int oc_axes_mask(mfs_op_ctx *ctx, const int64_t *axes, int n, int rank,
		 unsigned *mask, int *out);

/* Normalise one axis (negative counts from the end). */
int oc_axis(mfs_op_ctx *ctx, int64_t axis, int rank, int *out);

/* Element i of a numeric buffer as double, and the reverse (saturating
 * casts are the caller's business: values stored into integers are
 * rounded toward zero like a C cast, after clamping to the type's range). */
double oc_load(mfs_dtype dt, const void *p, int64_t i);
void oc_store(mfs_dtype dt, void *p, int64_t i, double v);

/* Row-major element strides of a shape (strides[rank-1] == 1). */
void oc_strides(const mfs_shape *s, int64_t *strides);

/* Gather a strided view of src into dense dst (C order over dims):
 * dst[i0..ik] = src[off + sum(i_j * st[j])], elements of es bytes.
 * rank may be up to OC_MAX_VIEW_RANK; strides may be 0 or negative.
 * Blocks 2-D tiles when the innermost output dim is strided (transposes),
 * and runs on several threads when the copy is large. */
#define OC_MAX_VIEW_RANK (2 * MFS_MAX_RANK)
void oc_copy_view(void *dst, const void *src, size_t es, int rank,
		  const int64_t *dims, const int64_t *st, int64_t off);

/* Copy input 0 to output 0 unless they already share storage (for view
 * operators: Reshape, Squeeze, Flatten...). */
int oc_copy_through(mfs_op_ctx *ctx);

/* Shape of `s` split at axis into outer = prod(dims[0..axis)), n =
 * dims[axis] (1 when axis == rank), inner = prod(dims(axis..rank)). */
void oc_split_at(const mfs_shape *s, int axis, int64_t *outer, int64_t *n,
		 int64_t *inner);


/* ---- row views for reductions and normalisations ----------------------
 * The axes in `mask` (bit i = dim i) are "row" axes: the data is seen as
 * nrows x len with the row axes innermost, in their original order. */

/* Rows of t: when the row axes are already the trailing dims, *rows is
 * t->data and *tmp NULL; otherwise *rows == *tmp, a malloc'd gathered copy
 * the caller frees.  -ENOMEM on allocation failure. */
int oc_rows_gather(mfs_op_ctx *ctx, const mfs_tensor *t, unsigned mask,
		   const void **rows, void **tmp, int64_t *nrows, int64_t *len);

/* Transform every row in place through fn, reading `in`, writing `out`
 * (same dtype and shape; numeric types, computed in double).  fn gets the row
 * index r (row-major over the non-row axes). Rows run in parallel. */
typedef void (*oc_row_fn)(double *row, int64_t len, int64_t r, void *user);
int oc_row_map(mfs_op_ctx *ctx, const mfs_tensor *in, mfs_tensor *out,
	       unsigned mask, oc_row_fn fn, void *user);

/* Mask of the trailing axes from `axis` to the end. */
static inline unsigned oc_mask_from(int axis, int rank)
{
	return ((1u << rank) - 1) & ~((1u << axis) - 1);
}

/* Scatter reductions (ScatterElements, ScatterND): the 'reduction'
 * attribute, and dst[d] = dst[d] (op) src[s] for one element. */
enum { OC_RED_NONE, OC_RED_ADD, OC_RED_MUL, OC_RED_MAX, OC_RED_MIN };
int oc_scatter_reduction(mfs_op_ctx *ctx, int *red);
void oc_reduce_into(int red, mfs_dtype dt, void *dst, int64_t d,
		    const void *src, int64_t s);

#endif

/* tensor.h - typed n-dimensional arrays shared by the codecs, the configs
 * and the engine.
 *
 * Data types use ONNX's TensorProto.DataType numbers so that ONNX files,
 * test data and the engine need no translation.  A tensor's data is dense,
 * row-major (C order), little-endian (the host order on every target here).
 */
#ifndef MFS_TENSOR_H
#define MFS_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef enum mfs_dtype {
	MFS_DT_UNDEFINED = 0,
	MFS_DT_FLOAT = 1,
	MFS_DT_UINT8 = 2,
	MFS_DT_INT8 = 3,
	MFS_DT_UINT16 = 4,
	MFS_DT_INT16 = 5,
	MFS_DT_INT32 = 6,
	MFS_DT_INT64 = 7,
	MFS_DT_STRING = 8,     /* elements are mfs_string (below) */
	MFS_DT_BOOL = 9,       /* one byte, 0 or 1 */
	MFS_DT_FLOAT16 = 10,
	MFS_DT_DOUBLE = 11,
	MFS_DT_UINT32 = 12,
	MFS_DT_UINT64 = 13,
	MFS_DT_BFLOAT16 = 16,
} mfs_dtype;

/* Bytes per element (sizeof(mfs_string) for STRING); 0 for UNDEFINED and
 * unknown values.  Code that reads or writes a tensor's bytes as numbers
 * (file formats, the wire to a worker) must treat STRING apart. */
size_t mfs_dtype_size(mfs_dtype dt);
/* KServe v2 name ("FP32", "INT64", "BOOL"...); NULL if none. */
const char *mfs_dtype_kserve_name(mfs_dtype dt);
/* Triton config name ("TYPE_FP32"...); NULL if none. */
const char *mfs_dtype_config_name(mfs_dtype dt);
/* ONNX name ("float", "int64"...), for messages; never NULL. */
const char *mfs_dtype_onnx_name(mfs_dtype dt);
/* Inverses; return MFS_DT_UNDEFINED when the name is unknown. */
mfs_dtype mfs_dtype_from_kserve(const char *name);
mfs_dtype mfs_dtype_from_config(const char *name);

#define MFS_MAX_RANK 8

typedef struct mfs_shape {
	int rank;                       /* 0 = scalar */
	int64_t dims[MFS_MAX_RANK];     /* -1 = unknown/variable (specs only) */
} mfs_shape;

/* Number of elements (1 for a scalar; 0 if any dim is 0); -1 if any dim
 * is negative or the count overflows int64. */
int64_t mfs_shape_numel(const mfs_shape *s);
bool mfs_shape_equal(const mfs_shape *a, const mfs_shape *b);
/* "[1,3,224,224]" into buf (always NUL-terminated); returns buf. */
char *mfs_shape_format(const mfs_shape *s, char *buf, size_t size);

typedef enum mfs_layout {
	MFS_LAYOUT_PLAIN = 0,  /* ONNX order, e.g. NCHW */
	MFS_LAYOUT_NHWC = 1,   /* rank-4 data stored N,H,W,C; shape still NCHW */
	/* rank-4 float data stored N, ceil(C/16), H, W, 16 (oneDNN's
	 * nChw16c), the channels past C zero: more bytes than the shape says
	 * when C is not a multiple of 16 (mfs_tensor_storage_bytes); shape
	 * still NCHW.  Only between convolutions (exec/graph/graph_plan.c). */
	MFS_LAYOUT_BLOCK16 = 2,
	/* The data lives in an engine's device memory: data points to an
	 * mfs_device_data (below), nbytes is what the shape needs.  Only
	 * between a run that kept an output and the run that reads it as
	 * an input (engine.h, "Resident tensors"). */
	MFS_LAYOUT_DEVICE = 3,
} mfs_layout;

/* A tensor's data held on a device (MFS_LAYOUT_DEVICE), opaque to all but
 * the backend that made it, which extends this header.  owner: that
 * backend (an mfs_backend *).  read copies the data (bytes of it) to the
 * host; put drops the tensor's reference.  read fails with -EINVAL once
 * a run consumed the data (engine.h). */
typedef struct mfs_device_data mfs_device_data;
struct mfs_device_data {
	const void *owner;
	int (*read)(mfs_device_data *d, void *dst, size_t bytes, mfs_error *err);
	void (*put)(mfs_device_data *d);
};

/* What a value is.  ONNX graphs pass tensors, and (opset 11+) sequences
 * of tensors and optionals: a value that holds a tensor or a sequence, or
 * nothing.  They share mfs_tensor so that every slot of the engine, the
 * codecs and the request path carries any of them; a tensor is the zero
 * value, so code that knows only tensors is unchanged. */
typedef enum mfs_kind {
	MFS_KIND_TENSOR = 0,
	MFS_KIND_SEQUENCE,     /* items[0..n_items): tensors of dtype, any
				  shapes (n_items may be 0) */
	MFS_KIND_OPTIONAL,     /* n_items 0 (no value) or 1: items[0] is a
				  tensor or (elem_kind SEQUENCE) a sequence */
} mfs_kind;

/* A string element: len bytes at ptr (any bytes, NUL included), with a
 * NUL after them not counted in len; ptr is NULL only when len is 0.  A
 * STRING tensor's data is an array of these (so that its element array
 * is sized and moved like any other dtype's), and the bytes they point
 * to live in an arena (mfs_strarena), normally the tensor's own `strings`.
 * docs/ARCHITECTURE.md, "String tensors", has the rules. */
typedef struct mfs_string {
	const char *ptr;
	size_t len;
} mfs_string;

/* An append-only arena of string bytes, freed at once (tensor.c). */
typedef struct mfs_strarena mfs_strarena;

typedef struct mfs_tensor {
	mfs_dtype dtype;       /* for a sequence or an optional: of its tensors */
	mfs_shape shape;       /* logical (ONNX) shape; rank 0 for containers */
	mfs_layout layout;     /* how data is stored; PLAIN outside the engine */
	void *data;            /* numel * dtype_size bytes; may be NULL if numel 0 */
	size_t nbytes;
	bool owns_data;        /* mfs_tensor_release() frees data (and items) */
	mfs_kind kind;
	mfs_kind elem_kind;    /* OPTIONAL: what it holds, known when empty */
	int n_items;           /* SEQUENCE, OPTIONAL: data and nbytes stay 0 */
	struct mfs_tensor *items;
	mfs_strarena *strings;   /* STRING: the arena its elements point into
				  (NULL: none yet, or all elements empty);
				  freed with data when owns_data */
} mfs_tensor;

/* Ask a run for output t on the device (engine.h, "Resident tensors"):
 * marks the zeroed tensor before the run; a backend without device memory
 * ignores it and fills t as usual. */
void mfs_tensor_want_device(mfs_tensor *t);
bool mfs_tensor_wants_device(const mfs_tensor *t);
/* Whether t's data is on a device (MFS_LAYOUT_DEVICE). */
static inline bool mfs_tensor_on_device(const mfs_tensor *t)
{
	return t->layout == MFS_LAYOUT_DEVICE && t->data;
}
/* A host copy of t into out (a new tensor out owns; t untouched): a
 * device tensor's data read back, any other tensor's copied.  -EINVAL
 * for a container, -ENOMEM, or the device's error. */
int mfs_tensor_to_host(const mfs_tensor *t, mfs_tensor *out, mfs_error *err);

/* Bytes of data for t's dtype and shape (dims must be >= 0): false when
 * the product overflows size_t. */
bool mfs_tensor_bytes(const mfs_tensor *t, size_t *out);
/* The bytes t's layout stores: mfs_tensor_bytes, or for BLOCK16 with its
 * channels padded to a multiple of 16.  False on overflow. */
bool mfs_tensor_storage_bytes(const mfs_tensor *t, size_t *out);

/* Allocate zeroed storage for dtype/shape; the tensor owns it.
 * Returns 0 or -ENOMEM/-EINVAL (overflow, bad dtype) with err filled. */
int mfs_tensor_alloc(mfs_tensor *t, mfs_dtype dt, const mfs_shape *shape,
		     mfs_error *err);
/* The same, not zeroed: for a caller that writes every byte. */
int mfs_tensor_alloc_uninit(mfs_tensor *t, mfs_dtype dt, const mfs_shape *shape,
			    mfs_error *err);

/* Where tensor storage of `min` bytes or more comes from and goes back
 * to (mfs_tensor_alloc, mfs_tensor_release): the daemon points this at its
 * pool of kept large buffers (core/bigbuf.h), because fresh memory costs
 * page faults on first touch, and on a virtual machine whose freed pages
 * went back to the host 2 ms per megabyte: a 100 MB output took 17 ms or
 * 200-280 ms per request (docs/PERFORMANCE.md).  alloc must return a
 * malloc block (free() must work on it, and release must take any malloc
 * block).  Unset (the default), malloc and free.  Set once, at start,
 * before tensors are made. */
void mfs_tensor_set_big_storage(void *(*alloc)(size_t), void (*release)(void *),
				size_t min);
/* Free owned data and reset to an empty tensor; safe on a zeroed tensor. */
void mfs_tensor_release(mfs_tensor *t);
/* Deep copy (dst owns its data, and its items for a container). */
int mfs_tensor_copy(mfs_tensor *dst, const mfs_tensor *src, mfs_error *err);

/* Make t an empty container of kind (SEQUENCE or OPTIONAL) with room for
 * n zeroed items, owning them; t's previous contents are not freed.  For
 * an OPTIONAL, elem_kind says what it holds.  0 or -ENOMEM/-EINVAL. */
int mfs_container_init(mfs_tensor *t, mfs_kind kind, mfs_kind elem_kind,
		       mfs_dtype dtype, int n, mfs_error *err);
/* "tensor", "sequence", "optional" (for messages). */
const char *mfs_kind_name(mfs_kind k);
/* "sequence(float)", "optional(sequence(int64))", "tensor(float)" into
 * buf (always NUL-terminated); returns buf. */
char *mfs_type_format(mfs_kind kind, mfs_kind elem_kind, mfs_dtype dt,
		      char *buf, size_t size);

/* String elements (dtype STRING).  mfs_string_set copies len bytes into
 * t's arena (made on first use, owned as t's data is) and points element
 * i at them; mfs_string_alloc does the same for len bytes the caller then
 * writes (its NUL is already there).  Both fail with -ENOMEM (err filled).
 * The element's previous bytes stay in the arena until it is freed. */
int mfs_string_set(mfs_tensor *t, int64_t i, const void *bytes, size_t len,
		   mfs_error *err);
char *mfs_string_alloc(mfs_tensor *t, int64_t i, size_t len, mfs_error *err);
/* Element i of a STRING tensor (borrowed). */
static inline const mfs_string *mfs_string_at(const mfs_tensor *t, int64_t i)
{
	return (const mfs_string *)t->data + i;
}
/* Make t's elements point into an arena of its own: copies every
 * element's bytes into a new arena that becomes t->strings.  For an
 * operator that moved elements from its inputs (their pointers are the
 * inputs' arenas') - the engine calls it on such outputs.  The previous
 * arena, if any, is the caller's to free.  0 or -ENOMEM. */
int mfs_tensor_own_strings(mfs_tensor *t, mfs_error *err);
/* Free an arena (NULL is fine). */
void mfs_strarena_free(mfs_strarena *b);
/* Total bytes of t's string elements (without the NULs). */
size_t mfs_strings_total(const mfs_tensor *t);
/* UTF-8: the code point at s (n > 0 bytes left) into *cp and its length
 * in bytes, or -1 when the bytes there are no UTF-8 (overlong forms,
 * surrogates and values past U+10FFFF included).  mfs_utf8_encode writes
 * code point v (at most U+10FFFF, no surrogate) at out (4 bytes of
 * room) and returns its length. */
int mfs_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);
size_t mfs_utf8_encode(uint32_t v, char *out);

/* IEEE half and bfloat16 conversions. */
float mfs_half_to_float(uint16_t h);
uint16_t mfs_float_to_half(float f);
float mfs_bf16_to_float(uint16_t b);
uint16_t mfs_float_to_bf16(float f);

/* Element i of an array of dtype dt as double (0 for non-numeric types). */
double mfs_dtype_load_f64(mfs_dtype dt, const void *p, int64_t i);
/* Element i of any numeric tensor as double / int64 (for shape inputs,
 * text codecs and tests). */
double mfs_tensor_get_f64(const mfs_tensor *t, int64_t i);
int64_t mfs_tensor_get_i64(const mfs_tensor *t, int64_t i);

#endif

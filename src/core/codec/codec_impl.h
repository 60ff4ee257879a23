/* codec_impl.h - the per-format entry points behind codec.h's dispatch.
 * Same contracts as mfs_tensor_decode/mfs_tensor_encode; decoders may
 * leave the final spec check to the dispatcher (mfs_tensor_check), but use
 * spec for what the file does not carry (shape of .txt/.raw, dtype of
 * .txt/.json/.raw).  Decoders' messages need not name the tensor: the
 * dispatcher prefixes "input 'NAME': ". */
#ifndef MFS_CODEC_IMPL_H
#define MFS_CODEC_IMPL_H

#include "codec.h"

#define MFS_CODEC_DECLARE(fmt)                                                 \
	int mfs_codec_##fmt##_decode(const void *buf, size_t len,              \
				     const mfs_tensor_spec *spec,              \
				     mfs_tensor *out, mfs_error *err);         \
	int mfs_codec_##fmt##_encode(const mfs_tensor *t, const char *name,    \
				     char **buf, size_t *len, mfs_error *err);

MFS_CODEC_DECLARE(npy)
int mfs_codec_npy_view(const void *buf, size_t len, const mfs_tensor_spec *spec,
		       mfs_tensor *out, mfs_error *err);
MFS_CODEC_DECLARE(json)
MFS_CODEC_DECLARE(txt)
MFS_CODEC_DECLARE(raw)
MFS_CODEC_DECLARE(pb)   /* codec_pb.c: ONNX TensorProto via onnx_tensor_* */

/* String tensors in any format (codec_string.c): the dispatch sends a
 * STRING tensor, or a file the model expects STRING of, here. */
int mfs_codec_string_decode(mfs_format fmt, const void *buf, size_t len,
			    const mfs_tensor_spec *spec, mfs_tensor *out, mfs_error *err);
int mfs_codec_string_encode(mfs_format fmt, const mfs_tensor *t, const char *name,
			    char **buf, size_t *len, mfs_error *err);

/* Helpers shared by the codecs and the dispatch (codec_shared.c). */

/* "FP32", or the ONNX name for types KServe has no name for. */
const char *mfs_codec_dtype_name(mfs_dtype dt);

/* spec's shape as mfs_shape_format writes it, or "(any shape)" for rank -1. */
void mfs_codec_format_spec(const mfs_tensor_spec *spec, char *buf, size_t size);

/* Shape of a file that carries no shape (.txt, .raw): spec's dims with at
 * most one -1 inferred from count; rank -1 (any rank) gives [count].
 * -EINVAL when count does not fit. */
int mfs_codec_infer_shape(const mfs_tensor_spec *spec, int64_t count,
			  mfs_shape *out, mfs_error *err);

/* Product of dims[0..rank) leaving out index skip (-1: none); 0 when any
 * dim is 0, whatever the others (an empty tensor may have a huge dim);
 * -1 when the product overflows int64 or a dim is negative. */
int64_t mfs_codec_numel(const int64_t *dims, int rank, int skip);

/* The datatype a text file is parsed into: spec's, which must be one the
 * text codecs handle.  -EINVAL/-ENOTSUP otherwise. */
int mfs_codec_text_dtype(const mfs_tensor_spec *spec, mfs_dtype *out,
			 mfs_error *err);

/* Store one parsed value as element i of t (t->dtype decides), refusing
 * what does not fit: a fraction or out-of-range value for an integer
 * type, anything but 0/1 for BOOL, a finite value that overflows a float
 * type.  -EINVAL naming the value and index. */
int mfs_codec_put_i64(mfs_tensor *t, size_t i, int64_t v, mfs_error *err);
int mfs_codec_put_u64(mfs_tensor *t, size_t i, uint64_t v, mfs_error *err);
int mfs_codec_put_f64(mfs_tensor *t, size_t i, double v, mfs_error *err);

/* Growable output buffer for the text encoders. */
typedef struct mfs_strbuf {
	char *data;
	size_t len, cap;
	int failed;             /* an allocation failed; data is unusable */
} mfs_strbuf;

void mfs_strbuf_append(mfs_strbuf *b, const char *s, size_t n);
/* Append a string literal. */
#define MFS_STRBUF_LIT(b, lit) mfs_strbuf_append((b), (lit), sizeof(lit) - 1)
void mfs_strbuf_printf(mfs_strbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Appends element i of t as text: integers exactly, BOOL as 0/1, FP32,
 * FP16, BF16 as %.9g and FP64 as %.17g (both round-trip exactly).
 * nonfinite_json: NaN/Inf as the JSON strings "NaN", "Infinity",
 * "-Infinity" (protobuf's JSON mapping) instead of nan/inf. */
void mfs_strbuf_put_value(mfs_strbuf *b, const mfs_tensor *t, size_t i,
			  int nonfinite_json);
/* Hand over the buffer (NUL-terminated; *len excludes the NUL) or fail
 * with -ENOMEM; the strbuf is left empty either way. */
int mfs_strbuf_finish(mfs_strbuf *b, char **buf, size_t *len, mfs_error *err);

#endif

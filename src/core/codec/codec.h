/* codec.h - tensor files in and out (SPEC.md section 6).
 *
 * One module per format (codec_npy.c, codec_json.c, codec_txt.c,
 * codec_raw.c, codec_pb.c) behind this dispatch (codec.c), sharing
 * codec_shared.c's helpers (codec_impl.h).  Decoding checks
 * the result against what the model expects and explains a mismatch in one
 * sentence naming the tensor ("input 'INPUT0': expected FP32 [16], got INT64
 * [4]").  Binary formats must carry the expected datatype exactly; text
 * formats are parsed into it, and a value that does not fit is an error.
 */
#ifndef MFS_CODEC_H
#define MFS_CODEC_H

#include <stddef.h>

#include "tensor.h"

typedef enum mfs_format {
	MFS_FMT_NPY,
	MFS_FMT_JSON,
	MFS_FMT_TXT,
	MFS_FMT_RAW,
	MFS_FMT_PB,
	MFS_FMT_COUNT
} mfs_format;

/* "npy" or ".npy" -> format; -1 when unknown. */
int mfs_format_from_ext(const char *ext);
/* "npy" (no dot). */
const char *mfs_format_ext(mfs_format f);
/* Split "INPUT0.npy" into name length and format; -1 if no known ext. */
int mfs_format_split_filename(const char *filename, size_t *name_len);

/* What the model expects of a tensor.  dims[i] == -1 is variable; rank -1
 * means any rank.  For .txt and .raw (no shape in the file) the shape comes
 * from here with at most one -1 inferred from the element count. */
typedef struct mfs_tensor_spec {
	const char *name;
	mfs_dtype dtype;
	int rank;
	int64_t dims[MFS_MAX_RANK];
} mfs_tensor_spec;

/* Decode buf into a new tensor (owned by *out).  -EINVAL with a message
 * naming spec->name on any problem; -ENOMEM. */
int mfs_tensor_decode(mfs_format fmt, const void *buf, size_t len,
		      const mfs_tensor_spec *spec, mfs_tensor *out,
		      mfs_error *err);
/* The same, but a .npy file's tensor may point into buf (owns_data
 * false: no copy of a large payload), so buf must outlive it; the other
 * formats, a BOOL .npy (normalised to 0/1) or misaligned data are copied. */
/* The whole size of the .npy file whose start is buf[0..len), as its
 * header announces it; 0 when buf does not start with a whole header. */
size_t mfs_npy_file_size(const void *buf, size_t len);
int mfs_tensor_decode_view(mfs_format fmt, const void *buf, size_t len,
			   const mfs_tensor_spec *spec, mfs_tensor *out,
			   mfs_error *err);

/* Check a decoded tensor against spec (dtype exact, rank, fixed dims). */
int mfs_tensor_check(const mfs_tensor *t, const mfs_tensor_spec *spec,
		     mfs_error *err);

/* Can buf (the first len bytes of a file being written, which may go on)
 * start a valid file of fmt?  0, or -EINVAL saying why not: no .npy magic,
 * a .txt token that is not a number, a .json that does not start with '{'
 * or '['.  Only what the beginning shows: decoding the whole file at its
 * close checks the rest.  .raw and .pb have no prefix to judge.  Looks
 * at most at MFS_PREFIX_CHECK_BYTES bytes. */
#define MFS_PREFIX_CHECK_BYTES 4096
int mfs_tensor_prefix_check(mfs_format fmt, const void *buf, size_t len,
			    mfs_error *err);

/* Sequences and optionals in one file (codec_value.c, SPEC.md section
 * 6): fmt .pb is the ONNX message; an optional of a tensor may be any
 * tensor format, an empty file meaning no value.  mfs_value_format_ok
 * fails (EINVAL, naming name) when fmt cannot hold a value of that kind;
 * decode checks the tensors' dtype against spec->dtype; for a tensor
 * both are mfs_tensor_decode / mfs_tensor_encode. */
int mfs_value_format_ok(mfs_format fmt, mfs_kind kind, mfs_kind elem_kind,
			const char *name, mfs_error *err);
int mfs_value_decode(mfs_format fmt, const void *buf, size_t len,
		     const mfs_tensor_spec *spec, mfs_kind kind, mfs_kind elem_kind,
		     mfs_tensor *out, mfs_error *err);
int mfs_value_encode(mfs_format fmt, const mfs_tensor *t, const char *name,
		     char **buf, size_t *len, mfs_error *err);

/* Encode t; *buf is malloc'd and owned by the caller. */
int mfs_tensor_encode(mfs_format fmt, const mfs_tensor *t, const char *name,
		      char **buf, size_t *len, mfs_error *err);

#endif

/* codec_impl.h - the per-format entry points behind codec.h's dispatch.
 * Same contracts as mfs_tensor_decode/mfs_tensor_encode; decoders may
 * leave the final spec check to the dispatcher (mfs_tensor_check), but use
 * spec for what the file does not carry (shape of .txt/.raw, dtype of
 * .txt/.json/.raw). */
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
MFS_CODEC_DECLARE(json)
MFS_CODEC_DECLARE(txt)
MFS_CODEC_DECLARE(raw)
MFS_CODEC_DECLARE(pb)   /* codec_pb.c: ONNX TensorProto via onnx_tensor_* */

#endif

/* codec_pb.c - `.pb` tensor files: one ONNX TensorProto, as in the ONNX
 * test data (SPEC section 6).
 *
 * Decoding accepts every encoding the ONNX reader does (raw_data or the
 * typed fields).  External data is refused: a file a client writes must
 * not make the daemon read other files.  The name stored in the file is
 * ignored (the file's own name names the tensor), and the dtype/shape
 * check against spec is left to the dispatcher (mfs_tensor_check), which
 * requires the datatype to match exactly, with one exception: a UINT16
 * tensor given for a BF16 input is read as BF16 (the same bits), because
 * ONNX's test-data generator (numpy has no bfloat16) wrote bfloat16 data
 * that way; the conformance runner reads it so too.  Encoding writes dims,
 * data_type, name and raw_data, the form onnx.numpy_helper produces.
 */
#include "codec_impl.h"

#include "onnx.h"

int mfs_codec_pb_decode(const void *buf, size_t len,
			const mfs_tensor_spec *spec, mfs_tensor *out,
			mfs_error *err)
{
	/* the dispatcher checks and names the tensor */
	int rc = onnx_tensor_decode(buf, len, NULL, out, NULL, err);

	if (rc == 0 && spec && spec->dtype == MFS_DT_BFLOAT16 &&
	    out->dtype == MFS_DT_UINT16)
		out->dtype = MFS_DT_BFLOAT16;
	return rc;
}

int mfs_codec_pb_encode(const mfs_tensor *t, const char *name, char **buf,
			size_t *len, mfs_error *err)
{
	void *p = NULL;
	int rc = onnx_tensor_encode(t, name, &p, len, err);

	*buf = p;
	return rc;
}

/* fuzz_onnx_tensor.c - libFuzzer target: one TensorProto (a .pb tensor
 * file) from arbitrary bytes, through both onnx_tensor_decode and the .pb
 * codec.  What decodes must have a shape that matches its byte count, and
 * must survive encode -> decode unchanged (dtype, shape, bytes). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec_impl.h"
#include "fuzz_same.h"
#include "onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	mfs_tensor t, back;
	mfs_error err;
	char *name = NULL;
	void *buf;
	size_t len;

	memset(&err, 0, sizeof(err));
	if (onnx_tensor_decode(data, size, NULL, &t, &name, &err)) {
		if (t.data || name || err.msg[0] == '\0' || err.code <= 0)
			abort();
		return 0;
	}
	int64_t numel = mfs_shape_numel(&t.shape);
	if (numel < 0 || (size_t)numel * mfs_dtype_size(t.dtype) != t.nbytes)
		abort();
	if (onnx_tensor_encode(&t, name, &buf, &len, &err))
		abort();
	if (onnx_tensor_decode(buf, len, NULL, &back, NULL, &err))
		abort();
	if (back.dtype != t.dtype || !mfs_shape_equal(&back.shape, &t.shape) ||
	    !fuzz_same_values(&back, &t))
		abort();
	mfs_tensor_release(&back);
	free(buf);

	/* The codec entry point: same bytes, same verdict. */
	mfs_tensor_spec spec = { .name = "T", .dtype = t.dtype, .rank = -1 };
	char *cbuf;
	if (mfs_codec_pb_decode(data, size, &spec, &back, &err))
		abort();
	mfs_tensor_release(&back);
	if (mfs_codec_pb_encode(&t, "T", &cbuf, &len, &err))
		abort();
	free(cbuf);
	mfs_tensor_release(&t);
	free(name);
	return 0;
}

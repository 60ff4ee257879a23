/* codec_raw.c - raw little-endian element bytes, nothing else.
 *
 * The file carries neither datatype nor shape: the datatype is the
 * model's, and the shape is the model's with at most one variable dim
 * inferred from the byte count, which must be a whole number of elements.
 */
#include "codec_impl.h"

#include <stdlib.h>
#include <string.h>

int mfs_codec_raw_decode(const void *buf, size_t len,
			 const mfs_tensor_spec *spec, mfs_tensor *out,
			 mfs_error *err)
{
	mfs_dtype dt;
	mfs_shape shape;
	size_t esize;
	int rc;

	if ((rc = mfs_codec_text_dtype(spec, &dt, err)))
		return rc;
	esize = mfs_dtype_size(dt);
	if (len % esize)
		return mfs_fail(err, EINVAL,
				"%zu bytes is not a whole number of %s elements (%zu bytes each)",
				len, mfs_dtype_kserve_name(dt) ? mfs_dtype_kserve_name(dt)
							       : mfs_dtype_onnx_name(dt),
				esize);
	if (len / esize > INT64_MAX)
		return mfs_fail(err, EINVAL, "file is too large");
	if ((rc = mfs_codec_infer_shape(spec, (int64_t)(len / esize), &shape, err)))
		return rc;
	if ((rc = mfs_tensor_alloc(out, dt, &shape, err)))
		return rc;
	if (len)
		memcpy(out->data, buf, len);
	/* A BOOL is one byte, and NumPy reads any nonzero byte as True; store
	 * 1 so the engine's logic ops see only 0 and 1. */
	if (dt == MFS_DT_BOOL) {
		unsigned char *d = out->data;
		for (size_t i = 0; i < len; i++)
			d[i] = d[i] != 0;
	}
	return 0;
}

int mfs_codec_raw_encode(const mfs_tensor *t, const char *name, char **buf,
			 size_t *len, mfs_error *err)
{
	(void)name;
	/* malloc(0) may return NULL: always give the caller a buffer. */
	*buf = malloc(t->nbytes ? t->nbytes : 1);
	if (!*buf)
		return mfs_fail(err, ENOMEM, "out of memory writing %zu bytes", t->nbytes);
	if (t->nbytes)
		memcpy(*buf, t->data, t->nbytes);
	*len = t->nbytes;
	return 0;
}

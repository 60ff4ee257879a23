/* codec_fuzz_common.h - the body shared by the fuzz_codec_*.c targets.
 *
 * The first input byte picks what the model expects (datatype, and a
 * shape with or without a variable dim); the rest is the file.  Whatever
 * decodes must then survive every encoder, and the binary formats must
 * give the same tensor back (byte for byte for .npy and .raw). */
#ifndef CODEC_FUZZ_COMMON_H
#define CODEC_FUZZ_COMMON_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "fuzz_same.h"

static const mfs_dtype fuzz_dtypes[16] = {
	MFS_DT_FLOAT, MFS_DT_UINT8, MFS_DT_INT8, MFS_DT_UINT16,
	MFS_DT_INT16, MFS_DT_INT32, MFS_DT_INT64, MFS_DT_BOOL,
	MFS_DT_FLOAT16, MFS_DT_DOUBLE, MFS_DT_UINT32, MFS_DT_UINT64,
	MFS_DT_BFLOAT16, MFS_DT_UNDEFINED, MFS_DT_STRING, MFS_DT_FLOAT,
};

static void fuzz_spec(uint8_t sel, mfs_tensor_spec *spec)
{
	memset(spec, 0, sizeof(*spec));
	spec->name = "FUZZ";
	spec->dtype = fuzz_dtypes[sel & 15];
	switch (sel >> 4) {
	case 0: spec->rank = -1; break;
	case 1: spec->rank = 1; spec->dims[0] = -1; break;
	case 2: spec->rank = 2; spec->dims[0] = -1; spec->dims[1] = 3; break;
	case 3: spec->rank = 0; break;
	case 4: spec->rank = 1; spec->dims[0] = 4; break;
	case 5: spec->rank = 2; spec->dims[0] = -1; spec->dims[1] = -1; break;
	case 6: spec->rank = 3; spec->dims[0] = 0; spec->dims[1] = -1; spec->dims[2] = 2; break;
	default: spec->rank = 2; spec->dims[0] = 2; spec->dims[1] = -1; break;
	}
}

static int fuzz_codec(mfs_format fmt, const uint8_t *data, size_t size)
{
	mfs_tensor_spec spec;
	mfs_tensor t, back;
	mfs_error err;

	if (size < 1)
		return 0;
	fuzz_spec(data[0], &spec);
	if (mfs_tensor_decode(fmt, data + 1, size - 1, &spec, &t, &err) != 0) {
		/* A failed decode owns nothing and says something. */
		if (t.data || !err.msg[0])
			abort();
		return 0;
	}
	for (int f = 0; f < MFS_FMT_COUNT; f++) {
		char *buf = NULL;
		size_t len = 0;
		if (mfs_tensor_encode((mfs_format)f, &t, "FUZZ", &buf, &len, &err) != 0) {
			free(buf);
			continue;
		}
		/* Re-read what we wrote: formats with the type inside keep it. */
		mfs_tensor_spec again = spec;
		again.dtype = t.dtype;
		again.rank = t.shape.rank;
		memcpy(again.dims, t.shape.dims, sizeof(again.dims));
		int rc = mfs_tensor_decode((mfs_format)f, buf, len, &again, &back, &err);
		if ((f == MFS_FMT_NPY || f == MFS_FMT_RAW) &&
		    (rc != 0 || !fuzz_same_values(&back, &t)))
			abort();
		if (rc == 0)
			mfs_tensor_release(&back);
		free(buf);
	}
	mfs_tensor_release(&t);
	return 0;
}

#endif

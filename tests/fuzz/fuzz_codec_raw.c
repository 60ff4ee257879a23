/* fuzz_codec_raw.c - libFuzzer target: the .raw tensor decoder, then every
 * encoder on what it accepted (see codec_fuzz_common.h). */
#include "codec_fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_codec(MFS_FMT_RAW, data, size);
}

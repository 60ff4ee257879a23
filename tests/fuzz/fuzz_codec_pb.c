/* fuzz_codec_pb.c - libFuzzer target: the .pb tensor decoder, then every
 * encoder on what it accepted (see codec_fuzz_common.h). */
#include "codec_fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_codec(MFS_FMT_PB, data, size);
}

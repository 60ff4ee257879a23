/* fuzz_config_pbtxt.c - libFuzzer target: config.pbtxt from arbitrary
 * bytes (see fuzz_config_common.h for what is checked). */
#include "fuzz_config_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	mfs_model_config c;
	mfs_error err;
	int rc;

	memset(&err, 0, sizeof(err));
	rc = mfs_config_parse_pbtxt((const char *)data, size, "config.pbtxt", &c, &err);
	check_parse(rc, &c, &err);
	return 0;
}

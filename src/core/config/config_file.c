/* config_file.c - reading a config file (config.h): a name that ends in
 * .json through the JSON front-end, any other as protobuf text; both give
 * the same tree to config_schema.c. */
#include "config.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "file_util.h"

/* A config larger than this is not a config (Triton's are a few KiB). */
#define CONFIG_MAX_FILE_BYTES (16u << 20)

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

int mfs_config_load_file(const char *path, mfs_model_config *out,
			 mfs_error *err)
{
	const char *base = strrchr(path, '/');
	char *text;
	size_t got;
	int rc;

	base = base ? base + 1 : path;
	rc = mfs_read_file(path, CONFIG_MAX_FILE_BYTES, &text, &got, err);
	if (rc < 0) {
		mfs_error_prefix(err, "%s: ", path);
		return rc;
	}
	if (ends_with(base, ".json"))
		rc = mfs_config_parse_json(text, got, base, out, err);
	else
		rc = mfs_config_parse_pbtxt(text, got, base, out, err);
	free(text);
	return rc;
}

/* model_control.c - see model_control.h. */
#include "model_control.h"

#include <stdbool.h>
#include <string.h>

static const char *const mode_names[] = { "poll", "none", "explicit" };

int mfs_control_mode_parse(const char *s)
{
	for (int i = 0; i < 3; i++)
		if (s && strcmp(s, mode_names[i]) == 0)
			return i;
	return -1;
}

const char *mfs_control_mode_name(mfs_control_mode m)
{
	return (unsigned)m < 3 ? mode_names[m] : "poll";
}

/* What a client wrote, for a message: at most SHOWN_MAX bytes, NUL bytes
 * as \x00 (the rest is escaped by mfs_fail), "..." when cut. */
#define SHOWN_MAX 40

static void show(char *dst, const char *buf, size_t len)
{
	size_t k = 0;
	for (size_t i = 0; i < len && i < SHOWN_MAX; i++)
		if (buf[i] == '\0') {
			memcpy(dst + k, "\\x00", 4);
			k += 4;
		} else {
			dst[k++] = buf[i];
		}
	if (len > SHOWN_MAX) {
		memcpy(dst + k, "...", 3);
		k += 3;
	}
	dst[k] = '\0';
}

int mfs_control_parse(const char *buf, size_t len, bool first, mfs_control_verb *out,
		      mfs_error *err)
{
	/* One word; echo's newline is the one thing allowed after it (and
	 * is not shown in a message). */
	size_t n = len > 0 && buf[len - 1] == '\n' ? len - 1 : len;
	char shown[SHOWN_MAX * 4 + 4];
	show(shown, buf, n);
	if (!first)
		return mfs_fail(err, EINVAL, "'%s' came after another write on the same open(): "
				"one command per open()", shown);
	if (n == 4 && memcmp(buf, "load", 4) == 0) {
		*out = MFS_CONTROL_LOAD;
		return 0;
	}
	if (n == 6 && memcmp(buf, "unload", 6) == 0) {
		*out = MFS_CONTROL_UNLOAD;
		return 0;
	}
	return mfs_fail(err, EINVAL, "unknown command '%s' (write one word, 'load' or 'unload', "
			"with at most a newline after it)", shown);
}

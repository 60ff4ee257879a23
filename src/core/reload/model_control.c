/* model_control.c - see model_control.h. */
#include "model_control.h"

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

static int is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

int mfs_control_parse(const char *buf, size_t len, mfs_control_verb *out,
		      mfs_error *err)
{
	size_t a = 0, b = len;
	while (a < b && is_blank(buf[a]))
		a++;
	while (b > a && is_blank(buf[b - 1]))
		b--;
	/* The same word twice ("load\nload") is not one command: only
	 * blanks may surround it. */
	size_t n = b - a;
	if (n == 4 && memcmp(buf + a, "load", 4) == 0) {
		*out = MFS_CONTROL_LOAD;
		return 0;
	}
	if (n == 6 && memcmp(buf + a, "unload", 6) == 0) {
		*out = MFS_CONTROL_UNLOAD;
		return 0;
	}
	/* mfs_fail escapes what a client wrote. */
	char shown[41];
	size_t k = n > 40 ? 40 : n;
	memcpy(shown, buf + a, k);
	shown[k] = '\0';
	return mfs_fail(err, EINVAL, "unknown command '%s%s' (write 'load' or 'unload')", shown,
			n > 40 ? "..." : "");
}

#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void mfs_error_clear(mfs_error *err)
{
	if (!err)
		return;
	err->code = 0;
	err->msg[0] = '\0';
}

int mfs_fail(mfs_error *err, int code, const char *fmt, ...)
{
	if (code < 0)
		code = -code;
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
		err->code = code;
	}
	return -code;
}

void mfs_error_prefix(mfs_error *err, const char *fmt, ...)
{
	char joined[2 * MFS_ERROR_MSG_MAX];
	va_list ap;
	int n;

	if (!err)
		return;
	va_start(ap, fmt);
	n = vsnprintf(joined, MFS_ERROR_MSG_MAX, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n >= MFS_ERROR_MSG_MAX)
		n = MFS_ERROR_MSG_MAX - 1;
	/* The message may be cut; never the prefix's own terminator. */
	memcpy(joined + n, err->msg, strnlen(err->msg, MFS_ERROR_MSG_MAX - 1) + 1);
	memcpy(err->msg, joined, MFS_ERROR_MSG_MAX - 1);
	err->msg[MFS_ERROR_MSG_MAX - 1] = '\0';
}

/* error.h - one error value carried from where a failure is found to the user.
 *
 * Convention (git/libfuse style): every fallible function returns 0 on
 * success or a negative errno, and fills a caller-provided mfs_error with a
 * sentence that names what failed.  The error is written once, where it is
 * found; callers only pass the negative errno up, optionally prefixing
 * context ("model 'x': ") with mfs_error_prefix().  The errno chosen follows
 * SPEC.md section 10 (EINVAL bad tensor, ENOENT unknown name, ENOTSUP
 * unsupported feature, ENOMEM, EIO run failure ...).
 */
#ifndef MFS_ERROR_H
#define MFS_ERROR_H

#include <errno.h>
#include <stddef.h>

#define MFS_ERROR_MSG_MAX 1024

typedef struct mfs_error {
	int code;                      /* positive errno, 0 when no error */
	char msg[MFS_ERROR_MSG_MAX];   /* one line, no trailing newline */
} mfs_error;

/* Reset to "no error". */
void mfs_error_clear(mfs_error *err);

/* Record an error (printf-style message, escaped by mfs_escape) and
 * return -code.  err may be NULL
 * (the message is dropped).  Typical use: return mfs_fail(err, EINVAL, "...");
 * An existing message is overwritten. */
int mfs_fail(mfs_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prepend context to an existing message ("model 'm': " + msg). */
void mfs_error_prefix(mfs_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Copy the NUL-terminated src into dst (cap > 0 bytes; always terminated,
 * cut at a character boundary when it does not fit) so that it stays one
 * printable line: control characters (below 0x20 and 0x7f) become \n, \r,
 * \t or \xHH; bytes that are not valid UTF-8, the C1 controls
 * (U+0080..U+009F) and the line/paragraph separators U+2028/U+2029 become
 * \xHH per byte.  Backslashes are kept as they are, so escaping an escaped
 * string changes nothing (mfs_fail escapes, and mfs_error_prefix and the
 * logger escape again).  A name a client or a model file chose can then
 * never start a forged log line or a second line in $req/error.
 * Returns the length written. */
size_t mfs_escape(char *dst, size_t cap, const char *src);

#endif

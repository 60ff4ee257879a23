/* file_util.h - reading a whole file, the one way every layer does it
 * (model files, configs, `modelfs run`'s inputs). */
#ifndef MFS_FILE_UTIL_H
#define MFS_FILE_UTIL_H

#include <stddef.h>

#include "error.h"

/* Read the whole regular file at path into *buf (malloc'd, owned by the
 * caller, with a NUL after the last byte so text parsers may treat it as
 * a string; *len does not count it).  Uses read(), not mmap: a file
 * truncated while it is read is an error, not SIGBUS.  A FIFO or device
 * is refused without blocking.  Errors (the message does not name path:
 * callers prefix it with mfs_error_prefix):
 *   -ENOENT, -EACCES, ...  open() failed (its errno)
 *   -EINVAL                not a regular file
 *   -EFBIG                 larger than max_bytes
 *   -EIO                   read failed or the file shrank meanwhile
 *   -ENOMEM
 * On error *buf is NULL and *len 0. */
int mfs_read_file(const char *path, size_t max_bytes, char **buf, size_t *len,
		  mfs_error *err);

/* The same for a descriptor already open (its offset is left alone):
 * every error above but open()'s. */
int mfs_read_fd(int fd, size_t max_bytes, char **buf, size_t *len, mfs_error *err);

#endif

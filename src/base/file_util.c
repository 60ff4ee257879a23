/* file_util.c - see file_util.h. */
#include "file_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int mfs_read_fd(int fd, size_t max_bytes, char **buf, size_t *len, mfs_error *err)
{
	struct stat st;
	size_t size, done = 0;
	char *data;

	*buf = NULL;
	*len = 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return mfs_fail(err, EINVAL, "not a regular file");
	if ((unsigned long long)st.st_size > max_bytes)
		return mfs_fail(err, EFBIG, "%lld bytes, more than the limit of %zu",
				(long long)st.st_size, max_bytes);
	size = (size_t)st.st_size;
	data = malloc(size + 1);
	if (!data)
		return mfs_fail(err, ENOMEM, "out of memory reading %zu bytes", size);
	while (done < size) {
		/* pread: the descriptor's offset is not ours to move. */
		ssize_t n = pread(fd, data + done, size - done, (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = errno;
			free(data);
			return mfs_fail(err, EIO, "read failed: %s",
					n < 0 ? strerror(e) : "the file shrank while it was read");
		}
		done += (size_t)n;
	}
	data[size] = '\0';
	*buf = data;
	*len = size;
	return 0;
}

int mfs_read_file(const char *path, size_t max_bytes, char **buf, size_t *len,
		  mfs_error *err)
{
	*buf = NULL;
	*len = 0;
	/* O_NONBLOCK: opening a FIFO must not wait for a writer; fstat
	 * refuses it next. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return mfs_fail(err, errno, "%s", strerror(errno));
	int rc = mfs_read_fd(fd, max_bytes, buf, len, err);
	close(fd);
	return rc;
}

/* worker_proto.c - see worker_proto.h. */
#include "worker_proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define ALIGN 64u

typedef struct wire_tensor {
	int32_t dtype;
	int32_t rank;
	int64_t dims[MFS_MAX_RANK];
	uint64_t offset;       /* from the start of the payload */
	uint64_t nbytes;
} wire_tensor;

static size_t align_up(size_t v)
{
	return (v + ALIGN - 1) & ~(size_t)(ALIGN - 1);
}

int mfs_shm_create(mfs_shm *s, mfs_error *err)
{
	memset(s, 0, sizeof(*s));
	/* No MFD_ALLOW_SEALING: the file is born with F_SEAL_SEAL, so the
	 * worker cannot seal it against the daemon's writes.  Mode 0600: a
	 * memfd is made 0777, and its /proc/PID/fd link is the only name it
	 * has; nobody but the daemon's user has any business opening it. */
	s->fd = memfd_create("modelfs-backend", MFD_CLOEXEC);
	if (s->fd < 0)
		return mfs_fail(err, errno, "memfd_create: %s", strerror(errno));
	if (fchmod(s->fd, 0600) != 0) {
		int e = errno;
		close(s->fd);
		s->fd = -1;
		return mfs_fail(err, e, "shared memory: fchmod: %s", strerror(e));
	}
	return 0;
}

int mfs_shm_adopt(mfs_shm *s, int fd, mfs_error *err)
{
	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->mapped = true;
	return mfs_shm_sync(s, 0, err);
}

static int map_size(mfs_shm *s, size_t size, mfs_error *err)
{
	void *p;

	if (size == s->size)
		return 0;
	if (s->base)
		p = mremap(s->base, s->size, size, MREMAP_MAYMOVE);
	else
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
	if (p == MAP_FAILED)
		return mfs_fail(err, ENOMEM, "mapping %zu bytes of shared memory: %s", size,
				strerror(errno));
	s->base = p;
	s->size = size;
	return 0;
}

int mfs_shm_reserve(mfs_shm *s, size_t need, mfs_error *err)
{
	struct stat st;
	size_t size;

	if (fstat(s->fd, &st) != 0)
		return mfs_fail(err, errno, "shared memory: %s", strerror(errno));
	size = (size_t)st.st_size;
	if (size < need) {
		/* Grow by half again, so that a run of growing requests does
		 * not resize every time. */
		size = align_up(need + need / 2 + 4096);
		if (ftruncate(s->fd, (off_t)size) != 0)
			return mfs_fail(err, ENOMEM, "growing shared memory to %zu bytes: %s", size,
					strerror(errno));
	}
	return s->mapped ? map_size(s, size, err) : 0;
}

int mfs_shm_sync(mfs_shm *s, size_t need, mfs_error *err)
{
	struct stat st;

	if (fstat(s->fd, &st) != 0)
		return mfs_fail(err, errno, "shared memory: %s", strerror(errno));
	if ((size_t)st.st_size < need)
		return mfs_fail(err, EPROTO, "shared memory holds %lld bytes, the message says %zu",
				(long long)st.st_size, need);
	if (st.st_size == 0 || !s->mapped)
		return 0;
	return map_size(s, (size_t)st.st_size, err);
}

int mfs_shm_write(mfs_shm *s, uint64_t off, const void *p, size_t n, mfs_error *err)
{
	if (s->mapped) {
		if (off > s->size || n > s->size - off)
			return mfs_fail(err, EPROTO, "%zu bytes at %llu outside the %zu of shared memory",
					n, (unsigned long long)off, s->size);
		memcpy((char *)s->base + off, p, n);
		return 0;
	}
	while (n > 0) {
		ssize_t k = pwrite(s->fd, p, n, (off_t)off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return mfs_fail(err, k < 0 ? errno : EIO, "writing shared memory: %s",
					k < 0 ? strerror(errno) : "no progress");
		p = (const char *)p + k;
		off += (uint64_t)k;
		n -= (size_t)k;
	}
	return 0;
}

int mfs_shm_read(const mfs_shm *s, uint64_t off, void *p, size_t n, mfs_error *err)
{
	if (s->mapped) {
		if (off > s->size || n > s->size - off)
			return mfs_fail(err, EPROTO, "%zu bytes at %llu outside the %zu of shared memory",
					n, (unsigned long long)off, s->size);
		memcpy(p, (const char *)s->base + off, n);
		return 0;
	}
	while (n > 0) {
		ssize_t k = pread(s->fd, p, n, (off_t)off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return mfs_fail(err, errno, "reading shared memory: %s", strerror(errno));
		if (k == 0)
			return mfs_fail(err, EPROTO, "the shared memory ends at %llu, before the "
					"%zu bytes the message says are there (the worker shrank it)",
					(unsigned long long)off, n);
		p = (char *)p + k;
		off += (uint64_t)k;
		n -= (size_t)k;
	}
	return 0;
}

void mfs_shm_release(mfs_shm *s)
{
	if (s->base)
		munmap(s->base, s->size);
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	s->base = NULL;
	s->size = 0;
}

int mfs_wire_send(int sock, const mfs_wmsg *msg, int fd, mfs_error *err)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = (void *)msg, .iov_len = sizeof(*msg) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (fd >= 0) {
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return mfs_fail(err, EPIPE, "sending to the worker: %s", strerror(errno));
	return 0;
}

int mfs_wire_recv(int sock, mfs_wmsg *msg, int *fd, mfs_error *err)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = msg, .iov_len = sizeof(*msg) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };
	ssize_t n;

	if (fd)
		*fd = -1;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n == 0 || (n < 0 && errno == ECONNRESET))
		return mfs_fail(err, EPIPE, "the other side closed the connection");
	if (n < 0)
		return mfs_fail(err, EPIPE, "receiving: %s", strerror(errno));
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			int got;
			memcpy(&got, CMSG_DATA(c), sizeof(int));
			if (fd && *fd < 0)
				*fd = got;
			else
				close(got);
		}
	if (mh.msg_flags & MSG_TRUNC)
		return mfs_fail(err, EPROTO, "a message longer than %zu bytes", sizeof(*msg));
	if ((size_t)n != sizeof(*msg))
		return mfs_fail(err, EPROTO, "a message of %zd bytes, expected %zu", n, sizeof(*msg));
	msg->text[sizeof(msg->text) - 1] = '\0';
	return 0;
}

int mfs_wire_put_tensors(mfs_shm *s, const mfs_tensor *t, int n, uint64_t *len,
			 mfs_error *err)
{
	size_t table = sizeof(uint32_t) + (size_t)n * sizeof(wire_tensor);
	size_t at = align_up(table), total = at;
	uint32_t count = (uint32_t)n;
	char *head;
	int rc;

	for (int i = 0; i < n; i++) {
		if (t[i].dtype == MFS_DT_STRING)   /* its elements are host pointers */
			return mfs_fail(err, ENOTSUP,
					"string tensors are not supported by backend workers");
		total = align_up(total + t[i].nbytes);
	}
	rc = mfs_shm_reserve(s, total, err);
	if (rc)
		return rc;
	/* The table is built here and written in one piece. */
	head = malloc(table);
	if (!head)
		return mfs_fail(err, ENOMEM, "out of memory");
	memcpy(head, &count, sizeof(count));
	for (int i = 0; i < n && rc == 0; i++) {
		wire_tensor w = { .dtype = t[i].dtype, .rank = t[i].shape.rank,
				  .offset = at, .nbytes = t[i].nbytes };
		memcpy(w.dims, t[i].shape.dims, sizeof(w.dims));
		memcpy(head + sizeof(uint32_t) + (size_t)i * sizeof(w), &w, sizeof(w));
		if (t[i].nbytes)
			rc = mfs_shm_write(s, at, t[i].data, t[i].nbytes, err);
		at = align_up(at + t[i].nbytes);
	}
	if (rc == 0)
		rc = mfs_shm_write(s, 0, head, table, err);
	free(head);
	*len = total;
	return rc;
}

static void release_all(mfs_tensor *out, int n)
{
	for (int i = 0; i < n; i++)
		mfs_tensor_release(&out[i]);
}

int mfs_wire_get_tensors(const mfs_shm *s, uint64_t len, mfs_tensor *out, int n,
			 int copy, mfs_error *err)
{
	uint32_t count;
	size_t table = sizeof(uint32_t) + (size_t)n * sizeof(wire_tensor);
	int rc;

	for (int i = 0; i < n; i++)
		memset(&out[i], 0, sizeof(out[i]));
	if ((s->mapped && len > s->size) || len < sizeof(uint32_t))
		return mfs_fail(err, EPROTO, "a tensor table of %llu bytes in %zu of shared memory",
				(unsigned long long)len, s->size);
	if ((rc = mfs_shm_read(s, 0, &count, sizeof(count), err)))
		return rc;
	if (count != (uint32_t)n || len < table)
		return mfs_fail(err, EPROTO, "%u tensors where %d were expected", count, n);
	for (int i = 0; i < n; i++) {
		wire_tensor w;
		mfs_tensor *t = &out[i];
		size_t want;

		/* Each header is copied out once and only the copy is used:
		 * the peer may change the memory while we read it. */
		rc = mfs_shm_read(s, sizeof(uint32_t) + (size_t)i * sizeof(w), &w, sizeof(w), err);
		if (rc)
			goto fail;
		if (w.dtype == MFS_DT_UNDEFINED && w.rank == 0 && w.nbytes == 0)
			continue;   /* an optional input not given: stays an empty tensor */
		if (w.rank < 0 || w.rank > MFS_MAX_RANK || !mfs_dtype_size((mfs_dtype)w.dtype) ||
		    w.dtype == MFS_DT_STRING) {
			rc = mfs_fail(err, EPROTO, "tensor %d: rank %d, data type %d", i,
				      (int)w.rank, (int)w.dtype);
			goto fail;
		}
		t->dtype = (mfs_dtype)w.dtype;
		t->shape.rank = w.rank;
		for (int d = 0; d < w.rank; d++) {
			if (w.dims[d] < 0) {
				rc = mfs_fail(err, EPROTO, "tensor %d: dim %d is %lld", i, d,
					      (long long)w.dims[d]);
				goto fail;
			}
			t->shape.dims[d] = w.dims[d];
		}
		if (!mfs_tensor_bytes(t, &want) || want != w.nbytes || w.offset > len ||
		    w.nbytes > len - w.offset) {
			rc = mfs_fail(err, EPROTO, "tensor %d: %llu bytes at %llu do not match its "
				      "shape or lie outside the %llu bytes sent", i,
				      (unsigned long long)w.nbytes, (unsigned long long)w.offset,
				      (unsigned long long)len);
			goto fail;
		}
		t->nbytes = w.nbytes;
		if (!copy && s->mapped) {
			t->data = w.nbytes ? (char *)s->base + w.offset : NULL;
			continue;
		}
		mfs_shape shape = t->shape;
		if ((rc = mfs_tensor_alloc(t, t->dtype, &shape, err)))
			goto fail;
		if (w.nbytes && (rc = mfs_shm_read(s, w.offset, t->data, w.nbytes, err)))
			goto fail;
	}
	return 0;
fail:
	if (copy || !s->mapped)
		release_all(out, n);
	for (int i = 0; i < n; i++)
		memset(&out[i], 0, sizeof(out[i]));
	return rc;
}

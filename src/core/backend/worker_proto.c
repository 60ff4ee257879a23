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
	s->base = NULL;
	s->size = 0;
	s->fd = memfd_create("modelfs-backend", MFD_CLOEXEC);
	if (s->fd < 0)
		return mfs_fail(err, errno, "memfd_create: %s", strerror(errno));
	return 0;
}

int mfs_shm_adopt(mfs_shm *s, int fd, mfs_error *err)
{
	s->fd = fd;
	s->base = NULL;
	s->size = 0;
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
	return map_size(s, size, err);
}

int mfs_shm_sync(mfs_shm *s, size_t need, mfs_error *err)
{
	struct stat st;

	if (fstat(s->fd, &st) != 0)
		return mfs_fail(err, errno, "shared memory: %s", strerror(errno));
	if ((size_t)st.st_size < need)
		return mfs_fail(err, EPROTO, "shared memory holds %lld bytes, the message says %zu",
				(long long)st.st_size, need);
	if (st.st_size == 0)
		return 0;
	return map_size(s, (size_t)st.st_size, err);
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
	if ((size_t)n != sizeof(*msg) || (mh.msg_flags & MSG_TRUNC))
		return mfs_fail(err, EPROTO, "a message of %zd bytes, expected %zu", n, sizeof(*msg));
	msg->text[sizeof(msg->text) - 1] = '\0';
	return 0;
}

int mfs_wire_put_tensors(mfs_shm *s, const mfs_tensor *t, int n, uint64_t *len,
			 mfs_error *err)
{
	size_t at = align_up(sizeof(uint32_t) + (size_t)n * sizeof(wire_tensor));
	size_t total = at;
	wire_tensor *hdr;
	int rc;

	for (int i = 0; i < n; i++)
		total = align_up(total + t[i].nbytes);
	rc = mfs_shm_reserve(s, total, err);
	if (rc)
		return rc;
	*(uint32_t *)s->base = (uint32_t)n;
	hdr = (wire_tensor *)((char *)s->base + sizeof(uint32_t));
	for (int i = 0; i < n; i++) {
		wire_tensor w = { .dtype = t[i].dtype, .rank = t[i].shape.rank,
				  .offset = at, .nbytes = t[i].nbytes };
		memcpy(w.dims, t[i].shape.dims, sizeof(w.dims));
		memcpy(&hdr[i], &w, sizeof(w));
		if (t[i].nbytes)
			memcpy((char *)s->base + at, t[i].data, t[i].nbytes);
		at = align_up(at + t[i].nbytes);
	}
	*len = total;
	return 0;
}

int mfs_wire_get_tensors(const mfs_shm *s, uint64_t len, mfs_tensor *out, int n,
			 int copy, mfs_error *err)
{
	uint32_t count;
	size_t table = sizeof(uint32_t) + (size_t)n * sizeof(wire_tensor);

	for (int i = 0; i < n; i++)
		memset(&out[i], 0, sizeof(out[i]));
	if (len > s->size || len < sizeof(uint32_t))
		return mfs_fail(err, EPROTO, "a tensor table of %llu bytes in %zu of shared memory",
				(unsigned long long)len, s->size);
	memcpy(&count, s->base, sizeof(count));
	if (count != (uint32_t)n || len < table)
		return mfs_fail(err, EPROTO, "%u tensors where %d were expected", count, n);
	for (int i = 0; i < n; i++) {
		wire_tensor w;
		mfs_tensor *t = &out[i];
		size_t want;

		memcpy(&w, (char *)s->base + sizeof(uint32_t) + (size_t)i * sizeof(w), sizeof(w));
		if (w.dtype == MFS_DT_UNDEFINED && w.rank == 0 && w.nbytes == 0)
			continue;   /* an optional input not given: stays an empty tensor */
		if (w.rank < 0 || w.rank > MFS_MAX_RANK || !mfs_dtype_size((mfs_dtype)w.dtype))
			return mfs_fail(err, EPROTO, "tensor %d: rank %d, data type %d", i,
					(int)w.rank, (int)w.dtype);
		t->dtype = (mfs_dtype)w.dtype;
		t->shape.rank = w.rank;
		for (int d = 0; d < w.rank; d++) {
			if (w.dims[d] < 0)
				return mfs_fail(err, EPROTO, "tensor %d: dim %d is %lld", i, d,
						(long long)w.dims[d]);
			t->shape.dims[d] = w.dims[d];
		}
		if (!mfs_tensor_bytes(t, &want) || want != w.nbytes || w.offset > len ||
		    w.nbytes > len - w.offset)
			return mfs_fail(err, EPROTO, "tensor %d: %llu bytes at %llu do not match its "
					"shape or lie outside the %llu bytes sent", i,
					(unsigned long long)w.nbytes, (unsigned long long)w.offset,
					(unsigned long long)len);
		t->nbytes = w.nbytes;
		if (!copy) {
			t->data = w.nbytes ? (char *)s->base + w.offset : NULL;
			continue;
		}
		mfs_shape shape = t->shape;
		int rc = mfs_tensor_alloc(t, t->dtype, &shape, err);
		if (rc) {
			for (int j = 0; j < i; j++)
				mfs_tensor_release(&out[j]);
			return rc;
		}
		if (w.nbytes)
			memcpy(t->data, (char *)s->base + w.offset, w.nbytes);
	}
	return 0;
}

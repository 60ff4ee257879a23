/* worker_proto.h - how the daemon and a custom backend's worker process
 * talk (docs/BACKENDS.md, "Isolation").
 *
 * Control: fixed-size messages on a SOCK_SEQPACKET socketpair (a message
 * is never split or merged; a dead peer reads as end of file).
 * Data: one memfd per worker, mapped MAP_SHARED by both sides and passed
 * once with the INIT message (SCM_RIGHTS).  The daemon writes a request's
 * payload at offset 0, the worker its answer at offset 0 (growing the file
 * when it needs to); each message says how many bytes of it count.
 *
 *   daemon -> worker   INIT  payload: JSON (library, model, version,
 *                            version_dir, instance, config in Triton's JSON)
 *                      EXEC  payload: the inputs' tensor table
 *                      QUIT
 *   worker -> daemon   REPLY status 0 with the outputs' tensor table (EXEC)
 *                      or nothing (INIT); status != 0 with text: the reason
 *
 * A tensor table: uint32 count, then per tensor a header (dtype, rank,
 * dims, offset, bytes) and the data, each 64-byte aligned.  Reading one
 * checks every offset and size against the payload: the worker runs a
 * user's code, so what it sends back is untrusted.  An empty tensor
 * (data type UNDEFINED, rank 0, no data: an optional input not given)
 * travels as such.
 */
#ifndef MFS_WORKER_PROTO_H
#define MFS_WORKER_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "tensor.h"

enum { MFS_WOP_INIT = 1, MFS_WOP_EXEC, MFS_WOP_QUIT, MFS_WOP_REPLY };

typedef struct mfs_wmsg {
	uint32_t op;
	int32_t status;        /* REPLY: 0 or non-zero (then text says why) */
	uint64_t len;          /* payload bytes at offset 0 of the shared memory */
	char text[1024];       /* NUL-terminated */
} mfs_wmsg;

/* The shared memory: a memfd and its mapping. */
typedef struct mfs_shm {
	int fd;                /* -1: none */
	void *base;
	size_t size;
} mfs_shm;

/* A new, empty memfd (fd close-on-exec). */
int mfs_shm_create(mfs_shm *s, mfs_error *err);
/* Adopt a memfd received from the peer. */
int mfs_shm_adopt(mfs_shm *s, int fd, mfs_error *err);
/* Make at least need bytes mapped, growing the file if it is smaller. */
int mfs_shm_reserve(mfs_shm *s, size_t need, mfs_error *err);
/* Map the file's current size (the peer may have grown it); -EPROTO when
 * it is smaller than need. */
int mfs_shm_sync(mfs_shm *s, size_t need, mfs_error *err);
void mfs_shm_release(mfs_shm *s);

/* Send msg, with fd (>= 0) attached.  -EPIPE when the peer is gone. */
int mfs_wire_send(int sock, const mfs_wmsg *msg, int fd, mfs_error *err);
/* Receive one message, and an attached fd into *fd when fd is not NULL
 * (-1 if none).  -EPIPE at end of file (the peer died or closed),
 * -EPROTO for a message of the wrong size. */
int mfs_wire_recv(int sock, mfs_wmsg *msg, int *fd, mfs_error *err);

/* Write n tensors as a table at offset 0 of s (growing it); *len gets the
 * payload size. */
int mfs_wire_put_tensors(mfs_shm *s, const mfs_tensor *t, int n, uint64_t *len,
			 mfs_error *err);
/* Read a table of exactly n tensors from the first len bytes of s.  With
 * copy, each out[i] owns a copy of its data; without, out[i].data points
 * into s (valid until s changes).  -EPROTO naming what is wrong. */
int mfs_wire_get_tensors(const mfs_shm *s, uint64_t len, mfs_tensor *out, int n,
			 int copy, mfs_error *err);

#endif

/* worker_proto.h - how the daemon and a custom backend's worker process
 * talk (docs/BACKENDS.md, "Isolation").
 *
 * Control: fixed-size messages on a SOCK_SEQPACKET socketpair (a message
 * is never split or merged; a dead peer reads as end of file).
 * Data: one memfd per worker, created by the daemon (close-on-exec, mode
 * 0600, no seals allowed: the worker cannot lock the daemon out of it) and
 * passed once with the INIT message (SCM_RIGHTS).  The daemon writes a
 * request's payload at offset 0, the worker its answer at offset 0
 * (growing the file when it needs to); each message says how many bytes
 * of it count.
 *
 * The worker maps the file; the daemon never does: it reads and writes it
 * with pread and pwrite.  The worker runs a user's code, which may shrink
 * the file at any moment (docs/SECURITY.md): a mapping would turn that
 * into SIGBUS in the daemon, a pread turns it into a short read, refused
 * as a malformed answer.
 *
 *   daemon -> worker   INIT  payload: JSON (library, model, version,
 *                            version_dir, instance, config in Triton's JSON)
 *                      EXEC  payload: the inputs' tensor table
 *                      QUIT
 *   worker -> daemon   REPLY status 0 with the outputs' tensor table (EXEC)
 *                      or nothing (INIT); status != 0 with text: the reason
 *
 * Every daemon message carries a sequence number the REPLY repeats: an
 * answer out of turn (a stray message a backend wrote on the socket) is a
 * protocol error, never taken for the next request's answer.
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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "tensor.h"

enum { MFS_WOP_INIT = 1, MFS_WOP_EXEC, MFS_WOP_QUIT, MFS_WOP_REPLY };

typedef struct mfs_wmsg {
	uint32_t op;
	int32_t status;        /* REPLY: 0 or non-zero (then text says why) */
	uint64_t seq;          /* REPLY: the seq of the message it answers */
	uint64_t len;          /* payload bytes at offset 0 of the shared memory */
	char text[1024];       /* NUL-terminated */
} mfs_wmsg;

/* The shared memory: a memfd, mapped on the worker's side only. */
typedef struct mfs_shm {
	int fd;                /* -1: none */
	void *base;            /* the mapping (worker); NULL in the daemon */
	size_t size;           /* bytes mapped */
	bool mapped;           /* the worker's side: accessed through base */
} mfs_shm;

/* The daemon's side: a new, empty memfd (close-on-exec, mode 0600, never
 * mapped here: accessed with pread/pwrite). */
int mfs_shm_create(mfs_shm *s, mfs_error *err);
/* The worker's side: adopt the memfd received from the daemon and map it. */
int mfs_shm_adopt(mfs_shm *s, int fd, mfs_error *err);
/* Grow the file to at least need bytes if it is smaller (the worker's
 * side: and map them). */
int mfs_shm_reserve(mfs_shm *s, size_t need, mfs_error *err);
/* Worker: map the file's current size (the daemon may have grown it);
 * -EPROTO when it is smaller than need. */
int mfs_shm_sync(mfs_shm *s, size_t need, mfs_error *err);
/* n bytes at off, either side.  -EPROTO when the file ends before them
 * (the peer shrank it). */
int mfs_shm_write(mfs_shm *s, uint64_t off, const void *p, size_t n, mfs_error *err);
int mfs_shm_read(const mfs_shm *s, uint64_t off, void *p, size_t n, mfs_error *err);
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
 * copy, each out[i] owns a copy of its data; without (a mapped s only),
 * out[i].data points into s (valid until s changes).  -EPROTO naming what
 * is wrong; nothing is allocated then. */
int mfs_wire_get_tensors(const mfs_shm *s, uint64_t len, mfs_tensor *out, int n,
			 int copy, mfs_error *err);

#endif

/* bigbuf.h - large buffers kept for reuse.
 *
 * A 100 MB file written or read through the filesystem needs a buffer of
 * its size per request (the write buffer that becomes the request's
 * input, the `.npy` encoding of an output).  Fresh memory is zeroed by
 * the kernel as it is first touched: after the copies went, that zeroing
 * was 59% of the daemon's profile on the 100 MB path (docs/PERFORMANCE.md).
 * Medium ones (100 KB-4 MB) too: below glibc's mmap threshold they come
 * from the heap, whose top is given back to the kernel at free, so each
 * request faulted its buffers in again (a 600 KB input cycle faulted 115
 * pages, a 2.8 MB one 2,059).
 * Blocks of MFS_BIGBUF_MIN or more given back with mfs_bigbuf_free are
 * kept (at most MFS_BIGBUF_KEEP of MFS_BIGBUF_LARGE or more and
 * MFS_BIGBUF_KEEP_MEDIUM smaller ones, and only while --max-memory has room:
 * a kept block is counted in the budget like a request's bytes) and
 * handed out again by mfs_bigbuf_alloc for a size they fit without
 * wasting more than half.  Blocks are ordinary malloc blocks: free()
 * and realloc() work on them too (a block so freed is simply not kept).
 * A kept block not taken again within MFS_BIGBUF_IDLE_NS is freed by
 * mfs_bigbuf_trim (the daemon's reaper calls it every second), so an
 * idle daemon gives the memory of its last large request back.
 * Thread-safe.
 */
#ifndef MFS_BIGBUF_H
#define MFS_BIGBUF_H

#include <stddef.h>
#include <stdint.h>

#define MFS_BIGBUF_MIN ((size_t)64 << 10)
#define MFS_BIGBUF_LARGE ((size_t)4 << 20)
#define MFS_BIGBUF_KEEP 4          /* blocks of MFS_BIGBUF_LARGE or more */
#define MFS_BIGBUF_KEEP_MEDIUM 8   /* blocks under MFS_BIGBUF_LARGE */
#define MFS_BIGBUF_IDLE_NS (2ull * 1000000000ull)

/* n bytes (not zeroed): a kept block when one fits, else malloc'd (and
 * advised for huge pages, hugemem.h).  NULL when out of memory. */
void *mfs_bigbuf_alloc(size_t n);

/* Give p back (NULL is fine): kept when large and there is room, else
 * freed. */
void mfs_bigbuf_free(void *p);

/* Free the kept blocks given back at least idle_ns ago (0: all);
 * returns how many were freed. */
int mfs_bigbuf_trim(uint64_t idle_ns);

/* Free every kept block and give its bytes back to the budget (at
 * shutdown; tests).  Returns how many there were. */
int mfs_bigbuf_drain(void);

#endif

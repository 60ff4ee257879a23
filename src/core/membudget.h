/* membudget.h - the daemon-wide budget for the bytes requests hold
 * (SPEC.md section 10, --max-memory; docs/SECURITY.md).
 *
 * Without it, four clients each holding a 1000 MiB request took the
 * daemon to 5.1 GB (issue 17).  Counted: the buffers of files being
 * written (fs/) and what requests keep between writes and reads (the
 * files' bytes, decoded inputs, outputs, encoded outputs; request.c).
 * Only a write that grows a buffer is refused (ENOSPC): memory already
 * decoded or computed is counted, never failed, so the count may pass
 * the limit by one request's decode, and the next write is refused.
 *
 * One budget per process (a daemon serves one mount); thread-safe.
 */
#ifndef MFS_MEMBUDGET_H
#define MFS_MEMBUDGET_H

#include <stdint.h>

#include "error.h"

/* Set the limit (0: none) and make the allocator return large buffers
 * to the system when they are freed (glibc: buffers of 1 MiB and more
 * are mmap'd; the heap is trimmed after large releases). */
void mfs_membudget_init(uint64_t limit);
uint64_t mfs_membudget_limit(void);
uint64_t mfs_membudget_used(void);

/* Half of the machine's memory (MemTotal in /proc/meminfo); 1 GiB when
 * that cannot be read. */
uint64_t mfs_membudget_default(void);

/* Take n bytes before allocating them: -ENOSPC, nothing taken, and err
 * naming the limit, when the count would pass it. */
int mfs_membudget_take(uint64_t n, mfs_error *err);
/* Count n bytes already allocated (never refused). */
void mfs_membudget_force(uint64_t n);
/* Give n bytes back; after each 32 MiB given back the heap's free top
 * is returned to the system (malloc_trim). */
void mfs_membudget_give(uint64_t n);

#endif

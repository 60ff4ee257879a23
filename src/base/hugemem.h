/* hugemem.h - large buffers on transparent huge pages.
 *
 * A 100 MB tensor or file buffer is fresh memory (glibc maps every block
 * above its mmap threshold anew); touching it took 25,000 4 KiB page
 * faults, which profiled as a third of the daemon's time on the 100 MB
 * path (docs/PERFORMANCE.md).  Advised for huge pages, the same buffer
 * takes about 50 faults of 2 MiB.  Works where the kernel's THP mode is
 * "madvise" (Debian's default) or "always"; does nothing under "never".
 */
#ifndef MFS_HUGEMEM_H
#define MFS_HUGEMEM_H

#include <stddef.h>

/* Below this a buffer is left alone: the advice would cover nothing. */
#define MFS_HUGEMEM_MIN ((size_t)4 << 20)

/* Ask for huge pages for the whole 2 MiB pages inside [p, p + n) of a
 * block just allocated by malloc/calloc/realloc, before it is touched
 * (pages already touched stay as they are).  No effect for n below
 * MFS_HUGEMEM_MIN or p NULL; never fails (it is advice). */
void mfs_hugemem_advise(void *p, size_t n);

#endif

/* hugemem.c - see hugemem.h. */
#include "hugemem.h"

#include <stdint.h>
#include <sys/mman.h>

#define HUGE_PAGE ((uintptr_t)2 << 20)

void mfs_hugemem_advise(void *p, size_t n)
{
	if (!p || n < MFS_HUGEMEM_MIN)
		return;
	/* Only whole huge pages inside the block: the advice must not
	 * reach memory that is not the caller's. */
	uintptr_t lo = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
	uintptr_t hi = ((uintptr_t)p + n) & ~(HUGE_PAGE - 1);
	if (hi > lo)
		(void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
}

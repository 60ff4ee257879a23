/* malloc_policy.c - see malloc_policy.h. */
#include <malloc.h>
#include <stdlib.h>

#include "malloc_policy.h"

int mfs_malloc_keep_pages(void)
{
	if (getenv("MALLOC_MMAP_THRESHOLD_") || getenv("MALLOC_TRIM_THRESHOLD_") ||
	    getenv("GLIBC_TUNABLES"))
		return 0;
	return mallopt(M_MMAP_THRESHOLD, (int)MFS_MALLOC_MMAP_MIN) == 1 &&
	       mallopt(M_TRIM_THRESHOLD, (int)MFS_MALLOC_TRIM_KEEP) == 1;
}

/* openmp_policy.c - openmp_policy.h: a bounded spin, chosen at start. */
#include <stdlib.h>
#include <unistd.h>

#include "openmp_policy.h"

void mfs_openmp_prefer_bounded_spin(char **argv)
{
	if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT"))
		return;
	if (setenv("GOMP_SPINCOUNT", MFS_GOMP_SPINCOUNT, 1))
		return;
	execv("/proc/self/exe", argv);
	/* exec failed: carry on with the library's default policy */
	unsetenv("GOMP_SPINCOUNT");
}

/* installed_backends.c - see installed_backends.h. */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "installed_backends.h"

char *mfs_installed_backend_dir(void)
{
	char exe[PATH_MAX], guess[PATH_MAX + 32];
	struct stat st;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	snprintf(guess, sizeof(guess), "%s/../lib/modelfs/backends", dirname(exe));
	char *abs = realpath(guess, NULL);
	if (abs && (stat(abs, &st) != 0 || !S_ISDIR(st.st_mode))) {
		free(abs);
		abs = NULL;
	}
	return abs;
}

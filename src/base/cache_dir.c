/* cache_dir.c - see cache_dir.h. */
#include "cache_dir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char base[1024];

void mfs_cache_set_base(const char *dir)
{
	snprintf(base, sizeof(base), "%s", dir ? dir : "");
}

bool mfs_cache_path(const char *sub, char *buf, size_t size)
{
	const char *env;
	int n;

	if (base[0])
		n = snprintf(buf, size, "%s", base);
	else if ((env = getenv("XDG_CACHE_HOME")) && *env)
		n = snprintf(buf, size, "%s/modelfs", env);
	else if ((env = getenv("HOME")) && *env)
		n = snprintf(buf, size, "%s/.cache/modelfs", env);
	else if (geteuid() == 0)
		n = snprintf(buf, size, "/var/cache/modelfs");
	else
		return false;
	if (n < 0 || (size_t)n >= size)
		return false;
	if (sub && *sub) {
		int m = snprintf(buf + n, size - (size_t)n, "/%s", sub);
		if (m < 0 || (size_t)(n + m) >= size)
			return false;
	}
	return true;
}

int mfs_make_dirs(const char *path)
{
	char tmp[1024];
	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *p = tmp + 1; *p; p++) {
		if (*p == '/') {
			*p = '\0';
			if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
				return -1;
			*p = '/';
		}
	}
	return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* cache_dir.h - where modelfs keeps what it can always rebuild: the
 * OpenCL program binaries (exec/opencl/ocl_device.h) and the engine
 * choices of KIND_AUTO (src/core/route_cache.h).
 *
 * The base directory: --cache-dir (mfs_cache_set_base), else
 * $XDG_CACHE_HOME/modelfs, else $HOME/.cache/modelfs, else
 * /var/cache/modelfs when running as root, else none (nothing is kept).
 * Each user of the cache has its own subdirectory of the base.
 */
#ifndef MFS_CACHE_DIR_H
#define MFS_CACHE_DIR_H

#include <stdbool.h>
#include <stddef.h>

/* --cache-dir: dir (copied) becomes the base; NULL or "" goes back to
 * the default.  Call before any thread uses the cache. */
void mfs_cache_set_base(const char *dir);

/* "BASE/sub" into buf (or BASE when sub is NULL); false when there is no
 * cache directory or the path does not fit. */
bool mfs_cache_path(const char *sub, char *buf, size_t size);

/* mkdir -p path (mode 0755): 0, or -1 with errno set. */
int mfs_make_dirs(const char *path);

#endif

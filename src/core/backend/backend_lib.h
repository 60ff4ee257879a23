/* backend_lib.h - open a custom backend's shared library and check that
 * it speaks this modelfs's ABI (include/modelfs_backend.h).
 *
 * Used inside the worker process (worker_serve.c), never in the daemon:
 * a library's constructors and code run only where a crash costs one
 * worker.  Also the unit tests' way to call a backend directly. */
#ifndef MFS_BACKEND_LIB_H
#define MFS_BACKEND_LIB_H

#include "error.h"
#include "modelfs_backend.h"

typedef struct mfs_backend_lib mfs_backend_lib;

/* dlopen path and read its `modelfs_backend` object.  -ENOENT when the
 * library cannot be opened (dlerror's text), -EINVAL when it exports no
 * such object, its abi_version differs from MODELFS_BACKEND_ABI_VERSION
 * ("... declares ABI version 99, this modelfs speaks version 1") or it
 * lacks init or execute.  Every message names the library's path. */
int mfs_backend_lib_open(const char *path, mfs_backend_lib **out, mfs_error *err);

/* The library's table (borrowed; valid until close). */
const modelfs_backend_api *mfs_backend_lib_api(const mfs_backend_lib *lib);

/* dlclose; NULL is fine. */
void mfs_backend_lib_close(mfs_backend_lib *lib);

#endif

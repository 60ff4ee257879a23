/* installed_backends.h - where `make install` puts custom backends.
 *
 * A custom backend (docs/BACKENDS.md) is looked for in its model's
 * version directory, then in --backend-dir.  Without --backend-dir the
 * daemon and `modelfs run` use the installed folder, found from the
 * binary's own place so that any PREFIX works: BINDIR/../lib/modelfs/
 * backends (/usr/lib/modelfs/backends for the .deb), as Triton has its
 * default --backend-directory.  A binary run from the source tree has
 * no such folder and so no default. */
#ifndef MFS_INSTALLED_BACKENDS_H
#define MFS_INSTALLED_BACKENDS_H

/* The installed backend folder, absolute and malloc'd; NULL when this
 * binary has none (or memory ran out: then no default either). */
char *mfs_installed_backend_dir(void);

#endif

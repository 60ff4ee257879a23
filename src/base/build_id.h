/* build_id.h - an identity of the running modelfs build, for what is kept
 * on disk and is only valid for the build that wrote it (KIND_AUTO's
 * stored engine choices, src/core/route_cache.h): an upgrade or a rebuild
 * makes them misses, not stale answers.
 *
 * The main program's GNU build ID (the linker's hash of the whole output,
 * NT_GNU_BUILD_ID, as hex), so it changes with any change to the code,
 * the embedded OpenCL kernels or the compiler.  A program linked without
 * one: "exe-SIZE-MTIME" of /proc/self/exe (a rebuild or an install
 * changes it too), else "unknown".
 */
#ifndef MFS_BUILD_ID_H
#define MFS_BUILD_ID_H

/* The identity, computed once; a static string. */
const char *mfs_build_id(void);

#endif

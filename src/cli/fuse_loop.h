/* fuse_loop.h - the threads that serve a FUSE session's device.
 *
 * N threads each block in read() on the session's device.  The kernel
 * wakes exactly one reader per request (an exclusive wait), so a request
 * costs one wake-up, as in libfuse's own multi-threaded loop; a loop of
 * threads poll()ing the device woke every poller per request (the
 * seventh session's loop: 9 context switches and ~2x the daemon CPU of
 * the bare file system per infer round trip, docs/PERFORMANCE.md).
 *
 * Unlike fuse_session_loop_mt on libfuse 3.14 it can be stopped from any
 * thread: mfs_fuse_loop_stop() sets a flag and sends the threads that are
 * waiting on the device a signal (SIGRTMIN+4, whose handler does nothing and
 * does not restart the read), again every 10 ms until each has left, so
 * a signal that lands just before a thread enters read() is not lost.  A
 * thread that is serving a request finishes it first; it is never sent
 * the signal, so no other system call of an operation sees EINTR.  The
 * loop also ends when the device does (unmounted from outside: ENODEV).
 */
#ifndef MFS_FUSE_LOOP_H
#define MFS_FUSE_LOOP_H

#include <fuse_lowlevel.h>

typedef struct mfs_fuse_loop mfs_fuse_loop;

/* Start n threads (1..64) serving se.  NULL when none could start. */
mfs_fuse_loop *mfs_fuse_loop_start(struct fuse_session *se, int n);

/* Wait until every thread has left (after mfs_fuse_loop_stop, or the
 * device ended). */
void mfs_fuse_loop_join(mfs_fuse_loop *l);

/* Free a joined loop (NULL: nothing).  Until then stop may still be
 * called: it does nothing more. */
void mfs_fuse_loop_free(mfs_fuse_loop *l);

/* Ask the threads to leave (any thread, more than once, also from one of
 * the loop's own threads).  Returns at once. */
void mfs_fuse_loop_stop(mfs_fuse_loop *l);

#endif

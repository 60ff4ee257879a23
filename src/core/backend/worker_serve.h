/* worker_serve.h - the worker process of a custom backend: the side of
 * worker_proto.h that opens the library and calls it.
 *
 * `modelfs --backend-worker` (a hidden mode the daemon spawns; see
 * backend_worker.h) runs mfs_worker_serve on fd 3.  It answers INIT by
 * opening the library (ABI check, backend_lib.h) and calling its init,
 * then every EXEC by calling execute, until QUIT or the daemon's end of
 * the socket goes away; then finalize, and return. */
#ifndef MFS_WORKER_SERVE_H
#define MFS_WORKER_SERVE_H

/* The fd the daemon hands the worker its socket on. */
#define MFS_WORKER_FD 3

/* The hidden command-line flag of the worker mode. */
#define MFS_WORKER_FLAG "--backend-worker"

/* Serve on sock until told to stop; returns the process's exit status
 * (0 after QUIT or the daemon's end of file, 1 on a protocol error). */
int mfs_worker_serve(int sock);

#endif

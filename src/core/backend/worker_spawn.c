/* worker_spawn.c - see worker_spawn.h. */
#include "worker_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "worker_serve.h"

extern char **environ;

typedef struct job {
	const char *program;
	int sock;
	bool quiet;
	pid_t pid;
	int rc;                /* posix_spawn's */
	bool done;
} job;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static job *pending;           /* one at a time, under lock */
static bool spawner_up;        /* under lock */

static int spawn_now(job *j)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	/* argv[0] "modelfs": what ps shows, whatever the program path. */
	char *argv[] = { (char *)"modelfs", (char *)MFS_WORKER_FLAG, NULL };
	int rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, j->sock, MFS_WORKER_FD);
	/* The worker reads and writes nothing on stdin and stdout.  Its
	 * stderr (a backend's own messages, a sanitizer's report) is the
	 * daemon's, unless the daemon will detach (mfs_worker_quiet_stderr):
	 * a worker holding the terminal or pipe it was started from would
	 * keep `$(modelfs ...)` and ssh waiting forever. */
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	if (j->quiet || fcntl(2, F_GETFD) < 0)
		posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	/* Nothing else of the daemon's (the /dev/fuse fd, other workers'
	 * sockets) goes to the worker. */
	posix_spawn_file_actions_addclosefrom_np(&fa, MFS_WORKER_FD + 1);
	/* The daemon ignores SIGPIPE and its threads may block signals; the
	 * worker starts with every signal at its default and none blocked,
	 * so that a backend dies of what would kill a program of its own.
	 * Its own process group: what the backend starts can be killed with
	 * it (a child holding the socket would hide the worker's death), and
	 * a terminal's ^C reaches the daemon, which stops its workers. */
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
					POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setpgroup(&attr, 0);
	rc = posix_spawn(&j->pid, j->program, &fa, &attr, argv, environ);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	return rc;
}

static void *spawner(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	for (;;) {
		while (!pending || pending->done)
			pthread_cond_wait(&cond, &lock);
		job *j = pending;
		pthread_mutex_unlock(&lock);
		j->rc = spawn_now(j);
		pthread_mutex_lock(&lock);
		j->done = true;
		pending = NULL;
		pthread_cond_broadcast(&cond);
	}
	return NULL;
}

/* The spawner thread, started once (under lock). */
static int start_spawner(void)
{
	pthread_attr_t a;
	pthread_t t;
	sigset_t all, old;
	int rc;

	if (spawner_up)
		return 0;
	/* It takes no signal: the daemon's handlers run on other threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &a, spawner, NULL);
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc == 0)
		spawner_up = true;
	return rc;
}

int mfs_worker_spawn(const char *program, int child_sock, bool quiet_stderr, pid_t *pid,
		     int *pidfd, mfs_error *err)
{
	job j = { .program = program, .sock = child_sock, .quiet = quiet_stderr };
	int rc;

	*pid = 0;
	*pidfd = -1;
	pthread_mutex_lock(&lock);
	rc = start_spawner();
	if (rc == 0) {
		while (pending)
			pthread_cond_wait(&cond, &lock);
		pending = &j;
		pthread_cond_broadcast(&cond);
		while (!j.done)
			pthread_cond_wait(&cond, &lock);
		rc = j.rc;
	}
	pthread_mutex_unlock(&lock);
	if (rc != 0)
		return mfs_fail(err, EIO, "cannot start a worker (%s): %s", program, strerror(rc));
	/* Our child, not reaped yet: its pid cannot be reused before
	 * pidfd_open, which is then race-free. */
	*pidfd = pidfd_open(j.pid, 0);
	if (*pidfd < 0) {
		int e = errno;
		kill(j.pid, SIGKILL);
		while (waitpid(j.pid, NULL, 0) < 0 && errno == EINTR)
			;
		return mfs_fail(err, EIO, "cannot watch the worker (pidfd_open): %s", strerror(e));
	}
	*pid = j.pid;
	return 0;
}

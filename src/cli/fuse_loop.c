/* fuse_loop.c - the threads that serve a FUSE session's device
 * (fuse_loop.h). */
#include "fuse_loop.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_THREADS 64
#define KICK_NS 10000000L    /* signal the waiting threads again after 10 ms */
/* A real-time signal: LLVM (under PoCL) takes SIGUSR2 over whenever it
 * compiles a kernel, with a handler that removes its files and kills the
 * process. */
#define WAKE_SIGNAL (SIGRTMIN + 4)

typedef struct slot {
	struct mfs_fuse_loop *l;
	pthread_t th;
	atomic_bool waiting;         /* in, or about to enter, the device read */
} slot;

struct mfs_fuse_loop {
	struct fuse_session *se;
	int n;
	atomic_bool stop;
	pthread_mutex_t lock;
	pthread_cond_t cond;         /* a thread left, or stop was asked */
	int running;                 /* under lock */
	slot slots[MAX_THREADS];
};

/* Only interrupts the device read (no SA_RESTART). */
static void on_wake(int sig)
{
	(void)sig;
}

static void install_once(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_wake;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0;
	sigaction(WAKE_SIGNAL, &sa, NULL);
}

static void install_wake_handler(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, install_once);
}

static void *serve(void *arg)
{
	slot *s = arg;
	mfs_fuse_loop *l = s->l;
	struct fuse_buf buf = { .mem = NULL };
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, WAKE_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	for (;;) {
		atomic_store(&s->waiting, true);
		if (atomic_load(&l->stop) || fuse_session_exited(l->se))
			break;
		int res = fuse_session_receive_buf(l->se, &buf);
		atomic_store(&s->waiting, false);
		if (res == -EINTR || res == -EAGAIN)
			continue;
		if (res <= 0) {
			/* 0: the device ended (unmounted from outside);
			 * < 0: it cannot be read.  Either way the session is
			 * over for every thread. */
			if (res < 0)
				fuse_session_exit(l->se);
			break;
		}
		fuse_session_process_buf(l->se, &buf);
	}
	atomic_store(&s->waiting, false);
	free(buf.mem);
	mfs_fuse_loop_stop(l);
	pthread_mutex_lock(&l->lock);
	l->running--;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

mfs_fuse_loop *mfs_fuse_loop_start(struct fuse_session *se, int n)
{
	if (n < 1 || n > MAX_THREADS)
		return NULL;
	mfs_fuse_loop *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	install_wake_handler();
	l->se = se;
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
	for (int i = 0; i < n; i++) {
		l->slots[i].l = l;
		pthread_mutex_lock(&l->lock);
		l->running++;
		pthread_mutex_unlock(&l->lock);
		if (pthread_create(&l->slots[i].th, NULL, serve, &l->slots[i]) != 0) {
			pthread_mutex_lock(&l->lock);
			l->running--;
			pthread_mutex_unlock(&l->lock);
			break;
		}
		l->n++;
	}
	if (l->n == 0) {
		pthread_mutex_destroy(&l->lock);
		pthread_cond_destroy(&l->cond);
		free(l);
		return NULL;
	}
	return l;
}

void mfs_fuse_loop_stop(mfs_fuse_loop *l)
{
	atomic_store(&l->stop, true);
	pthread_mutex_lock(&l->lock);
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
}

void mfs_fuse_loop_join(mfs_fuse_loop *l)
{
	pthread_mutex_lock(&l->lock);
	while (l->running > 0) {
		if (atomic_load(&l->stop)) {
			/* Not yet joined, so every pthread_t is still valid. */
			for (int i = 0; i < l->n; i++)
				if (atomic_load(&l->slots[i].waiting))
					pthread_kill(l->slots[i].th, WAKE_SIGNAL);
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += KICK_NS;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&l->cond, &l->lock, &ts);
		} else {
			pthread_cond_wait(&l->cond, &l->lock);
		}
	}
	pthread_mutex_unlock(&l->lock);
	for (int i = 0; i < l->n; i++)
		pthread_join(l->slots[i].th, NULL);
	l->n = 0;
}

void mfs_fuse_loop_free(mfs_fuse_loop *l)
{
	if (!l)
		return;
	pthread_mutex_destroy(&l->lock);
	pthread_cond_destroy(&l->cond);
	free(l);
}

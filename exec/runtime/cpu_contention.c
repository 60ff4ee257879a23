/* cpu_contention.c - cpu_contention.h: one thread while the cores are busy. */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cpu_contention.h"
#include "log.h"

bool mfs_contention_active(const mfs_contention *c, int64_t now_ns)
{
	return c->marked && now_ns < c->until_ns;
}

void mfs_contention_update(mfs_contention *c, uint64_t wait_ns,
			   uint64_t wall_ns, int threads, int64_t now_ns)
{
	bool waited = wait_ns >= MFS_CONTENTION_MIN_WAIT_NS &&
		      (double)wait_ns >= MFS_CONTENTION_SHARE * (double)wall_ns;
	bool active = mfs_contention_active(c, now_ns);

	if (!waited) {
		/* the whole team ran without waiting: the cores are free */
		if (threads > 1 && !active) {
			c->marked = false;
			c->hold_ns = 0;
			c->strikes = 0;
		}
		return;
	}
	if (active) {
		/* still busy while on one thread: keep the mark */
		c->until_ns = now_ns + c->hold_ns;
		return;
	}
	/* A first mark needs MFS_CONTENTION_STRIKES team runs in a row that
	 * waited (one wait is often a kernel worker's moment); after a mark
	 * expired, one run that waits again shows a steady load. */
	if (!c->marked && ++c->strikes < MFS_CONTENTION_STRIKES)
		return;
	c->strikes = 0;
	if (!c->marked)
		c->hold_ns = MFS_CONTENTION_HOLD_NS;
	else if (c->hold_ns < MFS_CONTENTION_MAX_HOLD_NS / 2)
		c->hold_ns *= 2;
	else
		c->hold_ns = MFS_CONTENTION_MAX_HOLD_NS;
	c->marked = true;
	c->until_ns = now_ns + c->hold_ns;
}

/* ---- the process-wide state ---- */

static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static mfs_contention state;
static bool reported;      /* this busy spell's first mark was logged */

/* Each thread keeps its schedstat file open (a run reads it twice); the
 * key's destructor closes it when the thread ends. */
static pthread_key_t fd_key;
static pthread_once_t fd_once = PTHREAD_ONCE_INIT;
static bool have_key;

static void close_fd(void *p)
{
	close((int)(intptr_t)p - 1);
}

static void make_key(void)
{
	have_key = pthread_key_create(&fd_key, close_fd) == 0;
}

static int schedstat_fd(void)
{
	void *p;
	int fd;

	pthread_once(&fd_once, make_key);
	if (!have_key)
		return -1;
	p = pthread_getspecific(fd_key);
	if (p)
		return (int)(intptr_t)p - 1;
	fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (pthread_setspecific(fd_key, (void *)(intptr_t)(fd + 1))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The calling thread's run-queue delay so far: the second field of
 * "<on-cpu ns> <waiting ns> <timeslices>". */
static bool read_wait(uint64_t *wait_ns)
{
	char buf[96];
	unsigned long long on, wait;
	int fd = schedstat_fd();
	ssize_t n;

	if (fd < 0)
		return false;
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	if (sscanf(buf, "%llu %llu", &on, &wait) != 2)
		return false;
	*wait_ns = wait;
	return true;
}

static int64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* MFS_CONTENTION=0 turns the marking off, for A/B runs. */
static bool enabled(void)
{
	static int on = -1;
	if (on < 0) {
		const char *v = getenv("MFS_CONTENTION");
		on = !(v && v[0] == '0');
	}
	return on;
}

void mfs_cpu_sample_begin(mfs_cpu_sample *s)
{
	s->ok = enabled() && read_wait(&s->wait_ns);
	s->start_ns = now_ns();
}

void mfs_cpu_sample_end(const mfs_cpu_sample *s, int threads)
{
	uint64_t wait;
	int64_t end;

	if (!s->ok || !read_wait(&wait))
		return;
	end = now_ns();
	pthread_mutex_lock(&state_lock);
	bool was = mfs_contention_active(&state, end);
	mfs_contention_update(&state, wait - s->wait_ns,
			      (uint64_t)(end - s->start_ns), threads, end);
	bool marked = !was && mfs_contention_active(&state, end);
	int64_t hold = state.hold_ns;
	/* The first mark of a busy spell at info, so that a slow daemon's log
	 * says why; the marks that follow it (one per hold, 50 ms doubling
	 * to 2 s, until a team run no longer waits) at debug. */
	bool first = marked && !reported;
	if (marked)
		reported = true;
	else if (!state.marked)
		reported = false;
	pthread_mutex_unlock(&state_lock);
	if (marked)
		mfs_log(first ? MFS_LOG_INFO : MFS_LOG_DEBUG,
			"CPU contention: a run on %d threads waited %.2f of %.2f ms for a CPU; runs take one thread for %lld ms",
			threads, (double)(wait - s->wait_ns) / 1e6,
			(double)(end - s->start_ns) / 1e6, (long long)(hold / 1000000));
}

bool mfs_cpu_contended(void)
{
	bool on;
	pthread_mutex_lock(&state_lock);
	on = mfs_contention_active(&state, now_ns());
	pthread_mutex_unlock(&state_lock);
	return on;
}

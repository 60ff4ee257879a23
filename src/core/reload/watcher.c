/* watcher.c - see watcher.h.
 *
 * polling: a signature of each model directory, compared every
 * poll_secs / 2 seconds.
 *
 * inotify: every directory of the repository is watched (recursively);
 * a directory created or moved in is watched at once (and its model
 * marked changed, so the reloader rescans it from the disk: files written
 * before the watch was in place are not missed).  IN_Q_OVERFLOW: a new
 * inotify instance watches the whole repository and every model is marked.  IN_MODIFY is
 * watched too so that a long copy keeps its model "busy" for the
 * reloader's quiet period.
 *
 * libinotifytools' next_event takes whole seconds, so the thread checks
 * for stop once a second.
 */
#include "watcher.h"

#include <dirent.h>
#include <errno.h>
#include <inotifytools/inotify.h>
#include <inotifytools/inotifytools.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "log.h"
#include "repo.h"

#define WATCH_MASK (IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM | \
		    IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF)
#define MAX_DEPTH 16

typedef struct poll_entry {
	char *name;
	unsigned long long sig;
} poll_entry;

struct mfs_watcher {
	mfs_watcher_conf conf;
	char *repo;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool ready, stop;          /* under lock */
	int start_rc;
	char start_msg[256];
	poll_entry *polled;        /* poll mode: the last look */
	int n_polled;
	uint32_t moved_cookie;     /* inotify: the last directory moved away */
	char moved_from[PATH_MAX];
};

static int inotify_users;      /* atomic: libinotifytools is process-global */

/* ---- signatures ---- */

static unsigned long long mix(unsigned long long h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

static unsigned long long name_hash(const char *s)
{
	unsigned long long h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* Order-independent: a sum of one hash per entry. */
static unsigned long long tree_sig(const char *path, int depth)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return 0;
	unsigned long long h = mix(name_hash(path) ^ mix((unsigned long long)st.st_mtim.tv_sec * 1000000000ULL +
							(unsigned long long)st.st_mtim.tv_nsec) ^
				   mix((unsigned long long)st.st_size + 0x9e37) ^ mix((unsigned long long)st.st_ino) ^
				   (unsigned long long)st.st_mode);
	if (!S_ISDIR(st.st_mode) || depth >= MAX_DEPTH)
		return h | 1;
	DIR *d = opendir(path);
	if (!d)
		return h | 1;
	struct dirent *e;
	char sub[PATH_MAX];
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name) >= sizeof(sub))
			continue;
		h += tree_sig(sub, depth + 1);
	}
	closedir(d);
	return h | 1;
}

unsigned long long mfs_tree_signature(const char *path)
{
	return tree_sig(path, 0);
}

/* ---- polling ---- */

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const poll_entry *)a)->name, ((const poll_entry *)b)->name);
}

static void free_entries(poll_entry *p, int n)
{
	for (int i = 0; i < n; i++)
		free(p[i].name);
	free(p);
}

/* Every model directory of the repository with its signature, sorted. */
static int poll_look(mfs_watcher *w, poll_entry **out, int *n)
{
	DIR *d = opendir(w->repo);
	if (!d)
		return -errno;
	poll_entry *p = NULL;
	int np = 0, cap = 0;
	struct dirent *e;
	char sub[PATH_MAX];
	while ((e = readdir(d))) {
		if (!mfs_repo_model_name_ok(e->d_name))
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", w->repo, e->d_name) >= sizeof(sub))
			continue;
		if (np == cap) {
			cap = cap ? cap * 2 : 16;
			poll_entry *q = realloc(p, (size_t)cap * sizeof(*q));
			if (!q)
				break;
			p = q;
		}
		p[np].name = strdup(e->d_name);
		if (!p[np].name)
			break;
		p[np].sig = mfs_tree_signature(sub);
		np++;
	}
	closedir(d);
	if (np)
		qsort(p, (size_t)np, sizeof(*p), cmp_entry);
	*out = p;
	*n = np;
	return 0;
}

static void poll_compare(mfs_watcher *w)
{
	poll_entry *now;
	int n;
	if (poll_look(w, &now, &n) < 0)
		return;   /* the repository is unreadable for now: look again next time */
	int i = 0, k = 0;
	while (i < w->n_polled || k < n) {
		int c = i == w->n_polled ? 1 : k == n ? -1 : strcmp(w->polled[i].name, now[k].name);
		if (c < 0) {
			w->conf.changed(w->conf.ctx, w->polled[i++].name);          /* removed */
		} else if (c > 0) {
			w->conf.changed(w->conf.ctx, now[k++].name);                /* added */
		} else {
			if (w->polled[i].sig != now[k].sig)
				w->conf.changed(w->conf.ctx, now[k].name);
			i++;
			k++;
		}
	}
	free_entries(w->polled, w->n_polled);
	w->polled = now;
	w->n_polled = n;
}

static void *poll_thread(void *arg)
{
	mfs_watcher *w = arg;
	poll_look(w, &w->polled, &w->n_polled);
	pthread_mutex_lock(&w->lock);
	w->ready = true;
	pthread_cond_broadcast(&w->cond);
	while (!w->stop) {
		/* Look twice per poll_secs: --poll-secs=N promises that a change
		 * is noticed within N s, and with the reloader's quiet period
		 * and the load that still fits in N s for small models
		 * (docs/RELOAD.md).  One look per N s would let a change made
		 * just after a look wait N s, then the quiet period on top. */
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		long long half_ms = (long long)w->conf.poll_secs * 500;
		ts.tv_sec += (time_t)(half_ms / 1000);
		ts.tv_nsec += (long)(half_ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		while (!w->stop && pthread_cond_timedwait(&w->cond, &w->lock, &ts) != ETIMEDOUT)
			;
		if (w->stop)
			break;
		pthread_mutex_unlock(&w->lock);
		poll_compare(w);
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* ---- inotify ---- */

/* The model directory an event is about: the first component of its
 * path below the repository (NULL for the repository itself). */
static const char *model_of(const mfs_watcher *w, const char *full, char *buf, size_t size)
{
	size_t rl = strlen(w->repo);
	if (strncmp(full, w->repo, rl) != 0 || full[rl] != '/')
		return NULL;
	const char *rel = full + rl + 1;
	size_t len = strcspn(rel, "/");
	if (len == 0 || len >= size)
		return NULL;
	memcpy(buf, rel, len);
	buf[len] = '\0';
	return mfs_repo_model_name_ok(buf) ? buf : NULL;
}

static void inotify_event(mfs_watcher *w, struct inotify_event *ev)
{
	if (ev->mask & IN_Q_OVERFLOW) {
		mfs_log_warn("repository '%s': inotify queue overflowed: rescanning everything", w->repo);
		/* Events were lost, so directories may have come and gone
		 * unseen: start over with a fresh inotify instance.  Watching
		 * again on the old one would leak libinotifytools' record of
		 * every directory already watched (found by the e2e test under
		 * ASan). */
		inotifytools_cleanup();
		w->moved_cookie = 0;
		if (!inotifytools_initialize() || !inotifytools_watch_recursively(w->repo, WATCH_MASK))
			mfs_log_error("repository '%s': cannot watch again after the overflow (error %d): "
				      "restart modelfs or use --poll-secs", w->repo, inotifytools_error());
		w->conf.changed(w->conf.ctx, NULL);
		return;
	}
	const char *dir = inotifytools_filename_from_wd(ev->wd);
	if (!dir)
		return;
	char full[PATH_MAX];
	size_t dl = strlen(dir);
	const char *sep = dl && dir[dl - 1] == '/' ? "" : "/";
	if ((size_t)snprintf(full, sizeof(full), "%s%s%s", dir, ev->len ? sep : "", ev->len ? ev->name : "") >=
	    sizeof(full))
		return;
	/* A trailing '/' of a directory watch without a name. */
	size_t fl = strlen(full);
	if (fl > 1 && full[fl - 1] == '/')
		full[fl - 1] = '\0';
	if ((ev->mask & IN_ISDIR) && (ev->mask & IN_MOVED_FROM)) {
		w->moved_cookie = ev->cookie;
		snprintf(w->moved_from, sizeof(w->moved_from), "%s/", full);
	}
	/* A directory renamed inside the repository keeps its watches, which
	 * libinotifytools still names by the old path: rename them. */
	bool renamed = false;
	if ((ev->mask & IN_ISDIR) && (ev->mask & IN_MOVED_TO) && ev->cookie &&
	    ev->cookie == w->moved_cookie) {
		char to[PATH_MAX];
		if ((size_t)snprintf(to, sizeof(to), "%s/", full) < sizeof(to)) {
			inotifytools_replace_filename(w->moved_from, to);
			renamed = true;   /* watched already (watching again would leak) */
		}
		w->moved_cookie = 0;
	}
	if (!renamed && (ev->mask & IN_ISDIR) && (ev->mask & (IN_CREATE | IN_MOVED_TO)))
		if (!inotifytools_watch_recursively(full, WATCH_MASK))
			mfs_log_warn("repository: cannot watch '%s' (error %d): poll with --poll-secs",
				     full, inotifytools_error());
	char name[256];
	const char *model = model_of(w, full, name, sizeof(name));
	if (model)
		w->conf.changed(w->conf.ctx, model);
}

static void *inotify_thread(void *arg)
{
	mfs_watcher *w = arg;
	int rc = 0;
	if (!inotifytools_initialize()) {
		rc = -(inotifytools_error() ? inotifytools_error() : EIO);
		snprintf(w->start_msg, sizeof(w->start_msg), "inotify: %s", strerror(-rc));
	} else if (!inotifytools_watch_recursively(w->repo, WATCH_MASK)) {
		rc = -(inotifytools_error() ? inotifytools_error() : EIO);
		snprintf(w->start_msg, sizeof(w->start_msg),
			 "cannot watch '%s' with inotify: %s (raise fs.inotify.max_user_watches or use --poll-secs)",
			 w->repo, strerror(-rc));
	}
	pthread_mutex_lock(&w->lock);
	w->start_rc = rc;
	w->ready = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	while (rc == 0) {
		pthread_mutex_lock(&w->lock);
		bool stop = w->stop;
		pthread_mutex_unlock(&w->lock);
		if (stop)
			break;
		struct inotify_event *ev = inotifytools_next_event(1);
		if (ev)
			inotify_event(w, ev);
	}
	inotifytools_cleanup();
	return NULL;
}

/* ---- start/stop ---- */

int mfs_watcher_start(const mfs_watcher_conf *conf, mfs_watcher **out, mfs_error *err)
{
	if (conf->poll_secs <= 0 && __atomic_add_fetch(&inotify_users, 1, __ATOMIC_ACQ_REL) != 1) {
		__atomic_sub_fetch(&inotify_users, 1, __ATOMIC_ACQ_REL);
		return mfs_fail(err, EBUSY, "an inotify watcher is already running in this process");
	}
	mfs_watcher *w = calloc(1, sizeof(*w));
	if (!w || !(w->repo = strdup(conf->repository))) {
		free(w);
		if (conf->poll_secs <= 0)
			__atomic_sub_fetch(&inotify_users, 1, __ATOMIC_ACQ_REL);
		return mfs_fail(err, ENOMEM, "out of memory");
	}
	w->conf = *conf;
	size_t rl = strlen(w->repo);
	while (rl > 1 && w->repo[rl - 1] == '/')
		w->repo[--rl] = '\0';
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &ca);
	pthread_condattr_destroy(&ca);
	int rc = pthread_create(&w->thread, NULL, conf->poll_secs > 0 ? poll_thread : inotify_thread, w);
	if (rc != 0) {
		mfs_fail(err, rc, "cannot start the repository watcher: %s", strerror(rc));
		w->start_rc = -rc;
		w->thread = 0;
	} else {
		pthread_mutex_lock(&w->lock);
		while (!w->ready)
			pthread_cond_wait(&w->cond, &w->lock);
		rc = w->start_rc;
		pthread_mutex_unlock(&w->lock);
		if (rc < 0)
			mfs_fail(err, -rc, "%s", w->start_msg);
	}
	if (w->start_rc < 0) {
		rc = w->start_rc;
		mfs_watcher_stop(w);
		return rc;
	}
	mfs_log_info("watching '%s' for changes (%s)", w->repo,
		     conf->poll_secs > 0 ? "polling" : "inotify");
	*out = w;
	return 0;
}

void mfs_watcher_stop(mfs_watcher *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	if (w->thread)
		pthread_join(w->thread, NULL);
	if (w->conf.poll_secs <= 0)
		__atomic_sub_fetch(&inotify_users, 1, __ATOMIC_ACQ_REL);
	free_entries(w->polled, w->n_polled);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	free(w->repo);
	free(w);
}

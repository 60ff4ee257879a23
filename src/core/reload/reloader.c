/* reloader.c - see reloader.h.
 *
 * rl->lock guards the dirty list (model name -> time of its last change),
 * the stop flag and the first load's end; the per-model records of what
 * was loaded from which files (signatures) are found under rl->recs_lock
 * (the first load reconciles several models at once, load_pool.h) and
 * each record is touched by the one thread reconciling its model; the
 * explicit mode's list of loaded models is written by the caller of
 * mfs_reloader_new, then only by the loader thread (read by the first
 * load's threads, which the loader thread waits for).  Control commands
 * (mfs_reloader_control_async) are queued under rl->lock and run by the
 * loader thread, which calls each one's done() with no lock held and
 * frees it; stopping calls done() of those never run.
 */
#include "reloader.h"

#include <dirent.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "load_pool.h"
#include "log.h"
#include "model_load.h"
#include "repo.h"
#include "watcher.h"

typedef struct dirty {
	char *name;
	uint64_t last_ns;
} dirty;

typedef struct vsig {
	int64_t version;
	unsigned long long sig;
} vsig;

typedef struct mrec {
	char *name;
	vsig *v;
	int n;
} mrec;

/* A queued control command. */
typedef struct command {
	char *model;
	mfs_control_verb verb;
	mfs_control_done done;
	void *ctx;
	struct command *next;
} command;

struct mfs_reloader {
	mfs_reloader_conf conf;
	char *repo;
	mfs_watcher *watcher;
	pthread_t thread;
	bool running;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;                 /* under lock */
	bool all;                  /* under lock: everything changed */
	dirty *dirty;              /* under lock */
	int n_dirty;
	pthread_mutex_t recs_lock; /* the array below; a record: its model's reconciler */
	mrec **recs;
	int n_recs;
	char **first;              /* the first load: models, then ensembles (loader only) */
	int n_first, n_first_models;
	bool first_done;           /* under lock: every model of the first load tried */
	int first_failed;          /* under lock, once first_done */
	command *cmds, **cmds_tail;   /* under lock: waiting to run */
	char **wanted;             /* loader only: explicit mode's loaded models */
	int n_wanted;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- the dirty list (rl->lock held) ---- */

static void mark_locked(mfs_reloader *rl, const char *name, uint64_t now)
{
	for (int i = 0; i < rl->n_dirty; i++)
		if (strcmp(rl->dirty[i].name, name) == 0) {
			rl->dirty[i].last_ns = now;
			return;
		}
	dirty *d = realloc(rl->dirty, (size_t)(rl->n_dirty + 1) * sizeof(*d));
	if (!d)
		return;
	rl->dirty = d;
	if (!(d[rl->n_dirty].name = strdup(name)))
		return;
	d[rl->n_dirty++].last_ns = now;
}

/* Watcher callback (watcher thread). */
static void on_change(void *ctx, const char *model)
{
	mfs_reloader *rl = ctx;
	pthread_mutex_lock(&rl->lock);
	if (model)
		mark_locked(rl, model, mono_ns());
	else
		rl->all = true;
	pthread_cond_broadcast(&rl->cond);
	pthread_mutex_unlock(&rl->lock);
}

/* Every model on the disk or in the registry is marked (after an
 * overflow). */
static void mark_all(mfs_reloader *rl)
{
	uint64_t now = mono_ns();
	DIR *d = opendir(rl->repo);
	mfs_model_info *ms = NULL;
	int n = 0;
	if (mfs_registry_snapshot(rl->conf.registry, &ms, &n) < 0)
		n = 0;
	pthread_mutex_lock(&rl->lock);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (mfs_repo_model_name_ok(e->d_name))
			mark_locked(rl, e->d_name, now);
	for (int i = 0; i < n; i++)
		mark_locked(rl, ms[i].name, now);
	pthread_mutex_unlock(&rl->lock);
	if (d)
		closedir(d);
	if (ms)
		mfs_registry_snapshot_free(ms, n);
}

void mfs_reloader_rescan(mfs_reloader *rl)
{
	on_change(rl, NULL);
}

/* ---- per-model records (loader only) ---- */

/* The record of name (stays where it is until dropped), NULL if none
 * (or out of memory when adding). */
static mrec *find_rec(mfs_reloader *rl, const char *name, bool add)
{
	mrec *m = NULL;
	pthread_mutex_lock(&rl->recs_lock);
	for (int i = 0; !m && i < rl->n_recs; i++)
		if (strcmp(rl->recs[i]->name, name) == 0)
			m = rl->recs[i];
	mrec **r = !m && add ? realloc(rl->recs, (size_t)(rl->n_recs + 1) * sizeof(*r)) : NULL;
	if (r) {
		rl->recs = r;
		m = calloc(1, sizeof(*m));
		if (m && !(m->name = strdup(name))) {
			free(m);
			m = NULL;
		}
		if (m)
			r[rl->n_recs++] = m;
	}
	pthread_mutex_unlock(&rl->recs_lock);
	return m;
}

static void drop_rec(mfs_reloader *rl, const char *name)
{
	mrec *m = NULL;
	pthread_mutex_lock(&rl->recs_lock);
	for (int i = 0; !m && i < rl->n_recs; i++)
		if (strcmp(rl->recs[i]->name, name) == 0) {
			m = rl->recs[i];
			rl->recs[i] = rl->recs[--rl->n_recs];
		}
	pthread_mutex_unlock(&rl->recs_lock);
	if (!m)
		return;
	free(m->name);
	free(m->v);
	free(m);
}

static vsig *rec_version(mrec *m, int64_t version)
{
	for (int i = 0; i < m->n; i++)
		if (m->v[i].version == version)
			return &m->v[i];
	return NULL;
}

static void rec_set(mrec *m, int64_t version, unsigned long long sig)
{
	vsig *s = rec_version(m, version);
	if (!s) {
		vsig *v = realloc(m->v, (size_t)(m->n + 1) * sizeof(*v));
		if (!v)
			return;   /* the version is simply loaded again next time */
		m->v = v;
		s = &v[m->n++];
		s->version = version;
	}
	s->sig = sig;
}

static void rec_keep_only(mrec *m, const int64_t *vs, int n)
{
	int k = 0;
	for (int i = 0; i < m->n; i++) {
		bool keep = false;
		for (int j = 0; j < n; j++)
			keep |= vs[j] == m->v[i].version;
		if (keep)
			m->v[k++] = m->v[i];
	}
	m->n = k;
}

/* What a version was loaded from: its config file and its directory. */
static unsigned long long version_sig(mfs_reloader *rl, const mfs_repo_entry *e, int64_t version)
{
	char p[PATH_MAX];
	unsigned long long h = 0x5bd1e995ULL;
	snprintf(p, sizeof(p), "%s/config.pbtxt", e->dir);
	h = h * 31 + mfs_tree_signature(p);
	snprintf(p, sizeof(p), "%s/config.json", e->dir);
	h = h * 31 + mfs_tree_signature(p);
	snprintf(p, sizeof(p), "%s/%" PRId64, e->dir, version);
	h = h * 31 + mfs_tree_signature(p);
	(void)rl;
	return h;
}

/* ---- explicit mode: which models are loaded (loader only) ---- */

static int wanted_index(mfs_reloader *rl, const char *name)
{
	for (int i = 0; i < rl->n_wanted; i++)
		if (strcmp(rl->wanted[i], name) == 0)
			return i;
	return -1;
}

static bool is_wanted(mfs_reloader *rl, const char *name)
{
	return rl->conf.mode != MFS_CONTROL_EXPLICIT || wanted_index(rl, name) >= 0;
}

static int want(mfs_reloader *rl, const char *name)
{
	if (wanted_index(rl, name) >= 0)
		return 0;
	char **w = realloc(rl->wanted, (size_t)(rl->n_wanted + 1) * sizeof(*w));
	if (!w)
		return -ENOMEM;
	rl->wanted = w;
	if (!(w[rl->n_wanted] = strdup(name)))
		return -ENOMEM;
	rl->n_wanted++;
	return 0;
}

static void unwant(mfs_reloader *rl, const char *name)
{
	int i = wanted_index(rl, name);
	if (i < 0)
		return;
	free(rl->wanted[i]);
	rl->wanted[i] = rl->wanted[--rl->n_wanted];
}

/* A repository model explicit mode has not loaded: listed UNAVAILABLE
 * under its newest version with reason, unless it is listed so already
 * (an earlier "unloaded" or a failed load's reason stays). */
static void list_not_loaded(mfs_reloader *rl, const mfs_repo_entry *e, const char *reason)
{
	int64_t newest = e->versions[e->n_versions - 1];
	mfs_model_info mi;
	if (mfs_registry_model_snapshot(rl->conf.registry, e->name, &mi) == 0) {
		bool listed = mi.current == 0 && mi.n_versions == 1 && mi.versions[0].version == newest;
		mfs_model_info_release(&mi);
		if (listed)
			return;
	}
	mfs_registry_list_unloaded(rl->conf.registry, e->name, newest, reason);
	drop_rec(rl, e->name);
}

/* ---- reconciling ---- */

/* Unload the versions of name that are not in keep.  One still on the
 * disk (only no longer selected by version_policy) stays while a selected
 * version is not serving: a newer version that failed to load must not
 * take the working one away. */
static void unload_all_but(mfs_reloader *rl, const mfs_repo_entry *e, const int64_t *keep,
			   int n_keep)
{
	mfs_model_info mi;
	if (mfs_registry_model_snapshot(rl->conf.registry, e->name, &mi) < 0)
		return;
	bool all_served = true;
	for (int j = 0; j < n_keep; j++) {
		bool served = false;
		for (int i = 0; i < mi.n_versions; i++)
			served |= mi.versions[i].version == keep[j] && mi.versions[i].served;
		all_served &= served;
	}
	for (int i = 0; i < mi.n_versions; i++) {
		int64_t v = mi.versions[i].version;
		bool kept = false, on_disk = false;
		for (int j = 0; j < n_keep; j++)
			kept |= keep[j] == v;
		for (int j = 0; j < e->n_versions; j++)
			on_disk |= e->versions[j] == v;
		if (kept || (on_disk && !all_served && mi.versions[i].served))
			continue;
		mfs_registry_unload_version(rl->conf.registry, e->name, v,
					    on_disk ? "not selected by version_policy"
						    : "removed from the repository");
	}
	mfs_model_info_release(&mi);
}

int mfs_reloader_reconcile(mfs_reloader *rl, const char *name)
{
	mfs_registry *reg = rl->conf.registry;
	mfs_repo_entry e;
	mfs_error err;
	mfs_error_clear(&err);
	memset(&e, 0, sizeof(e));
	if (!mfs_repo_model_name_ok(name))
		return 0;
	int rc = mfs_repo_scan_model(rl->repo, name, &e, &err);
	if (rc < 0) {
		/* Gone (or not a model directory any more): unload, draining. */
		if (mfs_registry_unload_model(reg, name, "removed from the repository") == 0)
			mfs_log_info("model '%s': removed from the repository, unloaded", name);
		drop_rec(rl, name);
		return 0;
	}
	int failed = 0;
	if (e.n_versions == 0) {
		if (mfs_registry_unload_model(reg, name, "no version directories left") == 0)
			mfs_log_info("model '%s': no version directories left, unloaded", name);
		drop_rec(rl, name);
		goto out;
	}
	if (!is_wanted(rl, name)) {
		list_not_loaded(rl, &e, "not loaded");
		goto out;
	}
	mfs_model_config cfg;
	if (mfs_load_config(rl->repo, name, &cfg, &err) < 0) {
		/* Keep what serves; show the reason on the version that is (or
		 * would be) current.  Where one serves, the registry says so
		 * ("reload failed, still serving the previous load: ..."), and
		 * keeps it READY; at a first load the version is UNAVAILABLE. */
		mfs_model_info mi;
		int64_t shown = e.versions[e.n_versions - 1];
		if (mfs_registry_model_snapshot(reg, name, &mi) == 0) {
			if (mi.current > 0)
				shown = mi.current;
			mfs_model_info_release(&mi);
		}
		char why[MFS_ERROR_MSG_MAX + 64];
		snprintf(why, sizeof(why), "config not loaded: %s", err.msg);
		mfs_registry_set_failure(reg, name, shown, why);
		mfs_log_error("model '%s': %s", name, why);
		/* Versions' signatures include the config: fixing it reloads. */
		mrec *m = find_rec(rl, name, true);
		if (m)
			for (int i = 0; i < m->n; i++)
				m->v[i].sig = 0;
		failed = 1;
		goto out;
	}
	int64_t *want = malloc((size_t)e.n_versions * sizeof(*want));
	if (!want) {
		mfs_config_release(&cfg);
		failed = 1;
		goto out;
	}
	memcpy(want, e.versions, (size_t)e.n_versions * sizeof(*want));
	int n_want = mfs_config_apply_version_policy(&cfg, want, e.n_versions);
	mfs_config_release(&cfg);
	mrec *m = find_rec(rl, name, true);
	mfs_model_info mi;
	bool have_info = mfs_registry_model_snapshot(reg, name, &mi) == 0;
	/* Newest first: it is what unversioned requests will go to. */
	for (int k = n_want - 1; k >= 0; k--) {
		unsigned long long sig = version_sig(rl, &e, want[k]);
		vsig *s = m ? rec_version(m, want[k]) : NULL;
		bool known = false;
		for (int i = 0; have_info && i < mi.n_versions; i++)
			known |= mi.versions[i].version == want[k];
		if (s && s->sig == sig && known)
			continue;   /* unchanged since it was loaded (or failed) */
		if (mfs_registry_load_version(reg, name, want[k], &err) < 0)
			failed++;
		if (m)
			rec_set(m, want[k], sig);
	}
	if (have_info)
		mfs_model_info_release(&mi);
	if (m)
		rec_keep_only(m, want, n_want);
	unload_all_but(rl, &e, want, n_want);
	free(want);
out:
	mfs_repo_entry_release(&e);
	return failed;
}

/* ---- control commands (loader thread) ---- */

static int control_load(mfs_reloader *rl, const char *name, mfs_error *err)
{
	mfs_repo_entry e;
	memset(&e, 0, sizeof(e));
	if (!mfs_repo_model_name_ok(name) || mfs_repo_scan_model(rl->repo, name, &e, err) < 0)
		return mfs_fail(err, ENOENT, "model '%s': not in the repository", name);
	int n_versions = e.n_versions;
	mfs_repo_entry_release(&e);
	if (n_versions == 0)
		return mfs_fail(err, ENOENT, "model '%s': no version directories, nothing to load", name);
	if (want(rl, name) < 0)
		return mfs_fail(err, ENOMEM, "out of memory");
	int failed = mfs_reloader_reconcile(rl, name);
	mfs_model_info mi;
	if (mfs_registry_model_snapshot(rl->conf.registry, name, &mi) < 0)
		return mfs_fail(err, EIO, "model '%s': load failed (its status says why)", name);
	if (failed == 0 && mi.current > 0) {
		mfs_model_info_release(&mi);
		return 0;
	}
	/* Failed: still loaded when an earlier load serves, else not.  An
	 * ensemble loads without fault and then waits, UNAVAILABLE, for steps
	 * that may never serve (a step not loaded, an ensemble, itself): the
	 * write returns once the model is READY, so that is a failed load too,
	 * and the ensemble is taken out again with its reason kept. */
	int rc = mfs_fail(err, EIO, "model '%s': load failed (its status says why)", name);
	if (mi.current == 0) {
		unwant(rl, name);
		const mfs_version_info *last = mi.n_versions ? &mi.versions[mi.n_versions - 1] : NULL;
		if (failed == 0 && last) {
			rc = mfs_fail(err, EIO, "model '%s': load failed: %s", name, last->reason);
			mfs_registry_list_unloaded(rl->conf.registry, name, last->version, last->reason);
			drop_rec(rl, name);
		}
	}
	mfs_model_info_release(&mi);
	return rc;
}

static int control_unload(mfs_reloader *rl, const char *name, mfs_error *err)
{
	mfs_model_info mi;
	if (mfs_registry_model_snapshot(rl->conf.registry, name, &mi) < 0)
		return mfs_fail(err, ENOENT, "model '%s': not in the repository", name);
	int64_t shown = mi.n_versions ? mi.versions[mi.n_versions - 1].version : 1;
	bool loaded = wanted_index(rl, name) >= 0;
	mfs_model_info_release(&mi);
	if (!loaded)
		return 0;   /* as Triton: unloading what is not loaded succeeds */
	unwant(rl, name);
	mfs_repo_entry e;
	memset(&e, 0, sizeof(e));
	if (mfs_repo_scan_model(rl->repo, name, &e, err) == 0 && e.n_versions > 0)
		shown = e.versions[e.n_versions - 1];
	mfs_repo_entry_release(&e);
	mfs_registry_list_unloaded(rl->conf.registry, name, shown, "unloaded");
	drop_rec(rl, name);
	mfs_log_info("model '%s': unloaded through its control file", name);
	return 0;
}

/* Run c, tell its caller, free it (loader thread, no lock held). */
static void run_command(mfs_reloader *rl, command *c)
{
	mfs_error err;
	mfs_error_clear(&err);
	int rc = c->verb == MFS_CONTROL_LOAD ? control_load(rl, c->model, &err)
					     : control_unload(rl, c->model, &err);
	if (rl->conf.changed)
		rl->conf.changed(rl->conf.ctx, c->model);
	c->done(c->ctx, rc, &err);
	free(c->model);
	free(c);
}

int mfs_reloader_control_async(mfs_reloader *rl, const char *model, mfs_control_verb verb,
			       mfs_control_done done, void *ctx, mfs_error *err)
{
	command *c = calloc(1, sizeof(*c));
	if (!c || !(c->model = strdup(model))) {
		free(c);
		return mfs_fail(err, ENOMEM, "out of memory");
	}
	c->verb = verb;
	c->done = done;
	c->ctx = ctx;
	pthread_mutex_lock(&rl->lock);
	bool refused = rl->stop || !rl->running;
	if (!refused) {
		*rl->cmds_tail = c;
		rl->cmds_tail = &c->next;
		pthread_cond_broadcast(&rl->cond);
	}
	pthread_mutex_unlock(&rl->lock);
	if (refused) {
		free(c->model);
		free(c);
		return mfs_fail(err, ESHUTDOWN, "the daemon is stopping");
	}
	return 0;
}

/* mfs_reloader_control: the caller's wait for its command. */
typedef struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int rc;
	mfs_error err;
} waiter;

static void wake(void *ctx, int rc, const mfs_error *err)
{
	waiter *w = ctx;
	pthread_mutex_lock(&w->lock);
	w->rc = rc;
	w->err = *err;
	w->done = true;
	/* Signalled under the lock: once it is let go, the waiter may be gone. */
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

int mfs_reloader_control(mfs_reloader *rl, const char *model, mfs_control_verb verb,
			 mfs_error *err)
{
	waiter w = { .done = false };
	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.cond, NULL);
	int rc = mfs_reloader_control_async(rl, model, verb, wake, &w, err);
	if (rc == 0) {
		pthread_mutex_lock(&w.lock);
		while (!w.done)
			pthread_cond_wait(&w.cond, &w.lock);
		pthread_mutex_unlock(&w.lock);
		rc = w.rc;
		if (rc < 0 && err)
			*err = w.err;
	}
	pthread_mutex_destroy(&w.lock);
	pthread_cond_destroy(&w.cond);
	return rc;
}

/* ---- the loader thread ---- */

/* Poll mode: does the model directory change within quiet ns? */
static bool still_changing(mfs_reloader *rl, const char *name, uint64_t quiet)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s", rl->repo, name);
	unsigned long long a = mfs_tree_signature(p);
	uint64_t at = mono_ns() + quiet;
	struct timespec ts = { (time_t)(at / 1000000000ull), (long)(at % 1000000000ull) };
	pthread_mutex_lock(&rl->lock);
	while (!rl->stop && mono_ns() < at)
		pthread_cond_timedwait(&rl->cond, &rl->lock, &ts);
	pthread_mutex_unlock(&rl->lock);
	return mfs_tree_signature(p) != a;
}

static void *loader_thread(void *arg)
{
	mfs_reloader *rl = arg;
	/* Commands and changes wait for the first load (they queue). */
	mfs_reloader_load_first(rl);
	uint64_t quiet = (uint64_t)(rl->conf.quiet_ms > 0 ? rl->conf.quiet_ms : 0) * 1000000ull;
	pthread_mutex_lock(&rl->lock);
	while (!rl->stop) {
		if (rl->cmds) {
			/* A shell waits on each: before any debounced change. */
			command *c = rl->cmds;
			if (!(rl->cmds = c->next))
				rl->cmds_tail = &rl->cmds;
			pthread_mutex_unlock(&rl->lock);
			run_command(rl, c);
			pthread_mutex_lock(&rl->lock);
			continue;
		}
		if (rl->all) {
			rl->all = false;
			pthread_mutex_unlock(&rl->lock);
			mark_all(rl);
			pthread_mutex_lock(&rl->lock);
			continue;
		}
		if (rl->n_dirty == 0) {
			/* Idle: KIND_AUTO's deferred trials, one at a time. */
			pthread_mutex_unlock(&rl->lock);
			char timed[256];
			bool any = mfs_registry_time_next(rl->conf.registry, timed, sizeof(timed));
			if (any && rl->conf.changed)
				rl->conf.changed(rl->conf.ctx, timed);
			pthread_mutex_lock(&rl->lock);
			/* what came while the lock was let go is not slept on */
			if (!any && !rl->stop && !rl->cmds && !rl->all && rl->n_dirty == 0)
				pthread_cond_wait(&rl->cond, &rl->lock);
			continue;
		}
		int due = 0;
		for (int i = 1; i < rl->n_dirty; i++)
			if (rl->dirty[i].last_ns < rl->dirty[due].last_ns)
				due = i;
		/* Polling marks a change once per poll, so its quiet period is
		 * checked by still_changing() instead. */
		uint64_t at = rl->dirty[due].last_ns + (rl->conf.poll_secs > 0 ? 0 : quiet);
		uint64_t now = mono_ns();
		if (now < at) {
			struct timespec ts = { (time_t)(at / 1000000000ull), (long)(at % 1000000000ull) };
			pthread_cond_timedwait(&rl->cond, &rl->lock, &ts);
			continue;
		}
		char *name = rl->dirty[due].name;
		rl->dirty[due] = rl->dirty[--rl->n_dirty];
		pthread_mutex_unlock(&rl->lock);
		if (rl->conf.poll_secs > 0 && still_changing(rl, name, quiet)) {
			/* Polling sees a copy only now and then: wait for quiet. */
			pthread_mutex_lock(&rl->lock);
			mark_locked(rl, name, mono_ns());
			free(name);
			continue;
		}
		uint64_t t0 = mono_ns();
		int failed = mfs_reloader_reconcile(rl, name);
		mfs_log_info("model '%s': repository change handled in %.3f s (%d failure%s)", name,
			     (double)(mono_ns() - t0) / 1e9, failed, failed == 1 ? "" : "s");
		if (rl->conf.changed)
			rl->conf.changed(rl->conf.ctx, name);
		free(name);
		pthread_mutex_lock(&rl->lock);
	}
	pthread_mutex_unlock(&rl->lock);
	return NULL;
}

/* ---- the first load ---- */

static void free_first(mfs_reloader *rl)
{
	for (int i = 0; i < rl->n_first; i++)
		free(rl->first[i]);
	free(rl->first);
	rl->first = NULL;
	rl->n_first = rl->n_first_models = 0;
}

/* Every model of the repository listed at once: those to load LOADING
 * (kept in rl->first, models before ensembles, so that an ensemble
 * starts READY rather than passing through UNAVAILABLE), explicit
 * mode's others "not loaded".  0 or -ENOMEM. */
static int list_first(mfs_reloader *rl, const mfs_repo_entry *entries, int n)
{
	char **ens = calloc((size_t)n + 1, sizeof(*ens));
	int n_ens = 0;
	rl->first = calloc((size_t)n + 1, sizeof(*rl->first));
	if (!ens || !rl->first) {
		free(ens);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		const mfs_repo_entry *e = &entries[i];
		char *name;
		if (e->n_versions == 0) {
			mfs_repo_note_unversioned(e);
		} else if (!is_wanted(rl, e->name)) {
			list_not_loaded(rl, e, "not loaded");
		} else if ((name = strdup(e->name))) {
			if (mfs_load_pool_list(rl->conf.registry, rl->repo, e))
				ens[n_ens++] = name;
			else
				rl->first[rl->n_first++] = name;
		}
	}
	rl->n_first_models = rl->n_first;
	memcpy(rl->first + rl->n_first, ens, (size_t)n_ens * sizeof(*ens));
	rl->n_first += n_ens;
	free(ens);
	return 0;
}

static int first_job(void *ctx, const char *name)
{
	mfs_reloader *rl = ctx;
	int failed = mfs_reloader_reconcile(rl, name);
	if (rl->conf.changed)
		rl->conf.changed(rl->conf.ctx, name);
	return failed;
}

static bool first_stop(void *ctx)
{
	mfs_reloader *rl = ctx;
	pthread_mutex_lock(&rl->lock);
	bool stop = rl->stop;
	pthread_mutex_unlock(&rl->lock);
	return stop;
}

int mfs_reloader_load_first(mfs_reloader *rl)
{
	pthread_mutex_lock(&rl->lock);
	bool done = rl->first_done;
	int failed = rl->first_failed;
	pthread_mutex_unlock(&rl->lock);
	if (done)
		return failed;
	int threads = mfs_load_pool_threads(rl->conf.load_threads);
	uint64_t t0 = mono_ns();
	int n_ens = rl->n_first - rl->n_first_models;
	failed = mfs_load_pool_run(rl->first, rl->n_first_models, threads, first_job, first_stop, rl);
	failed += mfs_load_pool_run(rl->first + rl->n_first_models, n_ens, threads, first_job,
				    first_stop, rl);
	if (rl->n_first > 0)
		mfs_log_info("first load: %d model(s) tried in %.3f s on %d thread(s); %d version(s) failed",
			     rl->n_first, (double)(mono_ns() - t0) / 1e9,
			     threads < rl->n_first ? threads : rl->n_first, failed);
	free_first(rl);
	pthread_mutex_lock(&rl->lock);
	rl->first_done = true;
	rl->first_failed = failed;
	pthread_cond_broadcast(&rl->cond);
	pthread_mutex_unlock(&rl->lock);
	return failed;
}

int mfs_reloader_wait_first_load(mfs_reloader *rl)
{
	pthread_mutex_lock(&rl->lock);
	while (!rl->first_done && !rl->stop)
		pthread_cond_wait(&rl->cond, &rl->lock);
	int rc = rl->first_done ? rl->first_failed : -ESHUTDOWN;
	pthread_mutex_unlock(&rl->lock);
	return rc;
}

bool mfs_reloader_first_load_done(mfs_reloader *rl)
{
	pthread_mutex_lock(&rl->lock);
	bool done = rl->first_done;
	pthread_mutex_unlock(&rl->lock);
	return done;
}

/* ---- life cycle ---- */

int mfs_reloader_new(const mfs_reloader_conf *conf, mfs_reloader **out, mfs_error *err)
{
	mfs_reloader *rl = calloc(1, sizeof(*rl));
	if (!rl || !(rl->repo = strdup(conf->repository))) {
		free(rl);
		return mfs_fail(err, ENOMEM, "out of memory");
	}
	rl->conf = *conf;
	pthread_mutex_init(&rl->lock, NULL);
	pthread_mutex_init(&rl->recs_lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&rl->cond, &ca);
	pthread_condattr_destroy(&ca);
	rl->cmds_tail = &rl->cmds;
	/* Leaving versions drain: no request fails because of a reload. */
	mfs_registry_set_drain(conf->registry, true);

	mfs_repo_entry *entries = NULL;
	int n = 0;
	int rc = mfs_repo_scan(rl->repo, &entries, &n, err);
	if (rc < 0)
		goto fail;
	for (int k = 0; conf->mode == MFS_CONTROL_EXPLICIT && k < conf->n_load_models; k++) {
		const char *name = conf->load_models[k];
		bool found = false;
		for (int i = 0; i < n; i++)
			found |= strcmp(entries[i].name, name) == 0 && entries[i].n_versions > 0;
		rc = found ? want(rl, name) : mfs_fail(err, ENOENT, "--load-model=%s: no model '%s' with a version directory in the repository", name, name);
		if (rc < 0) {
			mfs_repo_entries_free(entries, n);
			goto fail;
		}
	}
	/* Watch before loading: a change made while loading is not lost.
	 * Only poll mode watches (model_control.h). */
	mfs_watcher_conf wc = { .repository = rl->repo, .poll_secs = conf->poll_secs,
				.changed = on_change, .ctx = rl };
	if (conf->mode == MFS_CONTROL_POLL && (rc = mfs_watcher_start(&wc, &rl->watcher, err)) < 0) {
		mfs_repo_entries_free(entries, n);
		goto fail;
	}
	rc = list_first(rl, entries, n);
	mfs_repo_entries_free(entries, n);
	if (rc < 0) {
		mfs_fail(err, -rc, "out of memory");
		goto fail;
	}
	*out = rl;
	return 0;
fail:
	mfs_reloader_free(rl);
	return rc;
}

void mfs_reloader_set_callback(mfs_reloader *rl, void (*changed)(void *, const char *), void *ctx)
{
	rl->conf.changed = changed;
	rl->conf.ctx = ctx;
}

int mfs_reloader_run(mfs_reloader *rl, mfs_error *err)
{
	int rc = pthread_create(&rl->thread, NULL, loader_thread, rl);
	if (rc != 0)
		return mfs_fail(err, rc, "cannot start the loader thread: %s", strerror(rc));
	rl->running = true;
	return 0;
}

void mfs_reloader_stop(mfs_reloader *rl)
{
	if (!rl)
		return;
	/* The watcher first: nothing marks after this. */
	mfs_watcher_stop(rl->watcher);
	rl->watcher = NULL;
	pthread_mutex_lock(&rl->lock);
	rl->stop = true;
	pthread_cond_broadcast(&rl->cond);
	pthread_mutex_unlock(&rl->lock);
	if (rl->running)
		pthread_join(rl->thread, NULL);
	rl->running = false;
	/* Commands never run are answered (new ones are refused now). */
	pthread_mutex_lock(&rl->lock);
	command *c = rl->cmds;
	rl->cmds = NULL;
	rl->cmds_tail = &rl->cmds;
	pthread_mutex_unlock(&rl->lock);
	while (c) {
		command *next = c->next;
		mfs_error err;
		int rc = mfs_fail(&err, ESHUTDOWN, "the daemon is stopping");
		c->done(c->ctx, rc, &err);
		free(c->model);
		free(c);
		c = next;
	}
}

void mfs_reloader_free(mfs_reloader *rl)
{
	if (!rl)
		return;
	mfs_reloader_stop(rl);
	for (int i = 0; i < rl->n_wanted; i++)
		free(rl->wanted[i]);
	free(rl->wanted);
	for (int i = 0; i < rl->n_dirty; i++)
		free(rl->dirty[i].name);
	free(rl->dirty);
	for (int i = 0; i < rl->n_recs; i++) {
		free(rl->recs[i]->name);
		free(rl->recs[i]->v);
		free(rl->recs[i]);
	}
	free(rl->recs);
	free_first(rl);
	pthread_mutex_destroy(&rl->recs_lock);
	pthread_mutex_destroy(&rl->lock);
	pthread_cond_destroy(&rl->cond);
	free(rl->repo);
	free(rl);
}

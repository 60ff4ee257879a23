/* registry.c - see registry.h: the models, which versions each serves
 * and the state of every version tried; loading, unloading, ensembles
 * parked and served, snapshots.  A version itself (engine, instances,
 * queue) is made and freed by registry_version.c.
 *
 * r->lock protects the model list, each model's served[] and states[].
 * Versions' reference counts are atomics so that get/put never wait on a
 * load.  Loading (slow) runs with no lock held; only publishing takes it.
 */
#include "registry.h"
#include "sequence_batcher.h"

#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "log.h"
#include "registry_version.h"
#include "repo.h"
#include "response_cache.h"

typedef struct vrecord {
	int64_t version;
	mfs_vstate state;
	char *reason;
	char device[64];
} vrecord;

typedef struct model {
	char *name;
	mfs_version **served;      /* ascending by version; one reference each */
	int n_served;
	mfs_version **parked;      /* ensembles waiting for a step; one reference each */
	int n_parked;
	vrecord *states;           /* ascending; every version tried */
	int n_states;
} model;

struct mfs_registry {
	pthread_mutex_t lock;
	char *repository;
	mfs_sched *sched;
	mfs_route_opts route;      /* route.opencl_device owned */
	struct mfs_rcache *cache;  /* borrowed; NULL: no response cache */
	char *backend_dir;         /* owned; NULL: none */
	char *worker_program;      /* owned */
	model *models;             /* sorted by name */
	int n_models;
	bool drain;                /* atomic: unloads let bound requests run */
	bool stopping;             /* mfs_registry_free: ensembles need no second look */
	uint64_t n_loads, n_load_failures, n_unloads;   /* atomics */
};

const char *mfs_vstate_name(mfs_vstate s)
{
	switch (s) {
	case MFS_VS_LOADING: return "LOADING";
	case MFS_VS_READY: return "READY";
	case MFS_VS_UNAVAILABLE: return "UNAVAILABLE";
	case MFS_VS_UNLOADING: return "UNLOADING";
	}
	return "UNAVAILABLE";
}

int mfs_registry_new(const mfs_registry_conf *conf, mfs_registry **out,
		     mfs_error *err)
{
	mfs_registry *r = calloc(1, sizeof(*r));
	if (!r || !(r->repository = strdup(conf->repository))) {
		free(r);
		return mfs_fail(err, ENOMEM, "out of memory");
	}
	pthread_mutex_init(&r->lock, NULL);
	r->sched = conf->sched;
	r->cache = conf->cache;
	r->route = conf->route;
	r->route.opencl_device = NULL;
	if (conf->route.opencl_device &&
	    !(r->route.opencl_device = strdup(conf->route.opencl_device))) {
		pthread_mutex_destroy(&r->lock);
		free(r->repository);
		free(r);
		return mfs_fail(err, ENOMEM, "out of memory");
	}
	r->worker_program = strdup(conf->worker_program ? conf->worker_program : "/proc/self/exe");
	if (!r->worker_program || (conf->backend_dir && !(r->backend_dir = strdup(conf->backend_dir)))) {
		free(r->worker_program);
		free((char *)r->route.opencl_device);
		pthread_mutex_destroy(&r->lock);
		free(r->repository);
		free(r);
		return mfs_fail(err, ENOMEM, "out of memory");
	}
	if (conf->engine_threads > 0)
		mfs_engine_set_threads(conf->engine_threads);
	*out = r;
	return 0;
}

/* ---- models (r->lock held) ---- */

static model *find_model(mfs_registry *r, const char *name)
{
	for (int i = 0; i < r->n_models; i++)
		if (strcmp(r->models[i].name, name) == 0)
			return &r->models[i];
	return NULL;
}

static model *add_model(mfs_registry *r, const char *name)
{
	model *m = find_model(r, name);
	if (m)
		return m;
	model *ms = realloc(r->models, (size_t)(r->n_models + 1) * sizeof(*ms));
	if (!ms)
		return NULL;
	r->models = ms;
	int at = 0;
	while (at < r->n_models && strcmp(r->models[at].name, name) < 0)
		at++;
	memmove(&ms[at + 1], &ms[at], (size_t)(r->n_models - at) * sizeof(*ms));
	memset(&ms[at], 0, sizeof(*ms));
	if (!(ms[at].name = strdup(name))) {
		memmove(&ms[at], &ms[at + 1], (size_t)(r->n_models - at) * sizeof(*ms));
		return NULL;
	}
	r->n_models++;
	return &ms[at];
}

static void set_state(model *m, int64_t version, mfs_vstate st,
		      const char *reason, const char *device)
{
	int i = 0;
	while (i < m->n_states && m->states[i].version < version)
		i++;
	if (i == m->n_states || m->states[i].version != version) {
		vrecord *s = realloc(m->states, (size_t)(m->n_states + 1) * sizeof(*s));
		if (!s)
			return;   /* the state display misses one version; serving is unaffected */
		m->states = s;
		memmove(&s[i + 1], &s[i], (size_t)(m->n_states - i) * sizeof(*s));
		memset(&s[i], 0, sizeof(*s));
		s[i].version = version;
		m->n_states++;
	}
	vrecord *rec = &m->states[i];
	rec->state = st;
	free(rec->reason);
	rec->reason = strdup(reason ? reason : "");
	snprintf(rec->device, sizeof(rec->device), "%s", device ? device : "");
}

static void drop_state(model *m, int64_t version)
{
	for (int i = 0; i < m->n_states; i++)
		if (m->states[i].version == version) {
			free(m->states[i].reason);
			memmove(&m->states[i], &m->states[i + 1],
				(size_t)(m->n_states - i - 1) * sizeof(vrecord));
			m->n_states--;
			return;
		}
}

/* A load of version failed (lock held): UNAVAILABLE with the reason, or,
 * when an earlier load of it still serves, READY with the reason. */
static void note_failure(model *m, int64_t version, const char *reason)
{
	for (int i = 0; i < m->n_served; i++)
		if (m->served[i]->version == version) {
			char why[MFS_ERROR_MSG_MAX + 64];
			snprintf(why, sizeof(why), "reload failed, still serving the previous load: %s", reason);
			set_state(m, version, MFS_VS_READY, why, m->served[i]->device);
			return;
		}
	set_state(m, version, MFS_VS_UNAVAILABLE, reason, "");
}

/* Take v out of m->served (lock held); returns it with the registry's
 * reference, or NULL. */
static mfs_version *take(mfs_version **list, int *n, int64_t version)
{
	for (int i = 0; i < *n; i++)
		if (list[i]->version == version) {
			mfs_version *v = list[i];
			memmove(&list[i], &list[i + 1], (size_t)(*n - i - 1) * sizeof(*list));
			(*n)--;
			return v;
		}
	return NULL;
}

static mfs_version *unserve(model *m, int64_t version)
{
	mfs_version *v = take(m->served, &m->n_served, version);
	return v ? v : take(m->parked, &m->n_parked, version);
}

/* Put v into list, ascending by version (room was made). */
static void insert_sorted(mfs_version **list, int *n, mfs_version *v)
{
	int i = 0;
	while (i < *n && list[i]->version < v->version)
		i++;
	memmove(&list[i + 1], &list[i], (size_t)(*n - i) * sizeof(*list));
	list[i] = v;
	(*n)++;
}

/* ---- ensembles (r->lock held) ---- */

/* The version a step naming (name, version) would find, served or
 * parked (version <= 0: the newest), or NULL. */
static const mfs_version *step_version(model *sm, int64_t version, bool served_only)
{
	const mfs_version *v = NULL;
	for (int i = 0; sm && i < sm->n_served; i++)
		if (version <= 0 || sm->served[i]->version == version)
			v = sm->served[i];
	for (int i = 0; sm && !served_only && i < sm->n_parked; i++)
		if ((version <= 0 || sm->parked[i]->version == version) &&
		    (!v || sm->parked[i]->version > v->version))
			v = sm->parked[i];
	return v;
}

static const mfs_model_config *lookup_step(void *ctx, const char *name, int64_t version)
{
	const mfs_version *v = step_version(find_model(ctx, name), version, false);
	return v ? v->config : NULL;
}

/* Can ensemble e serve now?  No ensemble it reaches through its steps
 * may lead back to one met before (a cycle: "circular dependency between
 * ensembles a -> b -> a"), every step model must have a READY version
 * (the one the step names, or its current one; a READY ensemble counts),
 * and the steps must fit together (ensemble_plan.h).  false with the
 * reason naming the step.  A reason quotes no other ensemble's reason, so
 * it stays short: an ensemble step not READY says to look at its status. */
static bool steps_ready(mfs_registry *r, const mfs_version *e, char *why, size_t size)
{
	const mfs_model_config *c = e->config;
	char cycle[MFS_ENSEMBLE_CYCLE_MAX];
	if (mfs_ensemble_find_cycle(e->model_name, c, lookup_step, r, cycle)) {
		snprintf(why, size, "circular dependency between ensembles %s", cycle);
		return false;
	}
	const mfs_model_config **cfgs = calloc((size_t)c->n_steps, sizeof(*cfgs));
	if (!cfgs) {
		snprintf(why, size, "out of memory");
		return false;
	}
	bool ok = true;
	for (int s = 0; ok && s < c->n_steps; s++) {
		const mfs_ensemble_step *st = &c->steps[s];
		model *sm = find_model(r, st->model_name);
		const mfs_version *sv = step_version(sm, st->model_version, true);
		const mfs_version *any = step_version(sm, st->model_version, false);
		ok = sv != NULL;
		if (sv) {
			cfgs[s] = sv->config;
		} else if (any && any->plan) {
			snprintf(why, size, "step %d (model '%s'): the ensemble '%s' is not READY (its status says why)",
				 s, st->model_name, st->model_name);
		} else if (!sm) {
			snprintf(why, size, "step %d (model '%s'): no model named '%s' is loaded",
				 s, st->model_name, st->model_name);
		} else if (st->model_version > 0) {
			snprintf(why, size, "step %d (model '%s'): version %" PRId64 " is not READY",
				 s, st->model_name, st->model_version);
		} else {
			const char *reason = sm->n_states ? sm->states[sm->n_states - 1].reason : "";
			snprintf(why, size, "step %d (model '%s'): it has no READY version%s%.200s%s", s,
				 st->model_name, *reason ? ": " : "", reason,
				 strlen(reason) > 200 ? "..." : "");
		}
	}
	mfs_error err;
	if (ok && mfs_ensemble_plan_check_steps(e->plan, c, cfgs, &err) < 0) {
		snprintf(why, size, "%s", err.msg);
		ok = false;
	}
	free(cfgs);
	return ok;
}

static bool same_state(const model *m, int64_t version, mfs_vstate st, const char *reason)
{
	for (int i = 0; i < m->n_states; i++)
		if (m->states[i].version == version)
			return m->states[i].state == st && strcmp(m->states[i].reason, reason) == 0;
	return false;
}

/* One pass over the ensembles: serve those whose steps are all there,
 * park the others with the reason.  true when one changed. */
static bool refresh_pass(mfs_registry *r)
{
	char why[MFS_ERROR_MSG_MAX];
	bool changed = false;
	for (int k = 0; k < r->n_models; k++) {
		model *m = &r->models[k];
		for (int i = 0; i < m->n_served; i++) {
			mfs_version *v = m->served[i];
			if (!v->plan || steps_ready(r, v, why, sizeof(why)))
				continue;
			mfs_version **p = realloc(m->parked, (size_t)(m->n_parked + 1) * sizeof(*p));
			if (!p)
				continue;   /* stays served; its requests fail naming the step */
			m->parked = p;
			take(m->served, &m->n_served, v->version);
			insert_sorted(m->parked, &m->n_parked, v);
			set_state(m, v->version, MFS_VS_UNAVAILABLE, why, "");
			mfs_log_warn("ensemble '%s' version %" PRId64 ": UNAVAILABLE: %s", m->name,
				     v->version, why);
			changed = true;
			i--;
		}
		for (int i = 0; i < m->n_parked; i++) {
			mfs_version *v = m->parked[i];
			if (!steps_ready(r, v, why, sizeof(why))) {
				if (!same_state(m, v->version, MFS_VS_UNAVAILABLE, why)) {
					set_state(m, v->version, MFS_VS_UNAVAILABLE, why, "");
					mfs_log_warn("ensemble '%s' version %" PRId64 ": UNAVAILABLE: %s",
						     m->name, v->version, why);
				}
				continue;
			}
			mfs_version **s = realloc(m->served, (size_t)(m->n_served + 1) * sizeof(*s));
			if (!s)
				continue;
			m->served = s;
			take(m->parked, &m->n_parked, v->version);
			insert_sorted(m->served, &m->n_served, v);
			set_state(m, v->version, MFS_VS_READY, v->placement.note, v->device);
			mfs_log_info("ensemble '%s' version %" PRId64 ": READY (%s)", m->name, v->version,
				     v->placement.note);
			changed = true;
			i--;
		}
	}
	return changed;
}

/* After any load or unload: as often as one pass changes something, as
 * an ensemble served or parked changes what an ensemble running it can
 * do (nested ensembles).  Bounded: without cycles (never served) it
 * settles in as many passes as the nesting is deep. */
static void refresh_ensembles(mfs_registry *r)
{
	for (int pass = 0; !r->stopping && pass < 64 && refresh_pass(r); pass++)
		;
}

/* The second half of unloading, with no lock held: fail what is queued
 * and drop the registry's reference. */
static void retire(mfs_registry *r, mfs_version *v, const char *reason)
{
	if (!v)
		return;
	uint64_t t0 = mfs_now_ns();
	__atomic_store_n(&v->unloaded, true, __ATOMIC_RELEASE);
	/* Its answers go with it: a reload's new load has another owner. */
	if (v->cache)
		mfs_rcache_drop_owner(v->cache, v->cache_owner);
	/* Draining (hot reload): what is queued or bound still runs on this
	 * version, which lives until its last request lets go. */
	if (!__atomic_load_n(&r->drain, __ATOMIC_ACQUIRE)) {
		char why[512];
		snprintf(why, sizeof(why), "version %" PRId64 " was unloaded before the request ran (%s)",
			 v->version, reason ? reason : "unloaded");
		if (v->seqb)
			mfs_seqb_close(v->seqb, why);
		if (v->queue)
			mfs_sched_queue_close(v->queue, why);
	}
	__atomic_add_fetch(&r->n_unloads, 1, __ATOMIC_RELAXED);
	mfs_log_info("model '%s' version %" PRId64 ": unloaded (%s) in %.3f s", v->model_name,
		     v->version, reason ? reason : "unloaded", (double)(mfs_now_ns() - t0) / 1e9);
	mfs_version_put(v);
}

static int load_version(mfs_registry *r, const char *name, int64_t version,
			bool timing, mfs_error *err);

int mfs_registry_load_version(mfs_registry *r, const char *name,
			      int64_t version, mfs_error *err)
{
	return load_version(r, name, version, false, err);
}

bool mfs_registry_time_next(mfs_registry *r, char *name, size_t size)
{
	int64_t version = 0;
	bool found = false;
	mfs_error err;

	pthread_mutex_lock(&r->lock);
	for (int i = 0; !found && !r->stopping && i < r->n_models; i++)
		for (int k = 0; !found && k < r->models[i].n_served; k++) {
			mfs_version *v = r->models[i].served[k];
			if (v->placement.trial_pending && !v->trial_taken) {
				v->trial_taken = found = true;
				version = v->version;
				snprintf(name, size, "%s", r->models[i].name);
				set_state(&r->models[i], version, MFS_VS_READY,
					  "auto: cpu until timed (timing the engines now)", v->device);
			}
		}
	pthread_mutex_unlock(&r->lock);
	if (!found)
		return false;
	mfs_log_info("model '%s' version %" PRId64 ": timing the engines (KIND_AUTO)", name, version);
	load_version(r, name, version, true, &err);
	return true;
}

/* timing: the engines timed now (mfs_registry_time_next); the version
 * serving meanwhile stays READY. */
static int load_version(mfs_registry *r, const char *name, int64_t version,
			bool timing, mfs_error *err)
{
	mfs_route_opts route = r->route;
	route.defer_trial &= !timing;
	pthread_mutex_lock(&r->lock);
	model *m = add_model(r, name);
	if (m && !timing)
		set_state(m, version, MFS_VS_LOADING, "", "");
	pthread_mutex_unlock(&r->lock);
	if (!m)
		return mfs_fail(err, ENOMEM, "out of memory");

	mfs_loaded_version *lv = NULL;
	mfs_version *v = NULL;
	int rc = mfs_load_version(r->repository, name, version, r->backend_dir, &lv, err);
	if (rc == 0) {
		mfs_version_env env = { .registry = r, .sched = r->sched, .route = &route,
					.worker_program = r->worker_program, .cache = r->cache };
		rc = mfs_version_new(&env, lv, &v, err);
	}
	mfs_version *old = NULL;
	pthread_mutex_lock(&r->lock);
	m = find_model(r, name);
	if (rc < 0) {
		if (m)
			note_failure(m, version, err->msg);
	} else if (!m) {
		/* The model was unloaded while this version loaded. */
		rc = mfs_fail(err, ENOENT, "model '%s' was removed while version %" PRId64 " loaded",
			      name, version);
		old = v;
		v = NULL;
	} else {
		/* An ensemble starts parked: refresh_ensembles serves it
		 * once its steps are there. */
		mfs_version ***list = v->plan ? &m->parked : &m->served;
		int *n = v->plan ? &m->n_parked : &m->n_served;
		mfs_version **s = realloc(*list, (size_t)(*n + 1) * sizeof(*s));
		if (!s) {
			rc = mfs_fail(err, ENOMEM, "out of memory");
			set_state(m, version, MFS_VS_UNAVAILABLE, err->msg, "");
			old = v;
			v = NULL;
		} else {
			*list = s;
			old = unserve(m, version);
			insert_sorted(*list, n, v);
			/* READY's reason says how the engine was chosen */
			set_state(m, version, MFS_VS_READY, v->placement.note, v->device);
		}
	}
	refresh_ensembles(r);
	pthread_mutex_unlock(&r->lock);
	if (old)
		retire(r, old, "replaced by a new load");
	if (rc < 0) {
		__atomic_add_fetch(&r->n_load_failures, 1, __ATOMIC_RELAXED);
		mfs_log_error("model '%s' version %" PRId64 ": load failed: %s", name, version, err->msg);
		return rc;
	}
	__atomic_add_fetch(&r->n_loads, 1, __ATOMIC_RELAXED);
	if (v->plan)   /* READY or not: refresh_ensembles said which */
		mfs_log_info("model '%s' version %" PRId64 ": loaded, an ensemble of %s", name,
			     version, v->placement.note);
	else
		mfs_log_info("model '%s' version %" PRId64 ": READY on %s (loaded in %.3f s; %s)", name,
			     version, v->device, v->load_seconds, v->placement.note);
	return 0;
}

void mfs_registry_list_loading(mfs_registry *r, const char *name, int64_t version)
{
	pthread_mutex_lock(&r->lock);
	model *m = add_model(r, name);
	bool listed = false;
	for (int i = 0; m && i < m->n_states; i++)
		listed |= m->states[i].version == version;
	if (m && !listed)
		set_state(m, version, MFS_VS_LOADING, "", "");
	pthread_mutex_unlock(&r->lock);
}

void mfs_registry_set_drain(mfs_registry *r, bool drain)
{
	__atomic_store_n(&r->drain, drain, __ATOMIC_RELEASE);
}

void mfs_registry_set_failure(mfs_registry *r, const char *name, int64_t version,
			      const char *reason)
{
	pthread_mutex_lock(&r->lock);
	model *m = add_model(r, name);
	if (m)
		note_failure(m, version, reason);
	pthread_mutex_unlock(&r->lock);
	__atomic_add_fetch(&r->n_load_failures, 1, __ATOMIC_RELAXED);
}

void mfs_registry_get_counts(mfs_registry *r, mfs_registry_counts *out)
{
	out->loads = __atomic_load_n(&r->n_loads, __ATOMIC_RELAXED);
	out->load_failures = __atomic_load_n(&r->n_load_failures, __ATOMIC_RELAXED);
	out->unloads = __atomic_load_n(&r->n_unloads, __ATOMIC_RELAXED);
}

int mfs_registry_unload_version(mfs_registry *r, const char *name,
				int64_t version, const char *reason)
{
	pthread_mutex_lock(&r->lock);
	model *m = find_model(r, name);
	mfs_version *v = m ? unserve(m, version) : NULL;
	if (m)
		drop_state(m, version);
	refresh_ensembles(r);
	pthread_mutex_unlock(&r->lock);
	if (!v)
		return -ENOENT;
	retire(r, v, reason);
	return 0;
}

/* The model's versions, served and parked, each with the registry's
 * reference, go to the caller; the rest is freed. */
static void model_release(model *m, mfs_version ***out, int *n,
			  mfs_version ***parked, int *n_parked)
{
	*parked = m->parked;
	*n_parked = m->n_parked;
	*out = m->served;
	*n = m->n_served;
	for (int i = 0; i < m->n_states; i++)
		free(m->states[i].reason);
	free(m->states);
	free(m->name);
}

int mfs_registry_unload_model(mfs_registry *r, const char *name,
			      const char *reason)
{
	mfs_version **vs = NULL, **ps = NULL;
	int n = 0, np = 0;
	pthread_mutex_lock(&r->lock);
	model *m = find_model(r, name);
	if (m) {
		model_release(m, &vs, &n, &ps, &np);
		int i = (int)(m - r->models);
		memmove(&r->models[i], &r->models[i + 1], (size_t)(r->n_models - i - 1) * sizeof(model));
		r->n_models--;
		refresh_ensembles(r);
	}
	pthread_mutex_unlock(&r->lock);
	if (!m)
		return -ENOENT;
	for (int i = 0; i < n; i++)
		retire(r, vs[i], reason);
	for (int i = 0; i < np; i++)
		retire(r, ps[i], reason);
	free(vs);
	free(ps);
	return 0;
}

/* Load one repository entry's versions as its policy selects, when it
 * belongs to this pass (0: models, 1: ensembles); the failures. */
static int load_entry(mfs_registry *r, const mfs_repo_entry *e, int pass)
{
	mfs_model_config cfg;
	mfs_error lerr;
	mfs_error_clear(&lerr);
	if (e->n_versions == 0) {
		if (pass == 0)
			mfs_repo_note_unversioned(e);
		return 0;
	}
	int rc = mfs_load_config(r->repository, e->name, &cfg, &lerr);
	if (rc < 0) {
		if (pass == 1)
			return 0;
		/* Show the failure on the version that would be served. */
		pthread_mutex_lock(&r->lock);
		model *m = add_model(r, e->name);
		if (m)
			set_state(m, e->versions[e->n_versions - 1], MFS_VS_UNAVAILABLE, lerr.msg, "");
		pthread_mutex_unlock(&r->lock);
		mfs_log_error("model '%s': %s", e->name, lerr.msg);
		return 1;
	}
	if (mfs_config_is_ensemble(&cfg) != (pass == 1)) {
		mfs_config_release(&cfg);
		return 0;
	}
	int64_t *vs = malloc((size_t)e->n_versions * sizeof(*vs));
	if (!vs) {
		mfs_config_release(&cfg);
		return 1;
	}
	memcpy(vs, e->versions, (size_t)e->n_versions * sizeof(*vs));
	int nv = mfs_config_apply_version_policy(&cfg, vs, e->n_versions);
	mfs_config_release(&cfg);
	int failed = 0;
	for (int k = 0; k < nv; k++)
		if (mfs_registry_load_version(r, e->name, vs[k], &lerr) < 0)
			failed++;
	free(vs);
	return failed;
}

int mfs_registry_list_unloaded(mfs_registry *r, const char *name,
			       int64_t version, const char *reason)
{
	pthread_mutex_lock(&r->lock);
	model *m = add_model(r, name);
	mfs_version **vs = NULL, **ps = NULL;
	int n = 0, np = 0;
	if (m) {
		vs = m->served;
		n = m->n_served;
		ps = m->parked;
		np = m->n_parked;
		m->served = m->parked = NULL;
		m->n_served = m->n_parked = 0;
		while (m->n_states > 0)
			drop_state(m, m->states[0].version);
		set_state(m, version, MFS_VS_UNAVAILABLE, reason, "");
		refresh_ensembles(r);
	}
	pthread_mutex_unlock(&r->lock);
	if (!m)
		return -ENOMEM;
	for (int i = 0; i < n; i++)
		retire(r, vs[i], reason);
	for (int i = 0; i < np; i++)
		retire(r, ps[i], reason);
	free(vs);
	free(ps);
	return 0;
}

int mfs_registry_load_all(mfs_registry *r, mfs_error *err)
{
	mfs_repo_entry *entries = NULL;
	int n = 0, failed = 0;
	int rc = mfs_repo_scan(r->repository, &entries, &n, err);
	if (rc < 0)
		return rc;
	/* Ensembles after the models they run, so that they start READY
	 * rather than passing through UNAVAILABLE. */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < n; i++)
			failed += load_entry(r, &entries[i], pass);
	mfs_repo_entries_free(entries, n);
	return failed;
}

int mfs_registry_get(mfs_registry *r, const char *name, int64_t version,
		     mfs_version **out, mfs_error *err)
{
	int rc = 0;
	pthread_mutex_lock(&r->lock);
	model *m = find_model(r, name);
	mfs_version *v = NULL;
	if (!m) {
		rc = mfs_fail(err, ENOENT, "no model named '%s'", name);
	} else if (version == 0) {
		if (m->n_served)
			v = m->served[m->n_served - 1];
		else if (m->n_states && m->states[m->n_states - 1].state == MFS_VS_LOADING)
			rc = mfs_fail(err, EAGAIN, "model '%s' is LOADING (version %" PRId64 "); wait for READY in its status",
				      name, m->states[m->n_states - 1].version);
		else
			rc = mfs_fail(err, EAGAIN, "model '%s' has no READY version%s%s", name,
				      m->n_states && *m->states[m->n_states - 1].reason ? ": " : "",
				      m->n_states ? m->states[m->n_states - 1].reason : "");
	} else {
		for (int i = 0; i < m->n_served; i++)
			if (m->served[i]->version == version)
				v = m->served[i];
		if (!v) {
			bool known = false;
			for (int i = 0; i < m->n_states; i++)
				known |= m->states[i].version == version;
			rc = known ? mfs_fail(err, EAGAIN, "model '%s' version %" PRId64 " is not READY", name, version)
				   : mfs_fail(err, ENOENT, "model '%s' has no version %" PRId64, name, version);
		}
	}
	if (v)
		mfs_version_get(v);
	pthread_mutex_unlock(&r->lock);
	*out = v;
	return rc;
}

static int fill_info(const model *m, mfs_model_info *out)
{
	memset(out, 0, sizeof(*out));
	out->name = strdup(m->name);
	out->versions = calloc((size_t)m->n_states + 1, sizeof(*out->versions));
	if (!out->name || !out->versions) {
		mfs_model_info_release(out);
		return -ENOMEM;
	}
	for (int i = 0; i < m->n_states; i++) {
		mfs_version_info *vi = &out->versions[out->n_versions];
		vi->version = m->states[i].version;
		vi->state = m->states[i].state;
		vi->reason = strdup(m->states[i].reason ? m->states[i].reason : "");
		snprintf(vi->device, sizeof(vi->device), "%s", m->states[i].device);
		for (int k = 0; k < m->n_served; k++)
			if (m->served[k]->version == vi->version)
				vi->served = true;
		out->n_versions++;
		if (!vi->reason) {
			mfs_model_info_release(out);
			return -ENOMEM;
		}
	}
	out->current = m->n_served ? m->served[m->n_served - 1]->version : 0;
	return 0;
}

void mfs_model_info_release(mfs_model_info *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->n_versions; i++)
		free(m->versions[i].reason);
	free(m->versions);
	free(m->name);
	memset(m, 0, sizeof(*m));
}

void mfs_registry_snapshot_free(mfs_model_info *m, int n)
{
	for (int i = 0; i < n; i++)
		mfs_model_info_release(&m[i]);
	free(m);
}

int mfs_registry_snapshot(mfs_registry *r, mfs_model_info **out, int *n)
{
	pthread_mutex_lock(&r->lock);
	mfs_model_info *ms = calloc((size_t)r->n_models + 1, sizeof(*ms));
	int k = 0, rc = ms ? 0 : -ENOMEM;
	for (; rc == 0 && k < r->n_models; k++)
		rc = fill_info(&r->models[k], &ms[k]);
	pthread_mutex_unlock(&r->lock);
	if (rc < 0) {
		mfs_registry_snapshot_free(ms, k);
		return rc;
	}
	*out = ms;
	*n = k;
	return 0;
}

int mfs_registry_model_snapshot(mfs_registry *r, const char *name,
				mfs_model_info *out)
{
	pthread_mutex_lock(&r->lock);
	model *m = find_model(r, name);
	int rc = m ? fill_info(m, out) : -ENOENT;
	pthread_mutex_unlock(&r->lock);
	return rc;
}

int mfs_registry_served(mfs_registry *r, mfs_version ***out, int *n)
{
	pthread_mutex_lock(&r->lock);
	int total = 0;
	for (int i = 0; i < r->n_models; i++)
		total += r->models[i].n_served;
	mfs_version **vs = calloc((size_t)total + 1, sizeof(*vs));
	if (vs) {
		total = 0;
		for (int i = 0; i < r->n_models; i++)
			for (int k = 0; k < r->models[i].n_served; k++) {
				vs[total] = r->models[i].served[k];
				mfs_version_get(vs[total++]);
			}
	}
	pthread_mutex_unlock(&r->lock);
	if (!vs)
		return -ENOMEM;
	*out = vs;
	*n = total;
	return 0;
}

void mfs_registry_free(mfs_registry *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	r->stopping = true;
	pthread_mutex_unlock(&r->lock);
	while (r->n_models > 0) {
		char *name = strdup(r->models[0].name);
		if (!name)
			break;
		mfs_registry_unload_model(r, name, "the daemon is stopping");
		free(name);
	}
	free(r->models);
	pthread_mutex_destroy(&r->lock);
	free((char *)r->route.opencl_device);
	free(r->backend_dir);
	free(r->worker_program);
	free(r->repository);
	free(r);
}


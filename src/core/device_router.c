/* device_router.c - see device_router.h. */
#include "device_router.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "build_id.h"
#include "cache_dir.h"
#include "engine.h"
#include "engine_trial.h"
#include "log.h"
#include "ocl_backend.h"
#include "route_cache.h"

/* KIND_AUTO's trial of OpenCL after the CPU's (engine_trial.h): stopped
 * when a timed run passes K_RUN x the CPU's median, or its setup (context
 * and first run) passes K_SETUP x the CPU's whole trial, and at least
 * MIN_SETUP_MS (a GPU's first run may compile kernels once). */
#define K_RUN 2.0
#define K_SETUP 2.0
#define MIN_SETUP_MS 1000.0

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ---- shared OpenCL backends, one per selector ---- */

typedef struct shared_ocl {
	char *selector;            /* "" for the default */
	mfs_backend *backend;
	struct shared_ocl *next;
} shared_ocl;

static pthread_mutex_t ocl_lock = PTHREAD_MUTEX_INITIALIZER;
static shared_ocl *ocl_list;

int mfs_router_opencl(const char *selector, mfs_backend **out, mfs_error *err)
{
	const char *key = selector ? selector : "";
	shared_ocl *s;
	int rc = 0;

	pthread_mutex_lock(&ocl_lock);
	for (s = ocl_list; s; s = s->next)
		if (!strcmp(s->selector, key))
			break;
	if (!s) {
		mfs_backend *b = NULL;
		rc = mfs_backend_opencl_new(selector, &b, err);
		if (!rc) {
			s = calloc(1, sizeof(*s));
			if (!s || !(s->selector = strdup(key))) {
				free(s);
				s = NULL;
				mfs_backend_opencl_free(b);
				rc = mfs_fail(err, ENOMEM, "out of memory");
			} else {
				s->backend = b;
				s->next = ocl_list;
				ocl_list = s;
				mfs_log_debug("OpenCL engine on %s", mfs_backend_name(b));
			}
		}
	}
	pthread_mutex_unlock(&ocl_lock);
	*out = s ? s->backend : NULL;
	return rc;
}

int mfs_router_opencl_count(void)
{
	int n = 0;
	pthread_mutex_lock(&ocl_lock);
	for (shared_ocl *s = ocl_list; s; s = s->next)
		n++;
	pthread_mutex_unlock(&ocl_lock);
	return n;
}

void mfs_router_opencl_each(void (*fn)(const mfs_opencl_info *info, void *arg), void *arg)
{
	pthread_mutex_lock(&ocl_lock);
	for (shared_ocl *s = ocl_list; s; s = s->next) {
		mfs_opencl_info info;
		if (mfs_backend_opencl_info(s->backend, &info) == 0)
			fn(&info, arg);
	}
	pthread_mutex_unlock(&ocl_lock);
}

void mfs_router_shutdown(void)
{
	pthread_mutex_lock(&ocl_lock);
	while (ocl_list) {
		shared_ocl *s = ocl_list;
		ocl_list = s->next;
		mfs_backend_opencl_free(s->backend);
		free(s->selector);
		free(s);
	}
	pthread_mutex_unlock(&ocl_lock);
}

/* ---- the choice ---- */

static mfs_instance_kind config_kind(const mfs_model_config *cfg)
{
	for (int i = 0; cfg && i < cfg->n_instance_groups; i++)
		if (cfg->instance_groups[i].kind != MFS_KIND_AUTO)
			return cfg->instance_groups[i].kind;
	return MFS_KIND_AUTO;
}

static void set_cpu(mfs_placement *p)
{
	p->backend = mfs_backend_cpu();
	snprintf(p->device, sizeof(p->device), "cpu");
}

static void set_opencl(mfs_placement *p, mfs_backend *b)
{
	const char *name = mfs_backend_name(b);
	p->backend = b;
	snprintf(p->device, sizeof(p->device), "opencl");
	snprintf(p->opencl_name, sizeof(p->opencl_name), "%s",
		 strncmp(name, "opencl:", 7) ? name : name + 7);
}

/* ---- KIND_AUTO: a trial, or the choice stored by an earlier one ---- */

static const char *short_name(mfs_backend *b)
{
	const char *name = mfs_backend_name(b);
	return strncmp(name, "opencl:", 7) ? name : name + 7;
}

/* The cache's key for this trial; false when nothing is kept (no cache
 * directory, no model file). */
static bool route_key(const mfs_model_config *cfg, const char *model_path,
		      mfs_backend *ocl, const mfs_tensor *in, int n_in,
		      const char *sample_name, mfs_route_key *k, char *dir, size_t size)
{
	mfs_opencl_info info;
	mfs_error e;

	if (!model_path || !mfs_cache_path("routes", dir, size))
		return false;
	memset(k, 0, sizeof(*k));
	if (mfs_route_hash_file(model_path, &k->model_hash, &e) < 0) {
		mfs_log_warn("engine-choice cache: %s: %s (the choice is not kept)", model_path, e.msg);
		return false;
	}
	k->config_hash = mfs_route_hash_config(cfg);
	snprintf(k->build, sizeof(k->build), "%s", mfs_build_id());
	snprintf(k->sample, sizeof(k->sample), "%s", sample_name ? sample_name : "");
	if (mfs_backend_opencl_info(ocl, &info) == 0) {
		snprintf(k->opencl, sizeof(k->opencl), "%s", info.name);
		snprintf(k->driver, sizeof(k->driver), "%s", info.driver);
	}
	if (cfg && cfg->max_batch_size > 0 && n_in > 0 && in[0].shape.rank > 0)
		k->batch = in[0].shape.dims[0];
	return true;
}

/* Time the CPU, then OpenCL within limits set by the CPU's trial.  Fails
 * only when the CPU's trial fails. */
static int trial_both(const mfs_graph *graph, mfs_backend *ocl, const mfs_tensor *in,
		      const char *on, mfs_placement *p, mfs_error *err)
{
	mfs_trial cpu, gpu = { .median_ms = -1 };
	mfs_error oerr;
	int rc = mfs_trial_run(graph, mfs_backend_cpu(), in, NULL, &cpu, err);

	if (rc)
		return rc;
	p->cpu_ms = cpu.median_ms;
	mfs_trial_limit lim = {
		.setup_ms = K_SETUP * cpu.total_ms > MIN_SETUP_MS ? K_SETUP * cpu.total_ms : MIN_SETUP_MS,
		.run_ms = K_RUN * cpu.median_ms,
	};
	mfs_error_clear(&oerr);
	/* The kernels' one build per process is no model's cost: made
	 * before the clock starts (the first trial waits for it). */
	double t0 = now_ms();
	int orc = mfs_backend_opencl_prepare(ocl, &oerr);
	if (now_ms() - t0 > 100)
		mfs_log_info("OpenCL kernels built for %s in %.3f s", short_name(ocl),
			     (now_ms() - t0) / 1e3);
	if (!orc)
		orc = mfs_trial_run(graph, ocl, in, &lim, &gpu, &oerr);
	mfs_log_debug("auto trial on %s: cpu context %.0f ms, first run %.0f ms, %.0f ms in all; "
		      "opencl context %.0f ms, first run %.0f ms, %.0f ms in all%s",
		      short_name(ocl), cpu.context_ms, cpu.first_ms, cpu.total_ms, gpu.context_ms,
		      gpu.first_ms, gpu.total_ms, gpu.stopped ? " (stopped)" : "");
	if (orc)
		snprintf(p->note, sizeof(p->note), "auto: cpu %.3f ms%s (opencl failed: %s)",
			 p->cpu_ms, on, oerr.msg);
	else if (gpu.stopped)
		snprintf(p->note, sizeof(p->note),
			 "auto: cpu %.3f ms%s; opencl stopped after %.0f ms, %s (%s)",
			 p->cpu_ms, on, gpu.total_ms, gpu.why, short_name(ocl));
	else {
		p->opencl_ms = gpu.median_ms;
		p->measured = true;
		if (p->opencl_ms < p->cpu_ms)
			set_opencl(p, ocl);
		snprintf(p->note, sizeof(p->note), "auto: cpu %.3f ms, opencl %.3f ms%s (%s)",
			 p->cpu_ms, p->opencl_ms, on, short_name(ocl));
	}
	return 0;
}

static void use_stored(const mfs_route_entry *e, mfs_backend *ocl, mfs_placement *p)
{
	if (!strcmp(e->device, "opencl"))
		set_opencl(p, ocl);
	p->cpu_ms = e->cpu_ms;
	p->opencl_ms = e->opencl_ms;
	p->measured = e->cpu_ms >= 0 && e->opencl_ms >= 0;
	p->cached = true;
	snprintf(p->note, sizeof(p->note), "%.*s [cached: not timed again]",
		 (int)sizeof(p->note) - 32, e->note);
}

static void store(const char *dir, const mfs_route_key *k, const mfs_placement *p)
{
	mfs_route_entry e = { .cpu_ms = p->cpu_ms, .opencl_ms = p->opencl_ms };
	mfs_error err;
	snprintf(e.device, sizeof(e.device), "%s", p->device);
	snprintf(e.note, sizeof(e.note), "%s", p->note);
	if (mfs_route_cache_put(dir, k, &e, &err) < 0)
		mfs_log_warn("engine-choice cache: %s (the choice is not kept)", err.msg);
}

static int route_auto(const mfs_graph *graph, const mfs_model_config *cfg,
		      const mfs_route_opts *opts, const char *model_path, const mfs_tensor *sample,
		      const char *sample_name, mfs_placement *p, mfs_error *err)
{
	int n_in = mfs_graph_n_inputs(graph), rc = 0;
	mfs_tensor *in = NULL;
	mfs_backend *ocl = NULL;
	mfs_route_key key;
	mfs_route_entry stored;
	mfs_error oerr;
	char dir[1024], on[160] = "";
	const char *sel = opts ? opts->opencl_device : NULL;

	set_cpu(p);
	mfs_error_clear(&oerr);
	if (mfs_router_opencl(sel, &ocl, &oerr)) {
		snprintf(p->note, sizeof(p->note), "auto: cpu (no OpenCL engine: %s)", oerr.msg);
		return 0;
	}
	if (!sample) {
		in = calloc((size_t)n_in + 1, sizeof(*in));
		if (!in)
			return mfs_fail(err, ENOMEM, "out of memory");
		if ((rc = mfs_trial_inputs(graph, in, err))) {
			free(in);
			return rc;
		}
	}
	const mfs_tensor *use = sample ? sample : in;
	bool keep = route_key(cfg, model_path, ocl, use, n_in, sample_name, &key, dir, sizeof(dir));
	if (keep && mfs_route_cache_get(dir, &key, &stored) == 1) {
		use_stored(&stored, ocl, p);
		goto out;
	}
	if (opts && opts->defer_trial) {
		p->trial_pending = true;
		snprintf(p->note, sizeof(p->note),
			 "auto: cpu until timed (the engines are timed after the loads waiting)");
		goto out;
	}
	if (sample)
		snprintf(on, sizeof(on), " on warm-up sample '%s'", sample_name ? sample_name : "?");
	rc = trial_both(graph, ocl, use, on, p, err);
	if (!rc && keep) {
		store(dir, &key, p);
	} else if (rc && sample) {
		/* The user's own sample does not run: that is the model's
		 * failure to load, not a guess that missed. */
		mfs_error_prefix(err, "warm-up sample '%s' failed on the cpu: ",
				 sample_name ? sample_name : "?");
	} else if (rc) {
		/* Made-up inputs cannot feed a model whose input is a shape, an
		 * index or a count (Reshape's shape, OneHot's depth): the model
		 * is fine, the warm-up is not.  Keep the CPU, untimed, and say
		 * why in status rather than refuse the load. */
		snprintf(p->note, sizeof(p->note),
			 "auto: cpu, not timed (the warm-up with made-up inputs failed: %s)",
			 err->msg);
		mfs_error_clear(err);
		rc = 0;
	}
out:
	for (int i = 0; in && i < n_in; i++)
		mfs_tensor_release(&in[i]);
	free(in);
	return rc;
}

int mfs_route(const mfs_graph *graph, const mfs_model_config *cfg,
	      const mfs_route_opts *opts, const char *model_path,
	      const mfs_tensor *sample, const char *sample_name,
	      mfs_placement *p, mfs_error *err)
{
	mfs_instance_kind kind = config_kind(cfg);
	mfs_device_choice dev = opts ? opts->device : MFS_DEVICE_AUTO;
	const char *sel = opts ? opts->opencl_device : NULL;
	mfs_backend *ocl = NULL;
	int rc;

	memset(p, 0, sizeof(*p));
	p->cpu_ms = p->opencl_ms = -1;
	p->kind = kind == MFS_KIND_CPU ? "KIND_CPU" : kind == MFS_KIND_GPU ? "KIND_GPU" : "KIND_AUTO";
	if (kind == MFS_KIND_CPU || (kind == MFS_KIND_AUTO && dev == MFS_DEVICE_CPU)) {
		set_cpu(p);
		snprintf(p->note, sizeof(p->note), "%s", kind == MFS_KIND_CPU ? "KIND_CPU" : "--device=cpu");
		return 0;
	}
	if (mfs_graph_has_containers(graph) || mfs_graph_has_strings(graph)) {
		/* the OpenCL engine has no sequences, optionals or strings
		 * (docs/OPENCL.md): the CPU, whatever was asked */
		set_cpu(p);
		snprintf(p->note, sizeof(p->note),
			 "%s: cpu (%s run on the CPU engine only)",
			 kind == MFS_KIND_GPU ? "KIND_GPU" :
			 dev == MFS_DEVICE_OPENCL ? "--device=opencl" : "auto",
			 mfs_graph_has_strings(graph) ? "string tensors" : "sequences and optionals");
		return 0;
	}
	if (kind == MFS_KIND_GPU || dev == MFS_DEVICE_OPENCL) {
		rc = mfs_router_opencl(sel, &ocl, err);
		if (rc) {
			mfs_error_prefix(err, "%s: ", kind == MFS_KIND_GPU ? "instance_group KIND_GPU"
								   : "--device=opencl");
			return rc;
		}
		set_opencl(p, ocl);
		snprintf(p->note, sizeof(p->note), "%s on %s",
			 kind == MFS_KIND_GPU ? "KIND_GPU" : "--device=opencl", p->opencl_name);
		return 0;
	}

	return route_auto(graph, cfg, opts, model_path, sample, sample_name, p, err);
}

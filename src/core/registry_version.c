/* registry_version.c - see registry_version.h: a served version built
 * from a loaded one (an ensemble's plan, an ONNX model's execution
 * contexts warmed, or a custom backend's worker processes; then its
 * queue), and freed with its last reference.  No lock: a version is
 * built before it is published and freed after the last put.
 */
#include "registry_version.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_worker.h"
#include "engine.h"
#include "generate.h"
#include "log.h"
#include "queue_policy.h"
#include "sequence_batcher.h"
#include "response_cache.h"
#include "warmup.h"

static int run_instance(void *ctx, int instance, const mfs_tensor *inputs,
			mfs_tensor *outputs, mfs_error *err)
{
	mfs_version *v = ctx;
	if (v->workers)
		return mfs_worker_run(v->workers[instance], inputs, outputs, err);
	return mfs_exec_run(v->execs[instance], inputs, outputs, err);
}

static void version_free(mfs_version *v)
{
	/* The queue first: it waits for runs in flight on our contexts
	 * (there are none once the last reference is gone, but a queue
	 * closed by unload may still be finishing its bookkeeping). */
	if (v->queue)
		mfs_sched_queue_free(v->queue);
	mfs_seqb_free(v->seqb);   /* after the queue: no step in flight */
	mfs_generator_free(v->gen);
	mfs_ensemble_plan_free(v->plan);
	if (v->cache)   /* what requests draining after the unload kept */
		mfs_rcache_drop_owner(v->cache, v->cache_owner);
	for (int i = 0; i < v->n_execs; i++)
		mfs_exec_free(v->execs[i]);
	free(v->execs);
	for (int i = 0; i < v->n_workers; i++)
		mfs_worker_free(v->workers[i]);
	free(v->workers);
	if (v->lv)
		mfs_loaded_version_free(v->lv);
	mfs_stats_release(&v->stats);
	free(v->model_name);
	free(v);
}

void mfs_version_get(mfs_version *v)
{
	__atomic_add_fetch(&v->refs, 1, __ATOMIC_RELAXED);
}

void mfs_version_put(mfs_version *v)
{
	if (v && __atomic_sub_fetch(&v->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		mfs_log_debug("model '%s' version %" PRId64 ": freed", v->model_name, v->version);
		version_free(v);
	}
}

bool mfs_version_unloaded(const mfs_version *v)
{
	return __atomic_load_n(&v->unloaded, __ATOMIC_ACQUIRE);
}

static int instance_count(const mfs_model_config *c)
{
	int n = 0;
	for (int i = 0; i < c->n_instance_groups; i++)
		n += c->instance_groups[i].count > 0 ? c->instance_groups[i].count : 1;
	return n > 0 ? n : 1;
}

int64_t mfs_registry_queue_limit(const mfs_model_config *c)
{
	return c->dynamic_batching.default_queue_policy.max_queue_size > 0
		       ? c->dynamic_batching.default_queue_policy.max_queue_size
		       : MFS_DEFAULT_MAX_QUEUE_SIZE;
}

/* An ensemble: no engine and no queue, its steps' versions run it
 * (ensemble.h); status and stats.json name the steps in the order they
 * run. */
static int plan_ensemble(mfs_registry *r, mfs_version *v, const char *label, mfs_error *err)
{
	int rc = mfs_ensemble_plan_new(v->config, &v->plan, err);
	if (rc < 0) {
		mfs_error_prefix(err, "%s: ", label);
		return rc;
	}
	v->registry = r;
	snprintf(v->device, sizeof(v->device), "ensemble");
	snprintf(v->placement.device, sizeof(v->placement.device), "ensemble");
	v->placement.cpu_ms = v->placement.opencl_ms = -1;
	v->placement.kind = "";
	size_t used = (size_t)snprintf(v->placement.note, sizeof(v->placement.note),
				       "%d steps:", v->plan->n_steps);
	for (int k = 0; k < v->plan->n_steps && used < sizeof(v->placement.note); k++)
		used += (size_t)snprintf(v->placement.note + used, sizeof(v->placement.note) - used,
					 "%s %s", k ? "," : "",
					 v->config->steps[v->plan->order[k]].model_name);
	return 0;
}

/* ONNX: model_warmup's samples (warmup.h) checked before anything runs;
 * the engine chosen (device_router.h: KIND_AUTO times both on a warm-up,
 * the first sample when there is one); one execution context per
 * instance, each warmed before the version is READY (as Triton does). */
static int compile_instances(const mfs_route_opts *route, mfs_version *v, int n,
			     const char *label, mfs_error *err)
{
	mfs_loaded_version *lv = v->lv;
	mfs_warmup_sample *samples = NULL;
	int rc, n_samples = 0;

	v->n_graph_inputs = mfs_graph_n_inputs(lv->graph);
	v->n_graph_outputs = mfs_graph_n_outputs(lv->graph);
	rc = mfs_warmup_prepare(v->config, lv->graph, lv->version_dir, &samples, &n_samples, err);
	if (rc < 0) {
		mfs_error_prefix(err, "%s: ", label);
		return rc;
	}
	rc = mfs_route(lv->graph, v->config, route, lv->model_path, n_samples ? samples[0].inputs : NULL,
		       n_samples ? samples[0].def->name : NULL, &v->placement, err);
	if (rc < 0) {
		mfs_error_prefix(err, "%s: ", label);
		goto out;
	}
	snprintf(v->device, sizeof(v->device), "%s", v->placement.device);
	uint64_t warm_t0 = mfs_now_ns();
	v->execs = calloc((size_t)n, sizeof(*v->execs));
	if (!v->execs) {
		rc = mfs_fail(err, ENOMEM, "out of memory");
		goto out;
	}
	for (; v->n_execs < n; v->n_execs++) {
		rc = mfs_exec_new(lv->graph, v->placement.backend, &v->execs[v->n_execs], err);
		if (rc == 0)
			rc = mfs_warmup_run(v->execs[v->n_execs], lv->graph, samples, n_samples, err);
		if (rc < 0) {
			if (v->execs[v->n_execs])
				v->n_execs++;   /* freed with the version */
			mfs_error_prefix(err, "%s: ", label);
			goto out;
		}
	}
	if (n_samples > 0)
		mfs_log_info("%s: warm-up: %d sample(s) ran on %d instance(s) in %.3f s", label,
			     n_samples, n, (double)(mfs_now_ns() - warm_t0) / 1e9);
out:
	mfs_warmup_samples_free(samples, n_samples);
	return rc;
}

/* A custom backend: one worker process per instance (backend_worker.h),
 * each one's init run now so that a bad library fails the load. */
static int start_workers(const char *program, mfs_version *v, int n, mfs_error *err)
{
	mfs_loaded_version *lv = v->lv;

	v->n_graph_inputs = v->config->n_inputs;    /* no graph: the config's order */
	v->n_graph_outputs = v->config->n_outputs;
	snprintf(v->placement.device, sizeof(v->placement.device), "cpu");
	v->placement.kind = "KIND_CPU";
	v->placement.cpu_ms = v->placement.opencl_ms = -1;
	snprintf(v->placement.note, sizeof(v->placement.note), "backend '%s' (%s), %d worker process%s",
		 v->config->backend, lv->backend_library, n, n == 1 ? "" : "es");
	v->workers = calloc((size_t)n, sizeof(*v->workers));
	if (!v->workers)
		return mfs_fail(err, ENOMEM, "out of memory");
	for (; v->n_workers < n; v->n_workers++) {
		mfs_worker_spec spec = {
			.program = program, .library = lv->backend_library,
			.model_name = lv->model_name, .version = lv->version,
			.version_dir = lv->version_dir, .instance = v->n_workers,
			.config = v->config,
		};
		int rc = mfs_worker_new(&spec, &v->workers[v->n_workers], err);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* sequence_batching: the batcher in front of the queue, told the
 * graph's names (sequence_batcher.h). */
static int start_sequences(mfs_version *v, int instances, const char *label, mfs_error *err)
{
	const mfs_graph *g = v->lv->graph;
	if (!g)
		return mfs_fail(err, EINVAL, "%s: sequence_batching is not supported with a custom "
				"backend", label);
	int ni = mfs_graph_n_inputs(g), no = mfs_graph_n_outputs(g), rc;
	const char **in = calloc((size_t)ni + 1, sizeof(char *));
	const char **out = calloc((size_t)no + 1, sizeof(char *));
	mfs_dtype *dt = calloc((size_t)ni + 1, sizeof(mfs_dtype));
	char *dir = strdup(v->lv->version_dir);
	char *slash = dir ? strrchr(dir, '/') : NULL;
	if (!in || !out || !dt || !slash) {
		rc = mfs_fail(err, ENOMEM, "out of memory");
		goto out;
	}
	*slash = '\0';
	for (int i = 0; i < ni; i++) {
		in[i] = mfs_graph_input(g, i)->name;
		dt[i] = mfs_graph_input(g, i)->dtype;
	}
	for (int i = 0; i < no; i++)
		out[i] = mfs_graph_output(g, i)->name;
	mfs_seqb_conf sc = {
		.label = label, .cfg = v->config, .queue = v->queue, .instances = instances,
		.n_inputs = ni, .n_outputs = no, .input_names = in, .input_dtypes = dt,
		.output_names = out, .model_dir = dir,
	};
	rc = mfs_seqb_new(&sc, &v->seqb, err);
	if (rc < 0)
		mfs_error_prefix(err, "%s: ", label);
out:
	free(in);
	free(out);
	free(dt);
	free(dir);
	return rc;
}

/* Takes lv; the version it makes has one reference. */
int mfs_version_new(const mfs_version_env *env, mfs_loaded_version *lv,
		    mfs_version **out, mfs_error *err)
{
	mfs_version *v = calloc(1, sizeof(*v));
	if (!v) {
		mfs_loaded_version_free(lv);
		return mfs_fail(err, ENOMEM, "out of memory");
	}
	mfs_stats_init(&v->stats);
	v->lv = lv;
	v->config = &lv->config;
	v->version = lv->version;
	v->load_seconds = lv->load_seconds;
	uint64_t made_ns = mfs_now_ns();
	v->refs = 1;
	/* An ensemble's "graph" is its config (tensors in config order);
	 * start_workers and compile_instances set their own. */
	v->n_graph_inputs = lv->config.n_inputs;
	v->n_graph_outputs = lv->config.n_outputs;
	snprintf(v->device, sizeof(v->device), "cpu");
	int r_ = 0;
	int n = instance_count(v->config);
	char label[256];
	snprintf(label, sizeof(label), "model '%s' version %" PRId64, lv->model_name, lv->version);
	if (!(v->model_name = strdup(lv->model_name))) {
		r_ = mfs_fail(err, ENOMEM, "out of memory");
		goto fail;
	}
	if (v->config->response_cache && !env->cache)
		mfs_log_warn("%s: response_cache is enabled but the daemon has no --cache-size: not cached",
			     label);
	else if (v->config->response_cache)
		v->cache = env->cache;
	v->cache_owner = mfs_rcache_new_owner();
	if (mfs_config_is_ensemble(v->config)) {
		r_ = plan_ensemble(env->registry, v, label, err);
		if (r_ < 0)
			goto fail;
		*out = v;
		return 0;
	}
	r_ = lv->backend_library ? start_workers(env->worker_program, v, n, err)
				  : compile_instances(env->route, v, n, label, err);
	if (r_ < 0)
		goto fail;
	const mfs_model_config *c = v->config;
	int preferred = 0;
	for (int i = 0; i < c->dynamic_batching.n_preferred_batch_size; i++)
		if (c->dynamic_batching.preferred_batch_size[i] > preferred)
			preferred = c->dynamic_batching.preferred_batch_size[i];
	for (int i = 0; i < c->sequence_batching.n_preferred_batch_size; i++)
		if (c->sequence_batching.preferred_batch_size[i] > preferred)
			preferred = c->sequence_batching.preferred_batch_size[i];
	mfs_queue_level *levels = NULL;
	int n_levels = 0, default_level = 1;
	r_ = mfs_queue_policy_levels(c, &levels, &n_levels, &default_level, err);
	if (r_ < 0)
		goto fail;
	mfs_queue_conf qc = {
		.label = label,
		.instances = n,
		.max_batch_size = c->max_batch_size,
		/* Sequence batching: one row per sequence, merged as
		 * dynamic batching merges requests. */
		.dynamic_batching = (c->has_dynamic_batching || c->has_sequence_batching) &&
				    c->max_batch_size > 0,
		.max_queue_delay_ns = (uint64_t)(c->has_sequence_batching ?
						 c->sequence_batching.max_queue_delay_us :
						 c->dynamic_batching.max_queue_delay_us) * 1000u,
		.preferred_batch_size = preferred,
		.max_queue_size = mfs_registry_queue_limit(c),
		.levels = levels,
		.n_levels = n_levels,
		.default_level = default_level,
		.stats = &v->stats,
	};
	mfs_runner runner = {
		.run = run_instance, .ctx = v,
		.n_inputs = v->n_graph_inputs,
		.n_outputs = v->n_graph_outputs,
	};
	r_ = mfs_sched_queue_new(env->sched, &qc, &runner, &v->queue, err);
	free(levels);
	if (r_ < 0)
		goto fail;
	if (c->has_sequence_batching && (r_ = start_sequences(v, n, label, err)) < 0)
		goto fail;
	r_ = mfs_generator_new(c, v->lv->graph, v->queue, label, &v->gen, err);
	if (r_ < 0)
		goto fail;
	/* nv_model_load_duration_secs: from the load's start (reading the
	 * model) to now, ready to serve: the engine choice, the instances
	 * and their warm-up included */
	v->load_seconds = lv->load_seconds + (double)(mfs_now_ns() - made_ns) / 1e9;
	*out = v;
	return 0;
fail:
	version_free(v);
	return r_;
}

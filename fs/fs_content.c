/* fs_content.c - the text of the synthetic files: .index.json, .metrics,
 * <model>/{config.json,metadata.json,status,stats.json} and a request's
 * status, error and trace.json.  Generated at open (and at getattr for
 * the size), so a reader sees one consistent snapshot. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_internal.h"
#include "health.h"
#include "log.h"
#include "metrics.h"

const char *const mfile_names[MF_COUNT] = {
	"config.json", "metadata.json", "status", "stats.json", "infer", "generate",
};

static int from_json(json_t *j, char **buf, size_t *len)
{
	if (!j)
		return -ENOMEM;
	char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(j);
	if (!s)
		return -ENOMEM;
	size_t n = strlen(s);
	char *s2 = realloc(s, n + 2);
	if (!s2) {
		free(s);
		return -ENOMEM;
	}
	s2[n] = '\n';
	s2[n + 1] = '\0';
	*buf = s2;
	*len = n + 1;
	return 0;
}

static int from_text(char *s, char **buf, size_t *len)
{
	if (!s)
		return -ENOMEM;
	*buf = s;
	*len = strlen(s);
	return 0;
}

static int index_json(mfs_fs *fs, char **buf, size_t *len)
{
	mfs_model_info *ms;
	int n;
	if (mfs_registry_snapshot(fs->conf.registry, &ms, &n) < 0)
		return -ENOMEM;
	json_t *arr = json_array();
	for (int i = 0; arr && i < n; i++)
		for (int k = 0; k < ms[i].n_versions; k++) {
			char v[32];
			snprintf(v, sizeof(v), "%" PRId64, ms[i].versions[k].version);
			json_array_append_new(arr, json_pack("{s:s,s:s,s:s,s:s}", "name", ms[i].name,
							     "version", v,
							     "state", mfs_vstate_name(ms[i].versions[k].state),
							     "reason", ms[i].versions[k].reason));
		}
	mfs_registry_snapshot_free(ms, n);
	return from_json(arr, buf, len);
}

static int metrics_text(mfs_fs *fs, char **buf, size_t *len)
{
	mfs_version **vs;
	int n;
	if (mfs_registry_served(fs->conf.registry, &vs, &n) < 0)
		return -ENOMEM;
	mfs_metrics_entry *e = calloc((size_t)n + 1, sizeof(*e));
	int rc = -ENOMEM;
	if (e) {
		for (int i = 0; i < n; i++)
			e[i] = (mfs_metrics_entry){ vs[i]->model_name, vs[i]->version, &vs[i]->stats,
						    vs[i]->load_seconds,
						    vs[i]->queue ? mfs_sched_queue_depth(vs[i]->queue, true) : 0 };
		*buf = mfs_metrics_render(e, n, len);
		rc = *buf ? 0 : -ENOMEM;
		free(e);
	}
	if (rc == 0) {
		/* Hot reload's counters (docs/RELOAD.md). */
		mfs_registry_counts c;
		mfs_registry_get_counts(fs->conf.registry, &c);
		char *more = NULL;
		int k = asprintf(&more, "%s# HELP nv_model_load_total Model versions loaded since start\n"
				 "# TYPE nv_model_load_total counter\nnv_model_load_total %" PRIu64 "\n"
				 "# HELP nv_model_load_failure_total Model loads (or configs) that failed since start\n"
				 "# TYPE nv_model_load_failure_total counter\nnv_model_load_failure_total %" PRIu64 "\n"
				 "# HELP nv_model_unload_total Model versions unloaded since start\n"
				 "# TYPE nv_model_unload_total counter\nnv_model_unload_total %" PRIu64 "\n",
				 *buf, c.loads, c.load_failures, c.unloads);
		free(*buf);
		*buf = k < 0 ? NULL : more;
		*len = k < 0 ? 0 : (size_t)k;
		rc = k < 0 ? -ENOMEM : 0;
	}
	for (int i = 0; i < n; i++)
		mfs_version_put(vs[i]);
	free(vs);
	return rc;
}

static json_t *io_json(const mfs_model_config *c, bool input, int i)
{
	mfs_tensor_spec spec;
	if (input)
		mfs_config_input_spec(c, i, &spec);
	else
		mfs_config_output_spec(c, i, &spec);
	json_t *shape = json_array();
	for (int d = 0; d < spec.rank; d++)
		json_array_append_new(shape, json_integer(spec.dims[d]));
	const char *dt = mfs_dtype_kserve_name(spec.dtype);
	json_t *o = json_pack("{s:s,s:s,s:o}", "name", spec.name, "datatype", dt ? dt : "UNDEFINED",
			      "shape", shape);
	/* An image input's layout (config format), as config.json names it. */
	if (o && input && c->inputs[i].format != MFS_FORMAT_NONE)
		json_object_set_new(o, "format", json_string(mfs_io_format_name(c->inputs[i].format)));
	return o;
}

static json_t *metadata(const mfs_version *v, const mfs_model_info *mi, bool pinned)
{
	json_t *versions = json_array();
	if (pinned) {
		char s[32];
		snprintf(s, sizeof(s), "%" PRId64, v->version);
		json_array_append_new(versions, json_string(s));
	} else {
		for (int k = 0; k < mi->n_versions; k++)
			if (mi->versions[k].served) {
				char s[32];
				snprintf(s, sizeof(s), "%" PRId64, mi->versions[k].version);
				json_array_append_new(versions, json_string(s));
			}
	}
	json_t *ins = json_array(), *outs = json_array();
	for (int i = 0; i < v->config->n_inputs; i++)
		json_array_append_new(ins, io_json(v->config, true, i));
	for (int i = 0; i < v->config->n_outputs; i++)
		json_array_append_new(outs, io_json(v->config, false, i));
	/* A custom backend's model has no platform: name the backend, as
	 * Triton's metadata does for backend models. */
	const char *platform = v->config->platform ? v->config->platform :
			       mfs_config_custom_backend(v->config) ? v->config->backend :
			       "onnxruntime_onnx";
	return json_pack("{s:s,s:o,s:s,s:o,s:o}", "name", v->model_name, "versions", versions,
			 "platform", platform,
			 "inputs", ins, "outputs", outs);
}

static int status_text(const mfs_model_info *mi, int64_t pin, char **buf, size_t *len)
{
	char line[MFS_ERROR_MSG_MAX + 128];
	const mfs_version_info *vi = NULL;
	for (int k = 0; k < mi->n_versions; k++) {
		const mfs_version_info *x = &mi->versions[k];
		if (pin ? x->version == pin : (mi->current ? x->version == mi->current : true))
			vi = x;   /* unpinned with nothing served: the highest version tried */
	}
	if (!vi)
		snprintf(line, sizeof(line), "UNAVAILABLE - - no version loaded\n");
	else
		snprintf(line, sizeof(line), "%s %" PRId64 " %s%s%s\n", mfs_vstate_name(vi->state),
			 vi->version, *vi->device ? vi->device : "-", *vi->reason ? " " : "", vi->reason);
	/* Hot reload: a newer version that failed while this one serves
	 * shows its reason too (SPEC.md section 8), on the same line. */
	const mfs_version_info *failed = NULL;
	for (int k = 0; !pin && vi && k < mi->n_versions; k++)
		if (mi->versions[k].version > vi->version && mi->versions[k].state == MFS_VS_UNAVAILABLE)
			failed = &mi->versions[k];
	if (failed) {
		size_t l = strlen(line);
		if (l > 0)
			line[--l] = '\0';
		snprintf(line + l, sizeof(line) - l, "%sversion %" PRId64 " UNAVAILABLE: %s\n",
			 *vi->reason ? "; " : " ", failed->version, failed->reason);
	}
	return from_text(strdup(line), buf, len);
}

static int stats_json(mfs_fs *fs, const mfs_model_info *mi, int64_t pin, char **buf, size_t *len)
{
	json_t *arr = json_array();
	for (int k = 0; arr && k < mi->n_versions; k++) {
		const mfs_version_info *vi = &mi->versions[k];
		if (!vi->served || (pin && vi->version != pin))
			continue;
		mfs_version *v;
		mfs_error err;
		if (mfs_registry_get(fs->conf.registry, mi->name, vi->version, &v, &err) < 0)
			continue;
		json_t *o = mfs_stats_to_json(v->model_name, v->version, &v->stats);
		/* which engine runs it and why (device_router.h) */
		const mfs_placement *pl = &v->placement;
		if (o)
			json_object_set_new(o, "device", json_pack(
				"{s:s,s:s,s:s,s:s,s:b,s:o,s:o}", "choice", v->device,
				"kind", pl->kind ? pl->kind : "KIND_AUTO",
				"opencl_device", pl->opencl_name, "note", pl->note, "cached", pl->cached,
				"cpu_ms", pl->cpu_ms >= 0 ? json_real(pl->cpu_ms) : json_null(),
				"opencl_ms", pl->opencl_ms >= 0 ? json_real(pl->opencl_ms) : json_null()));
		json_array_append_new(arr, o);
		mfs_version_put(v);
	}
	return from_json(json_pack("{s:o}", "model_stats", arr), buf, len);
}

static int model_file(mfs_fs *fs, const target *t, char **buf, size_t *len)
{
	mfs_model_info mi;
	int rc = mfs_registry_model_snapshot(fs->conf.registry, t->model, &mi);
	if (rc < 0)
		return rc;
	if (t->version) {
		bool served = false;
		for (int k = 0; k < mi.n_versions; k++)
			served |= mi.versions[k].served && mi.versions[k].version == t->version;
		if (!served) {
			mfs_model_info_release(&mi);
			return -ENOENT;
		}
	}
	switch ((mfile)t->sub) {
	case MF_STATUS:
		rc = status_text(&mi, t->version, buf, len);
		break;
	case MF_STATS:
		rc = stats_json(fs, &mi, t->version, buf, len);
		break;
	case MF_CONFIG:
	case MF_METADATA: {
		mfs_version *v;
		mfs_error err;
		rc = mfs_registry_get(fs->conf.registry, t->model, t->version, &v, &err);
		if (rc < 0)
			break;
		rc = from_json(t->sub == MF_CONFIG ? mfs_config_to_json(v->config)
						   : metadata(v, &mi, t->version != 0), buf, len);
		mfs_version_put(v);
		break;
	}
	default:
		*buf = NULL;
		*len = 0;
		break;
	}
	mfs_model_info_release(&mi);
	return rc;
}

/* .live and .ready (SPEC.md section 3): the text, or -EAGAIN. */
static int health_text(mfs_fs *fs, int ready, char **buf, size_t *len)
{
	char why[MFS_ERROR_MSG_MAX] = "";
	int rc = 0;
	if (!__atomic_load_n(&fs->accepting, __ATOMIC_ACQUIRE)) {
		snprintf(why, sizeof(why), "the daemon is stopping");
		rc = -EAGAIN;
	} else if (ready) {
		bool first_done = !fs->conf.loader || mfs_reloader_first_load_done(fs->conf.loader);
		rc = mfs_health_ready(fs->conf.registry, first_done, fs->conf.strict_readiness, why,
				      sizeof(why));
	}
	if (rc < 0) {
		mfs_log_debug("%s: not %s: %s", ready ? ".ready" : ".live", ready ? "ready" : "live", why);
		return rc;
	}
	return from_text(strdup(ready ? "ready\n" : "live\n"), buf, len);
}

int fs_content(mfs_fs *fs, const target *t, char **buf, size_t *len)
{
	switch (t->kind) {
	case N_HEALTH:
		return health_text(fs, t->sub, buf, len);
	case N_INDEX:
		return index_json(fs, buf, len);
	case N_METRICS:
		return metrics_text(fs, buf, len);
	case N_MFILE:
		return model_file(fs, t, buf, len);
	case N_RFILE:
		switch ((rfile)t->sub) {
		case RF_STATUS: return from_text(mfs_request_status_text(t->req), buf, len);
		case RF_ERROR: return from_text(mfs_request_error_text(t->req), buf, len);
		case RF_TRACE: return from_text(mfs_request_trace_json(t->req), buf, len);
		default: break;
		}
		break;
	default:
		break;
	}
	*buf = NULL;
	*len = 0;
	return 0;
}

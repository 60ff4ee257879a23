/* device_router.c - see device_router.h. */
#include "device_router.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "log.h"
#include "ocl_backend.h"

#define WARMUP_RUNS 3          /* timed runs after one untimed */
#define WARMUP_MAX_ITERATIONS 10000   /* per Loop node and warm-up run */

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

/* ---- timing ---- */

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Warm-up inputs: every variable dim 1, floats 0.5, the rest zeros. */
static int warmup_inputs(const mfs_graph *g, mfs_tensor *in, mfs_error *err)
{
	int n = mfs_graph_n_inputs(g);
	for (int i = 0; i < n; i++) {
		const mfs_io_desc *d = mfs_graph_input(g, i);
		mfs_shape s = { .rank = d->rank < 0 ? 1 : d->rank };
		int rc;
		for (int k = 0; k < s.rank; k++)
			s.dims[k] = d->rank < 0 || d->dims[k] < 0 ? 1 : d->dims[k];
		rc = mfs_tensor_alloc(&in[i], d->dtype, &s, err);
		if (rc) {
			for (int j = 0; j < i; j++)
				mfs_tensor_release(&in[j]);
			return rc;
		}
		if (d->dtype == MFS_DT_FLOAT)
			for (size_t e = 0; e < in[i].nbytes / sizeof(float); e++)
				((float *)in[i].data)[e] = 0.5f;
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Median time of WARMUP_RUNS runs on backend after one untimed run. */
static int time_engine(const mfs_graph *g, mfs_backend *b, const mfs_tensor *in,
		       double *ms, mfs_error *err)
{
	int n_out = mfs_graph_n_outputs(g), rc;
	mfs_tensor *out = calloc((size_t)n_out + 1, sizeof(*out));
	double t[WARMUP_RUNS];
	mfs_exec *e = NULL;

	if (!out)
		return mfs_fail(err, ENOMEM, "out of memory");
	rc = mfs_exec_new(g, b, &e, err);
	/* A loop whose exit depends on data may never meet it on made-up
	 * inputs: bounded, the warm-up fails and the model stays on the CPU
	 * (the note says why) instead of hanging the load. */
	mfs_engine_set_thread_max_iterations(WARMUP_MAX_ITERATIONS);
	for (int r = 0; !rc && r <= WARMUP_RUNS; r++) {
		double t0 = now_ms();
		rc = mfs_exec_run(e, in, out, err);
		if (rc)
			break;
		if (r)
			t[r - 1] = now_ms() - t0;
		for (int k = 0; k < n_out; k++)
			mfs_tensor_release(&out[k]);
	}
	mfs_engine_set_thread_max_iterations(0);
	mfs_exec_free(e);
	free(out);
	if (rc)
		return rc;
	qsort(t, WARMUP_RUNS, sizeof(t[0]), cmp_double);
	*ms = t[WARMUP_RUNS / 2];
	return 0;
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

int mfs_route(const mfs_graph *graph, const mfs_model_config *cfg,
	      const mfs_route_opts *opts, const mfs_tensor *sample,
	      const char *sample_name, mfs_placement *p, mfs_error *err)
{
	mfs_instance_kind kind = config_kind(cfg);
	mfs_device_choice dev = opts ? opts->device : MFS_DEVICE_AUTO;
	const char *sel = opts ? opts->opencl_device : NULL;
	mfs_backend *ocl = NULL;
	mfs_tensor *in = NULL;
	mfs_error oerr;
	int n_in, rc;

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

	/* KIND_AUTO: time both */
	set_cpu(p);
	mfs_error_clear(&oerr);
	if (mfs_router_opencl(sel, &ocl, &oerr)) {
		snprintf(p->note, sizeof(p->note), "auto: cpu (no OpenCL engine: %s)", oerr.msg);
		return 0;
	}
	p->opencl_name[0] = '\0';
	n_in = mfs_graph_n_inputs(graph);
	if (!sample) {
		in = calloc((size_t)n_in + 1, sizeof(*in));
		if (!in)
			return mfs_fail(err, ENOMEM, "out of memory");
		rc = warmup_inputs(graph, in, err);
		if (rc) {
			free(in);
			return rc;
		}
	}
	char on[160] = "";
	if (sample)
		snprintf(on, sizeof(on), " on warm-up sample '%s'", sample_name ? sample_name : "?");
	rc = time_engine(graph, mfs_backend_cpu(), sample ? sample : in, &p->cpu_ms, err);
	if (!rc) {
		if (time_engine(graph, ocl, sample ? sample : in, &p->opencl_ms, &oerr)) {
			snprintf(p->note, sizeof(p->note), "auto: cpu %.3f ms%s (opencl failed: %s)",
				 p->cpu_ms, on, oerr.msg);
		} else {
			const char *name = mfs_backend_name(ocl);
			p->measured = true;
			if (p->opencl_ms < p->cpu_ms)
				set_opencl(p, ocl);
			snprintf(p->note, sizeof(p->note), "auto: cpu %.3f ms, opencl %.3f ms%s (%s)",
				 p->cpu_ms, p->opencl_ms, on,
				 strncmp(name, "opencl:", 7) ? name : name + 7);
		}
	} else if (sample) {
		/* The user's own sample does not run: that is the model's
		 * failure to load, not a guess that missed. */
		mfs_error_prefix(err, "warm-up sample '%s' failed on the cpu: ",
				 sample_name ? sample_name : "?");
	} else {
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
	for (int i = 0; in && i < n_in; i++)
		mfs_tensor_release(&in[i]);
	free(in);
	return rc;
}

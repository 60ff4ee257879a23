/* engine.c - the backend-independent half of engine.h: execution contexts
 * on a backend, checking a request's inputs against the model, threads. */
#include <cblas.h>
#include <omp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_contention.h"
#include "graph.h"
#include "thread_sizing.h"

struct mfs_exec {
	const mfs_graph *m;
	mfs_backend *backend;
	void *ctx;
	mfs_sizing sizing;    /* threads per batch size, from the first runs */
	uint64_t runs;        /* runs started */
};

static atomic_int engine_threads;      /* 0: library defaults */
void mfs_engine_set_threads(int n)
{
	if (n < 1)
		n = 1;
	atomic_store(&engine_threads, n);
	omp_set_num_threads(n);
	/* OpenBLAS runs inside the engine's OpenMP threads (mfs_sgemm splits
	 * its products over them): a second pool of its own pthreads,
	 * spinning after each call, took the cores OpenMP needed. */
	openblas_set_num_threads(1);
}

void mfs_engine_thread_warm(void)
{
	int n = atomic_load(&engine_threads);
	if (n > 1) {
		/* the team is what is wanted; the body must do something, or
		 * the compiler drops the empty region */
		atomic_int joined = 0;
		#pragma omp parallel num_threads(n)
		atomic_fetch_add_explicit(&joined, 1, memory_order_relaxed);
	}
}

/* Runs in flight in this process, on any execution context. */
static atomic_int runs_in_flight;

/* omp_set_num_threads only sets the calling thread's value: a run on a
 * thread created after mfs_engine_set_threads would otherwise use every
 * core, so each run applies the setting to its own thread.  Concurrent
 * runs (several instances, several models) share the threads: a run
 * that starts while k others are running gets n / (k + 1) of them (at
 * least one), so that k + 1 OpenMP teams of n threads do not fight over
 * n cores.  The share is taken at the start of a run: one that started
 * alone keeps its threads until it ends. */
int mfs_engine_thread_share(int threads, int active)
{
	if (active < 1)
		active = 1;
	return threads / active > 0 ? threads / active : 1;
}

/* The threads a run takes (set on the calling thread), or 0 where the
 * library defaults apply: what its sizing asked for (thread_sizing.h:
 * one or half where measured no slower or faster), no more than
 * its share beside concurrent runs, and one while other work keeps the
 * cores busy (cpu_contention.h: spinning threads would hold the cores
 * their partners need). */
static int apply_threads(int active, int want)
{
	int n = atomic_load(&engine_threads);
	if (n <= 0)
		return 0;   /* library defaults (tools, tests) */
	int share = mfs_engine_thread_share(n, active);
	n = mfs_cpu_contended() ? 1 : want < share ? want : share;
	if (omp_get_max_threads() != n)
		omp_set_num_threads(n);
	return n;
}

const char *mfs_backend_name(mfs_backend *b)
{
	return b->iface->name(b);
}

int mfs_exec_new(const mfs_graph *m, mfs_backend *backend, mfs_exec **out,
		 mfs_error *err)
{
	mfs_exec *e;
	mfs_error local;
	int rc;

	if (!err)
		err = &local;
	*out = NULL;
	if (!backend)
		backend = mfs_backend_cpu();
	for (int i = 0; i < m->n_nodes; i++) {
		const mfs_node *nd = &m->nodes[i];
		if (!backend->iface->supports_op(backend, nd->def, nd->onnx))
			return mfs_fail(err, ENOTSUP,
					"model '%s': backend %s cannot run %s '%s'",
					m->label, mfs_backend_name(backend),
					nd->onnx->op_type, onnx_node_label(nd->onnx));
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return mfs_fail(err, ENOMEM, "out of memory");
	e->m = m;
	e->backend = backend;
	/* MFS_THREAD_SIZING=0: all threads unless small (A/B runs) */
	e->sizing.no_half = getenv("MFS_THREAD_SIZING") && !strcmp(getenv("MFS_THREAD_SIZING"), "0");
	rc = backend->iface->exec_new(backend, m, &e->ctx, err);
	if (rc) {
		free(e);
		return rc;
	}
	*out = e;
	return 0;
}

void mfs_exec_free(mfs_exec *e)
{
	if (!e)
		return;
	e->backend->iface->exec_free(e->ctx);
	free(e);
}

static int check_tensor(const mfs_graph *m, const mfs_io_desc *d,
			const mfs_tensor *t, mfs_error *err);

/* A sequence or optional input: its kinds as declared, each of its
 * tensors of the declared dtype and consistent. */
static int check_container(const mfs_graph *m, const mfs_io_desc *d,
			   const mfs_tensor *t, mfs_error *err)
{
	char got[64], want[64];
	mfs_io_desc item = *d;

	if (t->kind != d->kind ||
	    (d->kind == MFS_KIND_OPTIONAL && t->elem_kind != d->elem_kind) ||
	    (t->dtype != d->dtype && d->dtype != MFS_DT_UNDEFINED))
		return mfs_fail(err, EINVAL,
				"model '%s': input '%s' is a %s, the model expects a %s",
				m->label, d->name,
				mfs_type_format(t->kind, t->elem_kind, t->dtype,
						got, sizeof(got)),
				mfs_type_format(d->kind, d->elem_kind, d->dtype,
						want, sizeof(want)));
	if (t->n_items < 0 || (t->n_items && !t->items) ||
	    (d->kind == MFS_KIND_OPTIONAL && t->n_items > 1))
		return mfs_fail(err, EINVAL, "model '%s': input '%s' holds %d items",
				m->label, d->name, t->n_items);
	item.kind = d->kind == MFS_KIND_OPTIONAL ? d->elem_kind : MFS_KIND_TENSOR;
	item.elem_kind = MFS_KIND_TENSOR;
	for (int k = 0; k < t->n_items; k++) {
		int rc = item.kind == MFS_KIND_TENSOR
			 ? check_tensor(m, &item, &t->items[k], err)
			 : check_container(m, &item, &t->items[k], err);
		if (rc)
			return rc;
	}
	return 0;
}

static int check_input(const mfs_graph *m, int i, const mfs_tensor *t,
		       mfs_error *err)
{
	const mfs_io_desc *d = &m->inputs[i];
	/* A body's input typed only at run (subgraph.h), or a value of the
	 * enclosing scope (whose kind the enclosing graph checked), takes
	 * a container as it comes. */
	if (d->kind == MFS_KIND_TENSOR && t->kind != MFS_KIND_TENSOR &&
	    (d->dtype == MFS_DT_UNDEFINED || i >= m->n_formal))
		return 0;
	/* an optional given its value itself (a Loop carrying what its
	 * body returns): the operators that read optionals take that too */
	if (d->kind == MFS_KIND_OPTIONAL && t->kind == d->elem_kind) {
		mfs_io_desc value = *d;
		value.kind = d->elem_kind;
		value.elem_kind = MFS_KIND_TENSOR;
		return value.kind == MFS_KIND_TENSOR ? check_tensor(m, &value, t, err)
						     : check_container(m, &value, t, err);
	}
	if (d->kind != MFS_KIND_TENSOR || t->kind != MFS_KIND_TENSOR)
		return check_container(m, d, t, err);
	return check_tensor(m, d, t, err);
}

static int check_tensor(const mfs_graph *m, const mfs_io_desc *d,
			const mfs_tensor *t, mfs_error *err)
{
	char got[160], want[160];
	mfs_shape ws;
	size_t esize = mfs_dtype_size(t->dtype), n = esize;

	if (t->kind != MFS_KIND_TENSOR)
		return mfs_fail(err, EINVAL, "model '%s': input '%s' holds a %s where a tensor belongs",
				m->label, d->name, mfs_kind_name(t->kind));
	/* UNDEFINED: a body's input typed only at run (subgraph.h) */
	if (t->dtype != d->dtype && d->dtype != MFS_DT_UNDEFINED)
		return mfs_fail(err, EINVAL,
				"model '%s': input '%s' has data type %s, the model expects %s",
				m->label, d->name, mfs_dtype_onnx_name(t->dtype),
				mfs_dtype_onnx_name(d->dtype));
	if (t->shape.rank < 0 || t->shape.rank > MFS_MAX_RANK)
		return mfs_fail(err, EINVAL, "model '%s': input '%s' has rank %d",
				m->label, d->name, t->shape.rank);
	ws.rank = d->rank;
	memcpy(ws.dims, d->dims, sizeof(ws.dims));
	if (d->rank >= 0 && t->shape.rank != d->rank)
		goto bad_shape;
	for (int k = 0; k < t->shape.rank; k++) {
		if (t->shape.dims[k] < 0)
			goto bad_shape;
		if (d->rank >= 0 && d->dims[k] >= 0 && d->dims[k] != t->shape.dims[k])
			goto bad_shape;
		if (t->shape.dims[k] && n > SIZE_MAX / (size_t)t->shape.dims[k])
			goto bad_shape;
		n *= (size_t)t->shape.dims[k];
	}
	if (t->nbytes != n || (n && !t->data))
		return mfs_fail(err, EINVAL,
				"model '%s': input '%s' holds %zu bytes, its shape %s needs %zu",
				m->label, d->name, t->data ? t->nbytes : 0,
				mfs_shape_format(&t->shape, got, sizeof(got)), n);
	if (t->layout != MFS_LAYOUT_PLAIN && !mfs_tensor_on_device(t))
		return mfs_fail(err, EINVAL,
				"model '%s': input '%s' is not in plain layout",
				m->label, d->name);
	return 0;
bad_shape:
	if (d->rank < 0)
		snprintf(want, sizeof(want), "any shape");
	else
		mfs_shape_format(&ws, want, sizeof(want));
	return mfs_fail(err, EINVAL,
			"model '%s': input '%s' has shape %s, the model expects %s",
			m->label, d->name,
			mfs_shape_format(&t->shape, got, sizeof(got)), want);
}

/* The rows of a run: its first input's first dimension (0 for none),
 * the batch size where the model has one. */
static int64_t first_rows(const mfs_graph *m, const mfs_tensor *inputs)
{
	return m->n_inputs > 0 && inputs[0].kind == MFS_KIND_TENSOR &&
	       inputs[0].shape.rank > 0 ? inputs[0].shape.dims[0] : 0;
}

bool mfs_exec_threads_settled(const mfs_exec *e, const mfs_tensor *inputs)
{
	return mfs_sizing_settled(&e->sizing, first_rows(e->m, inputs),
				  atomic_load(&engine_threads));
}

int mfs_exec_threads_chosen(const mfs_exec *e, const mfs_tensor *inputs)
{
	int n = atomic_load(&engine_threads);
	int t = mfs_sizing_threads(&e->sizing, first_rows(e->m, inputs));
	return t < n ? t : n;
}

/* An input left out (engine.h: a zeroed tensor) that has a default. */
static bool left_out(const mfs_io_desc *d, const mfs_tensor *t)
{
	return d->default_value && t->kind == MFS_KIND_TENSOR &&
	       t->dtype == MFS_DT_UNDEFINED && !t->data && !t->n_items;
}

/* *inputs, or where an input is left out that has a default, a copy
 * (*copy, the caller frees it) holding the default there (borrowed). */
static int fill_defaults(const mfs_graph *m, const mfs_tensor **inputs,
			 mfs_tensor **copy, mfs_error *err)
{
	*copy = NULL;
	for (int i = 0; i < m->n_inputs; i++) {
		if (!left_out(&m->inputs[i], &(*inputs)[i]))
			continue;
		if (!*copy) {
			*copy = malloc((size_t)m->n_inputs * sizeof(**copy));
			if (!*copy)
				return mfs_fail(err, ENOMEM, "out of memory");
			memcpy(*copy, *inputs, (size_t)m->n_inputs * sizeof(**copy));
		}
		(*copy)[i] = *m->inputs[i].default_value;
		(*copy)[i].owns_data = false;
	}
	if (*copy)
		*inputs = *copy;
	return 0;
}

static int exec_run(mfs_exec *e, const mfs_tensor *inputs, mfs_tensor *outputs,
		    mfs_error *err);

int mfs_exec_run(mfs_exec *e, const mfs_tensor *inputs, mfs_tensor *outputs,
		 mfs_error *err)
{
	mfs_tensor *copy;
	mfs_error local;
	int rc;

	if (!err)
		err = &local;
	mfs_error_clear(err);
	rc = fill_defaults(e->m, &inputs, &copy, err);
	if (!rc)
		rc = exec_run(e, inputs, outputs, err);
	free(copy);
	return rc;
}

/* Resident tensors (engine.h): which outputs the caller marked, and
 * host copies (*copy, n_inputs of them, the caller releases) of the
 * device inputs the backend cannot read where they lie.  *keep NULL and
 * *copy NULL when there are none of either. */
static int resident_args(mfs_exec *e, const mfs_tensor **inputs, mfs_tensor *outputs,
			 bool **keep, mfs_tensor **copy, mfs_error *err)
{
	const mfs_graph *m = e->m;
	bool can = e->backend->iface->exec_run_keep != NULL;
	*keep = NULL;
	*copy = NULL;
	for (int i = 0; i < m->n_outputs; i++)
		if (can && mfs_tensor_wants_device(&outputs[i])) {
			if (!*keep && !(*keep = calloc((size_t)m->n_outputs, sizeof(bool))))
				return mfs_fail(err, ENOMEM, "out of memory");
			(*keep)[i] = true;
		}
	for (int i = 0; i < m->n_inputs; i++) {
		const mfs_tensor *t = &(*inputs)[i];
		if (!mfs_tensor_on_device(t) ||
		    (can && ((const mfs_device_data *)t->data)->owner == e->backend))
			continue;
		if (!*copy) {
			if (!(*copy = calloc((size_t)m->n_inputs, sizeof(**copy))))
				return mfs_fail(err, ENOMEM, "out of memory");
			for (int k = 0; k < m->n_inputs; k++) {
				(*copy)[k] = (*inputs)[k];
				(*copy)[k].owns_data = false;
			}
		}
		int rc = mfs_tensor_to_host(t, &(*copy)[i], err);
		if (rc < 0)
			return rc;
	}
	if (*copy)
		*inputs = *copy;
	return 0;
}

static void resident_free(const mfs_graph *m, bool *keep, mfs_tensor *copy)
{
	for (int i = 0; copy && i < m->n_inputs; i++)
		mfs_tensor_release(&copy[i]);
	free(copy);
	free(keep);
}

static int exec_run(mfs_exec *e, const mfs_tensor *inputs, mfs_tensor *outputs,
		    mfs_error *err)
{
	const mfs_graph *m = e->m;
	bool *keep;
	mfs_tensor *copy;
	int rc;

	for (int i = 0; i < m->n_inputs; i++) {
		rc = check_input(m, i, &inputs[i], err);
		if (rc)
			return rc;
	}
	rc = resident_args(e, &inputs, outputs, &keep, &copy, err);
	for (int i = 0; i < m->n_outputs; i++)
		memset(&outputs[i], 0, sizeof(outputs[i]));
	if (rc < 0) {
		resident_free(m, keep, copy);
		return rc;
	}
	int n = atomic_load(&engine_threads);
	mfs_sizing_slot *slot = NULL;
	int want = n > 0 ? mfs_sizing_plan(&e->sizing, first_rows(m, inputs), n, &slot) : 0;
	int threads = apply_threads(atomic_fetch_add(&runs_in_flight, 1) + 1, want);
	struct timespec t0, t1;
	/* the first run prepares (oneDNN primitives, JIT): not a measure of
	 * the cores' load; nor is a run the sizing put on one thread whatever
	 * the load (a small model: its two reads of /proc were a tenth of an
	 * infer round trip's own work) */
	mfs_cpu_sample cpu = { .ok = false };
	bool first = e->runs++ == 0;
	if (threads && want != 1 && !first)
		mfs_cpu_sample_begin(&cpu);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (e->backend->iface->exec_run_keep)
		rc = e->backend->iface->exec_run_keep(e->ctx, inputs, outputs, keep, err);
	else
		rc = e->backend->iface->exec_run(e->ctx, inputs, outputs, err);
	resident_free(m, keep, copy);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	mfs_cpu_sample_end(&cpu, threads);
	atomic_fetch_sub(&runs_in_flight, 1);
	if (rc == 0 && n > 0 && threads == want)
		mfs_sizing_record(&e->sizing, slot, want, n, (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u +
						 (uint64_t)(t1.tv_nsec - t0.tv_nsec));
	if (rc) {
		if (rc > 0)
			rc = -EIO;
		mfs_error_prefix(err, "model '%s': ", m->label);
	}
	return rc;
}

int mfs_exec_run_nested(mfs_exec *e, const mfs_tensor *inputs,
			mfs_tensor *outputs, mfs_error *err)
{
	const mfs_graph *m = e->m;
	int rc;

	for (int i = 0; i < m->n_inputs; i++)
		if ((rc = check_input(m, i, &inputs[i], err)))
			return rc;
	for (int i = 0; i < m->n_outputs; i++)
		memset(&outputs[i], 0, sizeof(outputs[i]));
	rc = e->backend->iface->exec_run(e->ctx, inputs, outputs, err);
	return rc > 0 ? -EIO : rc;
}

void mfs_exec_get_stats(const mfs_exec *e, mfs_exec_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (e->backend->iface->exec_stats)
		e->backend->iface->exec_stats(e->ctx, out);
}

/* dense_util.c - window geometry, the oneDNN engine, layout copies (see
 * dense_util.h). */
#include <pthread.h>
#include <omp.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <cblas.h>

#include "dense_util.h"


static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static dnnl_engine_t engine;
static dnnl_status_t engine_status;

static void engine_create(void)
{
	engine_status = dnnl_engine_create(&engine, dnnl_cpu, 0);
	if (engine_status != dnnl_success)
		engine = NULL;
}

/* The engine lives as long as the process: primitives built from it may
 * outlive any one model, and oneDNN's engine is cheap and thread-safe. */
dnnl_engine_t mfs_dnnl_engine(mfs_error *err)
{
	pthread_once(&engine_once, engine_create);
	if (!engine)
		mfs_fail(err, EIO, "oneDNN: cannot create the CPU engine (%s)",
			 mfs_dnnl_status_str(engine_status));
	return engine;
}

/* The calling thread's scratch buffer, grown to at least size bytes (64-
 * byte aligned); freed when the thread ends. */
typedef struct tls_scratch {
	void *buf;
	size_t cap;
} tls_scratch;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_key_ok;

static void scratch_free(void *p)
{
	tls_scratch *t = p;
	if (t)
		free(t->buf);
	free(t);
}

static void scratch_key_make(void)
{
	scratch_key_ok = pthread_key_create(&scratch_key, scratch_free) == 0;
}

static void *thread_scratch(size_t size)
{
	pthread_once(&scratch_once, scratch_key_make);
	if (!scratch_key_ok)
		return NULL;
	tls_scratch *t = pthread_getspecific(scratch_key);
	if (!t) {
		if (!(t = calloc(1, sizeof(*t))))
			return NULL;
		if (pthread_setspecific(scratch_key, t)) {
			free(t);
			return NULL;
		}
	}
	if (t->cap < size) {
		void *nb;
		if (posix_memalign(&nb, 64, size))
			return NULL;
		free(t->buf);
		t->buf = nb;
		t->cap = size;
	}
	return t->buf;
}

dnnl_status_t mfs_dnnl_attr_create(dnnl_primitive_attr_t *attr)
{
	dnnl_status_t st = dnnl_primitive_attr_create(attr);
	if (st != dnnl_success)
		return st;
	st = dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user);
	if (st != dnnl_success) {
		dnnl_primitive_attr_destroy(*attr);
		*attr = NULL;
	}
	return st;
}

int mfs_dnnl_threads(void)
{
	return omp_get_max_threads();
}

static _Atomic uint64_t prims_created;
static _Thread_local char last_impl[64];

uint64_t mfs_dnnl_prims_created(void)
{
	return prims_created;
}

const char *mfs_dnnl_last_impl(void)
{
	return last_impl;
}

dnnl_status_t mfs_dnnl_prim_create(mfs_dnnl_prim *p, const_dnnl_primitive_desc_t pd,
				   dnnl_engine_t eng)
{
	const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
	dnnl_status_t st;

	memset(p, 0, sizeof(*p));
	p->scratch_size = smd ? dnnl_memory_desc_get_size(smd) : 0;
	if (p->scratch_size &&
	    (st = dnnl_memory_create(&p->scratch, smd, eng, DNNL_MEMORY_NONE)) != dnnl_success)
		return st;
	if ((st = dnnl_primitive_create(&p->prim, pd)) != dnnl_success) {
		mfs_dnnl_prim_destroy(p);
	} else {
		const char *impl = NULL;
		dnnl_primitive_kind_t kind = dnnl_undefined_primitive;
		prims_created++;
		dnnl_primitive_desc_query(pd, dnnl_query_primitive_kind, 0, &kind);
		dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
		if (kind != dnnl_reorder)
			snprintf(last_impl, sizeof(last_impl), "%s", impl ? impl : "");
	}
	return st;
}

dnnl_status_t mfs_dnnl_reorder_create(mfs_dnnl_prim *p, const dnnl_memory_desc_t *from,
				      const dnnl_memory_desc_t *to, dnnl_engine_t eng)
{
	dnnl_primitive_attr_t attr;
	dnnl_primitive_desc_t pd;
	dnnl_status_t st = mfs_dnnl_attr_create(&attr);

	memset(p, 0, sizeof(*p));
	if (st != dnnl_success)
		return st;
	st = dnnl_reorder_primitive_desc_create(&pd, from, eng, to, eng, attr);
	dnnl_primitive_attr_destroy(attr);
	if (st != dnnl_success)
		return st;
	st = mfs_dnnl_prim_create(p, pd, eng);
	dnnl_primitive_desc_destroy(pd);
	return st;
}

dnnl_status_t mfs_dnnl_prim_exec(mfs_dnnl_prim *p, dnnl_stream_t stream, int nargs,
				 const dnnl_exec_arg_t *args)
{
	dnnl_exec_arg_t all[8];
	dnnl_status_t st;

	if (nargs > 7)
		return dnnl_invalid_arguments;
	memcpy(all, args, sizeof(*args) * (size_t)nargs);
	if (p->scratch) {
		void *buf = thread_scratch(p->scratch_size);
		if (!buf)
			return dnnl_out_of_memory;
		if ((st = dnnl_memory_set_data_handle(p->scratch, buf)) != dnnl_success)
			return st;
		all[nargs++] = (dnnl_exec_arg_t){ DNNL_ARG_SCRATCHPAD, p->scratch };
	}
	if ((st = dnnl_primitive_execute(p->prim, stream, nargs, all)) != dnnl_success)
		return st;
	return dnnl_stream_wait(stream);
}

void mfs_dnnl_prim_destroy(mfs_dnnl_prim *p)
{
	if (p->prim)
		dnnl_primitive_destroy(p->prim);
	if (p->scratch)
		dnnl_memory_destroy(p->scratch);
	memset(p, 0, sizeof(*p));
}

const char *mfs_dnnl_status_str(dnnl_status_t s)
{
	switch (s) {
	case dnnl_success: return "success";
	case dnnl_out_of_memory: return "out of memory";
	case dnnl_invalid_arguments: return "invalid arguments";
	case dnnl_unimplemented: return "no implementation for these parameters";
	case dnnl_iterator_ends: return "iterator ends";
	case dnnl_runtime_error: return "runtime error";
	case dnnl_not_required: return "not required";
	default: return "unknown status";
	}
}

void mfs_nchw_to_nhwc(const float *src, float *dst, int64_t n, int64_t c, int64_t s)
{
	#pragma omp parallel for collapse(2) schedule(static)
	for (int64_t b = 0; b < n; b++)
		for (int64_t p = 0; p < s; p++) {
			const float *x = src + b * c * s + p;
			float *y = dst + (b * s + p) * c;
			for (int64_t ch = 0; ch < c; ch++)
				y[ch] = x[ch * s];
		}
}

void mfs_nhwc_to_nchw(const float *src, float *dst, int64_t n, int64_t c, int64_t s)
{
	#pragma omp parallel for collapse(2) schedule(static)
	for (int64_t b = 0; b < n; b++)
		for (int64_t ch = 0; ch < c; ch++) {
			const float *x = src + b * s * c + ch;
			float *y = dst + (b * c + ch) * s;
			for (int64_t p = 0; p < s; p++)
				y[p] = x[p * c];
		}
}

int mfs_check_layout(mfs_op_ctx *ctx, const mfs_tensor *t, const char *what)
{
	if (t->layout == MFS_LAYOUT_PLAIN)
		return 0;
	if (t->layout == MFS_LAYOUT_NHWC && t->shape.rank == 4)
		return 0;
	return mfs_op_fail(ctx, EINVAL, "%s: layout %d with rank %d is not supported",
			   what, (int)t->layout, t->shape.rank);
}

/* ---- integer product ----------------------------------------------------- */

void mfs_qgemm(int64_t m, int64_t n, int64_t k, const void *a, bool a_signed, int64_t lda,
	       const int32_t *za, int64_t zas, const void *b, bool b_signed, int64_t ldb,
	       const int32_t *zb, int64_t zbs, int32_t *c, int64_t ldc)
{
	const int8_t *as = a, *bs = b;
	const uint8_t *au = a, *bu = b;

	#pragma omp parallel for schedule(static) if (m * n * k > 65536)
	for (int64_t i = 0; i < m; i++) {
		int32_t *cr = c + i * ldc;
		for (int64_t j = 0; j < n; j++)
			cr[j] = 0;
		for (int64_t p = 0; p < k; p++) {
			int32_t av = (a_signed ? as[i * lda + p] : au[i * lda + p]) - za[i * zas];
			if (!av)
				continue;
			for (int64_t j = 0; j < n; j++) {
				int32_t bv = (b_signed ? bs[p * ldb + j] : bu[p * ldb + j]) - zb[j * zbs];
				cr[j] += av * bv;
			}
		}
	}
}

void mfs_dnnl_weights_free(mfs_dnnl_weights *w)
{
	bool c = w->is_const;
	mfs_dnnl_prim_destroy(&w->reorder);
	if (w->mem)
		dnnl_memory_destroy(w->mem);
	if (w->plain)
		dnnl_memory_destroy(w->plain);
	free(w->buf);
	memset(w, 0, sizeof(*w));
	w->is_const = c;
}

/* Whether w already holds weights of layout want stored as plain. */
static bool weights_layout_is(const mfs_dnnl_weights *w, const dnnl_memory_desc_t *want,
			      const dnnl_memory_desc_t *plain)
{
	const dnnl_memory_desc_t *have = NULL, *have_plain = NULL;

	if (dnnl_memory_get_memory_desc(w->mem, &have) != dnnl_success ||
	    !dnnl_memory_desc_equal(have, want))
		return false;
	if (!w->plain)
		return dnnl_memory_desc_equal(want, plain);
	return dnnl_memory_get_memory_desc(w->plain, &have_plain) == dnnl_success &&
	       dnnl_memory_desc_equal(have_plain, plain);
}

bool mfs_dnnl_weights_hold(const mfs_dnnl_weights *w, const dnnl_memory_desc_t *want,
			   const dnnl_memory_desc_t *plain)
{
	return w->mem && weights_layout_is(w, want, plain);
}

dnnl_status_t mfs_dnnl_weights_init(mfs_dnnl_weights *w, const dnnl_memory_desc_t *want,
				    const dnnl_memory_desc_t *plain, dnnl_engine_t eng)
{
	dnnl_status_t st;

	if (mfs_dnnl_weights_hold(w, want, plain))
		return dnnl_success;   /* a rebuild (other threads): keep the packing */
	mfs_dnnl_weights_free(w);
	if (dnnl_memory_desc_equal(want, plain))
		return dnnl_memory_create(&w->mem, want, eng, DNNL_MEMORY_NONE);
	size_t sz = dnnl_memory_desc_get_size(want);
	if (posix_memalign(&w->buf, 64, sz ? sz : 64)) {
		w->buf = NULL;
		return dnnl_out_of_memory;
	}
	if ((st = dnnl_memory_create(&w->mem, want, eng, w->buf)) ||
	    (st = dnnl_memory_create(&w->plain, plain, eng, DNNL_MEMORY_NONE)) ||
	    (st = mfs_dnnl_reorder_create(&w->reorder, plain, want, eng)))
		mfs_dnnl_weights_free(w);
	return st;
}

static _Atomic uint64_t weights_packed;

uint64_t mfs_dnnl_weights_packed(void)
{
	return weights_packed;
}

int mfs_dnnl_weights_set(mfs_op_ctx *ctx, mfs_dnnl_weights *w, const void *data,
			 dnnl_stream_t stream)
{
	dnnl_status_t st;

	if (!w->reorder.prim) {
		st = dnnl_memory_set_data_handle(w->mem, (void *)data);
	} else if (w->is_const && w->src == data) {
		return 0;
	} else if ((st = dnnl_memory_set_data_handle(w->plain, (void *)data)) == dnnl_success) {
		dnnl_exec_arg_t args[2] = { { DNNL_ARG_FROM, w->plain }, { DNNL_ARG_TO, w->mem } };
		if ((st = mfs_dnnl_prim_exec(&w->reorder, stream, 2, args)) == dnnl_success) {
			w->src = data;
			weights_packed++;
		}
	}
	if (st != dnnl_success)
		return mfs_op_fail(ctx, EIO, "oneDNN weight reorder failed: %s",
				   mfs_dnnl_status_str(st));
	return 0;
}


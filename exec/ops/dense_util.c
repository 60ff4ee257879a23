/* dense_util.c - window geometry, the oneDNN engine, layout copies (see
 * dense_util.h). */
#include <pthread.h>
#include <omp.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <cblas.h>

#include "dense_util.h"

static int read_ints(mfs_op_ctx *ctx, const char *name, size_t want,
		     int64_t def, int64_t min, int64_t *out)
{
	const int64_t *v;
	size_t n = onnx_attr_ints(ctx->node, name, &v);

	if (n == 0) {
		for (size_t i = 0; i < want; i++)
			out[i] = def;
		return 0;
	}
	if (n != want)
		return mfs_op_fail(ctx, EINVAL, "attribute %s has %zu values, expected %zu",
				   name, n, want);
	for (size_t i = 0; i < n; i++) {
		if (v[i] < min || v[i] > (int64_t)1 << 40)
			return mfs_op_fail(ctx, EINVAL, "attribute %s[%zu] = %lld is out of range",
					   name, i, (long long)v[i]);
		out[i] = v[i];
	}
	return 0;
}

static int64_t ceil_div(int64_t a, int64_t b)
{
	return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

int mfs_window_init(mfs_op_ctx *ctx, const mfs_shape *x, const int64_t *kernel,
		    bool allow_dilations, bool ceil_mode, mfs_window *w)
{
	int nsp = x->rank - 2;
	int64_t pads[2 * MFS_WIN_MAX], kattr[MFS_WIN_MAX];
	const int64_t *kv;
	int rc;

	memset(w, 0, sizeof(*w));
	if (nsp < 1 || nsp > MFS_WIN_MAX)
		return mfs_op_fail(ctx, ENOTSUP,
				   "input of rank %d: only 1-D, 2-D and 3-D windows (rank 3 to 5) are supported",
				   x->rank);
	w->nsp = nsp;
	for (int i = 0; i < nsp; i++) {
		w->in[i] = x->dims[2 + i];
		if (w->in[i] < 0)
			return mfs_op_fail(ctx, EINVAL, "spatial dimension %d is unknown", i);
	}

	size_t nk = onnx_attr_ints(ctx->node, "kernel_shape", &kv);
	if (nk && nk != (size_t)nsp)
		return mfs_op_fail(ctx, EINVAL,
				   "kernel_shape has %zu values for %d spatial dims", nk, nsp);
	if (!kernel && !nk)
		return mfs_op_fail(ctx, EINVAL, "attribute kernel_shape is required");
	if (nk && (rc = read_ints(ctx, "kernel_shape", nsp, 1, 1, kattr)) < 0)
		return rc;
	for (int i = 0; i < nsp; i++) {
		if (kernel && nk && kernel[i] != kattr[i])
			return mfs_op_fail(ctx, EINVAL,
					   "kernel_shape[%d] = %lld but the weights have %lld",
					   i, (long long)kattr[i], (long long)kernel[i]);
		w->k[i] = kernel ? kernel[i] : kattr[i];
		if (w->k[i] < 1)
			return mfs_op_fail(ctx, EINVAL, "kernel extent %lld is not positive",
					   (long long)w->k[i]);
	}
	if ((rc = read_ints(ctx, "strides", nsp, 1, 1, w->stride)) < 0)
		return rc;
	if (allow_dilations) {
		if ((rc = read_ints(ctx, "dilations", nsp, 1, 1, w->dil)) < 0)
			return rc;
	} else {
		for (int i = 0; i < nsp; i++)
			w->dil[i] = 1;
	}
	if ((rc = read_ints(ctx, "pads", 2 * nsp, 0, 0, pads)) < 0)
		return rc;

	const char *ap = onnx_attr_string(ctx->node, "auto_pad", "NOTSET");
	bool same_upper = !strcmp(ap, "SAME_UPPER"), same_lower = !strcmp(ap, "SAME_LOWER");
	bool valid = !strcmp(ap, "VALID");
	if (!same_upper && !same_lower && !valid && strcmp(ap, "NOTSET") && *ap)
		return mfs_op_fail(ctx, EINVAL, "auto_pad '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", ap);

	for (int i = 0; i < nsp; i++) {
		int64_t dk = (w->k[i] - 1) * w->dil[i] + 1;
		if (same_upper || same_lower) {
			w->out[i] = ceil_div(w->in[i], w->stride[i]);
			int64_t total = (w->out[i] - 1) * w->stride[i] + dk - w->in[i];
			if (total < 0)
				total = 0;
			w->pad_b[i] = same_upper ? total / 2 : total - total / 2;
			w->pad_e[i] = total - w->pad_b[i];
		} else {
			w->pad_b[i] = valid ? 0 : pads[i];
			w->pad_e[i] = valid ? 0 : pads[nsp + i];
			int64_t span = w->in[i] + w->pad_b[i] + w->pad_e[i] - dk;
			if (span < 0)
				return mfs_op_fail(ctx, EINVAL,
						   "spatial dim %d: input %lld (padded %lld) is smaller than the window %lld",
						   i, (long long)w->in[i],
						   (long long)(w->in[i] + w->pad_b[i] + w->pad_e[i]),
						   (long long)dk);
			if (ceil_mode) {
				w->out[i] = ceil_div(span, w->stride[i]) + 1;
				/* The last window must start inside the input or
				 * its leading padding. */
				if ((w->out[i] - 1) * w->stride[i] >= w->in[i] + w->pad_b[i])
					w->out[i]--;
			} else {
				w->out[i] = span / w->stride[i] + 1;
			}
		}
		if (w->out[i] < 1 && w->in[i] > 0)
			return mfs_op_fail(ctx, EINVAL, "spatial dim %d: empty output", i);
	}
	return 0;
}

int64_t mfs_window_out_size(const mfs_window *w)
{
	int64_t n = 1;
	for (int i = 0; i < w->nsp; i++)
		n *= w->out[i];
	return n;
}

int64_t mfs_window_k_size(const mfs_window *w)
{
	int64_t n = 1;
	for (int i = 0; i < w->nsp; i++)
		n *= w->k[i];
	return n;
}

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

/* ---- matmul geometry, integer product ------------------------------------ */


/* Shapes of A and B -> geometry and output shape. */
int mfs_mm_geometry(mfs_op_ctx *ctx, const mfs_shape *as, const mfs_shape *bs,
		    mfs_mm_geom *g, mfs_shape *out)
{
	mfs_shape a = *as, b = *bs;
	bool a_vec = a.rank == 1, b_vec = b.rank == 1;

	if (a.rank < 1 || b.rank < 1)
		return mfs_op_fail(ctx, EINVAL, "operands must have rank >= 1 (got %d and %d)",
				   a.rank, b.rank);
	if (a_vec) {
		a.rank = 2;
		a.dims[1] = a.dims[0];
		a.dims[0] = 1;
	}
	if (b_vec) {
		b.rank = 2;
		b.dims[1] = 1;
	}
	memset(g, 0, sizeof(*g));
	g->m = a.dims[a.rank - 2];
	g->k = a.dims[a.rank - 1];
	g->n = b.dims[b.rank - 1];
	if (b.dims[b.rank - 2] != g->k) {
		char sa[128], sb[128];
		return mfs_op_fail(ctx, EINVAL, "shapes %s and %s: inner dimensions differ",
				   mfs_shape_format(as, sa, sizeof(sa)),
				   mfs_shape_format(bs, sb, sizeof(sb)));
	}
	mfs_shape ab = { .rank = a.rank - 2 }, bb = { .rank = b.rank - 2 }, ob;
	memcpy(ab.dims, a.dims, sizeof(int64_t) * ab.rank);
	memcpy(bb.dims, b.dims, sizeof(int64_t) * bb.rank);
	int rc = mfs_broadcast_shape(&ab, &bb, &ob, ctx->err);
	if (rc < 0)
		return mfs_op_fail(ctx, EINVAL, "batch dimensions: %s", ctx->err->msg);
	if (ob.rank + 2 > MFS_MAX_RANK)
		return mfs_op_fail(ctx, EINVAL, "result rank exceeds %d", MFS_MAX_RANK);

	g->batch_rank = ob.rank;
	g->nbatch = 1;
	g->b_single = true;
	int64_t sa = g->m * g->k, sb = g->k * g->n;
	for (int i = ob.rank - 1; i >= 0; i--) {
		int ia = i - (ob.rank - ab.rank), ib = i - (ob.rank - bb.rank);
		int64_t da = ia >= 0 ? ab.dims[ia] : 1, db = ib >= 0 ? bb.dims[ib] : 1;
		g->batch[i] = ob.dims[i];
		g->a_bstride[i] = da == 1 ? 0 : sa;
		g->b_bstride[i] = db == 1 ? 0 : sb;
		if (db != 1)
			g->b_single = false;
		sa *= da;
		sb *= db;
		g->nbatch *= ob.dims[i];
	}

	out->rank = 0;
	for (int i = 0; i < ob.rank; i++)
		out->dims[out->rank++] = ob.dims[i];
	if (!a_vec)
		out->dims[out->rank++] = g->m;
	if (!b_vec)
		out->dims[out->rank++] = g->n;
	return 0;
}


void mfs_mm_batch_offsets(const mfs_mm_geom *g, int64_t bi, int64_t *offa, int64_t *offb)
{
	int64_t rem = bi, oa = 0, ob = 0;
	for (int i = g->batch_rank - 1; i >= 0; i--) {
		int64_t idx = rem % g->batch[i];
		rem /= g->batch[i];
		oa += idx * g->a_bstride[i];
		ob += idx * g->b_bstride[i];
	}
	*offa = oa;
	*offb = ob;
}

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


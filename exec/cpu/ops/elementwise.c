/* elementwise.c - broadcasting driver, half precision through float and the
 * shared infer/run of the elementwise operators (see elementwise.h). */
#include <omp.h>
#include <string.h>

#include "elementwise.h"

static mfs_tensor storage_view(const mfs_tensor *t);

/* The output's dims after dropping 1s and merging dims that every input
 * walks contiguously (or not at all), with element strides per input. */
typedef struct ew_plan {
	int rank, n_in;
	int64_t dims[MFS_MAX_RANK];
	int64_t stride[EW_MAX_IN][MFS_MAX_RANK];   /* 0: broadcast */
	size_t esize[EW_MAX_IN], osize;
} ew_plan;

static void plan_build(ew_plan *pl, const mfs_tensor *const *in, int n_in,
		       const mfs_tensor *out)
{
	const mfs_shape *os = &out->shape;
	int64_t st[EW_MAX_IN][MFS_MAX_RANK];

	pl->n_in = n_in;
	pl->osize = mfs_dtype_size(out->dtype);
	for (int k = 0; k < n_in; k++) {
		int off = os->rank - in[k]->shape.rank;
		int64_t s = 1;
		pl->esize[k] = mfs_dtype_size(in[k]->dtype);
		for (int d = os->rank - 1; d >= 0; d--) {
			int64_t dim = d >= off ? in[k]->shape.dims[d - off] : 1;
			st[k][d] = dim == 1 ? 0 : s;
			s *= dim;
		}
	}
	pl->rank = 0;
	for (int d = 0; d < os->rank; d++) {
		int64_t dim = os->dims[d];
		int r = pl->rank;
		bool merge = r > 0;
		if (dim == 1)
			continue;
		for (int k = 0; merge && k < n_in; k++)
			merge = pl->stride[k][r - 1] == st[k][d] * dim;
		if (merge) {
			pl->dims[r - 1] *= dim;
			for (int k = 0; k < n_in; k++)
				pl->stride[k][r - 1] = st[k][d];
			continue;
		}
		pl->dims[r] = dim;
		for (int k = 0; k < n_in; k++)
			pl->stride[k][r] = st[k][d];
		pl->rank++;
	}
	if (pl->rank == 0) {            /* one element */
		pl->rank = 1;
		pl->dims[0] = 1;
		for (int k = 0; k < n_in; k++)
			pl->stride[k][0] = 0;
	}
}

/* Advance the row odometer (dims 0..R-2) by count rows; count never
 * passes the end of dim R-2. */
static void odo_advance(const ew_plan *pl, int64_t *idx, int64_t *off,
			int64_t count)
{
	int d = pl->rank - 2;

	for (int k = 0; k < pl->n_in; k++)
		off[k] += count * pl->stride[k][d];
	idx[d] += count;
	while (idx[d] == pl->dims[d]) {
		for (int k = 0; k < pl->n_in; k++)
			off[k] -= pl->stride[k][d] * pl->dims[d];
		idx[d] = 0;
		if (--d < 0)
			break;
		for (int k = 0; k < pl->n_in; k++)
			off[k] += pl->stride[k][d];
		idx[d]++;
	}
}

/* Short rows (NHWC data with a per-channel operand: rows of C elements)
 * would cost a kernel call each.  When every input either continues
 * contiguously from row to row or repeats the same row (a vector of the
 * inner dim), the repeated rows are copied EW_TILE_BYTES at a time into a
 * tile and the kernel runs over many rows in one call. */
#define EW_TILE_BYTES 8192

typedef struct ew_tiles {
	int64_t rows;                   /* rows per call; < 2: no tiling */
	bool rep[EW_MAX_IN];            /* input k repeats one row */
	int64_t built[EW_MAX_IN];       /* offset the tile was made from */
	char buf[EW_MAX_IN][EW_TILE_BYTES] __attribute__((aligned(64)));
} ew_tiles;

static void tiles_init(ew_tiles *t, const ew_plan *pl, const int64_t *step)
{
	int R = pl->rank;
	int64_t inner = pl->dims[R - 1];
	size_t es = 0;

	t->rows = 0;
	if (R < 2 || inner * 8 > EW_TILE_BYTES)
		return;
	for (int k = 0; k < pl->n_in; k++) {
		int64_t so = pl->stride[k][R - 2];
		t->rep[k] = so == 0 && step[k] == 1;
		t->built[k] = -1;
		if (t->rep[k])
			es = pl->esize[k] > es ? pl->esize[k] : es;
		else if (so != inner * step[k])
			return;         /* neither contiguous nor repeated */
	}
	if (es)
		t->rows = EW_TILE_BYTES / (int64_t)(es * (size_t)inner);
}

/* Output elements [lo, hi): kernel calls over whole or tiled rows, the
 * row index advanced like an odometer. */
static void run_range(const ew_plan *pl, ew_fn fn, char *out,
		      const char *const *in, int64_t lo, int64_t hi,
		      const ew_params *p)
{
	int R = pl->rank;
	int64_t inner = pl->dims[R - 1];
	int64_t idx[MFS_MAX_RANK], off[EW_MAX_IN] = { 0 }, step[EW_MAX_IN];
	int64_t row = lo / inner, col = lo % inner;
	ew_tiles tiles;

	for (int d = R - 2; d >= 0; d--) {
		idx[d] = row % pl->dims[d];
		row /= pl->dims[d];
		for (int k = 0; k < pl->n_in; k++)
			off[k] += idx[d] * pl->stride[k][d];
	}
	for (int k = 0; k < pl->n_in; k++)
		step[k] = pl->stride[k][R - 1];
	tiles_init(&tiles, pl, step);

	for (int64_t pos = lo; pos < hi;) {
		int64_t n = inner - col < hi - pos ? inner - col : hi - pos;
		const char *ptr[EW_MAX_IN];
		int64_t rows = tiles.rows;

		if (rows >= 2 && col == 0) {
			rows = rows < pl->dims[R - 2] - idx[R - 2] ? rows
			       : pl->dims[R - 2] - idx[R - 2];
			rows = rows < (hi - pos) / inner ? rows : (hi - pos) / inner;
		}
		if (tiles.rows >= 2 && col == 0 && rows >= 2) {
			for (int k = 0; k < pl->n_in; k++) {
				size_t es = pl->esize[k];
				ptr[k] = in[k] + off[k] * (int64_t)es;
				if (!tiles.rep[k])
					continue;
				if (tiles.built[k] != off[k]) {
					for (int64_t r = 0; r < tiles.rows; r++)
						memcpy(tiles.buf[k] + r * inner * (int64_t)es,
						       ptr[k], (size_t)inner * es);
					tiles.built[k] = off[k];
				}
				ptr[k] = tiles.buf[k];
			}
			fn(out + pos * (int64_t)pl->osize, ptr, step, rows * inner, p);
			pos += rows * inner;
			odo_advance(pl, idx, off, rows);
			continue;
		}
		for (int k = 0; k < pl->n_in; k++)
			ptr[k] = in[k] + (off[k] + col * step[k]) * (int64_t)pl->esize[k];
		fn(out + pos * (int64_t)pl->osize, ptr, step, n, p);
		pos += n;
		col = 0;
		if (R >= 2)
			odo_advance(pl, idx, off, 1);
	}
}

void ew_apply(ew_fn fn, const mfs_tensor *const *in, int n_in, mfs_tensor *out,
	      const ew_params *p)
{
	int64_t total = mfs_shape_numel(&out->shape);
	const char *src[EW_MAX_IN];
	ew_plan pl;
	int nt = 1;

	if (total <= 0)
		return;
	if (out->layout == MFS_LAYOUT_NHWC && out->shape.rank == 4) {
		mfs_tensor vin[EW_MAX_IN], vout = storage_view(out);
		const mfs_tensor *pin[EW_MAX_IN] = { 0 };
		for (int k = 0; k < n_in; k++) {
			vin[k] = storage_view(in[k]);
			pin[k] = &vin[k];
		}
		plan_build(&pl, pin, n_in, &vout);
	} else {
		plan_build(&pl, in, n_in, out);
	}
	for (int k = 0; k < n_in; k++)
		src[k] = in[k]->data;
	if (total >= EW_PAR_MIN) {
		int64_t want = total / (EW_PAR_MIN / 2);
		nt = omp_get_max_threads();
		if (want < nt)
			nt = (int)want;
	}
	if (nt <= 1 || omp_in_parallel()) {
		run_range(&pl, fn, out->data, src, 0, total, p);
		return;
	}
	/* nt parts on the whole team, the rest of it idle: a smaller team
	 * would make libgomp end the surplus threads and create them again
	 * at the next node (node_threads.h). */
#pragma omp parallel
	{
		int t = omp_get_thread_num(), m = omp_get_num_threads();
		if (m > nt)
			m = nt;
		/* chunk edges on 64-element boundaries: no shared cache lines */
		int64_t chunk = ((total + m - 1) / m + 63) & ~(int64_t)63;
		int64_t lo = chunk * t, hi = lo + chunk < total ? lo + chunk : total;
		if (t < m && lo < hi)
			run_range(&pl, fn, out->data, src, lo, hi, p);
	}
}

bool ew_table_has(const ew_table *tab, mfs_dtype dt)
{
	if (dt <= 0 || dt >= EW_NDT)
		return false;
	return tab->fn[dt] || (ew_is_half(dt) && tab->fn[MFS_DT_FLOAT]);
}

/* float16/bfloat16 through a float kernel: blocks of each run are
 * converted on the stack, so no tensor-sized temporaries. */
#define EW_HALF_BLOCK 256

typedef struct ew_half {
	ew_fn fn;                       /* the float kernel */
	const ew_params *p;             /* its parameters */
	int n_in;
	mfs_dtype in_dt[EW_MAX_IN], out_dt;
} ew_half;

/* float16 <-> float: F16C instructions, 8 at a time, where the CPU has
 * them (every x86-64-v3 CPU); mfs_half_to_float & co otherwise.  Both
 * round to nearest even. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define EW_F16C 1

__attribute__((target("avx,f16c")))
static void f16_load_f16c(float *d, const uint16_t *s, int64_t n)
{
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(d + i, _mm256_cvtph_ps(
				 _mm_loadu_si128((const __m128i *)(s + i))));
	for (; i < n; i++)
		d[i] = _cvtsh_ss(s[i]);
}

__attribute__((target("avx,f16c")))
static void f16_store_f16c(uint16_t *d, const float *s, int64_t n)
{
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm_storeu_si128((__m128i *)(d + i), _mm256_cvtps_ph(
				 _mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
	for (; i < n; i++)
		d[i] = _cvtss_sh(s[i], _MM_FROUND_TO_NEAREST_INT);
}
#endif

void ew_half_load(float *d, const uint16_t *s, int64_t n, mfs_dtype dt)
{
	if (dt == MFS_DT_BFLOAT16) {
		EW_SIMD
		for (int64_t i = 0; i < n; i++) {
			uint32_t b = (uint32_t)s[i] << 16;
			memcpy(&d[i], &b, 4);
		}
		return;
	}
#ifdef EW_F16C
	if (__builtin_cpu_supports("f16c")) {
		f16_load_f16c(d, s, n);
		return;
	}
#endif
	for (int64_t i = 0; i < n; i++)
		d[i] = mfs_half_to_float(s[i]);
}

void ew_half_store(uint16_t *d, const float *s, int64_t n, mfs_dtype dt)
{
	if (dt == MFS_DT_BFLOAT16) {
		EW_SIMD
		for (int64_t i = 0; i < n; i++) {
			uint32_t x;
			memcpy(&x, &s[i], 4);
			uint32_t r = (x + 0x7fff + ((x >> 16) & 1)) >> 16;
			d[i] = (uint16_t)((x & 0x7fffffffu) > 0x7f800000u
					  ? (x >> 16) | 0x40 : r);
		}
		return;
	}
#ifdef EW_F16C
	if (__builtin_cpu_supports("f16c")) {
		f16_store_f16c(d, s, n);
		return;
	}
#endif
	for (int64_t i = 0; i < n; i++)
		d[i] = mfs_float_to_half(s[i]);
}

static void half_kernel(char *out, const char *const *in, const int64_t *step,
			int64_t n, const ew_params *p)
{
	const ew_half *h = p->aux;
	float buf[EW_MAX_IN][EW_HALF_BLOCK], obuf[EW_HALF_BLOCK];
	bool out_half = ew_is_half(h->out_dt);
	size_t os = mfs_dtype_size(h->out_dt);

	for (int64_t j = 0; j < n; j += EW_HALF_BLOCK) {
		int64_t m = n - j < EW_HALF_BLOCK ? n - j : EW_HALF_BLOCK;
		const char *ptr[EW_MAX_IN];
		char *o = out_half ? (char *)obuf : out + j * (int64_t)os;
		for (int k = 0; k < h->n_in; k++) {
			size_t es = mfs_dtype_size(h->in_dt[k]);
			const char *src = in[k] + j * step[k] * (int64_t)es;
			ptr[k] = src;
			if (ew_is_half(h->in_dt[k])) {
				ew_half_load(buf[k], (const uint16_t *)src,
					     step[k] ? m : 1, h->in_dt[k]);
				ptr[k] = (const char *)buf[k];
			}
		}
		h->fn(o, ptr, step, m, h->p);
		if (out_half)
			ew_half_store((uint16_t *)out + j, obuf, m, h->out_dt);
	}
}

int ew_run(mfs_op_ctx *ctx, const ew_table *tab, const mfs_tensor *const *in,
	   int n_in, mfs_tensor *out, const ew_params *p)
{
	mfs_dtype dt = in[0]->dtype;
	ew_half h = { .p = p, .n_in = n_in, .out_dt = out->dtype };
	ew_params hp = *p;

	if (dt > 0 && dt < EW_NDT && tab->fn[dt]) {
		ew_apply(tab->fn[dt], in, n_in, out, p);
		return 0;
	}
	if (!ew_table_has(tab, dt))
		return mfs_op_fail(ctx, ENOTSUP, "input type %s is not supported",
				   mfs_dtype_onnx_name(dt));
	h.fn = tab->fn[MFS_DT_FLOAT];
	for (int k = 0; k < n_in; k++)
		h.in_dt[k] = in[k]->dtype;
	hp.aux = &h;
	ew_apply(half_kernel, in, n_in, out, &hp);
	return 0;
}

/* A plain operand broadcast against NHWC data: padded to [n,c,h,w], its
 * bytes are also in [n,h,w,c] order when c == 1 or h == w == 1 (the
 * non-1 dims keep their relative order).  Per-channel vectors and
 * scalars qualify. */
static bool nhwc_compatible(const mfs_shape *s)
{
	int64_t d[4] = { 1, 1, 1, 1 };

	if (s->rank > 4)
		return false;
	for (int i = 0; i < s->rank; i++)
		d[4 - s->rank + i] = s->dims[i];
	return d[1] == 1 || (d[2] == 1 && d[3] == 1);
}

int ew_check_layout(mfs_op_ctx *ctx, const mfs_tensor *const *in, int n_in,
		    const mfs_shape *shape, mfs_layout *layout)
{
	bool nhwc = false;

	for (int k = 0; k < n_in; k++)
		nhwc |= in[k]->layout == MFS_LAYOUT_NHWC;
	*layout = nhwc ? MFS_LAYOUT_NHWC : MFS_LAYOUT_PLAIN;
	if (!nhwc)
		return 0;
	if (shape->rank != 4)
		return mfs_op_fail(ctx, ENOTSUP, "NHWC needs a rank-4 result");
	for (int k = 0; k < n_in; k++) {
		bool same = mfs_shape_equal(&in[k]->shape, shape);
		if (in[k]->layout == MFS_LAYOUT_NHWC ? !same
		    : !nhwc_compatible(&in[k]->shape))
			return mfs_op_fail(ctx, ENOTSUP,
					   "with NHWC data, other inputs must be NHWC of the same shape, or plain per-channel vectors or scalars");
	}
	return 0;
}

/* t's shape in storage order: NCHW -> NHWC, a plain operand padded to
 * rank 4 first (see nhwc_compatible). */
static mfs_tensor storage_view(const mfs_tensor *t)
{
	mfs_tensor v = *t;
	int64_t d[4] = { 1, 1, 1, 1 };

	for (int i = 0; i < t->shape.rank; i++)
		d[4 - t->shape.rank + i] = t->shape.dims[i];
	v.shape.rank = 4;
	v.shape.dims[0] = d[0];
	v.shape.dims[1] = d[2];
	v.shape.dims[2] = d[3];
	v.shape.dims[3] = d[1];
	return v;
}

mfs_tensor ew_legacy_operand(const mfs_op_ctx *ctx, const mfs_tensor *a,
			     const mfs_tensor *b)
{
	mfs_tensor r = *b;
	int64_t axis;

	if (ctx->opset >= 7 || !onnx_attr_int(ctx->node, "broadcast", 0))
		return r;
	axis = onnx_attr_int(ctx->node, "axis", a->shape.rank - b->shape.rank);
	if (axis < 0)
		axis += a->shape.rank;
	if (axis < 0 || axis + b->shape.rank > a->shape.rank)
		return r;       /* left to numpy rules, which then report it */
	r.shape.rank = a->shape.rank;
	for (int d = 0; d < a->shape.rank; d++)
		r.shape.dims[d] = d >= axis && d < axis + b->shape.rank
				  ? b->shape.dims[d - axis] : 1;
	return r;
}

/* ctx->in[first..] into in[] (at most max, none omitted) as the kernels
 * see them: legacy broadcasting applied to input 1 of a binary op, *tmp
 * holding that view.  Returns the count or a negative errno. */
static int gather_inputs(mfs_op_ctx *ctx, int first, mfs_tensor *tmp,
			 const mfs_tensor **in, int max)
{
	int n = ctx->n_in - first;

	if (n < 1)
		return mfs_op_fail(ctx, EINVAL, "needs at least one input");
	if (n > max)
		return mfs_op_fail(ctx, EINVAL, "takes at most %d inputs, got %d",
				   max, n);
	for (int k = 0; k < n; k++) {
		if (!ctx->in[first + k])
			return mfs_op_fail(ctx, EINVAL, "input %d is missing",
					   first + k);
		in[k] = ctx->in[first + k];
	}
	if (n == 2 && first == 0) {
		*tmp = ew_legacy_operand(ctx, in[0], in[1]);
		in[1] = tmp;
	}
	return n;
}

static int broadcast_all(mfs_op_ctx *ctx, const mfs_tensor *const *in, int n,
			 mfs_shape *shape)
{
	*shape = in[0]->shape;
	for (int k = 1; k < n; k++) {
		int rc = mfs_broadcast_shape(shape, &in[k]->shape, shape, ctx->err);
		if (rc < 0) {
			mfs_error_prefix(ctx->err, "%s: ", ctx->node->op_type);
			return rc;
		}
	}
	return 0;
}

#define EW_MAX_VARIADIC 64

static int infer_common(mfs_op_ctx *ctx, int first, mfs_dtype out_dt,
			const ew_table *tab)
{
	const mfs_tensor *in[EW_MAX_VARIADIC];
	mfs_tensor tmp;
	mfs_shape shape;
	mfs_layout layout;
	int n = gather_inputs(ctx, first, &tmp, in, EW_MAX_VARIADIC);
	int rc;

	if (n < 0)
		return n;
	if (tab && tab->arity && n != tab->arity)
		return mfs_op_fail(ctx, EINVAL, "takes %d input%s, got %d",
				   tab->arity, tab->arity > 1 ? "s" : "", n);
	for (int k = 1; tab && k < n; k++)
		if (in[k]->dtype != in[0]->dtype)
			return mfs_op_fail(ctx, EINVAL,
					   "input types %s and %s differ",
					   mfs_dtype_onnx_name(in[0]->dtype),
					   mfs_dtype_onnx_name(in[k]->dtype));
	if (tab && !ew_table_has(tab, in[0]->dtype))
		return mfs_op_fail(ctx, ENOTSUP, "input type %s is not supported",
				   mfs_dtype_onnx_name(in[0]->dtype));
	rc = broadcast_all(ctx, in, n, &shape);
	if (rc == 0)
		rc = ew_check_layout(ctx, in, n, &shape, &layout);
	if (rc < 0)
		return rc;
	if (ctx->n_out < 1 || !ctx->out[0])
		return 0;       /* nothing requested: validated only */
	ctx->out[0]->dtype = out_dt ? out_dt : in[0]->dtype;
	ctx->out[0]->shape = shape;
	ctx->out[0]->layout = layout;
	return 0;
}

int ew_infer(mfs_op_ctx *ctx, const ew_table *tab, mfs_dtype out_dt)
{
	return infer_common(ctx, 0, out_dt, tab);
}

int ew_infer_shape(mfs_op_ctx *ctx, int first, mfs_dtype out_dt)
{
	return infer_common(ctx, first, out_dt, NULL);
}

int ew_run_all(mfs_op_ctx *ctx, const ew_table *tab, const ew_params *p)
{
	const mfs_tensor *in[EW_MAX_IN];
	mfs_tensor tmp;
	int n = gather_inputs(ctx, 0, &tmp, in, EW_MAX_IN);

	if (n < 0)
		return n;
	if (ctx->n_out < 1 || !ctx->out[0])
		return 0;
	return ew_run(ctx, tab, in, n, ctx->out[0], p);
}

/* Broadcasting copies by element size, the fold's first step. */
#define EW_DEF_COPY(T, name) EW_UNARY_KERNEL(name, T, T, x)
EW_DEF_COPY(uint8_t, copy_1)
EW_DEF_COPY(uint16_t, copy_2)
EW_DEF_COPY(uint32_t, copy_4)
EW_DEF_COPY(uint64_t, copy_8)

static int fold(mfs_op_ctx *ctx, const ew_table *tab, const ew_table *post,
		const ew_params *p, mfs_tensor *acc)
{
	static const ew_fn copy[9] = { [1] = copy_1, [2] = copy_2,
				       [4] = copy_4, [8] = copy_8 };
	size_t es = mfs_dtype_size(acc->dtype);
	const mfs_tensor *first = ctx->in[0];
	int rc = 0;

	if (es > 8 || !copy[es])
		return mfs_op_fail(ctx, ENOTSUP, "unsupported type %s",
				   mfs_dtype_onnx_name(acc->dtype));
	ew_apply(copy[es], &first, 1, acc, p);
	for (int k = 1; rc == 0 && k < ctx->n_in; k++) {
		const mfs_tensor *pair[2] = { acc, ctx->in[k] };
		rc = ew_run(ctx, tab, pair, 2, acc, p);
	}
	if (rc == 0 && post) {
		const mfs_tensor *one = acc;
		rc = ew_run(ctx, post, &one, 1, acc, p);
	}
	return rc;
}

int ew_run_fold(mfs_op_ctx *ctx, const ew_table *tab, const ew_table *post,
		const ew_params *p)
{
	for (int k = 0; k < ctx->n_in; k++)
		if (!ctx->in[k])
			return mfs_op_fail(ctx, EINVAL, "input %d is missing", k);
	if (ctx->n_out < 1 || !ctx->out[0])
		return 0;
	return fold(ctx, tab, post, p, ctx->out[0]);
}

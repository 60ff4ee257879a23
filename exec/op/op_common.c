/* op_common.c - helpers for the shape, data-movement and reduction
 * operators (contracts in op_common.h). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "op_common.h"

void oc_set_out(mfs_op_ctx *ctx, int i, mfs_dtype dt, const mfs_shape *s)
{
	mfs_tensor *o = oc_out(ctx, i);
	if (!o)
		return;
	o->dtype = dt;
	o->shape = *s;
}

int oc_need(mfs_op_ctx *ctx, int i)
{
	if (!oc_in(ctx, i))
		return mfs_op_fail(ctx, EINVAL, "input %d is required", i);
	return 0;
}

int oc_check_io(mfs_op_ctx *ctx, int n_in, bool out0)
{
	for (int i = 0; i < n_in; i++)
		if (!oc_in(ctx, i))
			return mfs_op_fail(ctx, EINVAL, "input %d is required", i);
	if (out0 && !oc_out(ctx, 0))
		return mfs_op_fail(ctx, EINVAL, "output 0 is required");
	return 0;
}

int oc_elem_size(mfs_op_ctx *ctx, const mfs_tensor *t, size_t *es)
{
	*es = mfs_dtype_size(t->dtype);
	if (!*es)
		return mfs_op_fail(ctx, ENOTSUP, "data type %s is not supported",
				   mfs_dtype_onnx_name(t->dtype));
	return 0;
}

int oc_check_shape(mfs_op_ctx *ctx, const mfs_shape *s)
{
	int64_t n = 1;

	if (s->rank < 0 || s->rank > MFS_MAX_RANK)
		return mfs_op_fail(ctx, EINVAL, "rank %d is not supported (max %d)",
				   s->rank, MFS_MAX_RANK);
	for (int i = 0; i < s->rank; i++) {
		if (s->dims[i] < 0)
			return mfs_op_fail(ctx, EINVAL, "dimension %d is negative (%lld)",
					   i, (long long)s->dims[i]);
		/* A huge dim is refused even beside a zero one: products of
		 * dims elsewhere (mfs_shape_numel) would overflow on the way. */
		if (s->dims[i] > OC_MAX_NUMEL ||
		    (s->dims[i] && n > OC_MAX_NUMEL / s->dims[i])) {
			n = OC_MAX_NUMEL + 1;
			break;
		}
		n *= s->dims[i];
	}
	if (n > OC_MAX_NUMEL) {
		char buf[160];
		return mfs_op_fail(ctx, EINVAL, "output shape %s is too large",
				   mfs_shape_format(s, buf, sizeof(buf)));
	}
	return 0;
}

bool oc_is_float(mfs_dtype dt)
{
	return dt == MFS_DT_FLOAT || dt == MFS_DT_DOUBLE ||
	       dt == MFS_DT_FLOAT16 || dt == MFS_DT_BFLOAT16;
}

bool oc_is_int(mfs_dtype dt)
{
	switch (dt) {
	case MFS_DT_UINT8: case MFS_DT_INT8: case MFS_DT_UINT16:
	case MFS_DT_INT16: case MFS_DT_INT32: case MFS_DT_INT64:
	case MFS_DT_UINT32: case MFS_DT_UINT64:
		return true;
	default:
		return false;
	}
}

int oc_need_numeric(mfs_op_ctx *ctx, const mfs_tensor *t, bool allow_int)
{
	if (oc_is_float(t->dtype) || (allow_int && oc_is_int(t->dtype)))
		return 0;
	return mfs_op_fail(ctx, ENOTSUP, "data type %s is not supported",
			   mfs_dtype_onnx_name(t->dtype));
}

int oc_read_ints(mfs_op_ctx *ctx, int idx, int64_t *vals, int max, int *n)
{
	const mfs_tensor *t = oc_in(ctx, idx);
	int64_t cnt;

	if (!t)
		return mfs_op_fail(ctx, EINVAL, "input %d is required", idx);
	if (t->dtype != MFS_DT_INT64 && t->dtype != MFS_DT_INT32)
		return mfs_op_fail(ctx, EINVAL, "input %d must be int64 or int32, not %s",
				   idx, mfs_dtype_onnx_name(t->dtype));
	if (t->shape.rank > 1)
		return mfs_op_fail(ctx, EINVAL, "input %d must be 1-D (rank %d)",
				   idx, t->shape.rank);
	cnt = mfs_shape_numel(&t->shape);
	if (cnt < 0)
		return mfs_op_fail(ctx, EINVAL, "input %d has an unknown length", idx);
	if (cnt > max)
		return mfs_op_fail(ctx, EINVAL, "input %d has %lld values (at most %d)",
				   idx, (long long)cnt, max);
	if (cnt && !t->data)
		return MFS_SHAPE_DEPENDS_ON_DATA;
	if ((size_t)cnt * mfs_dtype_size(t->dtype) > t->nbytes)
		return mfs_op_fail(ctx, EINVAL, "input %d holds too few bytes", idx);
	for (int64_t i = 0; i < cnt; i++)
		vals[i] = mfs_tensor_get_i64(t, i);
	*n = (int)cnt;
	return 0;
}

int oc_attr_ints(mfs_op_ctx *ctx, const char *name, int64_t *vals, int max, int *n)
{
	const int64_t *v;
	size_t cnt = onnx_attr_ints(ctx->node, name, &v);

	*n = -1;
	if (!onnx_node_attr(ctx->node, name))
		return 0;
	if (cnt > (size_t)max)
		return mfs_op_fail(ctx, EINVAL, "attribute '%s' has %zu values (at most %d)",
				   name, cnt, max);
	for (size_t i = 0; i < cnt; i++)
		vals[i] = v[i];
	*n = (int)cnt;
	return 0;
}

int oc_attr_axes(mfs_op_ctx *ctx, int rank, int *ax, int *n)
{
	int64_t axes[MFS_MAX_RANK];
	unsigned mask;
	int rc = oc_attr_ints(ctx, "axes", axes, MFS_MAX_RANK, n);

	if (rc)
		return rc;
	if (*n < 0) {
		for (int i = 0; i < rank; i++)
			ax[i] = i;
		*n = rank;
		return 0;
	}
	return oc_axes_mask(ctx, axes, *n, rank, &mask, ax);
}

void oc_cubic_coeffs(double t, double A, double *w)
{
	double u = 1 - t;

	w[0] = ((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A;
	w[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
	w[2] = ((A + 2) * u - (A + 3)) * u * u + 1;
	w[3] = ((A * (u + 1) - 5 * A) * (u + 1) + 8 * A) * (u + 1) - 4 * A;
}

int oc_axis(mfs_op_ctx *ctx, int64_t axis, int rank, int *out)
{
	if (axis < -(int64_t)rank || axis >= rank)
		return mfs_op_fail(ctx, EINVAL, "axis %lld is out of range for rank %d",
				   (long long)axis, rank);
	*out = (int)(axis < 0 ? axis + rank : axis);
	return 0;
}

int oc_axes_mask(mfs_op_ctx *ctx, const int64_t *axes, int n, int rank,
		 unsigned *mask, int *out)
{
	unsigned m = 0;

	for (int i = 0; i < n; i++) {
		int a = 0, rc = oc_axis(ctx, axes[i], rank, &a);
		if (rc)
			return rc;
		if (m & (1u << a))
			return mfs_op_fail(ctx, EINVAL, "axis %lld is repeated",
					   (long long)axes[i]);
		m |= 1u << a;
		if (out)
			out[i] = a;
	}
	*mask = m;
	return 0;
}

double oc_load(mfs_dtype dt, const void *p, int64_t i)
{
	return mfs_dtype_load_f64(dt, p, i);
}

/* Clamp before converting: an out-of-range float-to-int conversion is
 * undefined behaviour in C. */
static double clampd(double v, double lo, double hi)
{
	if (isnan(v))
		return 0;
	return v < lo ? lo : v > hi ? hi : v;
}

void oc_store(mfs_dtype dt, void *p, int64_t i, double v)
{
	switch (dt) {
	case MFS_DT_FLOAT: ((float *)p)[i] = (float)v; break;
	case MFS_DT_DOUBLE: ((double *)p)[i] = v; break;
	case MFS_DT_FLOAT16: ((uint16_t *)p)[i] = mfs_float_to_half((float)v); break;
	case MFS_DT_BFLOAT16: ((uint16_t *)p)[i] = mfs_float_to_bf16((float)v); break;
	case MFS_DT_UINT8: ((uint8_t *)p)[i] = (uint8_t)clampd(v, 0, 255); break;
	case MFS_DT_INT8: ((int8_t *)p)[i] = (int8_t)clampd(v, -128, 127); break;
	case MFS_DT_UINT16: ((uint16_t *)p)[i] = (uint16_t)clampd(v, 0, 65535); break;
	case MFS_DT_INT16: ((int16_t *)p)[i] = (int16_t)clampd(v, -32768, 32767); break;
	case MFS_DT_INT32:
		((int32_t *)p)[i] = (int32_t)clampd(v, -2147483648.0, 2147483647.0);
		break;
	case MFS_DT_INT64:
		((int64_t *)p)[i] = (int64_t)clampd(v, -9223372036854775808.0,
						    9223372036854774784.0);
		break;
	case MFS_DT_UINT32: ((uint32_t *)p)[i] = (uint32_t)clampd(v, 0, 4294967295.0); break;
	case MFS_DT_UINT64:
		((uint64_t *)p)[i] = (uint64_t)clampd(v, 0, 18446744073709549568.0);
		break;
	case MFS_DT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
	default: break;
	}
}

void oc_strides(const mfs_shape *s, int64_t *strides)
{
	int64_t st = 1;
	for (int i = s->rank - 1; i >= 0; i--) {
		strides[i] = st;
		st *= s->dims[i];
	}
}

void oc_split_at(const mfs_shape *s, int axis, int64_t *outer, int64_t *n,
		 int64_t *inner)
{
	int64_t o = 1, in = 1;
	for (int i = 0; i < axis && i < s->rank; i++)
		o *= s->dims[i];
	for (int i = axis + 1; i < s->rank; i++)
		in *= s->dims[i];
	*outer = o;
	*n = axis < s->rank ? s->dims[axis] : 1;
	*inner = in;
}

int oc_copy_through(mfs_op_ctx *ctx)
{
	const mfs_tensor *in = ctx->in[0];
	mfs_tensor *out = ctx->out[0];
	size_t n = in->nbytes < out->nbytes ? in->nbytes : out->nbytes;

	if (out->data != in->data && n)
		memcpy(out->data, in->data, n);
	return 0;
}

/* ---- strided copy ---------------------------------------------------- */

static inline void copy_elem(char *d, const char *s, size_t es)
{
	switch (es) {
	case 1: *d = *s; break;
	case 2: memcpy(d, s, 2); break;
	case 4: memcpy(d, s, 4); break;
	case 8: memcpy(d, s, 8); break;
	default: memcpy(d, s, es); break;
	}
}

/* Copy dims[last] elements along the innermost dimension. */
static void copy_row(char *d, const char *s, size_t es, int64_t n, int64_t st)
{
	if (st == 1) {
		memcpy(d, s, (size_t)n * es);
	} else if (st == 0) {
		for (int64_t i = 0; i < n; i++)
			copy_elem(d + i * es, s, es);
	} else if (es == 4) {
		for (int64_t i = 0; i < n; i++)
			memcpy(d + i * 4, s + i * st * 4, 4);
	} else {
		for (int64_t i = 0; i < n; i++)
			copy_elem(d + i * es, s + i * st * (int64_t)es, es);
	}
}

typedef struct view {
	int rank;
	int64_t dims[OC_MAX_VIEW_RANK];
	int64_t st[OC_MAX_VIEW_RANK];      /* source strides, elements */
	int64_t dst_st[OC_MAX_VIEW_RANK];  /* dense destination strides */
} view;

/* Drop unit dims and merge dims whose source is contiguous across them. */
static void coalesce(view *v, int rank, const int64_t *dims, const int64_t *st)
{
	int r = 0;
	for (int i = 0; i < rank; i++) {
		if (dims[i] == 1)
			continue;
		if (r && v->st[r - 1] == st[i] * dims[i]) {
			v->dims[r - 1] *= dims[i];
			v->st[r - 1] = st[i];
			continue;
		}
		v->dims[r] = dims[i];
		v->st[r] = st[i];
		r++;
	}
	v->rank = r;
	int64_t s = 1;
	for (int i = r - 1; i >= 0; i--) {
		v->dst_st[i] = s;
		s *= v->dims[i];
	}
}

#define TILE 32

/* Tiled 2-D copy: output dims a (dst stride da, src stride 1 typically)
 * and b (innermost output dim, dst stride 1, src stride sb). */
static void copy_tile2d(char *d, const char *s, size_t es, int64_t na,
			int64_t da, int64_t sa, int64_t nb, int64_t sb)
{
	for (int64_t a0 = 0; a0 < na; a0 += TILE) {
		int64_t a1 = a0 + TILE < na ? a0 + TILE : na;
		for (int64_t b0 = 0; b0 < nb; b0 += TILE) {
			int64_t b1 = b0 + TILE < nb ? b0 + TILE : nb;
			for (int64_t a = a0; a < a1; a++) {
				char *dr = d + (a * da) * (int64_t)es;
				const char *sr = s + (a * sa) * (int64_t)es;
				if (es == 4) {
					for (int64_t b = b0; b < b1; b++)
						memcpy(dr + b * 4, sr + b * sb * 4, 4);
				} else {
					for (int64_t b = b0; b < b1; b++)
						copy_elem(dr + b * (int64_t)es,
							  sr + b * sb * (int64_t)es, es);
				}
			}
		}
	}
}

/* Copy outer positions [begin, end) of the view.  `tile` >= 0 names an
 * outer dim copied together with the innermost one as 2-D tiles. */
static void copy_range(char *dst, const char *src, size_t es, const view *v,
		       int tile, int64_t begin, int64_t end)
{
	int last = v->rank - 1;
	int64_t idx[OC_MAX_VIEW_RANK] = { 0 };
	int64_t rem = begin, soff = 0, doff = 0;

	/* Position the odometer on `begin` (outer dims exclude last, tile). */
	for (int i = last - 1; i >= 0; i--) {
		if (i == tile)
			continue;
		idx[i] = rem % v->dims[i];
		rem /= v->dims[i];
		soff += idx[i] * v->st[i];
		doff += idx[i] * v->dst_st[i];
	}
	for (int64_t p = begin; p < end; p++) {
		if (tile >= 0)
			copy_tile2d(dst + doff * (int64_t)es, src + soff * (int64_t)es,
				    es, v->dims[tile], v->dst_st[tile], v->st[tile],
				    v->dims[last], v->st[last]);
		else
			copy_row(dst + doff * (int64_t)es, src + soff * (int64_t)es,
				 es, v->dims[last], v->st[last]);
		for (int i = last - 1; i >= 0; i--) {
			if (i == tile)
				continue;
			idx[i]++;
			soff += v->st[i];
			doff += v->dst_st[i];
			if (idx[i] < v->dims[i])
				break;
			soff -= idx[i] * v->st[i];
			doff -= idx[i] * v->dst_st[i];
			idx[i] = 0;
		}
	}
}

void oc_copy_view(void *dst, const void *src, size_t es, int rank,
		  const int64_t *dims, const int64_t *st, int64_t off)
{
	view v;
	int64_t total = 1, outer = 1;
	int tile = -1;

	for (int i = 0; i < rank; i++) {
		if (dims[i] == 0)
			return;
		total *= dims[i];
	}
	src = (const char *)src + off * (int64_t)es;
	coalesce(&v, rank, dims, st);
	if (v.rank == 0) {
		copy_elem(dst, src, es);
		return;
	}
	/* A strided innermost dim with a contiguous outer dim is a transpose:
	 * copy tiles of those two so both sides stay in cache. */
	if (v.st[v.rank - 1] != 1 && v.st[v.rank - 1] != 0 && v.rank > 1) {
		for (int i = v.rank - 2; i >= 0; i--)
			if (v.st[i] == 1) {
				tile = i;
				break;
			}
	}
	for (int i = 0; i < v.rank - 1; i++)
		if (i != tile)
			outer *= v.dims[i];

	if ((int64_t)es * total < (1 << 20) || outer < 2) {
		copy_range(dst, src, es, &v, tile, 0, outer);
		return;
	}
	#pragma omp parallel
	{
		int nt = omp_get_num_threads(), t = omp_get_thread_num();
		int64_t chunk = (outer + nt - 1) / nt;
		int64_t b = chunk * t, e = b + chunk < outer ? b + chunk : outer;
		if (b < e)
			copy_range(dst, src, es, &v, tile, b, e);
	}
}

/* ---- row views ------------------------------------------------------- */

/* The view that lists t's dims as [non-row axes..., row axes...]. */
static void rows_view(const mfs_shape *s, unsigned mask, int64_t *dims,
		      int64_t *st, int64_t *nrows, int64_t *len)
{
	int64_t ist[MFS_MAX_RANK];
	int k = 0;

	oc_strides(s, ist);
	*nrows = 1;
	*len = 1;
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < s->rank; i++) {
			if (((mask >> i) & 1) != (unsigned)pass)
				continue;
			dims[k] = s->dims[i];
			st[k++] = ist[i];
			*(pass ? len : nrows) *= s->dims[i];
		}
}

static bool rows_trailing(const mfs_shape *s, unsigned mask)
{
	bool seen = false;
	for (int i = 0; i < s->rank; i++) {
		bool row = ((mask >> i) & 1) && s->dims[i] != 1;
		bool keep = !((mask >> i) & 1) && s->dims[i] != 1;
		if (row)
			seen = true;
		else if (keep && seen)
			return false;
	}
	return true;
}

int oc_rows_gather(mfs_op_ctx *ctx, const mfs_tensor *t, unsigned mask,
		   const void **rows, void **tmp, int64_t *nrows, int64_t *len)
{
	int64_t dims[MFS_MAX_RANK], st[MFS_MAX_RANK];
	size_t es = mfs_dtype_size(t->dtype);

	rows_view(&t->shape, mask, dims, st, nrows, len);
	*tmp = NULL;
	if (rows_trailing(&t->shape, mask)) {
		*rows = t->data;
		return 0;
	}
	*tmp = malloc((size_t)(*nrows * *len) * es + 1);
	if (!*tmp)
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	oc_copy_view(*tmp, t->data, es, t->shape.rank, dims, st, 0);
	*rows = *tmp;
	return 0;
}

/* Inverse of oc_rows_gather's copy: rows (dense, permuted) into dst in
 * the original order. */
static void rows_scatter(void *dst, const void *rows, size_t es,
			 const mfs_shape *s, unsigned mask)
{
	int64_t dims[MFS_MAX_RANK], st[MFS_MAX_RANK], pst[MFS_MAX_RANK];
	int64_t nrows, len, acc = 1;
	int pos[MFS_MAX_RANK], k = 0;

	rows_view(s, mask, dims, st, &nrows, &len);
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < s->rank; i++)
			if (((mask >> i) & 1) == (unsigned)pass)
				pos[i] = k++;
	/* Dense strides of the permuted layout, then read them per original dim. */
	for (int j = s->rank - 1; j >= 0; j--) {
		st[j] = acc;
		acc *= dims[j];
	}
	for (int i = 0; i < s->rank; i++)
		pst[i] = st[pos[i]];
	oc_copy_view(dst, rows, es, s->rank, s->dims, pst, 0);
}

int oc_row_map(mfs_op_ctx *ctx, const mfs_tensor *in, mfs_tensor *out,
	       unsigned mask, oc_row_fn fn, void *user)
{
	const void *src;
	void *tmp, *dst;
	int64_t nrows, len;
	size_t es = mfs_dtype_size(in->dtype);
	int rc, nt = omp_get_max_threads();
	double *buf;

	if ((rc = oc_need_numeric(ctx, in, true)))
		return rc;
	if ((rc = oc_rows_gather(ctx, in, mask, &src, &tmp, &nrows, &len)))
		return rc;
	if (nrows * len == 0) {
		free(tmp);
		return 0;
	}
	dst = tmp ? tmp : out->data;
	buf = malloc((size_t)len * sizeof(double) * (size_t)nt);
	if (!buf) {
		free(tmp);
		return mfs_op_fail(ctx, ENOMEM, "out of memory");
	}
	#pragma omp parallel for if (nrows * len > 65536 && nrows > 1) schedule(static)
	for (int64_t r = 0; r < nrows; r++) {
		double *row = buf + (size_t)omp_get_thread_num() * (size_t)len;
		const void *s = (const char *)src + (size_t)(r * len) * es;
		void *d = (char *)dst + (size_t)(r * len) * es;
		if (in->dtype == MFS_DT_FLOAT)
			for (int64_t j = 0; j < len; j++)
				row[j] = ((const float *)s)[j];
		else
			for (int64_t j = 0; j < len; j++)
				row[j] = oc_load(in->dtype, s, j);
		fn(row, len, r, user);
		if (out->dtype == MFS_DT_FLOAT)
			for (int64_t j = 0; j < len; j++)
				((float *)d)[j] = (float)row[j];
		else
			for (int64_t j = 0; j < len; j++)
				oc_store(out->dtype, d, j, row[j]);
	}
	free(buf);
	if (tmp) {
		rows_scatter(out->data, tmp, es, &in->shape, mask);
		free(tmp);
	}
	return 0;
}

/* ---- scatter reductions ---------------------------------------------- */

int oc_scatter_reduction(mfs_op_ctx *ctx, int *red)
{
	static const char *names[] = { "none", "add", "mul", "max", "min" };
	const char *s = onnx_attr_string(ctx->node, "reduction", "none");

	for (int i = 0; i < 5; i++)
		if (strcmp(s, names[i]) == 0) {
			*red = i;
			return 0;
		}
	return mfs_op_fail(ctx, EINVAL, "unknown reduction '%s'", s);
}

void oc_reduce_into(int red, mfs_dtype dt, void *dst, int64_t d,
		    const void *src, int64_t s)
{
	double x = oc_load(dt, dst, d), y = oc_load(dt, src, s);

	switch (red) {
	case OC_RED_ADD: x += y; break;
	case OC_RED_MUL: x *= y; break;
	case OC_RED_MAX: x = y > x ? y : x; break;
	case OC_RED_MIN: x = y < x ? y : x; break;
	default: x = y; break;
	}
	oc_store(dt, dst, d, x);
}

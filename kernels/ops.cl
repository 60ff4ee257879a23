/* ops.cl - the OpenCL engine's kernels (exec/opencl/ocl_backend.c, exec/ocl_ops.c).
 *
 * Generic kernels carry most operators: one strided copy (Transpose, Slice,
 * Concat, Expand, Gemm's C), one broadcasting binary kernel per element
 * type with an op code, one unary kernel with an op code, row-wise
 * softmax / layer norm, a strided reduction, then the dense ones (im2col
 * for CLBlast's GEMM, a direct convolution for grouped ones, pools).
 * Every kernel takes its element count and returns for ids past it, so the
 * host may round the global size up to a work-group multiple.
 *
 * The parameter structs are passed by value and match struct definitions
 * in exec/opencl/ocl_internal.h field for field (all 32-bit ints: no padding).
 */

#define MAXR 8

/* Broadcast geometry: output dims and, per operand, element strides (0
 * where the operand is broadcast). */
typedef struct {
	int rank, n;
	int dims[MAXR];
	int s0[MAXR], s1[MAXR], s2[MAXR];
} bc_t;

/* Strided copy: dst[doff + sum i_k*ds_k] = src[soff + sum i_k*ss_k]. */
typedef struct {
	int rank, n, soff, doff;
	int dims[MAXR];
	int ss[MAXR], ds[MAXR];
} cp_t;

/* Reduction: kept dims (strides into the input) and reduced dims. */
typedef struct {
	int n, kr, rr, count;
	int kdims[MAXR], kst[MAXR];
	int rdims[MAXR], rst[MAXR];
} rd_t;

static inline void bc_off(const bc_t *p, int i, int *o0, int *o1, int *o2)
{
	int a = 0, b = 0, c = 0;
	if (p->rank == 1) {   /* same shapes or a scalar, once coalesced */
		*o0 = i * p->s0[0];
		*o1 = i * p->s1[0];
		*o2 = i * p->s2[0];
		return;
	}
	for (int k = p->rank - 1; k >= 0; k--) {
		int d = p->dims[k], x = i % d;
		i /= d;
		a += x * p->s0[k];
		b += x * p->s1[k];
		c += x * p->s2[k];
	}
	*o0 = a;
	*o1 = b;
	*o2 = c;
}

/* ---- unary (float) ---- */

enum { U_RELU, U_SIGMOID, U_TANH, U_ERF, U_SQRT, U_CLIP, U_COPY, U_NEG,
       U_EXP, U_ABS, U_LEAKY, U_GELU, U_GELU_TANH };

static inline float unary_op(float x, int op, float a, float b)
{
	switch (op) {
	case U_RELU: return x > 0.0f ? x : (isnan(x) ? x : 0.0f);
	case U_SIGMOID: return 1.0f / (1.0f + exp(-x));
	case U_TANH: return tanh(x);
	case U_ERF: return erf(x);
	case U_SQRT: return sqrt(x);
	case U_CLIP: return isnan(x) ? x : fmin(fmax(x, a), b);
	case U_NEG: return -x;
	case U_EXP: return exp(x);
	case U_ABS: return fabs(x);
	case U_LEAKY: return x < 0.0f ? a * x : x;
	case U_GELU: return 0.5f * x * (1.0f + erf(x * 0.70710678118654752f));
	case U_GELU_TANH:
		return 0.5f * x * (1.0f + tanh(0.79788456080286536f * (x + 0.044715f * x * x * x)));
	default: return x;
	}
}

__kernel void unary_f32(__global const float *x, __global float *y, int n,
			int op, float a, float b)
{
	int i = get_global_id(0);
	if (i < n)
		y[i] = unary_op(x[i], op, a, b);
}

/* Dense's epilogue, in place on the GEMM's [rows, cols] output: the bias
 * (hasb) over the last dim, then the unary op (U_COPY for none), then the
 * residual Z of Y's shape (hasz). */
__kernel void dense_epilogue(__global float *y, __global const float *bias,
			     __global const float *z, int n, int cols, int hasb,
			     int hasz, int op)
{
	int i = get_global_id(0);
	if (i >= n)
		return;
	float v = y[i];
	if (hasb)
		v += bias[i % cols];
	v = unary_op(v, op, 0.0f, 0.0f);
	y[i] = hasz ? v + z[i] : v;
}

/* Dense's product with its epilogue in one kernel: Y[rows, n] =
 * unary_op(A[rows, k] W + bias) (+ Z[rows, n] when hasz) with W [k, n],
 * or [n, k] when tb.  A work
 * group of 256 items computes a 64 x 64 tile of Y, each item 4 x 4 in
 * registers (rows ty + 16 i, columns tx + 16 j); tiles of A and W go
 * through local memory 16 of K at a time, read from global memory by
 * consecutive items along the stored rows and padded by one float so
 * those stores do not collide in one bank.  Group g is tile
 * (g % rtiles, g / rtiles). */
__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void dense_gemm_64(__global const float *a, __global const float *w,
		   __global const float *bias, __global const float *z,
		   __global float *y, int rows, int n, int k, int tb, int hasb,
		   int hasz, int op)
{
	__local float as[16][64 + 1];
	__local float ws[16][64 + 1];
	int rtiles = (rows + 63) / 64;
	int g = get_group_id(0), l = get_local_id(0);
	int r0 = (g % rtiles) * 64, c0 = (g / rtiles) * 64;
	int tx = l % 16, ty = l / 16;
	float acc[4][4];
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++)
			acc[i][j] = 0.0f;
	/* as in CONV_IGEMM: the next K tile into registers while this one
	 * is multiplied */
	float pa[4], pw[4];
	for (int k0 = 0; k0 < k + 16; k0 += 16) {
		if (k0 > 0) {
			for (int i = 0; i < 4; i++) {
				int idx = l + i * 256;
				as[idx % 16][idx / 16] = pa[i];
				if (tb)
					ws[idx % 16][idx / 16] = pw[i];
				else
					ws[idx / 64][idx % 64] = pw[i];
			}
			barrier(CLK_LOCAL_MEM_FENCE);
		}
		if (k0 < k)
			for (int i = 0; i < 4; i++) {
				int idx = l + i * 256, kk = idx % 16, mm = idx / 16;
				int gr = r0 + mm, gk = k0 + kk;
				pa[i] = gr < rows && gk < k ? a[(long)gr * k + gk] : 0.0f;
				int nn = tb ? idx / 16 : idx % 64;
				kk = tb ? idx % 16 : idx / 64;
				int gc = c0 + nn;
				gk = k0 + kk;
				pw[i] = gc < n && gk < k ?
					w[tb ? (long)gc * k + gk : (long)gk * n + gc] : 0.0f;
			}
		if (k0 == 0)
			continue;
		for (int kk = 0; kk < 16; kk++) {
			float ra[4], rb[4];
			for (int i = 0; i < 4; i++)
				ra[i] = as[kk][ty + 16 * i];
			for (int j = 0; j < 4; j++)
				rb[j] = ws[kk][tx + 16 * j];
			for (int i = 0; i < 4; i++)
				for (int j = 0; j < 4; j++)
					acc[i][j] = fma(ra[i], rb[j], acc[i][j]);
		}
		barrier(CLK_LOCAL_MEM_FENCE);
	}
	for (int i = 0; i < 4; i++) {
		int r = r0 + ty + 16 * i;
		if (r >= rows)
			continue;
		for (int j = 0; j < 4; j++) {
			int c = c0 + tx + 16 * j;
			if (c >= n)
				continue;
			float v = acc[i][j];
			long o = (long)r * n + c;
			if (hasb)
				v += bias[c];
			v = unary_op(v, op, 0.0f, 0.0f);
			y[o] = hasz ? v + z[o] : v;
		}
	}
}

/* ---- binary, broadcasting ---- */

enum { B_ADD, B_SUB, B_MUL, B_DIV, B_POW, B_EQ };

__kernel void binary_f32(__global const float *a, __global const float *b,
			 __global float *y, bc_t p, int op)
{
	int i = get_global_id(0), ia, ib, ic;
	if (i >= p.n)
		return;
	bc_off(&p, i, &ia, &ib, &ic);
	float x = a[ia], z = b[ib], r;
	switch (op) {
	case B_ADD: r = x + z; break;
	case B_SUB: r = x - z; break;
	case B_MUL: r = x * z; break;
	case B_DIV: r = x / z; break;
	case B_POW: r = (z == 2.0f) ? x * x : pow(x, z); break;
	default: r = 0.0f;
	}
	y[i] = r;
}

/* Integer division truncates toward zero; x / 0 gives 0 (as the CPU). */
__kernel void binary_i64(__global const long *a, __global const long *b,
			 __global long *y, bc_t p, int op)
{
	int i = get_global_id(0), ia, ib, ic;
	if (i >= p.n)
		return;
	bc_off(&p, i, &ia, &ib, &ic);
	long x = a[ia], z = b[ib], r;
	switch (op) {
	case B_ADD: r = x + z; break;
	case B_SUB: r = x - z; break;
	case B_MUL: r = x * z; break;
	case B_DIV: r = z ? ((z == -1) ? -x : x / z) : 0; break;
	default: r = 0;
	}
	y[i] = r;
}

__kernel void binary_i32(__global const int *a, __global const int *b,
			 __global int *y, bc_t p, int op)
{
	int i = get_global_id(0), ia, ib, ic;
	if (i >= p.n)
		return;
	bc_off(&p, i, &ia, &ib, &ic);
	int x = a[ia], z = b[ib], r;
	switch (op) {
	case B_ADD: r = x + z; break;
	case B_SUB: r = x - z; break;
	case B_MUL: r = x * z; break;
	case B_DIV: r = z ? ((z == -1) ? -x : x / z) : 0; break;
	default: r = 0;
	}
	y[i] = r;
}

/* Equal -> bool (one byte). */
__kernel void equal_f32(__global const float *a, __global const float *b,
			__global uchar *y, bc_t p)
{
	int i = get_global_id(0), ia, ib, ic;
	if (i < p.n) {
		bc_off(&p, i, &ia, &ib, &ic);
		y[i] = a[ia] == b[ib];
	}
}

__kernel void equal_i64(__global const long *a, __global const long *b,
			__global uchar *y, bc_t p)
{
	int i = get_global_id(0), ia, ib, ic;
	if (i < p.n) {
		bc_off(&p, i, &ia, &ib, &ic);
		y[i] = a[ia] == b[ib];
	}
}

__kernel void equal_i32(__global const int *a, __global const int *b,
			__global uchar *y, bc_t p)
{
	int i = get_global_id(0), ia, ib, ic;
	if (i < p.n) {
		bc_off(&p, i, &ia, &ib, &ic);
		y[i] = a[ia] == b[ib];
	}
}

__kernel void equal_u8(__global const uchar *a, __global const uchar *b,
		       __global uchar *y, bc_t p)
{
	int i = get_global_id(0), ia, ib, ic;
	if (i < p.n) {
		bc_off(&p, i, &ia, &ib, &ic);
		y[i] = a[ia] == b[ib];
	}
}

/* Where(cond, x, y): s0 cond, s1 x, s2 y. */
#define WHERE(T, name)                                                        \
__kernel void name(__global const uchar *c, __global const T *x,              \
		   __global const T *y, __global T *o, bc_t p)                \
{                                                                             \
	int i = get_global_id(0), ic, ix, iy;                                 \
	if (i < p.n) {                                                        \
		bc_off(&p, i, &ic, &ix, &iy);                                 \
		o[i] = c[ic] ? x[ix] : y[iy];                                 \
	}                                                                     \
}
WHERE(uchar, where_1)
WHERE(uint, where_4)
WHERE(ulong, where_8)

/* ---- strided copy, fill ---- */

#define COPY(T, name)                                                         \
__kernel void name(__global const T *src, __global T *dst, cp_t p)            \
{                                                                             \
	int i = get_global_id(0);                                             \
	if (i >= p.n)                                                         \
		return;                                                       \
	int s = p.soff, d = p.doff;                                           \
	for (int k = p.rank - 1; k >= 0; k--) {                               \
		int x = i % p.dims[k];                                        \
		i /= p.dims[k];                                               \
		s += x * p.ss[k];                                             \
		d += x * p.ds[k];                                             \
	}                                                                     \
	dst[d] = src[s];                                                      \
}
COPY(uchar, copy_1)
COPY(uint, copy_4)
COPY(ulong, copy_8)

__kernel void fill_1(__global uchar *y, int n, uchar v)
{
	int i = get_global_id(0);
	if (i < n)
		y[i] = v;
}

__kernel void fill_4(__global uint *y, int n, uint v)
{
	int i = get_global_id(0);
	if (i < n)
		y[i] = v;
}

__kernel void fill_8(__global ulong *y, int n, ulong v)
{
	int i = get_global_id(0);
	if (i < n)
		y[i] = v;
}

/* ---- Cast among float, int64, int32, int8, uint8, bool ---- */

/* ONNX type numbers */
enum { T_FLOAT = 1, T_UINT8 = 2, T_INT8 = 3, T_INT32 = 6, T_INT64 = 7,
       T_BOOL = 9 };

__kernel void cast(__global const uchar *src, __global uchar *dst, int n,
		   int st, int dt)
{
	int i = get_global_id(0);
	if (i >= n)
		return;
	float f = 0.0f;
	long l = 0;
	int isf = 0;
	switch (st) {
	case T_FLOAT: f = ((__global const float *)src)[i]; isf = 1; break;
	case T_UINT8: case T_BOOL: l = src[i]; break;
	case T_INT8: l = ((__global const char *)src)[i]; break;
	case T_INT32: l = ((__global const int *)src)[i]; break;
	case T_INT64: l = ((__global const long *)src)[i]; break;
	}
	switch (dt) {
	case T_FLOAT:
		((__global float *)dst)[i] = isf ? f : (float)l;
		break;
	case T_BOOL:
		dst[i] = isf ? f != 0.0f : l != 0;
		break;
	case T_UINT8:
		dst[i] = isf ? convert_uchar_sat(isnan(f) ? 0.0f : f) : convert_uchar_sat(l);
		break;
	case T_INT8:
		((__global char *)dst)[i] = isf ? convert_char_sat(isnan(f) ? 0.0f : f) : convert_char_sat(l);
		break;
	case T_INT32:
		((__global int *)dst)[i] = isf ? convert_int_sat(isnan(f) ? 0.0f : f) : convert_int_sat(l);
		break;
	case T_INT64:
		((__global long *)dst)[i] = isf ? convert_long_sat(isnan(f) ? 0.0f : f) : l;
		break;
	}
}

/* ---- Gather: out[o, j, k] = data[o, idx[j], k].  The host checked the
 * indices (exec/opencl/ocl_ops_elem.c); the bound here only keeps a read from
 * ever leaving the buffer. ---- */

#define GATHER(T, I, name)                                                    \
__kernel void name(__global const T *data, __global const I *idx,             \
		   __global T *out, int n, int axis_len, int nidx, int inner) \
{                                                                             \
	int i = get_global_id(0);                                             \
	if (i >= n)                                                           \
		return;                                                       \
	int k = i % inner, t = i / inner, j = t % nidx, o = t / nidx;         \
	long x = idx[j];                                                      \
	if (x < 0)                                                            \
		x += axis_len;                                                \
	out[i] = (x >= 0 && x < axis_len) ?                                   \
		 data[((long)o * axis_len + x) * inner + k] : (T)0;           \
}
GATHER(uchar, long, gather_1_i64)
GATHER(uint, long, gather_4_i64)
GATHER(ulong, long, gather_8_i64)
GATHER(uchar, int, gather_1_i32)
GATHER(uint, int, gather_4_i32)
GATHER(ulong, int, gather_8_i32)

/* ---- reductions and row-wise normalisations (float) ---- */

/* op 0: sum, 1: mean */
__kernel void reduce_f32(__global const float *x, __global float *y, rd_t p,
			 int op)
{
	int i = get_global_id(0);
	if (i >= p.n)
		return;
	int base = 0, t = i;
	for (int k = p.kr - 1; k >= 0; k--) {
		base += (t % p.kdims[k]) * p.kst[k];
		t /= p.kdims[k];
	}
	float s = 0.0f;
	for (int j = 0; j < p.count; j++) {
		int off = base, u = j;
		for (int k = p.rr - 1; k >= 0; k--) {
			off += (u % p.rdims[k]) * p.rst[k];
			u /= p.rdims[k];
		}
		s += x[off];
	}
	y[i] = op == 1 ? s / (float)p.count : s;
}

/* Softmax over a strided axis: one work item per (outer, inner); log != 0
 * gives LogSoftmax. */
__kernel void softmax_f32(__global const float *x, __global float *y,
			  int outer, int len, int inner, int logsm)
{
	int i = get_global_id(0);
	if (i >= outer * inner)
		return;
	int o = i / inner, k = i % inner;
	long base = (long)o * len * inner + k;
	float m = -INFINITY, s = 0.0f;
	for (int j = 0; j < len; j++)
		m = fmax(m, x[base + (long)j * inner]);
	for (int j = 0; j < len; j++)
		s += exp(x[base + (long)j * inner] - m);
	if (logsm) {
		float ls = log(s);
		for (int j = 0; j < len; j++)
			y[base + (long)j * inner] = x[base + (long)j * inner] - m - ls;
	} else {
		float inv = 1.0f / s;
		for (int j = 0; j < len; j++)
			y[base + (long)j * inner] = exp(x[base + (long)j * inner] - m) * inv;
	}
}

/* LayerNormalization over rows of len; scale/bias hold sn/bn elements
 * (len, or 1 for a broadcast scalar); bias may be absent (hasb 0).  One
 * work group per row, a tree reduction in local memory (size a power of
 * two, <= 256). */
/* Softmax / LogSoftmax over contiguous rows (inner 1): one work group
 * per row, a power-of-two group no wider than the row; red holds one
 * float per item. */
static inline float group_reduce(__local float *red, float v, int l, int ls, int is_max)
{
	red[l] = v;
	barrier(CLK_LOCAL_MEM_FENCE);
	for (int h = ls / 2; h > 0; h /= 2) {
		if (l < h)
			red[l] = is_max ? fmax(red[l], red[l + h]) : red[l] + red[l + h];
		barrier(CLK_LOCAL_MEM_FENCE);
	}
	v = red[0];
	barrier(CLK_LOCAL_MEM_FENCE);
	return v;
}

/* Element j of row r of softmax_rows_f32's input: x, or fill where the
 * mask (Attention's Cond, broadcast to the rows by p's first strides)
 * differs from keep. */
static inline float masked(__global const float *xr, __global const uchar *c,
			   const bc_t *p, int hasc, int keep, float fill, int r, int len,
			   int j)
{
	int oc, o1, o2;
	if (!hasc)
		return xr[j];
	bc_off(p, r * len + j, &oc, &o1, &o2);
	return (c[oc] != 0) != keep ? fill : xr[j];
}

/* One work group per row; y may be x.  With hasc, the Attention mask
 * first (see masked). */
__kernel void softmax_rows_f32(__global const float *x, __global float *y,
			       int len, int logsm, __local float *red,
			       __global const uchar *c, bc_t p, int hasc, int keep,
			       float fill)
{
	int l = get_local_id(0), ls = get_local_size(0), r = get_group_id(0);
	__global const float *xr = x + (long)r * len;
	__global float *yr = y + (long)r * len;
	float m = -INFINITY, s = 0.0f;
	for (int j = l; j < len; j += ls)
		m = fmax(m, masked(xr, c, &p, hasc, keep, fill, r, len, j));
	m = group_reduce(red, m, l, ls, 1);
	for (int j = l; j < len; j += ls)
		s += exp(masked(xr, c, &p, hasc, keep, fill, r, len, j) - m);
	s = group_reduce(red, s, l, ls, 0);
	if (logsm) {
		float lg = log(s);
		for (int j = l; j < len; j += ls)
			yr[j] = xr[j] - m - lg;
	} else {
		float inv = 1.0f / s;
		for (int j = l; j < len; j += ls)
			yr[j] = exp(masked(xr, c, &p, hasc, keep, fill, r, len, j) - m) * inv;
	}
}

/* ReduceSum / ReduceMean over the trailing dims (rows of len): one work
 * group per row, as softmax_rows_f32. */
__kernel void reduce_rows_f32(__global const float *x, __global float *y,
			      int len, int mean, __local float *red)
{
	int l = get_local_id(0), ls = get_local_size(0);
	__global const float *xr = x + (long)get_group_id(0) * len;
	float s = 0.0f;
	for (int j = l; j < len; j += ls)
		s += xr[j];
	s = group_reduce(red, s, l, ls, 0);
	if (l == 0)
		y[get_group_id(0)] = mean ? s / (float)len : s;
}

__kernel void layernorm_f32(__global const float *x, __global const float *sc,
			    __global const float *bi, __global float *y,
			    int rows, int len, int sn, int bn, int hasb,
			    float eps, __local float *red)
{
	int r = get_group_id(0), l = get_local_id(0), ls = get_local_size(0);
	if (r >= rows)
		return;
	__global const float *xr = x + (long)r * len;
	__global float *yr = y + (long)r * len;
	float s = 0.0f;
	for (int j = l; j < len; j += ls)
		s += xr[j];
	red[l] = s;
	barrier(CLK_LOCAL_MEM_FENCE);
	for (int h = ls / 2; h > 0; h /= 2) {
		if (l < h)
			red[l] += red[l + h];
		barrier(CLK_LOCAL_MEM_FENCE);
	}
	float mean = red[0] / (float)len;
	barrier(CLK_LOCAL_MEM_FENCE);
	s = 0.0f;
	for (int j = l; j < len; j += ls) {
		float d = xr[j] - mean;
		s += d * d;
	}
	red[l] = s;
	barrier(CLK_LOCAL_MEM_FENCE);
	for (int h = ls / 2; h > 0; h /= 2) {
		if (l < h)
			red[l] += red[l + h];
		barrier(CLK_LOCAL_MEM_FENCE);
	}
	float inv = 1.0f / sqrt(red[0] / (float)len + eps);
	for (int j = l; j < len; j += ls) {
		float v = (xr[j] - mean) * inv * sc[sn == 1 ? 0 : j];
		if (hasb)
			v += bi[bn == 1 ? 0 : j];
		yr[j] = v;
	}
}

/* BatchNormalization (inference) over [N, C, inner]. */
__kernel void batchnorm_f32(__global const float *x, __global const float *sc,
			    __global const float *bi, __global const float *mean,
			    __global const float *var, __global float *y,
			    int n, int c, int inner, float eps)
{
	int i = get_global_id(0);
	if (i >= n)
		return;
	int ch = (i / inner) % c;
	y[i] = (x[i] - mean[ch]) / sqrt(var[ch] + eps) * sc[ch] + bi[ch];
}

/* ---- pools (2-D, float) ---- */

typedef struct {
	int n, c, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
	int pe_h, pe_w;   /* end padding (for count_include_pad) */
	int cip;          /* AveragePool count_include_pad */
} pool_t;

__kernel void maxpool2d_f32(__global const float *x, __global float *y, pool_t p)
{
	int i = get_global_id(0);
	if (i >= p.n * p.c * p.oh * p.ow)
		return;
	int ox = i % p.ow, t = i / p.ow, oy = t % p.oh, nc = t / p.oh;
	__global const float *xp = x + (long)nc * p.h * p.w;
	float m = -INFINITY;
	for (int ky = 0; ky < p.kh; ky++) {
		int iy = oy * p.sh - p.ph + ky * p.dh;
		if (iy < 0 || iy >= p.h)
			continue;
		for (int kx = 0; kx < p.kw; kx++) {
			int ix = ox * p.sw - p.pw + kx * p.dw;
			if (ix < 0 || ix >= p.w)
				continue;
			float v = xp[iy * p.w + ix];
			if (v > m || isnan(v))
				m = v;
		}
	}
	y[i] = m;
}

__kernel void avgpool2d_f32(__global const float *x, __global float *y, pool_t p)
{
	int i = get_global_id(0);
	if (i >= p.n * p.c * p.oh * p.ow)
		return;
	int ox = i % p.ow, t = i / p.ow, oy = t % p.oh, nc = t / p.oh;
	__global const float *xp = x + (long)nc * p.h * p.w;
	float s = 0.0f;
	int cnt = 0;
	int y0 = oy * p.sh - p.ph, x0 = ox * p.sw - p.pw;
	for (int ky = 0; ky < p.kh; ky++) {
		int iy = y0 + ky;
		if (iy < 0 || iy >= p.h)
			continue;
		for (int kx = 0; kx < p.kw; kx++) {
			int ix = x0 + kx;
			if (ix < 0 || ix >= p.w)
				continue;
			s += xp[iy * p.w + ix];
			cnt++;
		}
	}
	if (p.cip) {
		/* the window clipped to the padded extent (not the
		 * ceil_mode overhang) */
		int ya = max(y0, -p.ph), yb = min(y0 + p.kh, p.h + p.pe_h);
		int xa = max(x0, -p.pw), xb = min(x0 + p.kw, p.w + p.pe_w);
		cnt = max(yb - ya, 0) * max(xb - xa, 0);
	}
	y[i] = cnt ? s / (float)cnt : 0.0f;
}

/* GlobalAveragePool: one item per (n, c) plane of len. */
__kernel void gavgpool_f32(__global const float *x, __global float *y, int nc,
			   int len)
{
	int i = get_global_id(0);
	if (i >= nc)
		return;
	__global const float *xp = x + (long)i * len;
	float s = 0.0f;
	for (int j = 0; j < len; j++)
		s += xp[j];
	y[i] = s / (float)len;
}

/* ---- convolution (2-D, float) ---- */

typedef struct {
	int n, c, h, w, m, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, group;
} conv_t;

/* col[(ci*kh + ky)*kw + kx][b*oh*ow + oy*ow + ox] for images n0..n0+nb:
 * the GEMM's B operand, K x (nb*OH*OW), for group 1. */
__kernel void im2col_f32(__global const float *x, __global float *col,
			 conv_t p, int n0, int nb)
{
	int i = get_global_id(0);
	int ohw = p.oh * p.ow, cols = nb * ohw, K = p.c * p.kh * p.kw;
	if (i >= K * cols)
		return;
	int j = i % cols, r = i / cols;
	int b = j / ohw, q = j % ohw, oy = q / p.ow, ox = q % p.ow;
	int kx = r % p.kw, t = r / p.kw, ky = t % p.kh, ci = t / p.kh;
	int iy = oy * p.sh - p.ph + ky * p.dh, ix = ox * p.sw - p.pw + kx * p.dw;
	float v = 0.0f;
	if (iy >= 0 && iy < p.h && ix >= 0 && ix < p.w)
		v = x[(((long)(n0 + b) * p.c + ci) * p.h + iy) * p.w + ix];
	col[i] = v;
}

/* act: 0 none, 1 relu, 2 leaky (a), 3 clip (a, b) */
static inline float act_apply(float v, int act, float a, float b)
{
	if (act == 1)
		return v > 0.0f ? v : 0.0f;
	if (act == 2)
		return v < 0.0f ? a * v : v;
	if (act == 3)
		return fmin(fmax(v, a), b);
	return v;
}

/* The GEMM wrote tmp[toff + m*nb*ohw + b*ohw + q] for images n0..n0+nb;
 * move it to y[n0+b][m][q] adding bias, Z and the activation.  tmp may be
 * y itself when nb == 1 (toff = n0*m*ohw: the same index). */
__kernel void conv_epilogue(__global const float *tmp, __global float *y,
			    __global const float *bias, __global const float *z,
			    int hasb, int hasz, int m, int ohw, int n0, int nb,
			    int act, float a, float b, int toff)
{
	int i = get_global_id(0);
	if (i >= nb * m * ohw)
		return;
	int q = i % ohw, t = i / ohw, c = t % m, bi = t / m;
	float v = tmp[toff + (long)c * nb * ohw + (long)bi * ohw + q];
	long o = (long)n0 * m * ohw + i;
	if (hasb)
		v += bias[c];
	if (hasz)
		v += z[o];
	y[o] = act_apply(v, act, a, b);
}

/* Direct convolution (grouped / depthwise), one item per output. */
__kernel void conv_direct_f32(__global const float *x, __global const float *wt,
			      __global const float *bias, __global const float *z,
			      __global float *y, conv_t p, int hasb, int hasz,
			      int act, float a, float b)
{
	int i = get_global_id(0);
	if (i >= p.n * p.m * p.oh * p.ow)
		return;
	int ox = i % p.ow, t = i / p.ow, oy = t % p.oh;
	t /= p.oh;
	int mo = t % p.m, nn = t / p.m;
	int cg = p.c / p.group, mg = p.m / p.group, g = mo / mg;
	float s = hasb ? bias[mo] : 0.0f;
	for (int ci = 0; ci < cg; ci++) {
		__global const float *xp = x + ((long)nn * p.c + g * cg + ci) * p.h * p.w;
		__global const float *wp = wt + ((long)mo * cg + ci) * p.kh * p.kw;
		for (int ky = 0; ky < p.kh; ky++) {
			int iy = oy * p.sh - p.ph + ky * p.dh;
			if (iy < 0 || iy >= p.h)
				continue;
			for (int kx = 0; kx < p.kw; kx++) {
				int ix = ox * p.sw - p.pw + kx * p.dw;
				if (ix < 0 || ix >= p.w)
					continue;
				s += xp[iy * p.w + ix] * wp[ky * p.kw + kx];
			}
		}
	}
	if (hasz)
		s += z[i];
	y[i] = act_apply(s, act, a, b);
}

/* Implicit-GEMM convolution (group 1): Y[mo, col] = W[mo, K] x X~[K, col]
 * with col = (image, oy, ox) over the whole batch and K = (ci, ky, kx);
 * X~ is gathered from X tile by tile into local memory, never written
 * out.  A work group of 256 items computes a TM x TN tile of Y, each item
 * WM x WN outputs in registers (rows ty + 16 i, columns tx + 16 j), and
 * applies bias, FusedConv's Z and the activation before the one store in
 * NCHW order.  Launched as 1-D groups: group g is tile (g % mtiles,
 * g / mtiles). */
#define CONV_IGEMM(NAME, TM, TN, TK, PW, BATCHED)                            \
__kernel __attribute__((reqd_work_group_size(256, 1, 1)))                    \
void NAME(__global const float *x, __global const float *wt,                  \
	  __global const float *bias, __global const float *z,                \
	  __global float *y, conv_t p, int hasb, int hasz,                    \
	  int act, float a, float b)                                          \
{                                                                             \
	/* +1: the A tile is stored by K-consecutive items (coalesced reads   \
	 * of W's rows), TM floats apart without it: a 16-way bank conflict  \
	 * on every store */                                                  \
	__local float as[TK][TM + 1];                                         \
	__local float bs[TK][TN];                                             \
	const int WM = TM / 16, WN = TN / 16;                                 \
	int khw = p.kh * p.kw, K = p.c * khw, ohw = p.oh * p.ow;              \
	int cols = p.n * ohw, mtiles = (p.m + TM - 1) / TM;                   \
	int g = get_group_id(0), l = get_local_id(0);                         \
	/* BATCHED (PW only): 16 products of their own W, X and Y, one after \
	 * the other in each (Winograd's M[xi] = U[xi] V[xi]) */             \
	if (BATCHED) {                                                        \
		int per = mtiles * ((cols + TN - 1) / TN), xi = g / per;      \
		g -= xi * per;                                                \
		x += (long)xi * p.c * p.h * p.w;                              \
		wt += (long)xi * p.m * K;                                     \
		y += (long)xi * p.m * ohw;                                    \
	}                                                                     \
	int m0 = (g % mtiles) * TM, c0 = (g / mtiles) * TN;                   \
	int tx = l % 16, ty = l / 16;                                         \
	/* this item's B column is fixed: decode it once */                  \
	int bn = l % TN, bc = c0 + bn;                                        \
	int bimg = bc / ohw, bq = bc % ohw;                                   \
	int biy = (bq / p.ow) * p.sh - p.ph, bix = (bq % p.ow) * p.sw - p.pw; \
	__global const float *xb = x + (long)bimg * p.c * p.h * p.w;          \
	/* PW: a kernel for 1x1 stride-1 unpadded layers only, which reads X  \
	 * as the plain [C, HW] matrix of its image (the host checks) */     \
	int hw = p.h * p.w;                                                   \
	float acc[TM / 16][TN / 16];                                          \
	for (int i = 0; i < WM; i++)                                          \
		for (int j = 0; j < WN; j++)                                  \
			acc[i][j] = 0.0f;                                     \
	/* The next K tile is read from global memory into registers while  \
	 * this one is multiplied out of local memory, so that the reads'     \
	 * latency overlaps the arithmetic. */                                \
	float pa[TK * TM / 256], pb[TK * TN / 256];                           \
	/* Where this item's B elements are in X's window, (channel, ky,      \
	 * kx) for K index k0 + kk, advanced by TK each tile with carries:    \
	 * four integer divisions per element per tile cost more than the    \
	 * multiply-adds they feed. */                                        \
	int eci[TK * TN / 256], eky[TK * TN / 256], ekx[TK * TN / 256];        \
	int dci = TK / khw, dky = (TK % khw) / p.kw, dkx = (TK % khw) % p.kw; \
	for (int i = 0; i < TK * TN / 256; i++) {                             \
		int kk = l / TN + i * (256 / TN), r = kk % khw;               \
		eci[i] = kk / khw;                                            \
		eky[i] = r / p.kw;                                            \
		ekx[i] = r % p.kw;                                            \
	}                                                                     \
	for (int k0 = 0; k0 < K + TK; k0 += TK) {                             \
		if (k0 > 0) {                                                 \
			for (int i = 0; i < TK * TM / 256; i++) {             \
				int idx = l + i * 256;                        \
				as[idx % TK][idx / TK] = pa[i];               \
			}                                                     \
			for (int i = 0; i < TK * TN / 256; i++)               \
				bs[l / TN + i * (256 / TN)][bn] = pb[i];      \
			barrier(CLK_LOCAL_MEM_FENCE);                         \
		}                                                             \
		if (k0 < K) {                                                 \
			for (int i = 0; i < TK * TM / 256; i++) {             \
				int idx = l + i * 256, kk = idx % TK, mm = idx / TK; \
				int gm = m0 + mm, gk = k0 + kk;               \
				pa[i] = gm < p.m && gk < K ?                  \
					wt[(long)gm * K + gk] : 0.0f;         \
			}                                                     \
			for (int i = 0; i < TK * TN / 256; i++) {             \
				int kk = l / TN + i * (256 / TN), gk = k0 + kk; \
				float v = 0.0f;                               \
				if (PW) {                                     \
					if (bc < cols && gk < K)              \
						v = xb[(long)gk * hw + bq];   \
				} else {                                      \
					int iy = biy + eky[i] * p.dh;         \
					int ix = bix + ekx[i] * p.dw;         \
					if (bc < cols && gk < K && iy >= 0 && iy < p.h && \
					    ix >= 0 && ix < p.w)              \
						v = xb[((long)eci[i] * p.h + iy) * p.w + ix]; \
					ekx[i] += dkx;                        \
					eky[i] += dky;                        \
					eci[i] += dci;                        \
					if (ekx[i] >= p.kw) {                 \
						ekx[i] -= p.kw;               \
						eky[i]++;                     \
					}                                     \
					if (eky[i] >= p.kh) {                 \
						eky[i] -= p.kh;               \
						eci[i]++;                     \
					}                                     \
				}                                             \
				pb[i] = v;                                    \
			}                                                     \
		}                                                             \
		if (k0 == 0)                                                  \
			continue;                                             \
		for (int kk = 0; kk < TK; kk++) {                             \
			float ra[TM / 16], rb[TN / 16];                       \
			for (int i = 0; i < WM; i++)                          \
				ra[i] = as[kk][ty + 16 * i];                  \
			for (int j = 0; j < WN; j++)                          \
				rb[j] = bs[kk][tx + 16 * j];                  \
			for (int i = 0; i < WM; i++)                          \
				for (int j = 0; j < WN; j++)                  \
					acc[i][j] = fma(ra[i], rb[j], acc[i][j]); \
		}                                                             \
		barrier(CLK_LOCAL_MEM_FENCE);                                 \
	}                                                                     \
	for (int j = 0; j < WN; j++) {                                        \
		int c = c0 + tx + 16 * j;                                     \
		if (c >= cols)                                                \
			continue;                                             \
		int img = c / ohw, q = c % ohw;                               \
		for (int i = 0; i < WM; i++) {                                \
			int mo = m0 + ty + 16 * i;                            \
			if (mo >= p.m)                                        \
				continue;                                     \
			long o = ((long)img * p.m + mo) * ohw + q;            \
			float v = acc[i][j];                                  \
			if (hasb)                                             \
				v += bias[mo];                                \
			if (hasz)                                             \
				v += z[o];                                    \
			y[o] = act_apply(v, act, a, b);                       \
		}                                                             \
	}                                                                     \
}

CONV_IGEMM(conv_igemm_64, 64, 64, 16, 0, 0)
CONV_IGEMM(conv_igemm_pw_64, 64, 64, 16, 1, 0)
CONV_IGEMM(conv_igemm_128x64, 128, 64, 16, 0, 0)
CONV_IGEMM(conv_igemm_128, 128, 128, 8, 0, 0)
CONV_IGEMM(wino_gemm_64, 64, 64, 16, 1, 1)

/* Winograd F(T x T, 3x3), T = 2 or 4, for 3x3 stride-1 convolutions
 * (group 1, no dilation): 2.25x or 4x fewer multiply-adds than the direct
 * product.  WEIGHTS makes U = G g Gt of each 3x3 filter (once per model
 * for a constant W), INPUT V = Bt d B of each (T+2)^2 input tile (tiles T
 * apart), wino_gemm_64 the (T+2)^2 products M[xi] = U[xi] V[xi] and
 * OUTPUT Y = At M A of each T x T output tile with bias, Z and the
 * activation.  Layouts, tile-fastest so that consecutive items read and
 * write consecutive floats: U [xi][K][C], V [xi][C][P], M [xi][K][P],
 * P = N * th * tw tiles.  The transforms' constants are Lavin & Gray's;
 * the loops over them unroll, so their zeros and ones fold away. */
__constant float W2_G[4][3] = {
	{ 1, 0, 0 }, { 0.5f, 0.5f, 0.5f }, { 0.5f, -0.5f, 0.5f }, { 0, 0, 1 },
};
__constant float W2_BT[4][4] = {
	{ 1, 0, -1, 0 }, { 0, 1, 1, 0 }, { 0, -1, 1, 0 }, { 0, 1, 0, -1 },
};
__constant float W2_AT[2][4] = {
	{ 1, 1, 1, 0 }, { 0, 1, -1, -1 },
};
__constant float W4_G[6][3] = {
	{ 0.25f, 0.0f, 0.0f },
	{ -1.0f / 6, -1.0f / 6, -1.0f / 6 },
	{ -1.0f / 6, 1.0f / 6, -1.0f / 6 },
	{ 1.0f / 24, 1.0f / 12, 1.0f / 6 },
	{ 1.0f / 24, -1.0f / 12, 1.0f / 6 },
	{ 0.0f, 0.0f, 1.0f },
};
__constant float W4_BT[6][6] = {
	{ 4, 0, -5, 0, 1, 0 },
	{ 0, -4, -4, 1, 1, 0 },
	{ 0, 4, -4, -1, 1, 0 },
	{ 0, -2, -1, 2, 1, 0 },
	{ 0, 2, -1, -2, 1, 0 },
	{ 0, 4, 0, -5, 0, 1 },
};
__constant float W4_AT[4][6] = {
	{ 1, 1, 1, 1, 1, 0 },
	{ 0, 1, -1, 2, -2, 0 },
	{ 0, 1, 1, 4, 4, 0 },
	{ 0, 1, -1, 8, -8, 1 },
};

/* OUT = the R x C product of small constant-size matrices, its element
 * (r_, c_) the sum over k_ < KN of LHS * RHS (expressions in r_, c_,
 * k_): the transforms of WINOGRAD below, unrolled. */
#define WINO_MUL(OUT, R, C, KN, LHS, RHS)                                     \
	_Pragma("unroll")                                                     \
	for (int r_ = 0; r_ < (R); r_++)                                      \
		_Pragma("unroll")                                             \
		for (int c_ = 0; c_ < (C); c_++) {                            \
			float s_ = 0.0f;                                      \
			_Pragma("unroll")                                     \
			for (int k_ = 0; k_ < (KN); k_++)                     \
				s_ += (LHS) * (RHS);                          \
			OUT = s_;                                             \
		}

#define WINOGRAD(WEIGHTS, INPUT, OUTPUT, T, G, BT, AT)                        \
__kernel void WEIGHTS(__global const float *w, __global float *u, int kc)     \
{                                                                             \
	const int AL = T + 2;                                                 \
	int i = get_global_id(0);   /* filter k * C + c */                    \
	if (i >= kc)                                                          \
		return;                                                       \
	__global const float *g = w + (long)i * 9;                            \
	float t[T + 2][3];                                                    \
	WINO_MUL(t[r_][c_], AL, 3, 3, G[r_][k_], g[k_ * 3 + c_])              \
	WINO_MUL(u[(long)(r_ * AL + c_) * kc + i], AL, AL, 3, t[r_][k_], G[c_][k_]) \
}                                                                             \
                                                                              \
__kernel void INPUT(__global const float *x, __global float *v, conv_t p,     \
		    int th, int tw)                                           \
{                                                                             \
	const int AL = T + 2;                                                 \
	int tiles = th * tw, P = p.n * tiles;                                 \
	int i = get_global_id(0);   /* c * P + tile */                        \
	if (i >= p.c * P)                                                     \
		return;                                                       \
	int c = i / P, t = i % P, img = t / tiles, q = t % tiles;             \
	int y0 = (q / tw) * T - p.ph, x0 = (q % tw) * T - p.pw;               \
	__global const float *xp = x + ((long)img * p.c + c) * p.h * p.w;     \
	float d[T + 2][T + 2], e[T + 2][T + 2];                               \
	_Pragma("unroll")                                                     \
	for (int a = 0; a < AL; a++)                                          \
		_Pragma("unroll")                                             \
		for (int b = 0; b < AL; b++) {                                \
			int iy = y0 + a, ix = x0 + b;                         \
			d[a][b] = iy >= 0 && iy < p.h && ix >= 0 && ix < p.w ? \
				  xp[iy * p.w + ix] : 0.0f;                   \
		}                                                             \
	WINO_MUL(e[r_][c_], AL, AL, AL, BT[r_][k_], d[k_][c_])                \
	long cp = (long)p.c * P;                                              \
	WINO_MUL(v[(r_ * AL + c_) * cp + i], AL, AL, AL, e[r_][k_], BT[c_][k_]) \
}                                                                             \
                                                                              \
__kernel void OUTPUT(__global const float *mm, __global const float *bias,    \
		     __global const float *z, __global float *y, conv_t p,    \
		     int th, int tw, int hasb, int hasz, int act, float a,    \
		     float b)                                                 \
{                                                                             \
	const int AL = T + 2;                                                 \
	int tiles = th * tw, P = p.n * tiles;                                 \
	int i = get_global_id(0);   /* k * P + tile */                        \
	if (i >= p.m * P)                                                     \
		return;                                                       \
	int k = i / P, t = i % P, img = t / tiles, q = t % tiles;             \
	int oy0 = (q / tw) * T, ox0 = (q % tw) * T;                           \
	long kp = (long)p.m * P;                                              \
	float m[T + 2][T + 2], s[T][T + 2];                                   \
	_Pragma("unroll")                                                     \
	for (int xi = 0; xi < AL * AL; xi++)                                  \
		m[xi / AL][xi % AL] = mm[xi * kp + i];                        \
	WINO_MUL(s[r_][c_], T, AL, AL, AT[r_][k_], m[k_][c_])                 \
	float bv = hasb ? bias[k] : 0.0f;                                     \
	_Pragma("unroll")                                                     \
	for (int r = 0; r < T; r++) {                                         \
		int oy = oy0 + r;                                             \
		if (oy >= p.oh)                                               \
			continue;                                             \
		_Pragma("unroll")                                             \
		for (int c = 0; c < T; c++) {                                 \
			int ox = ox0 + c;                                     \
			if (ox >= p.ow)                                       \
				continue;                                     \
			float v = bv;                                         \
			_Pragma("unroll")                                     \
			for (int j = 0; j < AL; j++)                          \
				v += s[r][j] * AT[c][j];                      \
			long oi = (((long)img * p.m + k) * p.oh + oy) * p.ow + ox; \
			if (hasz)                                             \
				v += z[oi];                                   \
			y[oi] = act_apply(v, act, a, b);                      \
		}                                                             \
	}                                                                     \
}

WINOGRAD(wino_weights, wino_input, wino_output, 2, W2_G, W2_BT, W2_AT)
WINOGRAD(wino4_weights, wino4_input, wino4_output, 4, W4_G, W4_BT, W4_AT)

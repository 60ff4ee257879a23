/* ocl_ops_elem.c - device implementations of the elementwise and
 * data-movement operators (listed with their opsets in ocl_op_table.c).
 *
 * Elementwise: Relu, LeakyRelu, Sigmoid, Tanh, Erf, Sqrt, Neg, Exp, Abs,
 * Clip, Gelu (float) through one unary kernel with an op code; Add, Sub, Mul,
 * Div (float, int64, int32), Pow (float) and Equal through broadcasting
 * kernels; Where, Sum, Cast/CastLike (float, int8, uint8, int32, int64,
 * bool).  Data movement: Transpose, Slice, Concat, Split, Expand through one
 * strided-copy kernel; Gather; ConstantOfShape (fill).
 * Anything else (another dtype, a legacy broadcast attribute) returns
 * OCL_HOST before touching the device: the core runs the CPU operator.
 */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "ocl_internal.h"
#include "op_common.h"

/* Element count of a shape, or -1 past INT_MAX (kernels index with int). */
static int64_t numel_int(const mfs_shape *s)
{
	int64_t n = mfs_shape_numel(s);
	return n < 0 || n > INT_MAX ? -1 : n;
}

/* Strides of `in` broadcast (right-aligned) to out's shape. */
static void bcast_strides(const mfs_shape *in, const mfs_shape *out, cl_int *st)
{
	int64_t s = 1;
	int off = out->rank - in->rank;
	for (int k = out->rank - 1; k >= 0; k--) {
		int ki = k - off;
		if (ki < 0) {
			st[k] = 0;
			continue;
		}
		st[k] = in->dims[ki] == 1 && out->dims[k] != 1 ? 0 : (cl_int)s;
		s *= in->dims[ki];
	}
}

/* Drop dims of size 1 and merge each dim into the one before it where
 * every operand's strides allow (s[prev] == s[k] * dims[k]): a same-shape
 * operation becomes one dim, a bias over the last dim two, and the
 * kernels' index arithmetic (a division per dim per element) shrinks
 * with it. */
static void bc_coalesce(ocl_bc *p)
{
	cl_int *s[3] = { p->s0, p->s1, p->s2 };
	int r = 0;

	for (int k = 0; k < p->rank; k++) {
		bool merge = r > 0;
		if (p->dims[k] == 1)
			continue;
		for (int j = 0; j < 3 && merge; j++)
			merge = s[j][r - 1] == s[j][k] * p->dims[k];
		if (merge) {
			p->dims[r - 1] *= p->dims[k];
			for (int j = 0; j < 3; j++)
				s[j][r - 1] = s[j][k];
			continue;
		}
		p->dims[r] = p->dims[k];
		for (int j = 0; j < 3; j++)
			s[j][r] = s[j][k];
		r++;
	}
	p->rank = r;
}

/* Declared in ocl_internal.h (Attention's mask uses it too). */
bool ocl_bc_make(ocl_bc *p, const mfs_shape *out, const mfs_shape *a,
		 const mfs_shape *b, const mfs_shape *c)
{
	int64_t n = numel_int(out);
	memset(p, 0, sizeof(*p));
	if (n < 0 || out->rank > OCL_MAXR)
		return false;
	p->rank = out->rank;
	p->n = (cl_int)n;
	for (int k = 0; k < out->rank; k++)
		p->dims[k] = (cl_int)out->dims[k];
	if (a)
		bcast_strides(a, out, p->s0);
	if (b)
		bcast_strides(b, out, p->s1);
	if (c)
		bcast_strides(c, out, p->s2);
	bc_coalesce(p);
	return true;
}

/* ---- unary ---- */

static int unary_launch(ocl_run *r, int op, float a, float b)
{
	mfs_tensor *x = r->ctx->in[0], *y = r->ctx->out[0];
	int64_t n = numel_int(&y->shape);
	cl_mem mx, my;
	cl_int cn;
	int rc;

	if (x->dtype != MFS_DT_FLOAT || y->dtype != MFS_DT_FLOAT || n < 0)
		return OCL_HOST;
	if (!(mx = ocl_in(r, 0, &rc)) || !(my = ocl_out(r, 0, &rc)))
		return rc;
	cn = (cl_int)n;
	if ((rc = OCL_ARG(r, K_UNARY_F32, 0, mx)) || (rc = OCL_ARG(r, K_UNARY_F32, 1, my)) ||
	    (rc = OCL_ARG(r, K_UNARY_F32, 2, cn)) || (rc = OCL_ARG(r, K_UNARY_F32, 3, op)) ||
	    (rc = OCL_ARG(r, K_UNARY_F32, 4, a)) || (rc = OCL_ARG(r, K_UNARY_F32, 5, b)))
		return rc;
	return ocl_launch(r, K_UNARY_F32, (size_t)n);
}

int ocl_op_relu(ocl_run *r) { return unary_launch(r, OCL_U_RELU, 0, 0); }
int ocl_op_sigmoid(ocl_run *r) { return unary_launch(r, OCL_U_SIGMOID, 0, 0); }
int ocl_op_tanh(ocl_run *r) { return unary_launch(r, OCL_U_TANH, 0, 0); }
int ocl_op_erf(ocl_run *r) { return unary_launch(r, OCL_U_ERF, 0, 0); }
int ocl_op_sqrt(ocl_run *r) { return unary_launch(r, OCL_U_SQRT, 0, 0); }
int ocl_op_neg(ocl_run *r) { return unary_launch(r, OCL_U_NEG, 0, 0); }
int ocl_op_exp(ocl_run *r) { return unary_launch(r, OCL_U_EXP, 0, 0); }
int ocl_op_abs(ocl_run *r) { return unary_launch(r, OCL_U_ABS, 0, 0); }

/* Gelu (opset 20, and com.modelfs Gelu from the GELU rewrite): the erf
 * form or, with approximate "tanh", the tanh one.  Another value: the
 * CPU operator reports it. */
int ocl_op_gelu(ocl_run *r)
{
	const char *a = onnx_attr_string(r->ctx->node, "approximate", "none");

	if (!strcmp(a, "none"))
		return unary_launch(r, OCL_U_GELU, 0, 0);
	if (!strcmp(a, "tanh"))
		return unary_launch(r, OCL_U_GELU_TANH, 0, 0);
	return OCL_HOST;
}

int ocl_op_leaky(ocl_run *r)
{
	return unary_launch(r, OCL_U_LEAKY, onnx_attr_float(r->ctx->node, "alpha", 0.01f), 0);
}

/* Clip before opset 11: the bounds are attributes. */
int ocl_op_clip_1(ocl_run *r)
{
	mfs_op_ctx *ctx = r->ctx;

	if (ctx->in[0]->dtype != MFS_DT_FLOAT)
		return OCL_HOST;
	return unary_launch(r, OCL_U_CLIP, onnx_attr_float(ctx->node, "min", -INFINITY),
			    onnx_attr_float(ctx->node, "max", INFINITY));
}

/* Clip from opset 11: the bounds are optional scalar inputs 1 and 2 (read
 * on the host: tiny). */
int ocl_op_clip_11(ocl_run *r)
{
	mfs_op_ctx *ctx = r->ctx;
	float lo = -INFINITY, hi = INFINITY;
	int rc;

	if (ctx->in[0]->dtype != MFS_DT_FLOAT)
		return OCL_HOST;
	for (int k = 1; k <= 2 && k < ctx->n_in; k++) {
		const float *p;
		if (!ctx->in[k])
			continue;
		if (ctx->in[k]->dtype != MFS_DT_FLOAT ||
		    mfs_shape_numel(&ctx->in[k]->shape) != 1)
			return OCL_HOST;
		if (!(p = ocl_in_host(r, k, &rc)))
			return rc;
		if (k == 1)
			lo = *p;
		else
			hi = *p;
	}
	return unary_launch(r, OCL_U_CLIP, lo, hi);
}

/* ---- binary ---- */

/* Numpy broadcasting, as from opset 7 (the table leaves the legacy
 * `broadcast` attribute of opsets 1 to 6 to the host). */
static int binary_launch(ocl_run *r, int op)
{
	mfs_op_ctx *ctx = r->ctx;
	mfs_tensor *a = ctx->in[0], *b = ctx->in[1], *y = ctx->out[0];
	ocl_kid k;
	ocl_bc p;
	cl_mem ma, mb, my;
	int rc;

	if (!b || a->dtype != b->dtype || a->shape.rank > OCL_MAXR || b->shape.rank > OCL_MAXR)
		return OCL_HOST;
	if (a->dtype == MFS_DT_FLOAT)
		k = K_BINARY_F32;
	else if (a->dtype == MFS_DT_INT64 && op != OCL_B_POW)
		k = K_BINARY_I64;
	else if (a->dtype == MFS_DT_INT32 && op != OCL_B_POW)
		k = K_BINARY_I32;
	else
		return OCL_HOST;
	if (!ocl_bc_make(&p, &y->shape, &a->shape, &b->shape, NULL))
		return OCL_HOST;
	if (!(ma = ocl_in(r, 0, &rc)) || !(mb = ocl_in(r, 1, &rc)) ||
	    !(my = ocl_out(r, 0, &rc)))
		return rc;
	if ((rc = OCL_ARG(r, k, 0, ma)) || (rc = OCL_ARG(r, k, 1, mb)) ||
	    (rc = OCL_ARG(r, k, 2, my)) || (rc = OCL_ARG(r, k, 3, p)) ||
	    (rc = OCL_ARG(r, k, 4, op)))
		return rc;
	return ocl_launch(r, k, (size_t)p.n);
}

int ocl_op_add(ocl_run *r) { return binary_launch(r, OCL_B_ADD); }
int ocl_op_sub(ocl_run *r) { return binary_launch(r, OCL_B_SUB); }
int ocl_op_mul(ocl_run *r) { return binary_launch(r, OCL_B_MUL); }
int ocl_op_div(ocl_run *r) { return binary_launch(r, OCL_B_DIV); }
int ocl_op_pow(ocl_run *r) { return binary_launch(r, OCL_B_POW); }

int ocl_op_equal(ocl_run *r)
{
	mfs_op_ctx *ctx = r->ctx;
	mfs_tensor *a = ctx->in[0], *b = ctx->in[1], *y = ctx->out[0];
	ocl_kid k;
	ocl_bc p;
	cl_mem ma, mb, my;
	int rc;

	if (!b || a->dtype != b->dtype)
		return OCL_HOST;
	switch (a->dtype) {
	case MFS_DT_FLOAT: k = K_EQUAL_F32; break;
	case MFS_DT_INT64: k = K_EQUAL_I64; break;
	case MFS_DT_INT32: k = K_EQUAL_I32; break;
	case MFS_DT_BOOL: case MFS_DT_UINT8: case MFS_DT_INT8: k = K_EQUAL_U8; break;
	default: return OCL_HOST;
	}
	if (!ocl_bc_make(&p, &y->shape, &a->shape, &b->shape, NULL))
		return OCL_HOST;
	if (!(ma = ocl_in(r, 0, &rc)) || !(mb = ocl_in(r, 1, &rc)) ||
	    !(my = ocl_out(r, 0, &rc)))
		return rc;
	if ((rc = OCL_ARG(r, k, 0, ma)) || (rc = OCL_ARG(r, k, 1, mb)) ||
	    (rc = OCL_ARG(r, k, 2, my)) || (rc = OCL_ARG(r, k, 3, p)))
		return rc;
	return ocl_launch(r, k, (size_t)p.n);
}

int ocl_op_where(ocl_run *r)
{
	mfs_op_ctx *ctx = r->ctx;
	mfs_tensor *c = ctx->in[0], *x = ctx->in[1], *z = ctx->in[2], *y = ctx->out[0];
	size_t es = mfs_dtype_size(y->dtype);
	ocl_kid k = es == 1 ? K_WHERE_1 : es == 4 ? K_WHERE_4 : es == 8 ? K_WHERE_8 : K_COUNT;
	ocl_bc p;
	cl_mem mc, mx, mz, my;
	int rc;

	if (k == K_COUNT || c->dtype != MFS_DT_BOOL || x->dtype != y->dtype ||
	    z->dtype != y->dtype)
		return OCL_HOST;
	if (!ocl_bc_make(&p, &y->shape, &c->shape, &x->shape, &z->shape))
		return OCL_HOST;
	if (!(mc = ocl_in(r, 0, &rc)) || !(mx = ocl_in(r, 1, &rc)) ||
	    !(mz = ocl_in(r, 2, &rc)) || !(my = ocl_out(r, 0, &rc)))
		return rc;
	if ((rc = OCL_ARG(r, k, 0, mc)) || (rc = OCL_ARG(r, k, 1, mx)) ||
	    (rc = OCL_ARG(r, k, 2, mz)) || (rc = OCL_ARG(r, k, 3, my)) ||
	    (rc = OCL_ARG(r, k, 4, p)))
		return rc;
	return ocl_launch(r, k, (size_t)p.n);
}

/* Sum: y = in0 + in1 (both broadcast to y), then y += in_k in place. */
int ocl_op_sum(ocl_run *r)
{
	mfs_op_ctx *ctx = r->ctx;
	mfs_tensor *y = ctx->out[0];
	int op = OCL_B_ADD, rc;
	cl_mem my, ma, mb;

	if (y->dtype != MFS_DT_FLOAT || y->shape.rank > OCL_MAXR || numel_int(&y->shape) < 0)
		return OCL_HOST;
	for (int i = 0; i < ctx->n_in; i++)
		if (!ctx->in[i] || ctx->in[i]->dtype != MFS_DT_FLOAT)
			return OCL_HOST;
	if (ctx->n_in == 1) {
		ocl_cp p;
		if (!(ma = ocl_in(r, 0, &rc)) || !(my = ocl_out(r, 0, &rc)))
			return rc;
		memset(&p, 0, sizeof(p));
		bcast_strides(&ctx->in[0]->shape, &y->shape, p.ss);
		{
			int64_t s = 1;
			for (int k = y->shape.rank - 1; k >= 0; k--) {
				p.ds[k] = (cl_int)s;
				p.dims[k] = (cl_int)y->shape.dims[k];
				s *= y->shape.dims[k];
			}
		}
		p.rank = y->shape.rank;
		p.n = (cl_int)mfs_shape_numel(&y->shape);
		if ((rc = OCL_ARG(r, K_COPY_4, 0, ma)) || (rc = OCL_ARG(r, K_COPY_4, 1, my)) ||
		    (rc = OCL_ARG(r, K_COPY_4, 2, p)))
			return rc;
		return ocl_launch(r, K_COPY_4, (size_t)p.n);
	}
	if (!(my = ocl_out(r, 0, &rc)))
		return rc;
	for (int i = 1; i < ctx->n_in; i++) {
		ocl_bc p;
		ocl_bc_make(&p, &y->shape, i == 1 ? &ctx->in[0]->shape : &y->shape,
			&ctx->in[i]->shape, NULL);
		if (i == 1) {
			if (!(ma = ocl_in(r, 0, &rc)))
				return rc;
		} else {
			ma = my;
		}
		if (!(mb = ocl_in(r, i, &rc)))
			return rc;
		if ((rc = OCL_ARG(r, K_BINARY_F32, 0, ma)) ||
		    (rc = OCL_ARG(r, K_BINARY_F32, 1, mb)) ||
		    (rc = OCL_ARG(r, K_BINARY_F32, 2, my)) ||
		    (rc = OCL_ARG(r, K_BINARY_F32, 3, p)) ||
		    (rc = OCL_ARG(r, K_BINARY_F32, 4, op)) ||
		    (rc = ocl_launch(r, K_BINARY_F32, (size_t)p.n)))
			return rc;
	}
	return 0;
}

static bool cast_type_ok(mfs_dtype dt)
{
	return dt == MFS_DT_FLOAT || dt == MFS_DT_UINT8 || dt == MFS_DT_INT8 ||
	       dt == MFS_DT_INT32 || dt == MFS_DT_INT64 || dt == MFS_DT_BOOL;
}

int ocl_op_cast(ocl_run *r)
{
	mfs_tensor *x = r->ctx->in[0], *y = r->ctx->out[0];
	int64_t n = numel_int(&y->shape);
	cl_int cn, st = x->dtype, dt = y->dtype;
	cl_mem mx, my;
	int rc;

	if (!cast_type_ok(x->dtype) || !cast_type_ok(y->dtype) || n < 0)
		return OCL_HOST;
	if (!(mx = ocl_in(r, 0, &rc)) || !(my = ocl_out(r, 0, &rc)))
		return rc;
	cn = (cl_int)n;
	if ((rc = OCL_ARG(r, K_CAST, 0, mx)) || (rc = OCL_ARG(r, K_CAST, 1, my)) ||
	    (rc = OCL_ARG(r, K_CAST, 2, cn)) || (rc = OCL_ARG(r, K_CAST, 3, st)) ||
	    (rc = OCL_ARG(r, K_CAST, 4, dt)))
		return rc;
	return ocl_launch(r, K_CAST, (size_t)n);
}

/* ---- data movement ---- */

static ocl_kid copy_kid(size_t es)
{
	return es == 1 ? K_COPY_1 : es == 4 ? K_COPY_4 : es == 8 ? K_COPY_8 : K_COUNT;
}

static void dense_strides(const mfs_shape *s, int64_t *st)
{
	int64_t a = 1;
	for (int k = s->rank - 1; k >= 0; k--) {
		st[k] = a;
		a *= s->dims[k];
	}
}

/* Enqueue a strided copy; geometry in int64, checked to fit int. */
static int copy_launch(ocl_run *r, size_t es, cl_mem src, cl_mem dst, int rank,
		       const int64_t *dims, const int64_t *ss, int64_t soff,
		       const int64_t *ds, int64_t doff)
{
	ocl_kid k = copy_kid(es);
	ocl_cp p;
	int64_t n = 1;
	int rc;

	memset(&p, 0, sizeof(p));
	p.rank = rank;
	for (int i = 0; i < rank; i++) {
		p.dims[i] = (cl_int)dims[i];
		p.ss[i] = (cl_int)ss[i];
		p.ds[i] = (cl_int)ds[i];
		n *= dims[i];
	}
	p.n = (cl_int)n;
	p.soff = (cl_int)soff;
	p.doff = (cl_int)doff;
	if ((rc = OCL_ARG(r, k, 0, src)) || (rc = OCL_ARG(r, k, 1, dst)) ||
	    (rc = OCL_ARG(r, k, 2, p)))
		return rc;
	return ocl_launch(r, k, (size_t)n);
}

/* Common refusals: element size the copy kernels lack, rank, int range. */
static bool movable(const mfs_tensor *x, const mfs_tensor *y)
{
	return copy_kid(mfs_dtype_size(y->dtype)) != K_COUNT &&
	       x->shape.rank <= OCL_MAXR && y->shape.rank <= OCL_MAXR &&
	       numel_int(&x->shape) >= 0 && numel_int(&y->shape) >= 0;
}

int ocl_op_transpose(ocl_run *r)
{
	mfs_tensor *x = r->ctx->in[0], *y = r->ctx->out[0];
	const int64_t *perm;
	size_t np = onnx_attr_ints(r->ctx->node, "perm", &perm);
	int64_t ist[OCL_MAXR], ss[OCL_MAXR], ds[OCL_MAXR];
	int rank = x->shape.rank, rc;
	cl_mem mx, my;

	if (!movable(x, y))
		return OCL_HOST;
	dense_strides(&x->shape, ist);
	dense_strides(&y->shape, ds);
	int64_t last = -1;
	bool in_order = true;
	for (int k = 0; k < rank; k++) {
		int64_t a = np ? perm[k] : rank - 1 - k;
		if (a < 0)
			a += rank;
		if (a < 0 || a >= rank)
			return OCL_HOST;   /* infer accepted it? let the CPU say */
		ss[k] = ist[a];
		if (y->shape.dims[k] != 1) {
			in_order &= a > last;
			last = a;
		}
	}
	/* only dims of size 1 move (a decoder step's [B,1,H,D] to
	 * [B,H,1,D]): the bytes keep their order, the output is a view */
	if (in_order)
		return ocl_alias(r, 0, 0);
	if (!(mx = ocl_in(r, 0, &rc)) || !(my = ocl_out(r, 0, &rc)))
		return rc;
	return copy_launch(r, mfs_dtype_size(y->dtype), mx, my, rank, y->shape.dims,
			   ss, 0, ds, 0);
}

/* Slice: the plan of exec/cpu/ops/slice.c (ONNX clamping rules). */
static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static int read_list(ocl_run *r, bool attrs, const char *name, int idx,
		     int64_t *v, int *n)
{
	mfs_op_ctx *ctx = r->ctx;
	int rc;
	*n = -1;
	if (attrs) {
		const int64_t *a;
		size_t c = onnx_attr_ints(ctx->node, name, &a);
		if (!onnx_node_attr(ctx->node, name))
			return 0;
		if (c > MFS_MAX_RANK)
			return OCL_HOST;
		for (size_t i = 0; i < c; i++)
			v[i] = a[i];
		*n = (int)c;
		return 0;
	}
	if (idx >= ctx->n_in || !ctx->in[idx])
		return 0;
	if (!ocl_in_host(r, idx, &rc))
		return rc;
	rc = oc_read_ints(ctx, idx, v, MFS_MAX_RANK, n);
	return rc ? (rc > 0 ? OCL_HOST : rc) : 0;
}

/* attrs: starts, ends and axes are attributes (before opset 10); else
 * inputs 1 to 4, steps too. */
static int slice(ocl_run *r, bool attrs)
{
	mfs_op_ctx *ctx = r->ctx;
	mfs_tensor *x = ctx->in[0], *y = ctx->out[0];
	int64_t starts[MFS_MAX_RANK], ends[MFS_MAX_RANK], axes[MFS_MAX_RANK],
		steps[MFS_MAX_RANK], start[MFS_MAX_RANK], step[MFS_MAX_RANK];
	int64_t ist[OCL_MAXR], ss[OCL_MAXR], ds[OCL_MAXR], off = 0;
	int ns, ne, na, nst = -1, rc, rank = x->shape.rank;
	cl_mem mx, my;

	if (!movable(x, y))
		return OCL_HOST;
	if ((rc = read_list(r, attrs, "starts", 1, starts, &ns)) ||
	    (rc = read_list(r, attrs, "ends", 2, ends, &ne)) ||
	    (rc = read_list(r, attrs, "axes", 3, axes, &na)) ||
	    (!attrs && (rc = read_list(r, false, NULL, 4, steps, &nst))))
		return rc;
	if (ns < 0 || ns != ne || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
		return OCL_HOST;
	for (int i = 0; i < rank; i++) {
		start[i] = 0;
		step[i] = 1;
	}
	for (int i = 0; i < ns; i++) {
		int64_t a = na >= 0 ? axes[i] : i;
		if (a < 0)
			a += rank;
		if (a < 0 || a >= rank)
			return OCL_HOST;
		int64_t d = x->shape.dims[a], s = starts[i];
		int64_t st = nst >= 0 ? clamp64(steps[i], -(d + 1), d + 1) : 1;
		if (nst >= 0 && steps[i] == 0)
			return OCL_HOST;
		if (st == 0)
			st = 1;
		if (s < 0)
			s = s < -d ? -d - 1 : s + d;
		s = st > 0 ? clamp64(s, 0, d) : clamp64(s, 0, d - 1);
		start[a] = y->shape.dims[a] ? s : 0;
		step[a] = st;
	}
	dense_strides(&x->shape, ist);
	dense_strides(&y->shape, ds);
	for (int k = 0; k < rank; k++) {
		off += start[k] * ist[k];
		ss[k] = step[k] * ist[k];
	}
	if (!(mx = ocl_in(r, 0, &rc)) || !(my = ocl_out(r, 0, &rc)))
		return rc;
	return copy_launch(r, mfs_dtype_size(y->dtype), mx, my, rank, y->shape.dims,
			   ss, off, ds, 0);
}

int ocl_op_slice_1(ocl_run *r)
{
	return slice(r, true);
}

int ocl_op_slice_10(ocl_run *r)
{
	return slice(r, false);
}

/* Concat's and Split's axis attribute, made non-negative; false when it
 * is out of range (the CPU operator then says so). */
static bool axis_attr(const mfs_op_ctx *ctx, int rank, int64_t *ax)
{
	*ax = onnx_attr_int(ctx->node, "axis", 0);
	if (*ax < 0)
		*ax += rank;
	return *ax >= 0 && *ax < rank;
}

int ocl_op_concat(ocl_run *r)
{
	mfs_op_ctx *ctx = r->ctx;
	mfs_tensor *y = ctx->out[0];
	int64_t ax, ds[OCL_MAXR], at = 0;
	int rank = y->shape.rank, rc;
	cl_mem my;

	if (!axis_attr(ctx, rank, &ax))
		return OCL_HOST;
	for (int i = 0; i < ctx->n_in; i++)
		if (!ctx->in[i] || ctx->in[i]->dtype != y->dtype || !movable(ctx->in[i], y))
			return OCL_HOST;
	dense_strides(&y->shape, ds);
	if (!(my = ocl_out(r, 0, &rc)))
		return rc;
	for (int i = 0; i < ctx->n_in; i++) {
		const mfs_tensor *x = ctx->in[i];
		int64_t ss[OCL_MAXR];
		cl_mem mx;
		if (x->shape.rank != rank)
			continue;   /* legacy empty inputs */
		if (mfs_shape_numel(&x->shape) == 0) {
			at += x->shape.dims[ax];
			continue;
		}
		dense_strides(&x->shape, ss);
		if (!(mx = ocl_in(r, i, &rc)))
			return rc;
		if ((rc = copy_launch(r, mfs_dtype_size(y->dtype), mx, my, rank,
				      x->shape.dims, ss, 0, ds, at * ds[ax])))
			return rc;
		at += x->shape.dims[ax];
	}
	return 0;
}

/* Split: each output is a slice of the input along the axis, at the sum
 * of the earlier outputs' extents (the shapes infer already checked
 * against the sizes), so the sizes themselves are not read here. */
int ocl_op_split(ocl_run *r)
{
	mfs_op_ctx *ctx = r->ctx;
	mfs_tensor *x = ctx->in[0];
	int64_t ax, ss[OCL_MAXR], at = 0;
	int rank = x->shape.rank, rc;
	cl_mem mx;

	if (!axis_attr(ctx, rank, &ax))
		return OCL_HOST;
	for (int i = 0; i < ctx->n_out; i++)
		if (ctx->out[i] && (ctx->out[i]->dtype != x->dtype || !movable(x, ctx->out[i])))
			return OCL_HOST;
	dense_strides(&x->shape, ss);
	if (!(mx = ocl_in(r, 0, &rc)))
		return rc;
	for (int i = 0; i < ctx->n_out; i++) {
		const mfs_tensor *y = ctx->out[i];
		int64_t ds[OCL_MAXR];
		cl_mem my;
		if (!y)
			continue;
		dense_strides(&y->shape, ds);
		if (!(my = ocl_out(r, i, &rc)))
			return rc;
		if (mfs_shape_numel(&y->shape) &&
		    (rc = copy_launch(r, mfs_dtype_size(y->dtype), mx, my, rank,
				      y->shape.dims, ss, at * ss[ax], ds, 0)))
			return rc;
		at += y->shape.dims[ax];
	}
	return 0;
}

int ocl_op_expand(ocl_run *r)
{
	mfs_tensor *x = r->ctx->in[0], *y = r->ctx->out[0];
	int64_t ss[OCL_MAXR], ds[OCL_MAXR];
	cl_int st[OCL_MAXR];
	cl_mem mx, my;
	int rc;

	if (!movable(x, y) || x->shape.rank > y->shape.rank)
		return OCL_HOST;
	bcast_strides(&x->shape, &y->shape, st);
	for (int k = 0; k < y->shape.rank; k++)
		ss[k] = st[k];
	dense_strides(&y->shape, ds);
	if (!(mx = ocl_in(r, 0, &rc)) || !(my = ocl_out(r, 0, &rc)))
		return rc;
	return copy_launch(r, mfs_dtype_size(y->dtype), mx, my, y->shape.rank,
			   y->shape.dims, ss, 0, ds, 0);
}

int ocl_op_gather(ocl_run *r)
{
	mfs_op_ctx *ctx = r->ctx;
	mfs_tensor *x = ctx->in[0], *ix = ctx->in[1], *y = ctx->out[0];
	size_t es = mfs_dtype_size(x->dtype);
	int64_t ax = onnx_attr_int(ctx->node, "axis", 0), outer = 1, inner = 1, len;
	int64_t n = numel_int(&y->shape), nidx = mfs_shape_numel(&ix->shape);
	bool i64 = ix->dtype == MFS_DT_INT64;
	ocl_kid k;
	cl_int a1, a2, a3, a4;
	cl_mem mx, mi, my;
	int rc;

	if (ax < 0)
		ax += x->shape.rank;
	if (ax < 0 || ax >= x->shape.rank || n < 0 || numel_int(&x->shape) < 0 ||
	    (!i64 && ix->dtype != MFS_DT_INT32))
		return OCL_HOST;
	if (es == 1)
		k = i64 ? K_GATHER_1_I64 : K_GATHER_1_I32;
	else if (es == 4)
		k = i64 ? K_GATHER_4_I64 : K_GATHER_4_I32;
	else if (es == 8)
		k = i64 ? K_GATHER_8_I64 : K_GATHER_8_I32;
	else
		return OCL_HOST;
	for (int i = 0; i < ax; i++)
		outer *= x->shape.dims[i];
	for (int i = (int)ax + 1; i < x->shape.rank; i++)
		inner *= x->shape.dims[i];
	len = x->shape.dims[ax];
	/* The indices are checked on the host, so that an index out of range
	 * fails the run with the CPU engine's error instead of reading zeros:
	 * they are few (token ids, positions) and usually come from the host
	 * anyway, so this costs at most one small download. */
	if (!ocl_in_host(r, 1, &rc))
		return rc;
	for (int64_t i = 0; i < nidx; i++) {
		int64_t j = mfs_tensor_get_i64(ix, i);
		if (j < -len || j >= len)
			return mfs_op_fail(ctx, EINVAL, "index %lld is out of range [-%lld, %lld)",
					   (long long)j, (long long)len, (long long)len);
	}
	if (!n)
		return ocl_out(r, 0, &rc) ? 0 : rc;
	if (!(mx = ocl_in(r, 0, &rc)) || !(mi = ocl_in(r, 1, &rc)) ||
	    !(my = ocl_out(r, 0, &rc)))
		return rc;
	a1 = (cl_int)n;
	a2 = (cl_int)len;
	a3 = (cl_int)nidx;
	a4 = (cl_int)(inner ? inner : 1);
	(void)outer;
	if ((rc = OCL_ARG(r, k, 0, mx)) || (rc = OCL_ARG(r, k, 1, mi)) ||
	    (rc = OCL_ARG(r, k, 2, my)) || (rc = OCL_ARG(r, k, 3, a1)) ||
	    (rc = OCL_ARG(r, k, 4, a2)) || (rc = OCL_ARG(r, k, 5, a3)) ||
	    (rc = OCL_ARG(r, k, 6, a4)))
		return rc;
	return ocl_launch(r, k, (size_t)n);
}

int ocl_op_constant_of_shape(ocl_run *r)
{
	mfs_tensor *y = r->ctx->out[0];
	const onnx_attr *va = onnx_node_attr(r->ctx->node, "value");
	size_t es = mfs_dtype_size(y->dtype);
	int64_t n = numel_int(&y->shape);
	uint64_t bits = 0;
	ocl_kid k = es == 1 ? K_FILL_1 : es == 4 ? K_FILL_4 : es == 8 ? K_FILL_8 : K_COUNT;
	cl_int cn;
	cl_mem my;
	int rc;

	if (k == K_COUNT || n < 0)
		return OCL_HOST;
	if (va) {
		if (va->type != ONNX_ATTR_TENSOR || va->t.dtype != y->dtype ||
		    va->t.nbytes < es || !va->t.data)
			return OCL_HOST;
		memcpy(&bits, va->t.data, es);
	}
	if (!(my = ocl_out(r, 0, &rc)))
		return rc;
	cn = (cl_int)n;
	if ((rc = OCL_ARG(r, k, 0, my)) || (rc = OCL_ARG(r, k, 1, cn)))
		return rc;
	if (es == 1) {
		cl_uchar v = (cl_uchar)bits;
		rc = OCL_ARG(r, k, 2, v);
	} else if (es == 4) {
		cl_uint v = (cl_uint)bits;
		rc = OCL_ARG(r, k, 2, v);
	} else {
		cl_ulong v = bits;
		rc = OCL_ARG(r, k, 2, v);
	}
	return rc ? rc : ocl_launch(r, k, (size_t)n);
}

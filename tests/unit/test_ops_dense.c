/* Unit tests for the compute-heavy operators (exec/cpu/ops/{matmul,gemm,conv,
 * ...}.c): each operator is called through the registry with a hand-built
 * node, no engine, and compared with a naive loop written here. */
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <omp.h>

#include "ops/dense_util.h"
#include "op.h"

/* OpenBLAS' thread count (from its cblas.h, whose complex.h would take the
 * name I from the tests below) */
void openblas_set_num_threads(int n);
int openblas_get_num_threads(void);

/* ---- a hand-built node --------------------------------------------------- */

#define MAX_ATTRS 16

typedef struct tnode {
	onnx_node node;
	onnx_attr attrs[MAX_ATTRS];
	int64_t ints[MAX_ATTRS][16];
	char *out_name;
} tnode;

static void tn_init(tnode *t, const char *op)
{
	memset(t, 0, sizeof(*t));
	t->node.op_type = (char *)op;
	t->node.name = (char *)"n0";
	t->node.domain = (char *)"";
	t->node.attrs = t->attrs;
	t->out_name = (char *)"y";
	t->node.outputs = &t->out_name;
	t->node.n_outputs = 1;
}

static onnx_attr *tn_attr(tnode *t, const char *name, onnx_attr_type type)
{
	assert_true(t->node.n_attrs < MAX_ATTRS);
	onnx_attr *a = &t->attrs[t->node.n_attrs++];
	a->name = (char *)name;
	a->type = type;
	return a;
}

static void tn_int(tnode *t, const char *name, int64_t v)
{
	tn_attr(t, name, ONNX_ATTR_INT)->i = v;
}

static void tn_float(tnode *t, const char *name, float v)
{
	tn_attr(t, name, ONNX_ATTR_FLOAT)->f = v;
}

static void tn_str(tnode *t, const char *name, const char *v)
{
	onnx_attr *a = tn_attr(t, name, ONNX_ATTR_STRING);
	a->s = (char *)v;
	a->s_len = strlen(v);
}

static void tn_ints(tnode *t, const char *name, int n, ...)
{
	int idx = t->node.n_attrs;
	onnx_attr *a = tn_attr(t, name, ONNX_ATTR_INTS);
	va_list ap;
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		t->ints[idx][i] = va_arg(ap, int64_t);
	va_end(ap);
	a->ints = t->ints[idx];
	a->n_ints = (size_t)n;
}

/* ---- tensors ------------------------------------------------------------ */

static uint64_t rng_state = 88172645463325252ull;

static float frand(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (float)((rng_state >> 11) % 2001) / 1000.0f - 1.0f;
}

static mfs_shape shp(int rank, ...)
{
	mfs_shape s = { .rank = rank };
	va_list ap;
	va_start(ap, rank);
	for (int i = 0; i < rank; i++)
		s.dims[i] = va_arg(ap, int64_t);
	va_end(ap);
	return s;
}

static void t_alloc(mfs_tensor *t, mfs_dtype dt, mfs_shape s)
{
	mfs_error err = { 0 };
	memset(t, 0, sizeof(*t));
	assert_int_equal(mfs_tensor_alloc(t, dt, &s, &err), 0);
}

static void t_rand(mfs_tensor *t, mfs_shape s)
{
	t_alloc(t, MFS_DT_FLOAT, s);
	float *d = t->data;
	for (int64_t i = 0; i < mfs_shape_numel(&s); i++)
		d[i] = frand();
}

/* ---- calling an operator ------------------------------------------------ */

typedef struct call {
	const mfs_op_def *def;
	mfs_op_ctx ctx;
	mfs_tensor *in[8];
	mfs_tensor *out[4];
	void *state;
	mfs_error err;
} call;

static void call_setup(call *c, tnode *t, int64_t opset, mfs_tensor **in, int n_in,
		       mfs_tensor **out, int n_out)
{
	memset(c, 0, sizeof(*c));
	c->def = mfs_op_find("", t->node.op_type, opset);
	assert_non_null(c->def);
	for (int i = 0; i < n_in; i++)
		c->in[i] = in[i];
	for (int i = 0; i < n_out; i++)
		c->out[i] = out[i];
	c->ctx = (mfs_op_ctx){ .def = c->def, .node = &t->node, .opset = opset,
			       .n_in = n_in, .in = c->in, .n_out = n_out, .out = c->out,
			       .state = &c->state, .err = &c->err };
}

/* infer, allocate outputs (keeping their preset layout), prepare, run. */
static int call_run(call *c)
{
	int rc = c->def->infer(&c->ctx);
	if (rc < 0)
		return rc;
	for (int i = 0; i < c->ctx.n_out; i++) {
		mfs_tensor *o = c->out[i];
		if (!o)
			continue;
		mfs_layout l = o->layout;
		mfs_shape s = o->shape;
		mfs_dtype dt = o->dtype;
		mfs_tensor_release(o);
		t_alloc(o, dt, s);
		o->layout = l;
	}
	if (c->def->prepare && (rc = c->def->prepare(&c->ctx)) < 0)
		return rc;
	return c->def->run(&c->ctx);
}

static void call_done(call *c)
{
	if (c->def->release && c->state)
		c->def->release(c->state);
	c->state = NULL;
}

static void assert_close(const float *a, const float *b, int64_t n, float tol)
{
	for (int64_t i = 0; i < n; i++) {
		float d = fabsf(a[i] - b[i]);
		if (d > tol * (1.0f + fabsf(b[i]))) {
			print_error("element %lld: got %g, expected %g\n", (long long)i,
				    (double)a[i], (double)b[i]);
			fail();
		}
	}
}

/* ---- MatMul ------------------------------------------------------------- */

static void ref_matmul(const float *a, const float *b, float *y, int64_t m, int64_t k, int64_t n)
{
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++) {
			double s = 0;
			for (int64_t p = 0; p < k; p++)
				s += (double)a[i * k + p] * b[p * n + j];
			y[i * n + j] = (float)s;
		}
}

static void test_matmul_2d_and_batched(void **st)
{
	(void)st;
	tnode t;
	mfs_tensor a, b, y = { 0 };
	call c;

	tn_init(&t, "MatMul");
	/* [2,3,4,5] x [5,6] -> one sgemm over the whole batch */
	t_rand(&a, shp(4, 2L, 3L, 4L, 5L));
	t_rand(&b, shp(2, 5L, 6L));
	mfs_tensor *in[] = { &a, &b }, *out[] = { &y };
	call_setup(&c, &t, 13, in, 2, out, 1);
	assert_int_equal(call_run(&c), 0);
	assert_int_equal(y.shape.rank, 4);
	assert_int_equal(y.shape.dims[3], 6);
	float ref[24 * 6];
	ref_matmul(a.data, b.data, ref, 24, 5, 6);
	assert_close(y.data, ref, 24 * 6, 1e-5f);
	call_done(&c);
	mfs_tensor_release(&a);
	mfs_tensor_release(&b);

	/* broadcasting batch: [2,1,3,4] x [3,4,2] -> [2,3,3,2] */
	t_rand(&a, shp(4, 2L, 1L, 3L, 4L));
	t_rand(&b, shp(3, 3L, 4L, 2L));
	call_setup(&c, &t, 13, in, 2, out, 1);
	assert_int_equal(call_run(&c), 0);
	assert_int_equal(y.shape.rank, 4);
	assert_int_equal(y.shape.dims[0], 2);
	assert_int_equal(y.shape.dims[1], 3);
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++) {
			float r[6];
			ref_matmul((float *)a.data + i * 12, (float *)b.data + j * 8, r, 3, 4, 2);
			assert_close((float *)y.data + (i * 3 + j) * 6, r, 6, 1e-5f);
		}
	call_done(&c);
	mfs_tensor_release(&a);
	mfs_tensor_release(&b);

	/* attention's per-head products, [2,3,5,7] x [2,3,7,4]: the items
	 * split over a team (matmul.c mm_items_apart), and on one thread */
	for (int threads = 1; threads <= 2; threads++) {
		int was = omp_get_max_threads();
		omp_set_num_threads(threads);
		t_rand(&a, shp(4, 2L, 3L, 5L, 7L));
		t_rand(&b, shp(4, 2L, 3L, 7L, 4L));
		call_setup(&c, &t, 13, in, 2, out, 1);
		assert_int_equal(call_run(&c), 0);
		assert_int_equal(y.shape.dims[2], 5);
		assert_int_equal(y.shape.dims[3], 4);
		for (int i = 0; i < 6; i++) {
			float r[20];
			ref_matmul((float *)a.data + i * 35, (float *)b.data + i * 28, r, 5, 7, 4);
			assert_close((float *)y.data + i * 20, r, 20, 1e-5f);
		}
		call_done(&c);
		mfs_tensor_release(&a);
		mfs_tensor_release(&b);
		omp_set_num_threads(was);
	}
	mfs_tensor_release(&y);
}

static void test_matmul_vectors(void **st)
{
	(void)st;
	tnode t;
	mfs_tensor a, b, y = { 0 };
	call c;
	mfs_tensor *in[] = { &a, &b }, *out[] = { &y };

	tn_init(&t, "MatMul");
	/* [4] x [4] -> scalar */
	t_rand(&a, shp(1, 4L));
	t_rand(&b, shp(1, 4L));
	call_setup(&c, &t, 13, in, 2, out, 1);
	assert_int_equal(call_run(&c), 0);
	assert_int_equal(y.shape.rank, 0);
	float r;
	ref_matmul(a.data, b.data, &r, 1, 4, 1);
	assert_close(y.data, &r, 1, 1e-5f);
	call_done(&c);
	mfs_tensor_release(&b);

	/* [4] x [2,4,3] -> [2,3] */
	t_rand(&b, shp(3, 2L, 4L, 3L));
	call_setup(&c, &t, 13, in, 2, out, 1);
	assert_int_equal(call_run(&c), 0);
	assert_int_equal(y.shape.rank, 2);
	assert_int_equal(y.shape.dims[0], 2);
	assert_int_equal(y.shape.dims[1], 3);
	float r2[6];
	ref_matmul(a.data, b.data, r2, 1, 4, 3);
	ref_matmul(a.data, (float *)b.data + 12, r2 + 3, 1, 4, 3);
	assert_close(y.data, r2, 6, 1e-5f);
	call_done(&c);
	mfs_tensor_release(&a);
	mfs_tensor_release(&b);

	/* [3,4] x [5]: mismatch is an error, not a crash */
	t_rand(&a, shp(2, 3L, 4L));
	t_rand(&b, shp(1, 5L));
	call_setup(&c, &t, 13, in, 2, out, 1);
	assert_int_equal(call_run(&c), -EINVAL);
	assert_non_null(strstr(c.err.msg, "MatMul 'n0'"));
	call_done(&c);
	mfs_tensor_release(&a);
	mfs_tensor_release(&b);
	mfs_tensor_release(&y);
}

static void test_matmul_int64(void **st)
{
	(void)st;
	tnode t;
	mfs_tensor a, b, y = { 0 };
	call c;
	mfs_tensor *in[] = { &a, &b }, *out[] = { &y };

	tn_init(&t, "MatMul");
	t_alloc(&a, MFS_DT_INT64, shp(2, 2L, 3L));
	t_alloc(&b, MFS_DT_INT64, shp(2, 3L, 2L));
	int64_t *ad = a.data, *bd = b.data;
	for (int i = 0; i < 6; i++) {
		ad[i] = i + 1;
		bd[i] = 10 * (i - 2);
	}
	call_setup(&c, &t, 13, in, 2, out, 1);
	assert_int_equal(call_run(&c), 0);
	int64_t *yd = y.data;
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++) {
			int64_t s = 0;
			for (int p = 0; p < 3; p++)
				s += ad[i * 3 + p] * bd[p * 2 + j];
			assert_int_equal(yd[i * 2 + j], s);
		}
	call_done(&c);
	mfs_tensor_release(&a);
	mfs_tensor_release(&b);
	mfs_tensor_release(&y);
}

/* ---- Gemm --------------------------------------------------------------- */

static void gemm_case(int ta, int tb, float alpha, float beta, mfs_shape cshape)
{
	const int64_t M = 5, K = 7, N = 3;
	tnode t;
	mfs_tensor a, b, cc, y = { 0 };
	call c;

	tn_init(&t, "Gemm");
	tn_int(&t, "transA", ta);
	tn_int(&t, "transB", tb);
	tn_float(&t, "alpha", alpha);
	tn_float(&t, "beta", beta);
	t_rand(&a, ta ? shp(2, K, M) : shp(2, M, K));
	t_rand(&b, tb ? shp(2, N, K) : shp(2, K, N));
	bool has_c = cshape.rank >= 0;
	if (has_c)
		t_rand(&cc, cshape);
	mfs_tensor *in[] = { &a, &b, has_c ? &cc : NULL }, *out[] = { &y };
	call_setup(&c, &t, 13, in, 3, out, 1);
	assert_int_equal(call_run(&c), 0);
	assert_int_equal(y.shape.dims[0], M);
	assert_int_equal(y.shape.dims[1], N);
	const float *A = a.data, *B = b.data, *C = has_c ? cc.data : NULL;
	float ref[M * N];
	for (int64_t i = 0; i < M; i++)
		for (int64_t j = 0; j < N; j++) {
			double s = 0;
			for (int64_t p = 0; p < K; p++)
				s += (double)(ta ? A[p * M + i] : A[i * K + p]) *
				     (tb ? B[j * K + p] : B[p * N + j]);
			s *= alpha;
			if (C) {
				int64_t ci = 0;
				if (cshape.rank == 2)
					ci = (cshape.dims[0] == 1 ? 0 : i) * cshape.dims[1] +
					     (cshape.dims[1] == 1 ? 0 : j);
				else if (cshape.rank == 1)
					ci = cshape.dims[0] == 1 ? 0 : j;
				s += beta * C[ci];
			}
			ref[i * N + j] = (float)s;
		}
	assert_close(y.data, ref, M * N, 1e-5f);
	call_done(&c);
	mfs_tensor_release(&a);
	mfs_tensor_release(&b);
	if (has_c)
		mfs_tensor_release(&cc);
	mfs_tensor_release(&y);
}

static void test_gemm(void **st)
{
	(void)st;
	mfs_shape none = { .rank = -1 };
	/* both FP32 libraries behind mfs_sgemm, and the per-shape choice */
	static const char *const libs[] = { "onednn", "openblas", "measured" };
	for (int lib = 0; lib < 3; lib++) {
		if (lib < 2)
			setenv("MFS_GEMM", libs[lib], 1);
		else
			unsetenv("MFS_GEMM");
		gemm_case(0, 0, 1.0f, 1.0f, none);
		gemm_case(1, 0, 0.5f, 2.0f, shp(2, 5L, 3L));
		gemm_case(0, 1, 1.0f, 1.0f, shp(1, 3L));
		gemm_case(1, 1, 2.0f, -1.0f, shp(2, 5L, 1L));
		gemm_case(0, 0, 1.0f, 0.5f, shp(0));
		gemm_case(1, 1, 1.0f, 1.0f, shp(2, 1L, 3L));
		assert_string_equal(mfs_sgemm_library(), libs[lib]);
	}
	unsetenv("MFS_GEMM");
}

/* A product large enough to be measured (both libraries run on a scratch
 * C): the result, with beta != 0, is right the first time (measured) and
 * the second (remembered). */
static void test_sgemm_measured(void **st)
{
	(void)st;
	enum { M = 40, N = 56, K = 48 };
	static float a[K * M], b[N * K], c[M * N], want[M * N];
	unsetenv("MFS_GEMM");
	for (int i = 0; i < K * M; i++)
		a[i] = (float)((i * 7) % 13) / 6.0f - 1.0f;
	for (int i = 0; i < N * K; i++)
		b[i] = (float)((i * 5) % 11) / 5.0f - 1.0f;
	for (int i = 0; i < M; i++)   /* A given as [K, M] (ta), B as [N, K] (tb) */
		for (int j = 0; j < N; j++) {
			double acc = 0;
			for (int p = 0; p < K; p++)
				acc += (double)a[p * M + i] * b[j * K + p];
			want[i * N + j] = (float)(2.0 * acc + 0.5 * (double)(i - j));
		}
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < M; i++)
			for (int j = 0; j < N; j++)
				c[i * N + j] = (float)(i - j);
		mfs_sgemm(true, true, M, N, K, 2.0f, a, M, b, K, 0.5f, c, N);
		for (int i = 0; i < M * N; i++)
			assert_true(fabsf(c[i] - want[i]) <= 1e-4f * (1 + fabsf(want[i])));
	}
}

/* OpenBLAS kept at one thread (as the engine keeps it), its products split
 * over four OpenMP threads by rows or by columns of C: every transpose,
 * leading dimensions wider than the extents, ragged last blocks; float
 * through mfs_sgemm, double through mfs_blas_dgemm. */
static void test_sgemm_split(void **st)
{
	(void)st;
	static const int64_t shapes[][3] = { { 203, 37, 300 }, { 29, 301, 250 }, { 64, 64, 160 } };
	int64_t chunk;
	bool by_rows;

	assert_int_equal(mfs_sgemm_split(8, 8, 8, 4, &chunk, &by_rows), 1);
	assert_int_equal(mfs_sgemm_split(1000, 10, 1000, 4, &chunk, &by_rows), 4);
	assert_true(by_rows && chunk % 16 == 0 && chunk * 3 < 1000 && chunk * 4 >= 1000);
	assert_int_equal(mfs_sgemm_split(10, 1000, 1000, 64, &chunk, &by_rows), 16);
	assert_true(!by_rows && chunk == 64);

	int omp_was = omp_get_max_threads(), blas_was = openblas_get_num_threads();
	setenv("MFS_GEMM", "openblas", 1);
	openblas_set_num_threads(1);
	omp_set_num_threads(4);
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], pad = 3;
		assert_true(mfs_sgemm_split(M, N, K, 4, &chunk, &by_rows) > 1);
		for (int t = 0; t < 4; t++) {
			bool ta = t & 1, tb = t & 2;
			int64_t lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
			float *a = malloc(sizeof(float) * (size_t)((ta ? K : M) * lda));
			float *b = malloc(sizeof(float) * (size_t)((tb ? N : K) * ldb));
			float *c = malloc(sizeof(float) * (size_t)(M * ldc));
			assert_non_null(a); assert_non_null(b); assert_non_null(c);
			for (int64_t i = 0; i < (ta ? K : M) * lda; i++)
				a[i] = (float)((i * 7) % 13) / 6.0f - 1.0f;
			for (int64_t i = 0; i < (tb ? N : K) * ldb; i++)
				b[i] = (float)((i * 5) % 11) / 5.0f - 1.0f;
			for (int64_t i = 0; i < M * ldc; i++)
				c[i] = (float)(i % 5);
			mfs_sgemm(ta, tb, M, N, K, 1.5f, a, lda, b, ldb, 0.5f, c, ldc);
			for (int64_t i = 0; i < M; i++)
				for (int64_t j = 0; j < ldc; j++) {
					float old = (float)((i * ldc + j) % 5), want = old;
					if (j < N) {
						double acc = 0;
						for (int64_t p = 0; p < K; p++)
							acc += (double)(ta ? a[p * lda + i] : a[i * lda + p]) *
							       (tb ? b[j * ldb + p] : b[p * ldb + j]);
						want = (float)(1.5 * acc + 0.5 * old);
					}
					assert_true(fabsf(c[i * ldc + j] - want) <= 1e-3f * (1 + fabsf(want)));
				}
			free(a); free(b); free(c);
		}
	}
	unsetenv("MFS_GEMM");
	/* the double product takes the same split: C = A B^T + 2 C */
	{
		enum { M = 90, N = 70, K = 120 };
		static double a[M * K], b[N * K], c[M * N];
		for (int i = 0; i < M * K; i++)
			a[i] = (double)((i * 7) % 13) / 6.0 - 1.0;
		for (int i = 0; i < N * K; i++)
			b[i] = (double)((i * 5) % 11) / 5.0 - 1.0;
		for (int i = 0; i < M * N; i++)
			c[i] = (double)(i % 3);
		assert_true(mfs_sgemm_split(M, N, K, 4, &chunk, &by_rows) > 1);
		mfs_blas_dgemm(false, true, M, N, K, 1.0, a, K, b, K, 2.0, c, N);
		for (int i = 0; i < M; i++)
			for (int j = 0; j < N; j++) {
				double want = 2.0 * (double)((i * N + j) % 3);
				for (int p = 0; p < K; p++)
					want += a[i * K + p] * b[j * K + p];
				assert_true(fabs(c[i * N + j] - want) <= 1e-9 * (1 + fabs(want)));
			}
	}
	omp_set_num_threads(omp_was);
	openblas_set_num_threads(blas_was);
}

/* A one-row C (a classifier's Gemm at batch 1) goes through OpenBLAS'
 * gemv, split by columns over the team or whole: every transpose, leading
 * dimensions wider than the extents, float and double, and a zero beta
 * over a C of NaNs (OpenBLAS' gemv must set C, not scale it). */
static void test_blas_one_row(void **st)
{
	(void)st;
	static const int64_t shapes[][2] = { { 2000, 600 }, { 37, 40 } };   /* N, K */
	int omp_was = omp_get_max_threads(), blas_was = openblas_get_num_threads();
	openblas_set_num_threads(1);
	omp_set_num_threads(4);
	for (size_t s = 0; s < 2; s++)
		for (int t = 0; t < 8; t++) {
			int64_t N = shapes[s][0], K = shapes[s][1], pad = 3;
			bool ta = t & 1, tb = t & 2, beta0 = t & 4;
			int64_t lda = (ta ? 1 : K) + pad, ldb = (tb ? K : N) + pad;
			size_t na = (size_t)((ta ? K : 1) * lda), nb = (size_t)((tb ? N : K) * ldb);
			float *a = malloc(sizeof(float) * na), *b = malloc(sizeof(float) * nb);
			float *c = malloc(sizeof(float) * (size_t)N);
			double *ad = malloc(sizeof(double) * na), *bd = malloc(sizeof(double) * nb);
			double *cd = malloc(sizeof(double) * (size_t)N);
			assert_true(a && b && c && ad && bd && cd);
			for (size_t i = 0; i < na; i++)
				ad[i] = a[i] = (float)((i * 7) % 13) / 6.0f - 1.0f;
			for (size_t i = 0; i < nb; i++)
				bd[i] = b[i] = (float)((i * 5) % 11) / 5.0f - 1.0f;
			for (int64_t j = 0; j < N; j++)
				cd[j] = c[j] = beta0 ? NAN : (float)(j % 5);
			float beta = beta0 ? 0.0f : 0.5f;
			mfs_blas_sgemm(ta, tb, 1, N, K, 1.5f, a, lda, b, ldb, beta, c, N);
			mfs_blas_dgemm(ta, tb, 1, N, K, 1.5, ad, lda, bd, ldb, beta, cd, N);
			for (int64_t j = 0; j < N; j++) {
				double acc = 0;
				for (int64_t p = 0; p < K; p++)
					acc += (double)(ta ? a[p * lda] : a[p]) *
					       (tb ? b[j * ldb + p] : b[p * ldb + j]);
				double want = 1.5 * acc + (beta0 ? 0.0 : 0.5 * (double)(j % 5));
				assert_true(fabsf(c[j] - (float)want) <= 1e-3f * (1 + fabsf((float)want)));
				assert_true(fabs(cd[j] - want) <= 1e-9 * (1 + fabs(want)));
			}
			free(a); free(b); free(c); free(ad); free(bd); free(cd);
		}
	omp_set_num_threads(omp_was);
	openblas_set_num_threads(blas_was);
}

static void test_matmul_openblas(void **st)
{
	setenv("MFS_GEMM", "openblas", 1);
	test_matmul_2d_and_batched(st);
	test_matmul_vectors(st);
	unsetenv("MFS_GEMM");
}

static void test_gemm_bad(void **st)
{
	(void)st;
	tnode t;
	mfs_tensor a, b, cc, y = { 0 };
	call c;

	tn_init(&t, "Gemm");
	t_rand(&a, shp(2, 4L, 3L));
	t_rand(&b, shp(2, 4L, 2L));
	mfs_tensor *in[] = { &a, &b }, *out[] = { &y };
	call_setup(&c, &t, 13, in, 2, out, 1);
	assert_int_equal(call_run(&c), -EINVAL);
	assert_non_null(strstr(c.err.msg, "inner dimensions"));
	call_done(&c);
	mfs_tensor_release(&b);
	/* C that does not broadcast */
	t_rand(&b, shp(2, 3L, 2L));
	t_rand(&cc, shp(1, 4L));
	mfs_tensor *in3[] = { &a, &b, &cc };
	call_setup(&c, &t, 13, in3, 3, out, 1);
	assert_int_equal(call_run(&c), -EINVAL);
	assert_non_null(strstr(c.err.msg, "broadcast"));
	call_done(&c);
	mfs_tensor_release(&a);
	mfs_tensor_release(&b);
	mfs_tensor_release(&cc);
	mfs_tensor_release(&y);
}

/* ---- Attention (com.modelfs) -------------------------------------------- */

/* Attention in layout 1 on q, k, v: the code its infer returns. */
static int attention_infer(tnode *t, mfs_tensor *q, mfs_tensor *k, mfs_tensor *v, call *c)
{
	mfs_tensor y = { 0 };
	const mfs_op_def *def = mfs_op_find("com.modelfs", "Attention", 1);
	assert_non_null(def);
	memset(c, 0, sizeof(*c));
	c->def = def;
	c->in[0] = q;
	c->in[1] = k;
	c->in[2] = v;
	c->out[0] = &y;
	c->ctx = (mfs_op_ctx){ .def = def, .node = &t->node, .opset = 1, .n_in = 3, .in = c->in,
			       .n_out = 1, .out = c->out, .state = &c->state, .err = &c->err };
	int rc = def->infer(&c->ctx);
	if (!rc) {   /* [B, S, H, Dv] */
		assert_int_equal(y.shape.rank, 4);
		assert_int_equal(y.shape.dims[0], q->shape.dims[0]);
		assert_int_equal(y.shape.dims[1], q->shape.dims[1]);
		assert_int_equal(y.shape.dims[3], v->shape.dims[v->shape.rank - 1]);
	}
	return rc;
}

/* Layout 1 operands that do not fit: clear errors naming the operand. */
static void test_attention_layout_bad(void **st)
{
	(void)st;
	tnode t;
	call c;
	mfs_tensor q, k, v, p;

	t_rand(&q, shp(4, 2L, 5L, 3L, 8L));
	t_rand(&k, shp(4, 2L, 7L, 3L, 8L));
	t_rand(&v, shp(4, 2L, 7L, 3L, 4L));
	t_rand(&p, shp(5, 2L, 7L, 3L, 3L, 8L));
	static const struct {
		int64_t layout, q_part, q_parts;   /* -1: not set */
		bool packed;                       /* p for Q, K and V (parts 0, 1, 2) */
		int code;
		const char *needle;
	} cases[] = {
		{ 1, -1, -1, false, 0, NULL },
		{ 1, 0, 3, true, 0, NULL },
		{ 2, -1, -1, false, -ENOTSUP, "layout 2 is unsupported" },
		{ 1, 0, -1, false, -EINVAL, "Q: part 0 of an input that is not packed" },
		{ 1, -1, -1, true, -EINVAL, "Q: part -1 of a packed input" },
		{ 1, 3, -1, true, -EINVAL, "Q: part 3 of a packed input with fewer parts" },
		{ 1, 0, 4, true, -EINVAL, "Q: 3 parts packed where the graph split 4" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		tn_init(&t, "Attention");
		t.node.domain = (char *)"com.modelfs";
		tn_int(&t, "layout", cases[i].layout);
		if (cases[i].q_part >= 0)
			tn_int(&t, "q_part", cases[i].q_part);
		if (cases[i].q_parts >= 0)
			tn_int(&t, "q_parts", cases[i].q_parts);
		if (cases[i].packed) {
			tn_int(&t, "k_part", 1);
			tn_int(&t, "v_part", 2);
		}
		int rc = cases[i].packed ? attention_infer(&t, &p, &p, &p, &c)
					 : attention_infer(&t, &q, &k, &v, &c);
		if (rc != cases[i].code)
			fail_msg("case %zu: %d, want %d (%s)", i, rc, cases[i].code, c.err.msg);
		if (cases[i].needle && !strstr(c.err.msg, cases[i].needle))
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, c.err.msg, cases[i].needle);
	}
	/* K with other heads than Q */
	mfs_tensor k2;
	t_rand(&k2, shp(4, 2L, 7L, 2L, 8L));
	tn_init(&t, "Attention");
	t.node.domain = (char *)"com.modelfs";
	tn_int(&t, "layout", 1);
	assert_int_equal(attention_infer(&t, &q, &k2, &v, &c), -EINVAL);
	assert_non_null(strstr(c.err.msg, "do not fit"));
	mfs_tensor_release(&k2);
	mfs_tensor_release(&q);
	mfs_tensor_release(&k);
	mfs_tensor_release(&v);
	mfs_tensor_release(&p);
}

/* ---- Conv --------------------------------------------------------------- */

typedef struct conv_case {
	int nsp;
	int64_t n, c, m, group;
	int64_t in[3], k[3], stride[3], dil[3], pb[3], pe[3];
	const char *auto_pad;     /* NULL: explicit pads */
	bool bias;
} conv_case;

/* Naive N-D convolution (spatial dims widened to 3). */
static void ref_conv(const conv_case *cc, const int64_t out[3], const float *x,
		     const float *w, const float *b, float *y)
{
	int off = 3 - cc->nsp;
	int64_t in[3], k[3], s[3], d[3], p[3], o[3];
	for (int i = 0; i < 3; i++) {
		int j = i - off;
		in[i] = j >= 0 ? cc->in[j] : 1;
		k[i] = j >= 0 ? cc->k[j] : 1;
		s[i] = j >= 0 ? cc->stride[j] : 1;
		d[i] = j >= 0 ? cc->dil[j] : 1;
		p[i] = j >= 0 ? cc->pb[j] : 0;
		o[i] = j >= 0 ? out[j] : 1;
	}
	int64_t cg = cc->c / cc->group, mg = cc->m / cc->group;
	for (int64_t n = 0; n < cc->n; n++)
	for (int64_t m = 0; m < cc->m; m++)
	for (int64_t z = 0; z < o[0]; z++)
	for (int64_t yy = 0; yy < o[1]; yy++)
	for (int64_t xx = 0; xx < o[2]; xx++) {
		double acc = b ? b[m] : 0;
		int64_t g = m / mg;
		for (int64_t ci = 0; ci < cg; ci++)
		for (int64_t kz = 0; kz < k[0]; kz++)
		for (int64_t ky = 0; ky < k[1]; ky++)
		for (int64_t kx = 0; kx < k[2]; kx++) {
			int64_t iz = z * s[0] - p[0] + kz * d[0];
			int64_t iy = yy * s[1] - p[1] + ky * d[1];
			int64_t ix = xx * s[2] - p[2] + kx * d[2];
			if (iz < 0 || iz >= in[0] || iy < 0 || iy >= in[1] || ix < 0 || ix >= in[2])
				continue;
			acc += (double)x[(((n * cc->c + g * cg + ci) * in[0] + iz) * in[1] + iy) * in[2] + ix] *
			       w[(((m * cg + ci) * k[0] + kz) * k[1] + ky) * k[2] + kx];
		}
		y[(((n * cc->m + m) * o[0] + z) * o[1] + yy) * o[2] + xx] = (float)acc;
	}
}

static void to_nhwc(const float *src, float *dst, int64_t n, int64_t c, int64_t s)
{
	for (int64_t b = 0; b < n; b++)
		for (int64_t ch = 0; ch < c; ch++)
			for (int64_t p = 0; p < s; p++)
				dst[(b * s + p) * c + ch] = src[(b * c + ch) * s + p];
}

/* Plain [n, c, s] floats to the 16-channel blocked layout (tensor.h:
 * N, C/16, S, 16), written here independently of exec/graph/layout.c. */
static void to_block16(const float *src, float *dst, int64_t n, int64_t c, int64_t s)
{
	for (int64_t b = 0; b < n; b++)
		for (int64_t ch = 0; ch < c; ch++)
			for (int64_t p = 0; p < s; p++)
				dst[((b * (c / 16) + ch / 16) * s + p) * 16 + ch % 16] =
					src[(b * c + ch) * s + p];
}

/* Store plain [n, c, s] data in layout l, in place. */
static void store_as(float *data, mfs_layout l, int64_t n, int64_t c, int64_t s)
{
	float *tmp = malloc(sizeof(float) * (size_t)(n * c * s));
	assert_non_null(tmp);
	if (l == MFS_LAYOUT_NHWC)
		to_nhwc(data, tmp, n, c, s);
	else if (l == MFS_LAYOUT_BLOCK16)
		to_block16(data, tmp, n, c, s);
	else
		memcpy(tmp, data, sizeof(float) * (size_t)(n * c * s));
	memcpy(data, tmp, sizeof(float) * (size_t)(n * c * s));
	free(tmp);
}

/* Run one case through the operator (layouts xl/yl) and compare. */
static void conv_check(const conv_case *cc, mfs_layout xl, mfs_layout yl)
{
	tnode t;
	mfs_tensor x, w, b, y = { 0 };
	call c;
	int nsp = cc->nsp;

	tn_init(&t, "Conv");
	if (cc->group != 1)
		tn_int(&t, "group", cc->group);
	int idx = t.node.n_attrs;
	onnx_attr *a;
	a = tn_attr(&t, "strides", ONNX_ATTR_INTS);
	memcpy(t.ints[idx], cc->stride, sizeof(int64_t) * nsp);
	a->ints = t.ints[idx++]; a->n_ints = nsp;
	a = tn_attr(&t, "dilations", ONNX_ATTR_INTS);
	memcpy(t.ints[idx], cc->dil, sizeof(int64_t) * nsp);
	a->ints = t.ints[idx++]; a->n_ints = nsp;
	if (cc->auto_pad) {
		tn_str(&t, "auto_pad", cc->auto_pad);
	} else {
		a = tn_attr(&t, "pads", ONNX_ATTR_INTS);
		memcpy(t.ints[idx], cc->pb, sizeof(int64_t) * nsp);
		memcpy(t.ints[idx] + nsp, cc->pe, sizeof(int64_t) * nsp);
		a->ints = t.ints[idx]; a->n_ints = 2 * nsp;
	}

	mfs_shape xs = { .rank = 2 + nsp, .dims = { cc->n, cc->c } };
	mfs_shape ws = { .rank = 2 + nsp, .dims = { cc->m, cc->c / cc->group } };
	for (int i = 0; i < nsp; i++) {
		xs.dims[2 + i] = cc->in[i];
		ws.dims[2 + i] = cc->k[i];
	}
	t_rand(&x, xs);
	t_rand(&w, ws);
	if (cc->bias)
		t_rand(&b, shp(1, cc->m));

	/* expected output geometry (SAME pads resolved here independently) */
	conv_case r = *cc;
	int64_t out[3];
	for (int i = 0; i < nsp; i++) {
		int64_t dk = (cc->k[i] - 1) * cc->dil[i] + 1;
		if (cc->auto_pad && strncmp(cc->auto_pad, "SAME", 4) == 0) {
			out[i] = (cc->in[i] + cc->stride[i] - 1) / cc->stride[i];
			int64_t tot = (out[i] - 1) * cc->stride[i] + dk - cc->in[i];
			if (tot < 0) tot = 0;
			r.pb[i] = strcmp(cc->auto_pad, "SAME_UPPER") == 0 ? tot / 2 : tot - tot / 2;
		} else if (cc->auto_pad) {
			r.pb[i] = 0;
			out[i] = (cc->in[i] - dk) / cc->stride[i] + 1;
		} else {
			out[i] = (cc->in[i] + cc->pb[i] + cc->pe[i] - dk) / cc->stride[i] + 1;
		}
	}
	int64_t osz = cc->n * cc->m;
	for (int i = 0; i < nsp; i++)
		osz *= out[i];
	float *ref = malloc(sizeof(float) * osz);
	ref_conv(&r, out, x.data, w.data, cc->bias ? b.data : NULL, ref);

	if (xl != MFS_LAYOUT_PLAIN) {
		store_as(x.data, xl, cc->n, cc->c, cc->in[0] * cc->in[1]);
		x.layout = xl;
	}
	y.layout = yl;
	mfs_tensor *in[] = { &x, &w, cc->bias ? &b : NULL }, *outs[] = { &y };
	call_setup(&c, &t, 11, in, 3, outs, 1);
	int rc = call_run(&c);
	if (rc)
		print_error("%s\n", c.err.msg);
	assert_int_equal(rc, 0);
	assert_int_equal(y.shape.rank, 2 + nsp);
	for (int i = 0; i < nsp; i++)
		assert_int_equal(y.shape.dims[2 + i], out[i]);
	if (yl != MFS_LAYOUT_PLAIN)
		store_as(ref, yl, cc->n, cc->m, out[0] * out[1]);
	assert_close(y.data, ref, osz, 1e-4f);
	/* a second run reuses the state (weights already reordered) */
	memset(y.data, 0, y.nbytes);
	assert_int_equal(c.def->run(&c.ctx), 0);
	assert_close(y.data, ref, osz, 1e-4f);
	call_done(&c);
	free(ref);
	mfs_tensor_release(&x);
	mfs_tensor_release(&w);
	if (cc->bias)
		mfs_tensor_release(&b);
	mfs_tensor_release(&y);
}

static const conv_case conv_cases[] = {
	/* 2-D basics */
	{ 2, 1, 3, 4, 1, { 7, 6 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, NULL, true },
	{ 2, 2, 4, 8, 1, { 9, 9 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 0, 1 }, { 1, 0 }, NULL, false },
	{ 2, 1, 8, 16, 1, { 5, 5 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, NULL, true },
	{ 2, 1, 8, 8, 1, { 8, 7 }, { 1, 1 }, { 2, 2 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, NULL, false },
	/* groups, depthwise, depthwise with multiplier */
	{ 2, 1, 6, 4, 2, { 6, 6 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, NULL, true },
	{ 2, 2, 8, 8, 8, { 7, 7 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, NULL, true },
	{ 2, 1, 4, 8, 4, { 6, 5 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, NULL, false },
	/* dilation, auto_pad */
	{ 2, 1, 3, 5, 1, { 10, 9 }, { 3, 2 }, { 1, 2 }, { 2, 3 }, { 2, 0 }, { 1, 3 }, NULL, true },
	{ 2, 1, 3, 4, 1, { 7, 8 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 0 }, { 0 }, "SAME_UPPER", true },
	{ 2, 1, 3, 4, 1, { 7, 8 }, { 4, 4 }, { 1, 3 }, { 1, 1 }, { 0 }, { 0 }, "SAME_LOWER", false },
	{ 2, 1, 3, 4, 1, { 7, 8 }, { 3, 2 }, { 2, 1 }, { 1, 1 }, { 0 }, { 0 }, "VALID", true },
	/* 1-D and 3-D */
	{ 1, 2, 3, 4, 1, { 11 }, { 3 }, { 2 }, { 1 }, { 1 }, { 2 }, NULL, true },
	{ 1, 1, 4, 4, 2, { 9 }, { 2 }, { 1 }, { 3 }, { 0 }, { 0 }, NULL, false },
	{ 3, 1, 2, 3, 1, { 5, 6, 4 }, { 3, 3, 2 }, { 1, 2, 1 }, { 1, 1, 2 }, { 1, 1, 0 }, { 1, 0, 1 }, NULL, true },
	/* channels in 16s, for the blocked layout: 3x3, depthwise stride 2,
	 * 1x1, and a first layer of 3 channels into 16 */
	{ 2, 2, 16, 32, 1, { 7, 6 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, NULL, true },
	{ 2, 1, 32, 32, 32, { 9, 9 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, NULL, true },
	{ 2, 1, 32, 16, 1, { 5, 5 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, { 0, 0 }, { 0, 0 }, NULL, false },
	{ 2, 1, 3, 16, 1, { 9, 9 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, NULL, true },
};

static void conv_all_cases(void)
{
	for (size_t i = 0; i < sizeof(conv_cases) / sizeof(conv_cases[0]); i++) {
		const conv_case *cc = &conv_cases[i];
		conv_check(cc, MFS_LAYOUT_PLAIN, MFS_LAYOUT_PLAIN);
		if (cc->nsp == 2) {
			conv_check(cc, MFS_LAYOUT_NHWC, MFS_LAYOUT_NHWC);
			conv_check(cc, MFS_LAYOUT_NHWC, MFS_LAYOUT_PLAIN);
			conv_check(cc, MFS_LAYOUT_PLAIN, MFS_LAYOUT_NHWC);
		}
		if (cc->nsp == 2 && cc->m % 16 == 0) {
			/* every way into and out of the blocked layout the
			 * engine plans (graph.c) or may meet */
			conv_check(cc, MFS_LAYOUT_PLAIN, MFS_LAYOUT_BLOCK16);
			conv_check(cc, MFS_LAYOUT_NHWC, MFS_LAYOUT_BLOCK16);
			if (cc->c % 16 == 0) {
				conv_check(cc, MFS_LAYOUT_BLOCK16, MFS_LAYOUT_BLOCK16);
				conv_check(cc, MFS_LAYOUT_BLOCK16, MFS_LAYOUT_NHWC);
				conv_check(cc, MFS_LAYOUT_BLOCK16, MFS_LAYOUT_PLAIN);
			}
		} else if (cc->nsp == 2 && cc->c % 16 == 0) {
			conv_check(cc, MFS_LAYOUT_BLOCK16, MFS_LAYOUT_NHWC);
			conv_check(cc, MFS_LAYOUT_BLOCK16, MFS_LAYOUT_PLAIN);
		}
	}
}

static void test_conv_onednn(void **st)
{
	(void)st;
	unsetenv("MFS_CONV");
	conv_all_cases();
}

static void test_conv_im2col(void **st)
{
	(void)st;
	setenv("MFS_CONV", "im2col", 1);
	conv_all_cases();
	unsetenv("MFS_CONV");
}

/* A depthwise convolution takes oneDNN's jit_dw kernel, not its first
 * choice brdgmm_dw (slower on every MobileNetV2 shape, conv.c). */
static void test_conv_depthwise_kernel(void **st)
{
	(void)st;
	const conv_case dw = { 2, 1, 32, 32, 32, { 12, 12 }, { 3, 3 }, { 1, 1 }, { 1, 1 },
			       { 1, 1 }, { 1, 1 }, NULL, true };
	unsetenv("MFS_CONV");
	conv_check(&dw, MFS_LAYOUT_NHWC, MFS_LAYOUT_NHWC);
	assert_true(strncmp(mfs_dnnl_last_impl(), "jit_dw", 6) == 0);
	/* a grouped (not depthwise) convolution keeps oneDNN's choice */
	const conv_case grouped = { 2, 1, 32, 32, 16, { 12, 12 }, { 3, 3 }, { 1, 1 }, { 1, 1 },
				    { 1, 1 }, { 1, 1 }, NULL, true };
	conv_check(&grouped, MFS_LAYOUT_NHWC, MFS_LAYOUT_NHWC);
	assert_true(strncmp(mfs_dnnl_last_impl(), "jit_dw", 6) != 0);
}

/* A grouped convolution of 8-channel groups (RegNetY's) with X, Y or both
 * stored BLOCK16: oneDNN has only its reference kernel for that in
 * nChw16c (200x slower), so it computes channels-last with reorders at
 * the edges (conv_internal.h, BUILD_CL); results as the naive ones.  A
 * grouped convolution of 16-channel groups stays in nChw16c. */
static void test_conv_grouped_block16(void **st)
{
	(void)st;
	const conv_case g8 = { 2, 2, 48, 48, 6, { 9, 9 }, { 3, 3 }, { 2, 2 }, { 1, 1 },
			       { 1, 1 }, { 1, 1 }, NULL, true };
	const conv_case g16 = { 2, 1, 32, 32, 2, { 9, 9 }, { 3, 3 }, { 1, 1 }, { 1, 1 },
				{ 1, 1 }, { 1, 1 }, NULL, true };
	const mfs_layout ls[][2] = { { MFS_LAYOUT_BLOCK16, MFS_LAYOUT_BLOCK16 },
				     { MFS_LAYOUT_BLOCK16, MFS_LAYOUT_NHWC },
				     { MFS_LAYOUT_NHWC, MFS_LAYOUT_BLOCK16 },
				     { MFS_LAYOUT_PLAIN, MFS_LAYOUT_BLOCK16 } };
	unsetenv("MFS_CONV");
	for (size_t i = 0; i < sizeof(ls) / sizeof(ls[0]); i++) {
		conv_check(&g8, ls[i][0], ls[i][1]);
		assert_true(strncmp(mfs_dnnl_last_impl(), "ref", 3) != 0);
	}
	conv_check(&g16, MFS_LAYOUT_BLOCK16, MFS_LAYOUT_BLOCK16);
	assert_true(strncmp(mfs_dnnl_last_impl(), "ref", 3) != 0);
}

/* Both paths on the same data agree with each other (beyond the naive
 * reference): a ResNet-like 3x3 layer. */
static void test_conv_paths_agree(void **st)
{
	(void)st;
	conv_case cc = { 2, 1, 32, 32, 1, { 14, 14 }, { 3, 3 }, { 1, 1 }, { 1, 1 },
			 { 1, 1 }, { 1, 1 }, NULL, true };
	tnode t;
	mfs_tensor x, w, b, y1 = { 0 }, y2 = { 0 };
	call c;

	tn_init(&t, "Conv");
	tn_ints(&t, "pads", 4, 1L, 1L, 1L, 1L);
	t_rand(&x, shp(4, cc.n, cc.c, 14L, 14L));
	t_rand(&w, shp(4, cc.m, cc.c, 3L, 3L));
	t_rand(&b, shp(1, cc.m));
	mfs_tensor *in[] = { &x, &w, &b }, *o1[] = { &y1 }, *o2[] = { &y2 };
	unsetenv("MFS_CONV");
	call_setup(&c, &t, 11, in, 3, o1, 1);
	assert_int_equal(call_run(&c), 0);
	call_done(&c);
	setenv("MFS_CONV", "im2col", 1);
	call_setup(&c, &t, 11, in, 3, o2, 1);
	assert_int_equal(call_run(&c), 0);
	call_done(&c);
	unsetenv("MFS_CONV");
	assert_close(y1.data, y2.data, mfs_shape_numel(&y1.shape), 1e-4f);
	mfs_tensor_release(&x);
	mfs_tensor_release(&w);
	mfs_tensor_release(&b);
	mfs_tensor_release(&y1);
	mfs_tensor_release(&y2);
}

/* FusedConv (com.modelfs): act(conv + Z) against the naive conv. */
static void fused_check(mfs_layout xl, mfs_layout yl, mfs_layout zl, const char *act,
			bool with_z)
{
	conv_case cc = { 2, 2, 6, 8, 2, { 7, 6 }, { 3, 3 }, { 1, 2 }, { 1, 1 }, { 1, 0 },
			 { 1, 1 }, NULL, true };
	const int64_t OH = 7, OW = 3, S = OH * OW, osz = 2 * 8 * S;
	int64_t out[3] = { OH, OW, 1 };
	tnode t;
	mfs_tensor x, w, b, z, y = { 0 };
	call c;
	static float attr_params[2];
	float ref[2 * 8 * 7 * 3], tmp[2 * 8 * 7 * 3];

	tn_init(&t, "FusedConv");
	t.node.domain = (char *)"com.modelfs";
	tn_int(&t, "group", 2);
	tn_ints(&t, "strides", 2, 1L, 2L);
	tn_ints(&t, "pads", 4, 1L, 0L, 1L, 1L);
	if (act) {
		tn_str(&t, "activation", act);
		onnx_attr *a = tn_attr(&t, "activation_params", ONNX_ATTR_FLOATS);
		attr_params[0] = !strcmp(act, "Clip") ? -0.2f : 0.1f;
		attr_params[1] = 0.3f;
		a->floats = attr_params;
		a->n_floats = 2;
	}
	t_rand(&x, shp(4, 2L, 6L, 7L, 6L));
	t_rand(&w, shp(4, 8L, 3L, 3L, 3L));
	t_rand(&b, shp(1, 8L));
	t_rand(&z, shp(4, 2L, 8L, OH, OW));
	ref_conv(&cc, out, x.data, w.data, b.data, ref);
	for (int64_t i = 0; i < osz; i++) {
		float v = ref[i] + (with_z ? ((float *)z.data)[i] : 0.0f);
		if (act && !strcmp(act, "Relu"))
			v = v > 0 ? v : 0;
		else if (act && !strcmp(act, "LeakyRelu"))
			v = v >= 0 ? v : v * 0.1f;
		else if (act && !strcmp(act, "Clip"))
			v = v < -0.2f ? -0.2f : v > 0.3f ? 0.3f : v;
		ref[i] = v;
	}
	if (xl == MFS_LAYOUT_NHWC) {
		float *xt = malloc(x.nbytes);
		to_nhwc(x.data, xt, 2, 6, 42);
		memcpy(x.data, xt, x.nbytes);
		free(xt);
		x.layout = MFS_LAYOUT_NHWC;
	}
	if (zl == MFS_LAYOUT_NHWC) {
		to_nhwc(z.data, tmp, 2, 8, S);
		memcpy(z.data, tmp, z.nbytes);
		z.layout = MFS_LAYOUT_NHWC;
	}
	y.layout = yl;
	mfs_tensor *in[] = { &x, &w, &b, with_z ? &z : NULL }, *outs[] = { &y };
	const mfs_op_def *def = mfs_op_find("com.modelfs", "FusedConv", 1);
	assert_non_null(def);
	memset(&c, 0, sizeof(c));
	c.def = def;
	for (int i = 0; i < 4; i++)
		c.in[i] = in[i];
	c.out[0] = outs[0];
	c.ctx = (mfs_op_ctx){ .def = def, .node = &t.node, .opset = 1, .n_in = 4, .in = c.in,
			      .n_out = 1, .out = c.out, .state = &c.state, .err = &c.err };
	int rc = call_run(&c);
	if (rc)
		print_error("%s\n", c.err.msg);
	assert_int_equal(rc, 0);
	if (yl == MFS_LAYOUT_NHWC) {
		to_nhwc(ref, tmp, 2, 8, S);
		memcpy(ref, tmp, sizeof(ref));
	}
	assert_close(y.data, ref, osz, 1e-4f);
	call_done(&c);
	mfs_tensor_release(&x);
	mfs_tensor_release(&w);
	mfs_tensor_release(&b);
	mfs_tensor_release(&z);
	mfs_tensor_release(&y);
}

static void fused_all(void)
{
	const char *acts[] = { NULL, "Relu", "LeakyRelu", "Clip" };
	for (int a = 0; a < 4; a++)
		for (int l = 0; l < 8; l++)
			fused_check(l & 1 ? MFS_LAYOUT_NHWC : MFS_LAYOUT_PLAIN,
				    l & 2 ? MFS_LAYOUT_NHWC : MFS_LAYOUT_PLAIN,
				    l & 4 ? MFS_LAYOUT_NHWC : MFS_LAYOUT_PLAIN, acts[a], a != 1 || l < 4);
}

/* FusedConv's residual Z in the blocked layout: Relu(conv + Z), 16 ->
 * 16 channels, with X, Y and Z stored as given. */
/* A 3x3 FusedConv of [2, 16, 6, 5] with a residual Z and Relu: the node,
 * random X, W, B, Z (plain) and the reference result (plain, 2*16*30). */
static void fused_resid_case(tnode *t, mfs_tensor *x, mfs_tensor *w, mfs_tensor *b,
			     mfs_tensor *z, float *ref)
{
	conv_case cc = { 2, 2, 16, 16, 1, { 6, 5 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 },
			 { 1, 1 }, NULL, true };
	int64_t out[3] = { 6, 5, 1 };

	tn_init(t, "FusedConv");
	t->node.domain = (char *)"com.modelfs";
	tn_ints(t, "pads", 4, 1L, 1L, 1L, 1L);
	tn_str(t, "activation", "Relu");
	t_rand(x, shp(4, 2L, 16L, 6L, 5L));
	t_rand(w, shp(4, 16L, 16L, 3L, 3L));
	t_rand(b, shp(1, 16L));
	t_rand(z, shp(4, 2L, 16L, 6L, 5L));
	ref_conv(&cc, out, x->data, w->data, b->data, ref);
	for (int64_t i = 0; i < 2 * 16 * 30; i++) {
		float v = ref[i] + ((float *)z->data)[i];
		ref[i] = v > 0 ? v : 0;
	}
}

/* FusedConv's residual case with X, Y, Z stored in these layouts; over:
 * Y given Z's memory (op.h: MFS_OP_OUT0_OVER_IN3, as the CPU backend does
 * when Z dies at the node; yl must be zl), where the result must still
 * be act(conv + Z). */
static void fused_resid_check(mfs_layout xl, mfs_layout yl, mfs_layout zl, bool over)
{
	int64_t osz = 2 * 16 * 30;
	tnode t;
	mfs_tensor x, w, b, z, y = { 0 };
	call c;
	float ref[2 * 16 * 30];
	int rc;

	fused_resid_case(&t, &x, &w, &b, &z, ref);
	store_as(x.data, xl, 2, 16, 30);
	x.layout = xl;
	store_as(z.data, zl, 2, 16, 30);
	z.layout = zl;
	y.layout = yl;
	const mfs_op_def *def = mfs_op_find("com.modelfs", "FusedConv", 1);
	memset(&c, 0, sizeof(c));
	c.def = def;
	c.in[0] = &x; c.in[1] = &w; c.in[2] = &b; c.in[3] = &z;
	c.out[0] = &y;
	c.ctx = (mfs_op_ctx){ .def = def, .node = &t.node, .opset = 1, .n_in = 4, .in = c.in,
			      .n_out = 1, .out = c.out, .state = &c.state, .err = &c.err };
	if (over) {
		assert_true(def->flags & MFS_OP_OUT0_OVER_IN3);
		y = z;
		y.owns_data = false;
		rc = def->infer(&c.ctx);
		if (rc >= 0)
			rc = def->prepare(&c.ctx);
		if (rc >= 0)
			rc = def->run(&c.ctx);
	} else {
		rc = call_run(&c);
	}
	if (rc)
		print_error("%s\n", c.err.msg);
	assert_int_equal(rc, 0);
	if (over)
		assert_ptr_equal(y.data, z.data);
	store_as(ref, yl, 2, 16, 30);
	assert_close(y.data, ref, osz, 1e-4f);
	call_done(&c);
	mfs_tensor_release(&x);
	mfs_tensor_release(&w);
	mfs_tensor_release(&b);
	mfs_tensor_release(&z);
	mfs_tensor_release(&y);
}

/* Winograd (MFS_WINOGRAD=1: wherever the shape fits) on every layout the
 * engine may hand over, against the naive reference; FusedConv's residual
 * Z and Relu too, Y apart and over Z.  A 3x3 layer with enough work per
 * thread takes it by default, and MFS_WINOGRAD=0 keeps it direct. */
static void test_conv_winograd(void **st)
{
	(void)st;
	int omp_was = omp_get_max_threads();
	unsetenv("MFS_CONV");
	setenv("MFS_WINOGRAD", "batch", 1);
	conv_all_cases();
	fused_resid_check(MFS_LAYOUT_BLOCK16, MFS_LAYOUT_BLOCK16, MFS_LAYOUT_BLOCK16, true);
	assert_non_null(strstr(mfs_dnnl_last_impl(), "wino"));
	setenv("MFS_WINOGRAD", "1", 1);     /* image by image */
	conv_all_cases();
	const conv_case sq = { 2, 2, 16, 32, 1, { 7, 6 }, { 3, 3 }, { 1, 1 }, { 1, 1 },
			       { 1, 1 }, { 1, 1 }, NULL, true };
	conv_check(&sq, MFS_LAYOUT_NHWC, MFS_LAYOUT_NHWC);
	assert_non_null(strstr(mfs_dnnl_last_impl(), "wino"));
	/* Z in the destination, all nChw16c: the sum post-op, which
	 * oneDNN's Winograd takes (a Z read apart, a binary post-op, it
	 * does not: those stay direct) */
	fused_resid_check(MFS_LAYOUT_BLOCK16, MFS_LAYOUT_BLOCK16, MFS_LAYOUT_BLOCK16, true);
	assert_non_null(strstr(mfs_dnnl_last_impl(), "wino"));
	fused_resid_check(MFS_LAYOUT_NHWC, MFS_LAYOUT_NHWC, MFS_LAYOUT_NHWC, false);
	fused_resid_check(MFS_LAYOUT_NHWC, MFS_LAYOUT_NHWC, MFS_LAYOUT_NHWC, true);
	fused_resid_check(MFS_LAYOUT_PLAIN, MFS_LAYOUT_PLAIN, MFS_LAYOUT_PLAIN, false);
	/* ResNet's 64-channel layer on 2 threads: at 56x56 one image has 58M
	 * multiply-adds per thread (image by image); at 28x28 one has 14M,
	 * under 2^24, and a batch of 6 87M, over 2^26 (the whole batch); a
	 * batch of 2 at 28x28 stays direct */
	const conv_case big = { 2, 1, 64, 64, 1, { 56, 56 }, { 3, 3 }, { 1, 1 }, { 1, 1 },
				{ 1, 1 }, { 1, 1 }, NULL, true };
	const conv_case batch = { 2, 6, 64, 64, 1, { 28, 28 }, { 3, 3 }, { 1, 1 }, { 1, 1 },
				  { 1, 1 }, { 1, 1 }, NULL, true };
	const conv_case pair = { 2, 2, 64, 64, 1, { 28, 28 }, { 3, 3 }, { 1, 1 }, { 1, 1 },
				 { 1, 1 }, { 1, 1 }, NULL, true };
	omp_set_num_threads(2);
	unsetenv("MFS_WINOGRAD");
	conv_check(&big, MFS_LAYOUT_NHWC, MFS_LAYOUT_NHWC);
	assert_non_null(strstr(mfs_dnnl_last_impl(), "wino"));
	conv_check(&batch, MFS_LAYOUT_NHWC, MFS_LAYOUT_NHWC);
	assert_non_null(strstr(mfs_dnnl_last_impl(), "wino"));
	conv_check(&pair, MFS_LAYOUT_NHWC, MFS_LAYOUT_NHWC);
	assert_null(strstr(mfs_dnnl_last_impl(), "wino"));
	conv_check(&sq, MFS_LAYOUT_NHWC, MFS_LAYOUT_NHWC);   /* too little work */
	assert_null(strstr(mfs_dnnl_last_impl(), "wino"));
	setenv("MFS_WINOGRAD", "0", 1);
	conv_check(&big, MFS_LAYOUT_NHWC, MFS_LAYOUT_NHWC);
	assert_null(strstr(mfs_dnnl_last_impl(), "wino"));
	unsetenv("MFS_WINOGRAD");
	omp_set_num_threads(omp_was);
}

/* One node run at batch 1 and 8 in turn (dynamic batching), Winograd
 * built for the whole batch: oneDNN's weight format differs between them
 * (64 channels at 56x56 on 2 threads), so the node keeps its first
 * Winograd packing and one direct packing beside it, and packs nothing
 * more however often the batch changes; each image comes out as at batch
 * 1.  Built for one image (the default where one image has the work), a
 * single packing serves both. */
static void test_conv_winograd_batch_changes(void **st)
{
	(void)st;
	int omp_was = omp_get_max_threads();
	tnode t;
	mfs_tensor x8, x1, w, y = { 0 };
	float *y1 = malloc(sizeof(float) * 64 * 56 * 56);
	call c;
	uint64_t packed = 0;

	omp_set_num_threads(2);
	tn_init(&t, "Conv");
	tn_ints(&t, "pads", 4, 1L, 1L, 1L, 1L);
	t_rand(&x8, shp(4, 8L, 64L, 56L, 56L));
	t_rand(&w, shp(4, 64L, 64L, 3L, 3L));
	x1 = x8;
	x1.owns_data = false;
	x1.shape.dims[0] = 1;
	x1.nbytes = x8.nbytes / 8;
	mfs_tensor *in[] = { &x1, &w }, *out[] = { &y };
	for (int mode = 0; mode < 2; mode++) {
		setenv("MFS_WINOGRAD", mode ? "1" : "batch", 1);
		uint64_t start = mfs_dnnl_weights_packed();
		call_setup(&c, &t, 11, in, 2, out, 1);
		c.ctx.const_in = 1u << 1;   /* W is a model constant */
		for (int run = 0; run < 5; run++) {
			c.in[0] = run % 2 ? &x8 : &x1;
			assert_int_equal(call_run(&c), 0);
			if (run == 0) {
				memcpy(y1, y.data, sizeof(float) * 64 * 56 * 56);
				/* batch 1's build; later runs build nothing
				 * (test_conv_batch_variants) */
				assert_true(strstr(mfs_dnnl_last_impl(), "wino") != NULL);
			} else
				assert_close(y.data, y1, 64 * 56 * 56, 1e-4f);   /* image 0 */
			if (run == 1)
				packed = mfs_dnnl_weights_packed();
			else if (run > 1)
				assert_int_equal(mfs_dnnl_weights_packed(), packed);
		}
		assert_int_equal(packed - start, mode ? 1 : 2);
		call_done(&c);
	}
	unsetenv("MFS_WINOGRAD");
	omp_set_num_threads(omp_was);
	mfs_tensor_release(&x8);
	mfs_tensor_release(&w);
	mfs_tensor_release(&y);
	free(y1);
}

/* A Conv node run at batch 1, 4, 1, 4 (dynamic batching) builds its
 * primitives for each batch size once: going back to a size it ran builds
 * nothing and packs no weights (conv_node keeps a variant per shape); each
 * run's image 0 is the first run's.  Direct (MFS_WINOGRAD=0) and Winograd
 * image by image.  Past CONV_VARIANTS (16) sizes the least lately used
 * is rebuilt when it comes back, the latest is not. */
static void test_conv_batch_variants(void **st)
{
	(void)st;
	int omp_was = omp_get_max_threads();
	tnode t;
	mfs_tensor x17, xb[18], w, y = { 0 };
	const int64_t img = 32 * 28 * 28;
	float *y1 = malloc(sizeof(float) * (size_t)img);
	call c;

	omp_set_num_threads(2);
	tn_init(&t, "Conv");
	tn_ints(&t, "pads", 4, 1L, 1L, 1L, 1L);
	t_rand(&x17, shp(4, 17L, 16L, 28L, 28L));
	t_rand(&w, shp(4, 32L, 16L, 3L, 3L));
	for (int b = 1; b <= 17; b++) {
		xb[b] = x17;
		xb[b].owns_data = false;
		xb[b].shape.dims[0] = b;
		xb[b].nbytes = x17.nbytes / 17 * (size_t)b;
	}
	mfs_tensor *in[] = { &xb[1], &w }, *out[] = { &y };
	for (int mode = 0; mode < 2; mode++) {
		setenv("MFS_WINOGRAD", mode ? "1" : "0", 1);
		call_setup(&c, &t, 11, in, 2, out, 1);
		c.ctx.const_in = 1u << 1;   /* W is a model constant */
		int sizes[] = { 1, 4, 1, 4, 1 };
		uint64_t built = 0, packed = 0;
		for (int run = 0; run < 5; run++) {
			c.in[0] = &xb[sizes[run]];
			assert_int_equal(call_run(&c), 0);
			if (run == 0)
				memcpy(y1, y.data, sizeof(float) * (size_t)img);
			else
				assert_close(y.data, y1, img, 1e-4f);
			if (run == 1) {
				built = mfs_dnnl_prims_created();
				packed = mfs_dnnl_weights_packed();
			} else if (run > 1) {
				assert_int_equal(mfs_dnnl_prims_created(), built);
				assert_int_equal(mfs_dnnl_weights_packed(), packed);
			}
		}
		/* 2..17: 17 sizes in all, so 1 (the least lately used) goes */
		for (int b = 2; b <= 17; b++) {
			c.in[0] = &xb[b];
			assert_int_equal(call_run(&c), 0);
		}
		built = mfs_dnnl_prims_created();
		c.in[0] = &xb[17];
		assert_int_equal(call_run(&c), 0);
		assert_int_equal(mfs_dnnl_prims_created(), built);
		c.in[0] = &xb[1];
		assert_int_equal(call_run(&c), 0);
		assert_true(mfs_dnnl_prims_created() > built);
		assert_close(y.data, y1, img, 1e-4f);
		call_done(&c);
	}
	unsetenv("MFS_WINOGRAD");
	omp_set_num_threads(omp_was);
	mfs_tensor_release(&x17);
	mfs_tensor_release(&w);
	mfs_tensor_release(&y);
	free(y1);
}

static void test_fused_conv_block16(void **st)
{
	(void)st;
	for (int im2col = 0; im2col < 2; im2col++) {
		if (im2col)
			setenv("MFS_CONV", "im2col", 1);
		fused_resid_check(MFS_LAYOUT_BLOCK16, MFS_LAYOUT_BLOCK16, MFS_LAYOUT_BLOCK16, false);
		fused_resid_check(MFS_LAYOUT_BLOCK16, MFS_LAYOUT_BLOCK16, MFS_LAYOUT_NHWC, false);
		fused_resid_check(MFS_LAYOUT_BLOCK16, MFS_LAYOUT_NHWC, MFS_LAYOUT_BLOCK16, false);
		fused_resid_check(MFS_LAYOUT_NHWC, MFS_LAYOUT_NHWC, MFS_LAYOUT_BLOCK16, false);
		unsetenv("MFS_CONV");
	}
}

/* Y over Z on every path: the oneDNN sum post-op (Y and Z in the compute
 * format), the binary add with edge reorders, and im2col (which must save
 * a plain Z before the product overwrites it). */
static void test_fused_conv_over_z(void **st)
{
	(void)st;
	for (int im2col = 0; im2col < 2; im2col++) {
		if (im2col)
			setenv("MFS_CONV", "im2col", 1);
		fused_resid_check(MFS_LAYOUT_NHWC, MFS_LAYOUT_NHWC, MFS_LAYOUT_NHWC, true);      /* sum */
		fused_resid_check(MFS_LAYOUT_PLAIN, MFS_LAYOUT_NHWC, MFS_LAYOUT_NHWC, true);     /* sum */
		fused_resid_check(MFS_LAYOUT_BLOCK16, MFS_LAYOUT_BLOCK16, MFS_LAYOUT_BLOCK16, true); /* sum */
		fused_resid_check(MFS_LAYOUT_PLAIN, MFS_LAYOUT_PLAIN, MFS_LAYOUT_PLAIN, true);    /* edge reorders */
		fused_resid_check(MFS_LAYOUT_NHWC, MFS_LAYOUT_PLAIN, MFS_LAYOUT_PLAIN, true);     /* edge reorders */
		unsetenv("MFS_CONV");
	}
}

static void test_fused_conv(void **st)
{
	(void)st;
	unsetenv("MFS_CONV");
	fused_all();
	setenv("MFS_CONV", "im2col", 1);
	fused_all();
	unsetenv("MFS_CONV");
}

/* Weights marked constant (ctx->const_in) are reordered once: changing
 * them in place afterwards is not seen.  Unmarked weights are read again
 * on every run (a W computed by another node reuses its buffer). */
static void test_conv_weight_constness(void **st)
{
	(void)st;
	tnode t;
	mfs_tensor x, w, y1 = { 0 };
	call c;

	unsetenv("MFS_CONV");
	tn_init(&t, "Conv");
	t_rand(&x, shp(4, 1L, 16L, 6L, 6L));
	t_rand(&w, shp(4, 16L, 16L, 3L, 3L));
	mfs_tensor *in[] = { &x, &w }, *out[] = { &y1 };
	for (int marked = 0; marked < 2; marked++) {
		call_setup(&c, &t, 11, in, 2, out, 1);
		c.ctx.const_in = marked ? 2u : 0u;
		assert_int_equal(call_run(&c), 0);
		float before = ((float *)y1.data)[7];
		for (int64_t i = 0; i < mfs_shape_numel(&w.shape); i++)
			((float *)w.data)[i] *= 2.0f;
		assert_int_equal(c.def->run(&c.ctx), 0);
		float after = ((float *)y1.data)[7];
		if (marked)
			assert_true(after == before);
		else
			assert_true(fabsf(after - 2.0f * before) <= 1e-4f * (1.0f + fabsf(before)));
		call_done(&c);
	}
	mfs_tensor_release(&x);
	mfs_tensor_release(&w);
	mfs_tensor_release(&y1);
}

/* A node's state made on one thread and run on others, and two nodes run
 * at the same time from two threads: what the server does with its
 * worker pool (the user-managed scratchpad makes this legal for oneDNN). */
typedef struct thread_job {
	call *c;
	const float *ref;
	int64_t n;
	int rounds;
	int failures;
} thread_job;

static void *conv_thread(void *arg)
{
	thread_job *j = arg;
	mfs_tensor *y = j->c->out[0];
	for (int r = 0; r < j->rounds; r++) {
		memset(y->data, 0, y->nbytes);
		if (j->c->def->run(&j->c->ctx) != 0) {
			j->failures++;
			continue;
		}
		for (int64_t i = 0; i < j->n; i++)
			if (fabsf(((float *)y->data)[i] - j->ref[i]) > 1e-4f * (1 + fabsf(j->ref[i]))) {
				j->failures++;
				break;
			}
	}
	return NULL;
}

static void test_conv_threads(void **st)
{
	(void)st;
	tnode t;
	mfs_tensor x, w, b, y[2] = { { 0 }, { 0 } };
	call c[2];
	thread_job jobs[2];
	pthread_t th[2];
	float *ref[2];

	unsetenv("MFS_CONV");
	tn_init(&t, "Conv");
	tn_ints(&t, "pads", 4, 1L, 1L, 1L, 1L);
	t_rand(&x, shp(4, 1L, 32L, 28L, 28L));
	t_rand(&w, shp(4, 32L, 32L, 3L, 3L));
	t_rand(&b, shp(1, 32L));
	mfs_tensor *in[] = { &x, &w, &b };
	for (int k = 0; k < 2; k++) {
		mfs_tensor *out[] = { &y[k] };
		y[k].layout = k ? MFS_LAYOUT_NHWC : MFS_LAYOUT_PLAIN;
		call_setup(&c[k], &t, 11, in, 3, out, 1);
		c[k].ctx.const_in = 2;
		assert_int_equal(call_run(&c[k]), 0);   /* state made on this thread */
		int64_t n = mfs_shape_numel(&y[k].shape);
		ref[k] = malloc(sizeof(float) * n);
		memcpy(ref[k], y[k].data, sizeof(float) * n);
		jobs[k] = (thread_job){ &c[k], ref[k], n, 30, 0 };
	}
	for (int k = 0; k < 2; k++)
		assert_int_equal(pthread_create(&th[k], NULL, conv_thread, &jobs[k]), 0);
	for (int k = 0; k < 2; k++) {
		pthread_join(th[k], NULL);
		assert_int_equal(jobs[k].failures, 0);
		call_done(&c[k]);
		free(ref[k]);
		mfs_tensor_release(&y[k]);
	}
	mfs_tensor_release(&x);
	mfs_tensor_release(&w);
	mfs_tensor_release(&b);
}

/* c: a com.modelfs Dense node t of x, w (a constant) and b into y. */
static void dense_call_setup(call *c, tnode *t, mfs_tensor *x, mfs_tensor *w, mfs_tensor *b,
			     mfs_tensor *y)
{
	tn_init(t, "Dense");
	t->node.domain = (char *)"com.modelfs";
	const mfs_op_def *def = mfs_op_find("com.modelfs", "Dense", 1);
	assert_non_null(def);
	memset(c, 0, sizeof(*c));
	c->def = def;
	c->in[0] = x;
	c->in[1] = w;
	c->in[2] = b;
	c->out[0] = y;
	c->ctx = (mfs_op_ctx){ .def = def, .node = &t->node, .opset = 1, .n_in = 3, .in = c->in,
			       .n_out = 1, .out = c->out, .state = &c->state, .err = &c->err,
			       .const_in = 2 };
}

/* A Dense state built for one thread count is rebuilt when the node runs
 * on another (dense_util.h, mfs_dnnl_threads: the engine drops to one
 * thread while the cores are busy), constant weights reordered again; a
 * Conv node keeps a variant per thread count (conv_node), so only the
 * first run on 1 threads builds (kept: whether it keeps them): 1, 2, 1, 2
 * threads after 2 give the first run's values, and a run on the count it
 * was built for builds nothing. */
static void run_over_thread_counts(call *c, mfs_tensor *y, bool kept)
{
	int64_t n;
	float *ref;
	int counts[] = { 1, 2, 1, 2 };

	omp_set_num_threads(2);
	assert_int_equal(call_run(c), 0);
	n = mfs_shape_numel(&y->shape);
	ref = malloc(sizeof(float) * (size_t)n);
	memcpy(ref, y->data, sizeof(float) * (size_t)n);
	uint64_t built = mfs_dnnl_prims_created();
	assert_int_equal(call_run(c), 0);
	assert_int_equal(mfs_dnnl_prims_created(), built);
	for (int k = 0; k < 4; k++) {
		omp_set_num_threads(counts[k]);
		memset(y->data, 0, y->nbytes);
		built = mfs_dnnl_prims_created();
		assert_int_equal(call_run(c), 0);
		if (kept && k > 0)
			assert_int_equal(mfs_dnnl_prims_created(), built);
		else
			assert_true(mfs_dnnl_prims_created() > built);
		assert_close(y->data, ref, n, 1e-5f);
	}
	free(ref);
	omp_set_num_threads(omp_get_num_procs());
}

static void test_rebuild_for_threads(void **st)
{
	(void)st;
	tnode t;
	mfs_tensor x, w, b, y = { 0 };
	mfs_tensor *all[] = { &x, &w, &b, &y };
	call c;

	unsetenv("MFS_CONV");
	tn_init(&t, "Conv");
	tn_ints(&t, "pads", 4, 1L, 1L, 1L, 1L);
	t_rand(&x, shp(4, 1L, 16L, 14L, 14L));
	t_rand(&w, shp(4, 32L, 16L, 3L, 3L));
	t_rand(&b, shp(1, 32L));
	mfs_tensor *cin[] = { &x, &w, &b }, *out[] = { &y };
	call_setup(&c, &t, 11, cin, 3, out, 1);
	c.ctx.const_in = 2;
	run_over_thread_counts(&c, &y, true);
	call_done(&c);
	for (int k = 0; k < 4; k++)
		mfs_tensor_release(all[k]);

	t_rand(&x, shp(2, 64L, 256L));
	t_rand(&w, shp(2, 256L, 128L));
	t_rand(&b, shp(1, 128L));
	dense_call_setup(&c, &t, &x, &w, &b, &y);
	setenv("MFS_DENSE", "onednn", 1);   /* no measured choice of sgemm */
	run_over_thread_counts(&c, &y, false);
	unsetenv("MFS_DENSE");
	call_done(&c);
	for (int k = 0; k < 4; k++)
		mfs_tensor_release(all[k]);
}

/* Dense with x of `rows` rows: its output against x W + b. */
static void dense_rows_check(call *c, mfs_tensor *x, mfs_tensor *y, const mfs_tensor *w,
			     const mfs_tensor *b, int64_t rows)
{
	int64_t k = w->shape.dims[0], n = w->shape.dims[1];
	float *ref = malloc(sizeof(float) * (size_t)(rows * n));

	mfs_tensor_release(x);
	t_rand(x, shp(2, rows, k));
	assert_int_equal(call_run(c), 0);
	ref_matmul(x->data, w->data, ref, rows, k, n);
	for (int64_t i = 0; i < rows * n; i++)
		ref[i] += ((const float *)b->data)[i % n];
	assert_close(y->data, ref, rows * n, 1e-4f);
	free(ref);
}

/* A decoder runs its prompt (many rows) and then its steps (one row per
 * stream) through the same Dense nodes, and in-flight batching changes
 * the rows at every join and leave: each row count keeps its own variant
 * (dense.c), so going back to one builds no primitive and packs no
 * weights again; past DENSE_VARIANTS row counts the least lately used
 * goes, and every result stays right. */
static void test_dense_variants_per_rows(void **st)
{
	(void)st;
	tnode t;
	mfs_tensor x = { 0 }, w, b, y = { 0 };
	call c;

	t_rand(&w, shp(2, 256L, 128L));
	t_rand(&b, shp(1, 128L));
	dense_call_setup(&c, &t, &x, &w, &b, &y);
	setenv("MFS_DENSE", "onednn", 1);   /* a primitive for every row count */
	omp_set_num_threads(2);
	dense_rows_check(&c, &x, &y, &w, &b, 32);
	dense_rows_check(&c, &x, &y, &w, &b, 1);
	uint64_t prims = mfs_dnnl_prims_created(), packed = mfs_dnnl_weights_packed();
	for (int round = 0; round < 2; round++) {
		dense_rows_check(&c, &x, &y, &w, &b, 32);
		dense_rows_check(&c, &x, &y, &w, &b, 1);
	}
	assert_int_equal(mfs_dnnl_prims_created(), prims);
	assert_int_equal(mfs_dnnl_weights_packed(), packed);
	for (int64_t rows = 1; rows <= 12; rows++)   /* more than the variants */
		dense_rows_check(&c, &x, &y, &w, &b, rows);
	dense_rows_check(&c, &x, &y, &w, &b, 32);
	unsetenv("MFS_DENSE");
	call_done(&c);
	omp_set_num_threads(omp_get_num_procs());
	mfs_tensor_release(&x);
	mfs_tensor_release(&w);
	mfs_tensor_release(&b);
	mfs_tensor_release(&y);
}

/* Bad attributes and inputs: clear errors, never a crash. */
static void conv_expect_error(tnode *t, mfs_shape xs, mfs_shape ws, int code, const char *needle)
{
	mfs_tensor x, w, y = { 0 };
	call c;
	t_rand(&x, xs);
	t_rand(&w, ws);
	mfs_tensor *in[] = { &x, &w }, *out[] = { &y };
	call_setup(&c, t, 11, in, 2, out, 1);
	int rc = call_run(&c);
	if (rc != -code || !strstr(c.err.msg, needle))
		print_error("rc %d, message '%s'\n", rc, c.err.msg);
	assert_int_equal(rc, -code);
	assert_non_null(strstr(c.err.msg, needle));
	assert_non_null(strstr(c.err.msg, "Conv 'n0'"));
	call_done(&c);
	mfs_tensor_release(&x);
	mfs_tensor_release(&w);
	mfs_tensor_release(&y);
}

static void test_conv_bad(void **st)
{
	(void)st;
	tnode t;

	tn_init(&t, "Conv");
	tn_int(&t, "group", 3);
	conv_expect_error(&t, shp(4, 1L, 4L, 5L, 5L), shp(4, 3L, 1L, 3L, 3L), EINVAL, "divisible");
	tn_init(&t, "Conv");
	tn_ints(&t, "strides", 2, 0L, 1L);
	conv_expect_error(&t, shp(4, 1L, 2L, 5L, 5L), shp(4, 3L, 2L, 3L, 3L), EINVAL, "strides");
	tn_init(&t, "Conv");
	tn_ints(&t, "pads", 2, 1L, 1L);
	conv_expect_error(&t, shp(4, 1L, 2L, 5L, 5L), shp(4, 3L, 2L, 3L, 3L), EINVAL, "pads");
	tn_init(&t, "Conv");
	tn_ints(&t, "kernel_shape", 2, 2L, 2L);
	conv_expect_error(&t, shp(4, 1L, 2L, 5L, 5L), shp(4, 3L, 2L, 3L, 3L), EINVAL, "kernel_shape");
	tn_init(&t, "Conv");
	tn_str(&t, "auto_pad", "SAME_MIDDLE");
	conv_expect_error(&t, shp(4, 1L, 2L, 5L, 5L), shp(4, 3L, 2L, 3L, 3L), EINVAL, "auto_pad");
	tn_init(&t, "Conv");
	conv_expect_error(&t, shp(4, 1L, 2L, 2L, 2L), shp(4, 3L, 2L, 3L, 3L), EINVAL, "smaller");
	tn_init(&t, "Conv");
	conv_expect_error(&t, shp(4, 1L, 2L, 5L, 5L), shp(4, 3L, 5L, 3L, 3L), EINVAL, "channels");
	tn_init(&t, "Conv");
	conv_expect_error(&t, shp(6, 1L, 2L, 5L, 5L, 5L, 5L), shp(6, 3L, 2L, 3L, 3L, 3L, 3L),
			  ENOTSUP, "rank");
}

/* ---- Pools -------------------------------------------------------------- */

/* Naive 2-D pool reference for one plane.  kind 0 max, 1 avg; ceil as the
 * ONNX reference; writes ind (flat index within the plane, row-major or
 * column-major) for max. */
static void ref_pool2d(int kind, const float *x, int64_t H, int64_t W, const int64_t k[2],
		       const int64_t s[2], const int64_t d[2], const int64_t pb[2],
		       const int64_t pe[2], bool cip, int64_t OH, int64_t OW, float *y,
		       int64_t *ind, bool colmajor)
{
	for (int64_t oh = 0; oh < OH; oh++)
		for (int64_t ow = 0; ow < OW; ow++) {
			float best = -INFINITY;
			int64_t bi = 0, cnt = 0, cntp = 0;
			double sum = 0;
			for (int64_t i = 0; i < k[0]; i++)
				for (int64_t j = 0; j < k[1]; j++) {
					int64_t h = oh * s[0] - pb[0] + i * d[0];
					int64_t w = ow * s[1] - pb[1] + j * d[1];
					if (h >= -pb[0] && h < H + pe[0] && w >= -pb[1] && w < W + pe[1])
						cntp++;
					if (h < 0 || h >= H || w < 0 || w >= W)
						continue;
					float v = x[h * W + w];
					cnt++;
					sum += v;
					if (v > best) {
						best = v;
						bi = colmajor ? w * H + h : h * W + w;
					}
				}
			y[oh * OW + ow] = kind == 0 ? best : (float)(sum / (double)(cip ? cntp : cnt));
			if (ind)
				ind[oh * OW + ow] = bi;
		}
}

static void pool_check(const char *op, int64_t opset, bool nhwc, bool with_ind, bool colmajor,
		       bool cip, bool ceil)
{
	const int64_t N = 2, C = 3, H = 9, W = 8;
	const int64_t k[2] = { 3, 2 }, st[2] = { 2, 2 }, dl[2] = { opset >= 19 || !strcmp(op, "MaxPool") ? 2 : 1, 1 };
	const int64_t pb[2] = { 1, 0 }, pe[2] = { 1, 1 };
	tnode t;
	mfs_tensor x, y = { 0 }, ind = { 0 };
	call c;
	int kind = strcmp(op, "MaxPool") == 0 ? 0 : 1;

	tn_init(&t, op);
	tn_ints(&t, "kernel_shape", 2, k[0], k[1]);
	tn_ints(&t, "strides", 2, st[0], st[1]);
	tn_ints(&t, "pads", 4, pb[0], pb[1], pe[0], pe[1]);
	if (dl[0] != 1)
		tn_ints(&t, "dilations", 2, dl[0], dl[1]);
	if (ceil)
		tn_int(&t, "ceil_mode", 1);
	if (cip)
		tn_int(&t, "count_include_pad", 1);
	if (colmajor)
		tn_int(&t, "storage_order", 1);
	t_rand(&x, shp(4, N, C, H, W));
	int64_t OH, OW;
	int64_t span[2] = { H + pb[0] + pe[0] - ((k[0] - 1) * dl[0] + 1),
			    W + pb[1] + pe[1] - ((k[1] - 1) * dl[1] + 1) };
	if (ceil) {
		OH = (span[0] + st[0] - 1) / st[0] + 1;
		OW = (span[1] + st[1] - 1) / st[1] + 1;
		if ((OH - 1) * st[0] >= H + pb[0]) OH--;
		if ((OW - 1) * st[1] >= W + pb[1]) OW--;
	} else {
		OH = span[0] / st[0] + 1;
		OW = span[1] / st[1] + 1;
	}
	float *ref = malloc(sizeof(float) * N * C * OH * OW);
	int64_t *rind = malloc(sizeof(int64_t) * N * C * OH * OW);
	for (int64_t pl = 0; pl < N * C; pl++) {
		ref_pool2d(kind, (float *)x.data + pl * H * W, H, W, k, st, dl, pb, pe, cip, OH, OW,
			   ref + pl * OH * OW, rind + pl * OH * OW, colmajor);
		for (int64_t i = 0; i < OH * OW; i++)
			rind[pl * OH * OW + i] += pl * H * W;
	}
	if (nhwc) {
		float *tmp = malloc(x.nbytes);
		to_nhwc(x.data, tmp, N, C, H * W);
		memcpy(x.data, tmp, x.nbytes);
		free(tmp);
		x.layout = MFS_LAYOUT_NHWC;
		y.layout = MFS_LAYOUT_NHWC;
	}
	mfs_tensor *in[] = { &x }, *out[] = { &y, with_ind ? &ind : NULL };
	t.node.n_outputs = with_ind ? 2 : 1;
	char *onames[2] = { (char *)"y", (char *)"i" };
	t.node.outputs = onames;
	call_setup(&c, &t, opset, in, 1, out, 2);
	int rc = call_run(&c);
	if (rc)
		print_error("%s\n", c.err.msg);
	assert_int_equal(rc, 0);
	assert_int_equal(y.shape.dims[2], OH);
	assert_int_equal(y.shape.dims[3], OW);
	if (nhwc) {
		float *tmp = malloc(sizeof(float) * N * C * OH * OW);
		to_nhwc(ref, tmp, N, C, OH * OW);
		free(ref);
		ref = tmp;
	}
	assert_close(y.data, ref, N * C * OH * OW, 1e-5f);
	if (with_ind) {
		assert_int_equal(ind.dtype, MFS_DT_INT64);
		for (int64_t i = 0; i < N * C * OH * OW; i++)
			assert_int_equal(((int64_t *)ind.data)[i], rind[i]);
	}
	call_done(&c);
	free(ref);
	free(rind);
	mfs_tensor_release(&x);
	mfs_tensor_release(&y);
	mfs_tensor_release(&ind);
}

static void test_maxpool(void **st)
{
	(void)st;
	pool_check("MaxPool", 12, false, false, false, false, false);
	pool_check("MaxPool", 12, false, true, false, false, true);
	pool_check("MaxPool", 12, false, true, true, false, false);
	pool_check("MaxPool", 12, true, false, false, false, true);
	pool_check("MaxPool", 12, true, true, false, false, false);
}

static void test_avgpool(void **st)
{
	(void)st;
	pool_check("AveragePool", 11, false, false, false, false, false);
	pool_check("AveragePool", 11, false, false, false, true, false);
	pool_check("AveragePool", 11, false, false, false, true, true);
	pool_check("AveragePool", 19, false, false, false, false, true);
	pool_check("AveragePool", 11, true, false, false, true, true);
	pool_check("AveragePool", 19, true, false, false, false, false);
}

static void test_global_pools(void **st)
{
	(void)st;
	const int64_t N = 2, S = 12;
	const char *ops[] = { "GlobalAveragePool", "GlobalMaxPool" };
	/* 300 channels: more than one of the NHWC path's channel blocks */
	for (int64_t C = 5; C <= 300; C += 295)
	for (int oi = 0; oi < 2; oi++)
		for (int nhwc = 0; nhwc < 2; nhwc++) {
			tnode t;
			mfs_tensor x, y = { 0 };
			call c;
			tn_init(&t, ops[oi]);
			t_rand(&x, shp(4, N, C, 3L, 4L));
			float ref[2 * 300];
			for (int64_t pl = 0; pl < N * C; pl++) {
				const float *xp = (float *)x.data + pl * S;
				double acc = 0;
				float mx = -INFINITY;
				for (int64_t i = 0; i < S; i++) {
					acc += xp[i];
					mx = xp[i] > mx ? xp[i] : mx;
				}
				ref[pl] = oi == 0 ? (float)(acc / S) : mx;
			}
			if (nhwc) {
				float *tmp = malloc(x.nbytes);
				to_nhwc(x.data, tmp, N, C, S);
				memcpy(x.data, tmp, x.nbytes);
				free(tmp);
				x.layout = y.layout = MFS_LAYOUT_NHWC;
			}
			mfs_tensor *in[] = { &x }, *out[] = { &y };
			call_setup(&c, &t, 13, in, 1, out, 1);
			assert_int_equal(call_run(&c), 0);
			assert_int_equal(y.shape.rank, 4);
			assert_int_equal(y.shape.dims[1], C);
			assert_int_equal(y.shape.dims[2], 1);
			assert_close(y.data, ref, N * C, 1e-5f);
			call_done(&c);
			mfs_tensor_release(&x);
			mfs_tensor_release(&y);
		}
}

static void expect_error(tnode *t, int64_t opset, mfs_tensor **in, int n_in, int code,
			 const char *needle)
{
	mfs_tensor y = { 0 };
	mfs_tensor *out[] = { &y };
	call c;
	call_setup(&c, t, opset, in, n_in, out, 1);
	int rc = call_run(&c);
	if (rc != -code || !strstr(c.err.msg, needle))
		print_error("rc %d, message '%s'\n", rc, c.err.msg);
	assert_int_equal(rc, -code);
	assert_non_null(strstr(c.err.msg, needle));
	call_done(&c);
	mfs_tensor_release(&y);
}

static void test_pool_bad(void **st)
{
	(void)st;
	tnode t;
	mfs_tensor x;
	mfs_tensor *in[] = { &x };

	t_rand(&x, shp(4, 1L, 2L, 5L, 5L));
	tn_init(&t, "MaxPool");
	expect_error(&t, 12, in, 1, EINVAL, "kernel_shape is required");
	tn_init(&t, "MaxPool");
	tn_ints(&t, "kernel_shape", 2, 2L, 2L);
	tn_ints(&t, "dilations", 2, 2L, 2L);
	expect_error(&t, 8, in, 1, EINVAL, "dilations");
	tn_init(&t, "AveragePool");
	tn_ints(&t, "kernel_shape", 2, 2L, 2L);
	tn_int(&t, "ceil_mode", 1);
	expect_error(&t, 7, in, 1, EINVAL, "ceil_mode");
	tn_init(&t, "AveragePool");
	tn_ints(&t, "kernel_shape", 2, 7L, 2L);
	expect_error(&t, 11, in, 1, EINVAL, "smaller than the window");
	tn_init(&t, "MaxPool");
	tn_ints(&t, "kernel_shape", 3, 2L, 2L, 2L);
	expect_error(&t, 12, in, 1, EINVAL, "kernel_shape");
	tn_init(&t, "LRN");
	expect_error(&t, 13, in, 1, EINVAL, "size");
	mfs_tensor_release(&x);
	/* An empty spatial dim whose padded windows would still make an
	 * output (found by fuzz_engine: X's data is NULL then). */
	t_alloc(&x, MFS_DT_FLOAT, shp(4, 1L, 2L, 0L, 3L));
	tn_init(&t, "MaxPool");
	tn_ints(&t, "kernel_shape", 2, 1L, 1L);
	tn_ints(&t, "pads", 4, 1L, 0L, 1L, 0L);
	expect_error(&t, 12, in, 1, EINVAL, "empty spatial dim");
	mfs_tensor_release(&x);
}

/* ---- BatchNormalization, InstanceNormalization, LRN --------------------- */

static void test_batchnorm(void **st)
{
	(void)st;
	const int64_t N = 2, C = 4, S = 6;
	for (int nhwc = 0; nhwc < 2; nhwc++) {
		tnode t;
		mfs_tensor x, sc, b, mean, var, y = { 0 };
		call c;
		tn_init(&t, "BatchNormalization");
		tn_float(&t, "epsilon", 1e-3f);
		t_rand(&x, shp(4, N, C, 2L, 3L));
		t_rand(&sc, shp(1, C));
		t_rand(&b, shp(1, C));
		t_rand(&mean, shp(1, C));
		t_rand(&var, shp(1, C));
		for (int i = 0; i < C; i++)
			((float *)var.data)[i] = fabsf(((float *)var.data)[i]);
		float ref[N * C * S];
		for (int64_t n = 0; n < N; n++)
			for (int64_t ch = 0; ch < C; ch++)
				for (int64_t i = 0; i < S; i++) {
					int64_t o = (n * C + ch) * S + i;
					ref[o] = (((float *)x.data)[o] - ((float *)mean.data)[ch]) /
						 sqrtf(((float *)var.data)[ch] + 1e-3f) * ((float *)sc.data)[ch] +
						 ((float *)b.data)[ch];
				}
		float *refp = ref, tmpr[N * C * S];
		if (nhwc) {
			float *tmp = malloc(x.nbytes);
			to_nhwc(x.data, tmp, N, C, S);
			memcpy(x.data, tmp, x.nbytes);
			free(tmp);
			to_nhwc(ref, tmpr, N, C, S);
			refp = tmpr;
			x.layout = y.layout = MFS_LAYOUT_NHWC;
		}
		mfs_tensor *in[] = { &x, &sc, &b, &mean, &var }, *out[] = { &y };
		call_setup(&c, &t, 15, in, 5, out, 1);
		assert_int_equal(call_run(&c), 0);
		assert_close(y.data, refp, N * C * S, 1e-4f);
		call_done(&c);
		/* statistics of the wrong size */
		mfs_tensor bad;
		t_rand(&bad, shp(1, C + 1));
		mfs_tensor *in2[] = { &x, &sc, &b, &bad, &var };
		expect_error(&t, 15, in2, 5, EINVAL, "one per channel");
		mfs_tensor_release(&bad);
		mfs_tensor *ins[] = { &x, &sc, &b, &mean, &var };
		for (int i = 0; i < 5; i++)
			mfs_tensor_release(ins[i]);
		mfs_tensor_release(&y);
	}
}

static void test_instancenorm_lrn(void **st)
{
	(void)st;
	const int64_t N = 2, C = 5, S = 7;
	tnode t;
	mfs_tensor x, sc, b, y = { 0 };
	call c;
	float ref[N * C * S];

	t_rand(&x, shp(3, N, C, S));
	t_rand(&sc, shp(1, C));
	t_rand(&b, shp(1, C));
	const float *xd = x.data;
	for (int64_t pl = 0; pl < N * C; pl++) {
		double m = 0, v = 0;
		for (int64_t i = 0; i < S; i++)
			m += xd[pl * S + i];
		m /= S;
		for (int64_t i = 0; i < S; i++)
			v += (xd[pl * S + i] - m) * (xd[pl * S + i] - m);
		v /= S;
		for (int64_t i = 0; i < S; i++)
			ref[pl * S + i] = (float)((xd[pl * S + i] - m) / sqrt(v + 1e-5)) *
					  ((float *)sc.data)[pl % C] + ((float *)b.data)[pl % C];
	}
	tn_init(&t, "InstanceNormalization");
	mfs_tensor *in[] = { &x, &sc, &b }, *out[] = { &y };
	call_setup(&c, &t, 6, in, 3, out, 1);
	assert_int_equal(call_run(&c), 0);
	assert_close(y.data, ref, N * C * S, 1e-4f);
	call_done(&c);

	/* LRN size 3 */
	for (int64_t n = 0; n < N; n++)
		for (int64_t ch = 0; ch < C; ch++)
			for (int64_t i = 0; i < S; i++) {
				double sq = 0;
				for (int64_t k = ch - 1; k <= ch + 1; k++)
					if (k >= 0 && k < C)
						sq += xd[(n * C + k) * S + i] * xd[(n * C + k) * S + i];
				ref[(n * C + ch) * S + i] = (float)(xd[(n * C + ch) * S + i] /
					pow(2.0 + 0.5 / 3 * sq, 0.75));
			}
	tn_init(&t, "LRN");
	tn_int(&t, "size", 3);
	tn_float(&t, "alpha", 0.5f);
	tn_float(&t, "bias", 2.0f);
	call_setup(&c, &t, 13, in, 1, out, 1);
	assert_int_equal(call_run(&c), 0);
	assert_close(y.data, ref, N * C * S, 1e-4f);
	call_done(&c);
	mfs_tensor_release(&x);
	mfs_tensor_release(&sc);
	mfs_tensor_release(&b);
	mfs_tensor_release(&y);
}

/* ---- ConvTranspose ------------------------------------------------------ */

static void test_conv_transpose(void **st)
{
	(void)st;
	const int64_t N = 2, C = 4, M = 6, G = 2, H = 4, W = 5;
	const int64_t k[2] = { 3, 2 }, s[2] = { 2, 3 }, d[2] = { 1, 2 };
	const int64_t pb[2] = { 1, 0 }, pe[2] = { 0, 1 }, op[2] = { 1, 0 };
	tnode t;
	mfs_tensor x, w, b, y = { 0 };
	call c;

	tn_init(&t, "ConvTranspose");
	tn_int(&t, "group", G);
	tn_ints(&t, "strides", 2, s[0], s[1]);
	tn_ints(&t, "dilations", 2, d[0], d[1]);
	tn_ints(&t, "pads", 4, pb[0], pb[1], pe[0], pe[1]);
	tn_ints(&t, "output_padding", 2, op[0], op[1]);
	t_rand(&x, shp(4, N, C, H, W));
	t_rand(&w, shp(4, C, M / G, k[0], k[1]));
	t_rand(&b, shp(1, M));
	int64_t OH = s[0] * (H - 1) + op[0] + (k[0] - 1) * d[0] + 1 - pb[0] - pe[0];
	int64_t OW = s[1] * (W - 1) + op[1] + (k[1] - 1) * d[1] + 1 - pb[1] - pe[1];
	double *acc = calloc((size_t)(N * M * OH * OW), sizeof(double));
	const float *xd = x.data, *wd = w.data, *bd = b.data;
	for (int64_t n = 0; n < N; n++)
		for (int64_t ci = 0; ci < C; ci++) {
			int64_t g = ci / (C / G);
			for (int64_t mm = 0; mm < M / G; mm++)
				for (int64_t ih = 0; ih < H; ih++)
					for (int64_t iw = 0; iw < W; iw++)
						for (int64_t kh = 0; kh < k[0]; kh++)
							for (int64_t kw = 0; kw < k[1]; kw++) {
								int64_t oh = ih * s[0] - pb[0] + kh * d[0];
								int64_t ow = iw * s[1] - pb[1] + kw * d[1];
								if (oh < 0 || oh >= OH || ow < 0 || ow >= OW)
									continue;
								acc[((n * M + g * (M / G) + mm) * OH + oh) * OW + ow] +=
									(double)xd[((n * C + ci) * H + ih) * W + iw] *
									wd[((ci * (M / G) + mm) * k[0] + kh) * k[1] + kw];
							}
		}
	float *ref = malloc(sizeof(float) * N * M * OH * OW);
	for (int64_t i = 0; i < N * M * OH * OW; i++)
		ref[i] = (float)(acc[i] + bd[(i / (OH * OW)) % M]);
	mfs_tensor *in[] = { &x, &w, &b }, *out[] = { &y };
	call_setup(&c, &t, 11, in, 3, out, 1);
	int rc = call_run(&c);
	if (rc)
		print_error("%s\n", c.err.msg);
	assert_int_equal(rc, 0);
	assert_int_equal(y.shape.dims[2], OH);
	assert_int_equal(y.shape.dims[3], OW);
	assert_close(y.data, ref, N * M * OH * OW, 1e-4f);
	call_done(&c);
	free(acc);
	free(ref);
	mfs_tensor_release(&x);
	mfs_tensor_release(&w);
	mfs_tensor_release(&b);
	mfs_tensor_release(&y);
}

/* ---- quantized ops, Einsum ---------------------------------------------- */

static void test_matmul_integer(void **st)
{
	(void)st;
	const int64_t M = 3, K = 4, N = 2;
	tnode t;
	mfs_tensor a, b, za, zb, y = { 0 };
	call c;

	tn_init(&t, "MatMulInteger");
	t_alloc(&a, MFS_DT_UINT8, shp(2, M, K));
	t_alloc(&b, MFS_DT_INT8, shp(2, K, N));
	t_alloc(&za, MFS_DT_UINT8, shp(1, M));     /* per row */
	t_alloc(&zb, MFS_DT_INT8, shp(0));         /* scalar */
	uint8_t *ad = a.data, *zad = za.data;
	int8_t *bd = b.data, *zbd = zb.data;
	for (int i = 0; i < M * K; i++)
		ad[i] = (uint8_t)(i * 37 % 256);
	for (int i = 0; i < K * N; i++)
		bd[i] = (int8_t)(i * 53 % 256 - 128);
	for (int i = 0; i < M; i++)
		zad[i] = (uint8_t)(100 + i);
	zbd[0] = -3;
	mfs_tensor *in[] = { &a, &b, &za, &zb }, *out[] = { &y };
	call_setup(&c, &t, 10, in, 4, out, 1);
	assert_int_equal(call_run(&c), 0);
	assert_int_equal(y.dtype, MFS_DT_INT32);
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			int32_t s = 0;
			for (int p = 0; p < K; p++)
				s += (ad[i * K + p] - zad[i]) * (bd[p * N + j] - zbd[0]);
			assert_int_equal(((int32_t *)y.data)[i * N + j], s);
		}
	call_done(&c);
	/* a zero point of the wrong type */
	mfs_tensor *bad[] = { &a, &b, &zb };
	expect_error(&t, 10, bad, 3, EINVAL, "a_zero_point");
	mfs_tensor_release(&a);
	mfs_tensor_release(&b);
	mfs_tensor_release(&za);
	mfs_tensor_release(&zb);
	mfs_tensor_release(&y);
}

static void test_conv_integer(void **st)
{
	(void)st;
	tnode t;
	mfs_tensor x, w, xz, y = { 0 };
	call c;

	tn_init(&t, "ConvInteger");
	tn_ints(&t, "pads", 4, 1L, 1L, 1L, 1L);
	t_alloc(&x, MFS_DT_UINT8, shp(4, 1L, 1L, 3L, 3L));
	t_alloc(&w, MFS_DT_UINT8, shp(4, 1L, 1L, 2L, 2L));
	t_alloc(&xz, MFS_DT_UINT8, shp(0));
	uint8_t *xd = x.data, *wd = w.data;
	for (int i = 0; i < 9; i++)
		xd[i] = (uint8_t)(i + 2);
	for (int i = 0; i < 4; i++)
		wd[i] = 1;
	((uint8_t *)xz.data)[0] = 1;
	mfs_tensor *in[] = { &x, &w, &xz }, *out[] = { &y };
	call_setup(&c, &t, 10, in, 3, out, 1);
	assert_int_equal(call_run(&c), 0);
	assert_int_equal(y.shape.dims[2], 4);
	/* the ONNX spec's example: padding counts as the zero point */
	const int32_t want[16] = { 1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9 };
	for (int i = 0; i < 16; i++)
		assert_int_equal(((int32_t *)y.data)[i], want[i]);
	call_done(&c);
	mfs_tensor_release(&x);
	mfs_tensor_release(&w);
	mfs_tensor_release(&xz);
	mfs_tensor_release(&y);
}

static void test_qlinear_matmul(void **st)
{
	(void)st;
	tnode t;
	mfs_tensor a, as, az, b, bs, bz, ys, yz, y = { 0 };
	call c;

	tn_init(&t, "QLinearMatMul");
	t_alloc(&a, MFS_DT_UINT8, shp(2, 1L, 2L));
	t_alloc(&b, MFS_DT_UINT8, shp(2, 2L, 1L));
	t_alloc(&az, MFS_DT_UINT8, shp(0));
	t_alloc(&bz, MFS_DT_UINT8, shp(0));
	t_alloc(&yz, MFS_DT_UINT8, shp(0));
	t_alloc(&as, MFS_DT_FLOAT, shp(0));
	t_alloc(&bs, MFS_DT_FLOAT, shp(0));
	t_alloc(&ys, MFS_DT_FLOAT, shp(0));
	((uint8_t *)a.data)[0] = 3;  ((uint8_t *)a.data)[1] = 2;
	((uint8_t *)b.data)[0] = 1;  ((uint8_t *)b.data)[1] = 0;
	((float *)as.data)[0] = 1.0f;
	((float *)bs.data)[0] = 1.0f;
	((float *)ys.data)[0] = 2.0f;    /* 3/2 = 1.5 -> 2 (half to even) */
	((uint8_t *)yz.data)[0] = 10;
	mfs_tensor *in[] = { &a, &as, &az, &b, &bs, &bz, &ys, &yz }, *out[] = { &y };
	call_setup(&c, &t, 10, in, 8, out, 1);
	assert_int_equal(call_run(&c), 0);
	assert_int_equal(((uint8_t *)y.data)[0], 12);
	call_done(&c);
	((float *)ys.data)[0] = 0.001f;  /* saturates at 255 */
	call_setup(&c, &t, 10, in, 8, out, 1);
	assert_int_equal(call_run(&c), 0);
	assert_int_equal(((uint8_t *)y.data)[0], 255);
	call_done(&c);
	for (int i = 0; i < 8; i++)
		mfs_tensor_release(in[i]);
	mfs_tensor_release(&y);
}

static void einsum_case(const char *eq, mfs_tensor **in, int n_in, const float *want,
			int64_t n_want, int want_rank)
{
	tnode t;
	mfs_tensor y = { 0 };
	mfs_tensor *out[] = { &y };
	call c;
	tn_init(&t, "Einsum");
	tn_str(&t, "equation", eq);
	call_setup(&c, &t, 12, in, n_in, out, 1);
	int rc = call_run(&c);
	if (rc)
		print_error("%s: %s\n", eq, c.err.msg);
	assert_int_equal(rc, 0);
	assert_int_equal(y.shape.rank, want_rank);
	assert_int_equal(mfs_shape_numel(&y.shape), n_want);
	assert_close(y.data, want, n_want, 1e-5f);
	call_done(&c);
	mfs_tensor_release(&y);
}

static void test_einsum(void **st)
{
	(void)st;
	mfs_tensor a, b;
	t_rand(&a, shp(3, 2L, 3L, 4L));
	t_rand(&b, shp(3, 2L, 4L, 5L));
	float want[2 * 3 * 5];
	for (int bt = 0; bt < 2; bt++)
		ref_matmul((float *)a.data + bt * 12, (float *)b.data + bt * 20, want + bt * 15, 3, 4, 5);
	mfs_tensor *ab[] = { &a, &b };
	einsum_case("bij,bjk->bik", ab, 2, want, 30, 3);
	einsum_case("...ij, ...jk", ab, 2, want, 30, 3);   /* implicit, ellipsis */

	/* diagonal and transpose-sum */
	mfs_tensor sq;
	t_rand(&sq, shp(2, 3L, 3L));
	const float *q = sq.data;
	float diag[3] = { q[0], q[4], q[8] }, tr = q[0] + q[4] + q[8];
	mfs_tensor *one[] = { &sq };
	einsum_case("ii->i", one, 1, diag, 3, 1);
	einsum_case("ii", one, 1, &tr, 1, 0);
	float colsum[3];
	for (int j = 0; j < 3; j++)
		colsum[j] = q[j] + q[3 + j] + q[6 + j];
	einsum_case("ij->j", one, 1, colsum, 3, 1);

	/* bad equations are errors */
	tnode t;
	tn_init(&t, "Einsum");
	tn_str(&t, "equation", "ij,jk->ik");
	expect_error(&t, 12, one, 1, EINVAL, "terms");
	tn_init(&t, "Einsum");
	tn_str(&t, "equation", "ij->iz");
	expect_error(&t, 12, one, 1, EINVAL, "appears in no input");
	tn_init(&t, "Einsum");
	tn_str(&t, "equation", "ijk->i");
	expect_error(&t, 12, one, 1, EINVAL, "rank");
	mfs_tensor_release(&a);
	mfs_tensor_release(&b);
	mfs_tensor_release(&sq);
}

static void test_quantize(void **st)
{
	(void)st;
	tnode t;
	mfs_tensor x, sc, zp, y = { 0 }, back = { 0 };
	call c;

	/* per-axis (axis 1) int8, ties to even, saturation */
	t_alloc(&x, MFS_DT_FLOAT, shp(2, 2L, 3L));
	t_alloc(&sc, MFS_DT_FLOAT, shp(1, 3L));
	t_alloc(&zp, MFS_DT_INT8, shp(1, 3L));
	const float xv[6] = { 2.5f, 3.5f, -2.5f, 1000.0f, -1000.0f, 0.0f };
	memcpy(x.data, xv, sizeof(xv));
	float *sv = sc.data;
	sv[0] = 1.0f; sv[1] = 1.0f; sv[2] = 0.5f;
	int8_t *zv = zp.data;
	zv[0] = 0; zv[1] = 1; zv[2] = -1;
	tn_init(&t, "QuantizeLinear");
	mfs_tensor *in[] = { &x, &sc, &zp }, *out[] = { &y };
	call_setup(&c, &t, 13, in, 3, out, 1);
	assert_int_equal(call_run(&c), 0);
	assert_int_equal(y.dtype, MFS_DT_INT8);
	const int8_t want[6] = { 2, 5, -6, 127, -128, -1 };
	for (int i = 0; i < 6; i++)
		assert_int_equal(((int8_t *)y.data)[i], want[i]);
	call_done(&c);

	/* and back */
	tn_init(&t, "DequantizeLinear");
	mfs_tensor *in2[] = { &y, &sc, &zp }, *out2[] = { &back };
	call_setup(&c, &t, 13, in2, 3, out2, 1);
	assert_int_equal(call_run(&c), 0);
	const float wantf[6] = { 2.0f, 4.0f, -2.5f, 127.0f, -129.0f, 0.0f };
	assert_close(back.data, wantf, 6, 1e-6f);
	call_done(&c);

	/* per-axis scale before opset 13 is an error */
	tn_init(&t, "QuantizeLinear");
	expect_error(&t, 10, in, 3, EINVAL, "opset 13");
	mfs_tensor_release(&x);
	mfs_tensor_release(&sc);
	mfs_tensor_release(&zp);
	mfs_tensor_release(&y);
	mfs_tensor_release(&back);
}

static void test_maxunpool(void **st)
{
	(void)st;
	tnode t;
	mfs_tensor x, ind, y = { 0 };
	call c;

	tn_init(&t, "MaxUnpool");
	tn_ints(&t, "kernel_shape", 2, 2L, 2L);
	tn_ints(&t, "strides", 2, 2L, 2L);
	t_rand(&x, shp(4, 1L, 2L, 2L, 2L));
	t_alloc(&ind, MFS_DT_INT64, shp(4, 1L, 2L, 2L, 2L));
	int64_t *iv = ind.data;
	const int64_t pos[8] = { 0, 3, 9, 15, 16, 18, 24, 31 };
	memcpy(iv, pos, sizeof(pos));
	mfs_tensor *in[] = { &x, &ind }, *out[] = { &y };
	call_setup(&c, &t, 11, in, 2, out, 1);
	assert_int_equal(call_run(&c), 0);
	assert_int_equal(y.shape.dims[2], 4);
	assert_int_equal(y.shape.dims[3], 4);
	float want[32] = { 0 };
	for (int i = 0; i < 8; i++)
		want[pos[i]] = ((float *)x.data)[i];
	assert_close(y.data, want, 32, 0.0f);
	call_done(&c);
	iv[7] = 32;   /* one past the end */
	expect_error(&t, 11, in, 2, EINVAL, "outside the output");
	mfs_tensor_release(&x);
	mfs_tensor_release(&ind);
	mfs_tensor_release(&y);
}

/* Bidirectional RNN with sequence lengths against a naive loop: the
 * reverse direction starts at each entry's own last step; Y is zero past
 * an entry's length. */
static void test_rnn_bidirectional(void **st)
{
	(void)st;
	enum { T = 3, B = 2, I = 2, H = 3 };
	tnode t;
	mfs_tensor x, w, r, b, sl, y = { 0 }, yh = { 0 };
	call c;

	tn_init(&t, "RNN");
	tn_int(&t, "hidden_size", H);
	tn_str(&t, "direction", "bidirectional");
	tn_float(&t, "clip", 0.9f);
	char *onames[2] = { (char *)"y", (char *)"yh" };
	t.node.outputs = onames;
	t.node.n_outputs = 2;
	t_rand(&x, shp(3, (int64_t)T, (int64_t)B, (int64_t)I));
	t_rand(&w, shp(3, 2L, (int64_t)H, (int64_t)I));
	t_rand(&r, shp(3, 2L, (int64_t)H, (int64_t)H));
	t_rand(&b, shp(2, 2L, (int64_t)(2 * H)));
	t_alloc(&sl, MFS_DT_INT32, shp(1, (int64_t)B));
	((int32_t *)sl.data)[0] = 3;
	((int32_t *)sl.data)[1] = 1;
	mfs_tensor *in[] = { &x, &w, &r, &b, &sl }, *out[] = { &y, &yh };
	call_setup(&c, &t, 14, in, 5, out, 2);
	int rc = call_run(&c);
	if (rc)
		print_error("%s\n", c.err.msg);
	assert_int_equal(rc, 0);

	float ry[T][2][B][H] = { 0 }, rh[2][B][H];
	const float *X = x.data, *W = w.data, *R = r.data, *Bb = b.data;
	for (int d = 0; d < 2; d++)
		for (int bi = 0; bi < B; bi++) {
			int len = ((int32_t *)sl.data)[bi];
			float h[H] = { 0 };
			for (int s2 = 0; s2 < len; s2++) {
				int tt = d ? len - 1 - s2 : s2;
				float hn[H];
				for (int k = 0; k < H; k++) {
					double a = Bb[d * 2 * H + k] + Bb[d * 2 * H + H + k];
					for (int q = 0; q < I; q++)
						a += X[(tt * B + bi) * I + q] * W[(d * H + k) * I + q];
					for (int q = 0; q < H; q++)
						a += h[q] * R[(d * H + k) * H + q];
					a = a < -0.9 ? -0.9 : a > 0.9 ? 0.9 : a;
					hn[k] = (float)tanh(a);
				}
				memcpy(h, hn, sizeof(h));
				memcpy(ry[tt][d][bi], h, sizeof(h));
			}
			memcpy(rh[d][bi], h, sizeof(h));
		}
	assert_close(y.data, &ry[0][0][0][0], T * 2 * B * H, 1e-5f);
	assert_close(yh.data, &rh[0][0][0], 2 * B * H, 1e-5f);
	call_done(&c);

	/* wrong W shape */
	mfs_tensor *bad[] = { &x, &r, &r };
	expect_error(&t, 14, bad, 3, EINVAL, "W must have shape");
	mfs_tensor *ins[] = { &x, &w, &r, &b, &sl, &y, &yh };
	for (int i = 0; i < 7; i++)
		mfs_tensor_release(ins[i]);
}

/* RoiAlign: on a linear ramp image, bilinear averages are exact, so an
 * ROI inside the image gives the ramp at each bin's centre. */
static void test_roialign(void **st)
{
	(void)st;
	tnode t;
	mfs_tensor x, rois, bi, y = { 0 };
	call c;

	tn_init(&t, "RoiAlign");
	tn_int(&t, "output_height", 2);
	tn_int(&t, "output_width", 2);
	tn_int(&t, "sampling_ratio", 2);
	t_alloc(&x, MFS_DT_FLOAT, shp(4, 2L, 1L, 8L, 8L));
	for (int n = 0; n < 2; n++)
		for (int i = 0; i < 8; i++)
			for (int j = 0; j < 8; j++)
				((float *)x.data)[(n * 8 + i) * 8 + j] = (float)(n * 100 + 2 * i + j);
	t_alloc(&rois, MFS_DT_FLOAT, shp(2, 1L, 4L));
	const float roi[4] = { 1.5f, 2.5f, 5.5f, 6.5f };   /* half_pixel: [1,2]..[5,6] */
	memcpy(rois.data, roi, sizeof(roi));
	t_alloc(&bi, MFS_DT_INT64, shp(1, 1L));
	((int64_t *)bi.data)[0] = 1;
	mfs_tensor *in[] = { &x, &rois, &bi }, *out[] = { &y };
	call_setup(&c, &t, 16, in, 3, out, 1);
	assert_int_equal(call_run(&c), 0);
	/* bin centres: x in {2, 4}, y in {3, 5}; value 100 + 2y + x */
	const float want[4] = { 100 + 6 + 2, 100 + 6 + 4, 100 + 10 + 2, 100 + 10 + 4 };
	assert_close(y.data, want, 4, 1e-5f);
	call_done(&c);
	((int64_t *)bi.data)[0] = 2;
	expect_error(&t, 16, in, 3, EINVAL, "batch_indices");
	mfs_tensor_release(&x);
	mfs_tensor_release(&rois);
	mfs_tensor_release(&bi);
	mfs_tensor_release(&y);
}

/* An empty tensor (a zero dim) may carry any other dims: the size
 * arithmetic of ConvTranspose and RoiAlign must refuse a result that
 * overflows int64 instead of wrapping (UBSan found both under op_fuzz). */
static void test_empty_input_size_overflow(void **st)
{
	(void)st;
	const int64_t huge = (int64_t)1 << 62;
	tnode t;
	mfs_tensor x, w, rois, bi;

	tn_init(&t, "ConvTranspose");
	tn_ints(&t, "strides", 2, (int64_t)4, (int64_t)1);
	t_alloc(&x, MFS_DT_FLOAT, shp(4, 0L, 1L, huge, 1L));
	t_rand(&w, shp(4, 1L, 1L, 1L, 1L));
	mfs_tensor *ct_in[] = { &x, &w };
	expect_error(&t, 11, ct_in, 2, EINVAL, "output size overflows");
	tn_init(&t, "ConvTranspose");
	tn_str(&t, "auto_pad", "SAME_UPPER");
	tn_ints(&t, "strides", 2, (int64_t)8, (int64_t)1);
	mfs_tensor_release(&x);
	/* 8 * (2^60 - 1) + 1 fits, 8 * 2^60 (the SAME output size) does not */
	t_alloc(&x, MFS_DT_FLOAT, shp(4, 0L, 1L, huge / 4, 1L));
	expect_error(&t, 11, ct_in, 2, EINVAL, "output size overflows");
	mfs_tensor_release(&x);
	mfs_tensor_release(&w);

	tn_init(&t, "RoiAlign");
	t_alloc(&x, MFS_DT_FLOAT, shp(4, 0L, 1L, huge, 4L));
	t_alloc(&rois, MFS_DT_FLOAT, shp(2, 0L, 4L));
	t_alloc(&bi, MFS_DT_INT64, shp(1, 0L));
	mfs_tensor *ra_in[] = { &x, &rois, &bi };
	expect_error(&t, 16, ra_in, 3, EINVAL, "spatial size overflows");
	mfs_tensor_release(&x);
	mfs_tensor_release(&rois);
	mfs_tensor_release(&bi);
}

/* ---- random attributes and shapes: errors are fine, crashes are not ---- */

static int64_t rnd(int64_t lo, int64_t hi)
{
	frand();
	return lo + (int64_t)(rng_state % (uint64_t)(hi - lo + 1));
}

static void random_window_attrs(tnode *t, int nsp, bool kernel)
{
	int idx;
	onnx_attr *a;
	if (kernel || rnd(0, 3) == 0) {
		idx = t->node.n_attrs;
		a = tn_attr(t, "kernel_shape", ONNX_ATTR_INTS);
		int n = rnd(0, 5) == 0 ? (int)rnd(0, 3) : nsp;
		for (int i = 0; i < n; i++)
			t->ints[idx][i] = rnd(-1, 5);
		a->ints = t->ints[idx];
		a->n_ints = (size_t)n;
	}
	const char *names[] = { "strides", "dilations", "pads", "output_padding" };
	for (int k = 0; k < 4; k++) {
		if (rnd(0, 2) == 0)
			continue;
		idx = t->node.n_attrs;
		a = tn_attr(t, names[k], ONNX_ATTR_INTS);
		int n = (k == 2 ? 2 : 1) * nsp;
		if (rnd(0, 6) == 0)
			n = (int)rnd(0, 6);
		for (int i = 0; i < n; i++)
			t->ints[idx][i] = rnd(k == 2 ? -1 : 0, 4);
		a->ints = t->ints[idx];
		a->n_ints = (size_t)n;
	}
	if (rnd(0, 3) == 0) {
		const char *ap[] = { "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", "BOGUS" };
		tn_str(t, "auto_pad", ap[rnd(0, 4)]);
	}
	if (rnd(0, 2) == 0)
		tn_int(t, "ceil_mode", rnd(0, 2));
	if (rnd(0, 2) == 0)
		tn_int(t, "group", rnd(0, 3));
	if (rnd(0, 3) == 0)
		tn_int(t, "count_include_pad", rnd(0, 1));
	if (rnd(0, 3) == 0)
		tn_int(t, "storage_order", rnd(0, 2));
}

static void test_random_no_crash(void **st)
{
	(void)st;
	const char *ops[] = { "Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool",
			      "GlobalAveragePool", "BatchNormalization", "ConvInteger" };
	int ok = 0, refused = 0;
	for (int iter = 0; iter < 600; iter++) {
		const char *op = ops[iter % 8];
		int nsp = (int)rnd(1, 3);
		if (rnd(0, 10) == 0)
			nsp = (int)rnd(0, 5);
		tnode t;
		tn_init(&t, op);
		random_window_attrs(&t, nsp, !strcmp(op, "MaxPool") || !strcmp(op, "AveragePool") ||
				    !strcmp(op, "LpPool"));
		mfs_shape xs = { .rank = 2 + nsp, .dims = { rnd(1, 2), rnd(1, 4) } };
		mfs_shape ws = { .rank = 2 + nsp, .dims = { rnd(1, 4), rnd(1, 4) } };
		for (int i = 0; i < nsp; i++) {
			xs.dims[2 + i] = rnd(1, 6);
			ws.dims[2 + i] = rnd(1, 4);
		}
		if (xs.rank > MFS_MAX_RANK)
			continue;
		bool q = !strcmp(op, "ConvInteger");
		mfs_tensor x, w, b[4], y = { 0 }, y2 = { 0 };
		t_alloc(&x, q ? MFS_DT_UINT8 : MFS_DT_FLOAT, xs);
		t_alloc(&w, q ? MFS_DT_UINT8 : MFS_DT_FLOAT, ws);
		mfs_tensor *in[5] = { &x, &w };
		int n_in = 2;
		if (!strcmp(op, "BatchNormalization")) {
			for (int i = 0; i < 4; i++) {
				t_alloc(&b[i], MFS_DT_FLOAT, shp(1, rnd(0, 1) ? xs.dims[1] : rnd(1, 4)));
				((float *)b[i].data)[0] = 1.0f;
				in[1 + i] = &b[i];
			}
			n_in = 5;
		} else {
			for (int i = 0; i < 4; i++)
				t_alloc(&b[i], MFS_DT_FLOAT, shp(1, 1L));
			if (strncmp(op, "Conv", 4))
				n_in = 1;
		}
		mfs_tensor *out[2] = { &y, rnd(0, 3) == 0 ? &y2 : NULL };
		char *onames[2] = { (char *)"y", (char *)"i" };
		t.node.outputs = onames;
		t.node.n_outputs = !strcmp(op, "MaxPool") && out[1] ? 2 : 1;
		call c;
		call_setup(&c, &t, (int64_t)rnd(10, 19), in, n_in, out, t.node.n_outputs);
		if (!c.def) {
			call_done(&c);
		} else {
			int rc = call_run(&c);
			if (rc == 0)
				ok++;
			else {
				refused++;
				assert_true(rc < 0);
				assert_true(c.err.msg[0] != 0);
			}
			call_done(&c);
		}
		mfs_tensor_release(&x);
		mfs_tensor_release(&w);
		for (int i = 0; i < 4; i++)
			mfs_tensor_release(&b[i]);
		mfs_tensor_release(&y);
		mfs_tensor_release(&y2);
	}
	/* Both outcomes happen: the generator reaches valid and invalid cases. */
	assert_true(ok > 50);
	assert_true(refused > 50);

	/* MatMul and Gemm on random ranks and extents, zeros included;
	 * results checked against the naive product when accepted. */
	ok = refused = 0;
	for (int iter = 0; iter < 400; iter++) {
		bool gemm = iter & 1;
		tnode t;
		tn_init(&t, gemm ? "Gemm" : "MatMul");
		if (gemm) {
			tn_int(&t, "transA", rnd(0, 1));
			tn_int(&t, "transB", rnd(0, 1));
		}
		mfs_shape as = { .rank = (int)rnd(gemm ? 1 : 1, gemm ? 3 : 4) };
		mfs_shape bs = { .rank = (int)rnd(1, gemm ? 3 : 4) };
		for (int i = 0; i < as.rank; i++)
			as.dims[i] = rnd(0, 3);
		for (int i = 0; i < bs.rank; i++)
			bs.dims[i] = rnd(0, 3);
		if (!gemm && rnd(0, 1)) /* make the inner dims agree more often */
			bs.dims[bs.rank >= 2 ? bs.rank - 2 : 0] = as.dims[as.rank - 1];
		mfs_tensor a, b, y = { 0 };
		t_rand(&a, as);
		t_rand(&b, bs);
		mfs_tensor *in[] = { &a, &b }, *out[] = { &y };
		call c;
		call_setup(&c, &t, 13, in, 2, out, 1);
		int rc = call_run(&c);
		if (rc == 0) {
			ok++;
			if (!gemm && as.rank == 2 && bs.rank == 2) {
				float ref[9];
				ref_matmul(a.data, b.data, ref, as.dims[0], as.dims[1], bs.dims[1]);
				assert_close(y.data, ref, as.dims[0] * bs.dims[1], 1e-5f);
			}
		} else {
			refused++;
			assert_true(c.err.msg[0] != 0);
		}
		call_done(&c);
		mfs_tensor_release(&a);
		mfs_tensor_release(&b);
		mfs_tensor_release(&y);
	}
	assert_true(ok > 20);
	assert_true(refused > 20);
}

/* Gemm on int32 (a loop) and MatMul on double (dgemm) against loops. */
static void test_gemm_int_matmul_double(void **st)
{
	(void)st;
	tnode t;
	mfs_tensor a, b, cc, y = { 0 };
	call c;

	tn_init(&t, "Gemm");
	tn_int(&t, "transA", 1);
	tn_float(&t, "alpha", 2.0f);
	tn_float(&t, "beta", 3.0f);
	t_alloc(&a, MFS_DT_INT32, shp(2, 3L, 2L));    /* A' is 2x3 */
	t_alloc(&b, MFS_DT_INT32, shp(2, 3L, 4L));
	t_alloc(&cc, MFS_DT_INT32, shp(1, 4L));
	int32_t *ad = a.data, *bd = b.data, *cd = cc.data;
	for (int i = 0; i < 6; i++)
		ad[i] = i - 2;
	for (int i = 0; i < 12; i++)
		bd[i] = 3 * i - 7;
	for (int i = 0; i < 4; i++)
		cd[i] = i * 10;
	mfs_tensor *in[] = { &a, &b, &cc }, *out[] = { &y };
	call_setup(&c, &t, 13, in, 3, out, 1);
	assert_int_equal(call_run(&c), 0);
	assert_int_equal(y.dtype, MFS_DT_INT32);
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 4; j++) {
			int32_t s2 = 0;
			for (int p = 0; p < 3; p++)
				s2 += ad[p * 2 + i] * bd[p * 4 + j];
			assert_int_equal(((int32_t *)y.data)[i * 4 + j], 2 * s2 + 3 * cd[j]);
		}
	call_done(&c);
	mfs_tensor_release(&a);
	mfs_tensor_release(&b);
	mfs_tensor_release(&cc);

	tn_init(&t, "MatMul");
	t_alloc(&a, MFS_DT_DOUBLE, shp(3, 2L, 2L, 3L));
	t_alloc(&b, MFS_DT_DOUBLE, shp(2, 3L, 2L));
	double *da = a.data, *db = b.data;
	for (int i = 0; i < 12; i++)
		da[i] = 0.5 * i - 1.25;
	for (int i = 0; i < 6; i++)
		db[i] = 1.0 / (i + 1);
	mfs_tensor *in2[] = { &a, &b };
	call_setup(&c, &t, 13, in2, 2, out, 1);
	assert_int_equal(call_run(&c), 0);
	assert_int_equal(y.dtype, MFS_DT_DOUBLE);
	for (int r = 0; r < 4; r++)
		for (int j = 0; j < 2; j++) {
			double s2 = 0;
			for (int p = 0; p < 3; p++)
				s2 += da[r * 3 + p] * db[p * 2 + j];
			assert_true(fabs(((double *)y.data)[r * 2 + j] - s2) < 1e-12);
		}
	call_done(&c);
	mfs_tensor_release(&a);
	mfs_tensor_release(&b);
	mfs_tensor_release(&y);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matmul_2d_and_batched),
		cmocka_unit_test(test_matmul_vectors),
		cmocka_unit_test(test_matmul_int64),
		cmocka_unit_test(test_matmul_openblas),
		cmocka_unit_test(test_gemm),
		cmocka_unit_test(test_sgemm_measured),
		cmocka_unit_test(test_sgemm_split),
		cmocka_unit_test(test_blas_one_row),
		cmocka_unit_test(test_gemm_bad),
		cmocka_unit_test(test_gemm_int_matmul_double),
		cmocka_unit_test(test_attention_layout_bad),
		cmocka_unit_test(test_conv_onednn),
		cmocka_unit_test(test_conv_im2col),
		cmocka_unit_test(test_conv_paths_agree),
		cmocka_unit_test(test_conv_depthwise_kernel),
		cmocka_unit_test(test_conv_bad),
		cmocka_unit_test(test_conv_weight_constness),
		cmocka_unit_test(test_conv_threads),
		cmocka_unit_test(test_rebuild_for_threads),
		cmocka_unit_test(test_dense_variants_per_rows),
		cmocka_unit_test(test_fused_conv),
		cmocka_unit_test(test_fused_conv_block16),
		cmocka_unit_test(test_conv_grouped_block16),
		cmocka_unit_test(test_fused_conv_over_z),
		cmocka_unit_test(test_conv_winograd),
		cmocka_unit_test(test_conv_winograd_batch_changes),
		cmocka_unit_test(test_conv_batch_variants),
		cmocka_unit_test(test_maxpool),
		cmocka_unit_test(test_avgpool),
		cmocka_unit_test(test_global_pools),
		cmocka_unit_test(test_pool_bad),
		cmocka_unit_test(test_batchnorm),
		cmocka_unit_test(test_instancenorm_lrn),
		cmocka_unit_test(test_conv_transpose),
		cmocka_unit_test(test_matmul_integer),
		cmocka_unit_test(test_conv_integer),
		cmocka_unit_test(test_qlinear_matmul),
		cmocka_unit_test(test_einsum),
		cmocka_unit_test(test_quantize),
		cmocka_unit_test(test_maxunpool),
		cmocka_unit_test(test_rnn_bidirectional),
		cmocka_unit_test(test_roialign),
		cmocka_unit_test(test_empty_input_size_overflow),
		cmocka_unit_test(test_random_no_crash),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

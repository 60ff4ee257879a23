/* Unit tests for exec/cpu/node_threads.c: the work a node is counted as, and
 * the threads that work is worth. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "node_threads.h"

/* A node of type op with up to four inputs and one output, shapes only. */
typedef struct tctx {
	onnx_node node;
	onnx_attr attr;
	mfs_tensor t[5];
	mfs_tensor *in[4], *out[1];
	mfs_op_ctx ctx;
} tctx;

static void shape(mfs_tensor *t, int rank, const int64_t *dims)
{
	memset(t, 0, sizeof(*t));
	t->dtype = MFS_DT_FLOAT;
	t->shape.rank = rank;
	memcpy(t->shape.dims, dims, sizeof(int64_t) * (size_t)rank);
}

/* in_ranks/in_dims: n_in shapes of up to 4 dims each; out likewise. */
static mfs_op_ctx *make(tctx *c, const char *op, int n_in, const int *ranks,
			const int64_t dims[][4], int out_rank, const int64_t *out_dims)
{
	memset(c, 0, sizeof(*c));
	c->node.op_type = (char *)op;
	c->node.domain = (char *)"";
	for (int i = 0; i < n_in; i++) {
		shape(&c->t[i], ranks[i], dims[i]);
		c->in[i] = &c->t[i];
	}
	shape(&c->t[4], out_rank, out_dims);
	c->out[0] = &c->t[4];
	c->ctx.node = &c->node;
	c->ctx.n_in = n_in;
	c->ctx.in = c->in;
	c->ctx.n_out = 1;
	c->ctx.out = c->out;
	return &c->ctx;
}

/* ctx, its node given the one int attribute name = v */
static mfs_op_ctx *with_int(mfs_op_ctx *ctx, tctx *c, const char *name, int64_t v)
{
	c->attr.name = (char *)name;
	c->attr.type = ONNX_ATTR_INT;
	c->attr.i = v;
	c->node.attrs = &c->attr;
	c->node.n_attrs = 1;
	return ctx;
}

static void test_threads_from_work(void **st)
{
	(void)st;
	/* one thread up to a grain, else the whole team: never a count in
	 * between (libgomp would end and re-create the surplus threads) */
	for (int partial = 0; partial < 2; partial++) {
		assert_int_equal(mfs_node_threads(1, true, 1000, 16, partial), 1);
		assert_int_equal(mfs_node_threads(1000, true, 1000, 16, partial), 1);
		assert_int_equal(mfs_node_threads(16000, true, 1000, 16, partial), 16);
		assert_int_equal(mfs_node_threads(INT64_MAX, true, 1000, 16, partial), 16);
		/* anything but a product: one thread or all, partial or not */
		assert_int_equal(mfs_node_threads(1000, false, 1000, 16, partial), 1);
		assert_int_equal(mfs_node_threads(1001, false, 1000, 16, partial), 16);
		assert_int_equal(mfs_node_threads(3500, false, 1000, 16, partial), 16);
		assert_int_equal(mfs_node_threads(1001, false, 1000, 2, partial), 2);
		/* grain 0: no cap; no threads: one */
		assert_int_equal(mfs_node_threads(5, true, 0, 16, partial), 16);
		assert_int_equal(mfs_node_threads(5, false, 0, 16, partial), 16);
		assert_int_equal(mfs_node_threads(5000, true, 1000, 0, partial), 1);
	}
	assert_int_equal(mfs_node_threads(1001, true, 1000, 16, false), 16);
	assert_int_equal(mfs_node_threads(3500, true, 1000, 16, false), 16);
	/* a product's grain scales with the team (grain / 16 per thread): on
	 * 2 threads 125; anything else keeps the grain */
	assert_int_equal(mfs_node_threads(125, true, 1000, 2, false), 1);
	assert_int_equal(mfs_node_threads(126, true, 1000, 2, false), 2);
	assert_int_equal(mfs_node_threads(1000, false, 1000, 2, false), 1);
	assert_int_equal(mfs_node_threads(250, true, 1000, 4, false), 1);
	assert_int_equal(mfs_node_threads(251, true, 1000, 4, false), 4);
	assert_int_equal(mfs_node_threads(1, true, 1, 2, false), 1);   /* never a grain of 0 */
	assert_int_equal(mfs_node_threads(2, true, 1, 2, false), 2);
	assert_int_equal(mfs_node_threads(INT64_MAX / 2, true, INT64_MAX, 16, false), 1);
	/* MFS_TEAMS=partial: a product's work / grain threads, rounded up */
	assert_int_equal(mfs_node_threads(1001, true, 1000, 16, true), 2);
	assert_int_equal(mfs_node_threads(3500, true, 1000, 16, true), 4);
}

static void test_partial_from_env(void **st)
{
	(void)st;
	unsetenv("MFS_TEAMS");
	assert_false(mfs_thread_partial());
	setenv("MFS_TEAMS", "partial", 1);
	assert_true(mfs_thread_partial());
	setenv("MFS_TEAMS", "whole", 1);
	assert_false(mfs_thread_partial());
	unsetenv("MFS_TEAMS");
}

/* The work of a node that must count as a product. */
static int64_t product(mfs_op_ctx *ctx)
{
	bool is_product = false;
	int64_t w = mfs_node_work(ctx, &is_product);
	assert_true(is_product);
	return w;
}

/* The work of a node that must count by its elements. */
static int64_t elements(mfs_op_ctx *ctx)
{
	bool is_product = true;
	int64_t w = mfs_node_work(ctx, &is_product);
	assert_false(is_product);
	return w;
}

static void test_product_work(void **st)
{
	(void)st;
	tctx c;
	static const int r2[] = { 2, 2 }, r3[] = { 3, 3, 3 };
	/* MatMul and Dense [128, 256] x [256, 512]: out x K */
	static const int64_t mm[][4] = { { 128, 256 }, { 256, 512 } }, mo[] = { 128, 512 };
	assert_int_equal(product(make(&c, "MatMul", 2, r2, mm, 2, mo)), 128LL * 512 * 256);
	assert_int_equal(product(make(&c, "Dense", 2, r2, mm, 2, mo)), 128LL * 512 * 256);
	/* Gemm with transA: A [K, M] = [256, 128] */
	static const int64_t gt[][4] = { { 256, 128 }, { 256, 512 } };
	assert_int_equal(product(with_int(make(&c, "Gemm", 2, r2, gt, 2, mo), &c, "transA", 1)),
			 128LL * 512 * 256);
	/* Conv W [64, 32, 3, 3], out [1, 64, 10, 10]: 288 per output */
	static const int64_t cv[][4] = { { 1, 32, 12, 12 }, { 64, 32, 3, 3 } }, co[] = { 1, 64, 10, 10 };
	static const int rc[] = { 4, 4 };
	assert_int_equal(product(make(&c, "FusedConv", 2, rc, cv, 4, co)), 6400LL * 288);
	/* depthwise W [64, 1, 3, 3]: 9 per output, counted MFS_DEPTHWISE_WORK
	 * times; a grouped W [64, 2, 3, 3] is not depthwise */
	static const int64_t dw[][4] = { { 1, 64, 12, 12 }, { 64, 1, 3, 3 } };
	assert_int_equal(product(make(&c, "Conv", 2, rc, dw, 4, co)), 6400LL * 9 * MFS_DEPTHWISE_WORK);
	static const int64_t gw[][4] = { { 1, 64, 12, 12 }, { 64, 2, 3, 3 } };
	assert_int_equal(product(make(&c, "Conv", 2, rc, gw, 4, co)), 6400LL * 18);
	/* ConvTranspose W [32, 16, 3, 3]: input values x 144 */
	static const int64_t ct[][4] = { { 1, 32, 5, 5 }, { 32, 16, 3, 3 } }, cto[] = { 1, 16, 7, 7 };
	assert_int_equal(product(make(&c, "ConvTranspose", 2, rc, ct, 4, cto)), 800LL * 144);
	/* Attention Q [2, 128, 64], Kt [2, 64, 96], V [2, 96, 64]: 2 T per output */
	static const int64_t at[][4] = { { 2, 128, 64 }, { 2, 64, 96 }, { 2, 96, 64 } }, ao[] = { 2, 128, 64 };
	assert_int_equal(product(make(&c, "Attention", 3, r3, at, 3, ao)), 2LL * 128 * 64 * 2 * 96);
	/* layout 1: Q [2, 128, 4, 16], K [2, 96, 4, 16], V [2, 96, 4, 16]: T
	 * is K's dim 1 */
	static const int r4[] = { 4, 4, 4 };
	static const int64_t ah[][4] = { { 2, 128, 4, 16 }, { 2, 96, 4, 16 }, { 2, 96, 4, 16 } };
	static const int64_t aho[] = { 2, 128, 4, 16 };
	assert_int_equal(product(with_int(make(&c, "Attention", 3, r4, ah, 4, aho), &c, "layout", 1)),
			 2LL * 128 * 64 * 2 * 96);
	/* LSTM X [10, 4, 8], W [1, 64, 8], R [1, 64, 16]: per step W and R */
	static const int64_t ls[][4] = { { 10, 4, 8 }, { 1, 64, 8 }, { 1, 64, 16 } }, lo[] = { 10, 1, 4, 16 };
	assert_int_equal(product(make(&c, "LSTM", 3, r3, ls, 4, lo)), 40LL * (512 + 1024));
}

static void test_elementwise_work(void **st)
{
	(void)st;
	tctx c;
	static const int r1[] = { 2, 2 };
	/* Add [100, 30] + [30]: the larger side, 3000 elements */
	static const int64_t ad[][4] = { { 100, 30 }, { 30 } }, ao[] = { 100, 30 };
	static const int ra[] = { 2, 1 };
	assert_int_equal(elements(make(&c, "Add", 2, ra, ad, 2, ao)), 3000LL * MFS_ELEM_WORK);
	/* a reduction reads more than it writes: its input counts */
	static const int64_t gp[][4] = { { 1, 2048, 7, 7 } }, go[] = { 1, 2048, 1, 1 };
	static const int r4[] = { 4 };
	assert_int_equal(elements(make(&c, "GlobalAveragePool", 1, r4, gp, 4, go)),
			 2048LL * 49 * MFS_ELEM_WORK);
	/* nothing at all still counts as one */
	static const int64_t z[][4] = { { 0, 3 }, { 0, 3 } }, zo[] = { 0, 3 };
	assert_int_equal(elements(make(&c, "Mul", 2, r1, z, 2, zo)), 1);
}

static void test_grain_from_environment(void **st)
{
	(void)st;
	unsetenv("MFS_THREAD_GRAIN");
	assert_int_equal(mfs_thread_grain(), MFS_THREAD_GRAIN_DEFAULT);
	setenv("MFS_THREAD_GRAIN", "0", 1);
	assert_int_equal(mfs_thread_grain(), 0);
	setenv("MFS_THREAD_GRAIN", "123456", 1);
	assert_int_equal(mfs_thread_grain(), 123456);
	setenv("MFS_THREAD_GRAIN", "12x", 1);
	assert_int_equal(mfs_thread_grain(), MFS_THREAD_GRAIN_DEFAULT);
	setenv("MFS_THREAD_GRAIN", "-5", 1);
	assert_int_equal(mfs_thread_grain(), MFS_THREAD_GRAIN_DEFAULT);
	unsetenv("MFS_THREAD_GRAIN");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads_from_work),
		cmocka_unit_test(test_partial_from_env),
		cmocka_unit_test(test_product_work),
		cmocka_unit_test(test_elementwise_work),
		cmocka_unit_test(test_grain_from_environment),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

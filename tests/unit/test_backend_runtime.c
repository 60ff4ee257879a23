/* Unit tests for exec/runtime/backend_runtime.c: the block pool both backends use
 * (replay, best fit, regrow, pinned blocks, failures), when a node's
 * prepare() runs again, and how a node error is named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend_runtime.h"
#include "engine.h"

/* A pool over plain malloc that counts live blocks and can be told to
 * fail the next allocation. */
typedef struct fake_mem {
	int live;
	int fail_next;         /* status to fail with, 0 = succeed */
} fake_mem;

static void *fake_alloc(void *arg, size_t size, int *status)
{
	fake_mem *f = arg;
	if (f->fail_next) {
		*status = f->fail_next;
		f->fail_next = 0;
		return NULL;
	}
	f->live++;
	return malloc(size ? size : 1);
}

static void fake_release(void *arg, void *mem)
{
	fake_mem *f = arg;
	f->live--;
	free(mem);
}

/* Each pool test gets a fresh pool over fake_mem; teardown checks that
 * releasing the pool gave back every block. */
typedef struct fx {
	fake_mem f;
	uint64_t allocs;
	mfs_pool p;
	int status;
} fx;

static int fx_setup(void **st)
{
	fx *x = calloc(1, sizeof(*x));
	if (!x)
		return -1;
	x->p = (mfs_pool){ .alloc = fake_alloc, .release = fake_release,
			   .arg = &x->f, .oom_status = -12345,
			   .n_allocs = &x->allocs };
	*st = x;
	return 0;
}

static int fx_teardown(void **st)
{
	fx *x = *st;
	int live;
	mfs_pool_release(&x->p);
	live = x->f.live;
	free(x);
	return live ? -1 : 0;
}

static mfs_block *take(fx *x, size_t size)
{
	return mfs_pool_take(&x->p, size, &x->status);
}

static void test_pool_replays_assignment(void **st)
{
	fx *x = *st;
	mfs_block *a = take(x, 100), *b = take(x, 200), *c;

	assert_non_null(a);
	assert_non_null(b);
	assert_ptr_not_equal(a, b);
	assert_int_equal(a->refs, 1);
	mfs_block_put(a);
	c = take(x, 50);                      /* best fit: a is free */
	assert_ptr_equal(c, a);
	mfs_block_put(b);
	mfs_block_put(c);
	assert_int_equal(x->allocs, 2);

	/* The same requests again: the same blocks, in the same order, and
	 * nothing allocated. */
	mfs_pool_new_run(&x->p);
	assert_ptr_equal(take(x, 100), a);
	assert_ptr_equal(take(x, 200), b);
	mfs_block_put(a);
	assert_ptr_equal(take(x, 50), a);
	assert_int_equal(x->allocs, 2);
}

static void test_pool_regrows_largest_free(void **st)
{
	fx *x = *st;
	mfs_block *a = take(x, 10), *b = take(x, 20), *big;

	mfs_block_put(a);
	mfs_block_put(b);
	/* Nothing free is large enough: the largest free block (b) grows
	 * instead of a third block being added, to a quarter more. */
	big = take(x, 1000);
	assert_ptr_equal(big, b);
	assert_int_equal(big->cap, 1250);
	assert_int_equal(x->p.n_blocks, 2);
	assert_int_equal(x->f.live, 2);
	assert_int_equal(x->allocs, 3);
}

/* A value one step longer at every run (a decoder's key/value cache):
 * the regrow's quarter covers the next runs, so 20 runs of a value
 * growing 1% a run allocate twice (its block, one regrow), not 20
 * times. */
static void test_pool_growing_value(void **st)
{
	fx *x = *st;

	for (int run = 0; run < 20; run++) {
		mfs_pool_new_run(&x->p);
		mfs_block *b = take(x, 1000 + 10 * (size_t)run);
		assert_non_null(b);
		assert_true(b->cap >= 1000 + 10 * (size_t)run);
		mfs_block_put(b);
	}
	assert_int_equal(x->p.n_blocks, 1);
	assert_int_equal(x->allocs, 2);
}

static void test_pool_pinned_never_reused(void **st)
{
	fx *x = *st;
	mfs_block *a = take(x, 64);

	a->pinned = true;
	mfs_block_put(a);                     /* pinned: keeps its reference */
	assert_int_equal(a->refs, 1);
	a->refs = 0;                          /* even when marked free */
	mfs_pool_new_run(&x->p);
	assert_ptr_not_equal(take(x, 64), a); /* the hint for request 0 is a */
	assert_int_equal(x->p.n_blocks, 2);
}

static void test_pool_failures(void **st)
{
	fx *x = *st;
	mfs_block *a;

	x->f.fail_next = 77;
	assert_null(take(x, 64));
	assert_int_equal(x->status, 77);
	/* A failed regrow keeps the old block and reports the status. */
	a = take(x, 8);
	assert_non_null(a);
	assert_int_equal(x->status, 0);
	mfs_block_put(a);
	x->f.fail_next = 78;
	assert_null(take(x, 4096));
	assert_int_equal(x->status, 78);
	assert_int_equal(a->cap, 8);
	assert_int_equal(a->refs, 0);
	assert_int_equal(x->allocs, 1);
}

/* Without callbacks the pool serves 64-byte aligned host memory. */
static void test_pool_host_default(void **st)
{
	uint64_t allocs = 0;
	mfs_pool p = { .oom_status = ENOMEM, .n_allocs = &allocs };
	mfs_block *a;
	int status;
	(void)st;

	a = mfs_pool_take(&p, 100, &status);
	assert_non_null(a);
	assert_int_equal((uintptr_t)a->mem % 64, 0);
	memset(a->mem, 1, 100);
	assert_int_equal(allocs, 1);
	mfs_pool_release(&p);
	assert_int_equal(p.n_blocks, 0);
}

/* ---- nodes ---- */

static int prepare_calls;

static int count_prepare(mfs_op_ctx *ctx)
{
	(void)ctx;
	prepare_calls++;
	return 0;
}

static int fail_run(mfs_op_ctx *ctx)
{
	(void)ctx;
	return -EINVAL;
}

static void test_prepare_reruns_on_change(void **st)
{
	mfs_op_def def = { .prepare = count_prepare };
	onnx_node on = { .op_type = "Foo" };
	mfs_node nd = { .onnx = &on, .def = &def, .n_in = 2, .n_out = 1 };
	mfs_tensor x = { .dtype = MFS_DT_FLOAT, .shape = { .rank = 1, .dims = { 3 } } };
	mfs_node_rt rt = { 0 };
	mfs_error err = { 0 };
	uint64_t prepares = 0;
	mfs_op_ctx ctx;
	(void)st;

	assert_int_equal(mfs_node_rt_init(&rt, &nd), 0);
	/* op.h's contract: MFS_ARG_PAD NULL entries past n_in. */
	for (int k = nd.n_in; k < nd.n_in + MFS_ARG_PAD; k++)
		assert_null(rt.in[k]);
	ctx = mfs_node_ctx(&nd, &rt, &err);
	assert_ptr_equal(ctx.in, rt.in);
	assert_ptr_equal(ctx.state, &rt.state);
	rt.in[0] = &x;
	prepare_calls = 0;
	assert_int_equal(mfs_node_rt_prepare(&rt, &nd, &ctx, &prepares), 0);
	assert_int_equal(mfs_node_rt_prepare(&rt, &nd, &ctx, &prepares), 0);
	assert_int_equal(prepare_calls, 1);
	x.shape.dims[0] = 4;                  /* shape changed */
	assert_int_equal(mfs_node_rt_prepare(&rt, &nd, &ctx, &prepares), 0);
	assert_int_equal(prepare_calls, 2);
	x.layout = MFS_LAYOUT_NHWC;           /* layout changed */
	assert_int_equal(mfs_node_rt_prepare(&rt, &nd, &ctx, &prepares), 0);
	assert_int_equal(prepare_calls, 3);
	rt.in[1] = &x;                        /* an omitted input appeared */
	assert_int_equal(mfs_node_rt_prepare(&rt, &nd, &ctx, &prepares), 0);
	assert_int_equal(prepare_calls, 4);
	/* Static shapes: prepared once, whatever the inputs say. */
	nd.shapes_static = true;
	x.dtype = MFS_DT_INT32;
	assert_int_equal(mfs_node_rt_prepare(&rt, &nd, &ctx, &prepares), 0);
	assert_int_equal(prepare_calls, 4);
	assert_int_equal(prepares, 4);
	mfs_node_rt_release(&rt, &nd);
	assert_null(rt.in);
}

static int check_outputs_cleared(mfs_op_ctx *ctx)
{
	return ctx->out[0]->data == NULL && ctx->out[0]->nbytes == 0 &&
	       ctx->out[0]->layout == MFS_LAYOUT_PLAIN ? 0 : -EINVAL;
}

static void test_infer_clears_outputs(void **st)
{
	mfs_op_def def = { .infer = check_outputs_cleared };
	float old[4];
	mfs_tensor y = { .data = old, .nbytes = sizeof(old), .layout = MFS_LAYOUT_NHWC };
	mfs_tensor *out[2] = { &y, NULL };
	mfs_op_ctx ctx = { .def = &def, .n_out = 1, .out = out };
	(void)st;

	assert_int_equal(mfs_node_infer(&ctx), 0);
	assert_null(y.data);
}

static void test_node_error_names_node(void **st)
{
	mfs_op_def def = { .run = fail_run };
	char *outs[] = { "y" };
	onnx_node on = { .op_type = "Conv", .name = "", .outputs = outs, .n_outputs = 1 };
	mfs_node nd = { .onnx = &on, .def = &def };
	mfs_error err = { 0 };
	(void)st;

	/* No message from the operator: the errno in words. */
	assert_int_equal(mfs_node_error(&nd, -EINVAL, &err), -EINVAL);
	assert_string_equal(err.msg, "Conv 'y': failed (Invalid argument)");
	/* A message without the node gets it in front, once. */
	mfs_error_clear(&err);
	mfs_fail(&err, EINVAL, "bad axis");
	assert_int_equal(mfs_node_error(&nd, -EINVAL, &err), -EINVAL);
	assert_string_equal(err.msg, "Conv 'y': bad axis");
	assert_int_equal(mfs_node_error(&nd, -EINVAL, &err), -EINVAL);
	assert_string_equal(err.msg, "Conv 'y': bad axis");
	/* A positive or zero rc is not an errno: -EIO. */
	mfs_error_clear(&err);
	assert_int_equal(mfs_node_error(&nd, 1, &err), -EIO);
	mfs_error_clear(&err);
	assert_int_equal(mfs_node_fail(&nd, &err, ENOSPC, "input %d", 3), -ENOSPC);
	assert_string_equal(err.msg, "Conv 'y': input 3");
}

/* ---- mfs_run_graph ---- */

typedef struct trace {
	char log[128];         /* "n0 r5 n1 o0 o1": what ran, in order */
	int fail_node, fail_output;   /* -1: none */
} trace;

static void trace_add(trace *t, char what, int i)
{
	size_t n = strlen(t->log);
	snprintf(t->log + n, sizeof(t->log) - n, "%s%c%d", n ? " " : "", what, i);
}

static int t_node(void *e, int i, mfs_error *err)
{
	trace *t = e;
	trace_add(t, 'n', i);
	return i == t->fail_node ? mfs_fail(err, EIO, "node %d", i) : 0;
}

static void t_release(void *e, int v)
{
	trace_add(e, 'r', v);
}

static int t_output(void *e, int i, mfs_tensor *dst, mfs_error *err)
{
	trace *t = e;
	mfs_shape sh = { .rank = 1, .dims = { 2 } };
	trace_add(t, 'o', i);
	if (i == t->fail_output)
		return mfs_fail(err, EIO, "output %d", i);
	return mfs_tensor_alloc(dst, MFS_DT_FLOAT, &sh, err);
}

static void test_run_graph_order_and_failures(void **st)
{
	static const mfs_run_steps steps = {
		.node = t_node, .release = t_release, .output = t_output,
	};
	int frees0[] = { 5 }, frees1[] = { 6, 7 };
	mfs_node nodes[2] = {
		{ .frees = frees0, .n_frees = 1 },
		{ .frees = frees1, .n_frees = 2 },
	};
	mfs_graph m = { .n_nodes = 2, .nodes = nodes, .n_outputs = 2 };
	mfs_tensor out[2];
	mfs_error err = { 0 };
	trace t = { .fail_node = -1, .fail_output = -1 };
	(void)st;

	memset(out, 0, sizeof(out));
	assert_int_equal(mfs_run_graph(&m, &steps, &t, out, &err), 0);
	assert_string_equal(t.log, "n0 r5 n1 r6 r7 o0 o1");
	assert_non_null(out[0].data);
	assert_non_null(out[1].data);
	mfs_tensor_release(&out[0]);
	mfs_tensor_release(&out[1]);

	/* A failing node stops the run before its frees and the outputs. */
	t = (trace){ .fail_node = 0, .fail_output = -1 };
	assert_int_equal(mfs_run_graph(&m, &steps, &t, out, &err), -EIO);
	assert_string_equal(t.log, "n0");

	/* A failing output releases the outputs already made. */
	t = (trace){ .fail_node = -1, .fail_output = 1 };
	mfs_error_clear(&err);
	assert_int_equal(mfs_run_graph(&m, &steps, &t, out, &err), -EIO);
	assert_null(out[0].data);
}

static void test_aligned_block(void **st)
{
	void *p = mfs_aligned_block(0), *q = mfs_aligned_block(65);
	(void)st;
	assert_non_null(p);
	assert_non_null(q);
	assert_int_equal((uintptr_t)p % 64, 0);
	assert_int_equal((uintptr_t)q % 64, 0);
	free(p);
	free(q);
}

/* Resident tensors, handed-over outputs: a detached block's memory
 * leaves the pool (no later request gets it, the pool no longer frees
 * it), and the request that had it gets a new block in the next run
 * rather than one a later request will want (b stays the replay of
 * request 1); adopted memory becomes a block like any other, handed out
 * again once free and freed with the pool. */
static void test_pool_detach_adopt(void **st)
{
	fx *x = *st;
	mfs_block *a = take(x, 100), *b = take(x, 300);
	size_t cap;
	void *mem = mfs_pool_detach(&x->p, a, &cap);

	assert_non_null(mem);
	assert_int_equal(cap, 100);
	mfs_block_put(b);
	mfs_pool_new_run(&x->p);
	mfs_block *c = take(x, 100);          /* a new block, not b */
	mfs_block *c2 = take(x, 300);         /* the replay: b */
	assert_ptr_not_equal(c, b);
	assert_ptr_not_equal(c->mem, mem);
	assert_ptr_equal(c2, b);
	assert_int_equal(x->allocs, 3);
	mfs_block_put(c);
	mfs_block_put(c2);
	mfs_block *d = mfs_pool_adopt(&x->p, mem, cap);
	assert_non_null(d);
	assert_int_equal(d->refs, 1);
	assert_ptr_equal(d->mem, mem);
	mfs_block_put(d);
	mfs_pool_new_run(&x->p);
	mfs_block *e = take(x, 90);           /* the replay: c, b */
	mfs_block *f = take(x, 290);
	mfs_block *g = take(x, 90);           /* then the adopted block */
	assert_ptr_equal(e, c);
	assert_ptr_equal(f, b);
	assert_ptr_equal(g, d);
	mfs_block_put(e);
	mfs_block_put(f);
	mfs_block_put(g);
	assert_int_equal(x->f.live, 3);       /* teardown frees them */
}

/* The memory budget's hooks (engine.h mfs_engine_set_memory_hooks),
 * counting what a host pool holds. */
static int64_t budget_held;

static int budget_take(uint64_t n)
{
	budget_held += (int64_t)n;
	return 0;
}

static void budget_give(uint64_t n)
{
	budget_held -= (int64_t)n;
}

static size_t big_released;

static void count_big_release(void *p)
{
	big_released++;
	free(p);
}

/* A host pool's detached block (a CPU output handed to the caller)
 * leaves the budget with it, its memory is a free()able aligned block
 * that the caller's mfs_tensor_release frees, on the large-tensor path
 * too (mfs_tensor_set_big_storage); the pool's new block for the
 * request is counted again, and nothing is left counted at the end. */
static void test_pool_host_detach_budget(void **st)
{
	uint64_t allocs = 0;
	mfs_pool p = { .oom_status = ENOMEM, .n_allocs = &allocs };
	int status;
	size_t cap;
	(void)st;

	budget_held = 0;
	big_released = 0;
	mfs_engine_set_memory_hooks(budget_take, budget_give);
	mfs_tensor_set_big_storage(malloc, count_big_release, 1000);
	mfs_block *a = mfs_pool_take(&p, 4000, &status);
	mfs_block *b = mfs_pool_take(&p, 200, &status);
	assert_int_equal(budget_held, 4200);
	mfs_tensor t = { .dtype = MFS_DT_FLOAT, .shape = { .rank = 1, .dims = { 1000 } },
			 .nbytes = 4000, .owns_data = true };
	t.data = mfs_pool_detach(&p, a, &cap);
	assert_int_equal(cap, 4000);
	assert_int_equal((uintptr_t)t.data % 64, 0);
	assert_int_equal(budget_held, 200);
	memset(t.data, 7, t.nbytes);
	mfs_tensor_release(&t);               /* big_release: free() */
	assert_int_equal(big_released, 1);
	mfs_block_put(b);
	mfs_pool_new_run(&p);
	a = mfs_pool_take(&p, 4000, &status); /* a new block, counted */
	assert_non_null(a);
	assert_int_equal(allocs, 3);
	assert_int_equal(budget_held, 4200);
	mfs_block_put(a);
	mfs_pool_release(&p);
	assert_int_equal(budget_held, 0);
	mfs_tensor_set_big_storage(NULL, NULL, 0);
	mfs_engine_set_memory_hooks(NULL, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pool_replays_assignment, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_pool_regrows_largest_free, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_pool_growing_value, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_pool_pinned_never_reused, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_pool_failures, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_pool_detach_adopt, fx_setup, fx_teardown),
		cmocka_unit_test(test_pool_host_default),
		cmocka_unit_test(test_pool_host_detach_budget),
		cmocka_unit_test(test_prepare_reruns_on_change),
		cmocka_unit_test(test_infer_clears_outputs),
		cmocka_unit_test(test_node_error_names_node),
		cmocka_unit_test(test_run_graph_order_and_failures),
		cmocka_unit_test(test_aligned_block),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* backend_runtime.c - see backend_runtime.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_runtime.h"

/* ---- the block pool ---- */

/* The budget host pools take their memory from (engine.h
 * mfs_engine_set_memory_hooks); NULL: none. */
static int (*budget_take)(uint64_t n);
static void (*budget_give)(uint64_t n);

void mfs_engine_set_memory_hooks(int (*take)(uint64_t n), void (*give)(uint64_t n))
{
	budget_take = take;
	budget_give = give;
}

/* *counted: whether the budget took the bytes (a block made before the
 * hooks were set, at load, gives nothing back). */
static void *pool_alloc(mfs_pool *p, size_t size, int *status, bool *counted)
{
	void *mem;

	*counted = false;
	if (p->alloc)
		return p->alloc(p->arg, size, status);
	if (budget_take) {
		if (budget_take(size) < 0) {
			*status = ENOSPC;
			return NULL;
		}
		*counted = true;
	}
	mem = mfs_aligned_block(size);
	if (!mem) {
		if (*counted)
			budget_give(size);
		*counted = false;
		*status = ENOMEM;
	}
	return mem;
}

static void pool_free(mfs_pool *p, mfs_block *b)
{
	if (p->release) {
		p->release(p->arg, b->mem);
		return;
	}
	free(b->mem);
	if (b->counted)
		budget_give(b->cap);
}

/* Best fit among free blocks, else regrow the largest free one; NULL when
 * no block is free or the regrow failed (*status says which: 0 or not). */
static mfs_block *reuse_block(mfs_pool *p, size_t size, int *status)
{
	mfs_block *b = NULL, *largest = NULL;
	void *mem;

	for (int i = 0; i < p->n_blocks; i++) {
		mfs_block *q = p->blocks[i];
		if (q->refs || q->pinned)
			continue;
		if (q->cap >= size && (!b || q->cap < b->cap))
			b = q;
		if (!largest || q->cap > largest->cap)
			largest = q;
	}
	if (b || !largest)
		return b;
	/* Regrow rather than add: contents need not survive.  A quarter
	 * more than asked: a value that grows run after run (a decoder's
	 * key/value cache, one token longer each step) then regrows once in
	 * a few runs, not at every run, each time faulting fresh pages in. */
	bool counted;
	size = size + size / 4 < size ? size : size + size / 4;
	mem = pool_alloc(p, size, status, &counted);
	if (!mem)
		return NULL;
	pool_free(p, largest);
	largest->mem = mem;
	largest->cap = size;
	largest->counted = counted;
	(*p->n_allocs)++;
	return largest;
}

/* Room in p->blocks for one more; false when out of memory. */
static bool room_for_block(mfs_pool *p)
{
	if (p->n_blocks < p->cap_blocks)
		return true;
	int cap = p->cap_blocks ? 2 * p->cap_blocks : 16;
	mfs_block **nb = realloc(p->blocks, (size_t)cap * sizeof(*nb));
	if (!nb)
		return false;
	p->blocks = nb;
	p->cap_blocks = cap;
	return true;
}

static mfs_block *new_block(mfs_pool *p, size_t size, int *status)
{
	mfs_block *b;

	if (!room_for_block(p))
		goto oom;
	b = calloc(1, sizeof(*b));
	if (!b)
		goto oom;
	b->mem = pool_alloc(p, size, status, &b->counted);
	if (!b->mem) {
		free(b);
		return NULL;
	}
	b->cap = size;
	p->blocks[p->n_blocks++] = b;
	(*p->n_allocs)++;
	return b;
oom:
	*status = p->oom_status;
	return NULL;
}

/* Remember that request k got b.  Best effort: without room for the hint
 * the next run only loses the replay. */
static void remember(mfs_pool *p, int k, mfs_block *b)
{
	if (k >= p->cap_hints) {
		int cap = p->cap_hints ? 2 * p->cap_hints : 64;
		mfs_block **nh = realloc(p->hints, (size_t)cap * sizeof(*nh));
		if (nh) {
			memset(nh + p->cap_hints, 0,
			       (size_t)(cap - p->cap_hints) * sizeof(*nh));
			p->hints = nh;
			p->cap_hints = cap;
		}
	}
	if (k < p->cap_hints) {
		p->hints[k] = b;
		if (k >= p->n_hints)
			p->n_hints = k + 1;
	}
}

/* The hint of a request whose block of the last run was detached: that
 * request gets a new block, not a free one a later request of the run
 * will want (taking it would shift the whole replay). */
static mfs_block detached_mark;

mfs_block *mfs_pool_take(mfs_pool *p, size_t size, int *status)
{
	int k = p->seq++;
	mfs_block *b = NULL, *h = k < p->n_hints ? p->hints[k] : NULL;

	*status = 0;
	if (h && h != &detached_mark && !h->refs && !h->pinned && h->cap >= size)
		b = h;
	if (!b && h != &detached_mark)
		b = reuse_block(p, size, status);
	if (!b && !*status)
		b = new_block(p, size, status);
	if (!b)
		return NULL;
	remember(p, k, b);
	b->refs = 1;
	return b;
}

void *mfs_pool_detach(mfs_pool *p, mfs_block *b, size_t *cap)
{
	void *mem = b->mem;
	for (int i = 0; i < p->n_hints; i++)
		if (p->hints[i] == b)
			p->hints[i] = &detached_mark;
	/* host memory leaves the pool's count: the new owner counts it */
	if (!p->release && b->counted)
		budget_give(b->cap);
	for (int i = 0; i < p->n_blocks; i++)
		if (p->blocks[i] == b) {
			p->blocks[i] = p->blocks[--p->n_blocks];
			break;
		}
	*cap = b->cap;
	free(b);
	return mem;
}

mfs_block *mfs_pool_adopt(mfs_pool *p, void *mem, size_t cap)
{
	if (!room_for_block(p))
		return NULL;
	mfs_block *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->mem = mem;
	b->cap = cap;
	b->refs = 1;
	p->blocks[p->n_blocks++] = b;
	return b;
}

void mfs_pool_release(mfs_pool *p)
{
	for (int i = 0; i < p->n_blocks; i++) {
		pool_free(p, p->blocks[i]);
		free(p->blocks[i]);
	}
	free(p->blocks);
	free(p->hints);
	p->blocks = p->hints = NULL;
	p->n_blocks = p->cap_blocks = p->n_hints = p->cap_hints = 0;
}

/* ---- one run ---- */

int mfs_run_graph(const mfs_graph *m, const mfs_run_steps *s, void *e,
		  mfs_tensor *outputs, mfs_error *err)
{
	int rc, done;

	for (int i = 0; i < m->n_nodes; i++) {
		const mfs_node *nd = &m->nodes[i];
		/* Both backends' node loop: the one place to stop a cancelled
		 * run between nodes (engine.h mfs_exec_watch_cancel). */
		if (mfs_run_cancelled())
			return mfs_fail(err, ECANCELED, "the run was cancelled");
		if ((rc = s->node(e, i, err)))
			return rc;
		for (int k = 0; k < nd->n_frees; k++)
			s->release(e, nd->frees[k]);
	}
	for (done = 0; done < m->n_outputs; done++)
		if ((rc = s->output(e, done, &outputs[done], err))) {
			while (done--)
				mfs_tensor_release(&outputs[done]);
			return rc;
		}
	return 0;
}

/* ---- one node at run time ---- */

int mfs_node_rt_init(mfs_node_rt *rt, const mfs_node *nd)
{
	rt->in = calloc((size_t)nd->n_in + MFS_ARG_PAD, sizeof(*rt->in));
	rt->out = calloc((size_t)nd->n_out + MFS_ARG_PAD, sizeof(*rt->out));
	rt->sig = calloc((size_t)nd->n_in + 1, sizeof(*rt->sig));
	return rt->in && rt->out && rt->sig ? 0 : -ENOMEM;
}

void mfs_node_rt_release(mfs_node_rt *rt, const mfs_node *nd)
{
	if (rt->state && nd->def->release)
		nd->def->release(rt->state);
	free(rt->in);
	free(rt->out);
	free(rt->sig);
	memset(rt, 0, sizeof(*rt));
}

mfs_op_ctx mfs_node_ctx(const mfs_node *nd, mfs_node_rt *rt, mfs_error *err)
{
	return (mfs_op_ctx){
		.def = nd->def, .node = nd->onnx, .opset = nd->opset,
		.n_in = nd->n_in, .in = rt->in, .n_out = nd->n_out, .out = rt->out,
		.state = &rt->state, .err = err,
		.bodies = (const mfs_graph *const *)nd->bodies,
		.n_bodies = nd->n_bodies,
	};
}

static bool sig_changed(const mfs_node_rt *rt, int n_in)
{
	for (int k = 0; k < n_in; k++) {
		const mfs_tensor *t = rt->in[k];
		const mfs_in_sig *s = &rt->sig[k];
		if (!t) {
			if (s->dtype != MFS_DT_UNDEFINED)
				return true;
			continue;
		}
		if (s->dtype != t->dtype || s->layout != t->layout ||
		    !mfs_shape_equal(&s->shape, &t->shape))
			return true;
	}
	return false;
}

static void sig_save(mfs_node_rt *rt, int n_in)
{
	for (int k = 0; k < n_in; k++) {
		const mfs_tensor *t = rt->in[k];
		mfs_in_sig *s = &rt->sig[k];
		if (!t) {
			s->dtype = MFS_DT_UNDEFINED;
			continue;
		}
		s->dtype = t->dtype;
		s->layout = t->layout;
		s->shape = t->shape;
	}
}

int mfs_node_rt_prepare(mfs_node_rt *rt, const mfs_node *nd, mfs_op_ctx *ctx,
			uint64_t *prepares)
{
	int rc;

	if (!nd->def->prepare ||
	    (rt->prepared && (nd->shapes_static || !sig_changed(rt, nd->n_in))))
		return 0;
	rc = nd->def->prepare(ctx);
	(*prepares)++;
	if (rc)
		return rc;
	rt->prepared = true;
	sig_save(rt, nd->n_in);
	return 0;
}

int mfs_node_infer(mfs_op_ctx *ctx)
{
	for (int k = 0; k < ctx->n_out; k++)
		if (ctx->out[k]) {
			ctx->out[k]->data = NULL;
			ctx->out[k]->nbytes = 0;
			ctx->out[k]->layout = MFS_LAYOUT_PLAIN;
		}
	return ctx->def->infer(ctx);
}

int mfs_node_error(const mfs_node *nd, int rc, mfs_error *err)
{
	char head[256];

	if (rc >= 0)
		rc = -EIO;
	if (!err->code)
		return mfs_fail(err, -rc, "%s '%s': failed (%s)", nd->onnx->op_type,
				onnx_node_label(nd->onnx), strerror(-rc));
	snprintf(head, sizeof(head), "%s '%s'", nd->onnx->op_type,
		 onnx_node_label(nd->onnx));
	if (strncmp(err->msg, head, strlen(head)) != 0)
		mfs_error_prefix(err, "%s: ", head);
	return rc;
}

int mfs_node_fail(const mfs_node *nd, mfs_error *err, int code,
		  const char *fmt, ...)
{
	char msg[MFS_ERROR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return mfs_fail(err, code, "%s '%s': %s", nd->onnx->op_type,
			onnx_node_label(nd->onnx), msg);
}

void *mfs_aligned_block(size_t size)
{
	size_t sz = (size + 63) & ~(size_t)63;
	return aligned_alloc(64, sz ? sz : 64);
}

/* subgraph.c - body graphs run by an operator (see subgraph.h). */
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "subgraph.h"

struct mfs_body_exec {
	const mfs_graph *body;
	mfs_exec *exec;
	mfs_tensor *inputs;        /* own arguments, then enclosing values */
};

const mfs_graph *mfs_op_body(const mfs_op_ctx *ctx, const char *attr)
{
	int b = 0;

	for (int a = 0; a < ctx->node->n_attrs; a++) {
		if (!ctx->node->attrs[a].g)
			continue;
		if (!strcmp(ctx->node->attrs[a].name, attr))
			return b < ctx->n_bodies ? ctx->bodies[b] : NULL;
		b++;
	}
	return NULL;
}

int mfs_body_n_inputs(const mfs_graph *body) { return body->n_formal; }
int mfs_body_n_outputs(const mfs_graph *body) { return body->n_outputs; }

const mfs_io_desc *mfs_body_input(const mfs_graph *body, int i)
{
	return i >= 0 && i < body->n_formal ? &body->inputs[i] : NULL;
}

const mfs_io_desc *mfs_body_output(const mfs_graph *body, int i)
{
	return mfs_graph_output(body, i);
}

int mfs_body_exec_new(const mfs_graph *body, mfs_body_exec **out,
		      mfs_error *err)
{
	mfs_body_exec *b = calloc(1, sizeof(*b));
	int rc;

	*out = NULL;
	if (!b || !(b->inputs = calloc((size_t)body->n_inputs + 1,
				       sizeof(*b->inputs)))) {
		free(b);
		return mfs_fail(err, ENOMEM, "out of memory");
	}
	b->body = body;
	rc = mfs_exec_new(body, mfs_backend_cpu(), &b->exec, err);
	if (rc) {
		free(b->inputs);
		free(b);
		return rc;
	}
	*out = b;
	return 0;
}

void mfs_body_exec_free(mfs_body_exec *b)
{
	if (!b)
		return;
	mfs_exec_free(b->exec);
	free(b->inputs);
	free(b);
}

int mfs_body_exec_run(mfs_body_exec *b, mfs_op_ctx *ctx,
		      const mfs_tensor *args, mfs_tensor *outputs)
{
	const mfs_graph *body = b->body;

	for (int i = 0; i < body->n_formal; i++) {
		b->inputs[i] = args[i];
		b->inputs[i].owns_data = false;
	}
	for (int j = 0; j < body->n_inputs - body->n_formal; j++) {
		int slot = body->outer_slot[j];
		const mfs_tensor *t = slot < ctx->n_in ? ctx->in[slot] : NULL;
		if (!t)
			return mfs_op_fail(ctx, EIO, "the body's value '%s' is missing",
					   body->inputs[body->n_formal + j].name);
		b->inputs[body->n_formal + j] = *t;
		b->inputs[body->n_formal + j].owns_data = false;
	}
	return mfs_exec_run_nested(b->exec, b->inputs, outputs, ctx->err);
}

/* The bytes before axis (outer count), at it (n) and after it (inner). */
static void axis_split(const mfs_shape *s, int axis, size_t esize,
		       size_t *outer, size_t *inner)
{
	*outer = 1;
	*inner = esize;
	for (int d = 0; d < axis; d++)
		*outer *= (size_t)s->dims[d];
	for (int d = axis + 1; d < s->rank; d++)
		*inner *= (size_t)s->dims[d];
}

void mfs_axis_take(const mfs_tensor *src, int axis, int64_t i, mfs_tensor *dst)
{
	size_t outer, inner, n = (size_t)src->shape.dims[axis];
	const char *s = src->data;
	char *d = dst->data;

	axis_split(&src->shape, axis, mfs_dtype_size(src->dtype), &outer, &inner);
	if (!inner)
		return;
	for (size_t o = 0; o < outer; o++)
		memcpy(d + o * inner, s + (o * n + (size_t)i) * inner, inner);
}

void mfs_axis_put(mfs_tensor *dst, int axis, int64_t i, const mfs_tensor *src)
{
	size_t outer, inner, n = (size_t)dst->shape.dims[axis];
	const char *s = src->data;
	char *d = dst->data;

	axis_split(&dst->shape, axis, mfs_dtype_size(dst->dtype), &outer, &inner);
	if (!inner)
		return;
	for (size_t o = 0; o < outer; o++)
		memcpy(d + (o * n + (size_t)i) * inner, s + o * inner, inner);
}

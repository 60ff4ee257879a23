/* op_harness.h - run one operator by hand in a unit test: build an
 * onnx_node and an mfs_op_ctx, run infer, allocate the outputs and run
 * the operator, without the engine (test_ops_shape.c, test_ops_string.c).
 * Inputs added with h_in are borrowed; h_free releases the outputs and
 * any input the test made own its data. */
#ifndef MFS_TEST_OP_HARNESS_H
#define MFS_TEST_OP_HARNESS_H

#include "op.h"

#define MAXT 8

typedef struct harness {
	onnx_node node;
	onnx_attr attrs[8];
	char *outs[MAXT];
	mfs_tensor in[MAXT], out[MAXT];
	mfs_tensor *inp[MAXT], *outp[MAXT];
	mfs_op_ctx ctx;
	void *state;
	mfs_error err;
} harness;

static inline void h_init(harness *h, const char *op, int64_t opset, int n_out)
{
	memset(h, 0, sizeof(*h));
	h->node.op_type = (char *)op;
	h->node.domain = (char *)"";
	h->node.name = (char *)"n";
	h->node.attrs = h->attrs;
	h->node.outputs = h->outs;
	h->node.n_outputs = n_out;
	for (int i = 0; i < n_out; i++)
		h->outs[i] = (char *)"y";
	h->ctx.def = mfs_op_find("", op, opset);
	assert_non_null(h->ctx.def);
	h->ctx.node = &h->node;
	h->ctx.opset = opset;
	h->ctx.in = h->inp;
	h->ctx.out = h->outp;
	h->ctx.n_out = n_out;
	for (int i = 0; i < n_out; i++)
		h->outp[i] = &h->out[i];
	h->ctx.state = &h->state;
	h->ctx.err = &h->err;
}

static inline void h_attr_int(harness *h, const char *name, int64_t v)
{
	onnx_attr *a = &h->attrs[h->node.n_attrs++];
	a->name = (char *)name;
	a->type = ONNX_ATTR_INT;
	a->i = v;
}

static inline void h_attr_ints(harness *h, const char *name, int64_t *v, size_t n)
{
	onnx_attr *a = &h->attrs[h->node.n_attrs++];
	a->name = (char *)name;
	a->type = ONNX_ATTR_INTS;
	a->ints = v;
	a->n_ints = n;
}

/* Add an input; data (may be NULL: unknown at load) is borrowed. */
static inline void h_in(harness *h, mfs_dtype dt, int rank, const int64_t *dims, void *data)
{
	mfs_tensor *t = &h->in[h->ctx.n_in];
	t->dtype = dt;
	t->shape.rank = rank;
	for (int i = 0; i < rank; i++)
		t->shape.dims[i] = dims[i];
	t->data = data;
	t->nbytes = (size_t)mfs_shape_numel(&t->shape) * mfs_dtype_size(dt);
	h->inp[h->ctx.n_in++] = t;
}

static inline void h_skip_in(harness *h)
{
	h->inp[h->ctx.n_in++] = NULL;
}

static inline int h_infer(harness *h)
{
	return h->ctx.def->infer(&h->ctx);
}

/* infer, allocate outputs, prepare, run; returns the first failure. */
static inline int h_run(harness *h)
{
	int rc = h_infer(h);
	if (rc)
		return rc;
	for (int i = 0; i < h->ctx.n_out; i++) {
		if (!h->outp[i])
			continue;
		mfs_shape s = h->out[i].shape;
		assert_int_equal(mfs_tensor_alloc(&h->out[i], h->out[i].dtype, &s, &h->err), 0);
	}
	if (h->ctx.def->prepare && (rc = h->ctx.def->prepare(&h->ctx)))
		return rc;
	return h->ctx.def->run(&h->ctx);
}

static inline void h_free(harness *h)
{
	if (h->state && h->ctx.def->release)
		h->ctx.def->release(h->state);
	h->state = NULL;
	for (int i = 0; i < MAXT; i++) {
		mfs_tensor_release(&h->out[i]);
		mfs_tensor_release(&h->in[i]);
	}
}

static inline void assert_shape(const mfs_tensor *t, int rank, ...)
{
	va_list ap;
	assert_int_equal(t->shape.rank, rank);
	va_start(ap, rank);
	for (int i = 0; i < rank; i++)
		assert_int_equal(t->shape.dims[i], va_arg(ap, int));
	va_end(ap);
}


static inline void h_attr_str(harness *h, const char *name, const char *v)
{
	onnx_attr *a = &h->attrs[h->node.n_attrs++];
	a->name = (char *)name;
	a->type = ONNX_ATTR_STRING;
	a->s = (char *)v;
	a->s_len = strlen(v);
}

#endif

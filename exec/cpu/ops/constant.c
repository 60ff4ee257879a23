/* Constant (value; value_float(s)/value_int(s) from opset 12; sparse and
 * string values are refused) and ConstantOfShape (a filled tensor). */
#include <string.h>

#include "op_common.h"

/* Find the one value attribute and describe it: dtype, shape, bytes. */
static int constant_value(mfs_op_ctx *ctx, mfs_dtype *dt, mfs_shape *shape,
			  const void **bytes, size_t *nbytes)
{
	const onnx_node *n = ctx->node;
	const onnx_attr *a;
	static const char *refused[] = { "sparse_value", "value_string", "value_strings" };

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (onnx_node_attr(n, refused[i]))
			return mfs_op_fail(ctx, ENOTSUP, "attribute '%s' is not supported",
					   refused[i]);
	memset(shape, 0, sizeof(*shape));
	if ((a = onnx_node_attr(n, "value"))) {
		if (a->type != ONNX_ATTR_TENSOR)
			return mfs_op_fail(ctx, EINVAL, "'value' is not a tensor");
		if (!mfs_dtype_size(a->t.dtype))
			return mfs_op_fail(ctx, ENOTSUP, "data type %s is not supported",
					   mfs_dtype_onnx_name(a->t.dtype));
		*dt = a->t.dtype;
		*shape = a->t.shape;
		*bytes = a->t.data;
		*nbytes = a->t.nbytes;
	} else if ((a = onnx_node_attr(n, "value_float"))) {
		*dt = MFS_DT_FLOAT;
		*bytes = &a->f;
		*nbytes = sizeof(float);
	} else if ((a = onnx_node_attr(n, "value_int"))) {
		*dt = MFS_DT_INT64;
		*bytes = &a->i;
		*nbytes = sizeof(int64_t);
	} else if ((a = onnx_node_attr(n, "value_floats"))) {
		*dt = MFS_DT_FLOAT;
		shape->rank = 1;
		shape->dims[0] = (int64_t)a->n_floats;
		*bytes = a->floats;
		*nbytes = a->n_floats * sizeof(float);
	} else if ((a = onnx_node_attr(n, "value_ints"))) {
		*dt = MFS_DT_INT64;
		shape->rank = 1;
		shape->dims[0] = (int64_t)a->n_ints;
		*bytes = a->ints;
		*nbytes = a->n_ints * sizeof(int64_t);
	} else {
		return mfs_op_fail(ctx, EINVAL, "no value attribute");
	}
	if (mfs_shape_numel(shape) * (int64_t)mfs_dtype_size(*dt) != (int64_t)*nbytes)
		return mfs_op_fail(ctx, EINVAL, "value holds %zu bytes, not what its shape needs",
				   *nbytes);
	return 0;
}

/* infer sets the output's type and shape; run (out_data non-NULL) copies
 * the value. */
static int constant_emit(mfs_op_ctx *ctx, void *out_data)
{
	mfs_dtype dt;
	mfs_shape s;
	const void *b;
	size_t nb;
	int rc = constant_value(ctx, &dt, &s, &b, &nb);

	if (rc)
		return rc;
	if (!out_data)
		oc_set_out(ctx, 0, dt, &s);
	else if (nb)
		memcpy(out_data, b, nb);
	return 0;
}

static int constant_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 0, true);
	return constant_emit(ctx, NULL);
}

static int constant_run(mfs_op_ctx *ctx)
{
	return constant_emit(ctx, ctx->out[0]->data);
}

/* ConstantOfShape's fill value: one element, float 0 by default. */
static int fill_value(mfs_op_ctx *ctx, mfs_dtype *dt, const void **bytes)
{
	static const float zero;
	const onnx_attr *a = onnx_node_attr(ctx->node, "value");

	if (!a) {
		*dt = MFS_DT_FLOAT;
		*bytes = &zero;
		return 0;
	}
	if (a->type != ONNX_ATTR_TENSOR || mfs_shape_numel(&a->t.shape) != 1 ||
	    !mfs_dtype_size(a->t.dtype) || a->t.nbytes < mfs_dtype_size(a->t.dtype))
		return mfs_op_fail(ctx, EINVAL, "'value' must be a one-element tensor");
	*dt = a->t.dtype;
	*bytes = a->t.data;
	return 0;
}

static int cos_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 1, true);
	int64_t dims[MFS_MAX_RANK];
	int n = 0, rc;
	mfs_dtype dt;
	const void *b;
	mfs_shape s = { 0 };

	if ((rc = fill_value(ctx, &dt, &b)) ||
	    (rc = oc_read_ints(ctx, 0, dims, MFS_MAX_RANK, &n)))
		return rc;
	s.rank = n;
	for (int i = 0; i < n; i++)
		s.dims[i] = dims[i];
	if ((rc = oc_check_shape(ctx, &s)))
		return rc;
	oc_set_out(ctx, 0, dt, &s);
	return 0;
}

static int cos_run(mfs_op_ctx *ctx)
{
	mfs_tensor *out = ctx->out[0];
	mfs_dtype dt;
	const void *b;
	int rc = fill_value(ctx, &dt, &b);
	size_t es = mfs_dtype_size(dt);
	int64_t n = mfs_shape_numel(&out->shape);

	if (rc)
		return rc;
	for (int64_t i = 0; i < n; i++)
		memcpy((char *)out->data + i * (int64_t)es, b, es);
	return 0;
}

MFS_OP(Constant, 1, .flags = MFS_OP_STRINGS, .infer = constant_infer, .run = constant_run);
MFS_OP(ConstantOfShape, 9, .infer = cos_infer, .run = cos_run);

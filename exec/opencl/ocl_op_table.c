/* ocl_op_table.c - which operators the OpenCL engine runs on the device,
 * for which opsets, and with which function of ocl_ops_*.c.
 *
 * Opset ranges work as the CPU registry's (exec/op/op.h, MFS_OP): each
 * line gives the since_version from which its function holds; a node of
 * a model importing opset V of the line's domain takes the line of its
 * operator with the largest since_version <= V, so a line covers its
 * version up to the next line of that operator and domain.  A node whose
 * opset no line covers (below the first) gets no device function: it runs
 * its CPU implementation on host copies, as an operator missing from the
 * table does (docs/OPENCL.md).  Add a line where the semantics change
 * (Clip's bounds become inputs at 11, Softmax's axis at 13 ...), and give
 * each operator the first version its function handles.
 */
#include <string.h>

#include "ocl_internal.h"

/* An ONNX line (domain "" or ai.onnx) and one of ours (com.modelfs: the
 * fusions and rewrites of exec/graph/). */
#define OCL_OP(name, ver, fn) { "", #name, ver, fn }
#define OCL_OP_OURS(name, ver, fn) { "com.modelfs", #name, ver, fn }

static const struct ocl_op_line {
	const char *domain;
	const char *op_type;
	int since_version;
	ocl_op_fn fn;
} table[] = {
	/* elementwise (ocl_ops_elem.c) */
	OCL_OP(Relu, 1, ocl_op_relu),
	OCL_OP(LeakyRelu, 1, ocl_op_leaky),
	OCL_OP(Sigmoid, 1, ocl_op_sigmoid),
	OCL_OP(Tanh, 1, ocl_op_tanh),
	OCL_OP(Erf, 9, ocl_op_erf),
	OCL_OP(Sqrt, 1, ocl_op_sqrt),
	OCL_OP(Neg, 1, ocl_op_neg),
	OCL_OP(Exp, 1, ocl_op_exp),
	OCL_OP(Abs, 1, ocl_op_abs),
	OCL_OP(Clip, 1, ocl_op_clip_1),
	OCL_OP(Clip, 11, ocl_op_clip_11),
	OCL_OP(Gelu, 20, ocl_op_gelu),
	OCL_OP_OURS(Gelu, 1, ocl_op_gelu),
	/* before 7 the legacy `broadcast` attribute: the host's */
	OCL_OP(Add, 7, ocl_op_add),
	OCL_OP(Sub, 7, ocl_op_sub),
	OCL_OP(Mul, 7, ocl_op_mul),
	OCL_OP(Div, 7, ocl_op_div),
	OCL_OP(Pow, 7, ocl_op_pow),
	OCL_OP(Equal, 7, ocl_op_equal),
	OCL_OP(Where, 9, ocl_op_where),
	OCL_OP(Sum, 1, ocl_op_sum),
	OCL_OP(Cast, 6, ocl_op_cast),
	OCL_OP(CastLike, 15, ocl_op_cast),
	/* data movement (ocl_ops_elem.c) */
	OCL_OP(Transpose, 1, ocl_op_transpose),
	OCL_OP(Slice, 1, ocl_op_slice_1),
	OCL_OP(Slice, 10, ocl_op_slice_10),
	OCL_OP(Concat, 1, ocl_op_concat),
	OCL_OP(Split, 1, ocl_op_split),
	OCL_OP(Expand, 8, ocl_op_expand),
	OCL_OP(Gather, 1, ocl_op_gather),
	OCL_OP(ConstantOfShape, 9, ocl_op_constant_of_shape),
	/* windows (ocl_ops_conv.c) */
	OCL_OP(Conv, 1, ocl_op_conv),
	OCL_OP_OURS(FusedConv, 1, ocl_op_conv),
	OCL_OP(MaxPool, 1, ocl_op_maxpool),
	OCL_OP(AveragePool, 1, ocl_op_avgpool),
	OCL_OP(GlobalAveragePool, 1, ocl_op_gavgpool),
	/* matrix products (ocl_ops_matmul.c) */
	OCL_OP(Gemm, 1, ocl_op_gemm),
	OCL_OP(MatMul, 1, ocl_op_matmul),
	OCL_OP_OURS(Dense, 1, ocl_op_dense),
	OCL_OP_OURS(Attention, 1, ocl_op_attention),
	/* normalisations and reductions (ocl_ops_norm.c); BatchNormalization
	 * before 7 carries legacy attributes: the host's */
	OCL_OP(BatchNormalization, 7, ocl_op_batchnorm_7),
	OCL_OP(BatchNormalization, 9, ocl_op_batchnorm_9),
	OCL_OP(Softmax, 1, ocl_op_softmax_1),
	OCL_OP(Softmax, 13, ocl_op_softmax_13),
	OCL_OP(LogSoftmax, 1, ocl_op_softmax_1),
	OCL_OP(LogSoftmax, 13, ocl_op_softmax_13),
	OCL_OP(LayerNormalization, 17, ocl_op_layernorm),
	OCL_OP_OURS(LayerNormalization, 1, ocl_op_layernorm),
	OCL_OP(ReduceMean, 1, ocl_op_reduce_axes_attr),
	OCL_OP(ReduceMean, 18, ocl_op_reduce_axes_input),
	OCL_OP(ReduceSum, 1, ocl_op_reduce_axes_attr),
	OCL_OP(ReduceSum, 13, ocl_op_reduce_axes_input),
};

static bool domain_is_onnx(const char *d)
{
	return !*d || !strcmp(d, "ai.onnx");
}

ocl_op_fn ocl_op_lookup(const char *domain, const char *op_type, int64_t opset)
{
	const struct ocl_op_line *best = NULL;

	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		const struct ocl_op_line *l = &table[i];
		bool same = domain_is_onnx(l->domain) ? domain_is_onnx(domain)
						      : !strcmp(l->domain, domain);
		if (!same || strcmp(l->op_type, op_type) || l->since_version > opset)
			continue;
		if (!best || l->since_version > best->since_version)
			best = l;
	}
	return best ? best->fn : NULL;
}

/* ocl_internal.h - what the OpenCL backend's core (ocl_backend.c, ocl_run.c)
 * and its operator implementations (ocl_ops_*.c) share.  Internal to
 * exec/opencl/.
 *
 * A node runs on the device through an ocl_op_fn found by domain, op type
 * and opset (ocl_op_lookup, the table of ocl_op_table.c).  The function
 * reads its inputs with ocl_in() (which
 * uploads a value that only lives on the host, e.g. a constant on first
 * use), allocates outputs with ocl_out() (from the context's device buffer
 * pool) and enqueues kernels or CLBlast calls on the context's queue.  It
 * may return OCL_HOST before touching the device to say "not this case"
 * (a dtype or attribute the kernels do not cover): the core then runs the
 * node's CPU implementation on host copies (docs/OPENCL.md).
 */
#ifndef MFS_OCL_INTERNAL_H
#define MFS_OCL_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend_runtime.h"
#include "ocl_device.h"

/* An ocl_op_fn's "run me on the host instead". */
#define OCL_HOST 2

#define OCL_MAXR 8

/* Kernel parameter structs: field for field those of kernels/ops.cl. */
typedef struct ocl_bc {
	cl_int rank, n;
	cl_int dims[OCL_MAXR];
	cl_int s0[OCL_MAXR], s1[OCL_MAXR], s2[OCL_MAXR];
} ocl_bc;

typedef struct ocl_cp {
	cl_int rank, n, soff, doff;
	cl_int dims[OCL_MAXR];
	cl_int ss[OCL_MAXR], ds[OCL_MAXR];
} ocl_cp;

typedef struct ocl_rd {
	cl_int n, kr, rr, count;
	cl_int kdims[OCL_MAXR], kst[OCL_MAXR];
	cl_int rdims[OCL_MAXR], rst[OCL_MAXR];
} ocl_rd;

typedef struct ocl_pool2d {
	cl_int n, c, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
	cl_int pe_h, pe_w, cip;
} ocl_pool2d;

typedef struct ocl_conv {
	cl_int n, c, h, w, m, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, group;
} ocl_conv;

/* Every kernel of the .cl files in kernels/ that operators launch: its id
 * here and its __kernel name there.  A new kernel is one line
 * (exec/OPERATORS-HOWTO.md); the enum and the name table ocl_program.c
 * creates kernels from are both made from this list, so they cannot fall
 * out of step. */
#define OCL_KERNELS(X) \
	X(K_UNARY_F32, "unary_f32") \
	X(K_DENSE_EPILOGUE, "dense_epilogue") \
	X(K_BINARY_F32, "binary_f32") \
	X(K_BINARY_I64, "binary_i64") \
	X(K_BINARY_I32, "binary_i32") \
	X(K_EQUAL_F32, "equal_f32") \
	X(K_EQUAL_I64, "equal_i64") \
	X(K_EQUAL_I32, "equal_i32") \
	X(K_EQUAL_U8, "equal_u8") \
	X(K_WHERE_1, "where_1") \
	X(K_WHERE_4, "where_4") \
	X(K_WHERE_8, "where_8") \
	X(K_COPY_1, "copy_1") \
	X(K_COPY_4, "copy_4") \
	X(K_COPY_8, "copy_8") \
	X(K_FILL_1, "fill_1") \
	X(K_FILL_4, "fill_4") \
	X(K_FILL_8, "fill_8") \
	X(K_CAST, "cast") \
	X(K_GATHER_1_I64, "gather_1_i64") \
	X(K_GATHER_4_I64, "gather_4_i64") \
	X(K_GATHER_8_I64, "gather_8_i64") \
	X(K_GATHER_1_I32, "gather_1_i32") \
	X(K_GATHER_4_I32, "gather_4_i32") \
	X(K_GATHER_8_I32, "gather_8_i32") \
	X(K_REDUCE_F32, "reduce_f32") \
	X(K_REDUCE_ROWS_F32, "reduce_rows_f32") \
	X(K_SOFTMAX_F32, "softmax_f32") \
	X(K_SOFTMAX_ROWS_F32, "softmax_rows_f32") \
	X(K_LAYERNORM_F32, "layernorm_f32") \
	X(K_BATCHNORM_F32, "batchnorm_f32") \
	X(K_MAXPOOL2D_F32, "maxpool2d_f32") \
	X(K_AVGPOOL2D_F32, "avgpool2d_f32") \
	X(K_GAVGPOOL_F32, "gavgpool_f32") \
	X(K_IM2COL_F32, "im2col_f32") \
	X(K_CONV_EPILOGUE, "conv_epilogue") \
	X(K_CONV_DIRECT_F32, "conv_direct_f32") \
	X(K_CONV_IGEMM_64, "conv_igemm_64") \
	X(K_CONV_IGEMM_PW_64, "conv_igemm_pw_64") \
	X(K_WINO_GEMM_64, "wino_gemm_64") \
	X(K_WINO_WEIGHTS, "wino_weights") \
	X(K_WINO_INPUT, "wino_input") \
	X(K_WINO_OUTPUT, "wino_output") \
	X(K_WINO4_WEIGHTS, "wino4_weights") \
	X(K_WINO4_INPUT, "wino4_input") \
	X(K_WINO4_OUTPUT, "wino4_output") \
	X(K_CONV_IGEMM_128X64, "conv_igemm_128x64") \
	X(K_CONV_IGEMM_128, "conv_igemm_128") \
	X(K_DENSE_GEMM_64, "dense_gemm_64") \
	X(K_GEMV_SMALL_M, "gemv_small_m")

typedef enum ocl_kid {
#define OCL_KERNEL_ID(id, name) id,
	OCL_KERNELS(OCL_KERNEL_ID)
#undef OCL_KERNEL_ID
	K_COUNT
} ocl_kid;

/* Unary and binary op codes of kernels/ops.cl. */
enum { OCL_U_RELU, OCL_U_SIGMOID, OCL_U_TANH, OCL_U_ERF, OCL_U_SQRT,
       OCL_U_CLIP, OCL_U_COPY, OCL_U_NEG, OCL_U_EXP, OCL_U_ABS, OCL_U_LEAKY,
       OCL_U_GELU, OCL_U_GELU_TANH };
enum { OCL_B_ADD, OCL_B_SUB, OCL_B_MUL, OCL_B_DIV, OCL_B_POW, OCL_B_EQ };

typedef struct ocl_exec ocl_exec;

/* One node being run on the device. */
typedef struct ocl_run {
	ocl_exec *e;
	const mfs_node *nd;
	mfs_op_ctx *ctx;          /* in/out tensors: dtype, shape (data only
				     where the host has it) */
	mfs_error *err;
} ocl_run;

typedef int (*ocl_op_fn)(ocl_run *r);

/* The device implementation of op_type in domain ("", ai.onnx or
 * com.modelfs) for a model importing opset of that domain, or NULL: the
 * node then runs on the host.  The line of the operator with the largest
 * since_version <= opset, as the CPU registry chooses (ocl_op_table.c). */
ocl_op_fn ocl_op_lookup(const char *domain, const char *op_type, int64_t opset);

/* The device functions, listed in the table of ocl_op_table.c.  A suffix
 * _N is the opset from which that variant holds. */
/* ocl_ops_elem.c: elementwise */
int ocl_op_relu(ocl_run *r);
int ocl_op_leaky(ocl_run *r);
int ocl_op_sigmoid(ocl_run *r);
int ocl_op_tanh(ocl_run *r);
int ocl_op_erf(ocl_run *r);
int ocl_op_sqrt(ocl_run *r);
int ocl_op_neg(ocl_run *r);
int ocl_op_exp(ocl_run *r);
int ocl_op_abs(ocl_run *r);
int ocl_op_clip_1(ocl_run *r);
int ocl_op_clip_11(ocl_run *r);
int ocl_op_gelu(ocl_run *r);
int ocl_op_add(ocl_run *r);
int ocl_op_sub(ocl_run *r);
int ocl_op_mul(ocl_run *r);
int ocl_op_div(ocl_run *r);
int ocl_op_pow(ocl_run *r);
int ocl_op_equal(ocl_run *r);
int ocl_op_where(ocl_run *r);
int ocl_op_sum(ocl_run *r);
int ocl_op_cast(ocl_run *r);
/* ocl_ops_elem.c: data movement */
int ocl_op_transpose(ocl_run *r);
int ocl_op_slice_1(ocl_run *r);
int ocl_op_slice_10(ocl_run *r);
int ocl_op_concat(ocl_run *r);
int ocl_op_split(ocl_run *r);
int ocl_op_expand(ocl_run *r);
int ocl_op_gather(ocl_run *r);
int ocl_op_constant_of_shape(ocl_run *r);
/* ocl_ops_conv.c */
int ocl_op_conv(ocl_run *r);
int ocl_op_maxpool(ocl_run *r);
int ocl_op_avgpool(ocl_run *r);
int ocl_op_gavgpool(ocl_run *r);
/* ocl_ops_matmul.c */
int ocl_op_gemm(ocl_run *r);
int ocl_op_matmul(ocl_run *r);
int ocl_op_dense(ocl_run *r);
int ocl_op_attention(ocl_run *r);
/* ocl_ops_norm.c */
int ocl_op_batchnorm_7(ocl_run *r);
int ocl_op_batchnorm_9(ocl_run *r);
int ocl_op_softmax_1(ocl_run *r);
int ocl_op_softmax_13(ocl_run *r);
int ocl_op_layernorm(ocl_run *r);
int ocl_op_reduce_axes_attr(ocl_run *r);
int ocl_op_reduce_axes_input(ocl_run *r);

/* Whether v is a valid count or index for the kernels' int arithmetic. */
static inline bool ocl_fits_int(int64_t v)
{
	return v >= 0 && v <= INT_MAX;
}

/* softmax_rows_f32 (ocl_ops_norm.c) over rows of len from x into y (y may
 * be x); with a mask c (Attention's Cond, broadcast to the rows by p), a
 * score whose Cond differs from keep is fill first. */
int ocl_softmax_rows(ocl_run *r, cl_mem x, cl_mem y, int64_t rows, int64_t len,
		     cl_int logsm, cl_mem c, const ocl_bc *p, cl_int keep, float fill);

/* Broadcast geometry of up to three operands (NULL: none) against out,
 * dims of size 1 dropped and mergeable dims merged; false when out is
 * too large for the kernels' int indexing. */
bool ocl_bc_make(ocl_bc *p, const mfs_shape *out, const mfs_shape *a,
		 const mfs_shape *b, const mfs_shape *c);

/* Device buffer of input k, uploading it if it lives only on the host;
 * NULL with *rc set (and r->err filled) on failure.  An input of no
 * elements gives a small dummy buffer. */
cl_mem ocl_in(ocl_run *r, int k, int *rc);
/* Allocate output k (shape and dtype already inferred) on the device. */
cl_mem ocl_out(ocl_run *r, int k, int *rc);
/* Output k_out shares input k_in's device block (uploading it first): a
 * node whose output has its input's bytes in the same order. */
int ocl_alias(ocl_run *r, int k_in, int k_out);
/* Host copy of input k (downloads when needed): for small integer inputs
 * that carry attributes (Clip bounds, Reduce axes). */
const void *ocl_in_host(ocl_run *r, int k, int *rc);
/* A scratch device buffer of at least bytes for this node (im2col);
 * valid until the next call. */
cl_mem ocl_scratch(ocl_run *r, size_t bytes, int *rc);
/* The same from one of OCL_SCRATCH_SLOTS independent scratch buffers
 * (slot 0 is ocl_scratch's), for a node that needs two at once
 * (Winograd's V and M).  Separate buffers, not sub-buffers of one:
 * NVIDIA's driver took ~45 ms per clCreateSubBuffer pair over a 200 MB
 * scratch. */
#define OCL_SCRATCH_SLOTS 2
cl_mem ocl_scratch_slot(ocl_run *r, int slot, size_t bytes, int *rc);
/* A device buffer of bytes kept with this node from run to run (weights
 * transformed once: Winograd's U), freed with the context.  *fresh: it
 * was just created, its contents undefined (the caller fills it); a
 * different size replaces it. */
cl_mem ocl_node_buffer(ocl_run *r, size_t bytes, bool *fresh, int *rc);
/* Whether input k is a constant of the model (an initializer), so that
 * what is derived from it once holds for every run. */
bool ocl_in_const(ocl_run *r, int k);

cl_command_queue *ocl_queue(ocl_run *r);
/* Enqueue k over n work items (rounded up to the work-group size); args
 * already set.  n == 0 does nothing. */
int ocl_launch(ocl_run *r, ocl_kid k, size_t n);
/* clSetKernelArg with the error in words. */
int ocl_arg(ocl_run *r, ocl_kid k, int i, size_t size, const void *p);
#define OCL_ARG(r, k, i, v) ocl_arg(r, k, i, sizeof(v), &(v))
/* Work-group launch (layernorm): groups of local items. */
int ocl_launch_groups(ocl_run *r, ocl_kid k, size_t groups, size_t local);
size_t ocl_max_group(ocl_run *r);
/* Profiling (MODELFS_OCL_PROFILE): the event pointer to pass to an
 * enqueue (NULL when off), then ocl_prof_add() with the event and a
 * kernel id, or K_COUNT for CLBlast. */
cl_event *ocl_prof_event(ocl_run *r, cl_event *ev);
void ocl_prof_add(ocl_run *r, cl_event ev, int slot);
/* The device's compute units (at least 1): sizes tiles to fill it. */
size_t ocl_compute_units(ocl_run *r);

#endif

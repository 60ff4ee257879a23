/* qlinear_util.h - what the integer com.modelfs nodes of the QDQ rewrite
 * (exec/graph/rewrite_qdq.c: QConv, QDense) share: their quantization
 * inputs, read and checked once, and the oneDNN pieces for them.
 *
 * Input slots of QConv and QDense: 0 x (uint8/int8), 1 x_scale, 2
 * x_zero_point (absent: 0), 3 w (int8 constant), 4 w_scale (one, or one per
 * output channel), 5 w_zero_point (absent or zeros), 6 bias (float, one
 * per output channel, or int32 in accumulator units as QLinearConv's B;
 * absent: none), 7 y_scale and 8 y_zero_point (absent:
 * a float output).  Scales and zero points are per tensor but w_scale.
 */
#ifndef MFS_QLINEAR_UTIL_H
#define MFS_QLINEAR_UTIL_H

#include "dense_util.h"

/* rint (half to even) of v clamped to [lo, hi] (integers, |lo|, |hi| <
 * 2^22): clamped first (a NaN becomes lo), then rounded by adding and
 * taking away 1.5 * 2^23, exact in the default rounding mode.  Unlike
 * rintf, which GCC calls rather than inlines here, it vectorises. */
static inline float mfs_q_round(float v, float lo, float hi)
{
	v = v > lo ? v : lo;
	v = v < hi ? v : hi;
	return (v + 12582912.0f) - 12582912.0f;
}

typedef struct mfs_qparams {
	float xs, ys;                /* ys: 1 for a float output */
	int32_t xz, yz;
	const float *ws;             /* borrowed from the input */
	int64_t nws;                 /* 1 or the output channels */
	bool yq;                     /* quantized output */
	mfs_dtype ydt;               /* the output's type */
} mfs_qparams;

/* Read and check slots 1, 2, 4, 5, 7, 8 for a node of `ch` output
 * channels and x of type xdt; 0 or the op failure. */
int mfs_qparams_read(mfs_op_ctx *ctx, mfs_dtype xdt, int64_t ch, mfs_qparams *p);
/* The output scales x_scale * w_scale[c] / y_scale, c < ch. */
void mfs_qparams_scales(const mfs_qparams *p, int64_t ch, float *out);
/* The bias b in accumulator units: as it is when int32 (QLinearConv's),
 * rint(b[c] / (x_scale * w_scale[c])) when float. */
void mfs_qparams_bias(const mfs_qparams *p, const mfs_tensor *b, int64_t ch, int32_t *out);
/* 0, or the op failure when b (NULL: none) is not a float or int32
 * tensor of ch values. */
int mfs_qparams_bias_check(mfs_op_ctx *ctx, const mfs_tensor *b, int64_t ch);
/* The oneDNN data type of an 8-bit or float tensor type. */
dnnl_data_type_t mfs_q_dnnl_type(mfs_dtype dt);
/* Put p's output scales, runtime src/dst zero points (when non-zero) and
 * a Relu post-op (relu) on attr. */
dnnl_status_t mfs_q_attr(dnnl_primitive_attr_t attr, const mfs_qparams *p, int64_t ch,
			 int mask, bool relu);
/* A one-value s32 memory over *v (a runtime zero point). */
dnnl_status_t mfs_q_zp_mem(dnnl_memory_t *m, int32_t *v, dnnl_engine_t eng);
/* The activation attribute: true for "Relu", false when absent; -EINVAL
 * (op failure) for another. */
int mfs_q_relu(mfs_op_ctx *ctx, bool *relu);

/* A QConv/QDense oneDNN primitive and what it runs with besides its
 * source and destination: the packed weights, the bias in accumulator
 * units, the runtime zero points.  Set qp, has_bias, wslot (w's input
 * slot) and ch (output channels) before mfs_qprim_build. */
typedef struct mfs_qprim {
	mfs_qparams qp;
	bool has_bias;
	int wslot;
	int64_t ch;
	mfs_dnnl_prim prim;
	mfs_dnnl_weights wei;        /* kept by mfs_qprim_free (a rebuild) */
	dnnl_stream_t stream;
	dnnl_memory_t bias_m, xz_m, yz_m;
	int32_t *bias, xz, yz;       /* xz, yz: the runtime zero points' values */
} mfs_qprim;

/* The primitive for op_desc (a convolution or matmul descriptor with s32
 * bias bmd) with qp's scales and zero points and a Relu post-op (relu),
 * its stream, the weights packed from wplain (once while ctx's input
 * wslot is constant), the bias and zero point memories. */
dnnl_status_t mfs_qprim_build(mfs_op_ctx *ctx, mfs_qprim *q, const_dnnl_op_desc_t op_desc,
			      const dnnl_memory_desc_t *wplain, const dnnl_memory_desc_t *bmd,
			      bool relu, dnnl_engine_t eng);
/* Free what mfs_qprim_build made but the packed weights. */
void mfs_qprim_free(mfs_qprim *q);
/* Run it on src and dst (memories whose handles are set): the weights
 * from ctx's input wslot, the bias from input 6; 0 or the op failure
 * naming what. */
int mfs_qprim_exec(mfs_op_ctx *ctx, mfs_qprim *q, dnnl_memory_t src, dnnl_memory_t dst,
		   const char *what);

/* MatMulInteger through oneDNN (qdense_dnnl.c) when A is 8-bit, B a
 * constant int8 matrix with zero points 0 and a_zero_point a scalar: 1
 * when it computed Y, 0 when the node is not such (the caller's loops
 * then), or the op failure.  Its state is *ctx->state, freed by
 * mfs_matmul_integer_release. */
int mfs_matmul_integer_dnnl(mfs_op_ctx *ctx);
void mfs_matmul_integer_release(void *state);

#endif

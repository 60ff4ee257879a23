/* node_threads.c - node_threads.h: a node's work and its thread count. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "node_threads.h"

static int64_t numel(const mfs_tensor *t)
{
	return t ? mfs_shape_numel(&t->shape) : 0;
}

static const mfs_tensor *input(const mfs_op_ctx *ctx, int i)
{
	return i < ctx->n_in ? ctx->in[i] : NULL;
}

static int64_t last_dim(const mfs_tensor *t)
{
	return t && t->shape.rank > 0 ? t->shape.dims[t->shape.rank - 1] : 1;
}

static bool is(const mfs_op_ctx *ctx, const char *op)
{
	return !strcmp(ctx->node->op_type, op);
}

/* Multiply-adds per element of W's first dim: a convolution's per output
 * value (W [M, C/group, k...]), a transposed one's per input value. */
static int64_t per_filter(const mfs_tensor *w)
{
	return w && w->shape.rank > 0 && w->shape.dims[0] > 0 ? numel(w) / w->shape.dims[0] : 1;
}

/* The product's multiply-adds, or -1 when the node is no product. */
static int64_t product_work(const mfs_op_ctx *ctx, int64_t out)
{
	const mfs_tensor *a = input(ctx, 0);

	if (is(ctx, "MatMul") || is(ctx, "Dense") || is(ctx, "MatMulInteger"))
		return out * last_dim(a);
	if (is(ctx, "Gemm") && a && a->shape.rank == 2)
		return out * a->shape.dims[onnx_attr_int(ctx->node, "transA", 0) ? 0 : 1];
	if (is(ctx, "Conv") || is(ctx, "FusedConv") || is(ctx, "ConvInteger")) {
		const mfs_tensor *w = input(ctx, 1);
		bool depthwise = w && w->shape.rank >= 3 && w->shape.dims[1] == 1;
		return out * per_filter(w) * (depthwise ? MFS_DEPTHWISE_WORK : 1);
	}
	if (is(ctx, "QLinearConv") || is(ctx, "QConv"))
		return out * per_filter(input(ctx, 3));
	if (is(ctx, "QDense"))   /* the QDQ rewrite's (rewrite_qdq.c) */
		return out * last_dim(a);
	if (is(ctx, "ConvTranspose"))
		return numel(a) * per_filter(input(ctx, 1));
	if (is(ctx, "Attention")) {   /* Q Kt then P V: 2 T per output value */
		const mfs_tensor *k = input(ctx, 1);   /* Kt [.., T], or K [B, T, ..] in layout 1 */
		bool bshd = onnx_attr_int(ctx->node, "layout", 0) == 1;
		return out * 2 * (bshd && k && k->shape.rank >= 2 ? k->shape.dims[1] : last_dim(k));
	}
	if (is(ctx, "LSTM") || is(ctx, "GRU") || is(ctx, "RNN")) {
		/* every step: W x and R h for each sequence and batch entry */
		int64_t steps = a && a->shape.rank == 3 ? a->shape.dims[0] * a->shape.dims[1] : 1;
		return steps * (numel(input(ctx, 1)) + numel(input(ctx, 2)));
	}
	return -1;
}

int64_t mfs_node_work(const mfs_op_ctx *ctx, bool *product)
{
	int64_t out = 0, work;

	for (int k = 0; k < ctx->n_out; k++)
		out += numel(ctx->out[k]);
	work = product_work(ctx, out);
	*product = work >= 0;
	if (work < 0) {
		int64_t touched = numel(input(ctx, 0)) > out ? numel(input(ctx, 0)) : out;
		work = touched * MFS_ELEM_WORK;
	}
	return work > 0 ? work : 1;
}

int mfs_node_threads(int64_t work, bool product, int64_t grain, int threads, bool partial)
{
	if (threads < 1)
		return 1;
	if (product && !partial && grain > 0) {   /* grain / 16 per thread (header) */
		grain = grain <= INT64_MAX / threads ? grain * threads / MFS_PRODUCT_TEAM_REF
						     : grain / MFS_PRODUCT_TEAM_REF * threads;
		grain = grain > 0 ? grain : 1;
	}
	if (grain <= 0 || work / grain >= threads)
		return threads;
	if (work <= grain)
		return 1;
	return product && partial ? (int)((work + grain - 1) / grain) : threads;
}

bool mfs_thread_partial(void)
{
	const char *e = getenv("MFS_TEAMS");
	return e && !strcmp(e, "partial");
}

int64_t mfs_thread_grain(void)
{
	const char *e = getenv("MFS_THREAD_GRAIN");
	char *end;
	long long v;

	if (!e || !*e)
		return MFS_THREAD_GRAIN_DEFAULT;
	v = strtoll(e, &end, 10);
	return *end || v < 0 ? MFS_THREAD_GRAIN_DEFAULT : (int64_t)v;
}

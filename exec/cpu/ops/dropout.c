/* Dropout.  At inference (no training_mode, or false, or a zero ratio)
 * the output is the input (a view) and the optional mask all true.
 *
 * In training mode each element is kept when a uniform draw in [0, 1) is
 * >= ratio and then scaled by 1 / (1 - ratio); the mask says which were
 * kept.  The draws come from numpy's legacy MT19937 stream (mt19937.h)
 * seeded with the `seed` attribute, so a seeded node gives the same mask
 * on every run, as the ONNX reference does (np.random.seed(seed) and
 * np.random.uniform); without `seed` every run draws a fresh seed.  A
 * Dropout whose inputs are all constants is folded at load like any
 * other node: its draw is then made once per load. */
#include <stdatomic.h>
#include <time.h>

#include "mt19937.h"
#include "op_common.h"

/* training_mode and ratio as this run has them: 1 when they are not
 * known yet (data not on the host, or not before run), 0 when *drop is
 * set: true when elements must be dropped (training with ratio > 0). */
static int read_mode(const mfs_op_ctx *ctx, bool *drop, double *ratio)
{
	const mfs_tensor *r = oc_in(ctx, 1), *training = oc_in(ctx, 2);

	*drop = false;
	*ratio = 0.5;
	if (!training || mfs_shape_numel(&training->shape) < 1)
		return 0;
	if (!training->data || (r && mfs_shape_numel(&r->shape) >= 1 && !r->data))
		return 1;
	if (!mfs_tensor_get_i64(training, 0))
		return 0;
	if (r && mfs_shape_numel(&r->shape) >= 1)
		*ratio = mfs_tensor_get_f64(r, 0);
	*drop = *ratio != 0;
	return 0;
}

static int dropout_infer(mfs_op_ctx *ctx)
{
	OC_CHECK_IO(ctx, 1, true);
	const mfs_tensor *in = ctx->in[0];
	bool drop;
	double ratio;
	int unknown = read_mode(ctx, &drop, &ratio);

	if (!unknown && drop && !(ratio > 0 && ratio < 1))
		return mfs_op_fail(ctx, EINVAL, "ratio %g is outside [0, 1)", ratio);
	oc_set_out(ctx, 0, in->dtype, &in->shape);
	/* The mask is bool from opset 10, the input's type before. */
	oc_set_out(ctx, 1, ctx->opset >= 10 ? MFS_DT_BOOL : in->dtype, &in->shape);
	/* whether to compute or alias is decided again at run */
	return unknown ? MFS_SHAPE_DEPENDS_ON_DATA : 0;
}

/* A view unless this run drops elements (or cannot tell yet). */
static bool dropout_may_view(const mfs_op_ctx *ctx)
{
	bool drop;
	double ratio;
	return read_mode(ctx, &drop, &ratio) == 0 && !drop;
}

/* The node's seed (numpy takes it modulo 2^32), or a fresh one. */
static uint32_t run_seed(const mfs_op_ctx *ctx)
{
	static _Atomic uint32_t runs;
	struct timespec ts;

	if (onnx_node_attr(ctx->node, "seed"))
		return (uint32_t)onnx_attr_int(ctx->node, "seed", 0);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint32_t)ts.tv_nsec ^ (uint32_t)ts.tv_sec ^
	       (atomic_fetch_add(&runs, 1) * 0x9e3779b9u);
}

static int dropout_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *in = ctx->in[0];
	mfs_tensor *out = ctx->out[0], *mask = oc_out(ctx, 1);
	int64_t n = mfs_shape_numel(&in->shape);
	bool drop;
	double ratio;

	if (read_mode(ctx, &drop, &ratio))
		return mfs_op_fail(ctx, EINVAL, "training_mode or ratio unknown at run");
	if (!drop) {
		oc_copy_through(ctx);
		for (int64_t i = 0; mask && i < n; i++)
			oc_store(mask->dtype, mask->data, i, 1);
		return 0;
	}
	if (!(ratio > 0 && ratio < 1))
		return mfs_op_fail(ctx, EINVAL, "ratio %g is outside [0, 1)", ratio);

	mfs_mt19937 g;
	/* numpy multiplies a float32 array by the scale as float32 */
	double scale = in->dtype == MFS_DT_DOUBLE ? 1.0 / (1.0 - ratio) :
		       (double)(float)(1.0 / (1.0 - ratio));

	mfs_mt19937_seed(&g, run_seed(ctx));
	for (int64_t i = 0; i < n; i++) {
		bool keep = mfs_mt19937_double(&g) >= ratio;
		oc_store(out->dtype, out->data, i,
			 keep ? mfs_tensor_get_f64(in, i) * scale : 0.0);
		if (mask)
			oc_store(mask->dtype, mask->data, i, keep);
	}
	return 0;
}

MFS_OP(Dropout, 1, .flags = MFS_OP_VIEW, .infer = dropout_infer,
       .run = dropout_run, .may_view = dropout_may_view);

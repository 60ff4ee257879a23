/* Random operators: RandomUniform, RandomNormal (shape from the
 * attribute), RandomUniformLike, RandomNormalLike (shape of the input),
 * Bernoulli (1 where a uniform draw is below the input's probability) and
 * Multinomial (sample_size class indices per batch row, drawn from the
 * softmax of the row's unnormalised log-probabilities).
 *
 * The generator is xoshiro256** seeded through splitmix64.  With the
 * `seed` attribute every run starts from that seed, so a seeded node
 * gives the same output for the same input on every run, instance and
 * load (a server's requests do not share one stream; ONNX leaves this
 * open).  Without it every run draws a fresh seed.  Values cannot match
 * the ONNX reference outputs, which come from numpy's generator
 * (docs/OPERATORS.md lists those cases as "random").
 *
 * Output types: float16, bfloat16, float and double for the uniform and
 * normal ones; any numeric type and bool for Bernoulli; int32 and int64
 * for Multinomial. */
#include <math.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "op_common.h"

typedef struct rng {
	uint64_t s[4];
} rng;

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(rng *r)
{
	uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

/* Uniform in [0, 1), 53 bits. */
static double rng_uniform(rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* Standard normal (Box-Muller; one of the pair is enough here). */
static double rng_normal(rng *r)
{
	double u = 1.0 - rng_uniform(r), v = rng_uniform(r);   /* u in (0, 1] */
	return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

/* The node's seed attribute, or a fresh seed for this run. */
static void rng_init(rng *r, const onnx_node *node)
{
	static _Atomic uint64_t runs;
	const onnx_attr *a = onnx_node_attr(node, "seed");
	uint64_t x;

	if (a) {
		float f = onnx_attr_float(node, "seed", 0);
		uint32_t bits;
		memcpy(&bits, &f, sizeof(bits));
		x = 0x5eed000000000000ull ^ bits;
	} else {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
		    (atomic_fetch_add(&runs, 1) * 0x9e3779b97f4a7c15ull);
	}
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

static bool is_float_type(mfs_dtype dt)
{
	return dt == MFS_DT_FLOAT || dt == MFS_DT_DOUBLE ||
	       dt == MFS_DT_FLOAT16 || dt == MFS_DT_BFLOAT16;
}

/* The dtype attribute (TensorProto number), or def when absent. */
static int out_dtype(mfs_op_ctx *ctx, mfs_dtype def, mfs_dtype *dt)
{
	int64_t v = onnx_attr_int(ctx->node, "dtype", -1);
	*dt = v < 0 ? def : (mfs_dtype)v;
	if (v >= 0 && (v > 0xffff || !mfs_dtype_size(*dt)))
		return mfs_op_fail(ctx, EINVAL, "dtype %lld is not a tensor type", (long long)v);
	return 0;
}

/* RandomUniform / RandomNormal: the shape attribute. */
static int random_infer(mfs_op_ctx *ctx)
{
	const int64_t *dims;
	size_t rank = onnx_attr_ints(ctx->node, "shape", &dims);
	mfs_dtype dt;
	int rc;

	if (!ctx->out[0])
		return mfs_op_fail(ctx, EINVAL, "output 0 has no name");
	if (!onnx_node_attr(ctx->node, "shape"))
		return mfs_op_fail(ctx, EINVAL, "the shape attribute is required");
	if (rank > MFS_MAX_RANK)
		return mfs_op_fail(ctx, ENOTSUP, "shape of rank %zu (at most %d)", rank, MFS_MAX_RANK);
	if ((rc = out_dtype(ctx, MFS_DT_FLOAT, &dt)))
		return rc;
	if (!is_float_type(dt))
		return mfs_op_fail(ctx, ENOTSUP, "dtype %s: only floating-point outputs",
				   mfs_dtype_onnx_name(dt));
	ctx->out[0]->dtype = dt;
	ctx->out[0]->shape.rank = (int)rank;
	for (size_t i = 0; i < rank; i++)
		ctx->out[0]->shape.dims[i] = dims[i];
	return oc_check_shape(ctx, &ctx->out[0]->shape);
}

/* RandomUniformLike / RandomNormalLike: the input's shape. */
static int random_like_infer(mfs_op_ctx *ctx)
{
	mfs_dtype dt;
	int rc;

	OC_CHECK_IO(ctx, 1, true);
	if ((rc = out_dtype(ctx, ctx->in[0]->dtype, &dt)))
		return rc;
	if (!is_float_type(dt))
		return mfs_op_fail(ctx, ENOTSUP, "dtype %s: only floating-point outputs",
				   mfs_dtype_onnx_name(dt));
	ctx->out[0]->dtype = dt;
	ctx->out[0]->shape = ctx->in[0]->shape;
	return 0;
}

static bool is_uniform(const mfs_op_ctx *ctx)
{
	return strstr(ctx->node->op_type, "Uniform") != NULL;
}

static int random_run(mfs_op_ctx *ctx)
{
	mfs_tensor *y = ctx->out[0];
	int64_t n = mfs_shape_numel(&y->shape);
	bool uniform = is_uniform(ctx);
	double a = uniform ? onnx_attr_float(ctx->node, "low", 0.0f)
			   : onnx_attr_float(ctx->node, "mean", 0.0f);
	double b = uniform ? onnx_attr_float(ctx->node, "high", 1.0f)
			   : onnx_attr_float(ctx->node, "scale", 1.0f);
	rng r;

	rng_init(&r, ctx->node);
	for (int64_t i = 0; i < n; i++)
		oc_store(y->dtype, y->data, i, uniform ? a + (b - a) * rng_uniform(&r)
						       : a + b * rng_normal(&r));
	return 0;
}

static int bernoulli_infer(mfs_op_ctx *ctx)
{
	mfs_dtype dt;
	int rc;

	OC_CHECK_IO(ctx, 1, true);
	if (!is_float_type(ctx->in[0]->dtype))
		return mfs_op_fail(ctx, ENOTSUP, "input type %s: probabilities are floating-point",
				   mfs_dtype_onnx_name(ctx->in[0]->dtype));
	if ((rc = out_dtype(ctx, ctx->in[0]->dtype, &dt)))
		return rc;
	if (dt == MFS_DT_STRING)
		return mfs_op_fail(ctx, ENOTSUP, "dtype string");
	ctx->out[0]->dtype = dt;
	ctx->out[0]->shape = ctx->in[0]->shape;
	return 0;
}

static int bernoulli_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *p = ctx->in[0];
	mfs_tensor *y = ctx->out[0];
	int64_t n = mfs_shape_numel(&y->shape);
	rng r;

	rng_init(&r, ctx->node);
	for (int64_t i = 0; i < n; i++)
		oc_store(y->dtype, y->data, i,
			 rng_uniform(&r) < oc_load(p->dtype, p->data, i) ? 1.0 : 0.0);
	return 0;
}

static int multinomial_infer(mfs_op_ctx *ctx)
{
	int64_t samples = onnx_attr_int(ctx->node, "sample_size", 1);
	mfs_dtype dt;
	int rc;

	OC_CHECK_IO(ctx, 1, true);
	if (ctx->in[0]->dtype != MFS_DT_FLOAT && ctx->in[0]->dtype != MFS_DT_DOUBLE &&
	    ctx->in[0]->dtype != MFS_DT_FLOAT16)
		return mfs_op_fail(ctx, ENOTSUP, "input type %s",
				   mfs_dtype_onnx_name(ctx->in[0]->dtype));
	if (ctx->in[0]->shape.rank != 2)
		return mfs_op_fail(ctx, EINVAL, "input has rank %d, expected [batch, classes]",
				   ctx->in[0]->shape.rank);
	if (ctx->in[0]->shape.dims[1] < 1)
		return mfs_op_fail(ctx, EINVAL, "no classes to draw from");
	if (samples < 1)
		return mfs_op_fail(ctx, EINVAL, "sample_size %lld is below 1", (long long)samples);
	if ((rc = out_dtype(ctx, MFS_DT_INT32, &dt)))
		return rc;
	if (dt != MFS_DT_INT32 && dt != MFS_DT_INT64)
		return mfs_op_fail(ctx, EINVAL, "dtype %s: int32 or int64 only",
				   mfs_dtype_onnx_name(dt));
	ctx->out[0]->dtype = dt;
	ctx->out[0]->shape.rank = 2;
	ctx->out[0]->shape.dims[0] = ctx->in[0]->shape.dims[0];
	ctx->out[0]->shape.dims[1] = samples;
	return oc_check_shape(ctx, &ctx->out[0]->shape);
}

/* Each draw walks the row's cumulative softmax: O(classes) per sample,
 * no scratch. */
static int multinomial_run(mfs_op_ctx *ctx)
{
	const mfs_tensor *x = ctx->in[0];
	mfs_tensor *y = ctx->out[0];
	int64_t batch = x->shape.dims[0], classes = x->shape.dims[1];
	int64_t samples = y->shape.dims[1];
	rng r;

	rng_init(&r, ctx->node);
	for (int64_t b = 0; b < batch; b++) {
		double mx = -INFINITY, sum = 0;
		for (int64_t c = 0; c < classes; c++)
			mx = fmax(mx, oc_load(x->dtype, x->data, b * classes + c));
		for (int64_t c = 0; c < classes; c++)
			sum += exp(oc_load(x->dtype, x->data, b * classes + c) - mx);
		for (int64_t s = 0; s < samples; s++) {
			double u = rng_uniform(&r) * sum, acc = 0;
			int64_t pick = classes - 1;
			for (int64_t c = 0; c < classes; c++) {
				acc += exp(oc_load(x->dtype, x->data, b * classes + c) - mx);
				if (u < acc) {
					pick = c;
					break;
				}
			}
			oc_store(y->dtype, y->data, b * samples + s, (double)pick);
		}
	}
	return 0;
}

MFS_OP(RandomUniform, 1, .flags = MFS_OP_NONDETERMINISTIC,
       .infer = random_infer, .run = random_run);
MFS_OP(RandomNormal, 1, .flags = MFS_OP_NONDETERMINISTIC,
       .infer = random_infer, .run = random_run);
MFS_OP(RandomUniformLike, 1, .flags = MFS_OP_NONDETERMINISTIC,
       .infer = random_like_infer, .run = random_run);
MFS_OP(RandomNormalLike, 1, .flags = MFS_OP_NONDETERMINISTIC,
       .infer = random_like_infer, .run = random_run);
MFS_OP(Bernoulli, 15, .flags = MFS_OP_NONDETERMINISTIC,
       .infer = bernoulli_infer, .run = bernoulli_run);
MFS_OP(Multinomial, 7, .flags = MFS_OP_NONDETERMINISTIC,
       .infer = multinomial_infer, .run = multinomial_run);

/* bench_conv - time the Conv operator on ResNet-50's convolution shapes,
 * straight through the operator (no engine), to compare the oneDNN path
 * with the im2col + OpenBLAS path and the activation layouts.
 *
 *   build/tools/bench_conv [nchw|nhwc|block16] [repeats] [batch] [resid|resid-over]
 *   MFS_CONV=im2col build/tools/bench_conv nchw
 *
 * batch defaults to 1; `resid` times FusedConv with a residual Z of the
 * output's shape and layout and Relu, as ResNet's last 1x1 of each block
 * runs after the residual rewrite; `resid-over` the same with the output
 * written over Z, as the CPU backend runs it where Z dies there (op.h:
 * MFS_OP_OUT0_OVER_IN3).  Threads: OMP_NUM_THREADS.
 *
 * Prints per layer the median and the best time with GFLOP/s, then the
 * sums (the best time says more on a shared, noisy machine).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "op.h"

typedef struct layer {
	const char *name;
	int64_t c, m, hw, k, stride, pad;
} layer;

static const layer layers[] = {
	{ "conv1 7x7/2 3->64 @224", 3, 64, 224, 7, 2, 3 },
	{ "res2 1x1 64->256 @56", 64, 256, 56, 1, 1, 0 },
	{ "res2 3x3 64->64 @56", 64, 64, 56, 3, 1, 1 },
	{ "res3 3x3 128->128 @28", 128, 128, 28, 3, 1, 1 },
	{ "res4 1x1 1024->256 @14", 1024, 256, 14, 1, 1, 0 },
	{ "res4 3x3 256->256 @14", 256, 256, 14, 3, 1, 1 },
	{ "res5 3x3 512->512 @7", 512, 512, 7, 3, 1, 1 },
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const char *lname = argc > 1 ? argv[1] : "nchw";
	mfs_layout lay = !strcmp(lname, "nhwc") ? MFS_LAYOUT_NHWC :
			 !strcmp(lname, "block16") ? MFS_LAYOUT_BLOCK16 : MFS_LAYOUT_PLAIN;
	int reps = argc > 2 ? atoi(argv[2]) : 30;
	int64_t batch = argc > 3 ? atoll(argv[3]) : 1;
	bool over = argc > 4 && !strcmp(argv[4], "resid-over");
	bool resid = over || (argc > 4 && !strcmp(argv[4], "resid"));
	const mfs_op_def *def = resid ? mfs_op_find("com.modelfs", "FusedConv", 1) :
				mfs_op_find("", "Conv", 13);
	double total = 0, total_best = 0;

	if (!def || reps < 1 || batch < 1 ||
	    (lay == MFS_LAYOUT_PLAIN && strcmp(lname, "nchw"))) {
		fprintf(stderr, "usage: bench_conv [nchw|nhwc|block16] [repeats] [batch] [resid|resid-over]\n");
		return 2;
	}
	printf("layout %s, batch %lld, %s, MFS_CONV=%s, %d repeats\n", lname, (long long)batch,
	       over ? "FusedConv over Z, with Relu" : resid ? "FusedConv with Z and Relu" : "Conv",
	       getenv("MFS_CONV") ? getenv("MFS_CONV") : "(default: oneDNN)", reps);
	for (size_t li = 0; li < sizeof(layers) / sizeof(layers[0]); li++) {
		const layer *L = &layers[li];
		int64_t pads[4] = { L->pad, L->pad, L->pad, L->pad };
		int64_t strides[2] = { L->stride, L->stride };
		onnx_attr attrs[3] = {
			{ .name = (char *)"pads", .type = ONNX_ATTR_INTS, .ints = pads, .n_ints = 4 },
			{ .name = (char *)"strides", .type = ONNX_ATTR_INTS, .ints = strides, .n_ints = 2 },
			{ .name = (char *)"activation", .type = ONNX_ATTR_STRING, .s = (char *)"Relu" },
		};
		char *outname = (char *)"y";
		onnx_node node = { .name = (char *)"bench", .op_type = (char *)(resid ? "FusedConv" : "Conv"),
				   .domain = (char *)(resid ? "com.modelfs" : ""), .outputs = &outname,
				   .n_outputs = 1, .attrs = attrs, .n_attrs = resid ? 3 : 2 };
		mfs_error err = { 0 };
		mfs_tensor x = { 0 }, w = { 0 }, b = { 0 }, y = { 0 }, z = { 0 };
		mfs_shape xs = { 4, { batch, L->c, L->hw, L->hw } };
		mfs_shape ws = { 4, { L->m, L->c, L->k, L->k } };
		mfs_shape bs = { 1, { L->m } };
		if (mfs_tensor_alloc(&x, MFS_DT_FLOAT, &xs, &err) ||
		    mfs_tensor_alloc(&w, MFS_DT_FLOAT, &ws, &err) ||
		    mfs_tensor_alloc(&b, MFS_DT_FLOAT, &bs, &err)) {
			fprintf(stderr, "%s\n", err.msg);
			return 1;
		}
		for (int64_t i = 0; i < mfs_shape_numel(&xs); i++)
			((float *)x.data)[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
		for (int64_t i = 0; i < mfs_shape_numel(&ws); i++)
			((float *)w.data)[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
		/* block16 of a channel count that is a multiple of 16 (every
		 * layer but conv1's input) takes the plain size; conv1's input
		 * stays plain under block16, as the engine's plan keeps it */
		x.layout = lay == MFS_LAYOUT_BLOCK16 && L->c % 16 ? MFS_LAYOUT_PLAIN : lay;
		mfs_tensor *in[4] = { &x, &w, &b, &z }, *out[1] = { &y };
		void *state = NULL;
		mfs_op_ctx ctx = { .def = def, .node = &node, .opset = 13, .n_in = 3, .in = in,
				   .n_out = 1, .out = out, .state = &state, .err = &err };
		mfs_shape ys;
		if (def->infer(&ctx) < 0 || (ys = y.shape, 0) ||
		    mfs_tensor_alloc(&y, MFS_DT_FLOAT, &ys, &err) < 0) {
			fprintf(stderr, "%s\n", err.msg);
			return 1;
		}
		y.layout = lay;
		if (resid) {
			if (mfs_tensor_alloc(&z, MFS_DT_FLOAT, &ys, &err) < 0) {
				fprintf(stderr, "%s\n", err.msg);
				return 1;
			}
			z.layout = lay;
			ctx.n_in = 4;
			if (over) {
				mfs_tensor_release(&y);
				y = z;
				y.owns_data = false;
			}
		}
		if (def->prepare(&ctx) < 0) {
			fprintf(stderr, "%s\n", err.msg);
			return 1;
		}
		double *t = malloc(sizeof(double) * reps);
		for (int r = -3; r < reps; r++) {
			double t0 = now();
			if (def->run(&ctx) < 0) {
				fprintf(stderr, "%s\n", err.msg);
				return 1;
			}
			if (r >= 0)
				t[r] = now() - t0;
		}
		qsort(t, reps, sizeof(double), cmp_d);
		double med = t[reps / 2];
		double flops = 2.0 * batch * L->m * L->c * L->k * L->k * y.shape.dims[2] * y.shape.dims[3];
		printf("%-26s median %8.3f ms %6.1f GFLOP/s   best %8.3f ms %6.1f GFLOP/s\n",
		       L->name, med * 1e3, flops / med * 1e-9, t[0] * 1e3, flops / t[0] * 1e-9);
		total += med;
		total_best += t[0];
		free(t);
		def->release(state);
		mfs_tensor_release(&x);
		mfs_tensor_release(&w);
		mfs_tensor_release(&b);
		mfs_tensor_release(&y);
		mfs_tensor_release(&z);
	}
	printf("%-26s median %8.3f ms                  best %8.3f ms\n", "all layers",
	       total * 1e3, total_best * 1e3);
	return 0;
}

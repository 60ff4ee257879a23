/* preprocess.c - the example custom backend (docs/BACKENDS.md): image
 * preprocessing as the first step of a classification pipeline.
 *
 *   input   uint8  [N,] H, W, 3     (HWC, as an image file's pixels come)
 *   output  float  N, 3, H, W       (NCHW, what a CNN takes)
 *
 *   out[n,c,y,x] = (in[n,y,x,c] / 255 - mean[c]) / std[c]
 *
 * mean and std come from the model config's parameters, three numbers
 * each separated by commas or spaces ("0.485, 0.456, 0.406"), and default
 * to ImageNet's, so an ImageNet-trained network gets what it was trained
 * on.  Any H and W; the channel count must be 3.  With max_batch_size 0
 * the input is one image [H,W,3] and the output [1,3,H,W].
 *
 * Built by the Makefile as build/examples/libmodelfs_preprocess.so;
 * examples/backends/preprocess/ is a model that uses it. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modelfs_backend.h"

typedef struct preprocess {
	float mean[3];
	float inv_std[3];
} preprocess;

static const float imagenet_mean[3] = { 0.485f, 0.456f, 0.406f };
static const float imagenet_std[3] = { 0.229f, 0.224f, 0.225f };

/* Three finite numbers separated by commas and/or spaces. */
static int parse_triple(const char *text, float out[3])
{
	const char *p = text;

	for (int i = 0; i < 3; i++) {
		char *end;
		while (*p == ' ' || *p == ',' || *p == '\t')
			p++;
		errno = 0;
		double v = strtod(p, &end);
		if (end == p || errno || !isfinite(v))
			return -1;
		out[i] = (float)v;
		p = end;
	}
	while (*p == ' ' || *p == ',' || *p == '\t')
		p++;
	return *p ? -1 : 0;
}

static int check_decl(const modelfs_io_decl *d, int32_t dtype, const char *type_name,
		      int rank, const char *what, char *err, size_t err_size)
{
	if (d->dtype != dtype) {
		snprintf(err, err_size, "%s '%s' must be %s", what, d->name, type_name);
		return -1;
	}
	if (d->rank != rank) {
		snprintf(err, err_size, "%s '%s' must have %d dims in the config, not %d",
			 what, d->name, rank, d->rank);
		return -1;
	}
	return 0;
}

static int pp_init(const modelfs_backend_config *cfg, void **state, char *err, size_t err_size)
{
	int batched = cfg->max_batch_size > 0;
	preprocess *pp;
	float stdv[3];

	if (cfg->n_inputs != 1 || cfg->n_outputs != 1) {
		snprintf(err, err_size, "preprocess takes one input (uint8 HWC) and gives one output "
			 "(float NCHW); the config has %d and %d", (int)cfg->n_inputs, (int)cfg->n_outputs);
		return -1;
	}
	/* The config's dims exclude the batch dim: [H,W,3] -> [3,H,W] when
	 * batched, [H,W,3] -> [1,3,H,W] when not. */
	if (check_decl(&cfg->inputs[0], MODELFS_UINT8, "TYPE_UINT8", 3, "input", err, err_size) ||
	    check_decl(&cfg->outputs[0], MODELFS_FP32, "TYPE_FP32", batched ? 3 : 4, "output",
		       err, err_size))
		return -1;
	if (cfg->inputs[0].dims[2] != 3) {
		snprintf(err, err_size, "input '%s' must end in a channel dim of 3 (HWC)",
			 cfg->inputs[0].name);
		return -1;
	}
	pp = calloc(1, sizeof(*pp));
	if (!pp) {
		snprintf(err, err_size, "out of memory");
		return -1;
	}
	memcpy(pp->mean, imagenet_mean, sizeof(pp->mean));
	memcpy(stdv, imagenet_std, sizeof(stdv));
	for (int i = 0; i < cfg->n_parameters; i++) {
		const modelfs_parameter *p = &cfg->parameters[i];
		float *dst = strcmp(p->key, "mean") == 0 ? pp->mean :
			     strcmp(p->key, "std") == 0 ? stdv : NULL;
		if (!dst) {
			snprintf(err, err_size, "unknown parameter '%s' (preprocess takes 'mean' and 'std')",
				 p->key);
			free(pp);
			return -1;
		}
		if (parse_triple(p->value, dst)) {
			snprintf(err, err_size, "parameter '%s': '%s' is not three numbers", p->key, p->value);
			free(pp);
			return -1;
		}
	}
	for (int c = 0; c < 3; c++) {
		if (!(stdv[c] > 0)) {
			snprintf(err, err_size, "parameter 'std': every value must be above 0");
			free(pp);
			return -1;
		}
		pp->inv_std[c] = 1.0f / stdv[c];
	}
	*state = pp;
	return 0;
}

static int pp_execute(void *state, modelfs_batch *b, char *err, size_t err_size)
{
	const preprocess *pp = state;
	const modelfs_tensor *in = &b->inputs[0];
	int64_t n, h, w, shape[4];
	const uint8_t *src = in->data;
	float *dst;

	if (in->rank == 4) {
		n = in->shape[0];
		h = in->shape[1];
		w = in->shape[2];
	} else if (in->rank == 3) {
		n = 1;
		h = in->shape[0];
		w = in->shape[1];
	} else {
		snprintf(err, err_size, "input '%s' must be HWC or NHWC, not %d dims", in->name,
			 (int)in->rank);
		return -1;
	}
	if (in->shape[in->rank - 1] != 3) {
		snprintf(err, err_size, "input '%s' must have 3 channels (HWC), not %lld", in->name,
			 (long long)in->shape[in->rank - 1]);
		return -1;
	}
	shape[0] = n;
	shape[1] = 3;
	shape[2] = h;
	shape[3] = w;
	dst = b->alloc_output(b, 0, 4, shape);
	if (!dst) {
		snprintf(err, err_size, "out of memory for a %lldx3x%lldx%lld output", (long long)n,
			 (long long)h, (long long)w);
		return -1;
	}
	for (int64_t i = 0; i < n; i++) {
		const uint8_t *img = src + i * h * w * 3;
		float *planes = dst + i * 3 * h * w;
		for (int64_t px = 0; px < h * w; px++)
			for (int c = 0; c < 3; c++)
				planes[c * h * w + px] =
					((float)img[px * 3 + c] * (1.0f / 255.0f) - pp->mean[c]) *
					pp->inv_std[c];
	}
	return 0;
}

static void pp_finalize(void *state)
{
	free(state);
}

const modelfs_backend_api modelfs_backend = {
	.abi_version = MODELFS_BACKEND_ABI_VERSION,
	.init = pp_init,
	.execute = pp_execute,
	.finalize = pp_finalize,
};

/* preprocess.c - the example custom backend (docs/BACKENDS.md): image
 * preprocessing as the first step of a classification pipeline.
 *
 *   input   uint8  [N,] H, W, C     (HWC, as an image file's pixels come)
 *           uint8  [N,] H, W        (a grey image: C = 1)
 *   output  float  N, C, H, W       (NCHW, what a CNN takes)
 *
 *   out[n,c,y,x] = (in[n,y,x,c] / 255 - mean[c]) / std[c]
 *
 * The config's input dims say which form: three dims [H, W, C] with a
 * fixed C, or two dims [H, W].  mean and std come from the model config's
 * parameters, C numbers each separated by commas or spaces ("0.485,
 * 0.456, 0.406"), or one number for every channel ("0.5").  With C = 3
 * they default to ImageNet's, so an ImageNet-trained network gets what it
 * was trained on; other channel counts must name both.  Any H and W.
 * With max_batch_size 0 the input is one image and the output has N = 1.
 *
 * Built by the Makefile as build/examples/libmodelfs_preprocess.so;
 * examples/backends/preprocess/ and examples/pipeline_preprocess/ are
 * models that use it. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modelfs_backend.h"

/* Enough for any image format's channels (RGBA, CMYK, multispectral). */
#define MAX_CHANNELS 16

typedef struct preprocess {
	int channels;       /* C */
	int channel_dim;    /* 1: the input ends in C; 0: grey [H, W] */
	float mean[MAX_CHANNELS];
	float inv_std[MAX_CHANNELS];
} preprocess;

static const float imagenet_mean[3] = { 0.485f, 0.456f, 0.406f };
static const float imagenet_std[3] = { 0.229f, 0.224f, 0.225f };

static int is_separator(char c)
{
	return c == ' ' || c == ',' || c == '\t';
}

/* One finite number, or exactly `count` of them, separated by commas
 * and/or spaces; one number is given to every channel. */
static int parse_per_channel(const char *text, int count, float *out)
{
	const char *p = text;
	int n = 0;

	for (;;) {
		char *end;
		while (is_separator(*p))
			p++;
		if (!*p)
			break;
		if (n == count)
			return -1;
		errno = 0;
		double v = strtod(p, &end);
		if (end == p || errno || !isfinite(v))
			return -1;
		out[n++] = (float)v;
		p = end;
	}
	if (n == 1)
		for (int c = 1; c < count; c++)
			out[c] = out[0];
	return n == 1 || n == count ? 0 : -1;
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

/* The input's form from its config dims: [H, W, C] or grey [H, W]. */
static int input_form(const modelfs_io_decl *in, preprocess *pp, char *err, size_t err_size)
{
	if (in->dtype != MODELFS_UINT8) {
		snprintf(err, err_size, "input '%s' must be TYPE_UINT8", in->name);
		return -1;
	}
	if (in->rank == 2) {
		pp->channel_dim = 0;
		pp->channels = 1;
		return 0;
	}
	if (in->rank != 3) {
		snprintf(err, err_size, "input '%s' must have dims [H, W, C] or [H, W] in the "
			 "config, not %d dims", in->name, (int)in->rank);
		return -1;
	}
	if (in->dims[2] < 1 || in->dims[2] > MAX_CHANNELS) {
		snprintf(err, err_size, "input '%s' must end in a fixed channel dim of 1 to %d (HWC)",
			 in->name, MAX_CHANNELS);
		return -1;
	}
	pp->channel_dim = 1;
	pp->channels = (int)in->dims[2];
	return 0;
}

static int pp_init(const modelfs_backend_config *cfg, void **state, char *err, size_t err_size)
{
	int batched = cfg->max_batch_size > 0;
	preprocess *pp;
	float stdv[MAX_CHANNELS];
	int have_mean = 0, have_std = 0;

	if (cfg->n_inputs != 1 || cfg->n_outputs != 1) {
		snprintf(err, err_size, "preprocess takes one input (uint8 HWC) and gives one output "
			 "(float NCHW); the config has %d and %d", (int)cfg->n_inputs, (int)cfg->n_outputs);
		return -1;
	}
	pp = calloc(1, sizeof(*pp));
	if (!pp) {
		snprintf(err, err_size, "out of memory");
		return -1;
	}
	/* The config's dims exclude the batch dim: [H,W,C] -> [C,H,W] when
	 * batched, [H,W,C] -> [1,C,H,W] when not. */
	if (input_form(&cfg->inputs[0], pp, err, err_size) ||
	    check_decl(&cfg->outputs[0], MODELFS_FP32, "TYPE_FP32", batched ? 3 : 4, "output",
		       err, err_size))
		goto fail;
	if (pp->channels == 3) {
		memcpy(pp->mean, imagenet_mean, sizeof(imagenet_mean));
		memcpy(stdv, imagenet_std, sizeof(imagenet_std));
		have_mean = have_std = 1;
	}
	for (int i = 0; i < cfg->n_parameters; i++) {
		const modelfs_parameter *p = &cfg->parameters[i];
		int is_mean = strcmp(p->key, "mean") == 0;
		if (!is_mean && strcmp(p->key, "std") != 0) {
			snprintf(err, err_size, "unknown parameter '%s' (preprocess takes 'mean' and 'std')",
				 p->key);
			goto fail;
		}
		if (parse_per_channel(p->value, pp->channels, is_mean ? pp->mean : stdv)) {
			snprintf(err, err_size, "parameter '%s': '%s' is not one number or %d numbers "
				 "(one per channel)", p->key, p->value, pp->channels);
			goto fail;
		}
		*(is_mean ? &have_mean : &have_std) = 1;
	}
	if (!have_mean || !have_std) {
		snprintf(err, err_size, "parameters 'mean' and 'std' are needed for %d channels "
			 "(only 3 channels default to ImageNet's)", pp->channels);
		goto fail;
	}
	for (int c = 0; c < pp->channels; c++) {
		if (!(stdv[c] > 0)) {
			snprintf(err, err_size, "parameter 'std': every value must be above 0");
			goto fail;
		}
		pp->inv_std[c] = 1.0f / stdv[c];
	}
	*state = pp;
	return 0;
fail:
	free(pp);
	return -1;
}

static int pp_execute(void *state, modelfs_batch *b, char *err, size_t err_size)
{
	const preprocess *pp = state;
	const modelfs_tensor *in = &b->inputs[0];
	const int image_rank = 2 + pp->channel_dim;
	const int64_t c_n = pp->channels;
	int64_t n, h, w, shape[4];
	const uint8_t *src = in->data;
	float *dst;

	if (in->rank != image_rank && in->rank != image_rank + 1) {
		snprintf(err, err_size, "input '%s' must be %s, not %d dims", in->name,
			 pp->channel_dim ? "HWC or NHWC" : "HW or NHW", (int)in->rank);
		return -1;
	}
	n = in->rank == image_rank ? 1 : in->shape[0];
	h = in->shape[in->rank - image_rank];
	w = in->shape[in->rank - image_rank + 1];
	if (pp->channel_dim && in->shape[in->rank - 1] != c_n) {
		snprintf(err, err_size, "input '%s' must have %d channels (HWC), not %lld", in->name,
			 pp->channels, (long long)in->shape[in->rank - 1]);
		return -1;
	}
	shape[0] = n;
	shape[1] = c_n;
	shape[2] = h;
	shape[3] = w;
	dst = b->alloc_output(b, 0, 4, shape);
	if (!dst) {
		snprintf(err, err_size, "out of memory for a %lldx%lldx%lldx%lld output",
			 (long long)n, (long long)c_n, (long long)h, (long long)w);
		return -1;
	}
	for (int64_t i = 0; i < n; i++) {
		const uint8_t *img = src + i * h * w * c_n;
		float *planes = dst + i * c_n * h * w;
		for (int64_t px = 0; px < h * w; px++)
			for (int64_t c = 0; c < c_n; c++)
				planes[c * h * w + px] =
					((float)img[px * c_n + c] * (1.0f / 255.0f) - pp->mean[c]) *
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

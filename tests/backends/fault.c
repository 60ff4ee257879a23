/* fault.c - a custom backend for the tests: it fails and crashes on
 * demand, so that the daemon's handling of both can be tested through a
 * real mount (tests/e2e/backends.bats) and the worker (test_backend_worker).
 *
 *   input X (any numeric type the config says, read as float) -> output Y = 2 X,
 *   same shape and type as X; with the first value of X:
 *     -1   execute returns an error ("asked to fail")
 *     -2   the worker crashes with SIGABRT (abort(): the same under ASan,
 *          which does not catch it, so the e2e tests see one reason)
 *     -5   the worker crashes with a write through a null pointer (SIGSEGV)
 *     -3   Y gets one dim more than the config allows (the daemon must refuse it)
 *     -4   Y is left without data
 *   parameter fail_init: init fails with its value as the reason.
 *
 * Built twice: libmodelfs_fault.so, and libmodelfs_badabi.so with
 * FAULT_ABI_VERSION=99 (an ABI this modelfs does not speak). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modelfs_backend.h"

#ifndef FAULT_ABI_VERSION
#define FAULT_ABI_VERSION MODELFS_BACKEND_ABI_VERSION
#endif

static int fault_init(const modelfs_backend_config *cfg, void **state, char *err, size_t err_size)
{
	for (int i = 0; i < cfg->n_parameters; i++)
		if (strcmp(cfg->parameters[i].key, "fail_init") == 0) {
			snprintf(err, err_size, "%s", cfg->parameters[i].value);
			return -1;
		}
	if (cfg->n_inputs != 1 || cfg->n_outputs != 1 || cfg->inputs[0].dtype != MODELFS_FP32 ||
	    cfg->outputs[0].dtype != MODELFS_FP32) {
		snprintf(err, err_size, "fault takes one FP32 input and gives one FP32 output");
		return -1;
	}
	*state = NULL;
	return 0;
}

static int fault_execute(void *state, modelfs_batch *b, char *err, size_t err_size)
{
	const modelfs_tensor *x = &b->inputs[0];
	size_t n = x->byte_size / sizeof(float);
	const float *in = x->data;
	float first = n ? in[0] : 0.0f;
	int64_t shape[MODELFS_MAX_RANK + 1];
	int rank = x->rank;
	float *out;

	(void)state;
	if (first == -1.0f) {
		snprintf(err, err_size, "asked to fail (X[0] = -1)");
		return -1;
	}
	if (first == -2.0f)
		abort();
	if (first == -5.0f) {
		volatile int *nowhere = NULL;
		*nowhere = 1;
	}
	if (first == -4.0f)
		return 0;
	memcpy(shape, x->shape, sizeof(int64_t) * (size_t)rank);
	if (first == -3.0f && rank < MODELFS_MAX_RANK)
		shape[rank++] = 1;
	out = b->alloc_output(b, 0, rank, shape);
	if (!out) {
		snprintf(err, err_size, "no memory for Y");
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		out[i] = 2.0f * in[i];
	return 0;
}

const modelfs_backend_api modelfs_backend = {
	.abi_version = FAULT_ABI_VERSION,
	.init = fault_init,
	.execute = fault_execute,
	.finalize = NULL,
};

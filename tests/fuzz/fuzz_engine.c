/* fuzz_engine.c - libFuzzer target: a ModelProto from arbitrary bytes,
 * compiled (operator lookup, topological sort, constant folding, static
 * shape inference, layout plan) and, when its inputs have small shapes,
 * run once on patterned inputs.  So every operator's infer, prepare and
 * run see hostile attributes, shapes and data: none may crash, hang or
 * leak.  Seeds: small models from the ONNX node tests. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT_ELEMS 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	onnx_model *onnx = NULL;
	mfs_graph *m = NULL;
	mfs_exec *e = NULL;
	mfs_tensor *in = NULL, *out = NULL;
	mfs_error err;
	int n_in, n_out;
	bool runnable = true;

	/* below libFuzzer's malloc limit: a huge tensor is an error, not
	 * an out-of-memory finding */
	mfs_engine_set_max_tensor_bytes((size_t)256 << 20);
	/* a fuzzed trip count must not hang the target */
	mfs_engine_set_max_iterations(1000);
	if (onnx_model_load_buffer(data, size, NULL, &onnx, &err))
		return 0;
	if (mfs_graph_compile(onnx, "fuzz", &m, &err))
		return 0;
	n_in = mfs_graph_n_inputs(m);
	n_out = mfs_graph_n_outputs(m);
	in = calloc((size_t)n_in + 1, sizeof(*in));
	out = calloc((size_t)n_out + 1, sizeof(*out));
	if (!in || !out)
		goto done;
	for (int i = 0; i < n_in && runnable; i++) {
		const mfs_io_desc *d = mfs_graph_input(m, i);
		mfs_shape s = { .rank = d->rank < 0 ? 1 : d->rank };
		int64_t n = 1;
		for (int k = 0; k < s.rank; k++) {
			s.dims[k] = d->rank < 0 || d->dims[k] < 0 ? 2 : d->dims[k];
			if (s.dims[k] > MAX_INPUT_ELEMS || (n *= s.dims[k]) > MAX_INPUT_ELEMS)
				runnable = false;
		}
		if (!runnable || mfs_tensor_alloc(&in[i], d->dtype, &s, &err)) {
			runnable = false;
			break;
		}
		/* Bytes from the end of the file: varied values, NaNs and
		 * out-of-range indices included. */
		for (size_t b = 0; b < in[i].nbytes; b++)
			((uint8_t *)in[i].data)[b] = size ? data[(size - 1 - b % size)] ^ (uint8_t)b
						  : (uint8_t)b;
	}
	if (runnable && !mfs_exec_new(m, NULL, &e, &err) &&
	    !mfs_exec_run(e, in, out, &err))
		for (int i = 0; i < n_out; i++)
			mfs_tensor_release(&out[i]);
done:
	for (int i = 0; in && i < n_in; i++)
		mfs_tensor_release(&in[i]);
	free(in);
	free(out);
	mfs_exec_free(e);
	mfs_graph_free(m);
	return 0;
}

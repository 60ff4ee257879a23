/* op_fuzz.c - mutation fuzzing of operators, straight through the operator
 * table (no engine), seeded by single-node ONNX test cases.
 *
 *   op_fuzz [--seed N] ITERATIONS CASE_DIR...
 *
 * Each CASE_DIR holds model.onnx (one node) and test_data_set_0/input_K.pb.
 * Every iteration copies the inputs, mutates some of them (a dim changed,
 * elements set to extremes: INT64_MIN/MAX, NaN, inf, random bytes) and some
 * INT/INTS attributes, then calls infer, allocates the outputs, and calls
 * prepare/run/release.  Operators must return 0 or a negative errno on all
 * of it; build with SAN=1 so that a read out of bounds, an overflow or a
 * leak stops the run:
 *
 *   make BUILD=build/asan SAN=1 OPT=-O1 build/asan/tools/op_fuzz
 *   build/asan/tools/op_fuzz 500 /usr/share/libonnx-testdata/data/node/test_slice*
 *
 * A positive return other than MFS_SHAPE_DEPENDS_ON_DATA from infer, or any
 * positive return from run, is reported and counted; the exit status is 1
 * when anything was reported.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.h"
#include "op.h"

#define MAX_IO 32
#define MAX_ATTRS 64
#define MAX_SAVED_INTS 16
#define MAX_OUT_NUMEL (1 << 22)

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int64_t pick(int64_t lo, int64_t hi)
{
	return lo + (int64_t)(next() % (uint64_t)(hi - lo + 1));
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)n + 1);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return buf;
}

/* Change one dim (new elements zero) and/or a few elements of t. */
static void mutate(mfs_tensor *t)
{
	size_t es = mfs_dtype_size(t->dtype);
	int64_t n = mfs_shape_numel(&t->shape);

	if (pick(0, 3) == 0 && t->shape.rank > 0) {
		mfs_shape s = t->shape;
		s.dims[pick(0, s.rank - 1)] = pick(0, 5);
		int64_t m = mfs_shape_numel(&s);
		void *d = calloc((size_t)m + 1, es);
		if (!d)
			return;
		if (t->data && m && n)
			memcpy(d, t->data, (size_t)(m < n ? m : n) * es);
		if (t->owns_data)
			free(t->data);
		t->owns_data = true;
		t->data = d;
		t->shape = s;
		t->nbytes = (size_t)m * es;
		n = m;
	}
	for (int64_t k = pick(0, 3); k > 0 && n > 0; k--) {
		int64_t i = pick(0, n - 1);
		switch (t->dtype) {
		case MFS_DT_INT64: {
			int64_t v[] = { pick(-10, 10), INT64_MAX, INT64_MIN, pick(-3, 3), 0 };
			((int64_t *)t->data)[i] = v[pick(0, 4)];
			break;
		}
		case MFS_DT_INT32:
			((int32_t *)t->data)[i] = (int32_t)pick(-10, 10);
			break;
		case MFS_DT_FLOAT: {
			float v[] = { NAN, INFINITY, -INFINITY, (float)pick(-10, 10), 1e30f };
			((float *)t->data)[i] = v[pick(0, 4)];
			break;
		}
		default:
			memset((char *)t->data + i * (int64_t)es, (int)pick(0, 255), es);
		}
	}
}

/* The node's INT/INTS attributes as loaded, to restore every iteration. */
typedef struct saved_attrs {
	int n;
	int64_t i[MAX_ATTRS];
	int64_t ints[MAX_ATTRS][MAX_SAVED_INTS];
} saved_attrs;

static void attrs_save(const onnx_node *nd, saved_attrs *s)
{
	s->n = nd->n_attrs < MAX_ATTRS ? nd->n_attrs : MAX_ATTRS;
	for (int a = 0; a < s->n; a++) {
		s->i[a] = nd->attrs[a].i;
		for (size_t k = 0; k < nd->attrs[a].n_ints && k < MAX_SAVED_INTS; k++)
			s->ints[a][k] = nd->attrs[a].ints[k];
	}
}

static void attrs_mutate(onnx_node *nd, const saved_attrs *s)
{
	for (int a = 0; a < s->n; a++) {
		onnx_attr *at = &nd->attrs[a];
		size_t cnt = at->n_ints < MAX_SAVED_INTS ? at->n_ints : MAX_SAVED_INTS;
		int64_t v[] = { pick(-4, 6), INT64_MAX, INT64_MIN, 0, 1 << 20 };

		at->i = s->i[a];
		for (size_t k = 0; k < cnt; k++)
			at->ints[k] = s->ints[a][k];
		if (pick(0, 4))
			continue;
		if (at->type == ONNX_ATTR_INT)
			at->i = v[pick(0, 4)];
		else if (at->type == ONNX_ATTR_INTS && cnt)
			at->ints[pick(0, (int64_t)cnt - 1)] = v[pick(0, 4)];
	}
}

/* One mutated call of the node's operator; returns 1 on a contract breach. */
static int fuzz_once(const onnx_node *nd, const mfs_op_def *def, int64_t opset,
		     const mfs_tensor *orig, char *const *names, int n_orig, const char *dir)
{
	mfs_tensor in_t[MAX_IO] = { 0 }, out_t[MAX_IO] = { 0 };
	mfs_tensor *in[MAX_IO] = { 0 }, *out[MAX_IO] = { 0 };
	mfs_error err;
	void *state = NULL;
	int n_in = nd->n_inputs < MAX_IO ? nd->n_inputs : MAX_IO;
	int n_out = nd->n_outputs < MAX_IO ? nd->n_outputs : MAX_IO, bad = 0, rc;
	mfs_op_ctx ctx = { .def = def, .node = nd, .opset = opset, .n_in = n_in, .in = in,
			   .n_out = n_out, .out = out, .state = &state, .err = &err };

	for (int j = 0; j < n_orig; j++) {
		if (mfs_tensor_copy(&in_t[j], &orig[j], &err))
			goto done;
		if (pick(0, 1))
			mutate(&in_t[j]);
	}
	for (int i = 0; i < n_in; i++)
		for (int j = 0; nd->inputs[i][0] && j < n_orig; j++)
			if (strcmp(names[j], nd->inputs[i]) == 0)
				in[i] = &in_t[j];
	for (int i = 0; i < n_out; i++)
		out[i] = nd->outputs[i][0] ? &out_t[i] : NULL;
	rc = def->infer(&ctx);
	if (rc > 0 && rc != MFS_SHAPE_DEPENDS_ON_DATA) {
		printf("%s: infer returned %d\n", dir, rc);
		bad = 1;
	}
	if (rc)
		goto done;
	for (int i = 0; i < n_out; i++) {
		mfs_shape s;
		if (!out[i])
			continue;
		s = out_t[i].shape;
		if (mfs_shape_numel(&s) > MAX_OUT_NUMEL ||
		    mfs_tensor_alloc(&out_t[i], out_t[i].dtype, &s, &err))
			goto done;
	}
	if (def->prepare && def->prepare(&ctx))
		goto release;
	rc = def->run(&ctx);
	if (rc > 0) {
		printf("%s: run returned %d\n", dir, rc);
		bad = 1;
	}
release:
	if (def->release && state)
		def->release(state);
done:
	for (int i = 0; i < MAX_IO; i++) {
		mfs_tensor_release(&out_t[i]);
		mfs_tensor_release(&in_t[i]);
	}
	return bad;
}

static int fuzz_case(const char *dir, int iters)
{
	char path[4096];
	onnx_model *m;
	mfs_error err;
	mfs_tensor orig[MAX_IO] = { 0 };
	char *names[MAX_IO] = { 0 };
	saved_attrs saved;
	int n_orig = 0, bad = 0;

	snprintf(path, sizeof(path), "%s/model.onnx", dir);
	if (onnx_model_load_file(path, &m, &err))
		return 0;
	onnx_graph *g = m->graph;
	onnx_node *nd = g->n_nodes == 1 ? &g->nodes[0] : NULL;
	int64_t opset = nd ? onnx_model_opset(m, nd->domain ? nd->domain : "") : 0;
	const mfs_op_def *def = nd ? mfs_op_find(nd->domain, nd->op_type, opset) : NULL;

	for (int i = 0; def && i < g->n_inputs && n_orig < MAX_IO; i++) {
		size_t len;
		char *buf;
		snprintf(path, sizeof(path), "%s/test_data_set_0/input_%d.pb", dir, i);
		if (!(buf = slurp(path, &len)))
			break;
		if (onnx_tensor_decode(buf, len, NULL, &orig[n_orig], NULL, &err) == 0)
			names[n_orig++] = g->inputs[i].name;
		free(buf);
	}
	if (def) {
		attrs_save(nd, &saved);
		for (int it = 0; it < iters; it++) {
			attrs_mutate(nd, &saved);
			bad += fuzz_once(nd, def, opset, orig, names, n_orig, dir);
		}
	}
	for (int j = 0; j < n_orig; j++)
		mfs_tensor_release(&orig[j]);
	onnx_model_free(m);
	return bad;
}

int main(int argc, char **argv)
{
	int a = 1, bad = 0, iters;

	if (argc > 2 && strcmp(argv[1], "--seed") == 0) {
		rng ^= strtoull(argv[2], NULL, 0) * 0x9e3779b97f4a7c15ull;
		rng += !rng;  /* xorshift must not start at 0 */
		a = 3;
	}
	if (argc - a < 2) {
		fprintf(stderr, "usage: op_fuzz [--seed N] ITERATIONS CASE_DIR...\n");
		return 2;
	}
	iters = atoi(argv[a++]);
	for (; a < argc; a++)
		bad += fuzz_case(argv[a], iters);
	printf("op_fuzz: %d contract breaches\n", bad);
	return bad ? 1 : 0;
}

/* fuzz_onnx_model.c - libFuzzer target: a ModelProto from arbitrary bytes.
 *
 * External data is resolved in a scratch directory made at start-up that
 * holds one 4 KiB data file (d.bin), a subdirectory and a symlink that
 * points outside, so the fuzzer can reach the external-data paths
 * (offsets, lengths, escapes) without touching anything else.  A model
 * that loads is walked completely (every string and every tensor byte is
 * read), so a dangling pointer or a wrong length shows under ASan. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];
static char paths[4][128];

static void cleanup(void)
{
	for (int i = 3; i >= 0; i--)
		if (paths[i][0] && (unlink(paths[i]) && rmdir(paths[i])))
			(void)0;
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	strcpy(dir, "/tmp/mfs_fuzz_onnx_XXXXXX");
	if (!mkdtemp(dir))
		return 0;
	snprintf(paths[0], sizeof(paths[0]), "%s/d.bin", dir);
	snprintf(paths[1], sizeof(paths[1]), "%s/sub", dir);
	snprintf(paths[2], sizeof(paths[2]), "%s/sub/e.bin", dir);
	snprintf(paths[3], sizeof(paths[3]), "%s/out", dir);
	FILE *f = fopen(paths[0], "wb");
	if (f) {
		for (int i = 0; i < 4096; i++)
			fputc(i & 1 ? 0 : 0x3f, f);
		fclose(f);
	}
	mkdir(paths[1], 0700);
	f = fopen(paths[2], "wb");
	if (f) {
		fwrite("\0\0\x80\x3f\0\0\0\x40", 1, 8, f);
		fclose(f);
	}
	if (symlink("/etc/hostname", paths[3]))
		(void)0;
	atexit(cleanup);
	return 0;
}

static volatile unsigned sink;

static void touch(const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		sink += b[i];
}

static void touch_str(const char *s)
{
	if (s)
		touch(s, strlen(s) + 1);
}

static void walk_graph(const onnx_graph *g);

static void walk_vi(const onnx_value_info *v)
{
	touch_str(v->name);
	if (v->rank < 0 || v->rank > MFS_MAX_RANK)
		abort();
	for (int i = 0; i < v->rank; i++)
		touch_str(v->dim_params[i]);
}

static void walk_graph(const onnx_graph *g)
{
	touch_str(g->name);
	for (int i = 0; i < g->n_nodes; i++) {
		const onnx_node *n = &g->nodes[i];
		touch_str(n->name);
		touch_str(n->op_type);
		touch_str(n->domain);
		for (int k = 0; k < n->n_inputs; k++)
			touch_str(n->inputs[k]);
		for (int k = 0; k < n->n_outputs; k++)
			touch_str(n->outputs[k]);
		for (int k = 0; k < n->n_attrs; k++) {
			const onnx_attr *a = &n->attrs[k];
			touch_str(a->name);
			if (a->s)
				touch(a->s, a->s_len + 1);
			touch(a->t.data, a->t.nbytes);
			touch(a->floats, a->n_floats * sizeof(float));
			touch(a->ints, a->n_ints * sizeof(int64_t));
			for (size_t j = 0; j < a->n_strings; j++)
				touch_str(a->strings[j]);
			if (a->g)
				walk_graph(a->g);
			if (a->type == ONNX_ATTR_GRAPH && !a->g)
				abort();
			/* The getters agree with the struct. */
			if (onnx_node_attr(n, a->name) == NULL)
				abort();
		}
		const int64_t *v;
		sink += (unsigned)onnx_attr_ints(n, "perm", &v);
		sink += (unsigned)onnx_attr_int(n, "axis", 0);
		touch_str(onnx_attr_string(n, "mode", ""));
	}
	for (int i = 0; i < g->n_initializers; i++) {
		const mfs_tensor *t = &g->initializers[i].tensor;
		touch_str(g->initializers[i].name);
		int64_t numel = mfs_shape_numel(&t->shape);
		if (numel < 0 || (size_t)numel * mfs_dtype_size(t->dtype) != t->nbytes)
			abort();
		touch(t->data, t->nbytes);
	}
	for (int i = 0; i < g->n_inputs; i++)
		walk_vi(&g->inputs[i]);
	for (int i = 0; i < g->n_outputs; i++)
		walk_vi(&g->outputs[i]);
	for (int i = 0; i < g->n_value_infos; i++)
		walk_vi(&g->value_infos[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	onnx_model *m = NULL;
	mfs_error err;

	memset(&err, 0, sizeof(err));
	if (onnx_model_load_buffer(data, size, dir[0] ? dir : NULL, &m, &err)) {
		/* A refusal must say why and own nothing. */
		if (m || err.msg[0] == '\0' || err.code <= 0)
			abort();
		return 0;
	}
	if (!m || !m->graph)
		abort();
	touch_str(m->producer_name);
	for (int i = 0; i < m->n_opsets; i++)
		touch_str(m->opsets[i].domain);
	sink += (unsigned)onnx_model_opset(m, "");
	walk_graph(m->graph);
	onnx_model_free(m);
	return 0;
}

/* onnx_dump - print what the ONNX reader sees in model files and
 * TensorProto (.pb) files; exits 1 if any file fails to load.
 *
 *   build/tools/onnx_dump [-q] FILE...      (.pb files are read as tensors)
 *
 * -q prints only failures (used to sweep the conformance data). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.h"

static void print_vi(const char *what, const onnx_value_info *v)
{
	printf("  %s %s: %s", what, v->name, mfs_dtype_onnx_name(v->dtype));
	if (v->has_shape) {
		printf(" [");
		for (int i = 0; i < v->rank; i++)
			printf("%s%s", i ? "," : "",
			       v->dim_params[i] ? v->dim_params[i] : "");
		printf("]");
		for (int i = 0; i < v->rank; i++)
			if (!v->dim_params[i])
				printf(" %lld", (long long)v->dims[i]);
	}
	printf("\n");
}

static void print_graph(const onnx_graph *g, int indent)
{
	printf("%*sgraph '%s': %d nodes, %d initializers\n", indent, "",
	       g->name, g->n_nodes, g->n_initializers);
	for (int i = 0; i < g->n_inputs; i++)
		print_vi("input", &g->inputs[i]);
	for (int i = 0; i < g->n_outputs; i++)
		print_vi("output", &g->outputs[i]);
	for (int i = 0; i < g->n_nodes; i++) {
		const onnx_node *n = &g->nodes[i];
		printf("%*s  node %s%s%s '%s' (%d in, %d out, %d attrs)\n", indent,
		       "", n->domain, *n->domain ? "." : "", n->op_type, n->name,
		       n->n_inputs, n->n_outputs, n->n_attrs);
		for (int j = 0; j < n->n_attrs; j++)
			if (n->attrs[j].g)
				print_graph(n->attrs[j].g, indent + 4);
	}
}

int main(int argc, char **argv)
{
	int quiet = 0, failed = 0;

	for (int a = 1; a < argc; a++) {
		const char *path = argv[a];
		size_t pl = strlen(path);
		mfs_error err = { 0 };

		if (!strcmp(path, "-q")) {
			quiet = 1;
			continue;
		}
		if (pl > 3 && !strcmp(path + pl - 3, ".pb")) {
			FILE *f = fopen(path, "rb");
			char *buf = NULL, *name = NULL;
			long len = 0;
			mfs_tensor t;
			int rc = -1;
			if (f && fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 &&
			    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc(len + 1)) &&
			    fread(buf, 1, len, f) == (size_t)len)
				rc = onnx_tensor_decode(buf, len, NULL, &t, &name, &err);
			else
				snprintf(err.msg, sizeof(err.msg), "cannot read");
			if (f)
				fclose(f);
			if (rc) {
				printf("FAIL %s: %s\n", path, err.msg);
				failed++;
			} else if (!quiet) {
				char sb[128];
				printf("%s: tensor '%s' %s %s\n", path, name ? name : "",
				       mfs_dtype_onnx_name(t.dtype),
				       mfs_shape_format(&t.shape, sb, sizeof(sb)));
			}
			if (!rc)
				mfs_tensor_release(&t);
			free(name);
			free(buf);
			continue;
		}
		onnx_model *m;
		if (onnx_model_load_file(path, &m, &err)) {
			printf("FAIL %s\n", err.msg);
			failed++;
			continue;
		}
		if (!quiet) {
			printf("%s: ir %lld producer '%s'", path,
			       (long long)m->ir_version, m->producer_name);
			for (int i = 0; i < m->n_opsets; i++)
				printf(" opset %s=%lld", m->opsets[i].domain,
				       (long long)m->opsets[i].version);
			printf("\n");
			print_graph(m->graph, 0);
		}
		onnx_model_free(m);
	}
	return failed ? 1 : 0;
}

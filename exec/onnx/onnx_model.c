/* onnx_model.c - ModelProto (onnx_read.h): the opsets a model imports,
 * its producer and main graph; loading a model from a buffer or a file
 * (external data resolved next to it), freeing it, and the opset lookup
 * (onnx.h).  Graphs, nodes and attributes: onnx_reader.c, whose header
 * comment says why the reader is our own.
 */
#include "onnx.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file_util.h"
#include "onnx_read.h"

/* Protobuf's own limit for one message; larger weights go to external
 * data files. */
#define MAX_MODEL_BYTES ((size_t)2 << 30)

/* ModelProto ----------------------------------------------------------- */

enum { MD_IR_VERSION = 1, MD_PRODUCER_NAME = 2, MD_GRAPH = 7,
       MD_OPSET_IMPORT = 8, MD_NFIELDS = 9 };

static int parse_opset(rd *c, const pb_field *f, onnx_opset *o)
{
	pb_reader r;
	pb_field e;
	const char *why = NULL;
	int rc;

	if (f->wt != PB_WT_LEN)
		return wrong_wire(c, "ModelProto", "opset_import", f);
	r = pb_reader_init(f->data, f->len);
	while ((rc = pb_next(&r, &e, &why)) > 0) {
		rc = 0;
		if (e.num == 1)
			rc = get_string(c, &e, "OperatorSetIdProto", "domain",
					&o->domain);
		else if (e.num == 2)
			rc = get_varint(c, &e, "OperatorSetIdProto", "version",
					&o->version);
		if (rc)
			return rc;
	}
	if (rc < 0)
		return malformed(c, "OperatorSetIdProto", why);
	return default_string(c, &o->domain);
}

static int parse_model(rd *c, const uint8_t *buf, size_t len, onnx_model *m)
{
	long long counts[MD_NFIELDS] = { 0 };
	pb_reader r;
	pb_field f;
	const char *why = NULL;
	int rc;

	rc = count_fields(c, buf, len, "ModelProto", counts, MD_NFIELDS);
	if (rc)
		return rc;
	if (counts[MD_GRAPH] == 0)
		return mfs_fail(c->err, EINVAL, "not an ONNX model (no graph)");
	if (counts[MD_GRAPH] > 1)
		return mfs_fail(c->err, EINVAL, "ModelProto has %lld graphs",
				counts[MD_GRAPH]);
	if (counts[MD_OPSET_IMPORT] &&
	    !(m->opsets = alloc_array(counts[MD_OPSET_IMPORT],
				      sizeof(onnx_opset))))
		return oom(c);

	r = pb_reader_init(buf, len);
	while ((rc = pb_next(&r, &f, &why)) > 0) {
		rc = 0;
		switch (f.num) {
		case MD_IR_VERSION:
			rc = get_varint(c, &f, "ModelProto", "ir_version",
					&m->ir_version);
			break;
		case MD_PRODUCER_NAME:
			rc = get_string(c, &f, "ModelProto", "producer_name",
					&m->producer_name);
			break;
		case MD_OPSET_IMPORT:
			rc = parse_opset(c, &f, &m->opsets[m->n_opsets++]);
			break;
		case MD_GRAPH:
			if (f.wt != PB_WT_LEN)
				return wrong_wire(c, "ModelProto", "graph", &f);
			m->graph = calloc(1, sizeof(*m->graph));
			if (!m->graph)
				return oom(c);
			rc = onnx_parse_graph(c, f.data, f.len, m->graph);
			break;
		default:
			break;
		}
		if (rc)
			return rc;
	}
	if (rc < 0)
		return malformed(c, "ModelProto", why);
	return default_string(c, &m->producer_name);
}

int onnx_model_load_buffer(const void *buf, size_t len, const char *base_dir,
			   onnx_model **out, mfs_error *err)
{
	rd c = { .base_dir = base_dir, .err = err, .depth = 0 };
	onnx_model *m;
	int rc;

	*out = NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return mfs_fail(err, ENOMEM, "out of memory");
	rc = parse_model(&c, buf, len, m);
	onnx_ext_budget_release(&c.budget);
	if (rc) {
		onnx_model_free(m);
		return rc;
	}
	*out = m;
	return 0;
}

/* A model file, whole (file_util.h).  Over protobuf's limit the reason
 * says where large weights belong. */
static int read_file(const char *path, uint8_t **data, size_t *len,
		     mfs_error *err)
{
	int rc = mfs_read_file(path, MAX_MODEL_BYTES, (char **)data, len, err);
	if (rc == -EFBIG)
		mfs_error_prefix(err, "protobuf's 2 GiB limit (large weights belong in external data files): ");
	return rc;
}

int onnx_model_load_file(const char *path, onnx_model **out, mfs_error *err)
{
	char dir[PATH_MAX];
	const char *slash;
	uint8_t *buf;
	size_t len;
	int rc;

	*out = NULL;
	slash = strrchr(path, '/');
	if (!slash) {
		strcpy(dir, ".");
	} else if (slash == path) {
		strcpy(dir, "/");
	} else {
		if ((size_t)(slash - path) >= sizeof(dir))
			return mfs_fail(err, EINVAL, "%s: path too long", path);
		memcpy(dir, path, (size_t)(slash - path));
		dir[slash - path] = '\0';
	}
	rc = read_file(path, &buf, &len, err);
	if (!rc) {
		rc = onnx_model_load_buffer(buf, len, dir, out, err);
		free(buf);
	}
	if (rc)
		mfs_error_prefix(err, "%s: ", path);
	return rc;
}

void onnx_model_free(onnx_model *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->n_opsets; i++)
		free(m->opsets[i].domain);
	free(m->opsets);
	free(m->producer_name);
	if (m->graph) {
		onnx_graph_release(m->graph);
		free(m->graph);
	}
	free(m);
}

/* The declared input vi fits initializer in: its type, and where it
 * declares a shape, the initializer's rank and every fixed dim. */
static bool declared_fits(const onnx_value_info *vi, const mfs_tensor *t)
{
	if (vi->kind != MFS_KIND_TENSOR || vi->dtype != t->dtype)
		return false;
	if (!vi->has_shape)
		return true;
	if (vi->rank != t->shape.rank)
		return false;
	for (int k = 0; k < vi->rank; k++)
		if (vi->dims[k] >= 0 && vi->dims[k] != t->shape.dims[k])
			return false;
	return true;
}

static int as_input(onnx_model *m, onnx_graph *g, int at, mfs_error *err)
{
	onnx_initializer *in = &g->initializers[at], *d;
	const onnx_value_info *vi = NULL;
	char shape[160], dshape[160];

	for (int i = 0; i < g->n_inputs && !vi; i++)
		if (g->inputs[i].name && !strcmp(g->inputs[i].name, in->name))
			vi = &g->inputs[i];
	if (!vi)
		return mfs_fail(err, EINVAL,
				"initializer '%s' is not an input: the graph does not list it among its inputs, so it is a constant",
				in->name);
	if (m->ir_version < 4)
		return mfs_fail(err, EINVAL,
				"initializer '%s' is not an input: in a model of IR version %lld initializers are constants (from IR version 4 one the graph lists as an input may be fed)",
				in->name, (long long)m->ir_version);
	if (!declared_fits(vi, &in->tensor)) {
		mfs_shape ds = { .rank = vi->has_shape ? vi->rank : 0 };
		memcpy(ds.dims, vi->dims, sizeof(ds.dims));
		return mfs_fail(err, EINVAL,
				"initializer '%s' (%s %s) does not fit the graph input of that name (%s %s)",
				in->name, mfs_dtype_onnx_name(in->tensor.dtype),
				mfs_shape_format(&in->tensor.shape, shape, sizeof(shape)),
				mfs_dtype_onnx_name(vi->dtype),
				vi->has_shape ? mfs_shape_format(&ds, dshape, sizeof(dshape)) : "of any shape");
	}
	d = realloc(g->defaults, ((size_t)g->n_defaults + 1) * sizeof(*d));
	if (!d)
		return mfs_fail(err, ENOMEM, "out of memory");
	g->defaults = d;
	g->defaults[g->n_defaults++] = *in;
	memmove(in, in + 1, (size_t)(g->n_initializers - at - 1) * sizeof(*in));
	g->n_initializers--;
	return 0;
}

int onnx_model_initializers_as_inputs(onnx_model *m, const char *const *names,
				      int n, mfs_error *err)
{
	onnx_graph *g = m->graph;

	for (int k = 0; g && k < n; k++)
		for (int i = 0; i < g->n_initializers; i++) {
			int rc;
			if (!names[k] || !g->initializers[i].name ||
			    strcmp(g->initializers[i].name, names[k]))
				continue;
			if ((rc = as_input(m, g, i, err)))
				return rc;
			break;
		}
	return 0;
}

int64_t onnx_model_opset(const onnx_model *m, const char *domain)
{
	bool want_default = !domain || !*domain || !strcmp(domain, "ai.onnx");

	for (int i = 0; i < m->n_opsets; i++) {
		const char *d = m->opsets[i].domain;
		bool is_default = !d || !*d || !strcmp(d, "ai.onnx");
		if (want_default ? is_default : (d && !strcmp(d, domain)))
			return m->opsets[i].version;
	}
	return 0;
}

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

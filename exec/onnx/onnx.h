/* onnx.h - an ONNX ModelProto read into plain C structs.
 *
 * The reader (onnx_reader.c) decodes the protobuf wire format itself: the
 * subset of onnx.proto the engine uses is small and stable, and a reader of
 * our own can bound every length against the buffer and every allocation
 * against the file size, which is what a hostile file needs (see the
 * comment at the top of onnx_reader.c).
 *
 * Ownership: an onnx_model owns everything reachable from it; free it with
 * onnx_model_free().  Strings are NUL-terminated copies.
 */
#ifndef MFS_ONNX_H
#define MFS_ONNX_H

#include <stdint.h>

#include "tensor.h"

struct onnx_graph;

/* AttributeProto.AttributeType numbers. */
typedef enum onnx_attr_type {
	ONNX_ATTR_UNDEFINED = 0,
	ONNX_ATTR_FLOAT = 1,
	ONNX_ATTR_INT = 2,
	ONNX_ATTR_STRING = 3,
	ONNX_ATTR_TENSOR = 4,
	ONNX_ATTR_GRAPH = 5,
	ONNX_ATTR_FLOATS = 6,
	ONNX_ATTR_INTS = 7,
	ONNX_ATTR_STRINGS = 8,
	ONNX_ATTR_SPARSE_TENSOR = 11,
	ONNX_ATTR_TYPE_PROTO = 13,
} onnx_attr_type;

typedef struct onnx_attr {
	char *name;
	onnx_attr_type type;
	float f;
	int64_t i;
	char *s;                 /* STRING: bytes, NUL-terminated copy */
	size_t s_len;
	mfs_tensor t;            /* TENSOR */
	struct onnx_graph *g;    /* GRAPH */
	/* TYPE_PROTO: the type's kinds and dtype (UNDEFINED: a type the
	 * engine has no values of, such as a map) */
	mfs_kind tp_kind, tp_elem_kind;
	mfs_dtype tp_dtype;
	float *floats;  size_t n_floats;
	int64_t *ints;  size_t n_ints;
	char **strings; size_t n_strings;
} onnx_attr;

typedef struct onnx_node {
	char *name;
	char *op_type;
	char *domain;            /* "" for the default ai.onnx domain */
	char **inputs;  int n_inputs;    /* "" marks an omitted optional input */
	char **outputs; int n_outputs;
	onnx_attr *attrs; int n_attrs;
} onnx_node;

/* A graph input/output/value_info.  dims[i] < 0 with dim_params[i] != NULL
 * is a symbolic dim; dims[i] < 0 without a name is unknown.  A sequence
 * or an optional has its kinds set, dtype of its tensors and no shape. */
typedef struct onnx_value_info {
	char *name;
	mfs_dtype dtype;         /* UNDEFINED when the type is none of: a
				    tensor, a sequence of tensors, an
				    optional of either */
	mfs_kind kind, elem_kind;
	bool has_shape;
	int rank;
	int64_t dims[MFS_MAX_RANK];
	char *dim_params[MFS_MAX_RANK];
} onnx_value_info;

typedef struct onnx_initializer {
	char *name;
	mfs_tensor tensor;       /* owns its data */
} onnx_initializer;

typedef struct onnx_graph {
	char *name;
	onnx_node *nodes;               int n_nodes;
	onnx_initializer *initializers; int n_initializers;
	onnx_value_info *inputs;        int n_inputs;   /* may include initializers */
	onnx_value_info *outputs;       int n_outputs;
	onnx_value_info *value_infos;   int n_value_infos;
	/* Initializers made inputs (onnx_model_initializers_as_inputs): the
	 * value each takes when a run leaves it out. */
	onnx_initializer *defaults;     int n_defaults;
} onnx_graph;

typedef struct onnx_opset {
	char *domain;            /* "" or "ai.onnx" both mean the default domain */
	int64_t version;
} onnx_opset;

typedef struct onnx_model {
	int64_t ir_version;
	onnx_opset *opsets; int n_opsets;
	char *producer_name;
	onnx_graph *graph;
} onnx_model;

/* Read a model file.  External data (TensorProto.external_data with
 * location/offset/length) is resolved relative to the model's directory and
 * may not escape it.  On error returns -EINVAL (malformed), -ENOTSUP
 * (valid but unsupported, e.g. a string tensor), -ENOENT/-EIO (file) or
 * -ENOMEM, with err naming the file and the problem. */
int onnx_model_load_file(const char *path, onnx_model **out, mfs_error *err);

/* The same from memory; base_dir resolves external data (NULL: refuse it). */
int onnx_model_load_buffer(const void *buf, size_t len, const char *base_dir,
			   onnx_model **out, mfs_error *err);

void onnx_model_free(onnx_model *m);

/* Make each initializer of m's main graph named in names[0..n) an input
 * of the graph, as ONNX Runtime's overridable initializers are (Triton's
 * L0_initializer_as_input): it leaves graph->initializers for
 * graph->defaults, the value a run that leaves the input out gets, so no
 * compile pass sees a constant there.  A name that is not an initializer
 * is left alone (a plain input, or for the caller to refuse).  -EINVAL,
 * err naming the initializer, where ONNX Runtime could not feed it: the
 * graph does not list it among its inputs, the model's IR version is
 * below 4 (whose initializers are constants), or the input's declared
 * type or shape is not the initializer's.  (onnx_model.c) */
int onnx_model_initializers_as_inputs(onnx_model *m, const char *const *names,
				      int n, mfs_error *err);
/* Free everything a node holds (strings, attributes, subgraphs) and zero
 * it; the node itself is not freed (graph rewrites drop nodes with it). */
void onnx_node_release(onnx_node *n);

/* Opset version the model imports for a domain ("" = ai.onnx); 0 if none. */
int64_t onnx_model_opset(const onnx_model *m, const char *domain);

/* Decode one TensorProto (an ONNX test-data .pb file).  *name receives a
 * malloc'd copy of the stored name (NULL if absent) when name != NULL.
 * base_dir as for onnx_model_load_buffer. */
int onnx_tensor_decode(const void *buf, size_t len, const char *base_dir,
		       mfs_tensor *out, char **name, mfs_error *err);

/* Encode a tensor as a TensorProto (raw_data); *buf is malloc'd. */
int onnx_tensor_encode(const mfs_tensor *t, const char *name,
		       void **buf, size_t *len, mfs_error *err);

/* Decode a test-data .pb file holding a value of like->kind: a
 * TensorProto, a SequenceProto (of tensors) or an OptionalProto (of a
 * tensor or a sequence): the bytes do not say which, the model does.
 * An empty sequence or optional takes like->dtype (and like->elem_kind)
 * since its bytes need not carry them.  (onnx_value.c) */
int onnx_value_decode(const void *buf, size_t len, const char *base_dir,
		      const mfs_tensor *like, mfs_tensor *out, mfs_error *err);

/* Encode any value as its ONNX message (the inverse); *buf is malloc'd. */
int onnx_value_encode(const mfs_tensor *t, const char *name, void **buf,
		      size_t *len, mfs_error *err);

/* Free a node's contents (strings, attributes, subgraphs) and zero it;
 * for graph rewrites that remove a node (fusion.c).  The node itself
 * stays where it is, in its graph's array. */
void onnx_node_release(onnx_node *n);

/* What messages call a node: its name, or its first output's name when
 * it has none (exported models often leave names empty), or "?". */
const char *onnx_node_label(const onnx_node *n);

/* Attribute lookup on a node: NULL when absent. */
const onnx_attr *onnx_node_attr(const onnx_node *n, const char *name);
/* Typed getters returning def when the attribute is absent. */
int64_t onnx_attr_int(const onnx_node *n, const char *name, int64_t def);
float onnx_attr_float(const onnx_node *n, const char *name, float def);
const char *onnx_attr_string(const onnx_node *n, const char *name, const char *def);
/* INTS attribute: returns count (0 when absent) and sets *vals (borrowed). */
size_t onnx_attr_ints(const onnx_node *n, const char *name, const int64_t **vals);

#endif

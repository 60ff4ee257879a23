/* onnx_reader.c - ModelProto (protobuf wire format) into onnx.h's structs.
 *
 * Why a reader of our own rather than protobuf-c with a compiled schema:
 *  - The engine uses a small, frozen subset of onnx.proto (about 40 fields
 *    in 10 messages).  Mapping them by hand is ~1000 lines; protobuf-c
 *    would add a code generator to the build, a generated copy of
 *    onnx.proto, and a second set of structs we would still have to
 *    convert into the engine's (with dtype and shape checks) anyway.
 *  - Hostile files: protobuf-c unpacks the whole message tree up front,
 *    allocating per repeated element as declared, and it lets a
 *    TensorProto's dims disagree with its data.  Here every length is
 *    checked against the bytes left in its enclosing message (pb_wire.c),
 *    every array is sized by a counting pass over bytes that are really
 *    there, a tensor's declared shape must match the data it carries
 *    before anything is allocated (onnx_tensor.c), and nesting (graphs in
 *    If/Loop attributes) is bounded by MAX_GRAPH_DEPTH.  The limits are
 *    in one place and the fuzz targets (tests/fuzz/) exercise them.
 *  - Error messages can say where the problem is: each level prefixes its
 *    context ("graph 'main': node 3 (Conv 'c1'): attribute 'pads': ...").
 *  - Unknown fields are skipped by wire type, so newer ONNX files load.
 *
 * Not supported (each a clear -ENOTSUP, never silently ignored):
 * sparse initializers, string tensors, segmented tensors, attributes of
 * type TENSORS/GRAPHS/SPARSE_TENSOR(S)/TYPE_PROTO(S), and attribute
 * references (ref_attr_name, only meaningful inside ONNX functions).
 *
 * The reader's parts: this file (GraphProto, NodeProto, AttributeProto,
 * which nest in each other, and the attribute getters), onnx_types.c
 * (ValueInfoProto, TypeProto), onnx_model.c (ModelProto, loading a file);
 * the state and wire helpers they share are in onnx_read.h.
 */
#include "onnx.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_read.h"

/* If/Loop/Scan bodies nest graphs; real models go 2-3 deep. */
#define MAX_GRAPH_DEPTH 32

/* A TypeProto on its own (an attribute of type TYPE_PROTO, Optional's
 * 'type'): its kinds and dtype; dtype UNDEFINED when it is of no kind the
 * engine has. */
static int parse_type_attr(rd *c, const uint8_t *buf, size_t len, onnx_attr *a)
{
	onnx_value_info v = { 0 };
	bool other = false;
	int rc = onnx_parse_type(c, buf, len, &v, 0, &other);

	a->tp_kind = v.kind;
	a->tp_elem_kind = v.elem_kind;
	a->tp_dtype = other ? MFS_DT_UNDEFINED : v.dtype;
	for (int i = 0; i < MFS_MAX_RANK; i++)
		free(v.dim_params[i]);
	return rc;
}

/* AttributeProto ------------------------------------------------------- */

enum {
	AT_NAME = 1, AT_F = 2, AT_I = 3, AT_S = 4, AT_T = 5, AT_G = 6,
	AT_FLOATS = 7, AT_INTS = 8, AT_STRINGS = 9, AT_TENSORS = 10,
	AT_GRAPHS = 11, AT_TP = 14, AT_TYPE_PROTOS = 15, AT_TYPE = 20,
	AT_REF_ATTR_NAME = 21, AT_SPARSE_TENSOR = 22, AT_SPARSE_TENSORS = 23,
	AT_NFIELDS = 24
};

/* Counting pass: the repeated fields' arrays are sized by the elements
 * really present, then allocated. */
static int alloc_attr_arrays(rd *c, const uint8_t *buf, size_t len, onnx_attr *a)
{
	long long n_floats = 0, n_ints = 0, n_strings = 0;
	pb_reader r = pb_reader_init(buf, len);
	pb_field f;
	const char *why = NULL;
	int rc;

	while ((rc = pb_next(&r, &f, &why)) > 0) {
		rc = 0;
		if (f.num == AT_FLOATS) {
			if (f.wt == PB_WT_I32)
				n_floats++;
			else if (f.wt == PB_WT_LEN && f.len % 4 == 0)
				n_floats += (long long)(f.len / 4);
			else
				return wrong_wire(c, "AttributeProto", "floats", &f);
		} else if (f.num == AT_INTS) {
			if (f.wt == PB_WT_VARINT) {
				n_ints++;
			} else if (f.wt == PB_WT_LEN) {
				long long n = pb_count_varints(f.data, f.len, &why);
				if (n < 0)
					return malformed(c, "AttributeProto.ints", why);
				n_ints += n;
			} else {
				return wrong_wire(c, "AttributeProto", "ints", &f);
			}
		} else if (f.num == AT_STRINGS) {
			n_strings++;
		}
	}
	if (rc < 0)
		return malformed(c, "AttributeProto", why);
	if ((n_floats && !(a->floats = alloc_array(n_floats, sizeof(float)))) ||
	    (n_ints && !(a->ints = alloc_array(n_ints, sizeof(int64_t)))) ||
	    (n_strings && !(a->strings = alloc_array(n_strings, sizeof(char *)))))
		return oom(c);
	return 0;
}

/* A bytes field as a NUL-terminated copy (it may hold NULs: callers that
 * care keep f->len). */
static int get_bytes(rd *c, const pb_field *f, const char *field, char **out)
{
	char *s;

	if (f->wt != PB_WT_LEN)
		return wrong_wire(c, "AttributeProto", field, f);
	if (!(s = malloc(f->len + 1)))
		return oom(c);
	if (f->len)
		memcpy(s, f->data, f->len);
	s[f->len] = '\0';
	*out = s;
	return 0;
}

/* One element (or a packed run) of the floats or ints field, into the
 * arrays alloc_attr_arrays sized. */
static int get_repeated(rd *c, const pb_field *f, onnx_attr *a)
{
	const char *why = NULL;

	if (f->num == AT_FLOATS) {
		if (f->wt == PB_WT_I32) {
			uint32_t bits = (uint32_t)f->u;
			memcpy(&a->floats[a->n_floats++], &bits, 4);
		} else if (f->len) {
			memcpy(&a->floats[a->n_floats], f->data, f->len);
			a->n_floats += f->len / 4;
		}
	} else if (f->wt == PB_WT_VARINT) {
		a->ints[a->n_ints++] = (int64_t)f->u;
	} else {
		pb_reader p = pb_reader_init(f->data, f->len);
		uint64_t v;
		while (p.p < p.end) {
			if (pb_read_varint(&p, &v, &why))
				return malformed(c, "AttributeProto.ints", why);
			a->ints[a->n_ints++] = (int64_t)v;
		}
	}
	return 0;
}

/* The value fields the engine has no use for: refused in words. */
static int unsupported_attr_field(rd *c, int num)
{
	if (num == AT_REF_ATTR_NAME)
		return mfs_fail(c->err, ENOTSUP,
				"attribute references (ref_attr_name) are not supported");
	return mfs_fail(c->err, ENOTSUP,
			"attribute values of type %s are not supported",
			num == AT_TENSORS ? "TENSORS" :
			num == AT_GRAPHS ? "GRAPHS" :
			num == AT_TP ? "TYPE_PROTO" :
			num == AT_TYPE_PROTOS ? "TYPE_PROTOS" :
			num == AT_SPARSE_TENSOR ? "SPARSE_TENSOR" :
			"SPARSE_TENSORS");
}

/* One field of an AttributeProto into a (type into *type). */
static int read_attr_field(rd *c, const pb_field *f, onnx_attr *a, int64_t *type)
{
	char *s;
	int rc;

	switch (f->num) {
	case AT_NAME:
		return get_string(c, f, "AttributeProto", "name", &a->name);
	case AT_TYPE:
		return get_varint(c, f, "AttributeProto", "type", type);
	case AT_F:
		if (f->wt != PB_WT_I32)
			return wrong_wire(c, "AttributeProto", "f", f);
		{
			uint32_t bits = (uint32_t)f->u;
			memcpy(&a->f, &bits, 4);
		}
		return 0;
	case AT_I:
		return get_varint(c, f, "AttributeProto", "i", &a->i);
	case AT_S:
		if ((rc = get_bytes(c, f, "s", &s)))
			return rc;
		free(a->s);
		a->s = s;
		a->s_len = f->len;
		return 0;
	case AT_T:
		if (f->wt != PB_WT_LEN)
			return wrong_wire(c, "AttributeProto", "t", f);
		mfs_tensor_release(&a->t);
		return onnx_tensor_decode_budget(f->data, f->len, c->base_dir,
						 &c->budget, &a->t, NULL, c->err);
	case AT_G:
		if (f->wt != PB_WT_LEN)
			return wrong_wire(c, "AttributeProto", "g", f);
		if (a->g) {
			onnx_graph_release(a->g);
			free(a->g);
		}
		a->g = calloc(1, sizeof(*a->g));
		if (!a->g)
			return oom(c);
		return onnx_parse_graph(c, f->data, f->len, a->g);
	case AT_FLOATS:
	case AT_INTS:
		return get_repeated(c, f, a);
	case AT_STRINGS:
		if ((rc = get_bytes(c, f, "strings", &s)))
			return rc;
		a->strings[a->n_strings++] = s;
		return 0;
	case AT_TP:
		if (f->wt != PB_WT_LEN)
			return wrong_wire(c, "AttributeProto", "tp", f);
		return parse_type_attr(c, f->data, f->len, a);
	case AT_REF_ATTR_NAME:
	case AT_TENSORS:
	case AT_GRAPHS:
	case AT_TYPE_PROTOS:
	case AT_SPARSE_TENSOR:
	case AT_SPARSE_TENSORS:
		return unsupported_attr_field(c, f->num);
	default:
		return 0;
	}
}

/* The attribute's type: as stored, or (IR version 1 files carry none)
 * from the value given; refused when unsupported or without its value. */
static int check_attr_type(rd *c, onnx_attr *a, int64_t type, const bool *seen)
{
	if (type == 0) {
		type = seen[AT_F] ? ONNX_ATTR_FLOAT :
		       seen[AT_I] ? ONNX_ATTR_INT :
		       seen[AT_S] ? ONNX_ATTR_STRING :
		       seen[AT_T] ? ONNX_ATTR_TENSOR :
		       seen[AT_G] ? ONNX_ATTR_GRAPH :
		       seen[AT_FLOATS] ? ONNX_ATTR_FLOATS :
		       seen[AT_INTS] ? ONNX_ATTR_INTS :
		       seen[AT_STRINGS] ? ONNX_ATTR_STRINGS : 0;
		if (type == 0)
			return mfs_fail(c->err, EINVAL,
					"attribute '%s' has neither a type nor a value",
					a->name);
	}
	switch (type) {
	case ONNX_ATTR_FLOAT: case ONNX_ATTR_INT: case ONNX_ATTR_STRING:
	case ONNX_ATTR_FLOATS: case ONNX_ATTR_INTS: case ONNX_ATTR_STRINGS:
		break;
	case ONNX_ATTR_TENSOR:
		if (!seen[AT_T])
			return mfs_fail(c->err, EINVAL,
					"attribute '%s' of type TENSOR has no tensor",
					a->name);
		break;
	case ONNX_ATTR_GRAPH:
		if (!a->g)
			return mfs_fail(c->err, EINVAL,
					"attribute '%s' of type GRAPH has no graph",
					a->name);
		break;
	case ONNX_ATTR_TYPE_PROTO:
		if (!seen[AT_TP])
			return mfs_fail(c->err, EINVAL,
					"attribute '%s' of type TYPE_PROTO has no type",
					a->name);
		break;
	default:
		return mfs_fail(c->err, ENOTSUP,
				"attribute '%s' has unsupported type %lld",
				a->name, (long long)type);
	}
	a->type = (onnx_attr_type)type;
	if (type == ONNX_ATTR_STRING && !a->s && !(a->s = strdup("")))
		return oom(c);
	return 0;
}

static int parse_attr(rd *c, const uint8_t *buf, size_t len, onnx_attr *a)
{
	pb_reader r;
	pb_field f;
	const char *why = NULL;
	bool seen[AT_NFIELDS] = { false };
	int64_t type = 0;
	int rc;

	if ((rc = alloc_attr_arrays(c, buf, len, a)))
		return rc;
	r = pb_reader_init(buf, len);
	while ((rc = pb_next(&r, &f, &why)) > 0) {
		if (f.num < AT_NFIELDS)
			seen[f.num] = true;
		if ((rc = read_attr_field(c, &f, a, &type)))
			return rc;
	}
	if (rc < 0)
		return malformed(c, "AttributeProto", why);
	if (!a->name || !*a->name)
		return mfs_fail(c->err, EINVAL, "attribute without a name");
	return check_attr_type(c, a, type, seen);
}

static void attr_release(onnx_attr *a)
{
	free(a->name);
	free(a->s);
	mfs_tensor_release(&a->t);
	if (a->g) {
		onnx_graph_release(a->g);
		free(a->g);
	}
	free(a->floats);
	free(a->ints);
	for (size_t i = 0; i < a->n_strings; i++)
		free(a->strings[i]);
	free(a->strings);
	memset(a, 0, sizeof(*a));
}

/* NodeProto ------------------------------------------------------------ */

enum { ND_INPUT = 1, ND_OUTPUT = 2, ND_NAME = 3, ND_OP_TYPE = 4,
       ND_ATTRIBUTE = 5, ND_DOMAIN = 7, ND_NFIELDS = 8 };

static int parse_node(rd *c, const uint8_t *buf, size_t len, onnx_node *n)
{
	long long counts[ND_NFIELDS] = { 0 };
	pb_reader r;
	pb_field f;
	const char *why = NULL;
	int rc;

	rc = count_fields(c, buf, len, "NodeProto", counts, ND_NFIELDS);
	if (rc)
		return rc;
	if ((counts[ND_INPUT] &&
	     !(n->inputs = alloc_array(counts[ND_INPUT], sizeof(char *)))) ||
	    (counts[ND_OUTPUT] &&
	     !(n->outputs = alloc_array(counts[ND_OUTPUT], sizeof(char *)))) ||
	    (counts[ND_ATTRIBUTE] &&
	     !(n->attrs = alloc_array(counts[ND_ATTRIBUTE], sizeof(onnx_attr)))))
		return oom(c);

	r = pb_reader_init(buf, len);
	while ((rc = pb_next(&r, &f, &why)) > 0) {
		rc = 0;
		switch (f.num) {
		case ND_INPUT:
			rc = get_string(c, &f, "NodeProto", "input",
					&n->inputs[n->n_inputs]);
			if (!rc)
				n->n_inputs++;
			break;
		case ND_OUTPUT:
			rc = get_string(c, &f, "NodeProto", "output",
					&n->outputs[n->n_outputs]);
			if (!rc)
				n->n_outputs++;
			break;
		case ND_NAME:
			rc = get_string(c, &f, "NodeProto", "name", &n->name);
			break;
		case ND_OP_TYPE:
			rc = get_string(c, &f, "NodeProto", "op_type", &n->op_type);
			break;
		case ND_DOMAIN:
			rc = get_string(c, &f, "NodeProto", "domain", &n->domain);
			break;
		case ND_ATTRIBUTE: {
			if (f.wt != PB_WT_LEN)
				return wrong_wire(c, "NodeProto", "attribute", &f);
			onnx_attr *a = &n->attrs[n->n_attrs++];
			rc = parse_attr(c, f.data, f.len, a);
			rc = in_element(c, rc, "attribute", n->n_attrs - 1, a->name);
			break;
		}
		default:
			break;
		}
		if (rc)
			return rc;
	}
	if (rc < 0)
		return malformed(c, "NodeProto", why);
	if (!n->op_type || !*n->op_type)
		return mfs_fail(c->err, EINVAL, "node has no op_type");
	if ((rc = default_string(c, &n->name)) ||
	    (rc = default_string(c, &n->domain)))
		return rc;
	return 0;
}

void onnx_node_release(onnx_node *n)
{
	free(n->name);
	free(n->op_type);
	free(n->domain);
	for (int i = 0; i < n->n_inputs; i++)
		free(n->inputs[i]);
	free(n->inputs);
	for (int i = 0; i < n->n_outputs; i++)
		free(n->outputs[i]);
	free(n->outputs);
	for (int i = 0; i < n->n_attrs; i++)
		attr_release(&n->attrs[i]);
	free(n->attrs);
	memset(n, 0, sizeof(*n));
}

/* GraphProto ----------------------------------------------------------- */

enum { GR_NODE = 1, GR_NAME = 2, GR_INITIALIZER = 5, GR_INPUT = 11,
       GR_OUTPUT = 12, GR_VALUE_INFO = 13, GR_SPARSE_INITIALIZER = 15,
       GR_NFIELDS = 16 };

static int parse_initializer(rd *c, const pb_field *f, onnx_initializer *in)
{
	int rc;

	if (f->wt != PB_WT_LEN)
		return wrong_wire(c, "GraphProto", "initializer", f);
	rc = onnx_tensor_decode_budget(f->data, f->len, c->base_dir, &c->budget,
				       &in->tensor, &in->name, c->err);
	if (rc) {
		/* Take the name alone, so the message can say which. */
		pb_reader r = pb_reader_init(f->data, f->len);
		pb_field e;
		const char *why;
		while (pb_next(&r, &e, &why) > 0)
			if (e.num == 8 && e.wt == PB_WT_LEN) {
				free(in->name);
				if (pb_strdup(e.data, e.len, &in->name))
					in->name = NULL;
			}
		return rc;
	}
	if (!in->name || !*in->name)
		return mfs_fail(c->err, EINVAL, "initializer without a name");
	return 0;
}

/* Counting pass: the arrays are sized by the elements really present.
 * It also takes the name first, so that errors in nodes (serialized
 * before the name) can say which graph. */
static int alloc_graph_arrays(rd *c, const uint8_t *buf, size_t len,
			      onnx_graph *g)
{
	long long counts[GR_NFIELDS] = { 0 };
	pb_reader r = pb_reader_init(buf, len);
	pb_field f;
	const char *why = NULL;
	int rc;

	while ((rc = pb_next(&r, &f, &why)) > 0) {
		rc = 0;
		if (f.num < GR_NFIELDS)
			counts[f.num]++;
		if (f.num == GR_NAME &&
		    (rc = get_string(c, &f, "GraphProto", "name", &g->name)))
			return rc;
	}
	if (rc < 0)
		return malformed(c, "GraphProto", why);
	if (counts[GR_SPARSE_INITIALIZER])
		return mfs_fail(c->err, ENOTSUP,
				"sparse initializers are not supported");
	if ((counts[GR_NODE] &&
	     !(g->nodes = alloc_array(counts[GR_NODE], sizeof(onnx_node)))) ||
	    (counts[GR_INITIALIZER] &&
	     !(g->initializers = alloc_array(counts[GR_INITIALIZER],
					     sizeof(onnx_initializer)))) ||
	    (counts[GR_INPUT] &&
	     !(g->inputs = alloc_array(counts[GR_INPUT],
				       sizeof(onnx_value_info)))) ||
	    (counts[GR_OUTPUT] &&
	     !(g->outputs = alloc_array(counts[GR_OUTPUT],
					sizeof(onnx_value_info)))) ||
	    (counts[GR_VALUE_INFO] &&
	     !(g->value_infos = alloc_array(counts[GR_VALUE_INFO],
					    sizeof(onnx_value_info)))))
		return oom(c);
	return 0;
}

static int graph_node(rd *c, const pb_field *f, onnx_graph *g)
{
	onnx_node *n;
	int rc;

	if (f->wt != PB_WT_LEN)
		return wrong_wire(c, "GraphProto", "node", f);
	n = &g->nodes[g->n_nodes++];
	rc = parse_node(c, f->data, f->len, n);
	if (rc && want_context(c))
		mfs_error_prefix(c->err, "node %d (%s '%s'): ", g->n_nodes - 1,
				 n->op_type ? n->op_type : "?",
				 n->name ? n->name : "");
	return rc;
}

/* An input, output or value_info (kind) into v, the idx-th of its list. */
static int graph_value_info(rd *c, const pb_field *f, const char *kind,
			    onnx_value_info *v, int idx)
{
	int rc = f->wt != PB_WT_LEN ? wrong_wire(c, "GraphProto", kind, f)
		 : onnx_parse_value_info(c, f->data, f->len, v);
	return in_element(c, rc, kind, idx, v->name);
}

/* One field of a GraphProto into g (the name was taken when counting). */
static int read_graph_field(rd *c, const pb_field *f, onnx_graph *g)
{
	onnx_initializer *in;
	int rc;

	switch (f->num) {
	case GR_NODE:
		return graph_node(c, f, g);
	case GR_INITIALIZER:
		in = &g->initializers[g->n_initializers++];
		rc = parse_initializer(c, f, in);
		return in_element(c, rc, "initializer", g->n_initializers - 1,
				  in->name);
	case GR_INPUT:
		g->n_inputs++;
		return graph_value_info(c, f, "input", &g->inputs[g->n_inputs - 1],
					g->n_inputs - 1);
	case GR_OUTPUT:
		g->n_outputs++;
		return graph_value_info(c, f, "output", &g->outputs[g->n_outputs - 1],
					g->n_outputs - 1);
	case GR_VALUE_INFO:
		g->n_value_infos++;
		return graph_value_info(c, f, "value_info",
					&g->value_infos[g->n_value_infos - 1],
					g->n_value_infos - 1);
	default:
		return 0;
	}
}

static int parse_graph_body(rd *c, const uint8_t *buf, size_t len,
			    onnx_graph *g)
{
	pb_reader r;
	pb_field f;
	const char *why = NULL;
	int rc;

	if ((rc = alloc_graph_arrays(c, buf, len, g)))
		return rc;
	r = pb_reader_init(buf, len);
	while ((rc = pb_next(&r, &f, &why)) > 0)
		if ((rc = read_graph_field(c, &f, g)))
			return rc;
	if (rc < 0)
		return malformed(c, "GraphProto", why);
	return default_string(c, &g->name);
}

int onnx_parse_graph(rd *c, const uint8_t *buf, size_t len, onnx_graph *g)
{
	int rc;

	if (c->depth >= MAX_GRAPH_DEPTH)
		return mfs_fail(c->err, EINVAL,
				"graphs nested more than %d deep", MAX_GRAPH_DEPTH);
	c->depth++;
	rc = parse_graph_body(c, buf, len, g);
	if (rc && g->name && *g->name && want_context(c))
		mfs_error_prefix(c->err, "graph '%s': ", g->name);
	c->depth--;
	return rc;
}

void onnx_graph_release(onnx_graph *g)
{
	free(g->name);
	for (int i = 0; i < g->n_nodes; i++)
		onnx_node_release(&g->nodes[i]);
	free(g->nodes);
	for (int i = 0; i < g->n_initializers; i++) {
		free(g->initializers[i].name);
		mfs_tensor_release(&g->initializers[i].tensor);
	}
	free(g->initializers);
	for (int i = 0; i < g->n_defaults; i++) {
		free(g->defaults[i].name);
		mfs_tensor_release(&g->defaults[i].tensor);
	}
	free(g->defaults);
	for (int i = 0; i < g->n_inputs; i++)
		onnx_value_info_release(&g->inputs[i]);
	free(g->inputs);
	for (int i = 0; i < g->n_outputs; i++)
		onnx_value_info_release(&g->outputs[i]);
	free(g->outputs);
	for (int i = 0; i < g->n_value_infos; i++)
		onnx_value_info_release(&g->value_infos[i]);
	free(g->value_infos);
	memset(g, 0, sizeof(*g));
}

/* Attribute getters ---------------------------------------------------- */

const onnx_attr *onnx_node_attr(const onnx_node *n, const char *name)
{
	for (int i = 0; i < n->n_attrs; i++)
		if (n->attrs[i].name && !strcmp(n->attrs[i].name, name))
			return &n->attrs[i];
	return NULL;
}

const char *onnx_node_label(const onnx_node *n)
{
	if (n->name && *n->name)
		return n->name;
	return n->n_outputs && n->outputs[0] ? n->outputs[0] : "?";
}

int64_t onnx_attr_int(const onnx_node *n, const char *name, int64_t def)
{
	const onnx_attr *a = onnx_node_attr(n, name);
	return a && a->type == ONNX_ATTR_INT ? a->i : def;
}

float onnx_attr_float(const onnx_node *n, const char *name, float def)
{
	const onnx_attr *a = onnx_node_attr(n, name);
	return a && a->type == ONNX_ATTR_FLOAT ? a->f : def;
}

const char *onnx_attr_string(const onnx_node *n, const char *name,
			     const char *def)
{
	const onnx_attr *a = onnx_node_attr(n, name);
	return a && a->type == ONNX_ATTR_STRING ? a->s : def;
}

size_t onnx_attr_ints(const onnx_node *n, const char *name,
		      const int64_t **vals)
{
	const onnx_attr *a = onnx_node_attr(n, name);
	if (!a || a->type != ONNX_ATTR_INTS) {
		*vals = NULL;
		return 0;
	}
	*vals = a->ints;
	return a->n_ints;
}

/* onnx_types.c - ValueInfoProto and TypeProto (onnx_read.h): a graph
 * input's, output's or value_info's name, kind (tensor, sequence,
 * optional), element type and shape with its symbolic dims; also the
 * TypeProto of an attribute (Optional's 'type').  Types the engine has no
 * kind for are marked, for the graph to refuse by name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_read.h"

static int parse_dim(rd *c, const uint8_t *buf, size_t len,
		     onnx_value_info *v, int i)
{
	pb_reader r = pb_reader_init(buf, len);
	pb_field f;
	const char *why = NULL;
	int rc;

	v->dims[i] = -1;
	while ((rc = pb_next(&r, &f, &why)) > 0) {
		rc = 0;
		if (f.num == 1) {              /* dim_value */
			int64_t d = -1;
			rc = get_varint(c, &f, "Dimension", "dim_value", &d);
			if (rc)
				return rc;
			v->dims[i] = d >= 0 ? d : -1;
			free(v->dim_params[i]);
			v->dim_params[i] = NULL;
		} else if (f.num == 2) {       /* dim_param */
			rc = get_string(c, &f, "Dimension", "dim_param",
					&v->dim_params[i]);
			if (rc)
				return rc;
			v->dims[i] = -1;
		}
	}
	if (rc < 0)
		return malformed(c, "TensorShapeProto.Dimension", why);
	return 0;
}

static int parse_shape(rd *c, const uint8_t *buf, size_t len,
		       onnx_value_info *v)
{
	pb_reader r = pb_reader_init(buf, len);
	pb_field f;
	const char *why = NULL;
	int rc;

	v->has_shape = true;
	v->rank = 0;
	while ((rc = pb_next(&r, &f, &why)) > 0) {
		rc = 0;
		if (f.num != 1)
			continue;
		if (f.wt != PB_WT_LEN)
			return wrong_wire(c, "TensorShapeProto", "dim", &f);
		if (v->rank >= MFS_MAX_RANK)
			return mfs_fail(c->err, ENOTSUP,
					"shape has more than %d dims", MFS_MAX_RANK);
		rc = parse_dim(c, f.data, f.len, v, v->rank);
		v->rank++;
		if (rc)
			return rc;
	}
	if (rc < 0)
		return malformed(c, "TensorShapeProto", why);
	return 0;
}

static int parse_tensor_type(rd *c, const uint8_t *buf, size_t len,
			     onnx_value_info *v)
{
	pb_reader r = pb_reader_init(buf, len);
	pb_field f;
	const char *why = NULL;
	int64_t et = 0;
	int rc;

	while ((rc = pb_next(&r, &f, &why)) > 0) {
		rc = 0;
		if (f.num == 1) {
			rc = get_varint(c, &f, "TypeProto.Tensor", "elem_type", &et);
			if (rc)
				return rc;
			if (et < 0 || et > 255)
				return mfs_fail(c->err, EINVAL,
						"elem_type %lld is invalid",
						(long long)et);
			v->dtype = (mfs_dtype)et;
		} else if (f.num == 2) {
			if (f.wt != PB_WT_LEN)
				return wrong_wire(c, "TypeProto.Tensor", "shape", &f);
			for (int i = 0; i < v->rank; i++) {
				free(v->dim_params[i]);
				v->dim_params[i] = NULL;
			}
			rc = parse_shape(c, f.data, f.len, v);
			if (rc)
				return rc;
		}
	}
	if (rc < 0)
		return malformed(c, "TypeProto.Tensor", why);
	return 0;
}

/* TypeProto: a tensor_type (1), a sequence_type (4) of tensors, or an
 * optional_type (9) of a tensor or of a sequence of tensors; each of the
 * two wrappers holds its element's TypeProto in field 1.  Anything else
 * (maps, sparse tensors, sequences of sequences) sets *other: the graph
 * then refuses the value by name. */
int onnx_parse_type(rd *c, const uint8_t *buf, size_t len,
		    onnx_value_info *v, int depth, bool *other)
{
	pb_reader t = pb_reader_init(buf, len);
	pb_field tf;
	const char *why = NULL;
	int rc;

	while ((rc = pb_next(&t, &tf, &why)) > 0) {
		rc = 0;
		if (tf.num == 1) {
			if (tf.wt != PB_WT_LEN)
				return wrong_wire(c, "TypeProto", "tensor_type", &tf);
			rc = parse_tensor_type(c, tf.data, tf.len, v);
		} else if (tf.num == 4 || tf.num == 9) {
			mfs_kind k = tf.num == 4 ? MFS_KIND_SEQUENCE : MFS_KIND_OPTIONAL;
			pb_reader e;
			pb_field ef;
			if (tf.wt != PB_WT_LEN)
				return wrong_wire(c, "TypeProto", "sequence_type", &tf);
			if (depth == 0) {
				v->kind = k;
			} else if (depth == 1 && v->kind == MFS_KIND_OPTIONAL &&
				   k == MFS_KIND_SEQUENCE) {
				v->elem_kind = k;
			} else {
				*other = true;
				continue;
			}
			e = pb_reader_init(tf.data, tf.len);
			while ((rc = pb_next(&e, &ef, &why)) > 0) {
				rc = 0;
				if (ef.num != 1)
					continue;
				if (ef.wt != PB_WT_LEN)
					return wrong_wire(c, "TypeProto", "elem_type", &ef);
				if ((rc = onnx_parse_type(c, ef.data, ef.len, v, depth + 1,
							  other)))
					return rc;
			}
			if (rc < 0)
				return malformed(c, "TypeProto", why);
		} else if (tf.num == 5 || tf.num == 7 || tf.num == 8) {
			*other = true;    /* map, opaque, sparse_tensor */
		}
		if (rc)
			return rc;
	}
	if (rc < 0)
		return malformed(c, "TypeProto", why);
	return 0;
}

int onnx_parse_value_info(rd *c, const uint8_t *buf, size_t len,
			   onnx_value_info *v)
{
	pb_reader r = pb_reader_init(buf, len);
	pb_field f;
	const char *why = NULL;
	bool other = false;
	int rc;

	while ((rc = pb_next(&r, &f, &why)) > 0) {
		rc = 0;
		if (f.num == 1) {
			rc = get_string(c, &f, "ValueInfoProto", "name", &v->name);
		} else if (f.num == 2) {
			if (f.wt != PB_WT_LEN)
				return wrong_wire(c, "ValueInfoProto", "type", &f);
			rc = onnx_parse_type(c, f.data, f.len, v, 0, &other);
		}
		if (rc)
			return rc;
	}
	if (rc < 0)
		return malformed(c, "ValueInfoProto", why);
	if (other)
		v->dtype = MFS_DT_UNDEFINED;
	return default_string(c, &v->name);
}

void onnx_value_info_release(onnx_value_info *v)
{
	free(v->name);
	for (int i = 0; i < MFS_MAX_RANK; i++)
		free(v->dim_params[i]);
	memset(v, 0, sizeof(*v));
}

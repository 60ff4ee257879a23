/* graph_fold.c - calling an operator at compile (graph_internal.h), for
 * pass 4: constant folding (run it on constant inputs, its outputs become
 * constants owned by the model) and static shapes (infer() on known
 * input shapes).  graph.c decides which nodes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

/* The "operator inferred something impossible" check shared with the
 * backends' run-time infer. */
static int check_inferred(const mfs_node *nd, mfs_tensor **out, mfs_error *err)
{
	for (int k = 0; k < nd->n_out; k++) {
		if (!out[k])
			continue;
		if (!mfs_dtype_size(out[k]->dtype) ||
		    (out[k]->kind == MFS_KIND_TENSOR && !graph_shape_valid(&out[k]->shape)))
			return mfs_fail(err, EIO,
					"%s '%s': operator inferred an invalid type or shape for output %d",
					nd->onnx->op_type, onnx_node_label(nd->onnx), k);
	}
	return 0;
}

/* The operator's inputs as compile knows them (a constant, or a value of
 * known type and shape without data), its outputs zeroed. */
static int bind_compile_args(compiler *c, const mfs_node *nd)
{
	const mfs_graph *m = c->m;
	mfs_tensor *tin = c->tin, *tout = c->tout;

	for (int k = 0; k < nd->n_in; k++) {
		const mfs_value *v = nd->in[k] >= 0 ? &m->values[nd->in[k]] : NULL;
		if (!v) {
			c->pin[k] = NULL;
			continue;
		}
		if (v->kind == MFS_VAL_CONST) {
			tin[k] = v->constant;
		} else {
			memset(&tin[k], 0, sizeof(tin[k]));
			tin[k].dtype = v->dtype;
			tin[k].shape = v->shape;
			tin[k].nbytes = (size_t)mfs_shape_numel(&v->shape) *
					mfs_dtype_size(v->dtype);
		}
		/* as at run (cpu_backend.c, bind_inputs): a folded sequence
		 * never reaches an operator that reads tensors only */
		if (tin[k].kind != MFS_KIND_TENSOR &&
		    !(nd->def->flags & MFS_OP_CONTAINERS))
			return mfs_fail(c->err, EINVAL,
					"%s '%s': input %d ('%s') is a %s; the operator takes tensors",
					nd->onnx->op_type, onnx_node_label(nd->onnx), k,
					nd->onnx->inputs[k], mfs_kind_name(tin[k].kind));
		c->pin[k] = &tin[k];
	}
	for (int k = 0; k < nd->n_out; k++) {
		memset(&tout[k], 0, sizeof(tout[k]));
		c->pout[k] = nd->out[k] >= 0 ? &tout[k] : NULL;
	}
	graph_clear_pad(c, nd);
	return 0;
}

/* The inferred output shapes become the values' static shapes. */
static void keep_static_shapes(compiler *c, const mfs_node *nd)
{
	for (int k = 0; k < nd->n_out; k++) {
		mfs_value *v;
		if (!c->pout[k])
			continue;
		if (c->tout[k].kind != MFS_KIND_TENSOR)
			continue;   /* its items' shapes are data */
		v = &c->m->values[nd->out[k]];
		v->dtype = c->tout[k].dtype;
		v->shape = c->tout[k].shape;
		v->shape_static = true;
	}
}

/* Allocate the inferred tensor outputs, refusing one over the engine's
 * tensor size limit. */
static int alloc_folded_outputs(compiler *c, const mfs_node *nd)
{
	mfs_tensor *tout = c->tout;
	int rc = 0;

	for (int k = 0; !rc && k < nd->n_out; k++) {
		mfs_dtype dt;
		mfs_shape sh;
		double bytes;
		if (!c->pout[k] || tout[k].kind != MFS_KIND_TENSOR)
			continue;   /* run() makes a container's items */
		dt = tout[k].dtype;
		sh = tout[k].shape;
		bytes = (double)mfs_dtype_size(dt);
		for (int d = 0; d < sh.rank; d++)
			bytes *= (double)sh.dims[d];
		if (bytes > (double)mfs_engine_max_tensor_bytes()) {
			char txt[160];
			rc = mfs_fail(c->err, EFBIG,
				      "%s '%s': output %d of shape %s is larger than the %zu-byte limit",
				      nd->onnx->op_type, onnx_node_label(nd->onnx), k,
				      mfs_shape_format(&sh, txt, sizeof(txt)),
				      mfs_engine_max_tensor_bytes());
			break;
		}
		rc = mfs_tensor_alloc(&tout[k], dt, &sh, c->err);
	}
	return rc;
}

/* Prepare and run the operator on the bound arguments; on failure the
 * outputs are released and the error says the fold failed. */
static int run_folded(compiler *c, const mfs_node *nd, mfs_op_ctx *ctx)
{
	int rc = alloc_folded_outputs(c, nd);

	if (!rc && nd->def->prepare)
		rc = nd->def->prepare(ctx);
	if (!rc)
		rc = nd->def->run(ctx);
	for (int k = 0; !rc && k < nd->n_out; k++)   /* op.h: MFS_OP_STRINGS */
		if (c->pout[k] && c->tout[k].dtype == MFS_DT_STRING && !c->tout[k].strings)
			rc = mfs_tensor_own_strings(&c->tout[k], c->err);
	if (nd->def->release && *ctx->state)
		nd->def->release(*ctx->state);
	if (rc) {
		for (int k = 0; k < nd->n_out; k++)
			mfs_tensor_release(&c->tout[k]);
		if (rc > 0)
			rc = -EIO;
		if (!c->err->code)
			mfs_fail(c->err, -rc, "%s '%s': failed while folding constants",
				 nd->onnx->op_type, onnx_node_label(nd->onnx));
	}
	return rc;
}

/* The folded outputs become constants owned by the model. */
static void keep_constants(compiler *c, const mfs_node *nd)
{
	for (int k = 0; k < nd->n_out; k++) {
		mfs_value *v;
		if (!c->pout[k])
			continue;
		v = &c->m->values[nd->out[k]];
		v->kind = MFS_VAL_CONST;
		v->constant = c->tout[k];
		v->constant.layout = MFS_LAYOUT_PLAIN;
		v->dtype = c->tout[k].dtype;
		v->shape = c->tout[k].shape;
		v->shape_static = true;
	}
	c->m->n_folded++;
}

/* Call a node's operator at compile time.  fold: run it on its constant
 * inputs (or, for Shape/Size, on an input whose shape alone is known: data
 * NULL) and make its outputs constants owned by the model.  Otherwise only
 * infer static output shapes (MFS_SHAPE_DEPENDS_ON_DATA leaves them
 * unknown). */
int graph_call_at_compile(compiler *c, mfs_node *nd, bool fold)
{
	void *state = NULL;
	mfs_op_ctx ctx = {
		.def = nd->def, .node = nd->onnx, .opset = nd->opset,
		.n_in = nd->n_in, .in = c->pin, .n_out = nd->n_out, .out = c->pout,
		.state = &state, .err = c->err,
		.bodies = (const mfs_graph *const *)nd->bodies,
		.n_bodies = nd->n_bodies,
	};
	int rc;

	if ((rc = bind_compile_args(c, nd)))
		return rc;
	rc = nd->def->infer(&ctx);
	if (rc == MFS_SHAPE_DEPENDS_ON_DATA && !fold)
		return 0;
	if (rc > 0)
		rc = mfs_fail(c->err, EIO,
			      "%s '%s': output shape needs data although every input is known",
			      nd->onnx->op_type, onnx_node_label(nd->onnx));
	if (!rc)
		rc = check_inferred(nd, c->pout, c->err);
	if (!rc)
		rc = mfs_op_check_strings(&ctx);
	if (rc)
		return rc;
	if (!fold) {
		keep_static_shapes(c, nd);
		return 0;
	}
	if ((rc = run_folded(c, nd, &ctx)))
		return rc;
	keep_constants(c, nd);
	return 0;
}

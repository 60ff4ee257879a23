/* config_complete.c - check a parsed config against its model directory and
 * its compiled graph, and fill in what it leaves out (Triton's
 * auto-complete, SPEC.md section 2; docs/CONFIG.md states the rules).
 *
 * - `name` must equal the directory's name; absent, it is the directory's.
 * - Every config input/output must name a graph input/output; its
 *   data_type, when given, must be the graph's; its dims, when given, must
 *   agree with the graph's after the batch dim (max_batch_size > 0) and
 *   through `reshape`.  A config dim may fix a dim the graph leaves
 *   variable; it may not make variable a dim the graph fixes (Triton's rule).
 * - Graph inputs/outputs the config does not list are added after the
 *   listed ones, in graph order, with the graph's datatype and dims;
 *   but a config that lists inputs lists every one (Triton's "too few
 *   inputs"), and a listed input or output gives its data_type.
 * - dims and reshape agree as Triton's rule says (same element count, or
 *   the same variable dims with the same counts between them).
 * - An image format (FORMAT_NCHW/NHWC) needs 3 dims after the batch dim.
 * - max_batch_size not given, and the config does not list both inputs
 *   and outputs: the default (4) when every graph input and output has a
 *   variable first dim, with dynamic batching (Triton's ONNX Runtime
 *   backend, its default-max-batch-size).
 * - No instance_group: one instance, KIND_AUTO; a KIND_CPU group without
 *   a count: two instances (Triton's count for ONNX Runtime models).
 */
#include <stdlib.h>
#include <string.h>

#include "config.h"

static int default_max_batch = MFS_DEFAULT_MAX_BATCH_SIZE;

void mfs_config_set_default_max_batch_size(int n)
{
	default_max_batch = n < 0 ? 0 : n;
}

static char *fmt_dims(const int64_t *dims, int rank, char *buf, size_t size)
{
	mfs_shape s = { .rank = rank < 0 ? 0 : rank };

	if (rank < 0) {
		snprintf(buf, size, "(any)");
		return buf;
	}
	memcpy(s.dims, dims, (size_t)s.rank * sizeof(*dims));
	return mfs_shape_format(&s, buf, size);
}

/* The graph tensor's dims after the batch dim, into dims and rank (-1 rank
 * when the graph does not know it). */
static int strip_batch(const mfs_model_config *c, const char *what,
		       const mfs_io_desc *g, int64_t *dims, int *rank,
		       mfs_error *err)
{
	int b = c->max_batch_size > 0 ? 1 : 0;

	if (g->rank < 0) {
		*rank = -1;
		return 0;
	}
	if (b) {
		if (g->rank == 0)
			return mfs_fail(err, EINVAL,
					"%s '%s' is a scalar in the graph, so it has no batch dim for max_batch_size %d",
					what, g->name, c->max_batch_size);
		if (g->dims[0] >= 0 && g->dims[0] < c->max_batch_size)
			return mfs_fail(err, EINVAL,
					"max_batch_size %d, but the graph fixes the batch dim of %s '%s' at %lld",
					c->max_batch_size, what, g->name,
					(long long)g->dims[0]);
	}
	*rank = g->rank - b;
	for (int d = 0; d < *rank; d++)
		dims[d] = g->dims[b + d];
	return 0;
}

/* A sequence or optional of the graph: Triton's config cannot say so,
 * so the graph's kind is taken; what the config may say is its tensors'
 * data_type and dims [-1] (any shape: each tensor has its own).  An
 * optional input may be left out (optional: true).  Batching would have
 * to cut every tensor of a sequence: refused. */
static int complete_container(const mfs_model_config *c, mfs_io_config *io,
			      const char *what, const mfs_io_desc *g, mfs_error *err)
{
	char kind[64];

	mfs_type_format(g->kind, g->elem_kind, g->dtype, kind, sizeof(kind));
	if (c->max_batch_size > 0)
		return mfs_fail(err, EINVAL,
				"%s '%s' is a %s: max_batch_size must be 0 (a sequence is not batched)",
				what, g->name, kind);
	if (io->has_reshape || (io->rank >= 0 && !(io->rank == 1 && io->dims[0] == -1)))
		return mfs_fail(err, EINVAL,
				"%s '%s' is a %s: its config entry may give dims [-1] only, and no reshape",
				what, io->name, kind);
	io->kind = g->kind;
	io->elem_kind = g->elem_kind;
	io->rank = -1;
	if (g->kind == MFS_KIND_OPTIONAL && strcmp(what, "input") == 0)
		io->optional = true;
	return 0;
}

/* The element counts of the runs of fixed dims between variable ones
 * ([2,4,-1,6]: 8, 6), into runs; returns how many. */
static int fixed_runs(const int64_t *dims, int rank, int64_t *runs)
{
	int n = 0;

	runs[0] = 1;
	for (int d = 0; d < rank; d++) {
		if (dims[d] < 0)
			runs[++n] = 1;
		else
			runs[n] *= dims[d];
	}
	return n + 1;
}

/* Triton's rule between dims and reshape: the same element count, or
 * (with variable dims) as many variable dims in each and the same count
 * of elements between them ([2,4,-1,6] may become [8,-1,1,6]); an empty
 * reshape only where a batch dim is left. */
static int check_reshape(const mfs_model_config *c, const mfs_io_config *io,
			 const char *what, mfs_error *err)
{
	int64_t dr[MFS_MAX_RANK + 1], rr[MFS_MAX_RANK + 1];
	int nd, nr;
	char a[128], b[128];

	if (io->reshape_rank == 0 && c->max_batch_size == 0)
		return mfs_fail(err, EINVAL, "%s '%s' cannot have empty reshape for non-batching model "
				"as scalar tensors are not supported", what, io->name);
	nd = fixed_runs(io->dims, io->rank, dr);
	nr = fixed_runs(io->reshape, io->reshape_rank, rr);
	fmt_dims(io->dims, io->rank, a, sizeof(a));
	fmt_dims(io->reshape, io->reshape_rank, b, sizeof(b));
	if (nd != nr && nd > 1 && nr > 1)
		return mfs_fail(err, EINVAL, "%s '%s' has different number of variable-size dimensions "
				"for dims and reshape (dims %s, reshape %s)", what, io->name, a, b);
	/* An empty reshape stands for dims of one element ([1] -> []). */
	if (io->reshape_rank == 0 && nd == 1 && dr[0] == 1)
		return 0;
	for (int k = 0; k < nd; k++)
		if (nd != nr || dr[k] != rr[k])
			return mfs_fail(err, EINVAL, "%s '%s' has different size for dims and reshape "
					"(dims %s, reshape %s)", what, io->name, a, b);
	return 0;
}

/* An initializer the graph lists as an input, which the config lists
 * too (Triton's L0_initializer_as_input): Triton's ONNX Runtime backend
 * counts it as an input only when optional (else "configuration expects
 * 2 inputs, model provides 1"), and refuses optional inputs where the
 * model batches.  A run that leaves it out gets the stored value. */
static int check_initializer_input(const mfs_model_config *c, mfs_io_config *io,
				   mfs_error *err)
{
	if (!io->optional)
		return mfs_fail(err, EINVAL,
				"input '%s' is an initializer of the graph: it may be an input only with optional: true, as in Triton (a request that leaves it out runs with the stored value)",
				io->name);
	if (c->max_batch_size > 0)
		return mfs_fail(err, EINVAL,
				"optional input '%s' is not supported for models that support batching (max_batch_size %d; Triton's rule)",
				io->name, c->max_batch_size);
	io->has_default = true;
	return 0;
}

static int check_io(mfs_model_config *c, mfs_io_config *io, const char *what,
		    const mfs_io_desc *g, mfs_error *err)
{
	int64_t gdims[MFS_MAX_RANK];
	int grank = -1, rc, mrank;
	const int64_t *mdims;
	char a[128], b[128];

	if (g->dtype == MFS_DT_UNDEFINED || !mfs_dtype_config_name(g->dtype))
		return mfs_fail(err, ENOTSUP, "%s '%s': the graph's type %s is not supported",
				what, g->name, mfs_dtype_onnx_name(g->dtype));
	if (io->dtype == MFS_DT_UNDEFINED)
		io->dtype = g->dtype;
	else if (io->dtype != g->dtype)
		return mfs_fail(err, EINVAL,
				"%s '%s': the config says data_type %s, the graph has %s",
				what, io->name, mfs_dtype_config_name(io->dtype),
				mfs_dtype_config_name(g->dtype));
	if (g->kind != MFS_KIND_TENSOR)
		return complete_container(c, io, what, g, err);
	if (g->default_value && (rc = check_initializer_input(c, io, err)))
		return rc;
	rc = strip_batch(c, what, g, gdims, &grank, err);
	if (rc)
		return rc;

	if (io->rank < 0) {
		if (io->has_reshape)
			return mfs_fail(err, EINVAL, "%s '%s': reshape needs dims",
					what, io->name);
		io->rank = grank;
		if (grank > 0)
			memcpy(io->dims, gdims, (size_t)grank * sizeof(*gdims));
		return 0;
	}
	/* What the graph sees: the reshape if any, else the dims. */
	mdims = io->has_reshape ? io->reshape : io->dims;
	mrank = io->has_reshape ? io->reshape_rank : io->rank;
	if (io->has_reshape && (rc = check_reshape(c, io, what, err)))
		return rc;
	if (grank < 0)
		return 0;
	if (mrank != grank)
		goto mismatch;
	for (int d = 0; d < grank; d++)
		if (gdims[d] >= 0 && mdims[d] != gdims[d])
			goto mismatch;
	return 0;
mismatch:
	return mfs_fail(err, EINVAL,
			"%s '%s': the config's %s %s%s do not match the graph's %s%s",
			what, io->name, io->has_reshape ? "reshape" : "dims",
			fmt_dims(mdims, mrank, a, sizeof(a)),
			c->max_batch_size > 0 ? " (after the batch dim)" : "",
			fmt_dims(gdims, grank, b, sizeof(b)),
			c->max_batch_size > 0 ? " (batch dim left out)" : "");
}

typedef int (*n_fn)(const mfs_graph *m);
typedef const mfs_io_desc *(*desc_fn)(const mfs_graph *m, int i);

static int complete_side(mfs_model_config *c, mfs_io_config **arr, int *count,
			 const char *what, const mfs_graph *graph, n_fn n_of,
			 desc_fn desc_of, mfs_error *err)
{
	int n_graph = n_of(graph), rc, n_listed = *count;
	mfs_io_config *grown;

	bool is_input = strcmp(what, "input") == 0;
	for (int i = 0; i < *count; i++) {
		mfs_io_config *io = &(*arr)[i];
		int j;

		if (mfs_config_seq_owns(c, io->name, is_input))
			return mfs_fail(err, EINVAL, "config %s '%s' belongs to sequence_batching (a control "
					"or state tensor the daemon fills or keeps): leave it out of %s",
					what, io->name, what);
		for (j = 0; j < n_graph; j++)
			if (strcmp(desc_of(graph, j)->name, io->name) == 0)
				break;
		if (j == n_graph) {
			char names[512] = "";
			for (int k = 0; k < n_graph; k++) {
				size_t used = strlen(names);
				snprintf(names + used, sizeof(names) - used, "%s'%s'",
					 k ? ", " : "", desc_of(graph, k)->name);
			}
			return mfs_fail(err, EINVAL,
					"config %s '%s' is not in the graph (its %ss: %s)",
					what, io->name, what, n_graph ? names : "none");
		}
		io->graph_index = j;
		rc = check_io(c, io, what, desc_of(graph, j), err);
		if (rc)
			return rc;
	}
	for (int j = 0; j < n_graph; j++) {
		const mfs_io_desc *g = desc_of(graph, j);
		mfs_io_config *io;
		bool listed = false;

		for (int i = 0; i < *count; i++)
			if ((*arr)[i].graph_index == j)
				listed = true;
		if (listed || mfs_config_seq_owns(c, g->name, is_input))
			continue;
		/* Triton completes a side only when the config lists none of it. */
		if (n_listed > 0 && strcmp(what, "input") == 0 && g->kind != MFS_KIND_OPTIONAL)
			return mfs_fail(err, EINVAL,
					"configuration expects %d inputs, model provides %d: input '%s' "
					"is not in the config (a config that lists inputs lists them all)",
					n_listed, n_graph, g->name);
		grown = realloc(*arr, (size_t)(*count + 1) * sizeof(*grown));
		if (!grown)
			return mfs_fail(err, ENOMEM, "out of memory");
		*arr = grown;
		io = &grown[*count];
		memset(io, 0, sizeof(*io));
		io->rank = -1;
		io->name = strdup(g->name);
		if (!io->name)
			return mfs_fail(err, ENOMEM, "out of memory");
		io->graph_index = j;
		(*count)++;
		rc = check_io(c, io, what, g, err);
		if (rc)
			return rc;
	}
	return 0;
}

bool mfs_config_custom_backend(const mfs_model_config *c)
{
	return c->backend && strcmp(c->backend, "onnxruntime") != 0 &&
	       strcmp(c->backend, "onnx") != 0;
}

static int complete_name(mfs_model_config *c, const char *model_name, mfs_error *err)
{
	if (c->name && strcmp(c->name, model_name) != 0)
		return mfs_fail(err, EINVAL,
				"config name '%s' does not match the model directory '%s'",
				c->name, model_name);
	if (!c->name && !(c->name = strdup(model_name)))
		return mfs_fail(err, ENOMEM, "out of memory");
	return 0;
}

static int declared_side(mfs_io_config *ios, int n, const char *side, mfs_error *err)
{
	for (int i = 0; i < n; i++) {
		if (ios[i].dtype == MFS_DT_UNDEFINED || ios[i].rank < 0)
			return mfs_fail(err, EINVAL, "ensemble %s '%s' needs data_type and dims (an ensemble has no graph to take them from)",
					side, ios[i].name);
		if (ios[i].has_reshape)
			return mfs_fail(err, EINVAL, "ensemble %s '%s': reshape is for a model's graph, an ensemble has none",
					side, ios[i].name);
		ios[i].graph_index = i;
	}
	return 0;
}

/* onnx: a KIND_CPU group without a count gets Triton's ONNX Runtime
 * count, 2 (its other groups and backends: 1). */
static int complete_instances(mfs_model_config *c, bool onnx, mfs_error *err)
{
	for (int i = 0; onnx && i < c->n_instance_groups; i++)
		if (c->instance_groups[i].kind == MFS_KIND_CPU && !c->instance_groups[i].count_given)
			c->instance_groups[i].count = 2;
	if (c->n_instance_groups == 0) {
		c->instance_groups = calloc(1, sizeof(*c->instance_groups));
		if (!c->instance_groups)
			return mfs_fail(err, ENOMEM, "out of memory");
		c->instance_groups[0].count = 1;
		c->instance_groups[0].kind = MFS_KIND_AUTO;
		c->n_instance_groups = 1;
	}
	return 0;
}

/* Triton's rule: an input or output the config lists gives its
 * data_type (Triton completes a side only when the config lists none of
 * it, so a listed one is never filled in). */
static int check_listed_types(const mfs_model_config *c, mfs_error *err)
{
	for (int i = 0; i < c->n_inputs; i++)
		if (c->inputs[i].dtype == MFS_DT_UNDEFINED)
			return mfs_fail(err, EINVAL, "model input '%s' must specify 'data_type'",
					c->inputs[i].name);
	for (int i = 0; i < c->n_outputs; i++)
		if (c->outputs[i].dtype == MFS_DT_UNDEFINED)
			return mfs_fail(err, EINVAL, "model output '%s' must specify 'data_type'",
					c->outputs[i].name);
	return 0;
}

/* Whether a graph tensor can take a batch dim: a plain tensor whose first
 * dim is variable. */
static bool batchable(const mfs_io_desc *g)
{
	return g->kind == MFS_KIND_TENSOR && g->rank > 0 && g->dims[0] < 0;
}

/* Triton's ONNX Runtime backend: a model whose every input and output has
 * a variable first dim, and whose config sets no max_batch_size, gets the
 * default max_batch_size and (above 1, unless it is stateful) dynamic
 * batching. */
static void complete_max_batch(mfs_model_config *c, const mfs_graph *graph)
{
	if (c->max_batch_size_given || c->max_batch_size > 0 || default_max_batch == 0)
		return;
	for (int i = 0; i < mfs_graph_n_inputs(graph); i++)
		if (!batchable(mfs_graph_input(graph, i)))
			return;
	for (int i = 0; i < mfs_graph_n_outputs(graph); i++)
		if (!batchable(mfs_graph_output(graph, i)))
			return;
	c->max_batch_size = default_max_batch;
	/* A stateful model batches through its sequence batcher: Triton adds
	 * no dynamic batcher beside it. */
	if (default_max_batch > 1 && !c->has_sequence_batching)
		c->has_dynamic_batching = true;
}

/* Triton's rule: an image format names the 3 dims after the batch dim. */
static int check_formats(const mfs_model_config *c, mfs_error *err)
{
	char a[128];

	for (int i = 0; i < c->n_inputs; i++) {
		const mfs_io_config *io = &c->inputs[i];
		if (io->format != MFS_FORMAT_NONE && io->rank != 3)
			return mfs_fail(err, EINVAL, "input '%s': model input NHWC/NCHW require 3 dims "
					"(format %s, dims %s%s)", io->name, mfs_io_format_name(io->format),
					fmt_dims(io->dims, io->rank, a, sizeof(a)),
					c->max_batch_size > 0 ? " after the batch dim" : "");
	}
	return 0;
}

int mfs_config_complete_ensemble(mfs_model_config *c, const char *model_name,
				 mfs_error *err)
{
	int rc = complete_name(c, model_name, err);
	if (rc == 0 && c->n_inputs == 0)
		rc = mfs_fail(err, EINVAL, "an ensemble needs at least one input");
	if (rc == 0)
		rc = declared_side(c->inputs, c->n_inputs, "input", err);
	if (rc == 0)
		rc = declared_side(c->outputs, c->n_outputs, "output", err);
	if (rc == 0)
		rc = check_formats(c, err);
	return rc;
}

int mfs_config_complete(mfs_model_config *c, const char *model_name,
			const mfs_graph *graph, mfs_error *err)
{
	int rc = complete_name(c, model_name, err);

	if (rc)
		return rc;
	if (!c->platform && !(c->platform = strdup("onnxruntime_onnx")))
		return mfs_fail(err, ENOMEM, "out of memory");
	if (!c->backend && !(c->backend = strdup("onnxruntime")))
		return mfs_fail(err, ENOMEM, "out of memory");
	rc = check_listed_types(c, err);
	if (rc)
		return rc;
	if (c->n_inputs == 0 || c->n_outputs == 0)
		complete_max_batch(c, graph);
	rc = complete_side(c, &c->inputs, &c->n_inputs, "input", graph,
			   mfs_graph_n_inputs, mfs_graph_input, err);
	if (rc)
		return rc;
	rc = complete_side(c, &c->outputs, &c->n_outputs, "output", graph,
			   mfs_graph_n_outputs, mfs_graph_output, err);
	if (rc == 0)
		rc = check_formats(c, err);
	if (rc)
		return rc;
	return complete_instances(c, true, err);
}

static int check_declared(mfs_io_config *io, int index, const char *what, mfs_error *err)
{
	if (io->dtype == MFS_DT_UNDEFINED)
		return mfs_fail(err, EINVAL, "%s '%s' needs a data_type (a custom backend has no graph to take it from)",
				what, io->name);
	if (!mfs_dtype_size(io->dtype))
		return mfs_fail(err, EINVAL, "%s '%s': %s is not supported", what, io->name,
				mfs_dtype_config_name(io->dtype));
	if (io->rank < 0)
		return mfs_fail(err, EINVAL, "%s '%s' needs dims (a custom backend has no graph to take them from)",
				what, io->name);
	if (io->has_reshape)
		return mfs_fail(err, EINVAL, "%s '%s': reshape is not supported with a custom backend "
				"(the backend takes the shape the config declares)", what, io->name);
	io->graph_index = index;
	return 0;
}

int mfs_config_complete_declared(mfs_model_config *c, const char *model_name,
				 mfs_error *err)
{
	int rc = complete_name(c, model_name, err);

	if (rc)
		return rc;
	if (c->platform)
		return mfs_fail(err, EINVAL, "platform '%s' and backend '%s' cannot both be given",
				c->platform, c->backend);
	if (c->n_inputs == 0 || c->n_outputs == 0)
		return mfs_fail(err, EINVAL, "a model served by backend '%s' must list its inputs and outputs",
				c->backend);
	for (int i = 0; i < c->n_inputs; i++)
		if ((rc = check_declared(&c->inputs[i], i, "input", err)))
			return rc;
	for (int i = 0; i < c->n_outputs; i++)
		if ((rc = check_declared(&c->outputs[i], i, "output", err)))
			return rc;
	if ((rc = check_formats(c, err)))
		return rc;
	/* Warm-up samples are run by the engine on a graph's inputs; a
	 * backend's init is its warm-up. */
	if (c->n_warmups > 0)
		return mfs_fail(err, EINVAL, "model_warmup is not supported with backend '%s' "
				"(its init runs at load, before the model is READY)", c->backend);
	/* The ABI has no device: a backend runs where its worker runs. */
	for (int i = 0; i < c->n_instance_groups; i++)
		if (c->instance_groups[i].kind == MFS_KIND_GPU)
			return mfs_fail(err, EINVAL, "instance_group kind KIND_GPU: backend '%s' runs in a "
					"worker process on the CPU (KIND_CPU or KIND_AUTO)", c->backend);
	return complete_instances(c, false, err);
}

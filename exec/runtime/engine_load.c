/* engine_load.c - mfs_graph_load: read a model file and compile it.  Kept
 * apart from graph.c so that code compiling hand-built graphs (unit tests)
 * does not pull in the file reader. */
#include "engine.h"

int mfs_graph_load_inputs(const char *path, const char *label,
			  const char *const *inputs, int n, mfs_graph **out,
			  mfs_error *err)
{
	onnx_model *onnx = NULL;
	int rc;

	*out = NULL;
	rc = onnx_model_load_file(path, &onnx, err);
	if (!rc && (rc = onnx_model_initializers_as_inputs(onnx, inputs, n, err)))
		onnx_model_free(onnx);
	if (rc) {
		mfs_error_prefix(err, "model '%s': ", label ? label : path);
		return rc;
	}
	return mfs_graph_compile(onnx, label ? label : path, out, err);
}

int mfs_graph_load(const char *path, const char *label, mfs_graph **out,
		   mfs_error *err)
{
	return mfs_graph_load_inputs(path, label, NULL, 0, out, err);
}

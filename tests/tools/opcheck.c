/* opcheck - run ONNX backend test cases straight through the operator
 * callbacks, without the engine: nodes evaluated one after another in file
 * order (ONNX requires topological order), every value kept, plain layout
 * (or NHWC for rank-4 values with --nhwc where the operator allows it).
 * A tool for operator authors: it isolates an operator bug from engine
 * behaviour.  The conformance tool (build/tools/conformance) is the
 * reference runner.
 *
 *   opcheck [--nhwc] [-v] CASE_DIR...
 *
 * Each case runs in a child process; prints "pass|fail|error NAME [why]"
 * and a summary.  Tolerance as the conformance runner: atol 1e-5, rtol
 * 1e-3.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "onnx.h"
#include "op.h"

#define MAX_VALUES 512

typedef struct value {
	const char *name;
	mfs_tensor t;
} value;

static bool use_nhwc;

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;
	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET) &&
	    (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	*len = buf ? (size_t)n : 0;
	fclose(f);
	return buf;
}

static int load_pb(const char *path, mfs_tensor *t, mfs_error *err)
{
	size_t len;
	char *buf = slurp(path, &len);
	if (!buf)
		return mfs_fail(err, ENOENT, "cannot read %s", path);
	int rc = onnx_tensor_decode(buf, len, NULL, t, NULL, err);
	free(buf);
	return rc;
}

static value *find(value *v, int n, const char *name)
{
	for (int i = n - 1; i >= 0; i--)
		if (!strcmp(v[i].name, name))
			return &v[i];
	return NULL;
}

/* Copy of t in plain layout (t itself when already plain). */
static void to_plain(mfs_tensor *t)
{
	if (t->layout != MFS_LAYOUT_NHWC)
		return;
	int64_t n = t->shape.dims[0], c = t->shape.dims[1], s = t->shape.dims[2] * t->shape.dims[3];
	float *tmp = malloc(t->nbytes + 1), *d = t->data;
	for (int64_t b = 0; b < n; b++)
		for (int64_t ch = 0; ch < c; ch++)
			for (int64_t p = 0; p < s; p++)
				tmp[(b * c + ch) * s + p] = d[(b * s + p) * c + ch];
	memcpy(d, tmp, t->nbytes);
	free(tmp);
	t->layout = MFS_LAYOUT_PLAIN;
}

static void to_nhwc(mfs_tensor *t)
{
	if (t->layout != MFS_LAYOUT_PLAIN || t->shape.rank != 4 || t->dtype != MFS_DT_FLOAT)
		return;
	int64_t n = t->shape.dims[0], c = t->shape.dims[1], s = t->shape.dims[2] * t->shape.dims[3];
	float *tmp = malloc(t->nbytes + 1), *d = t->data;
	for (int64_t b = 0; b < n; b++)
		for (int64_t ch = 0; ch < c; ch++)
			for (int64_t p = 0; p < s; p++)
				tmp[(b * s + p) * c + ch] = d[(b * c + ch) * s + p];
	memcpy(d, tmp, t->nbytes);
	free(tmp);
	t->layout = MFS_LAYOUT_NHWC;
}

static int run_case(const char *dir, char *why, size_t wsize)
{
	char path[4096];
	onnx_model *m = NULL;
	mfs_error err = { 0 };
	value vals[MAX_VALUES];
	int nv = 0;

	snprintf(path, sizeof(path), "%s/model.onnx", dir);
	if (onnx_model_load_file(path, &m, &err) < 0) {
		snprintf(why, wsize, "%s", err.msg);
		return 2;
	}
	onnx_graph *g = m->graph;
	int64_t opset = onnx_model_opset(m, "");
	for (int i = 0; i < g->n_initializers; i++) {
		vals[nv].name = g->initializers[i].name;
		vals[nv++].t = g->initializers[i].tensor;
		vals[nv - 1].t.owns_data = false;
	}
	int k = 0;
	for (int i = 0; i < g->n_inputs && nv < MAX_VALUES; i++) {
		if (find(vals, nv, g->inputs[i].name))
			continue;
		snprintf(path, sizeof(path), "%s/test_data_set_0/input_%d.pb", dir, k++);
		vals[nv].name = g->inputs[i].name;
		if (load_pb(path, &vals[nv].t, &err) < 0) {
			snprintf(why, wsize, "%s", err.msg);
			return 2;
		}
		nv++;
	}
	for (int ni = 0; ni < g->n_nodes; ni++) {
		onnx_node *node = &g->nodes[ni];
		const mfs_op_def *def = mfs_op_find(node->domain, node->op_type,
						    onnx_model_opset(m, node->domain));
		mfs_tensor *in[16] = { 0 }, *out[16] = { 0 };
		void *state = NULL;
		if (!def) {
			snprintf(why, wsize, "no operator %s", node->op_type);
			return 2;
		}
		if (node->n_inputs > 16 || node->n_outputs > 16 || nv + node->n_outputs > MAX_VALUES) {
			snprintf(why, wsize, "too many values");
			return 2;
		}
		for (int j = 0; j < node->n_inputs; j++) {
			if (!*node->inputs[j])
				continue;
			value *v = find(vals, nv, node->inputs[j]);
			if (!v) {
				snprintf(why, wsize, "value %s unknown", node->inputs[j]);
				return 2;
			}
			if (!(def->flags & MFS_OP_NHWC_OK))
				to_plain(&v->t);
			else if (use_nhwc && j == 0)
				to_nhwc(&v->t);
			in[j] = &v->t;
		}
		for (int j = 0; j < node->n_outputs; j++) {
			if (!*node->outputs[j])
				continue;
			vals[nv].name = node->outputs[j];
			memset(&vals[nv].t, 0, sizeof(mfs_tensor));
			out[j] = &vals[nv++].t;
		}
		mfs_op_ctx ctx = { .def = def, .node = node, .opset = opset, .n_in = node->n_inputs,
				   .in = in, .n_out = node->n_outputs, .out = out, .state = &state,
				   .err = &err };
		int rc = def->infer(&ctx);
		for (int j = 0; rc >= 0 && j < node->n_outputs; j++) {
			if (!out[j])
				continue;
			mfs_shape s = out[j]->shape;
			mfs_dtype dt = out[j]->dtype;
			rc = mfs_tensor_alloc(out[j], dt, &s, &err);
			if (in[0] && (def->flags & MFS_OP_NHWC_OK) && j == 0)
				out[j]->layout = in[0]->layout == MFS_LAYOUT_NHWC && s.rank == 4
					? MFS_LAYOUT_NHWC : MFS_LAYOUT_PLAIN;
		}
		if (rc >= 0 && def->prepare)
			rc = def->prepare(&ctx);
		if (rc >= 0)
			rc = def->run(&ctx);
		if (def->release && state)
			def->release(state);
		if (rc < 0) {
			snprintf(why, wsize, "%s", err.msg);
			return 2;
		}
	}
	int result = 0;
	for (int i = 0; i < g->n_outputs; i++) {
		mfs_tensor want;
		snprintf(path, sizeof(path), "%s/test_data_set_0/output_%d.pb", dir, i);
		if (load_pb(path, &want, &err) < 0) {
			snprintf(why, wsize, "%s", err.msg);
			return 2;
		}
		value *v = find(vals, nv, g->outputs[i].name);
		if (!v) {
			snprintf(why, wsize, "output %s not computed", g->outputs[i].name);
			return 2;
		}
		to_plain(&v->t);
		char a[128], b[128];
		if (v->t.dtype != want.dtype || !mfs_shape_equal(&v->t.shape, &want.shape)) {
			snprintf(why, wsize, "output %d: %s %s, expected %s %s", i,
				 mfs_dtype_onnx_name(v->t.dtype), mfs_shape_format(&v->t.shape, a, sizeof(a)),
				 mfs_dtype_onnx_name(want.dtype), mfs_shape_format(&want.shape, b, sizeof(b)));
			return 1;
		}
		bool fl = want.dtype == MFS_DT_FLOAT || want.dtype == MFS_DT_DOUBLE;
		for (int64_t e = 0; e < mfs_shape_numel(&want.shape); e++) {
			double gv = mfs_tensor_get_f64(&v->t, e), wv = mfs_tensor_get_f64(&want, e);
			bool ok = isnan(wv) ? isnan(gv) : fl ? fabs(gv - wv) <= 1e-5 + 1e-3 * fabs(wv) : gv == wv;
			if (!ok) {
				snprintf(why, wsize, "output %d element %lld: %.7g, expected %.7g", i,
					 (long long)e, gv, wv);
				result = 1;
				break;
			}
		}
		mfs_tensor_release(&want);
		if (result)
			break;
	}
	return result;
}

int main(int argc, char **argv)
{
	int pass = 0, fail = 0, error = 0, verbose = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--nhwc")) {
			use_nhwc = true;
			continue;
		}
		if (!strcmp(argv[i], "-v")) {
			verbose = 1;
			continue;
		}
		int pfd[2];
		if (pipe(pfd) < 0)
			return 1;
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			char why[1024] = "";
			close(pfd[0]);
			int r = run_case(argv[i], why, sizeof(why));
			if (write(pfd[1], why, strlen(why)) < 0)
				_exit(3);
			_exit(r);
		}
		close(pfd[1]);
		char why[1024] = "";
		ssize_t n = read(pfd[0], why, sizeof(why) - 1);
		why[n > 0 ? n : 0] = 0;
		close(pfd[0]);
		int st;
		waitpid(pid, &st, 0);
		const char *name = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
			pass++;
			if (verbose)
				printf("pass  %s\n", name);
		} else if (WIFEXITED(st) && WEXITSTATUS(st) == 1) {
			fail++;
			printf("FAIL  %s: %s\n", name, why);
		} else if (WIFEXITED(st)) {
			error++;
			printf("error %s: %s\n", name, why);
		} else {
			error++;
			printf("CRASH %s (signal %d)\n", name, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
		}
	}
	printf("%d passed, %d failed, %d errors\n", pass, fail, error);
	return fail || error;
}

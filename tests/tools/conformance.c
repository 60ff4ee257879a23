/* conformance.c - runs the ONNX backend test data (Debian libonnx-testdata)
 * through the engine and compares with the reference outputs.
 *
 *   conformance [--expected FILE] [--write-passing FILE] [--filter TEXT]
 *               [--device cpu|opencl[:SELECTOR]] [--first-set] [--verbose] DIR...
 *
 * Each DIR is a folder of cases (.../data/node); a case is a folder with
 * model.onnx and test_data_set_N/{input_K.pb,output_K.pb}.  Every case runs
 * in its own child process with a time limit, so an operator that crashes
 * or hangs costs one case, not the run.  The runner prints per-folder
 * counts and, with --expected, fails (exit 1) only when a case listed there
 * no longer passes: the list is the regression baseline committed in
 * tests/conformance/expected-pass.txt.  Names in lists are "folder/case".
 * --write-passing writes every passing case, sorted, in that form (`make
 * docs` updates the lists with it: scripts/update-pass-list.sh).
 *
 * --device opencl runs the cases on the OpenCL engine (exec/opencl/ocl_backend.c)
 * of the device SELECTOR picks (ocl_device.h).  The device is opened once
 * and the cases run in the runner's own process, one after another: a
 * forked child cannot use the parent's OpenCL runtime, and opening the
 * device and compiling CLBlast's kernels per case would cost seconds each
 * on PoCL.  --first-set skips cases that use an operator outside the first
 * set (the OpenCL suite's scope).
 *
 * Tolerance follows ONNX's backend test runner: |got - want| <= atol +
 * rtol * |want| with rtol 1e-3, atol 1e-5 for floats (NaN matches NaN);
 * FLOAT16 atol 1e-3 rtol 4e-3, BFLOAT16 atol 1e-3 rtol 8e-3 (compare());
 * integers and booleans exactly.  tests/e2e/run_backend_cases.py judges
 * `modelfs run`'s outputs by the same rule (make test's run-cases suite
 * checks this list through it): change both together, and the text in
 * scripts/gen-operators-doc.sh.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "graph.h"
#include "ocl_backend.h"
#include "onnx.h"

#define CASE_TIMEOUT_SECS 60
#define MAX_TENSORS 64

enum outcome { PASS = 0, MISMATCH = 1, UNSUPPORTED = 2, ERROR = 3, CRASH = 4, TIMEOUT = 5 };
static const char *const outcome_names[] = { "pass", "mismatch", "unsupported",
					     "error", "crash", "timeout" };

/* The first set: the operators of PyTorch's exports of ResNet,
 * MobileNetV2, a BERT-like encoder and an MLP (the ONNX section of the
 * project's engineering notes). */
static const char *const first_set[] = {
	"Conv", "BatchNormalization", "Relu", "Clip", "MaxPool", "AveragePool",
	"GlobalAveragePool", "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Erf",
	"Tanh", "Sigmoid", "MatMul", "Gemm", "Flatten", "Reshape", "Transpose",
	"Concat", "Gather", "Slice", "Unsqueeze", "Squeeze", "Shape", "Cast",
	"Constant", "ConstantOfShape", "Expand", "Equal", "Where", "ReduceMean",
	"Softmax", "LayerNormalization", "Identity", "Dropout", "Sum", NULL
};

static int verbose;
static mfs_backend *backend;     /* NULL: the CPU */

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)n + 1);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return buf;
}

/* Read a TensorProto, or the SequenceProto / OptionalProto that the
 * model's input or output d declares. */
static int load_pb(const char *path, const char *dir, const mfs_io_desc *d,
		   mfs_tensor *t, mfs_error *err)
{
	size_t len = 0;
	char *buf = read_file(path, &len);
	mfs_tensor like = { .kind = d ? d->kind : MFS_KIND_TENSOR,
			    .elem_kind = d ? d->elem_kind : MFS_KIND_TENSOR,
			    .dtype = d ? d->dtype : MFS_DT_UNDEFINED };
	int rc;

	if (!buf)
		return mfs_fail(err, errno ? errno : EIO, "cannot read %s", path);
	rc = onnx_value_decode(buf, len, dir, &like, t, err);
	free(buf);
	return rc;
}

static bool close_enough(double got, double want, bool exact)
{
	if (isnan(want))
		return isnan(got);
	if (exact)
		return got == want;
	if (isinf(want))
		return got == want;
	return fabs(got - want) <= 1e-5 + 1e-3 * fabs(want);
}

/* The type and shape of output k (of a sequence or optional: of each of
 * its tensors). */
static int compare_type_shape(const mfs_tensor *got, const mfs_tensor *want,
			      int k, char *msg, size_t size)
{
	char sg[128], sw[128];

	if (got->kind != want->kind || got->n_items != want->n_items) {
		snprintf(msg, size, "output %d: a %s of %d items, expected a %s of %d",
			 k, mfs_kind_name(got->kind), got->n_items,
			 mfs_kind_name(want->kind), want->n_items);
		return MISMATCH;
	}
	for (int i = 0; i < want->n_items; i++) {
		int r = compare_type_shape(&got->items[i], &want->items[i], k, msg, size);
		if (r != PASS)
			return r;
	}
	if (want->kind != MFS_KIND_TENSOR)
		return PASS;
	if (got->dtype != want->dtype) {
		snprintf(msg, size, "output %d: dtype %s, expected %s", k,
			 mfs_dtype_onnx_name(got->dtype), mfs_dtype_onnx_name(want->dtype));
		return MISMATCH;
	}
	if (!mfs_shape_equal(&got->shape, &want->shape)) {
		snprintf(msg, size, "output %d: shape %s, expected %s", k,
			 mfs_shape_format(&got->shape, sg, sizeof(sg)),
			 mfs_shape_format(&want->shape, sw, sizeof(sw)));
		return MISMATCH;
	}
	return PASS;
}

/* Compare one output; describe the first difference in msg. */
static int compare(const mfs_tensor *got, const mfs_tensor *want, int k,
		   char *msg, size_t size)
{
	bool exact = !(want->dtype == MFS_DT_FLOAT || want->dtype == MFS_DT_DOUBLE ||
		       want->dtype == MFS_DT_FLOAT16 || want->dtype == MFS_DT_BFLOAT16);
	int64_t n = mfs_shape_numel(&want->shape);

	if (compare_type_shape(got, want, k, msg, size) != PASS)
		return MISMATCH;
	for (int i = 0; i < want->n_items; i++)
		if (compare(&got->items[i], &want->items[i], k, msg, size) != PASS)
			return MISMATCH;
	if (want->kind != MFS_KIND_TENSOR)
		return PASS;
	for (int64_t i = 0; want->dtype == MFS_DT_STRING && i < n; i++) {
		const mfs_string *g = mfs_string_at(got, i), *w = mfs_string_at(want, i);
		if (g->len != w->len || (w->len && memcmp(g->ptr, w->ptr, w->len))) {
			snprintf(msg, size, "output %d: element %lld is '%.40s', expected '%.40s'",
				 k, (long long)i, g->ptr ? g->ptr : "", w->ptr ? w->ptr : "");
			return MISMATCH;
		}
	}
	/* FP16 results are computed in FP32 and rounded: allow FP16's own
	 * precision; BF16's is one 2^-8 step (ONNX 1.12's reference truncates
	 * to bfloat16 where we round to nearest). */
	for (int64_t i = 0; i < n; i++) {
		double g = mfs_tensor_get_f64(got, i), w = mfs_tensor_get_f64(want, i);
		double rtol = want->dtype == MFS_DT_FLOAT16 ? 4e-3 : 8e-3;
		bool ok = (want->dtype == MFS_DT_FLOAT16 ||
			   want->dtype == MFS_DT_BFLOAT16)
			? (isnan(w) ? isnan(g) : g == w || fabs(g - w) <= 1e-3 + rtol * fabs(w))
			: close_enough(g, w, exact);
		if (!ok) {
			snprintf(msg, size, "output %d: element %lld is %.9g, expected %.9g",
				 k, (long long)i, g, w);
			return MISMATCH;
		}
	}
	return PASS;
}

/* ONNX 1.12's generator wrote bfloat16 test data as uint16 tensors of the
 * same bits (numpy has no bfloat16): read them as the model declares. */
static void bf16_relabel(mfs_tensor *t, const mfs_io_desc *d)
{
	if (d && d->dtype == MFS_DT_BFLOAT16 && t->dtype == MFS_DT_UINT16)
		t->dtype = MFS_DT_BFLOAT16;
}

/* The first random operator the model runs (MFS_OP_NONDETERMINISTIC),
 * or NULL. */
static const char *random_operator(const mfs_graph *m)
{
	for (int i = 0; i < m->n_nodes; i++)
		if (m->nodes[i].def->flags & MFS_OP_NONDETERMINISTIC)
			return m->nodes[i].onnx->op_type;
	return NULL;
}

/* Run all data sets of one case; in the child process.  A model with a
 * random operator cannot reproduce the reference's values (numpy's
 * generator): it passes nothing, and when its outputs have the expected
 * types and shapes the message says "random" (docs/OPERATORS.md's
 * category), so no lucky draw ever enters a pass list. */
static int run_case(const char *case_dir, char *msg, size_t size)
{
	char path[4096];
	mfs_error err;
	mfs_graph *model = NULL;
	mfs_exec *exec = NULL;
	int result = PASS, rc;

	mfs_error_clear(&err);
	snprintf(path, sizeof(path), "%s/model.onnx", case_dir);
	rc = mfs_graph_load(path, strrchr(case_dir, '/') + 1, &model, &err);
	if (rc) {
		snprintf(msg, size, "load: %s", err.msg);
		return rc == -ENOTSUP ? UNSUPPORTED : ERROR;
	}
	rc = mfs_exec_new(model, backend, &exec, &err);
	if (rc) {
		snprintf(msg, size, "exec: %s", err.msg);
		mfs_graph_free(model);
		return rc == -ENOTSUP ? UNSUPPORTED : ERROR;
	}
	const char *random_op = random_operator(model);
	for (int set = 0; result == PASS; set++) {
		mfs_tensor in[MAX_TENSORS], want[MAX_TENSORS], got[MAX_TENSORS];
		int n_in = mfs_graph_n_inputs(model), n_out = mfs_graph_n_outputs(model);
		int loaded_in = 0, loaded_want = 0;
		struct stat st;
		char set_dir[4096];

		snprintf(set_dir, sizeof(set_dir), "%s/test_data_set_%d", case_dir, set);
		if (stat(set_dir, &st) != 0)
			break;
		if (n_in > MAX_TENSORS || n_out > MAX_TENSORS) {
			snprintf(msg, size, "too many inputs/outputs");
			result = ERROR;
			break;
		}
		memset(in, 0, sizeof(in));
		memset(want, 0, sizeof(want));
		memset(got, 0, sizeof(got));
		for (; loaded_in < n_in; loaded_in++) {
			const mfs_io_desc *d = mfs_graph_input(model, loaded_in);
			snprintf(path, sizeof(path), "%s/input_%d.pb", set_dir, loaded_in);
			if (stat(path, &st) != 0 && d->kind == MFS_KIND_OPTIONAL) {
				/* an optional input left out: one without a value */
				if (mfs_container_init(&in[loaded_in], MFS_KIND_OPTIONAL,
						       d->elem_kind, d->dtype, 0, &err))
					break;
				continue;
			}
			if (stat(path, &st) != 0)
				break; /* optional trailing inputs absent */
			if (load_pb(path, set_dir, d, &in[loaded_in], &err)) {
				snprintf(msg, size, "input %d: %s", loaded_in, err.msg);
				result = ERROR;
				break;
			}
			bf16_relabel(&in[loaded_in], mfs_graph_input(model, loaded_in));
		}
		for (; result == PASS && loaded_want < n_out; loaded_want++) {
			snprintf(path, sizeof(path), "%s/output_%d.pb", set_dir, loaded_want);
			if (load_pb(path, set_dir, mfs_graph_output(model, loaded_want),
				    &want[loaded_want], &err)) {
				snprintf(msg, size, "output %d: %s", loaded_want, err.msg);
				result = ERROR;
				break;
			}
			bf16_relabel(&want[loaded_want], mfs_graph_output(model, loaded_want));
		}
		if (result == PASS && loaded_in < n_in) {
			snprintf(msg, size, "data set has %d inputs, model %d", loaded_in, n_in);
			result = ERROR;
		}
		if (result == PASS) {
			rc = mfs_exec_run(exec, in, got, &err);
			if (rc) {
				snprintf(msg, size, "run: %s", err.msg);
				result = rc == -ENOTSUP ? UNSUPPORTED : ERROR;
			} else {
				for (int k = 0; k < n_out && result == PASS; k++)
					result = random_op
						? compare_type_shape(&got[k], &want[k], k, msg, size)
						: compare(&got[k], &want[k], k, msg, size);
				for (int k = 0; k < n_out; k++)
					mfs_tensor_release(&got[k]);
			}
		}
		for (int k = 0; k < loaded_in; k++)
			mfs_tensor_release(&in[k]);
		for (int k = 0; k < loaded_want; k++)
			mfs_tensor_release(&want[k]);
	}
	if (result == PASS && random_op) {
		snprintf(msg, size, "random: %s draws from its own generator, the reference from numpy's; the types and shapes match",
			 random_op);
		result = MISMATCH;
	}
	mfs_exec_free(exec);
	mfs_graph_free(model);
	return result;
}

/* Fork, run the case in the child, collect outcome and message. */
static int run_case_isolated(const char *case_dir, char *msg, size_t size)
{
	int fds[2];
	pid_t pid;
	int status;
	ssize_t n;

	msg[0] = '\0';
	if (pipe(fds) != 0)
		return ERROR;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return ERROR;
	}
	if (pid == 0) {
		char child_msg[2048] = "";
		int r;
		close(fds[0]);
		alarm(CASE_TIMEOUT_SECS);
		r = run_case(case_dir, child_msg, sizeof(child_msg));
		if (write(fds[1], child_msg, strlen(child_msg)) < 0)
			r = ERROR;
		close(fds[1]);
		_exit(r);
	}
	close(fds[1]);
	n = read(fds[0], msg, size - 1);
	msg[n > 0 ? n : 0] = '\0';
	close(fds[0]);
	if (waitpid(pid, &status, 0) < 0)
		return ERROR;
	if (WIFSIGNALED(status)) {
		snprintf(msg, size, "%s", WTERMSIG(status) == SIGALRM ? "timed out"
			 : strsignal(WTERMSIG(status)));
		return WTERMSIG(status) == SIGALRM ? TIMEOUT : CRASH;
	}
	if (WEXITSTATUS(status) > TIMEOUT) {
		snprintf(msg, size, "child exited %d (sanitizer report above?)",
			 WEXITSTATUS(status));
		return CRASH;
	}
	return WEXITSTATUS(status);
}

/* Does the model use only operators of the first set?  (-1: unreadable) */
static int uses_first_set_only(const char *case_dir)
{
	char path[4096];
	onnx_model *m = NULL;
	mfs_error err;
	int ok = 1;

	snprintf(path, sizeof(path), "%s/model.onnx", case_dir);
	if (onnx_model_load_file(path, &m, &err))
		return -1;
	for (int i = 0; ok && i < m->graph->n_nodes; i++) {
		int found = 0;
		for (int k = 0; first_set[k]; k++)
			found |= strcmp(first_set[k], m->graph->nodes[i].op_type) == 0;
		ok = found;
	}
	onnx_model_free(m);
	return ok;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A sorted list of names from a file (one per line, '#' comments). */
static char **read_list(const char *path, int *count)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	char **list = NULL;
	int n = 0, cap = 0;

	*count = 0;
	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\r\n#")] = '\0';
		if (!line[0])
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			list = realloc(list, (size_t)cap * sizeof(*list));
		}
		list[n++] = strdup(line);
	}
	fclose(f);
	qsort(list, (size_t)n, sizeof(*list), cmp_str);
	*count = n;
	return list;
}

static bool in_list(char **list, int n, const char *name)
{
	return list && bsearch(&name, list, (size_t)n, sizeof(*list), cmp_str);
}

int main(int argc, char **argv)
{
	const char *expected_path = NULL, *write_path = NULL, *filter = NULL;
	const char *device = "cpu";
	int first_only = 0;
	char **expected = NULL, **passing = NULL;
	int n_expected = 0, n_passing = 0, cap_passing = 0;
	int regressions = 0, expected_passed = 0;
	FILE *write_file = NULL;
	int argi = 1;

	for (; argi < argc && argv[argi][0] == '-'; argi++) {
		if (strcmp(argv[argi], "--expected") == 0 && argi + 1 < argc)
			expected_path = argv[++argi];
		else if (strcmp(argv[argi], "--write-passing") == 0 && argi + 1 < argc)
			write_path = argv[++argi];
		else if (strcmp(argv[argi], "--filter") == 0 && argi + 1 < argc)
			filter = argv[++argi];
		else if (strcmp(argv[argi], "--device") == 0 && argi + 1 < argc)
			device = argv[++argi];
		else if (strcmp(argv[argi], "--first-set") == 0)
			first_only = 1;
		else if (strcmp(argv[argi], "--verbose") == 0 || strcmp(argv[argi], "-v") == 0)
			verbose = 1;
		else {
			fprintf(stderr, "usage: conformance [--expected FILE] [--write-passing FILE] [--filter TEXT] [--device cpu|opencl[:SEL]] [--first-set] [-v] DIR...\n");
			return 2;
		}
	}
	if (argi == argc) {
		fprintf(stderr, "conformance: no test data folder given\n");
		return 2;
	}
	if (expected_path) {
		expected = read_list(expected_path, &n_expected);
		if (!expected && access(expected_path, F_OK) == 0) {
			fprintf(stderr, "conformance: cannot read %s\n", expected_path);
			return 2;
		}
	}
	mfs_engine_set_threads(1);
	if (strncmp(device, "opencl", 6) == 0) {
		mfs_error err;
		const char *sel = device[6] == ':' ? device + 7 : NULL;
		if (mfs_backend_opencl_new(sel, &backend, &err)) {
			fprintf(stderr, "conformance: %s\n", err.msg);
			return 2;
		}
		printf("device: %s\n", mfs_backend_name(backend));
	} else if (strcmp(device, "cpu") != 0) {
		fprintf(stderr, "conformance: --device: expected cpu or opencl[:SELECTOR]\n");
		return 2;
	}

	for (; argi < argc; argi++) {
		const char *dir = argv[argi];
		const char *folder = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
		struct dirent **ents = NULL;
		int n = scandir(dir, &ents, NULL, alphasort);
		int counts[6] = { 0 }, total = 0, first_total = 0, first_pass = 0;
		time_t start = time(NULL);

		if (n < 0) {
			fprintf(stderr, "conformance: cannot read %s: %s\n", dir, strerror(errno));
			return 2;
		}
		for (int i = 0; i < n; i++) {
			char case_dir[4096], name[1024], msg[2048];
			struct stat st;
			int r, first;

			if (ents[i]->d_name[0] == '.' ||
			    (filter && !strstr(ents[i]->d_name, filter)))
				goto next;
			snprintf(case_dir, sizeof(case_dir), "%s/%s/model.onnx", dir, ents[i]->d_name);
			if (stat(case_dir, &st) != 0)
				goto next;
			snprintf(case_dir, sizeof(case_dir), "%s/%s", dir, ents[i]->d_name);
			snprintf(name, sizeof(name), "%s/%s", folder, ents[i]->d_name);
			first = uses_first_set_only(case_dir);
			if (first_only && first != 1)
				goto next;
			if (backend) {
				msg[0] = '\0';
				r = run_case(case_dir, msg, sizeof(msg));
			} else {
				r = run_case_isolated(case_dir, msg, sizeof(msg));
			}
			counts[r]++;
			total++;
			if (first == 1) {
				first_total++;
				first_pass += r == PASS;
			}
			if (r == PASS) {
				if (n_passing == cap_passing) {
					cap_passing = cap_passing ? cap_passing * 2 : 256;
					passing = realloc(passing, (size_t)cap_passing * sizeof(*passing));
				}
				passing[n_passing++] = strdup(name);
			}
			if (in_list(expected, n_expected, name)) {
				if (r == PASS) {
					expected_passed++;
				} else {
					regressions++;
					printf("REGRESSION %s: %s: %s\n", name, outcome_names[r], msg);
				}
			}
			if (verbose && r != PASS)
				printf("%-11s %s: %s\n", outcome_names[r], name, msg);
			else if (verbose)
				printf("pass        %s\n", name);
next:
			free(ents[i]);
		}
		free(ents);
		printf("%s: %d/%d passed (%d mismatch, %d unsupported, %d error, %d crash, %d timeout); "
		       "first operator set only: %d/%d; %lds\n",
		       folder, counts[PASS], total, counts[MISMATCH], counts[UNSUPPORTED],
		       counts[ERROR], counts[CRASH], counts[TIMEOUT], first_pass, first_total,
		       (long)(time(NULL) - start));
		fflush(stdout);
	}

	if (write_path) {
		write_file = fopen(write_path, "w");
		if (!write_file) {
			fprintf(stderr, "conformance: cannot write %s\n", write_path);
			return 2;
		}
		qsort(passing, (size_t)n_passing, sizeof(*passing), cmp_str);
		for (int i = 0; i < n_passing; i++)
			fprintf(write_file, "%s\n", passing[i]);
		fclose(write_file);
	}
	if (expected_path) {
		int new_passes = 0;
		for (int i = 0; i < n_passing; i++)
			new_passes += !in_list(expected, n_expected, passing[i]);
		printf("expected passes: %d of %d still pass; %d regressions; %d new passes not yet in %s\n",
		       expected_passed, n_expected, regressions, new_passes, expected_path);
		/* One line the test summary reads. */
		printf("%d passed, %d failed\n", expected_passed, regressions);
	}
	for (int i = 0; i < n_passing; i++)
		free(passing[i]);
	free(passing);
	for (int i = 0; i < n_expected; i++)
		free(expected[i]);
	free(expected);
	if (backend)
		mfs_backend_opencl_free(backend);
	return regressions ? 1 : 0;
}

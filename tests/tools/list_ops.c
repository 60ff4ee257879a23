/* list_ops - the operator registry as the Markdown table of
 * docs/OPERATORS.md (`make docs`).
 *
 * Usage: list_ops            (table on stdout)
 *
 * For every (domain, op_type) it prints the opset ranges of its
 * definitions (since_version .. next since_version - 1, the last one
 * "latest"; the registry picks the largest since_version <= the model's
 * opset) and the data types its infer() accepts.
 *
 * Data types are measured, not declared: for each definition and each
 * candidate dtype T, infer() is called on probe nodes (no attributes, or
 * one of to = float, kernel_shape = [2,2], blocksize = 2, k = 1, tried in
 * that order until one admits some type) with 1..5 inputs: input 0 of type T (or
 * bool, for Where-like ops), every further input T, int64 or float, in a
 * few shape schemes, plus one quantized-linear pattern of 8 or 9 inputs
 * (T, float scale, T zero point, ... [, int32 bias]) for QLinearConv and
 * QLinearMatMul (all [2,4,4,4]; the rest [4], scalar or [8]; all
 * [4,4]).  T is
 * listed when some probe is accepted (0 or MFS_SHAPE_DEPENDS_ON_DATA).
 * This is what the shape/type check admits; an operator whose infer()
 * needs attributes or constant inputs the probe does not supply shows
 * "(not probed)".  Each definition is probed in a child process so that a
 * crashing infer() is reported, not fatal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "op.h"

static const mfs_dtype candidates[] = {
	MFS_DT_FLOAT, MFS_DT_FLOAT16, MFS_DT_BFLOAT16, MFS_DT_DOUBLE,
	MFS_DT_INT8, MFS_DT_UINT8, MFS_DT_INT16, MFS_DT_UINT16,
	MFS_DT_INT32, MFS_DT_UINT32, MFS_DT_INT64, MFS_DT_UINT64, MFS_DT_BOOL,
};
#define N_CAND ((int)(sizeof(candidates) / sizeof(candidates[0])))
#define MAX_IN 9      /* QLinearConv: 9 inputs */
#define MAX_ODO_IN 5  /* the general odometer goes up to 5 inputs */
#define MAX_OUT 4

/* Shape schemes: input 0 is [2,4,4,4] (scheme 4: [4,4]); the other
 * inputs: 0 the same, 1 [4] (per channel), 2 scalar, 3 [8] (pads of a
 * rank-4 input), 4 [4,4] (Gemm-like, all rank 2). */
#define N_SCHEMES 5
static void set_shape(mfs_tensor *t, mfs_dtype dt, int scheme, int pos)
{
	memset(t, 0, sizeof(*t));
	t->dtype = dt;
	if (scheme == 5) {
		if (pos == 0 || pos == 3) {
			t->shape.rank = 4;
			for (int d = 0; d < 4; d++)
				t->shape.dims[d] = d ? 4 : 2;
		} else if (pos == 8) {
			t->shape.rank = 1;
			t->shape.dims[0] = 2;
		}
	} else if (scheme == 4) {
		t->shape.rank = 2;
		t->shape.dims[0] = 4;
		t->shape.dims[1] = 4;
	} else if (pos == 0 || scheme == 0) {
		t->shape.rank = 4;
		t->shape.dims[0] = 2;
		t->shape.dims[1] = 4;
		t->shape.dims[2] = 4;
		t->shape.dims[3] = 4;
	} else if (scheme == 1) {
		t->shape.rank = 1;
		t->shape.dims[0] = 4;
	} else if (scheme == 2) {
		t->shape.rank = 0;
	} else {
		t->shape.rank = 1;
		t->shape.dims[0] = 8;
	}
	t->nbytes = (size_t)mfs_shape_numel(&t->shape) * mfs_dtype_size(dt);
}

/* One infer() call; true when accepted. */
static bool probe_once(const mfs_op_def *def, onnx_node *node, int n_in,
		       const mfs_dtype *dts, int scheme, int n_out)
{
	mfs_tensor tin[MAX_IN], tout[MAX_OUT];
	mfs_tensor *pin[MAX_IN], *pout[MAX_OUT];
	void *state = NULL;
	mfs_error err = { 0 };
	mfs_op_ctx ctx = { 0 };
	int rc;

	/* Slots past n_in / n_out are NULL (as for omitted optional
	 * ones): an infer() that reads in[1] of a one-input node must not
	 * see garbage. */
	for (int k = 0; k < MAX_IN; k++) {
		if (k < n_in)
			set_shape(&tin[k], dts[k], scheme, k);
		pin[k] = k < n_in ? &tin[k] : NULL;
	}
	for (int k = 0; k < MAX_OUT; k++) {
		memset(&tout[k], 0, sizeof(tout[k]));
		pout[k] = k < n_out ? &tout[k] : NULL;
	}
	node->n_inputs = n_in;
	node->n_outputs = n_out;
	ctx.def = def;
	ctx.node = node;
	ctx.opset = def->since_version;
	ctx.n_in = n_in;
	ctx.in = pin;
	ctx.n_out = n_out;
	ctx.out = pout;
	ctx.state = &state;
	ctx.err = &err;
	rc = def->infer(&ctx);
	if (getenv("LIST_OPS_DEBUG") && strcmp(getenv("LIST_OPS_DEBUG"), def->op_type) == 0)
		fprintf(stderr, "%s-%d n_in %d in0 %s scheme %d n_out %d: rc %d %s\n",
			def->op_type, def->since_version, n_in,
			mfs_dtype_onnx_name(dts[0]), scheme, n_out, rc, err.msg);
	return rc == 0 || rc == MFS_SHAPE_DEPENDS_ON_DATA;
}

/* Does some probe with data type t succeed? */
static bool probe_type(const mfs_op_def *def, onnx_node *node, mfs_dtype t)
{
	static const mfs_dtype aux[] = { 0, MFS_DT_INT64, MFS_DT_FLOAT };
	mfs_dtype dts[MAX_IN];

	/* QLinearConv / QLinearMatMul: x, x_scale, x_zero_point, w,
	 * w_scale, w_zero_point, y_scale, y_zero_point[, bias int32]. */
	{
		const mfs_dtype q[9] = { t, MFS_DT_FLOAT, t, t, MFS_DT_FLOAT, t,
					 MFS_DT_FLOAT, t, MFS_DT_INT32 };
		for (int n_in = 8; n_in <= 9; n_in++)
			if (probe_once(def, node, n_in, q, 5, 1))
				return true;
	}
	for (int n_in = 1; n_in <= MAX_ODO_IN; n_in++) {
		/* Odometer over: input 0 in {t, bool}, inputs 1.. in aux. */
		int combos = 2, digit[MAX_IN] = { 0 };
		for (int k = 1; k < n_in; k++)
			combos *= 3;
		for (int c = 0; c < combos; c++) {
			int v = c;
			bool dup = false;
			digit[0] = v % 2;
			v /= 2;
			for (int k = 1; k < n_in; k++) {
				digit[k] = v % 3;
				v /= 3;
			}
			dts[0] = digit[0] ? MFS_DT_BOOL : t;
			if (digit[0] && t == MFS_DT_BOOL)
				continue;
			for (int k = 1; k < n_in; k++) {
				dts[k] = digit[k] ? aux[digit[k]] : t;
				/* Same combination as the "t" digit: skip. */
				if (digit[k] && aux[digit[k]] == t)
					dup = true;
			}
			if (dup)
				continue;
			/* Where-like: with input 0 bool, some other input must be t. */
			if (digit[0]) {
				bool has_t = false;
				for (int k = 1; k < n_in; k++)
					has_t = has_t || dts[k] == t;
				if (!has_t)
					continue;
			}
			for (int scheme = 0; scheme < N_SCHEMES; scheme++) {
				if (n_in == 1 && scheme > 0 && scheme < 4)
					continue;
				if (probe_once(def, node, n_in, dts, scheme, 1) ||
				    probe_once(def, node, n_in, dts, scheme, MAX_OUT))
					return true;
			}
		}
	}
	return false;
}

/* Bit i of the result: candidates[i] accepted. */
static unsigned probe_def(const mfs_op_def *def)
{
	static char *names[MAX_IN > MAX_OUT ? MAX_IN : MAX_OUT] = {
		"probe_0", "probe_1", "probe_2", "probe_3", "probe_4",
		"probe_5", "probe_6", "probe_7", "probe_8" };
	static int64_t kernel[2] = { 2, 2 };
	/* Tried in order until one admits some type: none, then the single
	 * attribute common operators cannot infer without. */
	onnx_attr attr_sets[] = {
		{ .name = "to", .type = ONNX_ATTR_INT, .i = MFS_DT_FLOAT },
		{ .name = "kernel_shape", .type = ONNX_ATTR_INTS, .ints = kernel, .n_ints = 2 },
		{ .name = "blocksize", .type = ONNX_ATTR_INT, .i = 2 },
		{ .name = "k", .type = ONNX_ATTR_INT, .i = 1 },
	};
	onnx_node node = { 0 };
	unsigned mask = 0;

	node.name = "probe";
	node.op_type = (char *)def->op_type;
	node.domain = (char *)(def->domain ? def->domain : "");
	node.inputs = names;
	node.outputs = names;
	for (int attrs = 0; attrs <= (int)(sizeof(attr_sets) / sizeof(attr_sets[0])) && !mask;
	     attrs++) {
		if (attrs) {
			node.attrs = &attr_sets[attrs - 1];
			node.n_attrs = 1;
		}
		for (int i = 0; i < N_CAND; i++)
			if (probe_type(def, &node, candidates[i]))
				mask |= 1u << i;
	}
	return mask;
}

/* Probe in a child: a crash in infer() must not stop the listing.
 * Returns the mask, or -1 if the child died. */
static long probe_isolated(const mfs_op_def *def)
{
	int fd[2], status;
	unsigned mask = 0;
	pid_t pid;

	if (pipe(fd) != 0)
		return (long)probe_def(def);
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return (long)probe_def(def);
	}
	if (pid == 0) {
		close(fd[0]);
		mask = probe_def(def);
		if (write(fd[1], &mask, sizeof(mask)) != (ssize_t)sizeof(mask))
			_exit(2);
		_exit(0);
	}
	close(fd[1]);
	if (read(fd[0], &mask, sizeof(mask)) != (ssize_t)sizeof(mask))
		mask = 0;
	close(fd[0]);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	return (long)mask;
}

static const char *dom(const mfs_op_def *d)
{
	return d->domain && *d->domain && strcmp(d->domain, "ai.onnx") != 0 ? d->domain : "ai.onnx";
}

static int cmp_def(const void *a, const void *b)
{
	const mfs_op_def *x = *(const mfs_op_def *const *)a;
	const mfs_op_def *y = *(const mfs_op_def *const *)b;
	int c = strcmp(dom(x), dom(y));
	if (c)
		return c;
	c = strcmp(x->op_type, y->op_type);
	if (c)
		return c;
	return x->since_version - y->since_version;
}

int main(int argc, char **argv)
{
	(void)argv;
	int n, n_types = 0;
	const mfs_op_def *const *all = mfs_op_all(&n);
	const mfs_op_def **defs;

	if (argc > 1) {
		fprintf(stderr, "usage: list_ops\n");
		return 2;
	}
	defs = malloc((size_t)(n > 0 ? n : 1) * sizeof(*defs));
	if (!defs)
		return 1;
	memcpy(defs, all, (size_t)n * sizeof(*defs));
	qsort(defs, (size_t)n, sizeof(*defs), cmp_def);

	printf("| Operator | Domain | Opsets | Data types (probed) |\n");
	printf("|---|---|---|---|\n");
	for (int i = 0; i < n; i++) {
		const mfs_op_def *d = defs[i];
		const mfs_op_def *next = i + 1 < n && strcmp(dom(defs[i + 1]), dom(d)) == 0 &&
				strcmp(defs[i + 1]->op_type, d->op_type) == 0 ? defs[i + 1] : NULL;
		long mask = probe_isolated(d);
		char range[64];

		if (next)
			snprintf(range, sizeof(range), "%d-%d", d->since_version,
				 next->since_version - 1);
		else
			snprintf(range, sizeof(range), "%d-latest", d->since_version);
		printf("| %s | %s | %s | ", d->op_type, dom(d), range);
		if (mask < 0) {
			printf("(probe crashed)");
		} else if (mask == 0) {
			printf("(not probed)");
		} else {
			const char *sep = "";
			for (int k = 0; k < N_CAND; k++)
				if (mask & (1L << k)) {
					printf("%s%s", sep, mfs_dtype_onnx_name(candidates[k]));
					sep = ", ";
				}
			n_types++;
		}
		printf(" |\n");
	}
	printf("\n%d definitions of %s; %d with probed data types.\n", n,
	       "operators", n_types);
	free(defs);
	return 0;
}

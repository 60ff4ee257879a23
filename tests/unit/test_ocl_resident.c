/* Unit tests for resident tensors (engine.h, "Resident tensors";
 * exec/opencl/ocl_resident.c): a decoder-like graph y = Concat(p, a),
 * s = Relu(a) run on the OpenCL engine with y kept on the device and fed
 * back as p, step after step, against the same steps through the host;
 * a kept tensor read back with mfs_tensor_to_host; one read by another
 * context of the backend; one given to the CPU engine (copied to the
 * host first); the CPU engine ignoring the mark; a consumed tensor
 * refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "graph.h"
#include "ocl_fixture.h"

#include "graph_builder.h"

static mfs_graph *concat_graph(void)
{
	int64_t da[] = { 2, 3 }, dp[] = { 2, -1 };
	onnx_model *m = gb_new(17);
	mfs_graph *g;
	mfs_error err;
	gb_input(m, "a", MFS_DT_FLOAT, 2, da);
	gb_input(m, "p", MFS_DT_FLOAT, 2, dp);
	gb_attr(gb_node(m, "", "Concat", "c", "p,a", "y"), "axis", ONNX_ATTR_INT)->i = 1;
	gb_node(m, "", "Relu", "r", "a", "s");
	gb_output(m, "y");
	gb_output(m, "s");
	if (mfs_graph_compile(m, "t", &g, &err))
		fail_msg("compile: %s", err.msg);
	return g;
}

static mfs_tensor step_input(int step)
{
	mfs_tensor t;
	assert_int_equal(mfs_tensor_alloc(&t, MFS_DT_FLOAT, &(mfs_shape){ 2, { 2, 3 } }, NULL), 0);
	for (int i = 0; i < 6; i++)
		((float *)t.data)[i] = (float)(step * 10 + i) - 20.0f;
	return t;
}

/* Steps of e, y fed back as p; keep: y asked to stay on the device
 * (where e has one: dev).  The last y, on the host, into *out. */
static void steps(mfs_exec *e, bool keep, bool dev, int n, mfs_tensor *out)
{
	mfs_tensor in[2], o[2];
	mfs_error err;
	memset(in, 0, sizeof(in));
	in[1] = (mfs_tensor){ .dtype = MFS_DT_FLOAT, .shape = { 2, { 2, 0 } }, .kind = MFS_KIND_TENSOR };
	for (int s = 0; s < n; s++) {
		in[0] = step_input(s);
		memset(o, 0, sizeof(o));
		if (keep)
			mfs_tensor_want_device(&o[0]);
		if (mfs_exec_run(e, in, o, &err))
			fail_msg("run: %s", err.msg);
		assert_true(mfs_tensor_on_device(&o[0]) == (keep && dev));
		assert_false(mfs_tensor_on_device(&o[1]));   /* not asked */
		assert_int_equal(o[0].shape.dims[1], 3 * (s + 1));
		mfs_tensor_release(&in[0]);
		mfs_tensor_release(&in[1]);
		mfs_tensor_release(&o[1]);
		in[1] = o[0];
	}
	assert_int_equal(mfs_tensor_to_host(&in[1], out, &err), 0);
	mfs_tensor_release(&in[1]);
}

static void test_kept_steps_match_host_steps(void **state)
{
	mfs_graph *g = concat_graph();
	mfs_exec *e, *c;
	mfs_tensor dev, host, cpu;
	mfs_exec_stats st;
	mfs_error err;
	(void)state;
	assert_int_equal(mfs_exec_new(g, ocl, &e, &err), 0);
	assert_int_equal(mfs_exec_new(g, NULL, &c, &err), 0);
	steps(e, true, true, 5, &dev);
	mfs_exec_get_stats(e, &st);
	assert_int_equal(st.kept_outputs, 5);
	assert_int_equal(st.resident_inputs, 4);
	steps(e, false, true, 5, &host);
	steps(c, true, false, 5, &cpu);      /* the CPU engine ignores the mark */
	assert_int_equal(dev.nbytes, host.nbytes);
	assert_memory_equal(dev.data, host.data, host.nbytes);
	assert_memory_equal(cpu.data, host.data, host.nbytes);
	mfs_tensor_release(&dev);
	mfs_tensor_release(&host);
	mfs_tensor_release(&cpu);
	mfs_exec_free(e);
	mfs_exec_free(c);
	mfs_graph_free(g);
}

/* A kept output read by another OpenCL context and by the CPU engine;
 * once a run consumed it, reading it fails. */
static void test_kept_tensor_elsewhere(void **state)
{
	mfs_graph *g = concat_graph();
	mfs_exec *e1, *e2, *c;
	mfs_tensor in[2], o[2], o2[2], o3[2], o4[2], h;
	mfs_error err;
	(void)state;
	assert_int_equal(mfs_exec_new(g, ocl, &e1, &err), 0);
	assert_int_equal(mfs_exec_new(g, ocl, &e2, &err), 0);
	assert_int_equal(mfs_exec_new(g, NULL, &c, &err), 0);
	memset(in, 0, sizeof(in));
	memset(o, 0, sizeof(o));
	in[0] = step_input(1);
	in[1] = (mfs_tensor){ .dtype = MFS_DT_FLOAT, .shape = { 2, { 2, 0 } }, .kind = MFS_KIND_TENSOR };
	mfs_tensor_want_device(&o[0]);
	assert_int_equal(mfs_exec_run(e1, in, o, &err), 0);
	assert_true(mfs_tensor_on_device(&o[0]));
	in[1] = o[0];
	in[1].owns_data = false;
	/* the CPU engine reads a host copy; the tensor stays whole */
	assert_int_equal(mfs_exec_run(c, in, o3, &err), 0);
	/* another context of the backend takes it where it lies */
	assert_int_equal(mfs_exec_run(e2, in, o2, &err), 0);
	assert_memory_equal(o2[0].data, o3[0].data, o3[0].nbytes);
	assert_int_equal(o2[0].shape.dims[1], 6);
	/* consumed: no host copy, no second run */
	assert_int_equal(mfs_tensor_to_host(&o[0], &h, &err), -EINVAL);
	assert_int_equal(mfs_exec_run(e1, in, o4, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "consumed"));
	for (int k = 0; k < 2; k++) {
		mfs_tensor_release(&o[k]);
		mfs_tensor_release(&o2[k]);
		mfs_tensor_release(&o3[k]);
	}
	mfs_tensor_release(&in[0]);
	mfs_exec_free(e1);
	mfs_exec_free(e2);
	mfs_exec_free(c);
	mfs_graph_free(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kept_steps_match_host_steps),
		cmocka_unit_test(test_kept_tensor_elsewhere),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

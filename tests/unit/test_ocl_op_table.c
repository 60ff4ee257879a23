/* Unit tests for the OpenCL operator table (exec/opencl/ocl_op_table.c):
 * a line covers its since_version up to the next line of its operator and
 * domain, as the CPU registry's definitions do; an opset below the first
 * line, another domain or an operator without a line finds nothing.  No
 * device needed: the table is plain data (test_ocl_backend.c shows the
 * engine placing nodes by it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ocl_internal.h"

static void test_since_version(void **state)
{
	(void)state;
	/* Add's line starts at 7: the legacy broadcast of 1..6 is not the
	 * device's */
	assert_null(ocl_op_lookup("", "Add", 6));
	assert_ptr_equal(ocl_op_lookup("", "Add", 7), ocl_op_add);
	assert_ptr_equal(ocl_op_lookup("ai.onnx", "Add", 21), ocl_op_add);
	/* an operator new at some version: nothing before it */
	assert_null(ocl_op_lookup("", "Gelu", 19));
	assert_ptr_equal(ocl_op_lookup("", "Gelu", 20), ocl_op_gelu);
	assert_null(ocl_op_lookup("", "BatchNormalization", 6));
}

static void test_next_line_ends_range(void **state)
{
	(void)state;
	assert_ptr_equal(ocl_op_lookup("", "Clip", 6), ocl_op_clip_1);
	assert_ptr_equal(ocl_op_lookup("", "Clip", 10), ocl_op_clip_1);
	assert_ptr_equal(ocl_op_lookup("", "Clip", 11), ocl_op_clip_11);
	assert_ptr_equal(ocl_op_lookup("", "Clip", 13), ocl_op_clip_11);
	assert_ptr_equal(ocl_op_lookup("", "Slice", 9), ocl_op_slice_1);
	assert_ptr_equal(ocl_op_lookup("", "Slice", 10), ocl_op_slice_10);
	assert_ptr_equal(ocl_op_lookup("", "Softmax", 12), ocl_op_softmax_1);
	assert_ptr_equal(ocl_op_lookup("", "Softmax", 13), ocl_op_softmax_13);
	assert_ptr_equal(ocl_op_lookup("", "ReduceSum", 12), ocl_op_reduce_axes_attr);
	assert_ptr_equal(ocl_op_lookup("", "ReduceSum", 13), ocl_op_reduce_axes_input);
	assert_ptr_equal(ocl_op_lookup("", "ReduceMean", 17), ocl_op_reduce_axes_attr);
	assert_ptr_equal(ocl_op_lookup("", "ReduceMean", 18), ocl_op_reduce_axes_input);
	assert_ptr_equal(ocl_op_lookup("", "BatchNormalization", 8), ocl_op_batchnorm_7);
	assert_ptr_equal(ocl_op_lookup("", "BatchNormalization", 15), ocl_op_batchnorm_9);
}

/* Each domain has its own lines: com.modelfs Gelu at 1, ONNX's at 20;
 * Dense only in ours; an unknown domain or operator finds nothing. */
static void test_domains(void **state)
{
	(void)state;
	assert_ptr_equal(ocl_op_lookup("com.modelfs", "Gelu", 1), ocl_op_gelu);
	assert_ptr_equal(ocl_op_lookup("com.modelfs", "Dense", 1), ocl_op_dense);
	assert_null(ocl_op_lookup("", "Dense", 21));
	assert_null(ocl_op_lookup("com.modelfs", "Add", 7));
	assert_null(ocl_op_lookup("com.example", "Relu", 14));
	assert_null(ocl_op_lookup("", "NoSuchOp", 21));
	assert_null(ocl_op_lookup("com.modelfs", "Attention", 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_since_version),
		cmocka_unit_test(test_next_line_ends_range),
		cmocka_unit_test(test_domains),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
